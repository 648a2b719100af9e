/* calendar_dates_run.h — calendar_dates.txt's rows of a day-by-day feed,
 * read in runs (a csv_run_fn, csv_set_run_fn).
 *
 * Why it exists: a feed that gives every trip its own service lists every
 * trip's dates one per row (Brooklyn written so: 1.45M rows like
 * `D12345,20260105,1`), and splitting each row into fields, parsing its date
 * and looking its service up was most of what such a feed adds to an import
 * (issue #28: import CPU <= 1.2x of the calendar.txt form). This reader
 * takes the rows of exactly that form (`service_id,date,exception_type`, the
 * id printable ASCII without quotes, blanks or commas, the date eight
 * digits, the type 1 or 2, the line end right after) in one pass: the
 * previous row's service id is compared in place (a service's dates are
 * listed together), and a date seen before is found by its eight bytes in
 * a small table. Any other row (another form, an empty id, a bad date or
 * type, a record cut by the chunk's end) is left to the CSV reader and the
 * row callback, so rows, services, diagnostics and lines are the same
 * (fuzz_calendar_dates_run compares both).
 */
#ifndef TRANSIT_CALENDAR_DATES_RUN_H
#define TRANSIT_CALENDAR_DATES_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "import/traffic_days.h"
#include "import/tt_builder.h"

#define CALENDAR_DATES_RUN_DATES 2048  /* dates remembered: one a month and day (a year's dates fit) */
#define CALENDAR_DATES_RUN_ID 64       /* longest service id compared in place */

typedef struct calendar_dates_run {
    /* where rows go: a TB_VEC(tb_calendar_date)'s members; additions (type
     * 1) go to `adds` instead, when given */
    tb_calendar_date **rows;
    size_t *nrows, *cap;
    day_additions *adds;
    /* a service id's index (the id new or not), or UINT32_MAX when out of memory */
    uint32_t (*service)(void *ctx, const char *id, size_t len);
    void *ctx;
    /* the previous row's service: its id and index (prev_len 0: none); an
     * id of up to 15 bytes also as two words, with its comma, and the mask
     * of those bytes */
    char prev_id[CALENDAR_DATES_RUN_ID];
    uint32_t prev_len, prev_service;
    uint64_t prev_words[2], prev_mask[2];
    /* dates seen: "YYYYMMDD"'s eight bytes and its days since 1970-01-01 (an empty slot: 19700101, 0) */
    struct {
        uint64_t text;
        int32_t day;
    } dates[CALENDAR_DATES_RUN_DATES];
} calendar_dates_run;

/* A reader that sets additions' days in `adds` (or, NULL, pushes them as
 * rows), pushes removals to the TB_VEC whose members are given, and asks
 * `service` for each new id. */
void calendar_dates_run_init(calendar_dates_run *r, tb_calendar_date **rows, size_t *nrows, size_t *cap,
                             day_additions *adds, uint32_t (*service)(void *ctx, const char *id, size_t len),
                             void *ctx);

/* The csv_run_fn: `r` is a calendar_dates_run. Returns 0, or -1 when out of
 * memory (at the row it stopped at). */
int calendar_dates_run_rows(void *r, const char *s, const char *end, uint64_t line, size_t *used, uint64_t *rows);

#endif
