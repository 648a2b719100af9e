/* feed.h — where GTFS bytes come from: a .zip (flat, or with the files in one
 * subfolder) or a directory of .txt files.
 *
 * Why it exists: the importer and the store writers read several files from
 * the same feed, some on different threads. This module hides zip vs
 * directory, finds the members, and streams each member's bytes into the CSV
 * reader in chunks, so nobody else touches libzip or file descriptors.
 * A feed_t is immutable after feed_open, but for feed_stop's flag, and safe
 * to share between threads: every read opens its own zip handle or file.
 */
#ifndef TRANSIT_FEED_H
#define TRANSIT_FEED_H

#include <stddef.h>
#include <stdint.h>
#include "transit/csv.h"

typedef struct feed feed_t;

/* Opens a feed. On failure returns NULL and writes a message naming the path
 * into err (size errlen). */
feed_t *feed_open(const char *path, char *err, size_t errlen);
void feed_close(feed_t *f);
/* Ends every read of f, from any thread: feed_stream and feed_read_all then
 * fail (-1, err "NAME: reading stopped (feed_stop)"), a read under way at its
 * next chunk (1 MiB). For an import that learns, while its writers read, that
 * their work is not needed. Irreversible. */
void feed_stop(feed_t *f);

/* The path given to feed_open. */
const char *feed_path(const feed_t *f);
/* Whether the feed has a member named `name` (e.g. "stops.txt"). */
int feed_has(const feed_t *f, const char *name);
/* Uncompressed size of a member, or -1 when absent. */
int64_t feed_size(const feed_t *f, const char *name);
/* Names of all members (the basename, e.g. "fare_rules.txt"), sorted, count in
 * *n. Members are the .txt files: of the zip's top level, or else of its one
 * folder ("__MACOSX/" and dot files skipped; .txt files in several folders
 * make feed_open fail); of a directory, its regular .txt files. */
const char *const *feed_members(const feed_t *f, int *n);
/* SHA-256 of the feed: of the zip file's bytes, or for a directory of its
 * .txt members in name order, each as its name, a NUL byte, then its bytes.
 * Hex, 64 chars + NUL. */
int feed_sha256(const feed_t *f, char out[65], char *err, size_t errlen);
/* How many bytes feed_sha256 hashes, as feed_open found the feed: the zip's
 * size, or for a directory the sum over members of name + 1 + size. Two feeds
 * with different counts have different hashes; equal counts prove nothing. */
uint64_t feed_hashed_bytes(const feed_t *f);

/* Called as bytes of a member are produced. Return non-zero to stop. The
 * bytes are gone once it returns: copy what must be kept. */
typedef int (*feed_chunk_fn)(void *ctx, const char *buf, size_t len);

/* Streams a member's bytes in chunks (about 1 MiB). Returns 0 on success,
 * the callback's non-zero return, or -1 on an I/O or zip error (message in
 * err, naming the member). */
int feed_stream(const feed_t *f, const char *name, feed_chunk_fn fn, void *ctx,
                char *err, size_t errlen);

/* Reads a whole member into memory. For a directory member the file is
 * mapped read-only instead of copied. Release with feed_buffer_free. */
typedef struct feed_buffer {
    const char *data;
    size_t len;
    int mapped;   /* internal: 1 if mmap'ed, 0 if malloc'ed */
} feed_buffer;
int feed_read_all(const feed_t *f, const char *name, feed_buffer *out, char *err, size_t errlen);
void feed_buffer_free(feed_buffer *b);

/* Convenience: streams a member through a csv_parser with the given keys.
 * Returns 0 on success; on a CSV or I/O error returns non-zero with *err filled
 * (csv errors keep file/line/column): a CSV_ERR_* (CSV_ERR_IO when the member
 * is absent or cannot be read), or the row callback's non-zero return. An
 * empty member is no error: no rows, no column found. */
int feed_parse_csv(const feed_t *f, const char *name, const char *const *keys, int nkeys,
                   csv_row_fn row_fn, void *ctx, int *has_column /* out: nkeys flags, may be NULL */,
                   csv_error *err);
/* The same, passing the records the parser rejects (csv.h) to reject_fn. */
int feed_parse_csv_rejects(const feed_t *f, const char *name, const char *const *keys, int nkeys,
                           csv_row_fn row_fn, void *ctx, csv_reject_fn reject_fn, void *reject_ctx,
                           int *has_column, csv_error *err);

#endif
