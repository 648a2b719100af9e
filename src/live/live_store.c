/* live_store.c — DATA/live.sqlite, the store of live data (service alerts):
 * its schema, and the alerts' reads and transactional writes.
 *
 * Why it exists: alerts are written while the server runs and must survive
 * feed re-imports, so they live beside the versions in a WAL database
 * (readers never block the writer). The schema is created or upgraded step by
 * step (PRAGMA user_version and the schema_version table), never rewriting or
 * deleting good rows; a database from a newer build (higher user_version) is
 * left untouched with an error. See live_store.h for the write path.
 *
 * Version 2 keeps each alert's canonical JSON in alerts.content (the source of
 * truth; the other columns and the entity and period rows are derived from it
 * in the same transaction, for filtering with SQL), its revision, and the
 * store's generation in live_meta. Rows of version 1 are carried over.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "transit/gtfs.h"
#include "transit/live_store.h"
#include "transit/stores.h"

#define LIVE_SCHEMA_VERSION 2
/* What the WAL file is cut back to when it starts over (64 MiB, as a string
 * for the PRAGMA): enough for a second of writes at full speed. */
#define LIVE_WAL_KEEP_BYTES "67108864"

static const char LIVE_SCHEMA_V1[] =
    "CREATE TABLE IF NOT EXISTS schema_version("
    " version INTEGER NOT NULL PRIMARY KEY, applied_at INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS alerts("
    " id TEXT NOT NULL PRIMARY KEY, cause TEXT, effect TEXT, header_text TEXT,"
    " description_text TEXT, url TEXT,"
    " active_from INTEGER, active_until INTEGER,"     /* unix seconds; NULL = open-ended */
    " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS alerts_active_until ON alerts(active_until);"
    "CREATE TABLE IF NOT EXISTS alert_entities("
    " alert_id TEXT NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,"
    " agency_id TEXT, route_id TEXT, stop_id TEXT, trip_id TEXT);"
    "CREATE INDEX IF NOT EXISTS alert_entities_alert ON alert_entities(alert_id);"
    "CREATE INDEX IF NOT EXISTS alert_entities_route ON alert_entities(route_id)"
    " WHERE route_id IS NOT NULL;"
    "CREATE INDEX IF NOT EXISTS alert_entities_stop ON alert_entities(stop_id)"
    " WHERE stop_id IS NOT NULL;"
    "CREATE INDEX IF NOT EXISTS alert_entities_trip ON alert_entities(trip_id)"
    " WHERE trip_id IS NOT NULL;"
    "CREATE INDEX IF NOT EXISTS alert_entities_agency ON alert_entities(agency_id)"
    " WHERE agency_id IS NOT NULL;";

/* Version 1 to 2: the content, revision and severity of an alert, the
 * selectors GTFS-RT has beyond v1's, several active periods, the generation.
 * v1 rows get a content composed from their columns. */
static const char LIVE_SCHEMA_V2[] =
    "ALTER TABLE alerts ADD COLUMN severity_level TEXT;"
    "ALTER TABLE alerts ADD COLUMN content TEXT;"
    "ALTER TABLE alerts ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE alert_entities ADD COLUMN route_type INTEGER;"
    "ALTER TABLE alert_entities ADD COLUMN direction_id INTEGER;"
    "ALTER TABLE alert_entities ADD COLUMN start_date TEXT;"
    "CREATE TABLE IF NOT EXISTS alert_periods("
    " alert_id TEXT NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,"
    " start INTEGER, end INTEGER);"                  /* unix seconds; NULL = open-ended */
    "CREATE INDEX IF NOT EXISTS alert_periods_alert ON alert_periods(alert_id);"
    "CREATE TABLE IF NOT EXISTS live_meta(key TEXT NOT NULL PRIMARY KEY, value INTEGER NOT NULL);"
    "UPDATE alerts SET revision = rowid,"
    " content = json_object("
    "  'active_period', CASE WHEN active_from IS NULL AND active_until IS NULL THEN json('[]')"
    "   ELSE json_array(json_object('start', active_from, 'end', active_until)) END,"
    "  'informed_entity', (SELECT json_group_array(json_object('agency_id', e.agency_id,"
    "   'route_id', e.route_id, 'stop_id', e.stop_id, 'trip', CASE WHEN e.trip_id IS NULL"
    "   THEN NULL ELSE json_object('trip_id', e.trip_id) END))"
    "   FROM alert_entities e WHERE e.alert_id = alerts.id),"
    "  'cause', cause, 'effect', effect,"
    "  'header_text', CASE WHEN header_text IS NULL THEN NULL"
    "   ELSE json_object('translation', json_array(json_object('text', header_text))) END,"
    "  'description_text', CASE WHEN description_text IS NULL THEN NULL"
    "   ELSE json_object('translation', json_array(json_object('text', description_text))) END,"
    "  'url', CASE WHEN url IS NULL THEN NULL"
    "   ELSE json_object('translation', json_array(json_object('text', url))) END)"
    " WHERE content IS NULL;"
    "INSERT INTO alert_periods(alert_id, start, end) SELECT id, active_from, active_until"
    " FROM alerts WHERE active_from IS NOT NULL OR active_until IS NOT NULL;"
    "INSERT OR IGNORE INTO live_meta(key, value)"
    " VALUES ('generation', (SELECT coalesce(max(revision), 0) FROM alerts));";

static int exec_or_fail(sqlite3 *db, const char *path, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    snprintf(err, errlen, "%s: %s", path, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -1;
}

/* PRAGMA user_version, or -1 (err set) when the file is not a database. */
static int read_user_version(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    sqlite3_stmt *s;
    int version = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        version = sqlite3_column_int(s, 0);
    if (version < 0)
        snprintf(err, errlen, "%s: not a readable SQLite database: %s", path, sqlite3_errmsg(db));
    sqlite3_finalize(s);
    return version;
}

static int ensure_schema(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    sqlite3_busy_timeout(db, 5000);
    int version = read_user_version(db, path, err, errlen);
    if (version < 0)
        return -1;
    if (version > LIVE_SCHEMA_VERSION) {
        snprintf(err, errlen,
                 "%s: schema version %d is newer than this build supports (%d); "
                 "left untouched — run a newer transitd or move the file away",
                 path, version, LIVE_SCHEMA_VERSION);
        return -1;
    }
    /* WAL is a property of the file: set it once, outside a transaction. */
    if (exec_or_fail(db, path, "PRAGMA journal_mode=WAL;", err, errlen) != 0)
        return -1;
    static const char *const steps[LIVE_SCHEMA_VERSION] = {LIVE_SCHEMA_V1, LIVE_SCHEMA_V2};
    while (version < LIVE_SCHEMA_VERSION) {
        /* each step in its own transaction, the version read again inside it
         * (another process may have upgraded meanwhile); a step that fails
         * leaves the file as it was */
        if (exec_or_fail(db, path, "BEGIN IMMEDIATE;", err, errlen) != 0)
            return -1;
        if ((version = read_user_version(db, path, err, errlen)) < 0) {
            sqlite3_exec(db, "ROLLBACK;", NULL, NULL, NULL);
            return -1;
        }
        if (version >= LIVE_SCHEMA_VERSION) {
            sqlite3_exec(db, "COMMIT;", NULL, NULL, NULL);
            break;
        }
        char sql[sizeof LIVE_SCHEMA_V2 + 256];
        snprintf(sql, sizeof sql,
                 "%s"
                 "INSERT OR IGNORE INTO schema_version(version, applied_at) VALUES (%d, %lld);"
                 "PRAGMA user_version=%d;COMMIT;",
                 steps[version], version + 1, (long long)time(NULL), version + 1);
        if (exec_or_fail(db, path, sql, err, errlen) != 0) {
            sqlite3_exec(db, "ROLLBACK;", NULL, NULL, NULL);
            return -1;
        }
        version++;
    }
    return 0;
}

/* Opens DATA/live.sqlite read-write, creating and upgrading it. */
static sqlite3 *open_live(const char *data_dir, char *path, size_t path_cap, char *err,
                          size_t errlen)
{
    if ((size_t)snprintf(path, path_cap, "%s/live.sqlite", data_dir) >= path_cap) {
        snprintf(err, errlen, "%s: path too long", data_dir);
        return NULL;
    }
    if (access(data_dir, W_OK) != 0) {
        snprintf(err, errlen, "%s: data directory is missing or not writable", data_dir);
        return NULL;
    }
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
    } else if (ensure_schema(db, path, err, errlen) == 0) {
        return db;
    }
    sqlite3_close(db);
    return NULL;
}

int live_store_ensure(const char *data_dir, char *err, size_t errlen)
{
    char path[4096];
    sqlite3 *db = open_live(data_dir, path, sizeof path, err, errlen);
    sqlite3_close(db);
    return db ? 0 : -1;
}

/* ------------------------------------------------------------ reads and writes */

struct live_store {
    pthread_mutex_t lock;
    sqlite3 *db;
    sqlite3 *checkpointer;       /* a second connection, for live_store_checkpoint only */
    char path[4096];
    int64_t data_version;
    sqlite3_stmt *stmt[10];      /* prepared once, in the order of STATEMENTS */
};

enum {
    SELECT_REVISION, COUNT_ALERTS, NEXT_GENERATION, UPSERT_ALERT, DELETE_ENTITIES,
    DELETE_PERIODS, INSERT_ENTITY, INSERT_PERIOD, DELETE_ALERT, DATA_VERSION
};

static const char *const STATEMENTS[] = {
    "SELECT revision, created_at FROM alerts WHERE id = ?1",
    "SELECT count(*) FROM alerts",
    "UPDATE live_meta SET value = value + 1 WHERE key = 'generation' RETURNING value",
    /* the v1 columns are kept filled from the content, for people reading the file */
    ("INSERT INTO alerts(id, cause, effect, severity_level, header_text, description_text, url,"
    " active_from, active_until, created_at, updated_at, content, revision)"
    " VALUES (?1, json_extract(?2, '$.cause'), json_extract(?2, '$.effect'),"
    " json_extract(?2, '$.severity_level'), json_extract(?2, '$.header_text.translation[0].text'),"
    " json_extract(?2, '$.description_text.translation[0].text'),"
    " json_extract(?2, '$.url.translation[0].text'), ?3, ?4, ?5, ?7, ?2, ?6)"
    " ON CONFLICT(id) DO UPDATE SET cause = excluded.cause, effect = excluded.effect,"
    " severity_level = excluded.severity_level, header_text = excluded.header_text,"
    " description_text = excluded.description_text, url = excluded.url,"
    " active_from = excluded.active_from, active_until = excluded.active_until,"
    " updated_at = excluded.updated_at, content = excluded.content, revision = excluded.revision"),
    "DELETE FROM alert_entities WHERE alert_id = ?1",
    "DELETE FROM alert_periods WHERE alert_id = ?1",
    ("INSERT INTO alert_entities(alert_id, agency_id, route_id, stop_id, trip_id, route_type,"
    " direction_id, start_date) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
    "INSERT INTO alert_periods(alert_id, start, end) VALUES (?1, ?2, ?3)",
    "DELETE FROM alerts WHERE id = ?1",
    "PRAGMA data_version",
};

live_store *live_store_open(const char *data_dir, char *err, size_t errlen)
{
    live_store *ls = calloc(1, sizeof *ls);
    if (!ls) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&ls->lock, NULL);
    if (!(ls->db = open_live(data_dir, ls->path, sizeof ls->path, err, errlen))) {
        live_store_close(ls);
        return NULL;
    }
    /* WAL with synchronous=FULL: every commit is fsynced before it returns,
     * so a write the API acknowledged survives a power loss, not only a crash
     * of the process (NORMAL could take back the last commits on power loss,
     * never corrupting the file). It costs the write rate: 8 writers on
     * Brooklyn, 2 server threads, 7,400 writes/s with NORMAL against 400 to
     * 2,600 with FULL, as fast as this disk's fsync. A group commit (one
     * fsync for the writers waiting together) measured no better with 2 or
     * 16 threads, so SQLite's own setting it is. docs/sqlite-stores.md. */
    sqlite3_exec(ls->db, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;", NULL, NULL, NULL);
    /* No checkpoint inside a write (its fsync would stall the server thread
     * that answers it): live_store_checkpoint does them, on its own
     * connection, from the server's main loop. */
    sqlite3_exec(ls->db, "PRAGMA wal_autocheckpoint=0;", NULL, NULL, NULL);
    /* After a burst of writes, the WAL file shrinks back to this when it
     * starts over, rather than keeping the burst's size on disk. */
    sqlite3_exec(ls->db, "PRAGMA journal_size_limit=" LIVE_WAL_KEEP_BYTES ";", NULL, NULL, NULL);
    if (sqlite3_open_v2(ls->path, &ls->checkpointer, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot open: %s", ls->path, sqlite3_errmsg(ls->checkpointer));
        live_store_close(ls);
        return NULL;
    }
    sqlite3_busy_timeout(ls->checkpointer, 1000);
    /* a connection knows the file is in WAL mode once it has read it */
    sqlite3_exec(ls->checkpointer, "SELECT count(*) FROM sqlite_master;", NULL, NULL, NULL);
    for (size_t i = 0; i < sizeof STATEMENTS / sizeof STATEMENTS[0]; i++)
        if (sqlite3_prepare_v3(ls->db, STATEMENTS[i], -1, SQLITE_PREPARE_PERSISTENT, &ls->stmt[i],
                               NULL) != SQLITE_OK) {
            snprintf(err, errlen, "%s: %s", ls->path, sqlite3_errmsg(ls->db));
            live_store_close(ls);
            return NULL;
        }
    live_store_changed_elsewhere(ls);
    return ls;
}

void live_store_close(live_store *ls)
{
    if (!ls)
        return;
    for (size_t i = 0; i < sizeof STATEMENTS / sizeof STATEMENTS[0]; i++)
        sqlite3_finalize(ls->stmt[i]);
    sqlite3_close(ls->checkpointer);
    sqlite3_close(ls->db);
    pthread_mutex_destroy(&ls->lock);
    free(ls);
}

void live_alerts_free(alert **alerts, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        alert_release(alerts[i]);
    free(alerts);
}

static int64_t read_generation(sqlite3 *db)
{
    sqlite3_stmt *s;
    int64_t g = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM live_meta WHERE key = 'generation'", -1, &s,
                           NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        g = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return g;
}

int live_store_load(live_store *ls, alert ***alerts, uint32_t *count, int64_t *generation,
                    live_warn_fn warn, void *warn_ctx, char *err, size_t errlen)
{
    pthread_mutex_lock(&ls->lock);
    sqlite3_stmt *s = NULL;
    alert **list = NULL;
    uint32_t n = 0, cap = 0;
    int rc = -1;
    /* one read transaction: the rows and the generation agree */
    if (sqlite3_exec(ls->db, "BEGIN;", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(ls->db,
                           "SELECT id, content, revision, created_at, updated_at FROM alerts"
                           " ORDER BY id",
                           -1, &s, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", ls->path, sqlite3_errmsg(ls->db));
        goto done;
    }
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(s, 0);
        const char *content = (const char *)sqlite3_column_text(s, 1);
        alert_error aerr = {0};
        alert *a = id && content
                       ? alert_from_store(id, content, (size_t)sqlite3_column_bytes(s, 1),
                                          sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3),
                                          sqlite3_column_int64(s, 4), &aerr)
                       : NULL;
        if (!a && aerr.status == 500) {
            /* out of memory, not a bad alert: skipping it would serve a
             * list without it as if it were complete */
            snprintf(err, errlen, "%s: alert '%.80s' cannot be loaded: %s", ls->path, id,
                     aerr.detail);
            goto done;
        }
        if (!a) {
            if (warn) {
                char msg[600];
                snprintf(msg, sizeof msg, "%s: alert '%.80s' skipped (kept in the file): %s%s%s",
                         ls->path, id ? id : "(null id)", aerr.pointer, aerr.pointer[0] ? ": " : "",
                         content ? aerr.detail : "no content");
                warn(warn_ctx, msg);
            }
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            alert **grown = realloc(list, cap * sizeof *grown);
            if (!grown) {
                alert_release(a);
                snprintf(err, errlen, "out of memory");
                goto done;
            }
            list = grown;
        }
        list[n++] = a;
    }
    if (step != SQLITE_DONE) {
        snprintf(err, errlen, "%s: %s", ls->path, sqlite3_errmsg(ls->db));
        goto done;
    }
    *generation = read_generation(ls->db);
    rc = 0;
done:
    sqlite3_finalize(s);
    sqlite3_exec(ls->db, "COMMIT;", NULL, NULL, NULL);
    pthread_mutex_unlock(&ls->lock);
    if (rc != 0) {
        live_alerts_free(list, n);
        return -1;
    }
    *alerts = list;
    *count = n;
    return 0;
}

bool live_store_changed_elsewhere(live_store *ls)
{
    pthread_mutex_lock(&ls->lock);
    int64_t v = ls->data_version;
    if (sqlite3_step(ls->stmt[DATA_VERSION]) == SQLITE_ROW)
        v = sqlite3_column_int64(ls->stmt[DATA_VERSION], 0);
    sqlite3_reset(ls->stmt[DATA_VERSION]);
    bool changed = v != ls->data_version;
    ls->data_version = v;
    pthread_mutex_unlock(&ls->lock);
    return changed;
}

int live_store_checkpoint(live_store *ls)
{
    int log_frames = 0, done = 0;
    /* PASSIVE: copies what no reader still needs, never waits for writers;
     * the bulk of the copying and both fsyncs happen here, while this
     * process's writers go on appending. */
    int rc = sqlite3_wal_checkpoint_v2(ls->checkpointer, NULL, SQLITE_CHECKPOINT_PASSIVE, &log_frames,
                                       &done);
    /* SQLITE_BUSY here is no failure: a writer was rewriting the WAL index
     * header at the instant this pass read it (about 1 call in 400 under
     * steady writes), and the pass under the writers' lock below reads it
     * whole. */
    if (rc == SQLITE_BUSY || (rc == SQLITE_OK && log_frames > 0)) {
        /* Writers may have appended while it copied: it counts only the
         * frames there when it began. Under a steady stream of writes that
         * is every time, and SQLite starts the WAL over only when a writer
         * begins with every frame copied: the file grew without end (1.1 GB
         * in 5 s of PUTs) and every commit paid for extending it. A second
         * pass holding the writers' lock catches up: it copies only the
         * frames of the last moments (none, no fsync, when there are none),
         * and the next commit rewrites the WAL from its start. */
        pthread_mutex_lock(&ls->lock);
        rc = sqlite3_wal_checkpoint_v2(ls->checkpointer, NULL, SQLITE_CHECKPOINT_PASSIVE, &log_frames,
                                       &done);
        pthread_mutex_unlock(&ls->lock);
    }
    /* Still busy: another process is writing or checkpointing this file
     * (two servers on one data folder); the next call copies it. */
    if (rc == SQLITE_BUSY)
        return 0;
    return rc == SQLITE_OK ? done : -1;
}

/* The precondition against the stored revision (0 when there is none). */
static bool condition_holds(const live_condition *c, int64_t stored)
{
    if (c->if_none_match_any && stored)
        return false;
    if (c->expect_revision > 0 && stored != c->expect_revision)
        return false;
    if (!c->if_match)
        return true;
    if (!stored)
        return false;
    if (c->if_match_any)
        return true;
    for (int i = 0; i < c->nrevisions; i++)
        if (c->revisions[i] == stored)
            return true;
    return false;
}

static bool step_done(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE;
}

/* Starts a write: BEGIN IMMEDIATE, the stored revision and creation time. */
static bool begin_write(live_store *ls, const char *id, int64_t *revision, int64_t *created)
{
    if (sqlite3_exec(ls->db, "BEGIN IMMEDIATE;", NULL, NULL, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(ls->stmt[SELECT_REVISION], 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(ls->stmt[SELECT_REVISION]);
    *revision = rc == SQLITE_ROW ? sqlite3_column_int64(ls->stmt[SELECT_REVISION], 0) : 0;
    *created = rc == SQLITE_ROW ? sqlite3_column_int64(ls->stmt[SELECT_REVISION], 1) : 0;
    sqlite3_reset(ls->stmt[SELECT_REVISION]);
    return rc == SQLITE_ROW || rc == SQLITE_DONE;
}

static int64_t next_generation(live_store *ls)
{
    int64_t g = -1;
    if (sqlite3_step(ls->stmt[NEXT_GENERATION]) == SQLITE_ROW)
        g = sqlite3_column_int64(ls->stmt[NEXT_GENERATION], 0);
    sqlite3_reset(ls->stmt[NEXT_GENERATION]);
    return g;
}

static bool store_rows(live_store *ls, const alert *a, int64_t revision, int64_t created,
                       int64_t now)
{
    int64_t from = INT64_MAX, until = INT64_MIN;
    for (uint32_t i = 0; i < a->nperiods; i++) {
        if (a->periods[i].start < from)
            from = a->periods[i].start;
        if (a->periods[i].end > until)
            until = a->periods[i].end;
    }
    sqlite3_stmt *s = ls->stmt[UPSERT_ALERT];
    sqlite3_bind_text(s, 1, a->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, a->content, (int)a->content_len, SQLITE_STATIC);
    if (a->nperiods && from != INT64_MIN)
        sqlite3_bind_int64(s, 3, from);
    else
        sqlite3_bind_null(s, 3);
    if (a->nperiods && until != INT64_MAX)
        sqlite3_bind_int64(s, 4, until);
    else
        sqlite3_bind_null(s, 4);
    sqlite3_bind_int64(s, 5, created ? created : now);   /* created_at, kept on a replace */
    sqlite3_bind_int64(s, 6, revision);
    sqlite3_bind_int64(s, 7, now);                       /* updated_at */
    bool ok = step_done(s);   /* a replaced alert keeps created_at: the update leaves it */
    sqlite3_bind_text(ls->stmt[DELETE_ENTITIES], 1, a->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(ls->stmt[DELETE_PERIODS], 1, a->id, -1, SQLITE_STATIC);
    ok = ok && step_done(ls->stmt[DELETE_ENTITIES]) && step_done(ls->stmt[DELETE_PERIODS]);
    for (uint32_t i = 0; ok && i < a->nentities; i++) {
        const alert_entity *e = &a->entities[i];
        s = ls->stmt[INSERT_ENTITY];
        sqlite3_bind_text(s, 1, a->id, -1, SQLITE_STATIC);
        const char *texts[4] = {e->agency_id, e->route_id, e->stop_id, e->trip_id};
        for (int k = 0; k < 4; k++)
            if (texts[k])
                sqlite3_bind_text(s, 2 + k, texts[k], -1, SQLITE_STATIC);
            else
                sqlite3_bind_null(s, 2 + k);
        int32_t ints[2] = {e->route_type, e->direction_id};
        for (int k = 0; k < 2; k++)
            if (ints[k] >= 0)
                sqlite3_bind_int(s, 6 + k, ints[k]);
            else
                sqlite3_bind_null(s, 6 + k);
        if (e->start_date != ALERT_NONE_DATE) {
            char date[11];
            format_date(e->start_date, date);
            sqlite3_bind_text(s, 8, date, -1, SQLITE_TRANSIENT);
        } else {
            sqlite3_bind_null(s, 8);
        }
        ok = step_done(s);
    }
    for (uint32_t i = 0; ok && i < a->nperiods; i++) {
        s = ls->stmt[INSERT_PERIOD];
        sqlite3_bind_text(s, 1, a->id, -1, SQLITE_STATIC);
        if (a->periods[i].start != INT64_MIN)
            sqlite3_bind_int64(s, 2, a->periods[i].start);
        else
            sqlite3_bind_null(s, 2);
        if (a->periods[i].end != INT64_MAX)
            sqlite3_bind_int64(s, 3, a->periods[i].end);
        else
            sqlite3_bind_null(s, 3);
        ok = step_done(s);
    }
    return ok;
}

static live_result finish_write(live_store *ls, live_result result, char *err, size_t errlen)
{
    if (result == LIVE_CREATED || result == LIVE_REPLACED || result == LIVE_DELETED) {
        if (sqlite3_exec(ls->db, "COMMIT;", NULL, NULL, NULL) == SQLITE_OK)
            return result;
        result = LIVE_ERROR;
    }
    if (result == LIVE_ERROR)
        snprintf(err, errlen, "%s: %s", ls->path, sqlite3_errmsg(ls->db));
    sqlite3_exec(ls->db, "ROLLBACK;", NULL, NULL, NULL);
    return result;
}

live_result live_store_put(live_store *ls, alert *a, const live_condition *cond, int64_t now,
                           char *err, size_t errlen)
{
    pthread_mutex_lock(&ls->lock);
    int64_t stored, created;
    live_result result = LIVE_ERROR;
    if (!begin_write(ls, a->id, &stored, &created)) {
        result = LIVE_ERROR;
    } else if (!condition_holds(cond, stored)) {
        result = LIVE_PRECONDITION_FAILED;
    } else {
        bool full = false;
        if (!stored) {
            sqlite3_step(ls->stmt[COUNT_ALERTS]);
            full = sqlite3_column_int64(ls->stmt[COUNT_ALERTS], 0) >= LIVE_ALERTS_MAX;
            sqlite3_reset(ls->stmt[COUNT_ALERTS]);
        }
        int64_t revision = full ? -1 : next_generation(ls);
        if (full)
            result = LIVE_FULL;
        else if (revision > 0 && store_rows(ls, a, revision, created, now) &&
                 alert_stamp(a, revision, created ? created : now, now) == 0)
            result = stored ? LIVE_REPLACED : LIVE_CREATED;
    }
    result = finish_write(ls, result, err, errlen);
    pthread_mutex_unlock(&ls->lock);
    return result;
}

live_result live_store_delete(live_store *ls, const char *id, const live_condition *cond,
                              int64_t *generation, char *err, size_t errlen)
{
    pthread_mutex_lock(&ls->lock);
    int64_t stored, created;
    live_result result = LIVE_ERROR;
    if (!begin_write(ls, id, &stored, &created)) {
        result = LIVE_ERROR;
    } else if (!stored) {
        /* 404 whatever the preconditions: without them the answer would not
         * have been a 2xx, so RFC 9110 §13.2.1 has them ignored */
        result = LIVE_NOT_FOUND;
    } else if (!condition_holds(cond, stored)) {
        result = LIVE_PRECONDITION_FAILED;
    } else {
        sqlite3_bind_text(ls->stmt[DELETE_ENTITIES], 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(ls->stmt[DELETE_PERIODS], 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(ls->stmt[DELETE_ALERT], 1, id, -1, SQLITE_STATIC);
        int64_t g = next_generation(ls);
        if (g > 0 && step_done(ls->stmt[DELETE_ENTITIES]) && step_done(ls->stmt[DELETE_PERIODS]) &&
            step_done(ls->stmt[DELETE_ALERT])) {
            *generation = g;
            result = LIVE_DELETED;
        }
    }
    result = finish_write(ls, result, err, errlen);
    pthread_mutex_unlock(&ls->lock);
    return result;
}
