/* rt_feed_merge.c — the merge of several GTFS-Realtime feeds, newest feed
 * first per trip; see include/transit/rt_feed_merge.h.
 */
#include "transit/rt_feed_merge.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static bool same_text(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static uint64_t hash_text(uint64_t h, const char *s)
{
    return fnv1a((const uint8_t *)(s ? s : ""), s ? strlen(s) + 1 : 0) ^ (h * 31);
}

/* Whether u and v update the same trip (see rt_ingest.h); an update
 * naming no trip and no route is the same as none. */
static bool same_trip(const rt_trip_update *u, const rt_trip_update *v)
{
    /* a DUPLICATED update is of its copy (TripProperties), not the original */
    if (!same_text(u->new_trip_id, v->new_trip_id) || !same_text(u->new_start_date, v->new_start_date))
        return false;
    /* a frequency-based trip's runs differ by start_time; a trip another
     * source names with and without it is one instance to the overlay,
     * which keeps the first in the merge, the newest feed's */
    if (u->trip_id || v->trip_id)
        return same_text(u->trip_id, v->trip_id) && same_text(u->start_date, v->start_date) &&
               same_text(u->start_time, v->start_time);
    return u->route_id && same_text(u->route_id, v->route_id) && u->direction_id == v->direction_id &&
           same_text(u->start_date, v->start_date) && same_text(u->start_time, v->start_time);
}

static bool trip_has_key(const rt_trip_update *u) { return u->trip_id || u->route_id; }

static uint64_t trip_hash(const rt_trip_update *u)
{
    uint64_t h = hash_text(hash_text(hash_text(0, u->trip_id), u->start_date), u->start_time);
    if (u->new_trip_id) h = hash_text(hash_text(h, u->new_trip_id), u->new_start_date);
    if (!u->trip_id)
        h = hash_text(h, u->route_id) ^ (uint64_t)(u->direction_id + 2);
    return h;
}

/* An open-addressing set of indices into the merged arrays. */
typedef struct seen_set {
    uint32_t *slots;   /* index + 1; 0: empty */
    size_t mask;
} seen_set;

static bool seen_init(seen_set *s, size_t n)
{
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    s->mask = cap - 1;
    return (s->slots = calloc(cap, sizeof *s->slots)) != NULL;
}

void rt_feed_merged_free(rt_feed *merged)
{
    if (!merged) return;
    free(merged->trip_updates);
    free(merged->alerts);
    free(merged->vehicles);
    free(merged);
}

/* Keeps u unless an update of the same trip is in m already. */
static void add_trip_update(rt_feed *m, seen_set *trips, const rt_trip_update *u)
{
    if (trip_has_key(u)) {
        size_t slot = trip_hash(u) & trips->mask;
        for (; trips->slots[slot]; slot = (slot + 1) & trips->mask)
            if (same_trip(&m->trip_updates[trips->slots[slot] - 1], u))
                return;   /* a newer feed's update of this trip is merged already */
        trips->slots[slot] = m->trip_update_count + 1;
    }
    m->trip_updates[m->trip_update_count++] = *u;
}

/* Keeps a unless an alert with its entity id is in m already. */
static void add_alert(rt_feed *m, seen_set *alerts, const rt_alert *a)
{
    if (a->entity_id) {
        size_t slot = hash_text(0, a->entity_id) & alerts->mask;
        for (; alerts->slots[slot]; slot = (slot + 1) & alerts->mask)
            if (same_text(m->alerts[alerts->slots[slot] - 1].entity_id, a->entity_id))
                return;
        alerts->slots[slot] = m->alert_count + 1;
    }
    m->alerts[m->alert_count++] = *a;
}

rt_feed *rt_feed_merge(const rt_feed *const *feeds, size_t n)
{
    size_t ntrips = 0, nalerts = 0;
    for (size_t k = 0; k < n; k++) {
        ntrips += feeds[k]->trip_update_count;
        nalerts += feeds[k]->alert_count;
    }
    rt_feed *m = calloc(1, sizeof *m);
    seen_set trips = {0}, alerts = {0};
    if (!m || !(m->trip_updates = malloc((ntrips ? ntrips : 1) * sizeof *m->trip_updates)) ||
        !(m->alerts = malloc((nalerts ? nalerts : 1) * sizeof *m->alerts)) || !seen_init(&trips, ntrips) ||
        !seen_init(&alerts, nalerts)) {
        rt_feed_merged_free(m);
        free(trips.slots);
        free(alerts.slots);
        return NULL;
    }
    if (n) {
        m->version = feeds[0]->version;
        m->timestamp = feeds[0]->timestamp;
    }
    for (size_t k = 0; k < n; k++) {
        const rt_feed *f = feeds[k];
        m->ignored += f->ignored;
        m->rejected += f->rejected;
        if (!m->first_rejection[0])
            memcpy(m->first_rejection, f->first_rejection, sizeof m->first_rejection);
        for (uint32_t t = 0; t < f->trip_update_count; t++)
            add_trip_update(m, &trips, &f->trip_updates[t]);
        for (uint32_t a = 0; a < f->alert_count; a++)
            add_alert(m, &alerts, &f->alerts[a]);
    }
    free(trips.slots);
    free(alerts.slots);
    if (!rt_vehicles_merge(feeds, n, m)) {   /* per vehicle, its newest position */
        rt_feed_merged_free(m);
        return NULL;
    }
    return m;
}
