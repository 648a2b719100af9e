/* merge_cache.h — the index of the last merge's output, kept so that a
 * re-import of many feeds copies an unchanged feed's merged rows instead of
 * reading and rewriting them.
 *
 * Why it exists: `transitd import a.zip b.zip c.zip` writes every feed's rows
 * into one merged directory (feed_merge.h), and that pass was half of a
 * re-import's time when one feed of three changed. The merged directory of
 * the import that built the active version is kept as DATA/merge-cache, with
 * this index beside its files: for each feed, where its rows lie in each
 * merged file (byte range, line count, CRC-32 of the bytes), the ids it
 * defines and the ids it looks up that it does not own, the lines map, its
 * counts, and two keys. A feed's part is taken when both keys are equal:
 *   - the content key: the cache format, the merge rule's revision, the
 *     transitd executable's SHA-256, the feed's name and its SHA-256;
 *   - the context digest: the feed's position, the merged header of every
 *     file, and the set of the feed's ids that the other feeds make it
 *     namespace (its collision set).
 * Every range's CRC-32 is computed again before it is copied, and the index
 * carries its own SHA-256, so a partial or corrupt cache is not used: the
 * feed is merged from its zip as before. CRC-32 detects accidents (a cut or
 * changed file, a bad block), not a forger: whoever can write the data
 * directory can replace its stores as well. It runs at several GB/s where
 * SHA-256 ran at a tenth of that, over every cached byte of a re-import.
 * docs/ARCHITECTURE.md, "Many feeds", states the rule.
 */
#ifndef TRANSIT_MERGE_CACHE_H
#define TRANSIT_MERGE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MERGE_CACHE_DIR "merge-cache"
#define MERGE_CACHE_INDEX ".merge_index"  /* a dot name: the feed reader skips it */
#define MERGE_CACHE_MAX_FILES 16
#define MERGE_CACHE_COUNTS 6             /* agencies, stops, routes, trips, stop_times, renamed ids */

/* A byte range of one merged file that holds one feed's rows, and the
 * CRC-32 of its bytes (libdeflate's, as zip and gzip compute it). */
typedef struct mc_range {
    uint64_t off, len, lines;
    uint32_t crc;
} mc_range;

/* A run of merged lines that map one to one to the feed's own lines; out_line
 * counts from the feed's first line in that file (0). */
typedef struct mc_seg {
    uint64_t out_line, src_line;
} mc_seg;

/* A growable byte string; as an id list, entries {u8 table, u32 length,
 * bytes} one after another. */
typedef struct mc_buf {
    char *p;
    size_t len, cap;
} mc_buf;

typedef struct mc_feed {
    char key[65], context[65];
    uint64_t counts[MERGE_CACHE_COUNTS];
    char timezone[64], first_date[9], last_date[9];
    mc_buf defined;   /* the ids the feed defines, sorted, each once */
    mc_buf foreign;   /* the ids it looked up that another feed (or none) owns, sorted, each once */
    mc_range part[MERGE_CACHE_MAX_FILES];
    mc_range records[MERGE_CACHE_MAX_FILES];   /* its rows of transitd_record_feeds.txt per file */
    mc_seg *segs[MERGE_CACHE_MAX_FILES];
    uint32_t nsegs[MERGE_CACHE_MAX_FILES];
} mc_feed;

typedef struct mc_index {
    int nfiles, nfeeds;
    mc_feed *feeds;
} mc_index;

/* Parses an index (the bytes of MERGE_CACHE_INDEX) written for nfiles merged
 * files: 0, or -1 when it is not one whole, intact index (its SHA-256, its
 * magic, every length checked against the bytes). */
int mc_index_parse(const void *buf, size_t len, int nfiles, mc_index *out);
/* Reads and parses dir/MERGE_CACHE_INDEX: 0, or -1 (absent, unreadable, or
 * not intact). */
int mc_index_read(const char *dir, int nfiles, mc_index *out);
/* Writes dir/MERGE_CACHE_INDEX (a temporary file renamed over it). */
int mc_index_write(const char *dir, const mc_index *idx, char *err, size_t errlen);
void mc_index_free(mc_index *idx);
void mc_feed_free(mc_feed *f);

/* The SHA-256 of the running executable (share_executable_path), once per merge:
 * 0, or -1 where it cannot be read (the cache is then not used). */
int mc_build_id(char out[65]);

/* Id lists. */
int mc_buf_put(mc_buf *b, const void *p, size_t len);
int mc_ids_add(mc_buf *b, int table, const char *id, size_t len);
/* Sorts the list by table and id, each entry once. 0, or -1 out of memory. */
int mc_ids_sort_unique(mc_buf *b);
/* The entry at *pos (advanced past it): true, or false at the end. */
bool mc_ids_next(const mc_buf *b, size_t *pos, int *table, const char **id, size_t *len);
void mc_buf_free(mc_buf *b);

#endif
