/* store_live.c — creates DATA/live.sqlite, the store of live data (service
 * alerts).
 *
 * Why it exists: alerts are written while the server runs and must survive
 * feed re-imports, so they live beside the versions in a WAL database
 * (readers never block the writer). This module only makes sure the file
 * exists with the current schema: it creates what is missing, records the
 * schema version (PRAGMA user_version and the schema_version table), and
 * never rewrites or deletes rows of an existing database. A database from a
 * newer build (higher user_version) is left untouched with an error.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "transit/stores.h"

#define LIVE_SCHEMA_VERSION 1

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
    if (version == LIVE_SCHEMA_VERSION)
        return 0;
    char sql[sizeof LIVE_SCHEMA_V1 + 256];
    snprintf(sql, sizeof sql,
             "BEGIN IMMEDIATE;%s"
             "INSERT OR IGNORE INTO schema_version(version, applied_at) VALUES (%d, %lld);"
             "PRAGMA user_version=%d;COMMIT;",
             LIVE_SCHEMA_V1, LIVE_SCHEMA_VERSION, (long long)time(NULL), LIVE_SCHEMA_VERSION);
    if (exec_or_fail(db, path, sql, err, errlen) != 0) {
        sqlite3_exec(db, "ROLLBACK;", NULL, NULL, NULL);
        return -1;
    }
    return 0;
}

int live_store_ensure(const char *data_dir, char *err, size_t errlen)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/live.sqlite", data_dir) >= sizeof path) {
        snprintf(err, errlen, "%s: path too long", data_dir);
        return -1;
    }
    if (access(data_dir, W_OK) != 0) {
        snprintf(err, errlen, "%s: data directory is missing or not writable", data_dir);
        return -1;
    }
    sqlite3 *db = NULL;
    int rc = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        snprintf(err, errlen, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
    else
        rc = ensure_schema(db, path, err, errlen);
    sqlite3_close(db);
    return rc;
}
