/* diag.h — the import's account of what it skipped and why.
 *
 * Why it exists: a bad row must never stop an import or vanish silently. Each
 * problem is counted by kind, and the first examples are kept as
 * "file:line: message" so the user can fix the feed. Several store writers run
 * on different threads and share one diag, so it is internally locked; the
 * lock is taken only on the (rare) bad-row path.
 */
#ifndef TRANSIT_DIAG_H
#define TRANSIT_DIAG_H

#include <stdint.h>
#include <stdarg.h>
#include <pthread.h>

typedef enum diag_kind {
    DIAG_BAD_TIME,
    DIAG_BAD_DATE,
    DIAG_BAD_NUMBER,
    DIAG_BAD_COORDINATE,
    DIAG_UNKNOWN_STOP,
    DIAG_UNKNOWN_TRIP,
    DIAG_UNKNOWN_ROUTE,
    DIAG_UNKNOWN_SERVICE,
    DIAG_UNKNOWN_AGENCY,
    DIAG_DUPLICATE_ID,
    DIAG_MISSING_VALUE,
    DIAG_BAD_SEQUENCE,     /* stop_sequence order, times going backwards */
    DIAG_UNTIMED_TRIP,     /* a trip whose first or last stop has no time */
    DIAG_IGNORED_FILE,     /* a file the importer does not read (a note) */
    DIAG_BAD_VALUE,        /* an enum field out of range, and the like */
    DIAG_BAD_ROW,          /* a CSV record with too few fields or a NUL byte */
    DIAG_KIND_COUNT
} diag_kind;

#define DIAG_EXAMPLES 10

/* examples[0..nexamples) are "file:line: message" strings, valid UTF-8, in the
 * order they were found. While there is room every problem adds one; once
 * full, a problem of a kind that has no example yet replaces the latest
 * example of a kind that has several, so up to DIAG_EXAMPLES kinds each keep
 * at least one. */
typedef struct diag {
    pthread_mutex_t lock;
    uint64_t count[DIAG_KIND_COUNT];
    int nexamples;
    char examples[DIAG_EXAMPLES][200];
    uint8_t example_kind[DIAG_EXAMPLES];   /* the kind of each example */
} diag;

void diag_init(diag *d);
void diag_destroy(diag *d);
/* Counts one problem of `kind` at file:line (line 0: whole file). */
void diag_add(diag *d, diag_kind kind, const char *file, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
uint64_t diag_total(const diag *d);

/* Everything a diag holds at one moment, to go back to: a file read once
 * more (a feed found not to be in the order a streaming read needs) must
 * count its problems once. */
typedef struct diag_mark {
    uint64_t count[DIAG_KIND_COUNT];
    int nexamples;
    char examples[DIAG_EXAMPLES][200];
    uint8_t example_kind[DIAG_EXAMPLES];
} diag_mark;
void diag_mark_take(diag *d, diag_mark *m);
void diag_mark_restore(diag *d, const diag_mark *m);      /* all kinds except notes (DIAG_IGNORED_FILE) */
const char *diag_kind_name(diag_kind k); /* "bad_time", "unknown_stop", ... */

#endif
