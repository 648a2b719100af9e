/* feed_merge.h — several GTFS feeds written as one, for `transitd import a.zip b.zip ...`.
 *
 * Why it exists: a national dataset is many feeds, published separately, and
 * the import pipeline (import.h) reads one. feed_merge writes the feeds into
 * one directory of .txt files that the pipeline imports unchanged, so every
 * store, check and answer works on a merged dataset as on a single feed.
 *
 * The id rule (docs/ARCHITECTURE.md, "Many feeds"): ids are kept as they are
 * unless an earlier feed on the command line defines the same id in the same
 * table (agency, stop, route, trip, service, shape, fare, zone); then this
 * feed's id becomes "<feed-name>:<id>", and every reference to it in this feed
 * is rewritten the same way (stop_times -> stops and trips, trips -> routes,
 * services and shapes, parent_station, routes -> agencies, transfers,
 * frequencies, fare rules, zones). An empty agency_id (a one-agency feed)
 * becomes the feed's name. The rule depends only on the order of the feeds
 * and their contents, never on timing.
 *
 * The merged directory also holds transitd_feeds.txt (one row per feed: name,
 * file, sha256, publisher, version, validity, counts) and
 * transitd_record_feeds.txt (the feed of every agency, stop, route and trip),
 * which schedule.sqlite keeps (tables feeds and record_feeds).
 */
#ifndef TRANSIT_FEED_MERGE_H
#define TRANSIT_FEED_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FEED_MERGE_MAX_FEEDS 64
#define FEED_MERGE_NAME_MAX 48

typedef struct feed_merge_input {
    const char *path;   /* a .zip or a directory */
    const char *name;   /* --feed-id, or NULL: the file name without .zip */
    const char *sha256; /* the feed's SHA-256 (64 hex digits) when known, or NULL */
} feed_merge_input;

/* The name feed `in` goes by in a merge (in->name, else the file name
 * without .zip, other characters as '_') into out. */
void feed_merge_input_name(const feed_merge_input *in, char out[FEED_MERGE_NAME_MAX]);

typedef struct feed_merge feed_merge;

/* Writes the n feeds (2..FEED_MERGE_MAX_FEEDS) into out_dir (which must
 * exist and be empty). Returns the merge (for feed_merge_locate and the
 * counts), or NULL with a message naming the feed file, the file inside it,
 * the line and the field. */
feed_merge *feed_merge_write(const feed_merge_input *in, int n, const char *out_dir, char *err, size_t errlen);
/* The same, and the merge cache (src/import/merge_cache.h): a feed whose
 * content key and context match its record in cache_dir's index (the
 * previous merge's directory; NULL: none is read) and whose rows there are
 * intact has them copied from there instead of read from the feed; out_dir
 * gets the index of this merge for the next one. The merged bytes are the
 * same either way. */
feed_merge *feed_merge_write_cached(const feed_merge_input *in, int n, const char *out_dir, const char *cache_dir,
                                    char *err, size_t errlen);
void feed_merge_free(feed_merge *m);

/* The merged dataset's SHA-256 (its version's name): of the merge rule's
 * revision and each feed's name and SHA-256, in order. The merged bytes are
 * a function of those, so hashing them again would say the same. */
void feed_merge_sha256(const feed_merge *m, char out[65]);

int feed_merge_count(const feed_merge *m);
/* Whether the feed's rows were copied from the merge cache. */
bool feed_merge_from_cache(const feed_merge *m, int feed);
const char *feed_merge_name(const feed_merge *m, int feed);
/* Ids of this feed that were namespaced (all tables). */
uint64_t feed_merge_renamed(const feed_merge *m, int feed);
/* GTFS files of the feeds that the merge does not carry over (e.g.
 * "levels.txt"), one line per feed and file, "" when none. */
const char *feed_merge_skipped(const feed_merge *m);

/* Maps line `line` of the merged `file` back to its feed: returns the feed
 * index and sets *src_line, or -1 when the line is not a data row. */
int feed_merge_locate(const feed_merge *m, const char *file, uint64_t line, uint64_t *src_line);
const char *feed_merge_path(const feed_merge *m, int feed);

/* Rewrites an import message "file:line: text" (a diag example) as
 * "feed.zip: file:line: text" with the feed's own line; other text is
 * copied as it is. */
void feed_merge_explain(const feed_merge *m, const char *msg, char *out, size_t cap);

#endif
