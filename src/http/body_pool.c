/* body_pool.c — recycled response body buffers; see body_pool.h.
 *
 * A mutex-guarded stack of idle buffers: taking and giving are a push or a
 * pop, uncontended in practice (each daemon thread takes one buffer per
 * response and gives one back when a response is finished).
 */
#include "transit/body_pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct body_pool {
    pthread_mutex_t lock;
    body_buffer *idle;
    size_t nidle, max_idle, max_cap;
};

body_pool *body_pool_new(size_t max_idle, size_t max_cap)
{
    body_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return NULL;
    }
    p->max_idle = max_idle;
    p->max_cap = max_cap;
    return p;
}

void body_pool_free(body_pool *p)
{
    if (!p)
        return;
    body_buffer *b = p->idle;
    while (b) {
        body_buffer *next = b->next;
        free(b->buf);
        free(b);
        b = next;
    }
    pthread_mutex_destroy(&p->lock);
    free(p);
}

body_buffer *body_pool_take(body_pool *p)
{
    pthread_mutex_lock(&p->lock);
    body_buffer *b = p->idle;
    if (b) {
        p->idle = b->next;
        p->nidle--;
    }
    pthread_mutex_unlock(&p->lock);
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b)
            return NULL;
        b->pool = p;
    }
    b->next = NULL;
    return b;
}

void body_pool_give(body_buffer *b)
{
    if (!b)
        return;
    body_pool *p = b->pool;
    if (b->cap > p->max_cap) {
        free(b->buf);
        b->buf = NULL;
        b->cap = 0;
    }
    pthread_mutex_lock(&p->lock);
    bool keep = p->nidle < p->max_idle;
    if (keep) {
        b->next = p->idle;
        p->idle = b;
        p->nidle++;
    }
    pthread_mutex_unlock(&p->lock);
    if (!keep) {
        free(b->buf);
        free(b);
    }
}

size_t body_pool_idle(body_pool *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->nidle;
    pthread_mutex_unlock(&p->lock);
    return n;
}
