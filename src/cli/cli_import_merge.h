/* cli_import_merge.h — the steps `transitd import a.zip b.zip ...` adds to a
 * one-feed import (cli_import_merge.c). Private to src/cli. */
#ifndef TRANSIT_CLI_IMPORT_MERGE_H
#define TRANSIT_CLI_IMPORT_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "transit/datadir.h"
#include "transit/feed_merge.h"
#include "transit/import.h"

/* Hashes each feed (in[i].sha256 then points into shas[i]) and tells
 * whether the active version of data_dir is these feeds, by name and
 * SHA-256, in this order: then its name is in version and the import has
 * nothing to do. False with err set when a feed cannot be read. */
bool cli_merge_is_active(feed_merge_input *in, int n, char shas[][65], const char *data_dir,
                         char version[DATADIR_VERSION_LEN + 1], char *err, size_t errlen);

/* Merges the feeds into a new directory DATA/.merge-PID (its path in
 * dir_out), copying the unchanged feeds' rows from DATA/merge-cache (the
 * previous merge's directory) unless use_cache is false (--force). NULL
 * with err set (nothing left behind) on failure. */
feed_merge *cli_merge_feeds(const feed_merge_input *in, int n, const char *data_dir, bool use_cache,
                            char *dir_out, size_t dir_cap, char *err, size_t errlen);
/* After the import of the merged directory: when it activated the version,
 * the directory becomes DATA/merge-cache (the previous one removed), so the
 * cache holds the active version's merge only; otherwise it is removed and
 * the cache left as it was. */
void cli_merge_finish(const char *data_dir, const char *merged_dir, bool activated);
/* Removes DATA/merge-cache (an import of one feed: no merge to reuse). */
void cli_merge_cache_drop(const char *data_dir);
/* "a.zip + b.zip" for the summary. */
void cli_merge_label(const feed_merge *m, char *out, size_t cap);
/* One line per feed (name, ids namespaced, whether its rows came from the
 * merge cache) and the files not carried over. */
void cli_merge_print(FILE *out, const feed_merge *m);
/* The import's messages with the feeds' own files and lines. */
void cli_merge_explain(const feed_merge *m, import_result *r, char *err, size_t errlen);
/* Removes the merged directory. */
void cli_merge_remove(const char *dir);

#endif
