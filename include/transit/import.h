/* import.h — `transitd import` as a library call: feed in, version activated.
 *
 * Why it exists: the import is more than the store writers. It hashes the
 * feed into a version name while the timetable builder and the two SQLite
 * writers run concurrently into a temporary directory, skips a feed that is
 * already built (dropping that build), verifies what was written, and only
 * then installs and activates it (datadir.h), so a failure or a kill at any
 * point leaves the previous version active. The CLI (cli_import.c) only parses options and prints what
 * this returns; tests and benchmarks can call it directly.
 */
#ifndef TRANSIT_IMPORT_H
#define TRANSIT_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "transit/datadir.h"
#include "transit/diag.h"
#include "transit/import_guard.h"
#include "transit/query.h"
#include "transit/store_write.h"
#include "transit/timetable.h"

typedef enum import_phase {
    IMPORT_PHASE_HASH,       /* feed_open + sha256: beside the timetable (first on the
                                store thread), or before anything when a version here
                                may be the feed's (import.c) */
    IMPORT_PHASE_TIMETABLE,  /* timetable.bin (parse + build + write) */
    IMPORT_PHASE_SCHEDULE,   /* schedule.sqlite */
    IMPORT_PHASE_SHAPES,     /* shapes.sqlite */
    IMPORT_PHASE_LIVE,       /* live.sqlite ensured */
    IMPORT_PHASE_VERIFY,     /* fsync + dataset_open of the new version */
    IMPORT_PHASE_ACTIVATE,   /* marker, rename, switch `current` */
    IMPORT_PHASE_PRUNE,      /* old versions and leftovers removed */
    IMPORT_PHASE_COUNT
} import_phase;

/* The GTFS files whose rows the summary reports, in display order. */
typedef enum import_file {
    IMPORT_FILE_AGENCY,
    IMPORT_FILE_STOPS,
    IMPORT_FILE_ROUTES,
    IMPORT_FILE_TRIPS,
    IMPORT_FILE_STOP_TIMES,
    IMPORT_FILE_CALENDAR,
    IMPORT_FILE_CALENDAR_DATES,
    IMPORT_FILE_FREQUENCIES,
    IMPORT_FILE_TRANSFERS,
    IMPORT_FILE_FEED_INFO,
    IMPORT_FILE_SHAPES,
    IMPORT_FILE_COUNT
} import_file;

typedef struct import_result import_result;

/* Called when a phase completes, from the thread that ran it (calls are
 * serialised). It may read the fields that phase filled. */
typedef void (*import_phase_fn)(void *ctx, import_phase phase, const import_result *r);

typedef struct import_options {
    const char *feed_path;
    const char *data_dir;
    /* The version's SHA-256 (64 hex digits) when the caller names it, or
     * NULL: the feed's own (feed_sha256). A merge (feed_merge.h) names the
     * hash of its feeds' names and hashes instead of hashing its output. */
    const char *sha256;
    bool force;              /* rebuild even when the version is already active, and
                                activate even when the guard (import_guard.h) refuses */
    /* The guard's limits in percent; when not set, IMPORT_GUARD_DEFAULT_*. */
    bool max_drop_set, max_shrink_set;
    double max_drop_pct, max_shrink_pct;
    bool wait_for_lock;      /* wait for a concurrent import instead of failing */
    int keep_versions;       /* 0: DATADIR_KEEP_VERSIONS */
    uint64_t memory_budget;  /* bytes the stop_times rows may hold (0: TIMETABLE_MEMORY_BUDGET) */
    import_phase_fn on_phase;
    /* Live progress of the files the timetable reads (may be NULL); called on
     * the importing thread. */
    timetable_progress_fn on_progress;
    /* Called once before blocking on another import's lock (may be NULL). */
    void (*on_lock_wait)(void *ctx, const char *lock_path);
    void *ctx;
} import_options;

struct import_result {
    char version[DATADIR_VERSION_LEN + 1];
    char previous[DATADIR_VERSION_LEN + 1];  /* active before this import, or "" */
    bool noop;        /* the version was already active and complete */
    bool reused;      /* an already built, complete version was re-activated */
    bool shapes_reused;  /* shapes.sqlite was taken from the active version, its inputs unchanged */
    bool activated;   /* DATA/current now points at `version` */
    bool refused;     /* the guard refused activation (the message is in err) */
    double seconds;   /* wall time of the whole import */
    double phase_seconds[IMPORT_PHASE_COUNT];
    bool phase_done[IMPORT_PHASE_COUNT];
    int64_t file_bytes[IMPORT_FILE_COUNT];   /* uncompressed size, -1 when absent */
    timetable_stats timetable;
    store_stats schedule, shapes;
    uint64_t timetable_bytes, schedule_bytes, shapes_bytes, live_bytes;
    dataset_counts counts;     /* of the active version, when have_counts */
    bool have_counts;
    datadir_prune_result pruned;
    diag diag;                 /* bad rows of all writers, merged (import.c) */
};

void import_result_init(import_result *r);
void import_result_destroy(import_result *r);

/* Runs the import. Returns 0 (activated, or a no-op), or -1 with a message
 * in err; on -1 nothing outside the temporary directory has changed unless
 * the failure came after activation (then r->activated is true). A version
 * the guard refuses is removed again, never installed: r->refused is set. */
int import_run(const import_options *o, import_result *r, char *err, size_t errlen);

const char *import_phase_name(import_phase p);      /* "timetable", "schedule", ... */
const char *import_file_name(import_file f);        /* "stop_times.txt", ... */
/* Data rows read from a file (0 when it was absent). */
uint64_t import_file_rows(const import_result *r, import_file f);

#endif
