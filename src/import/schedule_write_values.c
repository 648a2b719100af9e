/* schedule_write_values.c — the checks of one field's value, for the
 * schedule.sqlite row handlers.
 *
 * Why it exists: every GTFS file has ids, integers in a range, dates, times
 * and coordinates, and a bad one must be told the same way whichever file
 * it is in: counted in the diag with file:line and the value (quoted up to
 * SHOWN_MAX bytes), then the row skipped, or, for a field only this store
 * reads, the value stored as NULL. The timetable builder applies the same
 * rules, so both stores keep the same rows.
 */
#include "import/schedule_write_internal.h"

#include <stdbool.h>
#include <stdint.h>

#include "transit/gtfs.h"

/* A value the row cannot do without. False (row counted as bad) when empty. */
bool schedule_need_value(schedule_writer *w, const csv_field *f, const char *column)
{
    if (f->len)
        return true;
    schedule_skip_row(w, DIAG_MISSING_VALUE, "empty %s", column);
    return false;
}

/* An integer in [min, max]; empty is allowed unless `required`. Returns false
 * (row counted as bad) for a malformed, out-of-range or missing value. */
bool schedule_int_value(schedule_writer *w, const csv_field *f, const char *column, int64_t min,
                        int64_t max, bool required, int64_t *out, bool *present)
{
    *present = false;
    if (f->len == 0) {
        if (required)
            schedule_skip_row(w, DIAG_MISSING_VALUE, "empty %s", column);
        return !required;
    }
    int64_t v;
    if (gtfs_parse_int(f->ptr, f->len, &v) != 0) {
        schedule_skip_row(w, DIAG_BAD_NUMBER, "%s is not an integer: '%.*s'", column, SHOWN(f));
        return false;
    }
    if (v < min || v > max) {
        schedule_skip_row(w, DIAG_BAD_VALUE, "%s out of range (%lld..%lld): %lld", column,
                          (long long)min, (long long)max, (long long)v);
        return false;
    }
    *out = v;
    *present = true;
    return true;
}

/* An optional integer in [min, max] of a field only this store reads: a bad
 * value is counted (DIAG_BAD_VALUE) and stored as NULL, the row is kept. */
void schedule_lenient_int(schedule_writer *w, const csv_field *f, const char *column, int64_t min,
                          int64_t max, int64_t *out, bool *present)
{
    *present = false;
    if (f->len == 0)
        return;
    int64_t v;
    if (gtfs_parse_int(f->ptr, f->len, &v) != 0 || v < min || v > max) {
        schedule_skip_row(w, DIAG_BAD_VALUE, "%s '%.*s' is not %lld..%lld (ignored)", column,
                          SHOWN(f), (long long)min, (long long)max);
        return;
    }
    *out = v;
    *present = true;
}

/* An integer in [min, max], required; anything else is counted as `kind`. */
bool schedule_strict_int(schedule_writer *w, const csv_field *f, const char *column, int64_t min,
                         int64_t max, diag_kind kind, int64_t *out)
{
    if (f->len == 0 || gtfs_parse_int(f->ptr, f->len, out) != 0 || *out < min || *out > max) {
        schedule_skip_row(w, kind, "%s '%.*s' is not %lld..%lld", column, SHOWN(f), (long long)min,
                          (long long)max);
        return false;
    }
    return true;
}

/* A YYYYMMDD date written as YYYY-MM-DD into out; empty allowed unless
 * `required`. */
bool schedule_date_value(schedule_writer *w, const csv_field *f, const char *column, bool required,
                         char out[11], bool *present)
{
    *present = false;
    if (f->len == 0) {
        if (required)
            schedule_skip_row(w, DIAG_BAD_DATE, "empty %s", column);
        return !required;
    }
    int32_t days;
    if (gtfs_parse_date(f->ptr, f->len, &days) != 0) {
        schedule_skip_row(w, DIAG_BAD_DATE, "%s is not a YYYYMMDD date: '%.*s'", column, SHOWN(f));
        return false;
    }
    format_date(days, out);
    *present = true;
    return true;
}

/* A time of day (H:MM:SS) in seconds; required. */
bool schedule_time_value(schedule_writer *w, const csv_field *f, const char *column, uint32_t *secs)
{
    if (f->len == 0) {
        schedule_skip_row(w, DIAG_BAD_TIME, "empty %s", column);
        return false;
    }
    if (gtfs_parse_time(f->ptr, f->len, secs) != 0 || *secs == GTFS_TIME_NONE) {
        schedule_skip_row(w, DIAG_BAD_TIME, "%s is not a H:MM:SS time: '%.*s'", column, SHOWN(f));
        return false;
    }
    return true;
}

/* A coordinate in [-limit, limit]; `optional` lets it be empty (present=false). */
bool schedule_coordinate_value(schedule_writer *w, const csv_field *f, const char *column,
                               double limit, bool optional, double *out, bool *present)
{
    *present = false;
    if (f->len == 0) {
        if (!optional)
            schedule_skip_row(w, DIAG_BAD_COORDINATE, "empty %s", column);
        return optional;
    }
    double v;
    if (gtfs_parse_double(f->ptr, f->len, &v) != 0 || !(v >= -limit && v <= limit)) {
        schedule_skip_row(w, DIAG_BAD_COORDINATE, "bad %s: '%.*s'", column, SHOWN(f));
        return false;
    }
    *out = v;
    *present = true;
    return true;
}
