/* import_guard.h — whether a freshly built version may replace the active one.
 *
 * Why it exists: a broken feed (a shifted column, a bad export) can still
 * parse, losing most of its rows as "bad rows", and an import used to
 * activate whatever was left over a good dataset. This check runs after the
 * new version is built and verified, before it is installed: it refuses
 * activation when too large a share of a file's rows was dropped, or when
 * the new version is much smaller than the active one. It is a pure function
 * of counts, so it is tested without feeds; import.c feeds it the numbers.
 */
#ifndef TRANSIT_IMPORT_GUARD_H
#define TRANSIT_IMPORT_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Defaults, in percent. Every real feed under ../shared/gtfs drops 0 rows in
 * the checked files; a feed losing more than 5 % of one file's rows is broken
 * rather than quirky. A schedule that loses more than half of its stops,
 * trips or stop times from one import to the next is far more often a
 * truncated export than a real service change (which --force lets through). */
#define IMPORT_GUARD_DEFAULT_MAX_DROP_PCT 5.0
/* A file that dropped this many rows or fewer is never refused, whatever the
 * share: a hand-made feed of a few rows with one typo is not a broken
 * export, and the rows are reported as problems anyway. */
#define IMPORT_GUARD_MIN_DROPPED_ROWS 10
#define IMPORT_GUARD_DEFAULT_MAX_SHRINK_PCT 50.0

/* The files whose dropped rows are checked: rows read vs rows kept. */
typedef enum import_guard_file {
    IMPORT_GUARD_STOPS,
    IMPORT_GUARD_ROUTES,
    IMPORT_GUARD_TRIPS,
    IMPORT_GUARD_STOP_TIMES,
    IMPORT_GUARD_FILE_COUNT
} import_guard_file;

/* The counts the shrink check compares. */
typedef struct import_guard_size {
    uint64_t stops, trips, stop_times;
} import_guard_size;

typedef struct import_guard_input {
    bool have_rows;                           /* false for a re-activated version */
    uint64_t read[IMPORT_GUARD_FILE_COUNT];   /* data rows in the file */
    uint64_t kept[IMPORT_GUARD_FILE_COUNT];   /* rows in the new version */
    bool have_previous;                       /* an active version to compare with */
    import_guard_size previous, next;
    const char *previous_version;             /* for the message ("" or NULL: none) */
} import_guard_input;

typedef struct import_guard_limits {
    double max_drop_pct;     /* 0..100; 100 never refuses */
    double max_shrink_pct;   /* 0..100; 100 never refuses */
} import_guard_limits;

/* Returns 0 when activation may go ahead, 1 when it is refused; then msg holds
 * one "; "-separated clause per reason (a file counts when it dropped more
 * than IMPORT_GUARD_MIN_DROPPED_ROWS rows and more than max_drop_pct of them), e.g. "stops.txt: 412 of 416 rows
 * dropped (99.0 %) > --max-drop 5 %", followed by "; not activated, current
 * stays <v>; use --force to activate anyway". */
int import_guard_check(const import_guard_input *in, const import_guard_limits *lim, char *msg,
                       size_t msglen);

const char *import_guard_file_name(import_guard_file f);   /* "stops.txt", ... */

#endif
