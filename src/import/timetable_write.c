/* timetable_write.c — turns the builder's model into timetable.bin.
 *
 * Why it exists: timetable_build is the one entry point from the importer:
 * it reads the feed (gtfs_read.c), ranks the ids, has the trips folded into
 * patterns, profiles and run groups (timetable_trips.c) and the indexes the
 * queries need built (timetable_index.c), then lays every section out in the
 * order of timetable_format.h and writes the file with its checksum in one
 * pass.
 */
#include "import/timetable_write_internal.h"

#include "import/days_handoff.h"
#include "import/tt_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int tt_fail_oom(tt_builder *b)
{
    snprintf(b->err, b->errlen, "out of memory while building the timetable");
    return -1;
}

/* ------------------------------------------------------------ id ranks */

/* qsort has no context argument in C11; the comparator's context is per thread. */
static _Thread_local const char *g_sort_strings;
static _Thread_local const uint32_t *g_sort_keys;

static int cmp_by_string(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = strcmp(g_sort_strings + g_sort_keys[x], g_sort_strings + g_sort_keys[y]);
    return c ? c : (x < y ? -1 : x > y);
}

/* Sorts indices 0..n-1 by the string offset keys[i]; writes order into out. */
static void sort_by_string(const char *strings, const uint32_t *keys, uint32_t n, uint32_t *out)
{
    for (uint32_t i = 0; i < n; i++) out[i] = i;
    g_sort_strings = strings;
    g_sort_keys = keys;
    qsort(out, n, sizeof *out, cmp_by_string);
}

/* ------------------------------------------------------------ writing */

/* A section's bytes: in memory (data), or made `count` elements at a time
 * by make (a section as large as the trips', 360 MB at 64 copies of
 * Brooklyn, is never held whole). */
typedef struct section_src {
    const void *data;
    uint64_t size;
    uint32_t elem;
    void (*make)(const void *ctx, uint64_t first, uint32_t count, void *out);
    const void *make_ctx;
} section_src;

enum { MADE_AT_ONCE = 4096 };   /* elements a make call fills */

/* Writes n bytes and adds them to the checksum. 0 or -1. */
static int put(FILE *fp, const void *data, uint64_t n, uint32_t *crc)
{
    if (!n) return 0;
    *crc = tt_crc32(*crc, data, n);
    return fwrite(data, 1, n, fp) == n ? 0 : -1;
}

/* A section's bytes, written and summed. 0 or -1. */
static int put_section(FILE *fp, const section_src *src, uint32_t *crc)
{
    if (!src->make) return put(fp, src->data, src->size, crc);
    uint64_t n = src->elem ? src->size / src->elem : 0;
    void *buf = malloc((size_t)MADE_AT_ONCE * src->elem + 1);
    if (!buf) return -1;
    int rc = 0;
    for (uint64_t first = 0; first < n && rc == 0; first += MADE_AT_ONCE) {
        uint32_t count = n - first < MADE_AT_ONCE ? (uint32_t)(n - first) : MADE_AT_ONCE;
        src->make(src->make_ctx, first, count, buf);
        rc = put(fp, buf, (uint64_t)count * src->elem, crc);
    }
    free(buf);
    return rc;
}

/* The header, the sections in order (each TT_ALIGN-aligned, zeros between)
 * and the checksum of everything after the header, written in one pass: the
 * header goes first with its checksum zero and again once the sections are
 * summed. */
static int write_file(tt_builder *b, const char *path, const section_src *src, uint64_t *bytes)
{
    tt_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, TT_MAGIC, 8);
    h.format_version = TT_FORMAT_VERSION;
    h.byte_order = TT_BYTE_ORDER;
    h.header_size = sizeof h;
    h.nsections = TT_SEC_COUNT;
    uint64_t off = (sizeof h + TT_ALIGN - 1) / TT_ALIGN * TT_ALIGN;
    for (int i = 0; i < TT_SEC_COUNT; i++) {
        h.sections[i] = (tt_section){(uint32_t)i, src[i].elem, off, src[i].size};
        uint64_t end = off + src[i].size;
        off = end + (TT_ALIGN - end % TT_ALIGN) % TT_ALIGN;
    }
    h.file_size = off;
    static const unsigned char zeros[TT_ALIGN];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        snprintf(b->err, b->errlen, "%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    FILE *fp = fdopen(fd, "wb");
    if (!fp) {
        close(fd);
        snprintf(b->err, b->errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    setvbuf(fp, NULL, _IOFBF, 1 << 20);
    int ok = fwrite(&h, sizeof h, 1, fp) == 1;
    uint32_t crc = tt_crc32_init();
    uint64_t pos = sizeof h;
    /* bytes between the header and the first section are zeros and covered by the crc */
    for (int i = 0; i < TT_SEC_COUNT && ok; i++) {
        ok = put(fp, zeros, h.sections[i].offset - pos, &crc) == 0 && put_section(fp, &src[i], &crc) == 0;
        pos = h.sections[i].offset + src[i].size;
    }
    if (ok) ok = put(fp, zeros, h.file_size - pos, &crc) == 0;
    h.checksum = crc;
    if (ok) ok = fflush(fp) == 0 && pwrite(fileno(fp), &h, sizeof h, 0) == (ssize_t)sizeof h && fsync(fileno(fp)) == 0;
    if (fclose(fp) != 0) ok = 0;
    if (!ok) {
        snprintf(b->err, b->errlen, "%s: write failed: %s", path, strerror(errno));
        unlink(path);
        return -1;
    }
    *bytes = h.file_size;
    return 0;
}

static void out_free(tt_out *o)
{
    free(o->stops);
    free(o->stop_by_id);
    free(o->children);
    free(o->stop_routes);
    free(o->grid_cells);
    free(o->grid_stops);
    free(o->routes);
    free(o->route_by_id);
    free(o->trip_by_id);
    free(o->service_days);
    free(o->day_sets);
    free(o->patterns.v);
    free(o->pattern_stops.v);
    free(o->profiles.v);
    free(o->groups.v);
    free(o->runs.v);
    free(o->visits);
    free(o->daybase);
    free(o->tz.v);
}

/* Every count read from the feed fits the format's uint32_t fields (checked
 * before layout_and_write narrows them). */
static int check_read_counts(tt_builder *b)
{
    const struct { size_t n; const char *where, *what; } c[] = {
        {b->stops.n, "stops.txt", "stops"},
        {b->routes.n, "routes.txt", "routes"},
        {b->trips.n, "trips.txt", "trips"},
        {b->stop_times.n, "stop_times.txt", "stop times"},
        {b->services.n, "calendar.txt/calendar_dates.txt", "services"},
        {b->agencies.n, "agency.txt", "agencies"},
        {b->frequencies.n, "frequencies.txt", "frequencies"},
        {b->strings_len, "the feed", "bytes of strings"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        if (tt_check_count(c[i].n, TT_MAX_COUNT, c[i].where, c[i].what, b->err, b->errlen) != 0)
            return -1;
    return 0;
}

/* The same for what the build derived (patterns, runs, visits...). */
static int check_built_counts(tt_builder *b, const tt_out *o)
{
    const struct { size_t n; const char *what; } c[] = {
        {o->runs.n, "runs"},
        {o->patterns.n, "patterns"},
        {o->pattern_stops.n, "pattern stops"},
        {o->profiles.n, "time profile entries"},
        {o->groups.n, "trip groups"},
        {o->nvisits, "stop visits"},
        {o->nchildren, "child stops"},
        {o->nstop_routes, "stop routes"},
        {o->ngrid_stops, "grid entries"},
        {o->tz.n, "time zone transitions"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        if (tt_check_count(c[i].n, TT_MAX_COUNT, "timetable.bin", c[i].what, b->err, b->errlen) != 0)
            return -1;
    return 0;
}

/* ------------------------------------------------------------ layout */

/* The id orders (stops, routes, trips by id) and ranks (a route's rank
 * among the short names, ties sharing the lowest; a trip's rank by id). */
static void rank_ids(tt_builder *b, tt_out *o, uint32_t *keys, uint32_t *order, uint32_t *trip_rank,
                     uint32_t *route_rank)
{
    uint32_t nstops = (uint32_t)b->stops.n, nroutes = (uint32_t)b->routes.n, ntrips = (uint32_t)b->trips.n;
    for (uint32_t i = 0; i < nstops; i++) keys[i] = b->stops.v[i].id;
    sort_by_string(b->strings, keys, nstops, o->stop_by_id);
    for (uint32_t i = 0; i < nroutes; i++) keys[i] = b->routes.v[i].id;
    sort_by_string(b->strings, keys, nroutes, o->route_by_id);
    for (uint32_t i = 0; i < nroutes; i++) keys[i] = b->routes.v[i].short_name;
    sort_by_string(b->strings, keys, nroutes, order);
    for (uint32_t r = 0, rank = 0; r < nroutes; r++) {
        if (r && strcmp(tb_str(b, keys[order[r]]), tb_str(b, keys[order[r - 1]])) != 0) rank = r;
        route_rank[order[r]] = rank;
    }
    for (uint32_t i = 0; i < ntrips; i++) keys[i] = b->trips.v[i].id;
    sort_by_string(b->strings, keys, ntrips, o->trip_by_id);
    for (uint32_t r = 0; r < ntrips; r++) trip_rank[o->trip_by_id[r]] = r;
}

/* The stops and routes as written, with their ranks. */
static void copy_stops_and_routes(const tt_builder *b, tt_out *o, const uint32_t *route_rank)
{
    uint32_t nstops = (uint32_t)b->stops.n, nroutes = (uint32_t)b->routes.n;
    for (uint32_t i = 0; i < nstops; i++) {
        const tb_stop *s = &b->stops.v[i];
        tt_stop *d = &o->stops[i];
        d->lat = s->lat;
        d->lon = s->lon;
        d->id = s->id;
        d->name = s->name;
        d->parent = s->parent;
        d->location_type = s->location_type;
        d->code = s->code;
        d->desc = s->desc;
        d->platform_code = s->platform_code;
        d->wheelchair_boarding = s->wheelchair_boarding;
    }
    for (uint32_t r = 0; r < nstops; r++) o->stops[o->stop_by_id[r]].id_rank = r;
    for (uint32_t i = 0; i < nroutes; i++) {
        o->routes[i] = b->routes.v[i];
        o->routes[i].short_name_rank = route_rank[i];
    }
}

/* What the TRIPS section is made from, while it is written. */
typedef struct trips_src {
    const tt_builder *b;
    const tt_out *o;
    const uint32_t *trip_rank;
} trips_src;

/* Trips [first, first + count) as written (section_src.make); one without
 * usable stop times has no pattern. */
static void make_trips(const void *ctx, uint64_t first, uint32_t count, void *out)
{
    const trips_src *src = ctx;
    const tt_builder *b = src->b;
    const tt_out *o = src->o;
    tt_trip *trips = out;
    memset(trips, 0, (size_t)count * sizeof *trips);
    for (uint32_t k = 0; k < count; k++) {
        size_t i = (size_t)first + k;
        const tb_trip *s = &b->trips.v[i];
        tt_trip *d = &trips[k];
        d->id = s->id;
        d->service_id_str = b->services.v[s->service];
        d->headsign = s->headsign;
        d->shape_id = s->shape_id;
        d->route = s->route;
        d->days = o->service_days[s->service];
        d->pattern = s->valid ? s->pattern : TT_NONE;
        d->dep_profile = s->valid ? s->dep_profile : TT_NONE;
        d->arr_profile = s->valid ? s->arr_profile : TT_NONE;
        d->start = s->start;
        d->id_rank = src->trip_rank[i];
        d->direction_id = s->direction_id;
        d->frequency_based = s->frequency_based;
        d->wheelchair_accessible = s->wheelchair_accessible;
        d->bikes_allowed = s->bikes_allowed;
    }
}

/* Everything but the meta section's counts: patterns, groups and every index. */
static int build_sections(tt_builder *b, tt_out *o, const uint32_t *trip_rank, const uint32_t *route_rank)
{
    run_tmp *runs = NULL;
    size_t nruns = 0;
    int rc = -1;
    if (tt_build_services(b, o) || tt_build_trips(b, o, trip_rank, route_rank, &runs, &nruns)) goto out;
    if (nruns == 0) {
        snprintf(b->err, b->errlen, "stop_times.txt: no trip has usable stop times");
        goto out;
    }
    if (tt_build_groups(b, o, runs, nruns)) goto out;
    free(runs);   /* in o->runs and o->groups now */
    runs = NULL;
    copy_stops_and_routes(b, o, route_rank);
    if (tt_build_visits(b, o) || tt_build_stop_routes(b, o) || tt_build_children(b, o) || tt_build_grid(b, o) ||
        tt_build_time(b, o))
        goto out;
    rc = check_built_counts(b, o);
out:
    free(runs);
    return rc;
}

static void fill_meta(const tt_builder *b, tt_out *o)
{
    tt_meta *m = &o->meta;
    m->tz_name = b->tz_name;
    m->nstops = (uint32_t)b->stops.n;
    m->nroutes = (uint32_t)b->routes.n;
    m->ntrips = (uint32_t)b->trips.n;
    m->nruns = (uint32_t)o->runs.n;
    m->npatterns = (uint32_t)o->patterns.n;
    m->ngroups = (uint32_t)o->groups.n;
    m->nservices = (uint32_t)b->services.n;
    m->nagencies = (uint32_t)b->agencies.n;
    m->ntz = (uint32_t)o->tz.n;
    m->imported_at = (int64_t)time(NULL);
}

/* The sections in the order of timetable_format.h, written to path. */
static int write_sections(tt_builder *b, const char *path, const tt_out *o, const uint32_t *trip_rank)
{
    const tt_meta *m = &o->meta;
    const trips_src trips = {b, o, trip_rank};
    uint32_t nstops = m->nstops, nroutes = m->nroutes, ntrips = m->ntrips;
#define HELD(d, n, e) {.data = (d), .size = (n), .elem = (e)}
    section_src src[TT_SEC_COUNT] = {
        [TT_SEC_META] = HELD(&o->meta, sizeof o->meta, sizeof o->meta),
        [TT_SEC_STRINGS] = HELD(b->strings, b->strings_len, 1),
        [TT_SEC_STOPS] = HELD(o->stops, (uint64_t)nstops * sizeof(tt_stop), sizeof(tt_stop)),
        [TT_SEC_STOP_BY_ID] = HELD(o->stop_by_id, (uint64_t)nstops * 4, 4),
        [TT_SEC_STOP_CHILDREN] = HELD(o->children, o->nchildren * 4, 4),
        [TT_SEC_STOP_ROUTES] = HELD(o->stop_routes, o->nstop_routes * 4, 4),
        [TT_SEC_GRID_CELLS] = HELD(o->grid_cells, o->ngrid_cells * 4, 4),
        [TT_SEC_GRID_STOPS] = HELD(o->grid_stops, o->ngrid_stops * 4, 4),
        [TT_SEC_ROUTES] = HELD(o->routes, (uint64_t)nroutes * sizeof(tt_route), sizeof(tt_route)),
        [TT_SEC_ROUTE_BY_ID] = HELD(o->route_by_id, (uint64_t)nroutes * 4, 4),
        [TT_SEC_AGENCIES] = HELD(b->agencies.v, b->agencies.n * sizeof(tt_agency), sizeof(tt_agency)),
        [TT_SEC_TRIPS] = {.size = (uint64_t)ntrips * sizeof(tt_trip), .elem = sizeof(tt_trip), .make = make_trips, .make_ctx = &trips},
        [TT_SEC_TRIP_BY_ID] = HELD(o->trip_by_id, (uint64_t)ntrips * 4, 4),
        [TT_SEC_DAY_SETS] = HELD(o->day_sets, (uint64_t)m->ndaysets * m->service_words * 8, 8),
        [TT_SEC_PATTERNS] = HELD(o->patterns.v, o->patterns.n * sizeof(tt_pattern), sizeof(tt_pattern)),
        [TT_SEC_PATTERN_STOPS] = HELD(o->pattern_stops.v, o->pattern_stops.n * sizeof(tt_pattern_stop),
                                      sizeof(tt_pattern_stop)),
        [TT_SEC_PROFILES] = HELD(o->profiles.v, o->profiles.n * 4, 4),
        [TT_SEC_GROUPS] = HELD(o->groups.v, o->groups.n * sizeof(tt_group), sizeof(tt_group)),
        [TT_SEC_RUNS] = HELD(o->runs.v, o->runs.n * sizeof(tt_run), sizeof(tt_run)),
        [TT_SEC_VISITS] = HELD(o->visits, o->nvisits * sizeof(tt_visit), sizeof(tt_visit)),
        [TT_SEC_DAYBASE] = HELD(o->daybase, o->ndaybase * 8, 8),
        [TT_SEC_TZ] = HELD(o->tz.v, o->tz.n * sizeof(tt_tz_transition), sizeof(tt_tz_transition)),
    };
#undef HELD
    return write_file(b, path, src, &b->stats->bytes);
}

static int layout_and_write(tt_builder *b, const char *path)
{
    tt_out o;
    memset(&o, 0, sizeof o);
    int rc = -1;
    uint32_t nstops = (uint32_t)b->stops.n, nroutes = (uint32_t)b->routes.n, ntrips = (uint32_t)b->trips.n;
    uint32_t *keys = malloc(((size_t)(nstops > ntrips ? (nstops > nroutes ? nstops : nroutes) : (ntrips > nroutes ? ntrips : nroutes)) + 1) * sizeof *keys);
    uint32_t *trip_rank = malloc(((size_t)ntrips + 1) * sizeof *trip_rank);
    uint32_t *route_rank = malloc(((size_t)nroutes + 1) * sizeof *route_rank);
    uint32_t *order = malloc(((size_t)nroutes + 1) * sizeof *order);
    o.stops = calloc((size_t)nstops + 1, sizeof *o.stops);
    o.stop_by_id = malloc(((size_t)nstops + 1) * sizeof *o.stop_by_id);
    o.routes = calloc((size_t)nroutes + 1, sizeof *o.routes);
    o.route_by_id = malloc(((size_t)nroutes + 1) * sizeof *o.route_by_id);
    o.trip_by_id = malloc(((size_t)ntrips + 1) * sizeof *o.trip_by_id);
    if (!keys || !trip_rank || !route_rank || !order || !o.stops || !o.stop_by_id || !o.routes || !o.route_by_id ||
        !o.trip_by_id) {
        tt_fail_oom(b);
        goto out;
    }
    double t0 = now_seconds();
    rank_ids(b, &o, keys, order, trip_rank, route_rank);
    free(keys);
    free(order);
    keys = order = NULL;
    if (build_sections(b, &o, trip_rank, route_rank)) goto out;
    fill_meta(b, &o);
    b->stats->build_seconds = now_seconds() - t0;

    double t1 = now_seconds();
    if (write_sections(b, path, &o, trip_rank)) goto out;
    b->stats->write_seconds = now_seconds() - t1;
    timetable_stats *st = b->stats;
    st->nstops = nstops;
    st->nroutes = nroutes;
    st->ntrips = ntrips;
    st->nruns = o.meta.nruns;
    st->npatterns = o.meta.npatterns;
    st->ngroups = o.meta.ngroups;
    st->nservices = o.meta.nservices;
    rc = 0;
out:
    free(keys);
    free(trip_rank);
    free(route_rank);
    free(order);
    out_free(&o);
    return rc;
}

int timetable_build(const feed_t *feed, const char *path, const timetable_options *opt, diag *d, timetable_stats *st,
                    char *err, size_t errlen)
{
    static const timetable_options no_options;
    tt_builder b;
    memset(&b, 0, sizeof b);
    b.opt = opt ? opt : &no_options;
    memset(st, 0, sizeof *st);
    b.feed = feed;
    b.diag = d;
    b.stats = st;
    b.err = err;
    b.errlen = errlen;
    err[0] = 0;
    /* a feed not grouped by trip may sort its rows in runs beside the timetable */
    const char *slash = strrchr(path, '/');
    if (slash) snprintf(b.spill_dir, sizeof b.spill_dir, "%.*s", (int)(slash - path), path);
    else snprintf(b.spill_dir, sizeof b.spill_dir, ".");
    double t0 = now_seconds();
    int rc = tb_read_feed(&b);
    if (b.opt->days_out)
        days_handoff_withdraw(b.opt->days_out);   /* when tb_read_feed stopped before publishing */
    st->parse_seconds = now_seconds() - t0;
    if (rc == 0) rc = check_read_counts(&b);
    tb_drop_lookups(&b);    /* the layout needs none of them */
    if (rc == 0) rc = layout_and_write(&b, path);
    tb_free(&b);
    return rc;
}
