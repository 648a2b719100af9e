/* cli_import_merge.c — what `transitd import a.zip b.zip ...` does around the
 * one-feed import: the merge into a scratch directory inside the data
 * directory (same file system), kept afterwards as the merge cache when the
 * import activated its version (removed otherwise), a line per feed, and the
 * import's messages pointed back at the feeds' own files and lines.
 *
 * Why it exists: cli_import.c parses options and prints one import's
 * summary; the merge's bookkeeping is kept out of it.
 */
#include "cli/cli_import_merge.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import/merge_cache.h"
#include "transit/cli.h"
#include "transit/feed.h"
#include "transit/stores.h"

void cli_merge_remove(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char path[4096 + 256];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

bool cli_merge_is_active(feed_merge_input *in, int n, char shas[][65], const char *data_dir,
                         char version[DATADIR_VERSION_LEN + 1], char *err, size_t errlen)
{
    for (int i = 0; i < n; i++) {
        feed_t *f = feed_open(in[i].path, err, errlen);
        if (!f)
            return false;
        int rc = feed_sha256(f, shas[i], err, errlen);
        feed_close(f);
        if (rc != 0)
            return false;
        in[i].sha256 = shas[i];
    }
    err[0] = 0;
    if (datadir_current(data_dir, version) != 0)
        return false;
    char dir[4096], why[256];
    snprintf(dir, sizeof dir, "%s/current", data_dir);
    schedule_db *db = schedule_open(dir, why, sizeof why);
    if (!db)
        return false;
    bool same = schedule_feed_count(db) == n;
    for (int i = 0; same && i < n; i++) {
        feed_entry e;
        char name[FEED_MERGE_NAME_MAX];
        feed_merge_input_name(&in[i], name);
        same = schedule_feed_at(db, i, &e) == 0 && strcmp(e.name, name) == 0 && strcmp(e.sha256, shas[i]) == 0;
    }
    schedule_close(db);
    return same;
}

feed_merge *cli_merge_feeds(const feed_merge_input *in, int n, const char *data_dir, bool use_cache,
                            char *dir_out, size_t dir_cap, char *err, size_t errlen)
{
    if (!cli_make_directories(data_dir)) {
        snprintf(err, errlen, "%s: cannot create: %s", data_dir, strerror(errno));
        return NULL;
    }
    int len = snprintf(dir_out, dir_cap, "%s/" DATADIR_MERGE_PREFIX "%ld", data_dir, (long)getpid());
    if (len < 0 || (size_t)len >= dir_cap) {
        snprintf(err, errlen, "%s: path too long", data_dir);
        return NULL;
    }
    cli_merge_remove(dir_out);  /* a leftover of a killed import with this pid */
    if (mkdir(dir_out, 0755) != 0) {
        snprintf(err, errlen, "%s: cannot create: %s", dir_out, strerror(errno));
        return NULL;
    }
    char cache[4096 + 32];
    snprintf(cache, sizeof cache, "%s/" MERGE_CACHE_DIR, data_dir);
    feed_merge *m = feed_merge_write_cached(in, n, dir_out, use_cache ? cache : NULL, err, errlen);
    if (!m)
        cli_merge_remove(dir_out);
    return m;
}

void cli_merge_finish(const char *data_dir, const char *merged_dir, bool activated)
{
    char cache[4096 + 32], old[4096 + 64];
    snprintf(cache, sizeof cache, "%s/" MERGE_CACHE_DIR, data_dir);
    /* the previous cache moves aside under a name the prune removes once this process is gone */
    snprintf(old, sizeof old, "%s/" DATADIR_MERGE_PREFIX "old-%ld", data_dir, (long)getpid());
    if (!activated) {
        cli_merge_remove(merged_dir);
        return;
    }
    cli_merge_remove(old);
    if (rename(cache, old) != 0 && errno != ENOENT) {
        cli_merge_remove(merged_dir);
        return;
    }
    if (rename(merged_dir, cache) != 0)
        cli_merge_remove(merged_dir);
    cli_merge_remove(old);
}

void cli_merge_cache_drop(const char *data_dir)
{
    char cache[4096 + 32];
    snprintf(cache, sizeof cache, "%s/" MERGE_CACHE_DIR, data_dir);
    cli_merge_remove(cache);
}

void cli_merge_label(const feed_merge *m, char *out, size_t cap)
{
    out[0] = 0;
    for (int i = 0; i < feed_merge_count(m); i++) {
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s%s", i ? " + " : "", feed_merge_path(m, i));
    }
}

void cli_merge_print(FILE *out, const feed_merge *m)
{
    for (int i = 0; i < feed_merge_count(m); i++)
        fprintf(out, "feed %d: %s as '%s', %llu id(s) namespaced as %s:ID%s\n", i, feed_merge_path(m, i),
                feed_merge_name(m, i), (unsigned long long)feed_merge_renamed(m, i), feed_merge_name(m, i),
                feed_merge_from_cache(m, i) ? " (unchanged: its rows from the merge cache)" : "");
    const char *skipped = feed_merge_skipped(m);
    if (skipped[0])
        fprintf(out, "not carried into a merged dataset:\n%s", skipped);
}

void cli_merge_explain(const feed_merge *m, import_result *r, char *err, size_t errlen)
{
    char buf[1024];
    for (int i = 0; i < r->diag.nexamples && i < DIAG_EXAMPLES; i++) {
        feed_merge_explain(m, r->diag.examples[i], buf, sizeof buf);
        snprintf(r->diag.examples[i], sizeof r->diag.examples[i], "%s", buf);
    }
    if (err[0]) {
        feed_merge_explain(m, err, buf, sizeof buf);
        snprintf(err, errlen, "%s", buf);
    }
}
