/* gtfs_read.c — reads the GTFS files the timetable needs into the
 * builder's model (tt_builder.h).
 *
 * Why it exists: this is where feed rows become plain structs: ids are
 * resolved to indices, strings interned, times parsed to seconds. Required
 * files and columns are enforced here with messages naming them; bad rows are
 * counted in the diag (file:line: what) and skipped, never fatal.
 */
#include "import/tt_builder.h"

#include <assert.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transit/csv.h"
#include "transit/gtfs.h"
#include "import/calendar_dates_run.h"
#include "import/days_handoff.h"
#include "import/stop_times_spill.h"
#include "import/trip_stream.h"
#include "import/tt_limits.h"

int tb_grow(void **v, size_t *cap, size_t elem, size_t need)
{
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *p = realloc(*v, c * elem);
    if (!p) return -1;
    *v = p;
    *cap = c;
    return 0;
}

strref_slot *tb_intern_slot(tt_builder *b, const char *s, size_t len, uint32_t hash)
{
    strref_slot *slot = strref_map_find(&b->string_index, b->strings, s, len, hash);
    assert(!slot || (size_t)slot->off + len < b->strings_len);   /* an interned string lies in the table */
    if (slot) return slot;
    if (b->strings_len + len + 1 > UINT32_MAX - 1) return NULL;
    if (b->strings_len + len + 1 > b->strings_cap &&
        tb_grow((void **)&b->strings, &b->strings_cap, 1, b->strings_len + len + 1) != 0)
        return NULL;
    uint32_t off = (uint32_t)b->strings_len;
    memcpy(b->strings + off, s, len);
    b->strings[off + len] = 0;
    b->strings_len += len + 1;
    return strref_map_add(&b->string_index, off, hash, TT_NONE);
}

uint32_t tb_intern(tt_builder *b, const char *s, size_t len)
{
    if (len == 0) return 0;
    strref_slot *slot = tb_intern_slot(b, s, len, strmap_hash(s, len));
    return slot ? slot->off : TT_NONE;
}

uint32_t tb_trip_by_id(const tt_builder *b, const char *s, size_t len)
{
    if (len == 0) return UINT32_MAX;
    const strref_slot *slot = strref_map_find(&b->string_index, b->strings, s, len, strmap_hash(s, len));
    return slot && slot->value != TT_NONE ? slot->value : UINT32_MAX;
}

uint32_t tb_stop_by_id(const tt_builder *b, const char *s, size_t len)
{
    if (len == 0) return UINT32_MAX;
    const strref_slot *slot = strref_map_find(&b->stop_index, b->strings, s, len, strmap_hash(s, len));
    return slot ? slot->value : UINT32_MAX;
}

static int oom(tt_builder *b)
{
    snprintf(b->err, b->errlen, "out of memory while reading the feed");
    return -1;
}

#define F(i) (f[i].ptr), (f[i].len)

static double monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define PROGRESS_EVERY (8u << 20)

typedef struct csv_stream {
    tt_builder *b;
    const char *file;
    csv_parser *parser;
    uint64_t done, total, next_report;
    double started;
    uint64_t *rows;   /* the file's rows-read counter, or NULL */
} csv_stream;

/* A record the CSV parser rejected (too few fields, a NUL byte): a bad row,
 * counted as read, so the import guard sees it dropped. */
static void stream_rejected(void *ctx, const csv_error *e)
{
    csv_stream *cs = ctx;
    if (cs->rows) ++*cs->rows;
    diag_add(cs->b->diag, DIAG_BAD_ROW, cs->file, e->line, "%s", e->message);
}

static int stream_chunk(void *ctx, const char *buf, size_t len)
{
    csv_stream *cs = ctx;
    int rc = csv_feed(cs->parser, buf, len);
    if (rc != 0) return rc;
    cs->done += len;
    if (cs->b->opt->progress && cs->done >= cs->next_report) {
        cs->next_report = cs->done + PROGRESS_EVERY;
        cs->b->opt->progress(cs->b->opt->progress_ctx, cs->file, cs->done, cs->total, csv_rows(cs->parser),
                             monotonic_seconds() - cs->started, false);
    }
    return 0;
}

/* calendar_dates_run_rows for the builder: its rows counted, and an out of
 * memory reported. */
static int calendar_dates_beside_run(void *ctx, const char *s, const char *end, uint64_t line, size_t *used,
                                     uint64_t *rows)
{
    tt_builder *b = ctx;
    int rc = calendar_dates_run_rows(b->dates_run, s, end, line, used, rows);
    b->stats->calendar_dates += *rows;
    return rc ? oom(b) : 0;
}

/* Streams a member through a csv_parser, reporting progress. Returns 0, or
 * non-zero with *cerr filled (or b->err for I/O errors). */
static int stream_csv(tt_builder *b, const char *file, const char *const *keys, int nkeys, csv_row_fn fn, void *ctx,
                      uint64_t *rows, int *has, csv_error *cerr)
{
    csv_stream cs = {b, file, csv_open(file, keys, nkeys, fn, ctx), 0, 0, 0, monotonic_seconds(), rows};
    if (!cs.parser) return oom(b);
    /* a day-by-day calendar_dates.txt and stop_times.txt are millions of
     * short plain rows: the hand-written splitter takes them (csv_plain.c,
     * 2.4x the full reader's speed on stop_times), the full reader the rest */
    if (strcmp(file, "calendar_dates.txt") == 0 || strcmp(file, "stop_times.txt") == 0)
        csv_prefer_plain(cs.parser);
    /* and calendar_dates.txt's `id,YYYYMMDD,1` rows, the run reader before both */
    if (b->dates_run && strcmp(file, "calendar_dates.txt") == 0)
        csv_set_run_fn(cs.parser, calendar_dates_beside_run, b);
    csv_set_reject_fn(cs.parser, stream_rejected, &cs);
    int64_t total = feed_size(b->feed, file);
    cs.total = total > 0 ? (uint64_t)total : 0;
    char ioerr[256] = "";
    int rc = feed_stream(b->feed, file, stream_chunk, &cs, ioerr, sizeof ioerr);
    if (rc == 0) rc = csv_finish(cs.parser);
    if (rc != 0) {
        if (ioerr[0]) snprintf(b->err, b->errlen, "%s", ioerr);
        else *cerr = *csv_last_error(cs.parser);
    }
    for (int i = 0; i < nkeys; i++) has[i] = csv_header_seen(cs.parser) && csv_has_column(cs.parser, i);
    if (rc == 0 && b->opt->progress)
        b->opt->progress(b->opt->progress_ctx, file, cs.done, cs.total, csv_rows(cs.parser),
                         monotonic_seconds() - cs.started, true);
    csv_close(cs.parser);
    return rc;
}
#define EMPTY(i) (f[i].len == 0)


/* Streams `file` with `keys`; checks the required keys (bit i of `required`
 * for keys[i]). */
static int read_file(tt_builder *b, const char *file, const char *const *keys, int nkeys, uint32_t required,
                     csv_row_fn fn, uint64_t *rows)
{
    int has[CSV_MAX_KEYS] = {0};
    csv_error cerr;
    memset(&cerr, 0, sizeof cerr);
    int rc = stream_csv(b, file, keys, nkeys, fn, b, rows, has, &cerr);
    if (rc != 0) {
        if (b->err[0] == 0) {
            if (cerr.line)
                snprintf(b->err, b->errlen, "%s:%llu: column %u: %s", file, (unsigned long long)cerr.line,
                         cerr.column, cerr.message);
            else
                snprintf(b->err, b->errlen, "%s: %s", file, cerr.message[0] ? cerr.message : "cannot read");
        }
        return -1;
    }
    /* An empty file has no header: every required column is missing. */
    for (int i = 0; i < nkeys; i++) {
        if ((required >> i & 1) && !has[i]) {
            snprintf(b->err, b->errlen, "%s: missing required column '%s'", file, keys[i]);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ agency */

static const char *const AGENCY_KEYS[] = {"agency_name", "agency_url", "agency_timezone", "agency_id",
                                          "agency_lang", "agency_phone"};

static int agency_row(void *ctx, const csv_field *f, uint64_t line)
{
    tt_builder *b = ctx;
    b->stats->agency++;
    uint32_t id = tb_intern(b, F(3));
    int ins;
    if (strmap_put(&b->agency_ids, f[3].ptr, f[3].len, (uint32_t)b->agencies.n, &ins) == UINT32_MAX) return oom(b);
    if (!ins) {
        diag_add(b->diag, DIAG_DUPLICATE_ID, "agency.txt", line, "duplicate agency_id '%.*s'", (int)f[3].len, f[3].ptr);
        return 0;
    }
    if (EMPTY(2)) {
        diag_add(b->diag, DIAG_MISSING_VALUE, "agency.txt", line, "empty agency_timezone");
    } else if (b->tz_name == 0) {
        b->tz_name = tb_intern(b, F(2));
    } else if (strcmp(tb_str(b, b->tz_name), "") != 0 &&
               (strlen(tb_str(b, b->tz_name)) != f[2].len || memcmp(tb_str(b, b->tz_name), f[2].ptr, f[2].len) != 0)) {
        diag_add(b->diag, DIAG_BAD_VALUE, "agency.txt", line,
                 "agency_timezone '%.*s' differs from the feed's '%s'; the first one is used", (int)f[2].len,
                 f[2].ptr, tb_str(b, b->tz_name));
    }
    tt_agency *a = TB_PUSH(b->agencies);
    if (!a) return oom(b);
    a->id = id;
    a->name = tb_intern(b, F(0));
    a->url = tb_intern(b, F(1));
    a->timezone = tb_intern(b, F(2));
    a->lang = tb_intern(b, F(4));
    a->phone = tb_intern(b, F(5));
    if (b->agencies.n == 1) b->default_agency_id = id;
    return (a->name == TT_NONE || a->url == TT_NONE || id == TT_NONE) ? oom(b) : 0;
}

/* ------------------------------------------------------------------ stops */

static const char *const STOP_KEYS[] = {"stop_id",       "stop_name",      "stop_lat",  "stop_lon",
                                        "location_type", "parent_station", "stop_code", "stop_desc",
                                        "platform_code", "wheelchair_boarding"};

static int stop_row(void *ctx, const csv_field *f, uint64_t line)
{
    tt_builder *b = ctx;
    b->stats->stops++;
    if (EMPTY(0)) {
        diag_add(b->diag, DIAG_MISSING_VALUE, "stops.txt", line, "empty stop_id");
        return 0;
    }
    int64_t lt = 0;
    if (!EMPTY(4) && (gtfs_parse_int(F(4), &lt) != 0 || lt < 0 || lt > 4)) {
        diag_add(b->diag, DIAG_BAD_VALUE, "stops.txt", line, "location_type '%.*s' is not 0..4", (int)f[4].len,
                 f[4].ptr);
        return 0;
    }
    double lat = NAN, lon = NAN;
    bool coords_ok = gtfs_parse_double(F(2), &lat) == 0 && gtfs_parse_double(F(3), &lon) == 0 && lat >= -90 &&
                     lat <= 90 && lon >= -180 && lon <= 180;
    if (!coords_ok) {
        if (lt <= 2 || !EMPTY(2) || !EMPTY(3)) {
            if (lt <= 2) {
                diag_add(b->diag, DIAG_BAD_COORDINATE, "stops.txt", line, "stop '%.*s': bad stop_lat/stop_lon '%.*s','%.*s'",
                         (int)f[0].len, f[0].ptr, (int)f[2].len, f[2].ptr, (int)f[3].len, f[3].ptr);
                return 0;
            }
        }
        lat = lon = NAN;   /* nodes and boarding areas may omit coordinates */
    }
    uint32_t hash = strmap_hash(F(0));
    if (strref_map_find(&b->stop_index, b->strings, F(0), hash)) {
        diag_add(b->diag, DIAG_DUPLICATE_ID, "stops.txt", line, "duplicate stop_id '%.*s'", (int)f[0].len, f[0].ptr);
        return 0;
    }
    const strref_slot *id = tb_intern_slot(b, F(0), hash);
    if (!id || !strref_map_add(&b->stop_index, id->off, hash, (uint32_t)b->stops.n)) return oom(b);
    tb_stop *s = TB_PUSH(b->stops);
    if (!s) return oom(b);
    s->lat = lat;
    s->lon = lon;
    s->id = id->off;
    s->name = tb_intern(b, F(1));
    s->parent_id = tb_intern(b, F(5));
    s->parent = TT_NONE;
    s->location_type = (uint8_t)lt;
    s->code = tb_intern(b, F(6));
    s->desc = tb_intern(b, F(7));
    s->platform_code = tb_intern(b, F(8));
    /* an invalid wheelchair_boarding reads as 0 (unknown); schedule.sqlite counts it */
    s->wheelchair_boarding = (f[9].len == 1 && f[9].ptr[0] >= '0' && f[9].ptr[0] <= '2') ? (uint8_t)(f[9].ptr[0] - '0') : 0;
    return (s->id == TT_NONE || s->name == TT_NONE || s->parent_id == TT_NONE || s->code == TT_NONE ||
            s->desc == TT_NONE || s->platform_code == TT_NONE)
               ? oom(b)
               : 0;
}

static void resolve_parents(tt_builder *b)
{
    for (size_t i = 0; i < b->stops.n; i++) {
        tb_stop *s = &b->stops.v[i];
        if (s->parent_id == 0) continue;
        const char *pid = tb_str(b, s->parent_id);
        uint32_t p = tb_stop_by_id(b, pid, strlen(pid));
        assert(p == UINT32_MAX || p < b->stops.n);
        if (p == UINT32_MAX || p == i)
            diag_add(b->diag, DIAG_UNKNOWN_STOP, "stops.txt", 0, "stop '%s': unknown parent_station '%s'",
                     tb_str(b, s->id), pid);
        else
            s->parent = p;
    }
}

/* ------------------------------------------------------------------ routes */

static const char *const ROUTE_KEYS[] = {"route_id", "route_type", "agency_id", "route_short_name",
                                         "route_long_name", "route_color", "route_text_color"};

static int route_row(void *ctx, const csv_field *f, uint64_t line)
{
    tt_builder *b = ctx;
    b->stats->routes++;
    int64_t type;
    if (EMPTY(0)) {
        diag_add(b->diag, DIAG_MISSING_VALUE, "routes.txt", line, "empty route_id");
        return 0;
    }
    if (gtfs_parse_int(F(1), &type) != 0 || type < 0 || type > 9999) {
        diag_add(b->diag, DIAG_BAD_VALUE, "routes.txt", line, "route '%.*s': bad route_type '%.*s'", (int)f[0].len,
                 f[0].ptr, (int)f[1].len, f[1].ptr);
        return 0;
    }
    if (!EMPTY(2) && strmap_get(&b->agency_ids, F(2)) == UINT32_MAX) {
        diag_add(b->diag, DIAG_UNKNOWN_AGENCY, "routes.txt", line, "route '%.*s': unknown agency_id '%.*s'",
                 (int)f[0].len, f[0].ptr, (int)f[2].len, f[2].ptr);
    }
    int ins;
    if (strmap_put(&b->route_ids, f[0].ptr, f[0].len, (uint32_t)b->routes.n, &ins) == UINT32_MAX) return oom(b);
    if (!ins) {
        diag_add(b->diag, DIAG_DUPLICATE_ID, "routes.txt", line, "duplicate route_id '%.*s'", (int)f[0].len, f[0].ptr);
        return 0;
    }
    tt_route *r = TB_PUSH(b->routes);
    if (!r) return oom(b);
    memset(r, 0, sizeof *r);
    r->id = tb_intern(b, F(0));
    r->type = (int32_t)type;
    r->agency_id = EMPTY(2) ? b->default_agency_id : tb_intern(b, F(2));
    r->short_name = tb_intern(b, F(3));
    r->long_name = tb_intern(b, F(4));
    r->color = tb_intern(b, F(5));
    r->text_color = tb_intern(b, F(6));
    return 0;
}

/* ------------------------------------------------------------------ calendar */

static const char *const CAL_KEYS[] = {"service_id", "monday", "tuesday", "wednesday", "thursday", "friday",
                                       "saturday", "sunday", "start_date", "end_date"};

static uint32_t service_index(tt_builder *b, const char *s, size_t len)
{
    int ins;
    uint32_t e = strmap_put(&b->service_ids, s, len, (uint32_t)b->services.n, &ins);
    if (e == UINT32_MAX) return TT_NONE;
    if (ins) {
        uint32_t *p = TB_PUSH(b->services);
        if (!p) return TT_NONE;
        *p = TT_NONE;
        if (!b->service_ids_only && (*p = tb_intern(b, s, len)) == TT_NONE) return TT_NONE;
    }
    return strmap_value(&b->service_ids, e);
}

/* Service i's id, interned as a string (from service_ids, where it is
 * entry i); TT_NONE when out of memory. */
static uint32_t intern_service_id(tt_builder *b, uint32_t i)
{
    return tb_intern(b, strmap_key(&b->service_ids, i), strmap_key_len(&b->service_ids, i));
}

static int calendar_row(void *ctx, const csv_field *f, uint64_t line)
{
    tt_builder *b = ctx;
    b->stats->calendar++;
    if (EMPTY(0)) {
        diag_add(b->diag, DIAG_MISSING_VALUE, "calendar.txt", line, "empty service_id");
        return 0;
    }
    uint8_t mask = 0;
    for (int d = 0; d < 7; d++) {
        if (f[1 + d].len != 1 || (f[1 + d].ptr[0] != '0' && f[1 + d].ptr[0] != '1')) {
            diag_add(b->diag, DIAG_BAD_VALUE, "calendar.txt", line, "service '%.*s': %s must be 0 or 1, not '%.*s'",
                     (int)f[0].len, f[0].ptr, CAL_KEYS[1 + d], (int)f[1 + d].len, f[1 + d].ptr);
            return 0;
        }
        if (f[1 + d].ptr[0] == '1') mask |= (uint8_t)(1u << d);
    }
    int32_t start, end;
    if (gtfs_parse_date(F(8), &start) != 0 || gtfs_parse_date(F(9), &end) != 0 || end < start) {
        diag_add(b->diag, DIAG_BAD_DATE, "calendar.txt", line, "service '%.*s': bad start_date/end_date '%.*s'..'%.*s'",
                 (int)f[0].len, f[0].ptr, (int)f[8].len, f[8].ptr, (int)f[9].len, f[9].ptr);
        return 0;
    }
    uint32_t svc = service_index(b, F(0));
    if (svc == TT_NONE) return oom(b);
    for (size_t i = b->calendars.n; i-- > 0;) {
        /* calendar rows are few (tens to hundreds); a backwards scan is cheap */
        if (b->calendars.v[i].service == svc) {
            diag_add(b->diag, DIAG_DUPLICATE_ID, "calendar.txt", line, "duplicate service_id '%.*s'", (int)f[0].len,
                     f[0].ptr);
            return 0;
        }
    }
    tb_calendar *c = TB_PUSH(b->calendars);
    if (!c) return oom(b);
    c->service = svc;
    c->weekdays = mask;
    c->start = start;
    c->end = end;
    return 0;
}

static const char *const CALDATE_KEYS[] = {"service_id", "date", "exception_type"};

static int calendar_date_row(void *ctx, const csv_field *f, uint64_t line)
{
    tt_builder *b = ctx;
    b->stats->calendar_dates++;
    int32_t date;
    if (EMPTY(0)) {
        diag_add(b->diag, DIAG_MISSING_VALUE, "calendar_dates.txt", line, "empty service_id");
        return 0;
    }
    if (gtfs_parse_date_memo(F(1), &date, &b->dates_month) != 0) {
        diag_add(b->diag, DIAG_BAD_DATE, "calendar_dates.txt", line, "bad date '%.*s'", (int)f[1].len, f[1].ptr);
        return 0;
    }
    if (f[2].len != 1 || (f[2].ptr[0] != '1' && f[2].ptr[0] != '2')) {
        diag_add(b->diag, DIAG_BAD_VALUE, "calendar_dates.txt", line, "exception_type must be 1 or 2, not '%.*s'",
                 (int)f[2].len, f[2].ptr);
        return 0;
    }
    /* feeds list a service's dates together: the previous row's service
     * is checked first, sparing a hash lookup (a cache miss) per row */
    uint32_t svc = b->calendar_dates.n ? b->calendar_dates.v[b->calendar_dates.n - 1].service : TT_NONE;
    if (svc == TT_NONE || strmap_key_len(&b->service_ids, svc) != f[0].len ||
        memcmp(strmap_key(&b->service_ids, svc), f[0].ptr, f[0].len) != 0)
        svc = service_index(b, F(0));
    tb_calendar_date *c = TB_PUSH(b->calendar_dates);
    if (svc == TT_NONE || !c) return oom(b);
    c->service = svc;
    c->date = date;
    c->type = (uint8_t)(f[2].ptr[0] - '0');
    return 0;
}

/* ------------------------------------------------------------------ trips */

static const char *const TRIP_KEYS[] = {"route_id", "service_id", "trip_id", "trip_headsign", "direction_id",
                                        "shape_id", "wheelchair_accessible", "bikes_allowed"};

/* A trips.txt accessibility field (0..2); empty or invalid reads as 0 (no
 * information): schedule.sqlite's import notes an invalid one. */
static uint8_t trip_flag(const csv_field *f)
{
    return (f->len == 1 && f->ptr[0] >= '0' && f->ptr[0] <= '2') ? (uint8_t)(f->ptr[0] - '0') : 0;
}

static int trip_row(void *ctx, const csv_field *f, uint64_t line)
{
    tt_builder *b = ctx;
    b->stats->trips++;
    if (EMPTY(2)) {
        diag_add(b->diag, DIAG_MISSING_VALUE, "trips.txt", line, "empty trip_id");
        return 0;
    }
    uint32_t route = strmap_get(&b->route_ids, F(0));
    if (route == UINT32_MAX) {
        diag_add(b->diag, DIAG_UNKNOWN_ROUTE, "trips.txt", line, "trip '%.*s': unknown route_id '%.*s'", (int)f[2].len,
                 f[2].ptr, (int)f[0].len, f[0].ptr);
        return 0;
    }
    /* while calendar_dates.txt is still being read, the service is resolved
     * afterwards (resolve_trip_services) */
    uint32_t svc = b->services_pending ? TT_NONE : strmap_get(&b->service_ids, F(1));
    if (!b->services_pending && svc == UINT32_MAX) {
        diag_add(b->diag, DIAG_UNKNOWN_SERVICE, "trips.txt", line, "trip '%.*s': unknown service_id '%.*s'",
                 (int)f[2].len, f[2].ptr, (int)f[1].len, f[1].ptr);
        return 0;
    }
    assert(route < b->routes.n && (svc == TT_NONE || svc < b->services.n));
    int8_t dir = -1;
    if (!EMPTY(4)) {
        if (f[4].len != 1 || (f[4].ptr[0] != '0' && f[4].ptr[0] != '1'))
            diag_add(b->diag, DIAG_BAD_VALUE, "trips.txt", line, "trip '%.*s': direction_id '%.*s' is not 0 or 1",
                     (int)f[2].len, f[2].ptr, (int)f[4].len, f[4].ptr);
        else
            dir = (int8_t)(f[4].ptr[0] - '0');
    }
    /* the trip id's string slot holds the trip: one copy of the id */
    strref_slot *id = tb_intern_slot(b, F(2), strmap_hash(F(2)));
    if (!id) return oom(b);
    if (id->value != TT_NONE) {
        diag_add(b->diag, DIAG_DUPLICATE_ID, "trips.txt", line, "duplicate trip_id '%.*s'", (int)f[2].len, f[2].ptr);
        return 0;
    }
    id->value = (uint32_t)b->trips.n;
    uint32_t id_off = id->off;
    tb_trip *t = TB_PUSH(b->trips);
    if (!t) return oom(b);
    memset(t, 0, sizeof *t);
    t->id = id_off;
    t->service = svc == TT_NONE ? tb_intern(b, F(1)) : svc;   /* the string until resolved */
    t->headsign = tb_intern(b, F(3));
    t->shape_id = tb_intern(b, F(5));
    t->route = route;
    t->direction_id = dir;
    t->wheelchair_accessible = trip_flag(&f[6]);
    t->bikes_allowed = trip_flag(&f[7]);
    return (t->id == TT_NONE || t->headsign == TT_NONE || t->shape_id == TT_NONE || t->service == TT_NONE)
               ? oom(b) : 0;
}

/* ------------------------------------------------------------------ frequencies */

static const char *const FREQ_KEYS[] = {"trip_id", "start_time", "end_time", "headway_secs"};

static int frequency_row(void *ctx, const csv_field *f, uint64_t line)
{
    tt_builder *b = ctx;
    b->stats->frequencies++;
    uint32_t trip = tb_trip_by_id(b, F(0));
    if (trip == UINT32_MAX) {
        diag_add(b->diag, DIAG_UNKNOWN_TRIP, "frequencies.txt", line, "unknown trip_id '%.*s'", (int)f[0].len, f[0].ptr);
        return 0;
    }
    assert(trip < b->trips.n);
    uint32_t start, end;
    int64_t headway;
    if (gtfs_parse_time(F(1), &start) != 0 || gtfs_parse_time(F(2), &end) != 0 || start == GTFS_TIME_NONE ||
        end == GTFS_TIME_NONE || end <= start) {
        diag_add(b->diag, DIAG_BAD_TIME, "frequencies.txt", line, "bad start_time/end_time '%.*s'..'%.*s'",
                 (int)f[1].len, f[1].ptr, (int)f[2].len, f[2].ptr);
        return 0;
    }
    if (gtfs_parse_int(F(3), &headway) != 0 || headway <= 0 || headway > 86400) {
        diag_add(b->diag, DIAG_BAD_NUMBER, "frequencies.txt", line, "bad headway_secs '%.*s'", (int)f[3].len, f[3].ptr);
        return 0;
    }
    tb_frequency *q = TB_PUSH(b->frequencies);
    if (!q) return oom(b);
    q->trip = trip;
    q->start = start;
    q->end = end;
    q->headway = (uint32_t)headway;
    b->trips.v[trip].frequency_based = true;
    return 0;
}

/* ------------------------------------------------------------------ stop_times */

static const char *const ST_KEYS[] = {"trip_id", "stop_id", "stop_sequence", "arrival_time", "departure_time",
                                      "pickup_type", "drop_off_type", "shape_dist_traveled"};

#define STOP_CACHE_POSITIONS 256
#define STOP_CACHE_ID 48

typedef struct st_ctx {
    tt_builder *b;
    size_t last_trip_len;
    uint32_t last_trip_idx;
    char last_trip_buf[256];
    bool dist_known;
    /* The stop at each position of the previous trip: consecutive trips of a
     * pattern repeat it, so most rows resolve their stop with one memcmp. */
    uint32_t pos;
    struct {
        uint32_t len, stop;
        char id[STOP_CACHE_ID];
    } stop_cache[STOP_CACHE_POSITIONS];
} st_ctx;

static inline int parse_small_enum(const csv_field *fl, uint8_t *out)
{
    if (fl->len == 0) {
        *out = 0;
        return 0;
    }
    if (fl->len == 1 && fl->ptr[0] >= '0' && fl->ptr[0] <= '3') {
        *out = (uint8_t)(fl->ptr[0] - '0');
        return 0;
    }
    return -1;
}

/* A row of a feed read trip by trip: the previous trip is folded when this
 * one begins. A trip that comes back after it was folded stops the reading
 * (the feed is not grouped by trip; read_stop_times reads it again). */
static int stream_row(tt_builder *b, uint32_t trip, uint32_t stop, uint32_t seq, uint32_t arr, uint32_t dep,
                      uint8_t pu, uint8_t dof, double dist, uint64_t line)
{
    trip_stream *s = b->stream;
    if (trip != s->open) {
        if (b->trips.v[trip].fold != TS_UNSEEN) {
            s->scattered_line = line;
            s->scattered_trip = trip;
            return -1;
        }
        if (ts_close_open(b, s)) return oom(b);
        s->open = trip;
        b->trips.v[trip].fold = TS_OPEN;
    }
    tb_stop_time *st = TB_PUSH(s->rows);
    if (!st) return oom(b);
    *st = (tb_stop_time){trip, seq, stop, arr, dep, pu, dof, 0};
    if (b->have_dist) {
        double *d = TB_PUSH(s->dists);
        if (!d) return oom(b);
        *d = dist;
    }
    return 0;
}

/* `trip` when its id is [id, id+len), else UINT32_MAX. */
static inline uint32_t next_trip_if(const tt_builder *b, uint32_t trip, const char *id, size_t len)
{
    if (len == 0 || trip >= b->trips.n) return UINT32_MAX;
    uint32_t off = b->trips.v[trip].id;
    if ((size_t)off + len >= b->strings_len) return UINT32_MAX;   /* the compare stays in the table */
    const char *have = tb_str(b, off);
    return memcmp(have, id, len) == 0 && have[len] == 0 ? trip : UINT32_MAX;
}

/* The budget of a feed whose rows are all held. */
static uint64_t memory_budget(const tt_builder *b)
{
    return b->opt->memory_budget ? b->opt->memory_budget : TIMETABLE_MEMORY_BUDGET;
}

static int stop_time_row(void *ctx, const csv_field *f, uint64_t line)
{
    st_ctx *c = ctx;
    tt_builder *b = c->b;
    b->stats->stop_times++;
    uint32_t trip;
    if (f[0].len == c->last_trip_len && c->last_trip_len && memcmp(f[0].ptr, c->last_trip_buf, f[0].len) == 0) {
        trip = c->last_trip_idx;
        c->pos++;
    } else {
        c->pos = 0;
        /* a feed lists its trips' stop times in trips.txt's order more often
         * than not: the trip after the last one is tried first, one compare
         * with its interned id instead of a look-up in a map of millions */
        trip = next_trip_if(b, c->last_trip_idx + 1, f[0].ptr, f[0].len);
        if (trip == UINT32_MAX)
            trip = tb_trip_by_id(b, F(0));
        if (trip == UINT32_MAX) {
            diag_add(b->diag, DIAG_UNKNOWN_TRIP, "stop_times.txt", line, "unknown trip_id '%.*s'", (int)f[0].len,
                     f[0].ptr);
            return 0;
        }
        if (f[0].len < sizeof c->last_trip_buf) {
            memcpy(c->last_trip_buf, f[0].ptr, f[0].len);
            c->last_trip_len = f[0].len;
            c->last_trip_idx = trip;
        } else {
            c->last_trip_len = 0;
        }
    }
    uint32_t stop;
    if (c->pos < STOP_CACHE_POSITIONS && c->stop_cache[c->pos].len == f[1].len && f[1].len &&
        memcmp(c->stop_cache[c->pos].id, f[1].ptr, f[1].len) == 0) {
        stop = c->stop_cache[c->pos].stop;
    } else {
        stop = tb_stop_by_id(b, F(1));
        if (stop == UINT32_MAX) {
            diag_add(b->diag, DIAG_UNKNOWN_STOP, "stop_times.txt", line, "unknown stop_id '%.*s'", (int)f[1].len,
                     f[1].ptr);
            return 0;
        }
        if (c->pos < STOP_CACHE_POSITIONS && f[1].len <= STOP_CACHE_ID) {
            c->stop_cache[c->pos].len = f[1].len;
            c->stop_cache[c->pos].stop = stop;
            memcpy(c->stop_cache[c->pos].id, f[1].ptr, f[1].len);
        }
    }
    /* once per row: the trip and stop, looked up or taken from the caches,
     * are records read before */
    assert(trip < b->trips.n && stop < b->stops.n);
    int64_t seq;
    if (gtfs_parse_int(F(2), &seq) != 0 || seq < 0 || seq > UINT32_MAX) {
        diag_add(b->diag, DIAG_BAD_NUMBER, "stop_times.txt", line, "bad stop_sequence '%.*s'", (int)f[2].len, f[2].ptr);
        return 0;
    }
    uint32_t arr, dep;
    if (gtfs_parse_time(F(3), &arr) != 0) {
        diag_add(b->diag, DIAG_BAD_TIME, "stop_times.txt", line, "bad arrival_time '%.*s'", (int)f[3].len, f[3].ptr);
        return 0;
    }
    if (gtfs_parse_time(F(4), &dep) != 0) {
        diag_add(b->diag, DIAG_BAD_TIME, "stop_times.txt", line, "bad departure_time '%.*s'", (int)f[4].len, f[4].ptr);
        return 0;
    }
    /* one given stands for both */
    if (arr == GTFS_TIME_NONE) arr = dep;
    if (dep == GTFS_TIME_NONE) dep = arr;
    uint8_t pu, dof;
    if (parse_small_enum(&f[5], &pu) != 0 || parse_small_enum(&f[6], &dof) != 0) {
        diag_add(b->diag, DIAG_BAD_VALUE, "stop_times.txt", line, "pickup_type/drop_off_type must be 0..3, not '%.*s'/'%.*s'",
                 (int)f[5].len, f[5].ptr, (int)f[6].len, f[6].ptr);
        return 0;
    }
    if (!c->dist_known) {
        c->dist_known = true;
        b->have_dist = !(f[7].flags & CSV_FIELD_ABSENT);
    }
    double dist = NAN;
    if (b->have_dist && !EMPTY(7) && gtfs_parse_double(F(7), &dist) != 0) {
        diag_add(b->diag, DIAG_BAD_NUMBER, "stop_times.txt", line, "bad shape_dist_traveled '%.*s'", (int)f[7].len,
                 f[7].ptr);
        dist = NAN;
    }
    if (!b->hold_rows)
        return stream_row(b, trip, stop, (uint32_t)seq, arr, dep, pu, dof, dist, line);
    /* not grouped by trip: the rows held go to a sorted run on disk when the
     * next one would pass the budget */
    if (((uint64_t)(b->stop_times.n + 1) * sts_row_bytes(b) > memory_budget(b) || b->stop_times.n >= TT_MAX_COUNT) &&
        sts_spill_run(b))
        return -1;
    tb_stop_time *st = TB_PUSH(b->stop_times);
    if (!st) return oom(b);
    st->trip = trip;
    st->stop = stop;
    st->seq = (uint32_t)seq;
    st->arr = arr;
    st->dep = dep;
    st->pickup = pu;
    st->drop_off = dof;
    st->pad = 0;
    if (b->have_dist) {
        double *d = TB_PUSH(b->dists);
        if (!d) return oom(b);
        *d = dist;
    }
    return 0;
}

/* ------------------------------------------------------------------ calendar_dates beside trips and stop_times */

/* calendar_dates.txt is read on its own thread while this one reads trips,
 * frequencies and stop_times: a feed with day-by-day calendars has millions
 * of its rows (Brooklyn written so: 1.45M, a quarter of a second), which
 * would otherwise lie on the import's critical path. The thread reads into a
 * builder of its own that starts with calendar.txt's services, so the
 * services it adds get the indices they would get here; it computes the day
 * sets and hands them to the schedule writer (days_handoff.c) as soon as
 * they exist. Trips read meanwhile keep their service_id as a string, and
 * are resolved once the thread is joined. */
#define DATES_BESIDE_BYTES ((uint64_t)1 << 20)   /* Brooklyn as written: 13 KB; day by day: 25.8 MB */

typedef struct dates_job {
    tt_builder hb;                 /* the thread's builder: its strings, services, calendar_dates */
    timetable_stats st;
    timetable_options opt;         /* no progress: the callback belongs to this thread */
    char err[512];
    int rc;
    struct days_handoff *days_out;
} dates_job;

/* calendar_dates_run's service lookup: the index, or UINT32_MAX out of memory. */
static uint32_t run_service(void *ctx, const char *id, size_t len)
{
    return service_index(ctx, id, len);
}

static void *read_dates(void *arg)
{
    dates_job *j = arg;
    tt_builder *hb = &j->hb;
    j->rc = -1;
    /* the rows the run reader takes set their days as they are read; the
     * others, and every removal, are kept as rows */
    day_additions adds;
    memset(&adds, 0, sizeof adds);
    calendar_dates_run run;
    calendar_dates_run_init(&run, &hb->calendar_dates.v, &hb->calendar_dates.n, &hb->calendar_dates.cap, &adds,
                            run_service, hb);
    hb->dates_run = &run;
    int failed = feed_has(hb->feed, "calendar_dates.txt")
                     ? read_file(hb, "calendar_dates.txt", CALDATE_KEYS, 3, 0x7, calendar_date_row, &j->st.calendar_dates)
                     : 0;
    hb->dates_run = NULL;
    if (!failed && hb->services.n == 0) {
        snprintf(hb->err, hb->errlen, "calendar.txt/calendar_dates.txt: no service is defined");
        failed = -1;
    }
    if (!failed)
        failed = traffic_days_build_adding(&hb->days, hb->calendars.v, hb->calendars.n, hb->calendar_dates.v,
                                           hb->calendar_dates.n, &adds, (uint32_t)hb->services.n, hb->err,
                                           hb->errlen);
    day_additions_free(&adds);
    if (failed)
        return NULL;
    if (j->days_out)
        days_handoff_publish(j->days_out, &hb->days, &hb->service_ids);
    j->rc = 0;
    return NULL;
}

/* The thread's builder: calendar.txt's services and rows, nothing else. */
static int dates_job_init(dates_job *j, tt_builder *b)
{
    memset(j, 0, sizeof *j);
    tt_builder *hb = &j->hb;
    hb->feed = b->feed;
    hb->diag = b->diag;            /* diag_add locks */
    hb->stats = &j->st;
    hb->opt = &j->opt;
    hb->err = j->err;
    hb->errlen = sizeof j->err;
    j->days_out = b->opt->days_out;
    hb->service_ids_only = true;
    if (strref_map_init(&hb->string_index, 64) || strmap_init(&hb->service_ids, 64) ||
        tb_grow((void **)&hb->strings, &hb->strings_cap, 1, 4096) != 0)
        return -1;
    hb->strings[0] = 0;
    hb->strings_len = 1;
    for (size_t i = 0; i < b->services.n; i++) {
        const char *id = tb_str(b, b->services.v[i]);
        if (service_index(hb, id, strlen(id)) != i) return -1;
    }
    for (size_t i = 0; i < b->calendars.n; i++) {
        tb_calendar *c = TB_PUSH(hb->calendars);
        if (!c) return -1;
        *c = b->calendars.v[i];
    }
    return 0;
}

/* Takes the thread's services (the new ones have the same indices here:
 * its map of service ids becomes this builder's, hashing none again),
 * calendar_dates rows and days. A new service's id string is interned now
 * when trips are still to be read; while they are pending, the trips that
 * name it give it (resolve_trip_services). 0 or -1. */
static int dates_job_merge(dates_job *j, tt_builder *b, bool pending)
{
    tt_builder *hb = &j->hb;
    size_t known = b->services.n;
    strmap_free(&b->service_ids);
    b->service_ids = hb->service_ids;
    memset(&hb->service_ids, 0, sizeof hb->service_ids);
    for (size_t i = known; i < hb->services.n; i++) {
        uint32_t *p = TB_PUSH(b->services);
        if (!p) return oom(b);
        *p = TT_NONE;
        if (!pending && (*p = intern_service_id(b, (uint32_t)i)) == TT_NONE) return oom(b);
    }
    free(b->calendar_dates.v);
    b->calendar_dates = hb->calendar_dates;
    memset(&hb->calendar_dates, 0, sizeof hb->calendar_dates);
    traffic_days_free(&b->days);
    b->days = hb->days;
    memset(&hb->days, 0, sizeof hb->days);
    b->stats->calendar_dates = j->st.calendar_dates;
    return 0;
}

/* Each trip's service, by the id string it kept in its place (one lookup
 * a trip); a service no trip named gets its string interned. False when a
 * trip names a service no calendar defines, or out of memory (b->err set). */
static bool resolve_trip_services(tt_builder *b)
{
    /* A day-by-day feed names as many services as trips, in another order:
     * each look-up would wait for three cache misses in turn (slot, entry,
     * key bytes). Each trip's are fetched in steps, RESOLVE_STEP trips
     * apart, while the trips before it are looked up. */
    enum { RESOLVE_STEP = 4, RESOLVE_RING = 16 };
    const strmap *m = &b->service_ids;
    const size_t n = b->trips.n;
    uint32_t hash[RESOLVE_RING], len[RESOLVE_RING];
    bool known = true;
    for (size_t k = 0; k < n + 3 * RESOLVE_STEP && known; k++) {
        if (k < n) {   /* the hash, and its slot fetched */
            const char *id = tb_str(b, b->trips.v[k].service);
            len[k % RESOLVE_RING] = (uint32_t)strlen(id);
            hash[k % RESOLVE_RING] = strmap_hash(id, len[k % RESOLVE_RING]);
            __builtin_prefetch(&m->slots[hash[k % RESOLVE_RING] & m->mask]);
        }
        size_t j = k - RESOLVE_STEP;   /* its entry fetched */
        if (k >= RESOLVE_STEP && j < n) {
            uint32_t slot = m->slots[hash[j % RESOLVE_RING] & m->mask];
            if (slot) __builtin_prefetch(&m->entries[slot - 1]);
        }
        j = k - 2 * RESOLVE_STEP;      /* its key's bytes fetched */
        if (k >= 2 * RESOLVE_STEP && j < n) {
            uint32_t slot = m->slots[hash[j % RESOLVE_RING] & m->mask];
            if (slot) __builtin_prefetch(m->arena + m->entries[slot - 1].key_off);
        }
        if (k < 3 * RESOLVE_STEP) continue;
        size_t i = k - 3 * RESOLVE_STEP;   /* looked up */
        tb_trip *t = &b->trips.v[i];
        uint32_t id_str = t->service;
        uint32_t svc = strmap_get_hashed(m, tb_str(b, id_str), len[i % RESOLVE_RING], hash[i % RESOLVE_RING]);
        if (svc == UINT32_MAX) {
            known = false;
            break;
        }
        t->service = svc;
        if (b->services.v[svc] == TT_NONE)
            b->services.v[svc] = id_str;   /* the same bytes, interned once */
    }
    for (size_t i = 0; i < b->services.n; i++)
        if (b->services.v[i] == TT_NONE && (b->services.v[i] = intern_service_id(b, (uint32_t)i)) == TT_NONE) {
            oom(b);
            return false;
        }
    return known;
}

/* diag_add's counts and examples of `from`, added to `into`. */
static void diag_absorb(diag *into, const diag *from)
{
    pthread_mutex_lock(&into->lock);
    for (int k = 0; k < DIAG_KIND_COUNT; k++) into->count[k] += from->count[k];
    for (int i = 0; i < from->nexamples && into->nexamples < DIAG_EXAMPLES; i++) {
        memcpy(into->examples[into->nexamples], from->examples[i], sizeof into->examples[0]);
        into->example_kind[into->nexamples++] = from->example_kind[i];
    }
    pthread_mutex_unlock(&into->lock);
}

/* Back to before stop_times.txt was read: no trip folded, no row held. */
static int forget_stop_times(tt_builder *b)
{
    for (size_t i = 0; i < b->trips.n; i++) {
        b->trips.v[i].fold = TS_UNSEEN;
        b->trips.v[i].valid = false;
    }
    b->stop_times.n = b->dists.n = 0;
    b->have_dist = false;
    return ts_reset(b->stream) ? oom(b) : 0;
}

/* stop_times.txt, folded trip by trip; read again holding every row when it
 * is not grouped by trip. */
static int read_stop_times(tt_builder *b)
{
    if (!b->stream) {
        b->stream = malloc(sizeof *b->stream);
        if (!b->stream || ts_init(b->stream)) {
            free(b->stream);
            b->stream = NULL;
            return oom(b);
        }
    }
    diag_mark mark;
    diag_mark_take(b->diag, &mark);
    b->hold_rows = false;
    st_ctx c;
    int has[CSV_MAX_KEYS] = {0};
    csv_error cerr;
    int rc;
    for (int pass = 0;; pass++) {
        memset(&c, 0, sizeof c);
        c.b = b;
        memset(&cerr, 0, sizeof cerr);
        b->stats->stop_times = 0;
        rc = stream_csv(b, "stop_times.txt", ST_KEYS, 8, stop_time_row, &c, &b->stats->stop_times, has, &cerr);
        if (rc == 0 && !b->hold_rows && ts_close_open(b, b->stream)) return oom(b);
        if (rc == 0 || pass == 1 || b->stream->scattered_line == 0 || b->err[0]) break;
        /* not grouped by trip: hold the rows, in sorted runs on disk past the budget */
        diag_mark_restore(b->diag, &mark);
        uint64_t line = b->stream->scattered_line;
        uint32_t trip = b->stream->scattered_trip;
        if (forget_stop_times(b)) return -1;
        b->stream->scattered_line = line;
        b->stream->scattered_trip = trip;
        b->hold_rows = true;
        /* size the array from the member size (about 40 bytes a row) */
        int64_t sz = feed_size(b->feed, "stop_times.txt");
        size_t guess = sz > 0 ? (size_t)(sz / 40) + 1024 : 0;
        size_t fit = (size_t)(memory_budget(b) / (sizeof(tb_stop_time) + sizeof(uint32_t)));
        if (guess > fit) guess = fit;
        if (guess && tb_grow((void **)&b->stop_times.v, &b->stop_times.cap, sizeof(tb_stop_time), guess))
            return oom(b);
    }
    if (rc != 0) {
        if (b->err[0] == 0)
            snprintf(b->err, b->errlen, "stop_times.txt:%llu: column %u: %s", (unsigned long long)cerr.line,
                     cerr.column, cerr.message);
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        if (!has[i]) {
            snprintf(b->err, b->errlen, "stop_times.txt: missing required column '%s'", ST_KEYS[i]);
            return -1;
        }
    }
    if (!has[3] && !has[4]) {
        snprintf(b->err, b->errlen, "stop_times.txt: missing required column 'departure_time' (and 'arrival_time')");
        return -1;
    }
    return 0;
}

/* trips.txt, frequencies.txt and stop_times.txt, in that order. */
static int read_trip_files(tt_builder *b)
{
    if (read_file(b, "trips.txt", TRIP_KEYS, 8, 0x7, trip_row, &b->stats->trips)) return -1;
    if (feed_has(b->feed, "frequencies.txt") &&
        read_file(b, "frequencies.txt", FREQ_KEYS, 4, 0xF, frequency_row, &b->stats->frequencies))
        return -1;
    return read_stop_times(b);
}

/* Forgets what read_trip_files read, to read it again. */
static int reset_trip_files(tt_builder *b)
{
    /* the strings read stay interned; none names a trip any more */
    for (uint32_t i = 0; i < b->string_index.nslots; i++) b->string_index.slots[i].value = TT_NONE;
    b->trips.n = b->stop_times.n = b->dists.n = b->frequencies.n = 0;
    b->have_dist = false;
    b->hold_rows = false;
    if (b->stream && ts_reset(b->stream)) return oom(b);
    b->stats->trips = b->stats->frequencies = b->stats->stop_times = 0;
    return 0;
}

/* calendar_dates.txt, then trips, frequencies and stop_times. A big
 * calendar_dates.txt (day-by-day calendars) is read on its own thread
 * (inline when none can be started) beside the three, whose problems are
 * counted apart until the services are known. When a trip names an unknown
 * service (a broken feed), the three files are read again the plain way,
 * so that it and its stop times are skipped and counted exactly as always.
 * A small one is read first, and the three the plain way at once. */
static int read_trips_and_stop_times(tt_builder *b)
{
    dates_job *j = calloc(1, sizeof *j);
    if (!j) return oom(b);
    int rc = -1;
    pthread_t thread;
    bool threaded = false;
    diag *real = b->diag, pending;
    diag_init(&pending);
    if (dates_job_init(j, b) != 0) {
        oom(b);
        goto out;
    }
    uint64_t beside = b->opt->dates_beside_bytes ? b->opt->dates_beside_bytes : DATES_BESIDE_BYTES;
    if (!feed_has(b->feed, "calendar_dates.txt") || feed_size(b->feed, "calendar_dates.txt") <= (int64_t)beside) {
        read_dates(j);
        if (j->rc != 0) {
            snprintf(b->err, b->errlen, "%s", j->err);
            goto out;
        }
        if (dates_job_merge(j, b, false) == 0) rc = read_trip_files(b);
        goto out;
    }
    threaded = pthread_create(&thread, NULL, read_dates, j) == 0;
    if (!threaded) read_dates(j);
    b->services_pending = true;
    b->diag = &pending;
    int read_rc = read_trip_files(b);
    b->diag = real;
    b->services_pending = false;
    if (threaded) pthread_join(thread, NULL);
    threaded = false;
    if (j->rc != 0) {
        snprintf(b->err, b->errlen, "%s", j->err);
        goto out;
    }
    if (dates_job_merge(j, b, true) != 0) goto out;
    if (read_rc != 0 && b->err[0]) goto out;
    bool resolved = resolve_trip_services(b);   /* and every service has its string, for a second read */
    if (b->err[0]) goto out;
    if (read_rc == 0 && resolved) {
        diag_absorb(real, &pending);
        rc = 0;
        goto out;
    }
    if (reset_trip_files(b) != 0) goto out;
    b->err[0] = 0;
    rc = read_trip_files(b);
out:
    if (threaded) pthread_join(thread, NULL);
    diag_destroy(&pending);
    tb_free(&j->hb);
    free(j);
    return rc;
}

/* ------------------------------------------------------------------ all files */

static int require(tt_builder *b, const char *file)
{
    if (feed_has(b->feed, file)) return 0;
    snprintf(b->err, b->errlen, "%s: missing required file %s", feed_path(b->feed), file);
    return -1;
}

int tb_read_feed(tt_builder *b)
{
    if (require(b, "agency.txt") || require(b, "stops.txt") || require(b, "routes.txt") || require(b, "trips.txt") ||
        require(b, "stop_times.txt"))
        return -1;
    if (!feed_has(b->feed, "calendar.txt") && !feed_has(b->feed, "calendar_dates.txt")) {
        snprintf(b->err, b->errlen, "%s: missing required file calendar.txt or calendar_dates.txt (neither is present)",
                 feed_path(b->feed));
        return -1;
    }
    if (strref_map_init(&b->string_index, 1 << 16) || strref_map_init(&b->stop_index, 1 << 12) ||
        strmap_init(&b->route_ids, 1 << 8) ||
        strmap_init(&b->service_ids, 1 << 6) || strmap_init(&b->agency_ids, 16))
        return oom(b);
    /* offset 0 of the string table is the empty string */
    if (tb_grow((void **)&b->strings, &b->strings_cap, 1, 1 << 16) != 0) return oom(b);
    b->strings[0] = 0;
    b->strings_len = 1;

    if (read_file(b, "agency.txt", AGENCY_KEYS, 6, 0x7, agency_row, &b->stats->agency)) return -1;
    if (b->agencies.n == 0) {
        snprintf(b->err, b->errlen, "agency.txt: no agency rows");
        return -1;
    }
    if (b->tz_name == 0) {
        snprintf(b->err, b->errlen, "agency.txt: no agency_timezone given");
        return -1;
    }
    char tzerr[256];
    if (tz_load(tb_str(b, b->tz_name), &b->zone, tzerr, sizeof tzerr) != 0) {
        snprintf(b->err, b->errlen, "agency.txt: agency_timezone: %s", tzerr);
        return -1;
    }
    snprintf(b->stats->timezone, sizeof b->stats->timezone, "%s", tb_str(b, b->tz_name));
    if (read_file(b, "stops.txt", STOP_KEYS, 10, 0xD, /* stop_id, stop_lat, stop_lon */ stop_row, &b->stats->stops)) return -1;
    resolve_parents(b);
    if (read_file(b, "routes.txt", ROUTE_KEYS, 7, 0x3, route_row, &b->stats->routes)) return -1;
    if (feed_has(b->feed, "calendar.txt") &&
        read_file(b, "calendar.txt", CAL_KEYS, 10, 0x3FF, calendar_row, &b->stats->calendar))
        return -1;
    return read_trips_and_stop_times(b);
}

void tb_drop_lookups(tt_builder *b)
{
    strref_map_free(&b->string_index);
    strref_map_free(&b->stop_index);
    strmap_free(&b->route_ids);
    strmap_free(&b->service_ids);
    strmap_free(&b->agency_ids);
}

void tb_free(tt_builder *b)
{
    free(b->strings);
    strref_map_free(&b->string_index);
    strref_map_free(&b->stop_index);
    strmap_free(&b->route_ids);
    strmap_free(&b->service_ids);
    strmap_free(&b->agency_ids);
    free(b->stops.v);
    free(b->routes.v);
    free(b->agencies.v);
    free(b->trips.v);
    free(b->services.v);
    free(b->stop_times.v);
    free(b->dists.v);
    if (b->stream) ts_free(b->stream);
    sts_close(b);
    free(b->stream);
    free(b->frequencies.v);
    free(b->calendars.v);
    free(b->calendar_dates.v);
    traffic_days_free(&b->days);
    tz_free(&b->zone);
}
