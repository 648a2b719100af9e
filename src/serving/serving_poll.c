/* serving_poll.c — the GTFS-Realtime polling thread; see serving.h ("polling"). */
#include "transit/serving.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct serving_poller {
    serving *state;
    unsigned interval_s;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;         /* on CLOCK_MONOTONIC */
    bool stopping;               /* under lock */
};

static void *poll_loop(void *arg)
{
    serving_poller *p = arg;
    char last_err[1024] = "";
    for (;;) {
        char err[1024];
        serving_poll_realtime(p->state, (int64_t)time(NULL), err, sizeof err);
        /* one line when sources start failing and when the reasons change is
         * enough; /metrics and /readyz count and say every failure. The
         * messages name sources by label: no credentials, no query string */
        if (!err[0] && last_err[0])
            fprintf(stderr, "transitd: realtime: every source answers again\n");
        else if (err[0] && strcmp(err, last_err) != 0)
            fprintf(stderr, "transitd: realtime: %s; keeping the last good feed of each\n", err);
        snprintf(last_err, sizeof last_err, "%s", err);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += p->interval_s;
        pthread_mutex_lock(&p->lock);
        while (!p->stopping && pthread_cond_timedwait(&p->wake, &p->lock, &until) != ETIMEDOUT)
            ;
        bool stop = p->stopping;
        pthread_mutex_unlock(&p->lock);
        if (stop)
            return NULL;
    }
}

serving_poller *serving_poller_start(serving *s, unsigned interval_s)
{
    if (!serving_realtime(s))
        return NULL;
    serving_poller *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->state = s;
    p->interval_s = interval_s ? interval_s : 1;
    /* a hanging source must not hold the others' feeds past an interval */
    rt_ingest_set_poll_wait(serving_realtime(s), p->interval_s * 1000u);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&p->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&p->lock, NULL);
    if (pthread_create(&p->thread, NULL, poll_loop, p) != 0) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
    }
    return p;
}

void serving_poller_stop(serving_poller *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
