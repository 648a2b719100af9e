/* alert_view.c — resolves alerts against a dataset and matches them to
 * departures and stops.
 *
 * Why it exists: see alert_view.h. The cost a departure row pays when no
 * alert could touch it is two bit tests (its trip, its stop). Only when one
 * hits does the row look its trip, stop, station, route, agency and route
 * type up among the resolved entities (binary search on the selector each is
 * keyed by), check every selector of each candidate (GTFS-RT: all that are
 * given must match) and the alert's active periods at the row's instant.
 */
#include "transit/alert_view.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store/dataset_internal.h"

enum { KEY_TRIP, KEY_STOP, KEY_ROUTE, KEY_AGENCY, KEY_ROUTE_TYPE };

/* One informed entity, resolved: QUERY_NONE for a selector not given. */
typedef struct view_entity {
    uint32_t kind, key;      /* the selector it is looked up by */
    uint32_t slot;           /* its alert's index in the view */
    uint32_t stop, route, trip, agency;
    int32_t route_type, direction_id, start_date;
} view_entity;

struct alert_view {
    long refs;                    /* __atomic */
    int64_t generation;
    dataset *ds;                  /* retained, or NULL */
    alert **alerts;               /* by id; each retained */
    uint32_t nalerts;
    view_entity *entities;        /* by (kind, key) */
    uint32_t nentities;
    uint64_t *trip_bits, *stop_bits;
    uint32_t *route_agency;       /* per route: its agency's index, or QUERY_NONE */
    const char *languages[ALERT_VIEW_LANGUAGES_MAX];   /* into the alerts' texts */
    uint32_t nlanguages;
    bool multilingual;
};

/* ------------------------------------------------------------ resolving */

static uint32_t find_agency(const dataset *ds, const char *id)
{
    uint32_t n = ds->meta->nagencies;
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(ds->strings + ds->agencies[i].id, id) == 0)
            return i;
    /* a feed with one agency may leave agency_id empty everywhere */
    if (n == 1 && ds->strings[ds->agencies[0].id] == '\0' && id[0] == '\0')
        return 0;
    return QUERY_NONE;
}

/* id as an entity of feed `feed` of a merged dataset names it: "feed:id"
 * where the dataset has that (the merge namespaced it), else id; without a
 * feed, id. */
static uint32_t find_in_feed(const dataset *ds, uint32_t (*find)(const dataset *, const char *, size_t),
                             const char *feed, const char *id)
{
    if (feed) {
        char qualified[ALERT_FEED_MAX + ALERT_REF_ID_MAX + 2];
        int n = snprintf(qualified, sizeof qualified, "%s:%s", feed, id);
        uint32_t found = n > 0 && (size_t)n < sizeof qualified ? find(ds, qualified, (size_t)n) : QUERY_NONE;
        if (found != QUERY_NONE)
            return found;
    }
    return find(ds, id, strlen(id));
}

static uint32_t find_agency_len(const dataset *ds, const char *id, size_t len)
{
    (void)len;
    return find_agency(ds, id);
}

static uint32_t route_agency_of(const dataset *ds, uint32_t route)
{
    const char *id = ds->strings + ds->routes[route].agency_id;
    if (id[0] == '\0' && ds->meta->nagencies == 1)
        return 0;
    return find_agency(ds, id);
}

/* Resolves e's ids in ds; false when one names nothing there (the entity
 * then touches nothing: its alert stays listed, shown by no departure). */
static bool resolve(const dataset *ds, const alert_entity *e, view_entity *out)
{
    out->stop = out->route = out->trip = out->agency = QUERY_NONE;
    out->route_type = e->route_type;
    out->direction_id = e->direction_id;
    out->start_date = e->start_date;
    if (e->stop_id && (out->stop = find_in_feed(ds, dataset_find_stop, e->feed, e->stop_id)) == QUERY_NONE)
        return false;
    if (e->route_id && (out->route = find_in_feed(ds, dataset_find_route, e->feed, e->route_id)) == QUERY_NONE)
        return false;
    if (e->trip_id && (out->trip = find_in_feed(ds, dataset_find_trip, e->feed, e->trip_id)) == QUERY_NONE)
        return false;
    if (e->agency_id && (out->agency = find_in_feed(ds, find_agency_len, e->feed, e->agency_id)) == QUERY_NONE)
        return false;
    if (out->trip != QUERY_NONE)
        out->kind = KEY_TRIP, out->key = out->trip;
    else if (out->stop != QUERY_NONE)
        out->kind = KEY_STOP, out->key = out->stop;
    else if (out->route != QUERY_NONE)
        out->kind = KEY_ROUTE, out->key = out->route;
    else if (out->agency != QUERY_NONE)
        out->kind = KEY_AGENCY, out->key = out->agency;
    else
        out->kind = KEY_ROUTE_TYPE, out->key = (uint32_t)out->route_type;
    return true;
}

int alert_check_references(const alert *a, const dataset *ds, alert_error *err)
{
    for (uint32_t i = 0; i < a->nentities; i++) {
        const alert_entity *e = &a->entities[i];
        const char *what = NULL, *id = NULL, *member = NULL;
        if (e->stop_id && find_in_feed(ds, dataset_find_stop, e->feed, e->stop_id) == QUERY_NONE)
            what = "stop", id = e->stop_id, member = "stop_id";
        else if (e->route_id && find_in_feed(ds, dataset_find_route, e->feed, e->route_id) == QUERY_NONE)
            what = "route", id = e->route_id, member = "route_id";
        else if (e->trip_id && find_in_feed(ds, dataset_find_trip, e->feed, e->trip_id) == QUERY_NONE)
            what = "trip", id = e->trip_id, member = "trip/trip_id";
        else if (e->agency_id && find_in_feed(ds, find_agency_len, e->feed, e->agency_id) == QUERY_NONE)
            what = "agency", id = e->agency_id, member = "agency_id";
        if (what) {
            err->status = 422;
            snprintf(err->pointer, sizeof err->pointer, "/informed_entity/%u/%s", i, member);
            snprintf(err->detail, sizeof err->detail,
                     "there is no %s '%.100s' in dataset %.40s", what, id, dataset_version(ds));
            return -1;
        }
    }
    return 0;
}

static int compare_entities(const void *pa, const void *pb)
{
    const view_entity *a = pa, *b = pb;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->slot < b->slot ? -1 : a->slot > b->slot;
}

static inline void set_bit(uint64_t *bits, uint32_t i)
{
    bits[i / 64] |= 1ull << (i % 64);
}

static inline bool test_bit(const uint64_t *bits, uint32_t i)
{
    return (bits[i / 64] >> (i % 64)) & 1;
}

/* The entities, the bitmaps and the routes' agencies for v->ds. */
static bool build_index(alert_view *v)
{
    const dataset *ds = v->ds;
    size_t total = 0;
    for (uint32_t i = 0; i < v->nalerts; i++)
        total += v->alerts[i]->nentities;
    if (!(v->entities = malloc((total ? total : 1) * sizeof *v->entities)))
        return false;
    for (uint32_t i = 0; i < v->nalerts; i++)
        for (uint32_t k = 0; k < v->alerts[i]->nentities; k++) {
            view_entity *e = &v->entities[v->nentities];
            if (resolve(ds, &v->alerts[i]->entities[k], e)) {
                e->slot = i;
                v->nentities++;
            }
        }
    qsort(v->entities, v->nentities, sizeof *v->entities, compare_entities);

    uint32_t nstops = ds->meta->nstops, nroutes = ds->meta->nroutes, ntrips = ds->meta->ntrips;
    v->trip_bits = calloc(ntrips / 64 + 1, sizeof(uint64_t));
    v->stop_bits = calloc(nstops / 64 + 1, sizeof(uint64_t));
    v->route_agency = malloc((nroutes ? nroutes : 1) * sizeof *v->route_agency);
    uint8_t *route_marked = calloc(nroutes ? nroutes : 1, 1);
    uint8_t *stop_marked = calloc(nstops ? nstops : 1, 1);
    bool ok = v->trip_bits && v->stop_bits && v->route_agency && route_marked && stop_marked;
    if (ok) {
        bool any_route = false, any_stop = false;
        for (uint32_t r = 0; r < nroutes; r++)
            v->route_agency[r] = route_agency_of(ds, r);
        for (uint32_t i = 0; i < v->nentities; i++) {
            const view_entity *e = &v->entities[i];
            switch (e->kind) {
            case KEY_TRIP:
                set_bit(v->trip_bits, e->trip);
                break;
            case KEY_STOP:
                stop_marked[e->stop] = 1;
                any_stop = true;
                break;
            case KEY_ROUTE:
                route_marked[e->route] = 1;
                any_route = true;
                break;
            default:
                for (uint32_t r = 0; r < nroutes; r++)
                    if (e->kind == KEY_AGENCY ? v->route_agency[r] == e->agency
                                              : ds->routes[r].type == e->route_type)
                        route_marked[r] = 1, any_route = true;
                break;
            }
        }
        for (uint32_t r = 0; any_route && r < nroutes; r++)
            if (route_marked[r])
                for (uint32_t i = ds->route_trip_first[r]; i < ds->route_trip_first[r + 1]; i++)
                    set_bit(v->trip_bits, ds->route_trips[i]);
        /* a stop's alert covers it and, for a station, its platforms */
        for (uint32_t i = 0; any_stop && i < v->nentities; i++) {
            const view_entity *e = &v->entities[i];
            if (e->kind != KEY_STOP || !stop_marked[e->stop])
                continue;
            stop_marked[e->stop] = 0;   /* each stop once */
            set_bit(v->stop_bits, e->stop);
            const tt_stop *st = &ds->stops[e->stop];
            for (uint32_t c = 0; c < st->children_count; c++)
                set_bit(v->stop_bits, ds->children[st->children_first + c]);
        }
    }
    free(route_marked);
    free(stop_marked);
    return ok;
}

/* ------------------------------------------------------------ views */

/* v->languages: every tag of the alerts' texts, once; v->multilingual. */
static void collect_languages(alert_view *v)
{
    for (uint32_t i = 0; i < v->nalerts; i++) {
        const alert *a = v->alerts[i];
        v->multilingual = v->multilingual || alert_multilingual(a);
        for (int f = 0; f < ALERT_TEXT_FIELDS; f++)
            for (uint32_t k = 0; k < a->texts[f].count; k++) {
                const char *tag = a->texts[f].items[k].language;
                bool known = !tag;
                for (uint32_t l = 0; !known && l < v->nlanguages; l++)
                    known = strcasecmp(v->languages[l], tag) == 0;
                if (!known && v->nlanguages < ALERT_VIEW_LANGUAGES_MAX)
                    v->languages[v->nlanguages++] = tag;
            }
    }
}

alert_view *alert_view_new(alert *const *alerts, uint32_t count, dataset *ds, int64_t generation)
{
    alert_view *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->refs = 1;
    v->generation = generation;
    v->alerts = malloc((count ? count : 1) * sizeof *v->alerts);
    if (!v->alerts) {
        free(v);
        return NULL;
    }
    for (uint32_t i = 0; i < count; i++)
        v->alerts[i] = alert_retain(alerts[i]);
    v->nalerts = count;
    collect_languages(v);
    if (ds) {
        v->ds = dataset_retain(ds);
        if (!build_index(v)) {
            alert_view_release(v);
            return NULL;
        }
    }
    return v;
}

/* The insertion point of `id` among v's alerts; *found when it is there. */
static uint32_t lower_bound(const alert_view *v, const char *id, bool *found)
{
    uint32_t lo = 0, hi = v ? v->nalerts : 0;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (strcmp(v->alerts[mid]->id, id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = v && lo < v->nalerts && strcmp(v->alerts[lo]->id, id) == 0;
    return lo;
}

alert_view *alert_view_with(const alert_view *v, alert *a, dataset *ds, int64_t generation)
{
    bool found;
    uint32_t at = lower_bound(v, a->id, &found);
    uint32_t n = v ? v->nalerts : 0;
    alert **list = malloc((n + 1) * sizeof *list);
    if (!list)
        return NULL;
    uint32_t o = 0;
    for (uint32_t i = 0; i < at; i++)
        list[o++] = v->alerts[i];
    list[o++] = a;
    for (uint32_t i = at + (found ? 1 : 0); i < n; i++)
        list[o++] = v->alerts[i];
    alert_view *out = alert_view_new(list, o, ds, generation);
    free(list);
    return out;
}

alert_view *alert_view_without(const alert_view *v, const char *id, dataset *ds,
                               int64_t generation)
{
    bool found;
    uint32_t at = lower_bound(v, id, &found);
    uint32_t n = v ? v->nalerts : 0;
    alert **list = malloc((n ? n : 1) * sizeof *list);
    if (!list)
        return NULL;
    uint32_t o = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!(found && i == at))
            list[o++] = v->alerts[i];
    alert_view *out = alert_view_new(list, o, ds, generation);
    free(list);
    return out;
}

alert_view *alert_view_rebase(const alert_view *v, dataset *ds)
{
    return alert_view_new(v->alerts, v->nalerts, ds, v->generation);
}

alert_view *alert_view_retain(alert_view *v)
{
    __atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
    return v;
}

void alert_view_release(alert_view *v)
{
    if (!v || __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (uint32_t i = 0; i < v->nalerts; i++)
        alert_release(v->alerts[i]);
    free(v->alerts);
    free(v->entities);
    free(v->trip_bits);
    free(v->stop_bits);
    free(v->route_agency);
    if (v->ds)
        dataset_release(v->ds);
    free(v);
}

int64_t alert_view_generation(const alert_view *v)
{
    return v->generation;
}

uint32_t alert_view_count(const alert_view *v)
{
    return v->nalerts;
}

const alert *alert_view_at(const alert_view *v, uint32_t i)
{
    return v->alerts[i];
}

long alert_view_find(const alert_view *v, const char *id)
{
    bool found;
    uint32_t at = lower_bound(v, id, &found);
    return found ? (long)at : -1;
}

const dataset *alert_view_dataset(const alert_view *v)
{
    return v->ds;
}

uint32_t alert_view_languages(const alert_view *v, const char *const **tags)
{
    *tags = v->languages;
    return v->nlanguages;
}

bool alert_view_multilingual(const alert_view *v)
{
    return v->multilingual;
}

/* ------------------------------------------------------------ marks */

struct alert_marks {
    const alert_view *view;
    uint32_t *stamp;              /* per alert slot: the response that marked it */
    uint32_t stamp_cap;
    uint32_t current;             /* this response's stamp */
    uint32_t *marked;             /* slots marked in this response */
    uint32_t nmarked;
    uint32_t *row_slots;          /* the rows' lists, one after another */
    uint32_t nrow_slots, row_slots_cap;
    uint32_t *row_first, *row_count;   /* per row */
    uint32_t rows_cap;
    bool oom;                     /* an allocation failed: the response must not
                                     pass for one without alerts (marks_write) */
};

alert_marks *alert_marks_new(void)
{
    return calloc(1, sizeof(alert_marks));
}

void alert_marks_free(alert_marks *m)
{
    if (!m)
        return;
    free(m->stamp);
    free(m->marked);
    free(m->row_slots);
    free(m->row_first);
    free(m->row_count);
    free(m);
}

static bool grow_u32(uint32_t **a, uint32_t need)
{
    uint32_t *p = realloc(*a, need * sizeof **a);
    if (!p)
        return false;
    *a = p;
    return true;
}

void alert_marks_begin(alert_marks *m, const alert_view *v)
{
    m->view = v && v->nalerts ? v : NULL;
    m->nmarked = 0;
    m->nrow_slots = 0;
    m->oom = false;
    if (!m->view)
        return;
    if (m->stamp_cap < v->nalerts) {
        uint32_t cap = v->nalerts + v->nalerts / 2 + 16;
        uint32_t *stamp = calloc(cap, sizeof *stamp);
        uint32_t *marked = malloc(cap * sizeof *marked);
        if (!stamp || !marked) {   /* out of memory: no marks, and the writer is told */
            free(stamp);
            free(marked);
            m->view = NULL;
            m->oom = true;
            return;
        }
        free(m->stamp);
        free(m->marked);
        m->stamp = stamp;
        m->marked = marked;
        m->stamp_cap = cap;
        m->current = 0;
    }
    if (m->rows_cap < QUERY_LIMIT_MAX) {
        if (!grow_u32(&m->row_first, QUERY_LIMIT_MAX) || !grow_u32(&m->row_count, QUERY_LIMIT_MAX)) {
            m->view = NULL;
            m->oom = true;
            return;
        }
        m->rows_cap = QUERY_LIMIT_MAX;
    }
    if (++m->current == 0) {   /* the stamps wrapped: forget them all */
        memset(m->stamp, 0, m->stamp_cap * sizeof *m->stamp);
        m->current = 1;
    }
}

static void mark(alert_marks *m, uint32_t slot)
{
    if (m->stamp[slot] != m->current) {
        m->stamp[slot] = m->current;
        m->marked[m->nmarked++] = slot;
    }
}

/* The entities keyed (kind, key): [*first, *end). */
static void entity_range(const alert_view *v, uint32_t kind, uint32_t key, uint32_t *first,
                         uint32_t *end)
{
    uint32_t lo = 0, hi = v->nentities;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const view_entity *e = &v->entities[mid];
        if (e->kind < kind || (e->kind == kind && e->key < key))
            lo = mid + 1;
        else
            hi = mid;
    }
    *first = lo;
    while (lo < v->nentities && v->entities[lo].kind == kind && v->entities[lo].key == key)
        lo++;
    *end = lo;
}

/* What a departure row is matched on besides its stop: its trip (QUERY_NONE
 * for a trip the realtime feed added), route and direction. */
typedef struct row_trip {
    uint32_t trip, route;
    int direction_id;
} row_trip;

/* Whether every selector of e holds for departure d of trip rt. */
static bool entity_matches(const alert_view *v, const dataset *ds, const view_entity *e,
                           const departure *d, const row_trip *rt)
{
    uint32_t r = rt->route;
    if (e->trip != QUERY_NONE &&
        (e->trip != rt->trip || (e->start_date != ALERT_NONE_DATE && e->start_date != d->service_date)))
        return false;
    if (e->stop != QUERY_NONE && e->stop != d->stop && e->stop != ds->stops[d->stop].parent)
        return false;
    if (e->route != QUERY_NONE && e->route != r)
        return false;
    if (e->agency != QUERY_NONE && e->agency != v->route_agency[r])
        return false;
    if (e->route_type >= 0 && e->route_type != ds->routes[r].type)
        return false;
    if (e->direction_id >= 0 && e->direction_id != rt->direction_id)
        return false;
    return true;
}

/* Adds slot to the row list being built at row_slots[first..], in slot order. */
static bool add_row_slot(alert_marks *m, uint32_t first, uint32_t slot)
{
    if (m->nrow_slots == m->row_slots_cap) {   /* room first: row_slots starts NULL */
        uint32_t cap = m->row_slots_cap ? m->row_slots_cap * 2 : 64;
        if (!grow_u32(&m->row_slots, cap)) {
            m->oom = true;
            return false;
        }
        m->row_slots_cap = cap;
    }
    uint32_t *list = m->row_slots + first, n = m->nrow_slots - first;
    uint32_t at = 0;
    while (at < n && list[at] < slot)
        at++;
    if (at < n && list[at] == slot)
        return true;
    memmove(list + at + 1, list + at, (n - at) * sizeof *list);
    list[at] = slot;
    m->nrow_slots++;
    return true;
}

static uint32_t mark_row(alert_marks *m, const dataset *ds, const departure *d, uint32_t row,
                       const row_trip *rt);

uint32_t alert_marks_departure(alert_marks *m, const dataset *ds, const departure *d, uint32_t row)
{
    const alert_view *v = m->view;
    if (!v || row >= m->rows_cap)
        return 0;
    m->row_count[row] = 0;
    if (!test_bit(v->trip_bits, d->trip) && !test_bit(v->stop_bits, d->stop))
        return 0;
    const row_trip rt = {d->trip, ds->trips[d->trip].route, ds->trips[d->trip].direction_id};
    return mark_row(m, ds, d, row, &rt);
}

uint32_t alert_marks_added_departure(alert_marks *m, const dataset *ds, const departure *d, uint32_t row,
                                     uint32_t route, int direction_id)
{
    if (!m->view || row >= m->rows_cap)
        return 0;
    m->row_count[row] = 0;
    const row_trip rt = {QUERY_NONE, route, direction_id};
    return mark_row(m, ds, d, row, &rt);
}

static uint32_t mark_row(alert_marks *m, const dataset *ds, const departure *d, uint32_t row,
                         const row_trip *rt)
{
    const alert_view *v = m->view;
    uint32_t r = rt->route, parent = ds->stops[d->stop].parent;
    uint32_t first = m->nrow_slots;
    const uint32_t keys[6][2] = {
        {KEY_TRIP, rt->trip}, {KEY_STOP, d->stop}, {KEY_STOP, parent}, {KEY_ROUTE, r},
        {KEY_AGENCY, v->route_agency[r]}, {KEY_ROUTE_TYPE, (uint32_t)ds->routes[r].type}};
    for (int k = 0; k < 6; k++) {
        if (keys[k][1] == QUERY_NONE)
            continue;
        uint32_t i, end;
        entity_range(v, keys[k][0], keys[k][1], &i, &end);
        for (; i < end; i++) {
            const view_entity *e = &v->entities[i];
            if (entity_matches(v, ds, e, d, rt) && alert_active_at(v->alerts[e->slot], d->instant) &&
                !add_row_slot(m, first, e->slot))
                break;
        }
    }
    uint32_t n = m->nrow_slots - first;
    m->row_first[row] = first;
    m->row_count[row] = n;
    for (uint32_t i = 0; i < n; i++)
        mark(m, m->row_slots[first + i]);
    return n;
}

uint32_t alert_marks_row_count(const alert_marks *m, uint32_t row)
{
    return m->view && row < m->rows_cap ? m->row_count[row] : 0;
}

const char *alert_marks_row_id(const alert_marks *m, uint32_t row, uint32_t i)
{
    assert(row < m->rows_cap && i < m->row_count[row]);
    return m->view->alerts[m->row_slots[m->row_first[row] + i]]->id;
}

/* Whether stop-detail entity e (not about a single trip) concerns `stop`. */
static bool entity_about_stop(const alert_view *v, const dataset *ds, const view_entity *e,
                              uint32_t stop, const uint32_t *routes, uint32_t nroutes)
{
    if (e->trip != QUERY_NONE)
        return false;
    if (e->stop != QUERY_NONE && e->stop != stop && e->stop != ds->stops[stop].parent &&
        ds->stops[e->stop].parent != stop)
        return false;
    bool route_selectors = e->route != QUERY_NONE || e->agency != QUERY_NONE || e->route_type >= 0;
    if (!route_selectors)
        return true;
    for (uint32_t i = 0; i < nroutes; i++) {
        uint32_t r = routes[i];
        if ((e->route == QUERY_NONE || e->route == r) &&
            (e->agency == QUERY_NONE || e->agency == v->route_agency[r]) &&
            (e->route_type < 0 || e->route_type == ds->routes[r].type))
            return true;
    }
    return false;
}

void alert_marks_stop(alert_marks *m, const dataset *ds, uint32_t stop, const uint32_t *routes,
                      uint32_t nroutes, int64_t instant)
{
    const alert_view *v = m->view;
    if (!v)
        return;
    for (uint32_t i = 0; i < v->nentities; i++) {
        const view_entity *e = &v->entities[i];
        if (m->stamp[e->slot] != m->current && alert_active_at(v->alerts[e->slot], instant) &&
            entity_about_stop(v, ds, e, stop, routes, nroutes))
            mark(m, e->slot);
    }
}

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

void alert_marks_write(alert_marks *m, json_writer *w, alert_language *lang)
{
    if (m->oom)   /* rows may lack alerts they have: a 503, not a quiet 200 */
        w->oom = true;
    json_key_n(w, "alerts", 6);
    json_array_begin(w);
    if (m->view) {
        qsort(m->marked, m->nmarked, sizeof *m->marked, compare_u32);
        for (uint32_t i = 0; i < m->nmarked; i++) {
            alert_write(w, m->view->alerts[m->marked[i]], lang);
        }
    }
    json_array_end(w);
}
