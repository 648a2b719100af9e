/* feed_validity.c — the feed's service dates against the clock.
 *
 * Why it exists: see include/transit/feed_validity.h. "Today" is the civil
 * date in the feed timezone, so a feed ending on 2027-03-31 is in effect
 * until midnight there, whatever the server's own TZ says.
 */
#include "transit/feed_validity.h"

#include <stdio.h>

#include "transit/rfc3339.h"
#include "transit/query.h"
#include "transit/gtfs.h"

static int32_t days_of(int64_t local_secs)
{
    int64_t d = local_secs / 86400;
    if (local_secs % 86400 < 0)
        d--;
    return (int32_t)d;
}

void feed_validity_at(const dataset *ds, int64_t now, feed_validity *out)
{
    dataset_counts c;
    dataset_get_counts(ds, &c);
    out->start = c.first_date;
    out->end = c.last_date;
    out->today = days_of(now + dataset_utc_offset(ds, now));
    out->days_until_expiry = out->end - out->today;
    out->expired = out->today > out->end;
    out->not_yet_valid = out->today < out->start;
}

static void kv_date(json_writer *w, const char *key, int32_t days)
{
    char date[11];
    format_date(days, date);
    json_kv_string(w, key, date);
}

void feed_validity_write(json_writer *w, const feed_validity *v)
{
    json_key(w, "feed_validity");
    json_object_begin(w);
    kv_date(w, "start", v->start);
    kv_date(w, "end", v->end);
    kv_date(w, "today", v->today);
    json_kv_int(w, "days_until_expiry", v->days_until_expiry);
    json_kv_bool(w, "expired", v->expired);
    json_kv_bool(w, "not_yet_valid", v->not_yet_valid);
    json_object_end(w);
}

bool feed_validity_warning(const feed_validity *v, char *out, size_t cap)
{
    char start[11], end[11];
    format_date(v->start, start);
    format_date(v->end, end);
    if (cap)
        out[0] = '\0';
    if (v->expired) {
        snprintf(out, cap,
                 "the feed expired %d day%s ago: its last service date is %s, so there are no "
                 "departures from now on; import a newer feed",
                 -v->days_until_expiry, v->days_until_expiry == -1 ? "" : "s", end);
        return true;
    }
    if (v->not_yet_valid) {
        snprintf(out, cap,
                 "the feed is not in effect yet: its service runs from %s to %s, so there are "
                 "no departures before %s",
                 start, end, start);
        return true;
    }
    return false;
}

bool feed_validity_departures_warning(const dataset *ds, int64_t from, uint32_t window_s,
                                      char *out, size_t cap)
{
    return feed_validity_events_warning(ds, from, window_s, "departures", out, cap);
}

bool feed_validity_events_warning(const dataset *ds, int64_t from, uint32_t window_s, const char *what,
                                  char *out, size_t cap)
{
    dataset_counts c;
    dataset_get_counts(ds, &c);
    int64_t first = dataset_instant(ds, c.first_date, 0);
    int64_t last = dataset_instant(ds, c.last_date, c.max_secs);
    char start[11], end[11];
    format_date(c.first_date, start);
    format_date(c.last_date, end);
    if (cap)
        out[0] = '\0';
    if (from > last) {
        char last_text[26];
        rfc3339_format_instant(last, dataset_utc_offset(ds, last), last_text);
        snprintf(out, cap,
                 "no %s: the time is after the feed's service (%s to %s, nothing runs "
                 "after %s); a newer feed must be imported",
                 what, start, end, last_text);
        return true;
    }
    if (from + (int64_t)window_s <= first) {
        snprintf(out, cap,
                 "no %s: the time is before the feed's service (%s to %s)", what, start, end);
        return true;
    }
    return false;
}
