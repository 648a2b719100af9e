/* rt_vehicles_merge.c — the vehicles of several GTFS-Realtime feeds as one
 * list: per vehicle, the newest position wins (see rt_vehicle.h).
 *
 * Why it exists: an agency's vehicle positions often come from another URL
 * than its trip updates, and two sources may both report a vehicle (a
 * primary and a backup AVL system). rt_feed_merge.c merges trip updates and
 * alerts by feed (newest feed first); vehicles go by their own timestamps,
 * so this is a rule of its own, in a file of its own.
 */
#include <stdlib.h>
#include <string.h>

#include "transit/rt_feed.h"

static uint64_t hash_key(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

bool rt_vehicles_merge(const rt_feed *const *feeds, size_t n, rt_feed *merged)
{
    size_t total = 0;
    for (size_t k = 0; k < n; k++)
        total += feeds[k]->vehicle_count;
    merged->vehicles = NULL;
    merged->vehicle_count = 0;
    if (!total)
        return true;
    size_t cap = 16;
    while (cap < total * 2)
        cap *= 2;
    uint32_t *slots = calloc(cap, sizeof *slots);   /* index + 1 into merged->vehicles; 0: empty */
    rt_vehicle *out = malloc(total * sizeof *out);
    if (!slots || !out) {
        free(slots);
        free(out);
        return false;
    }
    uint32_t count = 0;
    for (size_t k = 0; k < n; k++) {
        const rt_feed *f = feeds[k];
        for (uint32_t i = 0; i < f->vehicle_count; i++) {
            const rt_vehicle *v = &f->vehicles[i];
            size_t slot = hash_key(v->key) & (cap - 1);
            for (; slots[slot]; slot = (slot + 1) & (cap - 1))
                if (strcmp(out[slots[slot] - 1].key, v->key) == 0)
                    break;
            if (!slots[slot]) {
                slots[slot] = ++count;
                out[count - 1] = *v;
            } else if (v->timestamp > out[slots[slot] - 1].timestamp) {
                out[slots[slot] - 1] = *v;   /* a newer position of the same vehicle */
            }
        }
    }
    free(slots);
    merged->vehicles = out;
    merged->vehicle_count = count;
    return true;
}
