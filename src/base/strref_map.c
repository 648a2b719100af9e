/* strref_map.c — the importer's map over keys kept in its string table;
 * see strref_map.h. */
#include "base/strref_map.h"

#include <stdlib.h>
#include <string.h>

#define MAX_KEYS (UINT32_MAX / 2)

/* The first slot a hash probes: its place scaled to nslots (the high bits
 * of the product), so nslots need not be a power of two. */
static inline uint32_t home(uint32_t hash, uint32_t nslots)
{
    return (uint32_t)(((uint64_t)hash * nslots) >> 32);
}

/* At most 3/4 full. */
static uint32_t limit_of(uint32_t nslots)
{
    return (uint32_t)((uint64_t)nslots * 3 / 4);
}

static int alloc_slots(strref_map *m, uint32_t nslots)
{
    m->slots = calloc(nslots, sizeof *m->slots);
    if (!m->slots) return -1;
    m->nslots = nslots;
    m->limit = limit_of(nslots);
    return 0;
}

int strref_map_init(strref_map *m, uint32_t expected)
{
    memset(m, 0, sizeof *m);
    uint64_t want = (uint64_t)expected * 4 / 3 + 16;
    if (want > UINT32_MAX) want = UINT32_MAX;
    return alloc_slots(m, (uint32_t)want);
}

void strref_map_free(strref_map *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

strref_slot *strref_map_find(const strref_map *m, const char *table, const void *key, size_t len, uint32_t hash)
{
    if (!m->nslots) return NULL;
    for (uint32_t i = home(hash, m->nslots);;) {
        strref_slot *s = &m->slots[i];
        if (!s->off) return NULL;
        /* strncmp stops at the stored key's NUL: a shorter key never reads
         * past it; then the stored key must end where this one does */
        if (s->hash == hash && strncmp(table + s->off, key, len) == 0 && table[s->off + len] == '\0') return s;
        if (++i == m->nslots) i = 0;
    }
}

/* Places a slot's contents in the first free slot from its hash's home. */
static strref_slot *place(strref_slot *slots, uint32_t nslots, strref_slot s)
{
    uint32_t i = home(s.hash, nslots);
    while (slots[i].off)
        if (++i == nslots) i = 0;
    slots[i] = s;
    return &slots[i];
}

static int grow(strref_map *m)
{
    uint64_t want = (uint64_t)m->nslots + m->nslots / 2 + 16;
    if (want > UINT32_MAX) want = UINT32_MAX;
    strref_map bigger;
    memset(&bigger, 0, sizeof bigger);
    if (want <= m->nslots || alloc_slots(&bigger, (uint32_t)want) != 0) return -1;
    for (uint32_t i = 0; i < m->nslots; i++)
        if (m->slots[i].off) place(bigger.slots, bigger.nslots, m->slots[i]);
    bigger.count = m->count;
    free(m->slots);
    *m = bigger;
    return 0;
}

strref_slot *strref_map_add(strref_map *m, uint32_t off, uint32_t hash, uint32_t value)
{
    if (off == 0 || m->count >= MAX_KEYS) return NULL;
    if ((m->count >= m->limit || !m->nslots) && grow(m) != 0) return NULL;
    m->count++;
    return place(m->slots, m->nslots, (strref_slot){off, hash, value});
}
