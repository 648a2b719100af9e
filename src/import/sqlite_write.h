/* sqlite_write.h — what the SQLite store writers (schedule_write.c,
 * shapes_write.c) share. Private to src/.
 *
 * Why it exists: both stores are built the same way: a database in a
 * scratch file beside the store (PATH.build-PID, removed afterwards),
 * filled in one transaction, written to its path in one pass by VACUUM INTO
 * (every B-tree page full), closed, fsynced, and removed again on any
 * failure; both trim CSV fields and grow buffers alike. One copy of that
 * sequence keeps the two writers from drifting apart.
 */
#ifndef TRANSIT_STORE_BUILD_H
#define TRANSIT_STORE_BUILD_H

#include <stddef.h>

#include <sqlite3.h>

#include "transit/csv.h"
#include "transit/store_write.h"

/* The stats to fill: `st` zeroed, or `local` (zeroed) when st is NULL. */
store_stats *store_stats_reset(store_stats *st, store_stats *local);

/* Fills the scratch `db` (extended result codes on) and writes it to
 * `path`, normally by ending with store_build_vacuum_into. Returns 0, or -1
 * with a message already in the caller's err. */
typedef int (*store_fill_fn)(void *ctx, sqlite3 *db, const char *path);

/* Builds the store file `path`, which must not exist (`store_name`, e.g.
 * "shapes.sqlite", names it in that error): opens the scratch database,
 * calls fill, closes and removes it, fsyncs. On failure the file is removed and -1 returned
 * with err set (by fill or here). On success st->bytes and st->seconds are
 * set; st comes from store_stats_reset. */
int store_build_file(const char *path, const char *store_name, store_fill_fn fill, void *ctx,
                     store_stats *st, char *err, size_t errlen);

/* VACUUM INTO `path`. Returns SQLITE_OK, or the failing SQLite code with
 * *step set to "prepare" or "write" for the caller's message. */
int store_build_vacuum_into(sqlite3 *db, const char *path, const char **step);

/* The field without leading and trailing blanks and tabs; an absent field
 * becomes "". */
csv_field store_field_trimmed(csv_field f);

/* SQLite's BINARY collation of two byte strings (memcmp over the common
 * length, then the shorter first): <0, 0 or >0. Sorting rows this way lets
 * them be appended in key order. */
int store_binary_order(const char *a, size_t alen, const char *b, size_t blen);

/* Returns `buf` grown (doubling from `first`) to hold `need` elements of
 * `elem` bytes, updating *cap; NULL when out of memory (then `buf` is still
 * valid). */
void *store_grow(void *buf, size_t *cap, size_t need, size_t first, size_t elem);

#endif
