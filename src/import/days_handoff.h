/* days_handoff.h — the services' days, computed once by the timetable
 * builder and handed to the schedule.sqlite writer on the other thread.
 *
 * Why it exists: both stores need every service's day set, and a feed with
 * day-by-day calendars has millions of calendar_dates rows. Read twice (once
 * per store, on a 2-core machine) they cost as much as a third of
 * stop_times.txt. The timetable builder reads calendar_dates.txt (a big
 * one on a thread of its own beside trips and stop_times, gtfs_read.c), publishes a
 * copy of the result here as soon as it has it, and the schedule writer
 * (which reads stops meanwhile) waits for it. When the builder stops before
 * that, it says none is coming, and the writer reads the calendars itself.
 */
#ifndef TRANSIT_DAYS_HANDOFF_H
#define TRANSIT_DAYS_HANDOFF_H

#include <pthread.h>
#include <stdint.h>

#include "base/strmap.h"
#include "import/traffic_days.h"

enum { DAYS_PENDING, DAYS_READY, DAYS_NONE };

typedef struct days_handoff {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int state;
    /* DAYS_READY: read-only from then on */
    traffic_days days;         /* a copy of the builder's */
    strmap ids;                /* the service_ids: entry i is service i, its value i */
    uint32_t nservices;
} days_handoff;

int days_handoff_init(days_handoff *h);   /* 0 or -1 */
void days_handoff_destroy(days_handoff *h);
/* Copies td and the service_ids (entry i of ids is service i, as the
 * builder's map has them: copied whole, not hashed again); DAYS_READY. When
 * out of memory, DAYS_NONE instead. */
void days_handoff_publish(days_handoff *h, const traffic_days *td, const strmap *ids);
/* None is coming (a no-op once published). */
void days_handoff_withdraw(days_handoff *h);
/* Waits for the builder: the handoff when DAYS_READY, else NULL. */
const days_handoff *days_handoff_wait(days_handoff *h);

#endif
