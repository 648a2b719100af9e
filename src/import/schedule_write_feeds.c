/* schedule_write_feeds.c — the feeds of a merged dataset in schedule.sqlite.
 *
 * Why it exists: a dataset merged from several feeds (feed_merge.h) keeps
 * which feed each agency, stop, route and trip came from, and each feed's
 * own name, file, hash, publisher, version, validity and counts, for
 * /v1/feed and the `feed` member of the records. feed_merge writes them as
 * transitd_feeds.txt and transitd_record_feeds.txt; they become the tables
 * feeds and record_feeds here. A one-feed dataset has neither table.
 */
#include <string.h>

#include "import/schedule_write_internal.h"

static const char FEEDS_SCHEMA[] =
    "CREATE TABLE feeds(feed_index INTEGER PRIMARY KEY, feed_name TEXT NOT NULL, file TEXT, sha256 TEXT,"
    " publisher_name TEXT, feed_version TEXT, feed_start_date TEXT, feed_end_date TEXT,"
    " service_start_date TEXT, service_end_date TEXT, agency_timezone TEXT, agencies INTEGER,"
    " stops INTEGER, routes INTEGER, trips INTEGER, stop_times INTEGER, renamed_ids INTEGER);"
    "CREATE TABLE record_feeds(kind TEXT NOT NULL, id TEXT NOT NULL, feed_index INTEGER NOT NULL,"
    " PRIMARY KEY(kind, id)) WITHOUT ROWID;";

static const char *const FEED_KEYS[] = {
    "feed_index", "feed_name", "file", "sha256", "publisher_name", "feed_version", "feed_start_date",
    "feed_end_date", "service_start_date", "service_end_date", "agency_timezone", "agencies", "stops",
    "routes", "trips", "stop_times", "renamed_ids"};
enum { FEED_KEY_COUNT = sizeof FEED_KEYS / sizeof *FEED_KEYS };

static int feed_row(schedule_writer *w, const csv_field *f)
{
    sqlite3_stmt *s = w->insert;
    for (int k = 0; k < FEED_KEY_COUNT; k++)
        bind_opt_text(s, k + 1, &f[k]);
    return schedule_step_insert(w, s) < 0 ? ROW_STOP : ROW_CONTINUE;
}

static const file_spec feeds_spec = {
    "transitd_feeds.txt", FEED_KEYS, FEED_KEY_COUNT, 0x3,
    "INSERT OR IGNORE INTO feeds VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)", feed_row};

static const char *const RECORD_KEYS[] = {"kind", "id", "feed_index"};

static int record_row(schedule_writer *w, const csv_field *f)
{
    sqlite3_stmt *s = w->insert;
    for (int k = 0; k < 3; k++)
        bind_opt_text(s, k + 1, &f[k]);
    return schedule_step_insert(w, s) < 0 ? ROW_STOP : ROW_CONTINUE;
}

static const file_spec records_spec = {
    "transitd_record_feeds.txt", RECORD_KEYS, 3, 0x7,
    "INSERT OR IGNORE INTO record_feeds VALUES (?1,?2,?3)", record_row};

int schedule_write_feed_list(schedule_writer *w, int (*exec)(schedule_writer *, const char *),
                             int (*read)(schedule_writer *, const file_spec *, uint64_t *))
{
    if (!feed_has(w->feed, feeds_spec.name))
        return 0;
    uint64_t rows;
    if (exec(w, FEEDS_SCHEMA) != 0 || read(w, &feeds_spec, &rows) != 0)
        return -1;
    return feed_has(w->feed, records_spec.name) ? read(w, &records_spec, &rows) : 0;
}
