/* import_hold.c — the schedule writer held until the timetable builder has
 * read a given file, for tests and benchmarks (see import_hold.h).
 *
 * Why it exists: to place the import's two threads against each other on
 * purpose when measuring its peak memory, instead of where the machine's
 * load happens to put them.
 */
#include "import/import_hold.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool import_hold_init(import_hold *h, timetable_progress_fn forward, void *forward_ctx)
{
    memset(h, 0, sizeof *h);
    const char *file = getenv("TRANSITD_TEST_SCHEDULE_AFTER");
    if (!file || !file[0] || strlen(file) >= sizeof h->file)
        return false;
    if (pthread_mutex_init(&h->lock, NULL) != 0)
        return false;
    if (pthread_cond_init(&h->changed, NULL) != 0) {
        pthread_mutex_destroy(&h->lock);
        return false;
    }
    snprintf(h->file, sizeof h->file, "%s", file);
    h->forward = forward;
    h->forward_ctx = forward_ctx;
    return true;
}

void import_hold_release(import_hold *h)
{
    pthread_mutex_lock(&h->lock);
    h->released = true;
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
}

void import_hold_progress(void *ctx, const char *file, uint64_t bytes_done, uint64_t bytes_total,
                          uint64_t rows, double seconds, bool finished)
{
    import_hold *h = ctx;
    if (h->forward)
        h->forward(h->forward_ctx, file, bytes_done, bytes_total, rows, seconds, finished);
    if (finished && file && strcmp(file, h->file) == 0)
        import_hold_release(h);
}

void import_hold_wait(import_hold *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    while (!h->released)
        pthread_cond_wait(&h->changed, &h->lock);
    pthread_mutex_unlock(&h->lock);
}

void import_hold_destroy(import_hold *h)
{
    pthread_cond_destroy(&h->changed);
    pthread_mutex_destroy(&h->lock);
}
