/* timetable.h — building timetable.bin, the hot-path store.
 *
 * Why it exists: departures and nearby questions must be answered from one
 * position-independent file that the server maps read-only, without SQLite and
 * without allocation. This is the book's packed stop-time file, made exact:
 * stops with a spatial grid, trip patterns and time profiles instead of 3M
 * row copies, per-service date bitmaps, a per-day table of "noon minus 12h"
 * instants, the zone's UTC offset transitions, and a string table.
 * The format is documented in docs/timetable-format.md; the reader side is
 * query.h (dataset_open).
 */
#ifndef TRANSIT_TIMETABLE_H
#define TRANSIT_TIMETABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "transit/diag.h"
#include "transit/feed.h"

typedef struct timetable_stats {
    /* data rows read, by file */
    uint64_t agency, stops, routes, trips, stop_times, calendar, calendar_dates, frequencies;
    /* what was written */
    uint32_t nstops, nroutes, ntrips, nruns, npatterns, ngroups, nservices;
    uint64_t stop_times_kept;    /* stop_times rows that made it into the timetable */
    uint64_t bytes;              /* size of timetable.bin */
    double parse_seconds, build_seconds, write_seconds;
    char timezone[64];
} timetable_stats;

/* Live progress while a file is read: called on the building thread every
 * few MB and once when the file is done (finished = true). */
typedef void (*timetable_progress_fn)(void *ctx, const char *file, uint64_t bytes_done, uint64_t bytes_total,
                                      uint64_t rows, double seconds, bool finished);

struct days_handoff;

typedef struct timetable_options {
    timetable_progress_fn progress;   /* may be NULL */
    void *progress_ctx;
    /* When not NULL: the services' days are published there as soon as the
     * calendars are read, or withdrawn when they will not be (the importer's
     * schedule.sqlite writer waits on it; src/import/days_handoff.h). */
    struct days_handoff *days_out;
    /* A calendar_dates.txt of more bytes than this (0: 1 MiB) is read on a
     * thread of its own beside trips and stop_times; a smaller one first,
     * as any other file. */
    uint64_t dates_beside_bytes;
    /* The bytes the stop_times rows may hold at once (0: TIMETABLE_MEMORY_BUDGET).
     * A feed grouped by trip holds one trip's rows; one that is not holds
     * them all, and is refused with a message when they would exceed it. */
    uint64_t memory_budget;
} timetable_options;

/* 1.5 GiB */
#define TIMETABLE_MEMORY_BUDGET ((uint64_t)3 << 29)

/* Reads agency, stops, routes, trips, stop_times, calendar, calendar_dates and
 * frequencies from the feed and writes `path` (fsynced). Bad rows are counted
 * in `d` and skipped. Returns 0, or -1 with a message in err for a fatal
 * problem: a missing required file or column, an invalid timezone, a feed with
 * no usable trips, an I/O error. */
int timetable_build(const feed_t *feed, const char *path, const timetable_options *opt, diag *d,
                    timetable_stats *st, char *err, size_t errlen);

#endif
