/* rt_trip_properties.c — the TripProperties of scheduled trip instances; see
 * rt_trip_properties.h.
 *
 * Each instance's properties own one block holding their three strings (the
 * feed they came from is freed while the overlay lives on). They are noted
 * in the order of their stop entries, so the instance of an entry is a
 * binary search away.
 */
#include "live/rt_trip_properties.h"

#include <stdlib.h>
#include <string.h>

typedef struct instance_properties {
    uint32_t first_entry, count;
    rt_trip_properties props;
    char *strings;
} instance_properties;

struct rt_properties_set {
    instance_properties *items;
    uint32_t count, cap;
};

rt_properties_set *rt_properties_new(void) { return calloc(1, sizeof(rt_properties_set)); }

void rt_properties_free(rt_properties_set *p)
{
    if (!p) return;
    for (uint32_t i = 0; i < p->count; i++) free(p->items[i].strings);
    free(p->items);
    free(p);
}

bool rt_properties_given(const rt_trip_update *tu)
{
    return (tu->headsign && tu->headsign[0]) || (tu->short_name && tu->short_name[0]) ||
           (tu->shape_id && tu->shape_id[0]);
}

/* s (non-empty) copied to *at, or NULL. */
static const char *keep(char **at, const char *s)
{
    if (!s || !s[0]) return NULL;
    size_t n = strlen(s) + 1;
    memcpy(*at, s, n);
    const char *kept = *at;
    *at += n;
    return kept;
}

bool rt_properties_note(rt_properties_set *p, const rt_trip_update *tu, uint32_t first_entry, uint32_t count)
{
    if (p->count == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 16;
        instance_properties *items = cap > p->cap ? realloc(p->items, (size_t)cap * sizeof *items) : NULL;
        if (!items) return false;
        p->items = items;
        p->cap = cap;
    }
    size_t bytes = (tu->headsign ? strlen(tu->headsign) + 1 : 0) + (tu->short_name ? strlen(tu->short_name) + 1 : 0) +
                   (tu->shape_id ? strlen(tu->shape_id) + 1 : 0);
    char *strings = malloc(bytes ? bytes : 1);
    if (!strings) return false;
    char *at = strings;
    instance_properties *ip = &p->items[p->count++];
    ip->first_entry = first_entry;
    ip->count = count;
    ip->strings = strings;
    ip->props.headsign = keep(&at, tu->headsign);
    ip->props.short_name = keep(&at, tu->short_name);
    ip->props.shape_id = keep(&at, tu->shape_id);
    return true;
}

uint32_t rt_properties_of(const rt_properties_set *p, uint32_t entry)
{
    if (!p) return 0;
    uint32_t lo = 0, hi = p->count;
    while (lo < hi) {   /* the last instance starting at or before the entry */
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->items[mid].first_entry <= entry) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return 0;
    const instance_properties *ip = &p->items[lo - 1];
    return entry - ip->first_entry < ip->count ? lo : 0;
}

const rt_trip_properties *rt_properties_at(const rt_properties_set *p, uint32_t number)
{
    return p && number && number <= p->count ? &p->items[number - 1].props : NULL;
}
