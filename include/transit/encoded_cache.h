/* encoded_cache.h — compressed response bodies kept for the next request that asks again.
 *
 * Why it exists: compressing a 16 KB JSON answer costs about as much CPU as writing
 * it, and clients ask for the same answers over and over (the same stop, the same
 * minute). The cache maps (the exact bytes of everything the answer depends on, the
 * coding) to the compressed body, so a repeated request pays a lookup instead of a
 * compression. The key is compared byte for byte, never by its hash alone, and an
 * entry also records the length and CRC-32 of the uncompressed body it was made
 * from: a hit whose body differs (a key that missed something the answer depends
 * on) is refused and replaced, so a cached body is never sent for other content.
 *
 * Bounded in bytes (entries of all shards together), evicting by CLOCK (second
 * chance) within a shard. Sharded by the key's hash, one mutex per shard held only
 * for a scan of its slot array, so threads rarely wait on each other. An entry is
 * reference-counted: the bytes a lookup returns stay valid until the caller
 * releases it, even when the cache evicts it meanwhile (a response being sent).
 * Pure C, used by the HTTP layer.
 */
#ifndef TRANSIT_ENCODED_CACHE_H
#define TRANSIT_ENCODED_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "transit/accept_encoding.h"

typedef struct encoded_cache encoded_cache;
typedef struct encoded_entry encoded_entry;

/* A cache holding at most max_bytes of entries (key, compressed body and
 * bookkeeping); 0 makes a cache that stores nothing. NULL when out of memory. */
encoded_cache *encoded_cache_new(size_t max_bytes);
/* Frees the cache; entries still held by a caller are freed when released. */
void encoded_cache_free(encoded_cache *c);

/* What one answer is: the key bytes, the coding, and the uncompressed body's
 * length and CRC-32 (encoded_cache_crc32). */
typedef struct encoded_key {
    const void *bytes;
    size_t len;
    content_coding coding;
    size_t plain_len;
    uint32_t plain_crc;
} encoded_key;

/* The CRC-32 of a body, as the keys want it. */
uint32_t encoded_cache_crc32(const void *body, size_t len);

/* The entry for key, held for the caller (release it), with *out and *out_len
 * set to its compressed body; NULL on a miss. */
encoded_entry *encoded_cache_find(encoded_cache *c, const encoded_key *key, const unsigned char **out,
                                  size_t *out_len);

/* Stores a copy of encoded[0..len) under key (replacing what the key held) and
 * returns the new entry held for the caller, its bytes in *out; NULL (nothing
 * stored) when the entry would take more than an eighth of a shard's share of
 * the bytes, or when out of memory. */
encoded_entry *encoded_cache_put(encoded_cache *c, const encoded_key *key, const void *encoded,
                                 size_t len, const unsigned char **out);

/* Gives back an entry find or put returned (NULL is ignored). */
void encoded_entry_release(encoded_entry *e);

typedef struct encoded_cache_stats {
    uint64_t hits, misses, stores, evictions;
    uint64_t entries, bytes, max_bytes;
} encoded_cache_stats;

void encoded_cache_stats_of(const encoded_cache *c, encoded_cache_stats *out);

/* The Prometheus exposition lines of the stats, like snprintf: the length the
 * whole text needs (call again with a bigger buffer when >= cap). */
size_t encoded_cache_render_metrics(const encoded_cache *c, char *out, size_t cap);

#endif
