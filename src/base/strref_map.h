/* strref_map.h — a hash map from strings to uint32 whose keys stay where
 * they already are: in the caller's string table, named by their offsets.
 *
 * Why it exists: the importer interns every string once into the table
 * that timetable.bin writes (tt_builder.strings). A strmap copies each key
 * into an arena of its own and spends a 24-byte entry and a slot on it, so a
 * trip id was held three times (the table, the interning map, the trip id
 * map): at 64 copies of Brooklyn, 7.5M trips, 800 MB of maps. Here a key is
 * the offset of its bytes in the table, NUL-terminated there, and each slot
 * is 12 bytes (offset, hash, value), filled to at most 3/4: about 20 bytes
 * a key and no copy. The table may move (realloc) between calls: it is
 * passed to every call that reads a key.
 *
 * Keys are non-empty and hold no NUL byte (the CSV reader rejects records
 * with one); offset 0 marks an empty slot, so no key lies at offset 0 (the
 * importer's table keeps "" there).
 */
#ifndef TRANSIT_STRREF_MAP_H
#define TRANSIT_STRREF_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct strref_slot {
    uint32_t off;      /* the key's offset in the table; 0 = empty */
    uint32_t hash;     /* strmap_hash of its bytes */
    uint32_t value;
} strref_slot;

typedef struct strref_map {
    strref_slot *slots;
    uint32_t nslots;   /* any size: a hash is placed by multiplication, not masking */
    uint32_t count;
    uint32_t limit;    /* grows past this many keys (3/4 of nslots) */
} strref_map;

/* An empty map sized for about `expected` keys. 0, or -1 when out of memory. */
int strref_map_init(strref_map *m, uint32_t expected);
void strref_map_free(strref_map *m);

/* The slot of the key (len bytes, hashed to `hash` by strmap_hash) whose
 * bytes are in `table`, or NULL. The slot stays valid until the next add. */
strref_slot *strref_map_find(const strref_map *m, const char *table, const void *key, size_t len, uint32_t hash);

/* Adds the key at `off` in the table (absent from the map: find it first)
 * with its hash and value; the map grows (each key moved by its hash, no
 * table read) when it passes 3/4 full. The new slot, or NULL when out of
 * memory or when the map holds UINT32_MAX / 2 keys. */
strref_slot *strref_map_add(strref_map *m, uint32_t off, uint32_t hash, uint32_t value);

/* What the map holds on the heap, in bytes. */
static inline size_t strref_map_bytes(const strref_map *m) { return (size_t)m->nslots * sizeof(strref_slot); }

#endif
