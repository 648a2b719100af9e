/* dataset.c — maps timetable.bin, verifies it, and answers entity look-ups.
 *
 * Why it exists: the server and the CLI hold a `dataset`: one read-only
 * mapping of a version's timetable.bin plus typed views of its sections. A
 * damaged or foreign file is refused with a clear message before any query
 * can read past its bounds. Reference counting lets a hot reload swap
 * datasets while requests still read the old one.
 */
#include "store/dataset_internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "transit/datadir.h"
#include "transit/stores.h"

static int check_section(const tt_header *h, int id, uint32_t elem, uint64_t count_expected, const char **why)
{
    const tt_section *s = &h->sections[id];
    if (s->id != (uint32_t)id || s->offset % TT_ALIGN || s->offset < h->header_size || s->offset > h->file_size ||
        s->size > h->file_size - s->offset) {
        *why = "a section lies outside the file";
        return -1;
    }
    if (s->elem_size != elem || (elem && s->size % elem)) {
        *why = "a section's element size does not match this build";
        return -1;
    }
    if (count_expected != UINT64_MAX && s->size / elem != count_expected) {
        *why = "a section's length does not match the header";
        return -1;
    }
    return 0;
}

#define SEC(ds, id, type) ((const type *)((ds)->base + (ds)->hdr->sections[id].offset))
#define SEC_N(ds, id) ((ds)->hdr->sections[id].size / ((ds)->hdr->sections[id].elem_size))

/* The checksum of everything after the header. A large timetable's pages
 * are let go behind the sum as it goes (a read-only shared mapping: they
 * stay in the page cache), so that summing 777 MB (64 copies of Brooklyn)
 * does not make them all resident at once; the derivations read back only
 * the sections they need. */
static uint32_t checksum_of(const dataset *ds, const tt_header *h)
{
    const unsigned char *at = (const unsigned char *)ds->base + h->header_size;
    uint64_t left = h->file_size - h->header_size;
    if (ds->size < DATASET_DERIVED_IN_FILES_FROM)
        return tt_crc32(tt_crc32_init(), at, left);
    const uint64_t step = 32u << 20;   /* a multiple of the page size */
    uint32_t crc = tt_crc32(tt_crc32_init(), at, 0);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    while (left) {
        uint64_t n = left < step ? left : step;
        crc = tt_crc32(crc, at, n);
#ifdef MADV_DONTNEED
        /* whole pages only: the header's page stays */
        uintptr_t from = ((uintptr_t)at + page - 1) / page * page, to = ((uintptr_t)at + n) / page * page;
        if (to > from)
            madvise((void *)from, to - from, MADV_DONTNEED);
#endif
        at += n;
        left -= n;
    }
    return crc;
}

static int verify_and_bind(dataset *ds, char *err, size_t errlen, const char *path, bool trusted)
{
    const char *why = NULL;
    if (ds->size < sizeof(tt_header) || memcmp(ds->base, TT_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not a transitd timetable (bad magic)", path);
        return -1;
    }
    const tt_header *h = (const tt_header *)ds->base;
    if (h->byte_order != TT_BYTE_ORDER) {
        snprintf(err, errlen, "%s: written on a machine of the other byte order; re-import the feed here", path);
        return -1;
    }
    if (h->format_version != TT_FORMAT_VERSION) {
        snprintf(err, errlen, "%s: format version %u, this build reads %u; re-import the feed", path,
                 h->format_version, TT_FORMAT_VERSION);
        return -1;
    }
    if (h->header_size != sizeof(tt_header) || h->nsections != TT_SEC_COUNT) {
        snprintf(err, errlen, "%s: header does not match this build; re-import the feed", path);
        return -1;
    }
    if (h->file_size != ds->size) {
        snprintf(err, errlen, "%s: truncated or extended (%llu bytes, header says %llu)", path,
                 (unsigned long long)ds->size, (unsigned long long)h->file_size);
        return -1;
    }
    uint32_t crc = trusted ? h->checksum : checksum_of(ds, h);
    if (crc != h->checksum) {
        snprintf(err, errlen, "%s: checksum mismatch (the file is damaged); re-import the feed", path);
        return -1;
    }
    ds->hdr = h;
    if (check_section(h, TT_SEC_META, sizeof(tt_meta), 1, &why)) goto bad;
    ds->meta = SEC(ds, TT_SEC_META, tt_meta);
    const tt_meta *m = ds->meta;
    if (check_section(h, TT_SEC_STRINGS, 1, UINT64_MAX, &why) ||
        check_section(h, TT_SEC_STOPS, sizeof(tt_stop), m->nstops, &why) ||
        check_section(h, TT_SEC_STOP_BY_ID, 4, m->nstops, &why) ||
        check_section(h, TT_SEC_STOP_CHILDREN, 4, UINT64_MAX, &why) ||
        check_section(h, TT_SEC_STOP_ROUTES, 4, UINT64_MAX, &why) ||
        check_section(h, TT_SEC_GRID_CELLS, 4, (uint64_t)m->grid_nx * m->grid_ny + 1, &why) ||
        check_section(h, TT_SEC_GRID_STOPS, 4, UINT64_MAX, &why) ||
        check_section(h, TT_SEC_ROUTES, sizeof(tt_route), m->nroutes, &why) ||
        check_section(h, TT_SEC_ROUTE_BY_ID, 4, m->nroutes, &why) ||
        check_section(h, TT_SEC_AGENCIES, sizeof(tt_agency), m->nagencies, &why) ||
        check_section(h, TT_SEC_TRIPS, sizeof(tt_trip), m->ntrips, &why) ||
        check_section(h, TT_SEC_TRIP_BY_ID, 4, m->ntrips, &why) ||
        check_section(h, TT_SEC_DAY_SETS, 8, (uint64_t)m->ndaysets * m->service_words, &why) ||
        check_section(h, TT_SEC_PATTERNS, sizeof(tt_pattern), m->npatterns, &why) ||
        check_section(h, TT_SEC_PATTERN_STOPS, sizeof(tt_pattern_stop), UINT64_MAX, &why) ||
        check_section(h, TT_SEC_PROFILES, 4, UINT64_MAX, &why) ||
        check_section(h, TT_SEC_GROUPS, sizeof(tt_group), m->ngroups, &why) ||
        check_section(h, TT_SEC_RUNS, sizeof(tt_run), m->nruns, &why) ||
        check_section(h, TT_SEC_VISITS, sizeof(tt_visit), UINT64_MAX, &why) ||
        check_section(h, TT_SEC_DAYBASE, 8, (uint64_t)m->ndays + m->lookback, &why) ||
        check_section(h, TT_SEC_TZ, sizeof(tt_tz_transition), m->ntz, &why))
        goto bad;
    ds->strings = SEC(ds, TT_SEC_STRINGS, char);
    ds->nstrings = h->sections[TT_SEC_STRINGS].size;
    if (ds->nstrings == 0 || ds->strings[ds->nstrings - 1] != 0 || m->ntz == 0 || m->ndays == 0) {
        why = "the string table or time sections are malformed";
        goto bad;
    }
    ds->stops = SEC(ds, TT_SEC_STOPS, tt_stop);
    ds->stop_by_id = SEC(ds, TT_SEC_STOP_BY_ID, uint32_t);
    ds->children = SEC(ds, TT_SEC_STOP_CHILDREN, uint32_t);
    ds->stop_routes = SEC(ds, TT_SEC_STOP_ROUTES, uint32_t);
    ds->grid_cells = SEC(ds, TT_SEC_GRID_CELLS, uint32_t);
    ds->grid_stops = SEC(ds, TT_SEC_GRID_STOPS, uint32_t);
    ds->routes = SEC(ds, TT_SEC_ROUTES, tt_route);
    ds->route_by_id = SEC(ds, TT_SEC_ROUTE_BY_ID, uint32_t);
    ds->agencies = SEC(ds, TT_SEC_AGENCIES, tt_agency);
    ds->trips = SEC(ds, TT_SEC_TRIPS, tt_trip);
    ds->trip_by_id = SEC(ds, TT_SEC_TRIP_BY_ID, uint32_t);
    ds->day_sets = SEC(ds, TT_SEC_DAY_SETS, uint64_t);
    ds->patterns = SEC(ds, TT_SEC_PATTERNS, tt_pattern);
    ds->pattern_stops = SEC(ds, TT_SEC_PATTERN_STOPS, tt_pattern_stop);
    ds->profiles = SEC(ds, TT_SEC_PROFILES, int32_t);
    ds->groups = SEC(ds, TT_SEC_GROUPS, tt_group);
    ds->runs = SEC(ds, TT_SEC_RUNS, tt_run);
    ds->visits = SEC(ds, TT_SEC_VISITS, tt_visit);
    ds->daybase = SEC(ds, TT_SEC_DAYBASE, int64_t);
    ds->tz = SEC(ds, TT_SEC_TZ, tt_tz_transition);
    ds->nchildren = SEC_N(ds, TT_SEC_STOP_CHILDREN);
    ds->nstop_routes = SEC_N(ds, TT_SEC_STOP_ROUTES);
    ds->ngrid_stops = SEC_N(ds, TT_SEC_GRID_STOPS);
    ds->npattern_stops = SEC_N(ds, TT_SEC_PATTERN_STOPS);
    ds->nprofiles = SEC_N(ds, TT_SEC_PROFILES);
    ds->nvisits = SEC_N(ds, TT_SEC_VISITS);
    /* a trusted open with a .derived for this file validated it when it wrote that */
    if (trusted && dataset_cache_load(ds, ds->cache_path) == 0)
        return 0;
    return dataset_validate_indices(ds, err, errlen, path);
bad:
    snprintf(err, errlen, "%s: malformed: %s; re-import the feed", path, why);
    return -1;
}

/* Every index the query path follows is checked once here, so the hot path
 * can trust them without bounds checks. */
int dataset_validate_indices(dataset *ds, char *err, size_t errlen, const char *path)
{
    const tt_meta *m = ds->meta;
    const char *why = NULL;
#define CHECK(cond, msg) \
    do {                 \
        if (!(cond)) {   \
            why = msg;   \
            goto bad;    \
        }                \
    } while (0)
#define STR_OK(off) ((uint64_t)(off) < ds->nstrings)
    CHECK(STR_OK(m->tz_name), "timezone name");
    for (uint32_t i = 0; i < m->nstops; i++) {
        const tt_stop *s = &ds->stops[i];
        CHECK(STR_OK(s->id) && STR_OK(s->name) && STR_OK(s->code) && STR_OK(s->desc) && STR_OK(s->platform_code),
              "stop strings");
        CHECK(s->parent == TT_NONE || s->parent < m->nstops, "stop parent");
        CHECK(s->id_rank < m->nstops, "stop rank");
        CHECK((uint64_t)s->children_first + s->children_count <= ds->nchildren, "stop children");
        CHECK((uint64_t)s->routes_first + s->routes_count <= ds->nstop_routes, "stop routes");
        CHECK((uint64_t)s->visit_first + s->visit_count <= ds->nvisits, "stop visits");
        CHECK(ds->stop_by_id[i] < m->nstops, "stop id index");
    }
    for (uint64_t i = 0; i < ds->nchildren; i++) CHECK(ds->children[i] < m->nstops, "children");
    for (uint64_t i = 0; i < ds->nstop_routes; i++) CHECK(ds->stop_routes[i] < m->nroutes, "stop routes");
    for (uint64_t i = 0; i < ds->ngrid_stops; i++) CHECK(ds->grid_stops[i] < m->nstops, "grid stops");
    for (uint64_t c = 0; c < (uint64_t)m->grid_nx * m->grid_ny; c++)
        CHECK(ds->grid_cells[c] <= ds->grid_cells[c + 1] && ds->grid_cells[c + 1] <= ds->ngrid_stops, "grid cells");
    for (uint32_t i = 0; i < m->nroutes; i++) {
        const tt_route *r = &ds->routes[i];
        CHECK(STR_OK(r->id) && STR_OK(r->agency_id) && STR_OK(r->short_name) && STR_OK(r->long_name) &&
                  STR_OK(r->color) && STR_OK(r->text_color),
              "route strings");
        CHECK(ds->route_by_id[i] < m->nroutes, "route id index");
    }
    for (uint32_t i = 0; i < m->nagencies; i++) {
        const tt_agency *a = &ds->agencies[i];
        CHECK(STR_OK(a->id) && STR_OK(a->name) && STR_OK(a->url) && STR_OK(a->timezone) && STR_OK(a->lang) &&
                  STR_OK(a->phone),
              "agency strings");
    }
    for (uint32_t i = 0; i < m->npatterns; i++) {
        const tt_pattern *p = &ds->patterns[i];
        CHECK(p->len >= 2 && (uint64_t)p->first + p->len <= ds->npattern_stops && p->route < m->nroutes, "patterns");
    }
    for (uint64_t i = 0; i < ds->npattern_stops; i++) CHECK(ds->pattern_stops[i].stop < m->nstops, "pattern stops");
    for (uint32_t i = 0; i < m->ntrips; i++) {
        const tt_trip *t = &ds->trips[i];
        CHECK(STR_OK(t->id) && STR_OK(t->service_id_str) && STR_OK(t->headsign) && STR_OK(t->shape_id), "trip strings");
        CHECK(t->route < m->nroutes && t->days < m->ndaysets && t->id_rank < m->ntrips, "trip refs");
        CHECK(ds->trip_by_id[i] < m->ntrips, "trip id index");
        if (t->pattern != TT_NONE) {
            CHECK(t->pattern < m->npatterns, "trip pattern");
            uint32_t len = ds->patterns[t->pattern].len;
            CHECK((uint64_t)t->dep_profile + len <= ds->nprofiles && (uint64_t)t->arr_profile + len <= ds->nprofiles,
                  "trip profiles");
        }
    }
    for (uint32_t g = 0; g < m->ngroups; g++) {
        const tt_group *gr = &ds->groups[g];
        CHECK(gr->pattern < m->npatterns && gr->days < m->ndaysets, "group refs");
        CHECK((uint64_t)gr->run_first + gr->run_count <= m->nruns, "group runs");
        uint32_t len = ds->patterns[gr->pattern].len;
        for (uint32_t r = gr->run_first; r < gr->run_first + gr->run_count; r++) {
            const tt_run *run = &ds->runs[r];
            CHECK(run->trip < m->ntrips && ds->trips[run->trip].pattern == gr->pattern, "run trip");
            CHECK((uint64_t)run->dep_profile + len <= ds->nprofiles, "run profile");
        }
    }
    for (uint64_t i = 0; i < ds->nvisits; i++) {
        const tt_visit *v = &ds->visits[i];
        CHECK(v->group < m->ngroups && v->pos + 1 < ds->patterns[ds->groups[v->group].pattern].len, "visits");
    }
    return 0;
bad:
    snprintf(err, errlen, "%s: malformed (%s index out of range); re-import the feed", path, why);
    return -1;
#undef CHECK
#undef STR_OK
}

/* Room for the n elements of a derived array (at least one); NULL, with
 * the error written, when out of memory. */
static void *derived_array(uint64_t n, size_t size, char *err, size_t errlen)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        snprintf(err, errlen, "out of memory");
    return p;
}

/* Fills ds->visit_hot (see dataset_internal.h): one pass over every run of
 * every visit's group, that is over every departure in the timetable. */
static int derive_visit_hot(dataset *ds, char *err, size_t errlen)
{
    uint64_t n = ds->nvisits;
    if (!(ds->visit_hot = derived_array(n, sizeof *ds->visit_hot, err, errlen)))
        return -1;
    for (uint64_t v = 0; v < n; v++) {
        const tt_visit *vi = &ds->visits[v];
        const tt_group *g = &ds->groups[vi->group];
        int32_t lo = 0, hi = 0;
        uint32_t first = UINT32_MAX, last = 0;   /* no runs: no window can reach it */
        for (uint32_t r = g->run_first; r < g->run_first + g->run_count; r++) {
            int32_t off = ds->profiles[ds->runs[r].dep_profile + vi->pos];
            uint32_t secs = (uint32_t)((int64_t)ds->runs[r].start + off);
            if (r == g->run_first || off < lo) lo = off;
            if (r == g->run_first || off > hi) hi = off;
            if (r == g->run_first || secs < first) first = secs;
            if (r == g->run_first || secs > last) last = secs;
        }
        uint32_t seq = ds->pattern_stops[ds->patterns[g->pattern].first + vi->pos].stop_sequence;
        ds->visit_hot[v] = (visit_hot){g->days, first, last, lo, hi, g->run_first, g->run_count,
                                        g->route_rank, vi->pos, seq};
    }
    return 0;
}

/* Fills ds->grid_points and ds->grid_visits (see dataset_internal.h). */
static int derive_grid_points(dataset *ds, char *err, size_t errlen)
{
    uint64_t n = ds->ngrid_stops;
    if (!(ds->grid_points = derived_array(n, sizeof *ds->grid_points, err, errlen)) ||
        !(ds->grid_visits = derived_array(n, sizeof *ds->grid_visits, err, errlen)))
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        const tt_stop *sp = &ds->stops[ds->grid_stops[i]];
        ds->grid_points[i] = (grid_point){sp->lat, sp->lon, cos(sp->lat * (M_PI / 180.0)), ds->grid_stops[i],
                                          sp->location_type, {0}};
        ds->grid_visits[i] = grid_visits_of(sp);
    }
    return 0;
}

/* FNV-1a, 32 bits: ids are short, and this only spreads them over slots. */
static uint32_t id_hash_of(const char *id, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)id[i]) * 16777619u;
    return h;
}

/* Fills `out` with the ids of `n` records of `stride` bytes, each holding
 * its id's string offset at `id_off`. */
static int build_id_hash(const dataset *ds, id_hash *out, uint32_t n, const void *records, size_t stride,
                         size_t id_off, char *err, size_t errlen)
{
    size_t size = 16;
    while (size < 2 * (size_t)n)
        size *= 2;
    if (!(out->slots = derived_array(size, sizeof *out->slots, err, errlen)))
        return -1;
    out->mask = (uint32_t)(size - 1);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t sid;
        memcpy(&sid, (const char *)records + (size_t)i * stride + id_off, sizeof sid);
        const char *id = ds->strings + sid;
        uint32_t h = id_hash_of(id, strlen(id));
        uint32_t slot = h & out->mask;
        while (out->slots[slot])
            slot = (slot + 1) & out->mask;
        out->slots[slot] = (uint64_t)h << 32 | ((uint64_t)i + 1);
    }
    return 0;
}

static int derive_id_hashes(dataset *ds, char *err, size_t errlen)
{
    const tt_meta *m = ds->meta;
    if (build_id_hash(ds, &ds->stop_ids, m->nstops, ds->stops, sizeof(tt_stop), offsetof(tt_stop, id), err,
                      errlen) != 0 ||
        build_id_hash(ds, &ds->route_ids, m->nroutes, ds->routes, sizeof(tt_route), offsetof(tt_route, id), err,
                      errlen) != 0 ||
        build_id_hash(ds, &ds->trip_ids, m->ntrips, ds->trips, sizeof(tt_trip), offsetof(tt_trip, id), err,
                      errlen) != 0)
        return -1;
    return 0;
}

/* Fills ds->route_trip_first and ds->route_trips: each route's trips, for
 * the alerts about a route (alert_view.c), which mark them without a pass
 * over every trip. A counting sort: two passes over the trips. */
static int derive_route_trips(dataset *ds, char *err, size_t errlen)
{
    uint32_t nroutes = ds->meta->nroutes, ntrips = ds->meta->ntrips;
    if (!(ds->route_trip_first = derived_array((uint64_t)nroutes + 1, sizeof(uint32_t), err, errlen)) ||
        !(ds->route_trips = derived_array(ntrips, sizeof(uint32_t), err, errlen)))
        return -1;
    for (uint32_t t = 0; t < ntrips; t++)
        ds->route_trip_first[ds->trips[t].route + 1]++;
    for (uint32_t r = 0; r < nroutes; r++)
        ds->route_trip_first[r + 1] += ds->route_trip_first[r];
    for (uint32_t t = 0; t < ntrips; t++)   /* route_trip_first[r] runs ahead, then is put back */
        ds->route_trips[ds->route_trip_first[ds->trips[t].route]++] = t;
    for (uint32_t r = nroutes; r > 0; r--)
        ds->route_trip_first[r] = ds->route_trip_first[r - 1];
    ds->route_trip_first[0] = 0;
    return 0;
}

static void free_derived(dataset *ds)
{
    if (ds->derived_map) {   /* mapped from VERSION/.derived: nothing of it is owned */
        munmap(ds->derived_map, ds->derived_map_size);
        ds->derived_map = NULL;
        return;
    }
    free(ds->route_trip_first);
    free(ds->route_trips);
    free(ds->visit_hot);
    free(ds->grid_points);
    free(ds->grid_visits);
    free(ds->stop_ids.slots);
    free(ds->route_ids.slots);
    free(ds->trip_ids.slots);
    free(ds->event_runs);
    free(ds->arr_visit_hot);
    free(ds->arr_stops);
    free(ds->arr_grid);
}

/* The derived arrays, unless verify_and_bind mapped them from
 * VERSION/.derived: derived, and when trusted (and the timetable passed
 * every check) written there for the next open. A .derived exists only for
 * a timetable that passed them, so an open that maps one skips them. */
static int derive_all(dataset *ds, bool trusted, char *err, size_t errlen)
{
    if (ds->derived_map)
        return 0;   /* mapped by verify_and_bind */
    int (*const steps[])(dataset *, char *, size_t) = {derive_visit_hot, derive_grid_points, derive_id_hashes,
                                                       derive_route_trips, dataset_derive_arrivals};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        if (steps[i](ds, err, errlen) != 0)
            return -1;
#ifdef MADV_DONTNEED
        /* a large timetable's pages go between the steps (they stay in the
         * page cache): each step's sections, not all of them beside
         * everything derived (an import's check of 64 copies of Brooklyn:
         * 755 MB of them beside 661 MB derived) */
        if (ds->size >= DATASET_DERIVED_IN_FILES_FROM)
            madvise((void *)ds->base, ds->size, MADV_DONTNEED);
#endif
    }
    if (trusted && dataset_check_orders(ds, err, errlen, ds->dir) == 0)
        dataset_cache_save(ds, ds->cache_path);   /* best effort: a read-only directory derives each time */
    return 0;
}

static dataset *open_dataset(const char *dir, bool trusted, char *err, size_t errlen);

dataset *dataset_open(const char *dir, char *err, size_t errlen) { return open_dataset(dir, false, err, errlen); }

dataset *dataset_open_trusted(const char *dir, char *err, size_t errlen)
{
    return open_dataset(dir, true, err, errlen);
}

static dataset *open_dataset(const char *dir, bool trusted, char *err, size_t errlen)
{
    char path[PATH_MAX], resolved[PATH_MAX];
    struct stat st;
    /* a data dir has `current`; a version dir has timetable.bin */
    snprintf(path, sizeof path, "%s/current", dir);
    if (lstat(path, &st) == 0) {
        if (!realpath(path, resolved)) {
            snprintf(err, errlen, "%s: cannot resolve: %s", path, strerror(errno));
            return NULL;
        }
    } else {
        snprintf(path, sizeof path, "%s/timetable.bin", dir);
        if (stat(path, &st) != 0) {
            snprintf(err, errlen, "no dataset in %s (no 'current' link and no timetable.bin); run `transitd import FEED --data %s`",
                     dir, dir);
            return NULL;
        }
        if (!realpath(dir, resolved)) {
            snprintf(err, errlen, "%s: cannot resolve: %s", dir, strerror(errno));
            return NULL;
        }
    }
    /* pinned before anything is read, so that pruning cannot take the
     * version away while it is mapped */
    char pin_err[160] = "";
    int pin_fd = -1;
    if (datadir_pin(resolved, &pin_fd, pin_err, sizeof pin_err) < 0) {
        snprintf(err, errlen, "%s", pin_err);
        return NULL;
    }
    snprintf(path, sizeof path, "%s/timetable.bin", resolved);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        datadir_unpin(pin_fd);
        return NULL;
    }
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        snprintf(err, errlen, "%s: empty or unreadable", path);
        close(fd);
        datadir_unpin(pin_fd);
        return NULL;
    }
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        snprintf(err, errlen, "%s: mmap failed: %s", path, strerror(errno));
        datadir_unpin(pin_fd);
        return NULL;
    }
    dataset *ds = calloc(1, sizeof *ds);
    if (!ds) {
        munmap(base, (size_t)st.st_size);
        datadir_unpin(pin_fd);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ds->pin_fd = pin_fd;
    snprintf(ds->pin_problem, sizeof ds->pin_problem, "%s", pin_fd < 0 ? pin_err : "");
    ds->file_dev = (uint64_t)st.st_dev;
    ds->file_ino = (uint64_t)st.st_ino;
    atomic_flag_clear(&ds->pool_lock);
    pthread_mutex_init(&ds->extension_lock, NULL);
    ds->base = base;
    ds->size = (size_t)st.st_size;
    atomic_init(&ds->refs, 1);
    snprintf(ds->dir, sizeof ds->dir, "%s", resolved);
    const char *slash = strrchr(resolved, '/');
    snprintf(ds->version, sizeof ds->version, "%s", slash ? slash + 1 : resolved);
    snprintf(ds->cache_path, sizeof ds->cache_path, "%s/.derived", resolved);
    ds->trusted = trusted;
    if (verify_and_bind(ds, err, errlen, path, trusted) != 0 || derive_all(ds, trusted, err, errlen) != 0 ||
        (!ds->derived_map && dataset_check_orders(ds, err, errlen, path) != 0)) {
        munmap(base, ds->size);
        free_derived(ds);
        pthread_mutex_destroy(&ds->extension_lock);
        datadir_unpin(ds->pin_fd);
        free(ds);
        return NULL;
    }
    return ds;
}

void dataset_drop_pages(const dataset *ds)
{
#ifdef MADV_DONTNEED
    /* The mappings are read-only files: their pages stay in the page cache
     * and a touch maps one back, so this is advice, and a failure changes
     * nothing. */
    madvise((void *)ds->base, ds->size, MADV_DONTNEED);
    if (ds->derived_map)
        madvise(ds->derived_map, ds->derived_map_size, MADV_DONTNEED);
    for (int i = 0; i < DATASET_EXTENSIONS_MAX; i++)
        if (ds->extension_map[i])
            madvise(ds->extension_map[i], ds->extension_map_size[i], MADV_DONTNEED);
    if (ds->extensions_to_files) {
        /* a server's: the timetable's large folios go too (see
         * dataset_release_page_cache), now that no page of it is mapped here */
        char path[4200];
        snprintf(path, sizeof path, "%s/timetable.bin", ds->dir);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == ds->file_dev &&
            (uint64_t)st.st_ino == ds->file_ino)
            dataset_release_page_cache(fd);
        if (fd >= 0)
            close(fd);
    }
#else
    (void)ds;
#endif
}

bool dataset_derived_belongs_in_files(const dataset *ds)
{
    return ds->size >= DATASET_DERIVED_IN_FILES_FROM;
}

void dataset_keep_derived_in_files(dataset *ds)
{
    if (!ds->derived_map)
        dataset_cache_move(ds);   /* best effort: a directory it cannot write keeps them in the heap */
    ds->extensions_to_files = true;
    /* the open's checks have read the timetable in order; queries read it
     * at scattered places from now on */
    dataset_advise_random((void *)ds->base, ds->size);
}

dataset *dataset_retain(dataset *ds)
{
    atomic_fetch_add_explicit(&ds->refs, 1, memory_order_relaxed);
    return ds;
}

void dataset_release(dataset *ds)
{
    if (!ds) return;
    if (atomic_fetch_sub_explicit(&ds->refs, 1, memory_order_acq_rel) == 1) {
        for (int i = 0; i < DATASET_EXTENSIONS_MAX; i++) {
            const dataset_extension *ext = atomic_load_explicit(&ds->extension_kind[i], memory_order_relaxed);
            void *data = atomic_load_explicit(&ds->extension_data[i], memory_order_relaxed);
            if (ext && data)
                ext->release(data);
            if (ds->extension_map[i])
                munmap(ds->extension_map[i], ds->extension_map_size[i]);
        }
        pthread_mutex_destroy(&ds->extension_lock);
        munmap((void *)ds->base, ds->size);
        free_derived(ds);
        dataset_close_pools(ds);
        datadir_unpin(ds->pin_fd);   /* last: the version's files are all let go */
        free(ds);
    }
}

bool dataset_maps_file(const dataset *ds, const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && (uint64_t)st.st_dev == ds->file_dev &&
           (uint64_t)st.st_ino == ds->file_ino;
}

const char *dataset_pin_problem(const dataset *ds)
{
    return ds->pin_fd >= 0 ? NULL : ds->pin_problem;
}

void dataset_close(dataset *ds) { dataset_release(ds); }

void *dataset_extension_get(dataset *ds, const dataset_extension *ext, char *err, size_t errlen)
{
    /* the common case, lock-free: derived before, by this or another thread */
    for (int i = 0; i < DATASET_EXTENSIONS_MAX; i++) {
        const dataset_extension *kind = atomic_load_explicit(&ds->extension_kind[i], memory_order_acquire);
        if (kind == ext) {
            void *data = atomic_load_explicit(&ds->extension_data[i], memory_order_acquire);
            if (data)
                return data;
            break;
        }
        if (!kind)
            break;
    }
    pthread_mutex_lock(&ds->extension_lock);
    void *data = NULL;
    int slot = -1;
    for (int i = 0; i < DATASET_EXTENSIONS_MAX && slot < 0; i++) {
        const dataset_extension *kind = atomic_load_explicit(&ds->extension_kind[i], memory_order_relaxed);
        if (kind == ext || !kind)
            slot = i;
    }
    if (slot < 0) {
        snprintf(err, errlen, "%s: more than %d kinds of data derived from one dataset", ext->name,
                 DATASET_EXTENSIONS_MAX);
    } else if (!(data = atomic_load_explicit(&ds->extension_data[slot], memory_order_relaxed))) {
        atomic_store_explicit(&ds->extension_kind[slot], ext, memory_order_release);
        bool keep = ds->trusted && ext->file && ext->save && ext->view;
        if (keep)
            data = dataset_cache_load_extension(ds, ext, slot);
        if (!data && (data = ext->derive(ds, err, errlen)) && keep)
            dataset_cache_save_extension(ds, ext, data);
        else if (data && !keep && ds->extensions_to_files && ext->file && ext->save && ext->view)
            data = dataset_cache_move_extension(ds, ext, slot, data);
        if (data)
            atomic_store_explicit(&ds->extension_data[slot], data, memory_order_release);
    }
    pthread_mutex_unlock(&ds->extension_lock);
    return data;
}

const char *dataset_version(const dataset *ds) { return ds->version; }
const char *dataset_dir(const dataset *ds) { return ds->dir; }
const char *dataset_timezone(const dataset *ds) { return ds->strings + ds->meta->tz_name; }

void dataset_get_counts(const dataset *ds, dataset_counts *out)
{
    const tt_meta *m = ds->meta;
    out->stops = m->nstops;
    out->routes = m->nroutes;
    out->trips = m->ntrips;
    out->agencies = m->nagencies;
    out->services = m->nservices;
    out->stop_times = m->stop_times;
    out->first_date = m->first_day;
    out->last_date = m->first_day + (int32_t)m->ndays - 1;
    out->imported_at = m->imported_at;
    out->max_secs = m->max_secs;
}

int32_t dataset_utc_offset_span(const dataset *ds, int64_t instant, int64_t *from, int64_t *until)
{
    const tt_tz_transition *t = ds->tz;
    uint32_t lo = 0, hi = ds->meta->ntz; /* last at <= instant; t[0].at is INT64_MIN */
    assert(hi > 0 && t[0].at == INT64_MIN);
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t[mid].at <= instant) lo = mid;
        else hi = mid;
    }
    *from = t[lo].at;
    *until = lo + 1 < ds->meta->ntz ? t[lo + 1].at : INT64_MAX;
    return t[lo].offset;
}

int32_t dataset_utc_offset(const dataset *ds, int64_t instant)
{
    int64_t from, until;
    return dataset_utc_offset_span(ds, instant, &from, &until);
}

int64_t dataset_local_to_instant(const dataset *ds, int64_t local)
{
    int32_t before = dataset_utc_offset(ds, local - 86400);
    int32_t after = dataset_utc_offset(ds, local + 86400);
    int64_t t1 = local - before;
    if (dataset_utc_offset(ds, t1) == before) return t1;
    int64_t t2 = local - after;
    if (dataset_utc_offset(ds, t2) == after) return t2;
    return t1; /* in a gap: shifted forward by the gap, as zoneinfo's fold=0 */
}

int64_t dataset_instant(const dataset *ds, int32_t service_date, uint32_t secs)
{
    return dataset_day_base(ds, service_date) + secs;
}

int64_t dataset_day_base(const dataset *ds, int32_t day)
{
    const tt_meta *m = ds->meta;
    int64_t i = (int64_t)day - m->first_day + m->lookback;
    if (i >= 0 && i < (int64_t)m->ndays + m->lookback) return ds->daybase[i];
    /* outside the covered days: compute from the offsets table */
    return dataset_local_to_instant(ds, (int64_t)day * 86400 + 43200) - 43200;
}

uint32_t dataset_stop_count(const dataset *ds) { return ds->meta->nstops; }
uint32_t dataset_route_count(const dataset *ds) { return ds->meta->nroutes; }
uint32_t dataset_agency_count(const dataset *ds) { return ds->meta->nagencies; }

/* The record whose id is id[0..len), through its kind's id_hash: records
 * of `stride` bytes hold their id's string offset at `id_off`. */
static uint32_t find_by_id(const dataset *ds, const id_hash *ids, const void *records, size_t stride, size_t id_off,
                           const char *id, size_t len)
{
    uint32_t h = id_hash_of(id, len);
    for (uint32_t slot = h & ids->mask;; slot = (slot + 1) & ids->mask) {
        uint64_t v = ids->slots[slot];
        if (!v)
            return QUERY_NONE;
        if ((uint32_t)(v >> 32) != h)
            continue;
        uint32_t i = (uint32_t)v - 1, sid;
        memcpy(&sid, (const char *)records + (size_t)i * stride + id_off, sizeof sid);
        const char *s = ds->strings + sid;
        if (strnlen(s, len + 1) == len && memcmp(s, id, len) == 0) {
            assert(i <= ids->mask);   /* the table has more slots than records */
            return i;
        }
    }
}

uint32_t dataset_find_stop(const dataset *ds, const char *id, size_t len)
{
    return find_by_id(ds, &ds->stop_ids, ds->stops, sizeof(tt_stop), offsetof(tt_stop, id), id, len);
}

uint32_t dataset_find_route(const dataset *ds, const char *id, size_t len)
{
    return find_by_id(ds, &ds->route_ids, ds->routes, sizeof(tt_route), offsetof(tt_route, id), id, len);
}

uint32_t dataset_find_trip(const dataset *ds, const char *id, size_t len)
{
    return find_by_id(ds, &ds->trip_ids, ds->trips, sizeof(tt_trip), offsetof(tt_trip, id), id, len);
}

void dataset_stop(const dataset *ds, uint32_t stop, stop_info *out)
{
    assert(stop < ds->meta->nstops);
    const tt_stop *s = &ds->stops[stop];
    out->id = ds->strings + s->id;
    out->name = ds->strings + s->name;
    out->lat = s->lat;
    out->lon = s->lon;
    out->location_type = s->location_type;
    out->parent = s->parent;
    out->code = ds->strings + s->code;
    out->desc = ds->strings + s->desc;
    out->platform_code = ds->strings + s->platform_code;
    out->wheelchair_boarding = s->wheelchair_boarding;
}

void dataset_route(const dataset *ds, uint32_t route, route_info *out)
{
    assert(route < ds->meta->nroutes);
    const tt_route *r = &ds->routes[route];
    out->id = ds->strings + r->id;
    out->agency_id = ds->strings + r->agency_id;
    out->short_name = ds->strings + r->short_name;
    out->long_name = ds->strings + r->long_name;
    out->color = ds->strings + r->color;
    out->text_color = ds->strings + r->text_color;
    out->type = r->type;
}

void dataset_trip(const dataset *ds, uint32_t trip, trip_info *out)
{
    assert(trip < ds->meta->ntrips);
    const tt_trip *t = &ds->trips[trip];
    out->id = ds->strings + t->id;
    out->service_id = ds->strings + t->service_id_str;
    out->headsign = ds->strings + t->headsign;
    out->shape_id = ds->strings + t->shape_id;
    out->block_id = "";
    out->route = t->route;
    out->direction_id = t->direction_id;
    out->frequency_based = t->frequency_based;
    out->wheelchair_accessible = t->wheelchair_accessible;
    out->bikes_allowed = t->bikes_allowed;
}

void dataset_agency(const dataset *ds, uint32_t agency, agency_info *out)
{
    assert(agency < ds->meta->nagencies);
    const tt_agency *a = &ds->agencies[agency];
    out->id = ds->strings + a->id;
    out->name = ds->strings + a->name;
    out->url = ds->strings + a->url;
    out->timezone = ds->strings + a->timezone;
    out->lang = ds->strings + a->lang;
    out->phone = ds->strings + a->phone;
}

uint32_t dataset_stop_children(const dataset *ds, uint32_t stop, uint32_t *out, uint32_t max, uint32_t *total)
{
    assert(stop < ds->meta->nstops);
    const tt_stop *s = &ds->stops[stop];
    uint32_t n = s->children_count < max ? s->children_count : max;
    if (n) memcpy(out, ds->children + s->children_first, n * sizeof *out);
    if (total) *total = s->children_count;
    return n;
}

uint32_t dataset_stop_routes(const dataset *ds, uint32_t stop, uint32_t *out, uint32_t max, uint32_t *total)
{
    assert(stop < ds->meta->nstops);
    const tt_stop *s = &ds->stops[stop];
    uint32_t n = 0, all = 0;
    /* own routes, then children's, merged without duplicates (both lists are sorted) */
    uint32_t lists = 1 + s->children_count;
    uint32_t last = UINT32_MAX;
    for (;;) {
        uint32_t best = UINT32_MAX;
        for (uint32_t l = 0; l < lists; l++) {
            const tt_stop *x = l == 0 ? s : &ds->stops[ds->children[s->children_first + l - 1]];
            for (uint32_t i = 0; i < x->routes_count; i++) {
                uint32_t r = ds->stop_routes[x->routes_first + i];
                /* the merge relies on each stop's routes being ascending */
                assert(i == 0 || ds->stop_routes[x->routes_first + i - 1] < r);
                if (last != UINT32_MAX && r <= last) continue;
                if (r < best) best = r;
                break;
            }
        }
        if (best == UINT32_MAX) break;
        if (n < max) out[n++] = best;
        all++;
        last = best;
    }
    if (total) *total = all;
    return n;
}

bool trip_runs_on(const dataset *ds, uint32_t trip, int32_t service_date)
{
    assert(trip < ds->meta->ntrips);
    return dataset_days_active(ds, ds->trips[trip].days, service_date);
}

bool trip_stop_at(const dataset *ds, uint32_t trip, uint32_t pos, trip_stop_time *out)
{
    if (trip >= ds->meta->ntrips) return false;
    const tt_trip *t = &ds->trips[trip];
    if (t->pattern == TT_NONE) return false;
    const tt_pattern *p = &ds->patterns[t->pattern];
    if (pos >= p->len) return false;
    const tt_pattern_stop *ps = &ds->pattern_stops[p->first + pos];
    *out = (trip_stop_time){ps->stop, ps->stop_sequence, (uint32_t)((int64_t)t->start + ds->profiles[t->arr_profile + pos]),
                            (uint32_t)((int64_t)t->start + ds->profiles[t->dep_profile + pos]), ps->pickup_type,
                            ps->drop_off_type};
    return true;
}

const int32_t *trip_departure_offsets(const dataset *ds, uint32_t trip, uint32_t *start, uint32_t *count)
{
    if (trip >= ds->meta->ntrips) return NULL;
    const tt_trip *t = &ds->trips[trip];
    if (t->pattern == TT_NONE) return NULL;
    *start = t->start;
    *count = ds->patterns[t->pattern].len;
    return ds->profiles + t->dep_profile;
}

int trip_detail(const dataset *ds, uint32_t trip, trip_stop_time *out, uint32_t max, uint32_t *count,
                query_error *err)
{
    if (trip >= ds->meta->ntrips) {
        snprintf(err->param, sizeof err->param, "trip_id");
        snprintf(err->message, sizeof err->message, "unknown trip");
        return QUERY_ENOTFOUND;
    }
    const tt_trip *t = &ds->trips[trip];
    if (t->pattern == TT_NONE) {
        *count = 0;
        return QUERY_OK;
    }
    assert(t->pattern < ds->meta->npatterns);
    const tt_pattern *p = &ds->patterns[t->pattern];
    assert((uint64_t)p->first + p->len <= ds->npattern_stops);
    *count = p->len;
    for (uint32_t k = 0; k < p->len && k < max; k++) {
        const tt_pattern_stop *ps = &ds->pattern_stops[p->first + k];
        out[k].stop = ps->stop;
        out[k].stop_sequence = ps->stop_sequence;
        out[k].arrival_secs = (uint32_t)((int64_t)t->start + ds->profiles[t->arr_profile + k]);
        out[k].departure_secs = (uint32_t)((int64_t)t->start + ds->profiles[t->dep_profile + k]);
        out[k].pickup_type = ps->pickup_type;
        out[k].drop_off_type = ps->drop_off_type;
    }
    return QUERY_OK;
}
