/* schedule_read.c — the read side of schedule.sqlite.
 *
 * Why it exists: request handlers need stop-name search, the stop fields the
 * timetable does not carry, and feed metadata. A version's schedule.sqlite
 * never changes once activated, so each thread opens it read-only with
 * immutable=1 (no locks, no journal checks) and memory-mapped, and prepares
 * its statements once. User search text is never handed to FTS5 as query
 * syntax: it is split into terms by the index's own tokenizer (unicode61,
 * remove_diacritics 2) and each term is quoted and prefix-matched, so no
 * input can produce an FTS syntax error or an empty phrase.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "transit/gtfs.h"
#include "transit/stores.h"
#include "store/sqlite_uri.h"

/* How much of the user's text becomes the FTS query. */
#define SEARCH_MAX_TERMS 12
#define SEARCH_MAX_QUERY 512

struct schedule_db {
    sqlite3 *db;
    sqlite3_stmt *search, *search_broad, *search_count, *feed_meta;
    /* a merged dataset's feeds (prepared on first use; absent tables: 0) */
    int feeds_state;                     /* 0 not tried, 1 prepared, -1 no such tables */
    sqlite3_stmt *feed_at, *record_feed;
    fts5_tokenizer tokenizer;            /* unicode61, as the index uses it */
    Fts5Tokenizer *tokenizer_instance;
};

/* Narrow queries are ranked by bm25. A broad one (more than SEARCH_RANK_MAX
 * matches, e.g. a 1-3 letter prefix matching thousands of names) would spend
 * milliseconds ranking every match; it takes the first matches in rowid
 * order instead, which schedule_write.c made shortest name first. */
#define SEARCH_RANK_MAX 32
static const char SEARCH_SQL[] =
    "SELECT s.stop_id FROM stop_names JOIN stops s ON s.rowid = stop_names.rowid"
    " WHERE stop_names MATCH ?1 ORDER BY stop_names.rank, s.stop_name, s.stop_id LIMIT ?2";
static const char SEARCH_BROAD_SQL[] =
    "SELECT s.stop_id FROM stop_names JOIN stops s ON s.rowid = stop_names.rowid"
    " WHERE stop_names MATCH ?1 ORDER BY stop_names.rowid LIMIT ?2";
static const char SEARCH_COUNT_SQL[] =
    "SELECT count(*) FROM (SELECT 1 FROM stop_names WHERE stop_names MATCH ?1 LIMIT ?2)";
static const char FEED_META_SQL[] =
    "SELECT feed_publisher_name, feed_publisher_url, feed_lang, feed_version, feed_start_date,"
    " feed_end_date FROM feed_info ORDER BY rowid LIMIT 1";

/* The tokenizer of the stop_names index, used on the user's text. */
static const char *const SEARCH_TOKENIZER_ARGS[] = {"remove_diacritics", "2"};

static fts5_api *fts5_api_of(sqlite3 *db)
{
    fts5_api *api = NULL;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_pointer(s, 1, (void *)&api, "fts5_api_ptr", NULL);
        sqlite3_step(s);
    }
    sqlite3_finalize(s);
    return api;
}

static int create_tokenizer(schedule_db *sdb)
{
    fts5_api *api = fts5_api_of(sdb->db);
    void *user_data = NULL;
    if (!api || api->xFindTokenizer(api, "unicode61", &user_data, &sdb->tokenizer) != SQLITE_OK)
        return -1;
    return sdb->tokenizer.xCreate(user_data, (const char **)SEARCH_TOKENIZER_ARGS, 2,
                                  &sdb->tokenizer_instance) == SQLITE_OK ? 0 : -1;
}

/* Accumulates `"tok1"* AND "tok2"* ...` from the tokenizer's output. */
typedef struct match_query {
    char text[SEARCH_MAX_QUERY];
    size_t len;
    int terms;
} match_query;

static int add_query_term(void *ctx, int flags, const char *token, int ntoken, int start, int end)
{
    (void)flags, (void)start, (void)end;
    match_query *q = ctx;
    if (ntoken <= 0)
        return SQLITE_OK;
    if (q->terms == SEARCH_MAX_TERMS)
        return SQLITE_DONE;
    /* worst case: ' AND ' + '"' + every byte doubled + '"*' + NUL */
    if (q->len + 5 + 1 + 2 * (size_t)ntoken + 3 > sizeof q->text)
        return SQLITE_DONE;
    if (q->terms) {
        memcpy(q->text + q->len, " AND ", 5);
        q->len += 5;
    }
    q->text[q->len++] = '"';
    for (int i = 0; i < ntoken; i++) {
        if (token[i] == '"')  /* unicode61 never yields one; quote it anyway */
            q->text[q->len++] = '"';
        q->text[q->len++] = token[i];
    }
    q->text[q->len++] = '"';
    q->text[q->len++] = '*';
    q->text[q->len] = '\0';
    q->terms++;
    return SQLITE_OK;
}

schedule_db *schedule_open(const char *version_dir, char *err, size_t errlen)
{
    char uri[8192];
    if (store_sqlite_uri(uri, sizeof uri, version_dir, "schedule.sqlite") != 0) {
        snprintf(err, errlen, "%s: path too long", version_dir);
        return NULL;
    }

    schedule_db *sdb = calloc(1, sizeof *sdb);
    if (!sdb) {
        snprintf(err, errlen, "%s/schedule.sqlite: out of memory", version_dir);
        return NULL;
    }
    if (sqlite3_open_v2(uri, &sdb->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI |
                                           SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s/schedule.sqlite: cannot open: %s", version_dir,
                 sdb->db ? sqlite3_errmsg(sdb->db) : "out of memory");
        schedule_close(sdb);
        return NULL;
    }
    if (sqlite3_exec(sdb->db, "PRAGMA mmap_size=268435456", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(sdb->db, SEARCH_SQL, -1, &sdb->search, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(sdb->db, SEARCH_BROAD_SQL, -1, &sdb->search_broad, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(sdb->db, SEARCH_COUNT_SQL, -1, &sdb->search_count, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(sdb->db, FEED_META_SQL, -1, &sdb->feed_meta, NULL) != SQLITE_OK ||
        create_tokenizer(sdb) != 0) {
        snprintf(err, errlen, "%s/schedule.sqlite: not a schedule database: %s", version_dir,
                 sqlite3_errmsg(sdb->db));
        schedule_close(sdb);
        return NULL;
    }
    return sdb;
}

void schedule_close(schedule_db *db)
{
    if (!db)
        return;
    if (db->tokenizer_instance)
        db->tokenizer.xDelete(db->tokenizer_instance);
    sqlite3_finalize(db->search);
    sqlite3_finalize(db->search_broad);
    sqlite3_finalize(db->search_count);
    sqlite3_finalize(db->feed_meta);
    sqlite3_finalize(db->feed_at);
    sqlite3_finalize(db->record_feed);
    sqlite3_close(db->db);
    free(db);
}

int schedule_stop_search(schedule_db *db, const char *text, uint32_t limit, stop_id_buf *ids,
                         bool *truncated, char *err, size_t errlen)
{
    *truncated = false;
    match_query query = {.len = 0};
    size_t text_len = text ? strlen(text) : 0;
    if (text_len > 4096)
        text_len = 4096;
    int trc = db->tokenizer.xTokenize(db->tokenizer_instance, &query, FTS5_TOKENIZE_QUERY,
                                      text ? text : "", (int)text_len, add_query_term);
    if (trc != SQLITE_OK && trc != SQLITE_DONE) {
        snprintf(err, errlen, "stop search: cannot tokenize the search text");
        return -1;
    }
    if (query.terms == 0)
        return 0;
    /* how many match, counting no further than the ranking threshold */
    sqlite3_stmt *c = db->search_count;
    sqlite3_bind_text(c, 1, query.text, (int)query.len, SQLITE_STATIC);
    sqlite3_bind_int(c, 2, SEARCH_RANK_MAX + 1);
    int matches = sqlite3_step(c) == SQLITE_ROW ? sqlite3_column_int(c, 0) : 0;
    sqlite3_reset(c);
    sqlite3_clear_bindings(c);
    sqlite3_stmt *s = matches > SEARCH_RANK_MAX ? db->search_broad : db->search;
    sqlite3_bind_text(s, 1, query.text, (int)query.len, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)limit + 1);
    int count = 0, rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if ((uint32_t)count == limit) {
            *truncated = true;
            break;
        }
        const unsigned char *id = sqlite3_column_text(s, 0);
        int len = sqlite3_column_bytes(s, 0);
        if (len > (int)sizeof ids[count].id - 1)
            len = (int)sizeof ids[count].id - 1;
        memcpy(ids[count].id, id ? (const char *)id : "", (size_t)len);
        ids[count].id[len] = '\0';
        count++;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        snprintf(err, errlen, "stop search: %s", sqlite3_errmsg(db->db));
        count = -1;
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return count;
}

/* Copies a text column, cut at a UTF-8 character boundary to fit. */
static void copy_column(sqlite3_stmt *s, int col, char *out, size_t cap)
{
    const unsigned char *v = sqlite3_column_text(s, col);
    size_t len = v ? (size_t)sqlite3_column_bytes(s, col) : 0;
    if (len >= cap) {
        len = cap - 1;
        while (len > 0 && (v[len] & 0xC0) == 0x80)
            len--;
    }
    if (len)
        memcpy(out, v, len);
    out[len] = '\0';
}

static int32_t column_iso_date(sqlite3_stmt *s, int col)
{
    const unsigned char *v = sqlite3_column_text(s, col);
    int32_t days;
    if (v && parse_iso_date((const char *)v, (size_t)sqlite3_column_bytes(s, col), &days) == 0)
        return days;
    return INT32_MIN;
}

int schedule_feed_meta(schedule_db *db, feed_meta *out)
{
    memset(out, 0, sizeof *out);
    out->start_date = out->end_date = INT32_MIN;
    sqlite3_stmt *s = db->feed_meta;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        copy_column(s, 0, out->publisher_name, sizeof out->publisher_name);
        copy_column(s, 1, out->publisher_url, sizeof out->publisher_url);
        copy_column(s, 2, out->lang, sizeof out->lang);
        copy_column(s, 3, out->version, sizeof out->version);
        out->start_date = column_iso_date(s, 4);
        out->end_date = column_iso_date(s, 5);
    }
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

/* ------------------------------------------------------------ a merged dataset's feeds */

static const char FEED_AT_SQL[] =
    "SELECT feed_index, feed_name, file, sha256, publisher_name, feed_version, agency_timezone,"
    " feed_start_date, feed_end_date, service_start_date, service_end_date, agencies, stops, routes,"
    " trips, stop_times, renamed_ids FROM feeds ORDER BY feed_index LIMIT 1 OFFSET ?1";
static const char RECORD_FEED_SQL[] =
    "SELECT f.feed_name FROM record_feeds r JOIN feeds f ON f.feed_index = r.feed_index"
    " WHERE r.kind = ?1 AND r.id = ?2";

static bool feeds_ready(schedule_db *db)
{
    if (db->feeds_state == 0) {
        bool ok = sqlite3_prepare_v2(db->db, FEED_AT_SQL, -1, &db->feed_at, NULL) == SQLITE_OK &&
                  sqlite3_prepare_v2(db->db, RECORD_FEED_SQL, -1, &db->record_feed, NULL) == SQLITE_OK;
        db->feeds_state = ok ? 1 : -1;
    }
    return db->feeds_state == 1;
}

/* YYYYMMDD as YYYY-MM-DD; anything else as "". */
static void column_gtfs_date(sqlite3_stmt *s, int col, char out[11])
{
    const unsigned char *v = sqlite3_column_text(s, col);
    out[0] = 0;
    if (v && sqlite3_column_bytes(s, col) == 8)
        snprintf(out, 11, "%.4s-%.2s-%.2s", (const char *)v, (const char *)v + 4, (const char *)v + 6);
}

int schedule_feed_at(schedule_db *db, int i, feed_entry *out)
{
    memset(out, 0, sizeof *out);
    if (!feeds_ready(db))
        return -1;
    sqlite3_stmt *s = db->feed_at;
    sqlite3_bind_int(s, 1, i);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        out->index = sqlite3_column_int(s, 0);
        copy_column(s, 1, out->name, sizeof out->name);
        copy_column(s, 2, out->file, sizeof out->file);
        copy_column(s, 3, out->sha256, sizeof out->sha256);
        copy_column(s, 4, out->publisher_name, sizeof out->publisher_name);
        copy_column(s, 5, out->version, sizeof out->version);
        copy_column(s, 6, out->timezone, sizeof out->timezone);
        column_gtfs_date(s, 7, out->feed_start);
        column_gtfs_date(s, 8, out->feed_end);
        column_gtfs_date(s, 9, out->service_start);
        column_gtfs_date(s, 10, out->service_end);
        out->agencies = sqlite3_column_int64(s, 11);
        out->stops = sqlite3_column_int64(s, 12);
        out->routes = sqlite3_column_int64(s, 13);
        out->trips = sqlite3_column_int64(s, 14);
        out->stop_times = sqlite3_column_int64(s, 15);
        out->renamed_ids = sqlite3_column_int64(s, 16);
    }
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : -1;
}

int schedule_feed_count(schedule_db *db)
{
    if (!feeds_ready(db))
        return 0;
    int n = 0;
    feed_entry e;
    while (n < 1024 && schedule_feed_at(db, n, &e) == 0)
        n++;
    return n;
}

bool schedule_record_feed(schedule_db *db, const char *kind, const char *id, char *name, size_t cap)
{
    if (!feeds_ready(db) || !id)
        return false;
    sqlite3_stmt *s = db->record_feed;
    sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, id, -1, SQLITE_STATIC);
    bool found = sqlite3_step(s) == SQLITE_ROW;
    if (found)
        copy_column(s, 0, name, cap);
    sqlite3_reset(s);
    return found;
}
