/* request_deadline.m — the registry of open connections and the sweeper
 * that closes the ones whose request does not arrive in time.
 *
 * Why it exists: see request_deadline.h.
 */
#import "request_deadline.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SWEEP_MS 250
/* At most one log line per this many seconds while slow clients are closed. */
#define LOG_EVERY_S 10

struct td_deadlines {
    pthread_mutex_t lock;        /* guards the list, and the sockets in it */
    td_conn *head;
    uint64_t first_us, next_us;  /* deadline lengths: first request, after a response */
    pthread_t sweeper;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stopping, sweeping;
    uint64_t closed;             /* (__atomic) */
};

static uint64_t monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void td_deadlines_add(td_deadlines *dl, td_conn *conn, int fd)
{
    conn->fd = fd;
    conn->prev = NULL;
    __atomic_store_n(&conn->deadline_us, monotonic_us() + dl->first_us, __ATOMIC_RELAXED);
    pthread_mutex_lock(&dl->lock);
    conn->next = dl->head;
    if (dl->head)
        dl->head->prev = conn;
    dl->head = conn;
    pthread_mutex_unlock(&dl->lock);
}

void td_deadlines_remove(td_deadlines *dl, td_conn *conn)
{
    pthread_mutex_lock(&dl->lock);
    if (conn->prev)
        conn->prev->next = conn->next;
    else if (dl->head == conn)
        dl->head = conn->next;
    if (conn->next)
        conn->next->prev = conn->prev;
    conn->prev = conn->next = NULL;
    pthread_mutex_unlock(&dl->lock);
}

uint64_t td_deadlines_closed(const td_deadlines *dl)
{
    return __atomic_load_n(&dl->closed, __ATOMIC_RELAXED);
}

/* One pass: starts the deadlines of connections that finished a response,
 * and shuts down the sockets of those past theirs. */
static unsigned sweep(td_deadlines *dl, uint64_t now)
{
    unsigned n = 0;
    pthread_mutex_lock(&dl->lock);
    for (td_conn *c = dl->head; c; c = c->next) {
        uint64_t d = __atomic_load_n(&c->deadline_us, __ATOMIC_RELAXED);
        if (d == TD_DEADLINE_AWAIT_NEXT) {
            /* fails harmlessly when the next request completed meanwhile */
            __atomic_compare_exchange_n(&c->deadline_us, &d, now + dl->next_us, false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        } else if (d != 0 && d <= now) {
            /* libmicrohttpd reads the end of the stream and closes it */
            shutdown(c->fd, SHUT_RDWR);
            __atomic_store_n(&c->deadline_us, 0, __ATOMIC_RELAXED);
            n++;
        }
    }
    pthread_mutex_unlock(&dl->lock);
    return n;
}

static void *sweeper_main(void *arg)
{
    td_deadlines *dl = arg;
    uint64_t unlogged = 0, logged_at = 0;
    pthread_mutex_lock(&dl->stop_lock);
    while (!dl->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += SWEEP_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&dl->stop_cond, &dl->stop_lock, &until);
        if (dl->stopping)
            break;
        pthread_mutex_unlock(&dl->stop_lock);
        uint64_t now = monotonic_us();
        unsigned n = sweep(dl, now);
        if (n) {
            __atomic_fetch_add(&dl->closed, n, __ATOMIC_RELAXED);
            unlogged += n;
        }
        if (unlogged && now - logged_at >= LOG_EVERY_S * 1000000ull) {
            fprintf(stderr, "transitd: closed %llu connection(s) that did not send a complete "
                            "request in time (--header-timeout %llu s)\n",
                    (unsigned long long)unlogged, (unsigned long long)(dl->first_us / 1000000u));
            unlogged = 0;
            logged_at = now;
        }
        pthread_mutex_lock(&dl->stop_lock);
    }
    pthread_mutex_unlock(&dl->stop_lock);
    return NULL;
}

td_deadlines *td_deadlines_start(unsigned header_timeout_s, unsigned idle_timeout_s, char *err,
                                 size_t errlen)
{
    td_deadlines *dl = calloc(1, sizeof *dl);
    if (!dl) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    dl->first_us = (uint64_t)header_timeout_s * 1000000u;
    dl->next_us = ((uint64_t)idle_timeout_s + header_timeout_s) * 1000000u;
    pthread_mutex_init(&dl->lock, NULL);
    pthread_mutex_init(&dl->stop_lock, NULL);
    pthread_cond_init(&dl->stop_cond, NULL);
    int rc = pthread_create(&dl->sweeper, NULL, sweeper_main, dl);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the request deadline thread: %s", strerror(rc));
        td_deadlines_free(dl);
        return NULL;
    }
    dl->sweeping = true;
    return dl;
}

void td_deadlines_stop_sweeping(td_deadlines *dl)
{
    if (!dl->sweeping)
        return;
    pthread_mutex_lock(&dl->stop_lock);
    dl->stopping = true;
    pthread_cond_signal(&dl->stop_cond);
    pthread_mutex_unlock(&dl->stop_lock);
    pthread_join(dl->sweeper, NULL);
    dl->sweeping = false;
}

void td_deadlines_free(td_deadlines *dl)
{
    if (!dl)
        return;
    td_deadlines_stop_sweeping(dl);
    pthread_cond_destroy(&dl->stop_cond);
    pthread_mutex_destroy(&dl->stop_lock);
    pthread_mutex_destroy(&dl->lock);
    free(dl);
}
