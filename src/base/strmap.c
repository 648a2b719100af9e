/* strmap.c — the importer's byte-string map; see strmap.h. */
#include "base/strmap.h"

#include <stdlib.h>
#include <string.h>

uint32_t strmap_hash(const void *key, size_t len)
{
    /* 64-bit multiply-xorshift over 8-byte words; good enough dispersion for
     * ids, patterns and profiles, and several times faster than bytewise FNV. */
    const unsigned char *p = key;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (len * 0xff51afd7ed558ccdull);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
        p += 8;
        len -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, len);
    h = (h ^ w ^ ((uint64_t)len << 56)) * 0x94d049bb133111ebull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (uint32_t)h;
}

int strmap_init(strmap *m, uint32_t expected)
{
    memset(m, 0, sizeof *m);
    uint32_t size = 16;
    while (size < expected * 2 + 16) size <<= 1;
    m->slots = calloc(size, sizeof *m->slots);
    m->mask = size - 1;
    return m->slots ? 0 : -1;
}

void strmap_free(strmap *m)
{
    free(m->slots);
    free(m->entries);
    free(m->arena);
    memset(m, 0, sizeof *m);
}

int strmap_copy(strmap *dst, const strmap *src, uint32_t add_to_values)
{
    memset(dst, 0, sizeof *dst);
    size_t nslots = (size_t)src->mask + 1;
    dst->slots = malloc(nslots * sizeof *dst->slots);
    dst->entries = malloc(((size_t)src->count + 1) * sizeof *dst->entries);
    dst->arena = malloc(src->arena_len + 1);
    if (!dst->slots || !dst->entries || !dst->arena) {
        strmap_free(dst);
        return -1;
    }
    memcpy(dst->slots, src->slots, nslots * sizeof *dst->slots);
    if (src->count)
        memcpy(dst->entries, src->entries, (size_t)src->count * sizeof *dst->entries);
    if (src->arena_len)
        memcpy(dst->arena, src->arena, src->arena_len);
    for (uint32_t i = 0; i < src->count; i++)
        dst->entries[i].value += add_to_values;
    dst->mask = src->mask;
    dst->count = src->count;
    dst->cap = src->count + 1;
    dst->arena_len = src->arena_len;
    dst->arena_cap = src->arena_len + 1;
    return 0;
}

uint32_t strmap_get(const strmap *m, const void *key, size_t len)
{
    return strmap_get_hashed(m, key, len, strmap_hash(key, len));
}

uint32_t strmap_get_hashed(const strmap *m, const void *key, size_t len, uint32_t h)
{
    for (uint32_t i = h & m->mask;; i = (i + 1) & m->mask) {
        uint32_t s = m->slots[i];
        if (!s) return UINT32_MAX;
        const strmap_entry *e = &m->entries[s - 1];
        if (e->hash == h && e->key_len == len && memcmp(m->arena + e->key_off, key, len) == 0)
            return e->value;
    }
}

static int grow_slots(strmap *m)
{
    uint32_t size = (m->mask + 1) * 2;
    uint32_t *slots = calloc(size, sizeof *slots);
    if (!slots) return -1;
    for (uint32_t e = 0; e < m->count; e++) {
        uint32_t i = m->entries[e].hash & (size - 1);
        while (slots[i]) i = (i + 1) & (size - 1);
        slots[i] = e + 1;
    }
    free(m->slots);
    m->slots = slots;
    m->mask = size - 1;
    return 0;
}

static int grow_entries(strmap *m)
{
    uint32_t cap = m->cap ? m->cap * 2 : 64;
    strmap_entry *e = realloc(m->entries, cap * sizeof *e);
    if (!e) return -1;
    m->entries = e;
    m->cap = cap;
    return 0;
}

uint32_t strmap_put(strmap *m, const void *key, size_t len, uint32_t value, int *inserted)
{
    uint32_t h = strmap_hash(key, len);
    uint32_t i = h & m->mask;
    for (;; i = (i + 1) & m->mask) {
        uint32_t s = m->slots[i];
        if (!s) break;
        const strmap_entry *e = &m->entries[s - 1];
        if (e->hash == h && e->key_len == len && memcmp(m->arena + e->key_off, key, len) == 0) {
            *inserted = 0;
            return s - 1;
        }
    }
    if (m->count == m->cap && grow_entries(m) != 0) return UINT32_MAX;
    if (m->arena_len + len + 1 > m->arena_cap) {
        size_t cap = m->arena_cap ? m->arena_cap : 4096;
        while (cap < m->arena_len + len + 1) cap *= 2;
        char *a = realloc(m->arena, cap);
        if (!a) return UINT32_MAX;
        m->arena = a;
        m->arena_cap = cap;
    }
    uint32_t e = m->count++;
    memcpy(m->arena + m->arena_len, key, len);
    m->arena[m->arena_len + len] = 0;
    m->entries[e] = (strmap_entry){m->arena_len, (uint32_t)len, h, value};
    m->arena_len += len + 1;
    m->slots[i] = e + 1;
    *inserted = 1;
    if (m->count * 2 > m->mask + 1 && grow_slots(m) != 0) return UINT32_MAX;
    return e;
}
