/* live_store.h — DATA/live.sqlite opened for reading and writing alerts.
 *
 * Why it exists: alerts are written while the server runs and must outlive
 * feed versions and restarts. Every write is one SQLite transaction (WAL) that
 * checks the client's precondition against the stored revision, takes the
 * next value of a store-wide generation as the alert's new revision, and
 * stores the canonical content with the rows that index it (entities,
 * periods). The generation is also what tells a server that its alerts, or
 * another process's writes, changed. One connection, guarded by a mutex: the
 * callers are server threads.
 */
#ifndef TRANSIT_LIVE_STORE_H
#define TRANSIT_LIVE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "transit/alert.h"

#define LIVE_ALERTS_MAX 10000
#define LIVE_CONDITION_TAGS 8

typedef struct live_store live_store;

/* Opens (creating or upgrading the schema of) DATA/live.sqlite. */
/* Creates DATA/live.sqlite (WAL) if absent; never touches an existing one's
 * data. */
int live_store_ensure(const char *data_dir, char *err, size_t errlen);
live_store *live_store_open(const char *data_dir, char *err, size_t errlen);
void live_store_close(live_store *ls);

/* Every stored alert, ordered by id (bytes), each with one reference for the
 * caller, and the store's generation. An alert whose content no longer checks
 * is left in the file, skipped and reported through `warn`. Returns 0 or -1. */
typedef void (*live_warn_fn)(void *ctx, const char *message);
int live_store_load(live_store *ls, alert ***alerts, uint32_t *count, int64_t *generation,
                    live_warn_fn warn, void *warn_ctx, char *err, size_t errlen);
void live_alerts_free(alert **alerts, uint32_t count);

/* Whether another connection committed since the last call (PRAGMA
 * data_version): the cue to load again. */
bool live_store_changed_elsewhere(live_store *ls);

/* Copies committed pages from the WAL into the database (PASSIVE, on a
 * connection of its own), which writes never do themselves; call it now and
 * then (the server: once a second). When this process's writers appended
 * meanwhile, a second pass holding their lock copies the rest, so the WAL
 * starts over and stays bounded however steady the writes. Returns how many
 * frames of the WAL are now in the database file: 0 when another process
 * held the WAL busy (the next call copies them), -1 on an error. */
int live_store_checkpoint(live_store *ls);

/* HTTP preconditions (RFC 9110 §13.1), checked inside the write transaction
 * against the stored revision. */
typedef struct live_condition {
    bool if_match;                       /* If-Match was given */
    bool if_match_any;                   /* If-Match: * */
    int nrevisions;                      /* If-Match: "r1", "r2" */
    int64_t revisions[LIVE_CONDITION_TAGS];
    bool if_none_match_any;              /* If-None-Match: * (create only) */
    int64_t expect_revision;             /* > 0: the caller read this revision (PATCH) */
} live_condition;

typedef enum live_result {
    LIVE_CREATED, LIVE_REPLACED, LIVE_DELETED, LIVE_NOT_FOUND, LIVE_PRECONDITION_FAILED,
    LIVE_FULL, LIVE_ERROR
} live_result;

/* Creates or replaces `a` (its content and entities; the id is a->id) and
 * stamps it with the new revision and times (alert_stamp). */
live_result live_store_put(live_store *ls, alert *a, const live_condition *cond, int64_t now,
                           char *err, size_t errlen);
/* Deletes alert `id`; *generation is the store's generation after it. */
live_result live_store_delete(live_store *ls, const char *id, const live_condition *cond,
                              int64_t *generation, char *err, size_t errlen);

#endif
