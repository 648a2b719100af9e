/* strmap.h — byte-string → uint32 map with interned keys, for the importer.
 *
 * Why it exists: the import resolves millions of stop_id/trip_id references
 * and dedupes strings, patterns and profiles. An open-addressing table over an
 * append-only arena does that with one hash and usually one compare per
 * lookup, and no allocation per key. Mostly import-time; on a query path only
 * for translated headsigns by text (store/translations.c), one look-up each.
 */
#ifndef TRANSIT_STRMAP_H
#define TRANSIT_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct strmap_entry {
    uint64_t key_off;     /* into arena */
    uint32_t key_len;
    uint32_t hash;
    uint32_t value;
} strmap_entry;

typedef struct strmap {
    uint32_t *slots;      /* entry index + 1, 0 = empty */
    uint32_t mask;
    uint32_t count;
    strmap_entry *entries; /* one struct per key: a probe touches one line, not four */
    uint32_t cap;
    /* arena of key bytes, each key followed by a NUL */
    char *arena;
    size_t arena_len, arena_cap;
} strmap;

int strmap_init(strmap *m, uint32_t expected);
void strmap_free(strmap *m);
uint32_t strmap_hash(const void *key, size_t len);
/* The value for key, or UINT32_MAX. */
uint32_t strmap_get(const strmap *m, const void *key, size_t len);
/* The same, the key's strmap_hash given (a caller looking many keys up
 * fetches their slots ahead with it). */
uint32_t strmap_get_hashed(const strmap *m, const void *key, size_t len, uint32_t hash);
/* Inserts key→value if absent. Returns the entry index (0..count-1) and sets
 * *inserted; UINT32_MAX on allocation failure. */
uint32_t strmap_put(strmap *m, const void *key, size_t len, uint32_t value, int *inserted);
/* dst becomes a copy of src (the same entries, in the same order), with
 * add_to_values added to every value; no key is hashed again. 0, or -1 (dst
 * empty) when out of memory. */
int strmap_copy(strmap *dst, const strmap *src, uint32_t add_to_values);
/* Entry i's key (NUL-terminated in the arena) and value. */
static inline const char *strmap_key(const strmap *m, uint32_t i) { return m->arena + m->entries[i].key_off; }
static inline uint32_t strmap_key_len(const strmap *m, uint32_t i) { return m->entries[i].key_len; }
static inline uint32_t strmap_value(const strmap *m, uint32_t i) { return m->entries[i].value; }

#endif
