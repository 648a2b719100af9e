/* api_feeds.c — the feeds of a merged dataset in the answers: the `feeds`
 * list of /v1/feed and the `feed` member of a stop, route, trip or agency.
 *
 * Why it exists: a dataset imported from several feeds (feed_merge.h) keeps
 * each record's feed and each feed's figures in schedule.sqlite; this is
 * where the API reads them. A one-feed dataset has no such tables: the
 * members are left out and the lookups stop after the first try on each
 * connection.
 */
#include "api/api_internal.h"

void api_kv_record_feed(json_writer *out, dataset *ds, const char *kind, const char *id)
{
    char err[64];
    schedule_db *db = dataset_take_schedule(ds, err, sizeof err);
    if (!db)
        return;
    char name[64];
    if (schedule_record_feed(db, kind, id, name, sizeof name))
        json_kv_string(out, "feed", name);
    dataset_give_schedule(ds, db);
}

static void kv_optional_text(json_writer *out, const char *key, const char *value)
{
    if (value[0])
        json_kv_string(out, key, value);
    else
        json_kv_null(out, key);
}

void api_write_feed_list(json_writer *out, schedule_db *db)
{
    int n = schedule_feed_count(db);
    if (n <= 0)
        return;
    json_key(out, "feeds");
    json_array_begin(out);
    for (int i = 0; i < n; i++) {
        feed_entry e;
        if (schedule_feed_at(db, i, &e) != 0)
            break;
        json_object_begin(out);
        json_kv_string(out, "name", e.name);
        json_kv_string(out, "file", e.file);
        json_kv_string(out, "sha256", e.sha256);
        kv_optional_text(out, "publisher_name", e.publisher_name);
        kv_optional_text(out, "version", e.version);
        kv_optional_text(out, "timezone", e.timezone);
        kv_optional_text(out, "start_date", e.service_start);
        kv_optional_text(out, "end_date", e.service_end);
        kv_optional_text(out, "feed_start_date", e.feed_start);
        kv_optional_text(out, "feed_end_date", e.feed_end);
        json_key(out, "counts");
        json_object_begin(out);
        json_kv_int(out, "agencies", e.agencies);
        json_kv_int(out, "stops", e.stops);
        json_kv_int(out, "routes", e.routes);
        json_kv_int(out, "trips", e.trips);
        json_kv_int(out, "stop_times", e.stop_times);
        json_kv_int(out, "namespaced_ids", e.renamed_ids);
        json_object_end(out);
        json_object_end(out);
    }
    json_array_end(out);
}
