/* encoded_cache.c — sharded, byte-bounded cache of compressed response bodies.
 *
 * Why it exists: see include/transit/encoded_cache.h. Each shard has a chained
 * hash table for lookups and a ring of slots that the CLOCK hand sweeps to
 * evict; an entry is one allocation (bookkeeping, key bytes, compressed bytes),
 * immutable once stored, so a caller may read it without the lock while it
 * holds a reference. Written here rather than taken from a library: the Debian
 * and Homebrew caches (memcached, Redis) are servers, not libraries, and what is
 * needed is a few dozen lines over pthreads.
 */
#include "transit/encoded_cache.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARD_BITS 4
#define SHARDS (1u << SHARD_BITS)
#define SLOTS 1024u          /* entries per shard at most */
#define BUCKETS 1024u        /* hash chains per shard */

struct encoded_entry {
    atomic_uint refs;            /* the cache's own, plus one per caller holding it */
    encoded_entry *next;         /* in its bucket's chain */
    uint64_t hash;
    uint32_t slot;               /* its place in the shard's ring */
    bool used;                   /* found since the CLOCK hand last passed (shard lock) */
    content_coding coding;
    uint32_t plain_crc;
    size_t plain_len;
    size_t key_len;
    size_t encoded_len;
    size_t size;                 /* what it counts against the bound */
    unsigned char bytes[];       /* the key, then the compressed body */
};

typedef struct shard {
    pthread_mutex_t lock;
    encoded_entry *bucket[BUCKETS];
    encoded_entry *slot[SLOTS];
    uint32_t hand;
    size_t bytes;
} shard;

struct encoded_cache {
    size_t max_bytes;
    size_t shard_max;
    atomic_uint_fast64_t hits, misses, stores, evictions, entries, bytes;
    shard shards[SHARDS];
};

encoded_cache *encoded_cache_new(size_t max_bytes)
{
    encoded_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->max_bytes = max_bytes;
    c->shard_max = max_bytes / SHARDS;
    for (unsigned i = 0; i < SHARDS; i++) {
        if (pthread_mutex_init(&c->shards[i].lock, NULL) != 0) {
            while (i-- > 0)
                pthread_mutex_destroy(&c->shards[i].lock);
            free(c);
            return NULL;
        }
    }
    return c;
}

void encoded_entry_release(encoded_entry *e)
{
    if (e && atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1)
        free(e);
}

void encoded_cache_free(encoded_cache *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < SHARDS; i++) {
        for (unsigned j = 0; j < SLOTS; j++)
            encoded_entry_release(c->shards[i].slot[j]);
        pthread_mutex_destroy(&c->shards[i].lock);
    }
    free(c);
}

uint32_t encoded_cache_crc32(const void *body, size_t len)
{
    return libdeflate_crc32(0, body, len);
}

/* FNV-1a over the key bytes and the coding: spreads keys over shards and
 * buckets; equality is always decided on the bytes. */
static uint64_t key_hash(const encoded_key *key)
{
    uint64_t h = 14695981039346656037ull;
    const unsigned char *p = key->bytes;
    for (size_t i = 0; i < key->len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    h ^= (uint64_t)key->coding + 1;
    h *= 1099511628211ull;
    return h ^ (h >> 29);
}

static bool same_key(const encoded_entry *e, uint64_t hash, const encoded_key *key)
{
    return e->hash == hash && e->coding == key->coding && e->key_len == key->len &&
           memcmp(e->bytes, key->bytes, key->len) == 0;
}

static shard *shard_of(encoded_cache *c, uint64_t hash)
{
    return &c->shards[hash >> (64 - SHARD_BITS)];
}

/* The chain link that points at the entry for key, or at the chain's end. */
static encoded_entry **link_of(shard *s, uint64_t hash, const encoded_key *key)
{
    encoded_entry **link = &s->bucket[hash % BUCKETS];
    while (*link && !same_key(*link, hash, key))
        link = &(*link)->next;
    return link;
}

encoded_entry *encoded_cache_find(encoded_cache *c, const encoded_key *key, const unsigned char **out,
                                  size_t *out_len)
{
    uint64_t hash = key_hash(key);
    shard *s = shard_of(c, hash);
    pthread_mutex_lock(&s->lock);
    encoded_entry *e = *link_of(s, hash, key);
    if (e && e->plain_len == key->plain_len && e->plain_crc == key->plain_crc) {
        e->used = true;
        atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    } else {
        e = NULL;   /* absent, or made from other content: the caller compresses and puts */
    }
    pthread_mutex_unlock(&s->lock);
    if (!e) {
        atomic_fetch_add_explicit(&c->misses, 1, memory_order_relaxed);
        return NULL;
    }
    atomic_fetch_add_explicit(&c->hits, 1, memory_order_relaxed);
    *out = e->bytes + e->key_len;
    *out_len = e->encoded_len;
    return e;
}

/* Takes e out of its shard (the lock held) and drops the cache's reference. */
static void remove_entry(encoded_cache *c, shard *s, encoded_entry *e)
{
    encoded_entry **link = &s->bucket[e->hash % BUCKETS];
    while (*link != e)
        link = &(*link)->next;
    *link = e->next;
    s->slot[e->slot] = NULL;
    s->bytes -= e->size;
    atomic_fetch_sub_explicit(&c->entries, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&c->bytes, e->size, memory_order_relaxed);
    encoded_entry_release(e);
}

/* Sweeps the CLOCK hand until it rests on a free slot with room for `size`
 * bytes, evicting entries not found since its last pass. Two turns of the ring
 * clear every mark and empty every slot, so the sweep is bounded. */
static bool make_room(encoded_cache *c, shard *s, size_t size)
{
    for (uint32_t step = 0; step <= 2 * SLOTS; step++) {
        encoded_entry *e = s->slot[s->hand];
        bool room = s->bytes + size <= c->shard_max;
        if (!e && room)
            return true;
        if (e && e->used) {
            e->used = false;
        } else if (e) {
            remove_entry(c, s, e);
            atomic_fetch_add_explicit(&c->evictions, 1, memory_order_relaxed);
            continue;   /* the slot is free now: look at it again */
        }
        s->hand = (s->hand + 1) % SLOTS;
    }
    return false;
}

encoded_entry *encoded_cache_put(encoded_cache *c, const encoded_key *key, const void *encoded,
                                 size_t len, const unsigned char **out)
{
    size_t size = sizeof(encoded_entry) + key->len + len;
    if (size > c->shard_max / 8)
        return NULL;
    encoded_entry *e = malloc(size);
    if (!e)
        return NULL;
    atomic_init(&e->refs, 2);   /* the cache's and the caller's */
    e->hash = key_hash(key);
    e->used = false;
    e->coding = key->coding;
    e->plain_crc = key->plain_crc;
    e->plain_len = key->plain_len;
    e->key_len = key->len;
    e->encoded_len = len;
    e->size = size;
    memcpy(e->bytes, key->bytes, key->len);
    memcpy(e->bytes + key->len, encoded, len);

    shard *s = shard_of(c, e->hash);
    pthread_mutex_lock(&s->lock);
    encoded_entry *old = *link_of(s, e->hash, key);
    if (old)
        remove_entry(c, s, old);
    if (!make_room(c, s, size)) {
        pthread_mutex_unlock(&s->lock);
        free(e);
        return NULL;
    }
    e->slot = s->hand;
    s->slot[s->hand] = e;
    s->hand = (s->hand + 1) % SLOTS;
    encoded_entry **chain = &s->bucket[e->hash % BUCKETS];
    e->next = *chain;
    *chain = e;
    s->bytes += size;
    pthread_mutex_unlock(&s->lock);
    atomic_fetch_add_explicit(&c->entries, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->bytes, size, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->stores, 1, memory_order_relaxed);
    *out = e->bytes + e->key_len;
    return e;
}

void encoded_cache_stats_of(const encoded_cache *c, encoded_cache_stats *out)
{
    encoded_cache *m = (encoded_cache *)c;   /* C11 atomic loads take non-const pointers */
    out->hits = atomic_load_explicit(&m->hits, memory_order_relaxed);
    out->misses = atomic_load_explicit(&m->misses, memory_order_relaxed);
    out->stores = atomic_load_explicit(&m->stores, memory_order_relaxed);
    out->evictions = atomic_load_explicit(&m->evictions, memory_order_relaxed);
    out->entries = atomic_load_explicit(&m->entries, memory_order_relaxed);
    out->bytes = atomic_load_explicit(&m->bytes, memory_order_relaxed);
    out->max_bytes = c->max_bytes;
}

size_t encoded_cache_render_metrics(const encoded_cache *c, char *out, size_t cap)
{
    encoded_cache_stats st;
    encoded_cache_stats_of(c, &st);
    int n = snprintf(out, cap,
                     "# HELP transitd_compressed_cache_hits_total Compressed bodies sent from the cache.\n"
                     "# TYPE transitd_compressed_cache_hits_total counter\n"
                     "transitd_compressed_cache_hits_total %llu\n"
                     "# HELP transitd_compressed_cache_misses_total Compressed bodies not in the cache "
                     "(compressed for the request).\n"
                     "# TYPE transitd_compressed_cache_misses_total counter\n"
                     "transitd_compressed_cache_misses_total %llu\n"
                     "# HELP transitd_compressed_cache_stores_total Compressed bodies stored.\n"
                     "# TYPE transitd_compressed_cache_stores_total counter\n"
                     "transitd_compressed_cache_stores_total %llu\n"
                     "# HELP transitd_compressed_cache_evictions_total Compressed bodies evicted for room.\n"
                     "# TYPE transitd_compressed_cache_evictions_total counter\n"
                     "transitd_compressed_cache_evictions_total %llu\n"
                     "# HELP transitd_compressed_cache_entries Compressed bodies held.\n"
                     "# TYPE transitd_compressed_cache_entries gauge\n"
                     "transitd_compressed_cache_entries %llu\n"
                     "# HELP transitd_compressed_cache_bytes Bytes the held bodies take.\n"
                     "# TYPE transitd_compressed_cache_bytes gauge\n"
                     "transitd_compressed_cache_bytes %llu\n"
                     "# HELP transitd_compressed_cache_max_bytes The bound on those bytes.\n"
                     "# TYPE transitd_compressed_cache_max_bytes gauge\n"
                     "transitd_compressed_cache_max_bytes %llu\n",
                     (unsigned long long)st.hits, (unsigned long long)st.misses,
                     (unsigned long long)st.stores, (unsigned long long)st.evictions,
                     (unsigned long long)st.entries, (unsigned long long)st.bytes,
                     (unsigned long long)st.max_bytes);
    return n > 0 ? (size_t)n : 0;
}
