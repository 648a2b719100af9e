/* body_pool.h — response body buffers handed to the HTTP library without a
 * copy, and recycled when it is done with them.
 *
 * Why it exists: a /v1/departures body is about 17 KB. Handing libmicrohttpd
 * a copy (MHD_RESPMEM_MUST_COPY) costs a malloc, a 17 KB memcpy and a free
 * per request. Instead the request's JSON writer gives its buffer to the
 * response and takes an idle one from this pool; libmicrohttpd's free
 * callback returns the buffer when the last byte is sent. In the steady state
 * the same few buffers (one per request in flight plus one per thread)
 * circulate and nothing is allocated or copied.
 *
 * Thread-safe: the callback may run on any daemon thread.
 */
#ifndef TRANSIT_BODY_POOL_H
#define TRANSIT_BODY_POOL_H

#include <stddef.h>

typedef struct body_pool body_pool;

/* A buffer on its way out: `buf` holds the body, `cap` its allocated size. */
typedef struct body_buffer {
    char *buf;
    size_t cap;
    body_pool *pool;
    struct body_buffer *next;   /* in the pool's idle list */
} body_buffer;

/* Keeps at most `max_idle` idle buffers, each of at most `max_cap` bytes;
 * anything beyond is freed when returned. NULL when out of memory. */
body_pool *body_pool_new(size_t max_idle, size_t max_cap);
/* Frees the pool and its idle buffers. Buffers still out must have been
 * returned first (stop the HTTP daemon before freeing its pool). */
void body_pool_free(body_pool *p);

/* An idle buffer (possibly with buf NULL and cap 0, to be filled by the
 * caller), or NULL when out of memory. */
body_buffer *body_pool_take(body_pool *p);
/* Returns a buffer taken from the pool; its `buf` is kept or freed. */
void body_pool_give(body_buffer *b);

/* Buffers currently kept idle, for tests. */
size_t body_pool_idle(body_pool *p);

#endif
