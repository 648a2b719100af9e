/* board.h — a departure board: the timetable's rows joined with what
 * realtime and the alerts say of them, before any byte is written.
 *
 * Why it exists: a departure row has three sources. The timetable gives the
 * scheduled rows (query.h), the realtime overlay gives predictions,
 * cancellations and the trips the feed ADDED (rt_overlay.h, put among the
 * rows by rt_merge.h), and the alert view gives the alerts that apply
 * (alert_view.h). The engine joins them here into plain rows; the JSON layer
 * (and any other writer: the CLI, a client library) only formats what a row
 * says, and never asks a source itself.
 */
#ifndef TRANSIT_BOARD_H
#define TRANSIT_BOARD_H

#include <stdbool.h>
#include <stdint.h>

#include "transit/alert_view.h"
#include "transit/query.h"
#include "transit/rt_overlay.h"

/* One row of a board, beside its departure (board.deps[i]). */
typedef struct board_row {
    const rt_added_trip *added;  /* the feed's ADDED trip the row is of, or NULL (a timetable trip) */
    rt_departure rt;             /* what realtime says of the row; all false without an update */
    uint32_t alerts;             /* how many alerts apply (their ids: alert_marks_row_id) */
    uint32_t vehicle;            /* the vehicle of the row's trip instance: its index in
                                  * board.vehicles + 1; 0 when none */
    const rt_trip_properties *properties;   /* the instance's TripProperties (its headsign
                                  * stands in for the trip's), or NULL */
    uint32_t assigned_stop;      /* with rt.moved: the stop a platform change serves the row at */
} board_row;

typedef struct board {
    const departure *deps;       /* count rows, in the API's order */
    const board_row *rows;       /* count, beside deps; NULL when there was nothing to join
                                  * but realtime (every row then reads as a zeroed board_row
                                  * with rts[i], when rts is not NULL, as its rt) */
    const rt_departure *rts;     /* with rows NULL: count, beside deps, what realtime says of each
                                  * row, when that is all there is to join (no row of an ADDED
                                  * trip, moved, with TripProperties, a vehicle or alerts); else
                                  * NULL. A writer then reads 16 bytes a row, not a board_row. */
    uint32_t count;
    bool truncated;              /* more rows matched than the limit */
    bool arrivals;               /* rows may be arrivals (departure.arrival): a board of
                                  * kind QUERY_ARRIVALS or QUERY_BOTH */
    bool realtime;               /* the server ingests realtime: rows say what it knows
                                  * (also when it knows nothing of a row) */
    const alert_marks *alerts;   /* the row lists, or NULL when no alert view is shown */
    const rt_vehicles *vehicles; /* the vehicles rows name (board_row.vehicle), or NULL */
} board;

/* What realtime says of row i of b: all false without a word on it. */
static inline rt_departure board_row_rt(const board *b, uint32_t i)
{
    return b->rows ? b->rows[i].rt : b->rts ? b->rts[i] : (rt_departure){0};
}

/* Which time chooses, orders and cuts a board's rows (the API's
 * `realtime` parameter). */
typedef enum board_order {
    BOARD_BY_PREDICTION = 0,     /* realtime=predicted, the default: the predicted time
                                  * where the overlay predicts a row, else the scheduled
                                  * one (engine/board_predicted.h has the rules) */
    BOARD_BY_SCHEDULE,           /* realtime=scheduled: the scheduled time, predictions
                                  * only added to the rows */
} board_order;

/* Where a board's rows come from besides the timetable; either may be NULL. */
typedef struct board_sources {
    const rt_overlay *realtime;  /* an overlay of another dataset is used for nothing but
                                  * board.realtime: it knows none of these trips */
    alert_marks *alerts;         /* begun with the view to show (alert_marks_begin) */
    board_order order;           /* without realtime both are the schedule's */
    bool wheelchair;             /* only the rows a wheelchair can take (the API's wheelchair=1;
                                  * engine/board_accessible.h has the rule): the board still
                                  * fills `limit` rows where the window has them */
} board_sources;

/* Working memory, reused from call to call (one per server thread): the
 * rows of one board, QUERY_LIMIT_MAX at most. */
typedef struct board_scratch board_scratch;
board_scratch *board_scratch_new(void);
void board_scratch_free(board_scratch *b);

/* The board of a stop (a station: its platforms) over [from, from + window_s),
 * at most `limit` rows of the events of `kind`: stop_events, the ADDED trips'
 * rows merged in, and every row joined. QUERY_OK, else a query error (err
 * says which parameter). */
int board_stop(board_scratch *b, const dataset *ds, query_scratch *s, query_kind kind, uint32_t stop,
               int64_t from, uint32_t window_s, uint32_t limit, const board_sources *src, board *out,
               query_error *err);
/* The same for every stop within radius_m of a point (nearby_events). */
int board_nearby(board_scratch *b, const dataset *ds, query_scratch *s, query_kind kind, double lat, double lon,
                 double radius_m, int64_t from, uint32_t window_s, uint32_t limit,
                 const board_sources *src, board *out, query_error *err);

/* Joins rows deps[0..count) (of the timetable, and of ADDED trips as rt_merge
 * marks them) into rows[0..count): the one place a row's sources are asked. */
void board_join(const dataset *ds, const departure *deps, uint32_t count, const board_sources *src,
                board_row *rows, board *out);

#endif
