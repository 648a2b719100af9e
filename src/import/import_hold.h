/* import_hold.h — for tests and benchmarks: the schedule writer held until
 * the timetable builder has read a given file.
 *
 * Why it exists: the import's two threads meet wherever their timing puts
 * them, and its peak memory is the sum of what both hold at that moment
 * (issue #28: 1.4 to 2.1 GB at 64 copies of Brooklyn, by which thread ran
 * ahead). To measure a given meeting on purpose rather than by chance,
 * TRANSITD_TEST_SCHEDULE_AFTER=FILE (e.g. stop_times.txt) makes the store
 * thread wait, after the hash and before schedule.sqlite, until the builder
 * reports FILE read (or ends): the writer then runs beside the builder's
 * next phase (after stop_times.txt, the layout of timetable.bin, its
 * peak). Unset, nothing waits and progress goes straight through.
 */
#ifndef TRANSIT_IMPORT_HOLD_H
#define TRANSIT_IMPORT_HOLD_H

#include <pthread.h>
#include <stdbool.h>

#include "transit/timetable.h"

typedef struct import_hold {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    char file[64];                   /* "" when nothing is held */
    bool released;
    timetable_progress_fn forward;   /* the import's own progress, or NULL */
    void *forward_ctx;
} import_hold;

/* Reads TRANSITD_TEST_SCHEDULE_AFTER. Returns whether a hold is set (then
 * the builder's progress must go through import_hold_progress, and
 * import_hold_destroy be called). */
bool import_hold_init(import_hold *h, timetable_progress_fn forward, void *forward_ctx);
/* A timetable_progress_fn (ctx: the hold): forwards, and releases the hold
 * once its file is read. */
void import_hold_progress(void *ctx, const char *file, uint64_t bytes_done, uint64_t bytes_total,
                          uint64_t rows, double seconds, bool finished);
/* Releases it whatever was read (the builder ended). */
void import_hold_release(import_hold *h);
/* Waits until released; NULL: returns at once. */
void import_hold_wait(import_hold *h);
void import_hold_destroy(import_hold *h);

#endif
