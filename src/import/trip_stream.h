/* trip_stream.h — stop_times folded trip by trip while they are read.
 *
 * Why it exists: the raw stop_times rows are the import's largest model (24
 * bytes each: 922 MB for 38.4M rows, 3.7 GB for 154M), yet each trip's rows
 * reduce to a pattern (stops and their flags) and time profiles that nearly
 * every trip shares with others. Feeds list stop_times.txt grouped by trip,
 * so a trip's rows are folded into its compact form as soon as the next
 * trip begins, and only one trip's rows are ever held. Patterns and profiles
 * get local numbers in the order they are first met here; tt_build_trips
 * renumbers them in trip order, so timetable.bin is the same bytes as when
 * every row was held. Per-trip problems are kept as events and reported in
 * trip order for the same reason.
 *
 * A feed whose trips come back after other trips ("scattered") is noticed at
 * the first such row: the reader then reads stop_times.txt again holding
 * its rows up to the memory budget (timetable_options.memory_budget), in
 * sorted runs on disk past it (stop_times_spill.h), and folds each trip from
 * those rows with the same code.
 */
#ifndef TRANSIT_TRIP_STREAM_H
#define TRANSIT_TRIP_STREAM_H

#include "import/tt_builder.h"

/* A trip's fold state (tb_trip.fold). */
enum { TS_UNSEEN = 0, TS_OPEN = 1, TS_FOLDED = 2 };

/* A per-trip problem, reported in trip order once all trips are folded. */
typedef struct ts_event {
    uint32_t trip, code, seq;
    uint32_t order;                     /* found n-th: the order within a trip */
} ts_event;

enum { TS_DUPLICATE_SEQUENCE, TS_ONE_STOP_TIME, TS_UNTIMED_ENDS, TS_BACKWARDS };

typedef struct trip_stream {
    uint32_t open;                      /* the trip whose rows are in rows, or TT_NONE */
    TB_VEC(tb_stop_time) rows;          /* the open trip's rows, in file order */
    TB_VEC(double) dists;               /* their shape_dist_traveled, when the column exists */
    strmap patterns;                    /* route + 4 words per position → local pattern (entry index) */
    strmap profiles;                    /* int32 offsets → local profile (entry index) */
    TB_VEC(int32_t) profile_max;        /* per local profile: its largest offset */
    TB_VEC(ts_event) events;
    /* where the feed showed it is not grouped by trip (0: it has not) */
    uint64_t scattered_line;
    uint32_t scattered_trip;
    /* per-trip scratch */
    uint32_t *order, *arr, *dep, *key;
    double *dist;
    int32_t *prof;
    uint32_t cap;
    bool ready;
} trip_stream;

int ts_init(trip_stream *s);
void ts_free(trip_stream *s);
/* Forgets every fold, to read stop_times.txt again. 0 or -1 (out of memory). */
int ts_reset(trip_stream *s);

/* Folds the cnt rows of trip t (dists NULL when the feed has none) in file
 * order: sorts them by stop_sequence (a repeated one dropped), interpolates
 * untimed ones, and sets the trip's local pattern and profiles and its start
 * in b->trips.v[t], or leaves it unusable with an event. Marks it
 * TS_FOLDED. 0, or -1 when out of memory. */
int ts_fold_trip(tt_builder *b, trip_stream *s, uint32_t t, const tb_stop_time *rows, const double *dists,
                 uint32_t cnt);
/* Folds the open trip, if any. 0 or -1. */
int ts_close_open(tt_builder *b, trip_stream *s);

/* A local pattern's length (positions) and key (route, then stop,
 * stop_sequence, pickup, drop-off per position; unaligned). */
uint32_t ts_pattern_len(const trip_stream *s, uint32_t local);
const char *ts_pattern_key(const trip_stream *s, uint32_t local);
/* A local profile's offsets (len of them; unaligned bytes). */
const char *ts_profile(const trip_stream *s, uint32_t local);
uint32_t ts_profile_len(const trip_stream *s, uint32_t local);
/* The latest time of a folded trip: its start plus the largest offset of
 * its local profiles. */
uint32_t ts_trip_latest(const trip_stream *s, const tb_trip *trip);

#endif
