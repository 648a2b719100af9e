/* api_dataset_delta.c — GET /v1/dataset/{version}/{file}?from={old}: a file
 * of the served version as a zstd patch against the same file of an older
 * version this server still holds.
 *
 * Why it exists: phones update their offline snapshot with these (issue
 * #25). Making a patch costs a fraction of a second per MB
 * (SNAPSHOT_DELTA_LEVEL), and every phone on the same old version asks for
 * the same one, so each is made once, by one thread at a time (a thousand
 * phones arriving together wait for one computation instead of running a
 * thousand), and kept in a small cache bounded in entries and bytes. The
 * cached patches are reference-counted: one being sent outlives its eviction.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api_internal.h"
#include "transit/datadir.h"
#include "transit/snapshot.h"
#include "transit/snapshot_delta.h"

#define DELTA_CACHE_ENTRIES 16
#define DELTA_CACHE_BYTES (64u << 20)

struct api_delta {
    char version[16], from[16], name[SNAPSHOT_NAME_MAX];
    unsigned char *bytes;
    size_t len;
    int refs;                 /* the cache's one, and one per holder; under cache_lock */
    uint64_t last_used;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static api_delta *cache[DELTA_CACHE_ENTRIES];
static uint64_t cache_clock;

static void drop_ref_locked(api_delta *d)
{
    if (--d->refs == 0) {
        free(d->bytes);
        free(d);
    }
}

void api_delta_release(api_delta *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&cache_lock);
    drop_ref_locked(d);
    pthread_mutex_unlock(&cache_lock);
}

const unsigned char *api_delta_bytes(const api_delta *d, size_t *len)
{
    *len = d->len;
    return d->bytes;
}

static api_delta *find_locked(const char *version, const char *from, const char *name)
{
    for (int i = 0; i < DELTA_CACHE_ENTRIES; i++)
        if (cache[i] && strcmp(cache[i]->version, version) == 0 && strcmp(cache[i]->from, from) == 0 &&
            strcmp(cache[i]->name, name) == 0)
            return cache[i];
    return NULL;
}

/* Keeps d (taking the cache's reference), evicting the least recently used
 * entries until the entries and bytes fit. */
static void insert_locked(api_delta *d)
{
    for (;;) {
        size_t bytes = d->len;
        int used = 0, oldest = -1;
        for (int i = 0; i < DELTA_CACHE_ENTRIES; i++) {
            if (!cache[i])
                continue;
            used++;
            bytes += cache[i]->len;
            if (oldest < 0 || cache[i]->last_used < cache[oldest]->last_used)
                oldest = i;
        }
        if ((used < DELTA_CACHE_ENTRIES && bytes <= DELTA_CACHE_BYTES) || oldest < 0)
            break;
        drop_ref_locked(cache[oldest]);
        cache[oldest] = NULL;
    }
    if (d->len > DELTA_CACHE_BYTES) {
        drop_ref_locked(d);   /* too large to keep: only the caller's reference stays */
        return;
    }
    for (int i = 0; i < DELTA_CACHE_ENTRIES; i++)
        if (!cache[i]) {
            cache[i] = d;
            return;
        }
    drop_ref_locked(d);
}

int api_dataset_delta(dataset *ds, const char *from, const char *name, api_delta **out,
                      api_problem *prob)
{
    *out = NULL;
    const char *version = dataset_version(ds);
    if (!datadir_is_version_name(from))
        return api_fail(prob, 400, "from", "from must be a version name (12 lower-case hex digits), "
                        "not '%.40s'", from);
    char err[300];
    const snapshot_manifest *m = api_dataset_manifest(ds, err, sizeof err);
    if (!m)
        return api_fail(prob, 500, NULL, "cannot list the dataset's files: %s", err);
    if (!snapshot_file_name_ok(name) || !snapshot_find(m, name))
        return api_fail(prob, 404, NULL, "version %s has no file '%.60s'", version, name);
    /* the old version sits beside the served one: DATA/versions/<from> */
    char old_dir[4200], old_path[4300], new_path[4300];
    snprintf(old_dir, sizeof old_dir, "%s/../%s", dataset_dir(ds), from);
    snprintf(old_path, sizeof old_path, "%s/%s", old_dir, name);
    snprintf(new_path, sizeof new_path, "%s/%s", dataset_dir(ds), name);
    datadir_marker marker;
    struct stat st;
    if (datadir_read_marker(old_dir, &marker) != 0 || strcmp(marker.version, from) != 0 ||
        stat(old_path, &st) != 0 || !S_ISREG(st.st_mode))
        return api_fail(prob, 404, "from", "version %s (or its %.60s) is not held here any more: "
                        "fetch the whole file", from, name);
    pthread_mutex_lock(&cache_lock);
    api_delta *d = find_locked(version, from, name);
    if (!d) {
        /* made under the lock: concurrent askers of any delta wait for this one */
        unsigned char *bytes = NULL;
        size_t len = 0;
        if (snapshot_delta_make(old_path, new_path, SNAPSHOT_DELTA_LEVEL, &bytes, &len, err,
                                sizeof err) != 0) {
            pthread_mutex_unlock(&cache_lock);
            return api_fail(prob, 404, "from", "no delta from version %s: %s; fetch the whole file",
                            from, err);
        }
        d = calloc(1, sizeof *d);
        if (!d) {
            free(bytes);
            pthread_mutex_unlock(&cache_lock);
            return api_fail(prob, 500, NULL, "out of memory");
        }
        snprintf(d->version, sizeof d->version, "%s", version);
        snprintf(d->from, sizeof d->from, "%s", from);
        snprintf(d->name, sizeof d->name, "%s", name);
        d->bytes = bytes;
        d->len = len;
        d->refs = 2;   /* the cache's and the caller's */
        insert_locked(d);
    } else {
        d->refs++;
    }
    d->last_used = ++cache_clock;
    pthread_mutex_unlock(&cache_lock);
    *out = d;
    return 200;
}

void api_dataset_delta_forget_all(void)
{
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < DELTA_CACHE_ENTRIES; i++)
        if (cache[i]) {
            drop_ref_locked(cache[i]);
            cache[i] = NULL;
        }
    pthread_mutex_unlock(&cache_lock);
}
