/* store_write.h — writing a version's SQLite stores from a feed.
 *
 * Why it exists: the import builds schedule.sqlite and shapes.sqlite beside
 * timetable.bin, reading the feed's files itself (src/import/schedule_write.c,
 * shapes_write.c, sqlite_write.c); the server only reads them (stores.h).
 */
#ifndef TRANSIT_STORE_WRITE_H
#define TRANSIT_STORE_WRITE_H

#include <stddef.h>
#include <stdint.h>
#include "transit/diag.h"
#include "transit/feed.h"

typedef struct store_stats {
    /* data rows read per file (header excluded), by GTFS file */
    uint64_t agency, stops, routes, trips, calendar, calendar_dates, frequencies, transfers,
        feed_info, shapes;
    uint64_t bytes;      /* size of the written file */
    double seconds;      /* wall time of the write */
} store_stats;

/* Writes schedule.sqlite at `path` (which must not exist) from the feed, in
 * one transaction with prepared statements. Bad rows are counted in `d` and
 * skipped. Returns 0, or -1 with a message in err for a fatal problem
 * (missing required file or column, I/O). The file is fsynced. */
int schedule_store_write(const feed_t *feed, const char *path, diag *d, store_stats *st,
                         char *err, size_t errlen);
/* The same, taking the services' days from the timetable builder running on
 * another thread (src/import/days_handoff.h) instead of reading
 * calendar_dates.txt again; when the builder withdraws them, reads it. */
struct days_handoff;
int schedule_store_write_days(const feed_t *feed, const char *path, struct days_handoff *days, diag *d,
                              store_stats *st, char *err, size_t errlen);
/* trips.txt out of trip_id order is sorted in memory up to this many rows
 * (a city's feed: about 64 bytes a row), beyond them on disk by SQLite, so
 * that a national feed's trips are never held (src/import/schedule_write_trips.c).
 * Tests set it to 0 to take the disk's path. */
extern uint64_t schedule_trips_sorted_in_memory_max;
/* Writes shapes.sqlite at `path`. A feed without shapes.txt gives an empty
 * but valid database. */
int shapes_store_write(const feed_t *feed, const char *path, diag *d, store_stats *st,
                       char *err, size_t errlen);
/* shapes.sqlite's format number (its user_version): a new one makes every
 * recorded input digest stale (import/store_reuse.h). */
int shapes_store_format(void);

#endif
