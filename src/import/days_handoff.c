/* days_handoff.c — one computation of the services' days, shared by the
 * two store writers of an import (see days_handoff.h).
 *
 * Why it exists: the hand-over between the timetable builder's thread and
 * the schedule writer's, with its copy, so neither waits on the other's
 * memory and nothing is shared while it can still change.
 */
#include "import/days_handoff.h"

#include <stdlib.h>
#include <string.h>

int days_handoff_init(days_handoff *h)
{
    memset(h, 0, sizeof *h);
    if (pthread_mutex_init(&h->lock, NULL) != 0)
        return -1;
    if (pthread_cond_init(&h->changed, NULL) != 0) {
        pthread_mutex_destroy(&h->lock);
        return -1;
    }
    h->state = DAYS_PENDING;
    return 0;
}

void days_handoff_destroy(days_handoff *h)
{
    traffic_days_free(&h->days);
    strmap_free(&h->ids);
    pthread_cond_destroy(&h->changed);
    pthread_mutex_destroy(&h->lock);
}

static void set_state(days_handoff *h, int state)
{
    pthread_mutex_lock(&h->lock);
    if (h->state == DAYS_PENDING) {
        h->state = state;
        pthread_cond_broadcast(&h->changed);
    }
    pthread_mutex_unlock(&h->lock);
}

void days_handoff_publish(days_handoff *h, const traffic_days *td, const strmap *ids)
{
    uint32_t nservices = ids->count;
    size_t nwords = (size_t)td->nsets * td->words;
    strmap copy;
    uint64_t *sets = malloc((nwords + 1) * sizeof *sets);
    uint32_t *set_of = malloc(((size_t)nservices + 1) * sizeof *set_of);
    if (strmap_copy(&copy, ids, 0) != 0 || !sets || !set_of) {
        strmap_free(&copy);
        free(sets);
        free(set_of);
        set_state(h, DAYS_NONE);
        return;
    }
    memcpy(sets, td->sets, nwords * sizeof *sets);
    memcpy(set_of, td->set_of, (size_t)nservices * sizeof *set_of);
    pthread_mutex_lock(&h->lock);
    if (h->state == DAYS_PENDING) {
        h->days = *td;
        h->days.sets = sets;
        h->days.set_of = set_of;
        h->ids = copy;
        h->nservices = nservices;
        h->state = DAYS_READY;
        pthread_cond_broadcast(&h->changed);
        memset(&copy, 0, sizeof copy);
        sets = NULL;
        set_of = NULL;
    }
    pthread_mutex_unlock(&h->lock);
    strmap_free(&copy);
    free(sets);
    free(set_of);
}

void days_handoff_withdraw(days_handoff *h)
{
    set_state(h, DAYS_NONE);
}

const days_handoff *days_handoff_wait(days_handoff *h)
{
    pthread_mutex_lock(&h->lock);
    while (h->state == DAYS_PENDING)
        pthread_cond_wait(&h->changed, &h->lock);
    int state = h->state;
    pthread_mutex_unlock(&h->lock);
    return state == DAYS_READY ? h : NULL;
}
