/* network.c — a route's stop patterns and a stop's departing headsigns,
 * from the mapped timetable; see network.h.
 *
 * Why it exists: these answers are what a route page and a stop page show
 * (the line's stops in order for each direction; "to Downtown, to Airport"
 * at a stop), and the timetable already holds them: a route's trips
 * (ds->route_trips) each name a pattern, whose stops are in order; a stop's
 * departure visits name the groups that board there, whose runs name the
 * trips. What a request would otherwise walk run by run is derived once per
 * dataset: each group's distinct headsigns with their run counts (a dataset
 * extension, built on first use or when the server installs the dataset).
 * So a stop's answer reads its visits and a few headsigns per group, not
 * thousands of scattered trip records.
 */
#include "transit/network.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/dataset_internal.h"

/* A trip of the route being described: the keys it is grouped by. */
typedef struct trip_key {
    uint32_t pattern;
    int32_t direction;
    uint32_t headsign;          /* string offset; 0 is "" */
    uint32_t trip;
} trip_key;

/* A headsign's count within one pattern of the answer. */
typedef struct pattern_headsign {
    uint32_t pattern;           /* index in the answer, before ordering */
    uint32_t headsign;          /* string offset */
    uint32_t trips;
} pattern_headsign;

struct network_scratch {
    trip_key *keys;
    size_t keys_cap;
    route_pattern *patterns;
    size_t patterns_cap;
    uint32_t *stops;
    size_t stops_cap;
    pattern_headsign *counts;
    size_t counts_cap;
    const char **headsigns;
    size_t headsigns_cap;
    stop_headsign *lines;
    size_t lines_cap;
};

network_scratch *network_scratch_new(void) { return calloc(1, sizeof(network_scratch)); }

void network_scratch_free(network_scratch *s)
{
    if (!s)
        return;
    free(s->keys);
    free(s->patterns);
    free(s->stops);
    free(s->counts);
    free((void *)s->headsigns);
    free(s->lines);
    free(s);
}

/* Room for `need` elements of `size` bytes in *items; false when out of memory. */
static bool reserve(void **items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*items, n * size);
    if (!p)
        return false;
    *items = p;
    *cap = n;
    return true;
}

#define RESERVE(s, field, need) reserve((void **)&(s)->field, &(s)->field##_cap, (need), sizeof *(s)->field)

static int fail(query_error *err, int rc, const char *param, const char *message)
{
    if (err) {
        snprintf(err->param, sizeof err->param, "%s", param);
        snprintf(err->message, sizeof err->message, "%s", message);
    }
    return rc;
}

/* ------------------------------------------------------------ route patterns */

static int compare_keys(const void *a, const void *b)
{
    const trip_key *x = a, *y = b;
    if (x->pattern != y->pattern) return x->pattern < y->pattern ? -1 : 1;
    if (x->direction != y->direction) return x->direction < y->direction ? -1 : 1;
    if (x->headsign != y->headsign) return x->headsign < y->headsign ? -1 : 1;
    return x->trip < y->trip ? -1 : x->trip > y->trip;
}

static int compare_counts(const void *a, const void *b)
{
    const pattern_headsign *x = a, *y = b;
    if (x->pattern != y->pattern) return x->pattern < y->pattern ? -1 : 1;
    return x->headsign < y->headsign ? -1 : x->headsign > y->headsign;
}

/* The answer's pattern with these stops and direction, or -1. */
static long find_pattern(const dataset *ds, const network_scratch *s, uint32_t npatterns, const tt_pattern *p,
                         int32_t direction)
{
    for (uint32_t m = 0; m < npatterns; m++) {
        const route_pattern *rp = &s->patterns[m];
        if (rp->direction_id != direction || rp->nstops != p->len)
            continue;
        uint32_t k = 0;
        while (k < p->len && s->stops[rp->stops_first + k] == ds->pattern_stops[p->first + k].stop)
            k++;
        if (k == p->len)
            return (long)m;
    }
    return -1;
}

/* Directions 0, 1, then none; most trips first; then the stop ids in order. */
static bool pattern_before(const dataset *ds, const network_scratch *s, const route_pattern *a,
                           const route_pattern *b)
{
    unsigned da = (unsigned)a->direction_id, db = (unsigned)b->direction_id;   /* -1: last */
    if (da != db)
        return da < db;
    if (a->trips != b->trips)
        return a->trips > b->trips;
    for (uint32_t k = 0; k < a->nstops && k < b->nstops; k++) {
        uint32_t ra = ds->stops[s->stops[a->stops_first + k]].id_rank;
        uint32_t rb = ds->stops[s->stops[b->stops_first + k]].id_rank;
        if (ra != rb)
            return ra < rb;
    }
    return a->nstops < b->nstops;
}

/* Orders one pattern's headsigns: most trips first, then bytewise. */
static void order_headsigns(const dataset *ds, pattern_headsign *h, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        pattern_headsign x = h[i];
        uint32_t j = i;
        while (j > 0 && (h[j - 1].trips < x.trips ||
                         (h[j - 1].trips == x.trips && strcmp(ds->strings + h[j - 1].headsign,
                                                              ds->strings + x.headsign) > 0))) {
            h[j] = h[j - 1];
            j--;
        }
        h[j] = x;
    }
}

int route_patterns(const dataset *ds, network_scratch *s, uint32_t route, network_route *out, query_error *err)
{
    memset(out, 0, sizeof *out);
    if (route >= ds->meta->nroutes)
        return fail(err, QUERY_ENOTFOUND, "route_id", "unknown route");
    uint32_t first = ds->route_trip_first[route], end = ds->route_trip_first[route + 1];
    if (!RESERVE(s, keys, end - first + 1) || !RESERVE(s, counts, end - first + 1))
        return fail(err, QUERY_ENOMEM, "", "out of memory");
    size_t nkeys = 0;
    for (uint32_t i = first; i < end; i++) {
        uint32_t t = ds->route_trips[i];
        const tt_trip *tr = &ds->trips[t];
        if (tr->pattern != TT_NONE)
            s->keys[nkeys++] = (trip_key){tr->pattern, tr->direction_id, tr->headsign, t};
    }
    qsort(s->keys, nkeys, sizeof *s->keys, compare_keys);
    uint32_t npatterns = 0, nstops = 0, ncounts = 0;
    for (size_t i = 0; i < nkeys;) {
        /* the trips of one timetable pattern and direction */
        size_t j = i;
        while (j < nkeys && s->keys[j].pattern == s->keys[i].pattern && s->keys[j].direction == s->keys[i].direction)
            j++;
        const tt_pattern *p = &ds->patterns[s->keys[i].pattern];
        long m = find_pattern(ds, s, npatterns, p, s->keys[i].direction);
        if (m < 0) {
            if (!RESERVE(s, patterns, npatterns + 1) || !RESERVE(s, stops, (size_t)nstops + p->len))
                return fail(err, QUERY_ENOMEM, "", "out of memory");
            for (uint32_t k = 0; k < p->len; k++)
                s->stops[nstops + k] = ds->pattern_stops[p->first + k].stop;
            s->patterns[npatterns] = (route_pattern){s->keys[i].direction, 0, nstops, p->len, 0, 0};
            nstops += p->len;
            m = npatterns++;
        }
        s->patterns[m].trips += (uint32_t)(j - i);
        for (size_t k = i; k < j;) {
            size_t e = k;
            while (e < j && s->keys[e].headsign == s->keys[k].headsign)
                e++;
            if (s->keys[k].headsign != 0)
                s->counts[ncounts++] = (pattern_headsign){(uint32_t)m, s->keys[k].headsign, (uint32_t)(e - k)};
            k = e;
        }
        i = j;
    }
    /* each pattern's headsigns, summed over its timetable patterns, in order */
    qsort(s->counts, ncounts, sizeof *s->counts, compare_counts);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < ncounts; i++) {
        if (kept && s->counts[kept - 1].pattern == s->counts[i].pattern &&
            s->counts[kept - 1].headsign == s->counts[i].headsign)
            s->counts[kept - 1].trips += s->counts[i].trips;
        else
            s->counts[kept++] = s->counts[i];
    }
    if (!RESERVE(s, headsigns, kept + 1))
        return fail(err, QUERY_ENOMEM, "", "out of memory");
    for (uint32_t i = 0; i < kept;) {
        uint32_t j = i;
        while (j < kept && s->counts[j].pattern == s->counts[i].pattern)
            j++;
        order_headsigns(ds, s->counts + i, j - i);
        route_pattern *rp = &s->patterns[s->counts[i].pattern];
        rp->headsigns_first = i;
        rp->nheadsigns = j - i;
        for (uint32_t k = i; k < j; k++)
            s->headsigns[k] = ds->strings + s->counts[k].headsign;
        i = j;
    }
    /* the patterns in the answer's order (a few per route: insertion) */
    for (uint32_t i = 1; i < npatterns; i++) {
        route_pattern x = s->patterns[i];
        uint32_t j = i;
        while (j > 0 && pattern_before(ds, s, &x, &s->patterns[j - 1])) {
            s->patterns[j] = s->patterns[j - 1];
            j--;
        }
        s->patterns[j] = x;
    }
    *out = (network_route){s->patterns, npatterns, s->stops, s->headsigns};
    return QUERY_OK;
}

/* ------------------------------------------------------------ a stop's headsigns */

/* Each group's distinct non-empty headsigns with how many of its runs
 * have them: group g's are items[first[g] .. first[g + 1]). Derived once
 * per dataset, in one pass over the runs. */
typedef struct group_headsign {
    uint32_t headsign;          /* string offset */
    uint32_t runs;
} group_headsign;

typedef struct group_headsigns {
    uint32_t *first;            /* ngroups + 1 */
    group_headsign *items;
} group_headsigns;

static void release_group_headsigns(void *derived)
{
    group_headsigns *x = derived;
    if (!x)
        return;
    free(x->first);
    free(x->items);
    free(x);
}

static void *derive_group_headsigns(const dataset *ds, char *err, size_t errlen)
{
    uint32_t ngroups = ds->meta->ngroups;
    group_headsigns *x = calloc(1, sizeof *x);
    size_t n = 0, cap = 0;
    if (!x || !(x->first = calloc((size_t)ngroups + 1, sizeof *x->first)))
        goto oom;
    for (uint32_t g = 0; g < ngroups; g++) {
        const tt_group *gr = &ds->groups[g];
        size_t start = n;
        x->first[g] = (uint32_t)n;
        for (uint32_t r = gr->run_first; r < gr->run_first + gr->run_count; r++) {
            uint32_t h = ds->trips[ds->runs[r].trip].headsign;
            if (h == 0)
                continue;
            size_t k = start;
            while (k < n && x->items[k].headsign != h)
                k++;
            if (k < n) {
                x->items[k].runs++;
                continue;
            }
            if (n == UINT32_MAX || !reserve((void **)&x->items, &cap, n + 1, sizeof *x->items))
                goto oom;
            x->items[n++] = (group_headsign){h, 1};
        }
    }
    x->first[ngroups] = (uint32_t)n;
    return x;
oom:
    release_group_headsigns(x);
    snprintf(err, errlen, "out of memory for the groups' headsigns");
    return NULL;
}

static const dataset_extension group_headsigns_extension = {
    .name = "groups' headsigns", .derive = derive_group_headsigns, .release = release_group_headsigns,
};

/* Adds the headsigns of the groups departing from one stop to s->lines[0..*n). */
static bool add_stop(const dataset *ds, const group_headsigns *x, network_scratch *s, uint32_t stop, uint32_t *n)
{
    const tt_stop *sp = &ds->stops[stop];
    for (uint32_t v = sp->visit_first; v < sp->visit_first + sp->visit_count; v++) {
        uint32_t g = ds->visits[v].group;
        uint32_t route = ds->patterns[ds->groups[g].pattern].route;
        for (uint32_t i = x->first[g]; i < x->first[g + 1]; i++) {
            const group_headsign *h = &x->items[i];
            const char *text = ds->strings + h->headsign;
            uint32_t k = 0;
            while (k < *n && !(s->lines[k].route == route && s->lines[k].headsign == text))
                k++;
            if (k < *n) {
                s->lines[k].runs += h->runs;
                continue;
            }
            if (!RESERVE(s, lines, (size_t)*n + 1))
                return false;
            s->lines[(*n)++] = (stop_headsign){route, text, h->runs};
        }
    }
    return true;
}

static bool line_before(const stop_headsign *a, const stop_headsign *b)
{
    if (a->route != b->route)
        return a->route < b->route;
    if (a->runs != b->runs)
        return a->runs > b->runs;
    return strcmp(a->headsign, b->headsign) < 0;
}

int stop_headsigns(dataset *ds, network_scratch *s, uint32_t stop, const stop_headsign **out, uint32_t *count,
                   query_error *err)
{
    *out = NULL;
    *count = 0;
    if (stop >= ds->meta->nstops)
        return fail(err, QUERY_ENOTFOUND, "stop_id", "unknown stop");
    char why[160] = "";
    const group_headsigns *x = dataset_extension_get(ds, &group_headsigns_extension, why, sizeof why);
    if (!x)
        return fail(err, QUERY_ENOMEM, "", why);
    const tt_stop *sp = &ds->stops[stop];
    uint32_t n = 0;
    if (!add_stop(ds, x, s, stop, &n))
        return fail(err, QUERY_ENOMEM, "", "out of memory");
    for (uint32_t c = 0; c < sp->children_count; c++)
        if (!add_stop(ds, x, s, ds->children[sp->children_first + c], &n))
            return fail(err, QUERY_ENOMEM, "", "out of memory");
    for (uint32_t i = 1; i < n; i++) {
        stop_headsign h = s->lines[i];
        uint32_t j = i;
        while (j > 0 && line_before(&h, &s->lines[j - 1])) {
            s->lines[j] = s->lines[j - 1];
            j--;
        }
        s->lines[j] = h;
    }
    *out = s->lines;
    *count = n;
    return QUERY_OK;
}

int network_prepare(dataset *ds, char *err, size_t errlen)
{
    return dataset_extension_get(ds, &group_headsigns_extension, err, errlen) ? 0 : -1;
}
