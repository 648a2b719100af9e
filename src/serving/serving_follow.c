/* serving_follow.c — a server follows the data directory's active version.
 *
 * Why it exists: see serving.h ("following"). Polling DATA/current (one stat a
 * second) rather than inotify or kqueue: it works the same on Linux and
 * macOS, on network and overlay file systems, and when DATA itself is
 * replaced by a mount or a symlink, at the price of at most one interval of
 * delay; the check costs a few microseconds.
 */
#include "transit/serving.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* After a switch, how many checks try to remove retired versions that
 * another process (a second server, a `transitd query`) still pins. */
#define COLLECT_CHECKS 120

struct serving_follower {
    serving *state;
    char active_file[4200];      /* DATA/current/timetable.bin */
    int interval_ms;             /* 0: SIGHUP only */
    /* main thread only */
    bool failed;                 /* the last attempt on failed_dev/ino failed */
    uint64_t failed_dev, failed_ino;
    time_t retry_at;
    int collect_checks;          /* collection attempts left (0: none pending) */
    /* shared with /readyz, under lock */
    pthread_mutex_t lock;
    char failed_version[DATADIR_VERSION_LEN + 1];
    char failed_why[300];
};

serving_follower *serving_follower_new(serving *s, unsigned interval_s)
{
    serving_follower *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->state = s;
    snprintf(f->active_file, sizeof f->active_file, "%.4096s/current/timetable.bin", serving_data_dir(s));
    f->interval_ms = (int)interval_s * 1000;
    f->collect_checks = COLLECT_CHECKS;   /* what a previous server left retired */
    pthread_mutex_init(&f->lock, NULL);
    return f;
}

void serving_follower_free(serving_follower *f)
{
    if (!f)
        return;
    pthread_mutex_destroy(&f->lock);
    free(f);
}

int serving_follower_wait_ms(const serving_follower *f)
{
    if (f->interval_ms > 0)
        return f->interval_ms;
    return f->collect_checks > 0 ? 1000 : -1;
}

static void set_failure(serving_follower *f, const char *version, const char *why)
{
    pthread_mutex_lock(&f->lock);
    snprintf(f->failed_version, sizeof f->failed_version, "%s", version);
    snprintf(f->failed_why, sizeof f->failed_why, "%s", why);
    pthread_mutex_unlock(&f->lock);
}

static void warn_if_unpinned(serving *s)
{
    dataset *ds = serving_acquire_dataset(s);
    if (!ds)
        return;
    const char *why = dataset_pin_problem(ds);
    if (why)
        fprintf(stderr, "transitd: warning: %s; an import may prune version %s while it is "
                        "served\n", why, dataset_version(ds));
    dataset_release(ds);
}

/* Re-opens DATA; remembers a failure for `seen` (the active file's stat,
 * or NULL when it has none). */
static void switch_to_active(serving_follower *f, const char *active, const struct stat *seen)
{
    char err[512];
    if (serving_reload(f->state, err, sizeof err)) {
        f->failed = false;
        set_failure(f, "", "");
        f->collect_checks = COLLECT_CHECKS;
        warn_if_unpinned(f->state);
        return;
    }
    f->failed = true;
    f->failed_dev = seen ? (uint64_t)seen->st_dev : 0;
    f->failed_ino = seen ? (uint64_t)seen->st_ino : 0;
    f->retry_at = time(NULL) + SERVING_FOLLOW_RETRY_SECONDS;
    set_failure(f, active, err);
}

static void collect_retired(serving_follower *f)
{
    char err[512];
    int removed = 0, pinned = 0;
    int rc = datadir_collect_retired(serving_data_dir(f->state), &removed, &pinned, err,
                                     sizeof err);
    if (removed > 0)
        fprintf(stderr, "transitd: removed %d version(s) an import retired while they were "
                        "served\n", removed);
    if (rc < 0) {
        fprintf(stderr, "transitd: cannot remove retired versions: %s\n", err);
        f->collect_checks = 0;
    } else if (rc == 0 && pinned == 0) {
        f->collect_checks = 0;   /* nothing left waiting */
    } else {
        f->collect_checks--;     /* an import runs, or another reader pins one */
    }
}

void serving_follower_check(serving_follower *f, bool sighup)
{
    char active[DATADIR_VERSION_LEN + 1];
    bool names_version = datadir_current(serving_data_dir(f->state), active) == 0;
    struct stat st;
    bool seen = names_version && stat(f->active_file, &st) == 0;
    dataset *ds = serving_acquire_dataset(f->state);
    bool current = ds && seen && dataset_maps_file(ds, f->active_file);
    bool serving = ds != NULL;
    if (ds)
        dataset_release(ds);

    if (sighup) {
        if (current)
            fprintf(stderr, "transitd: SIGHUP: already serving the active version %s\n", active);
        else
            switch_to_active(f, names_version ? active : "", seen ? &st : NULL);
    } else if (current) {
        if (f->failed) {
            f->failed = false;
            set_failure(f, "", "");
        }
    } else if ((f->interval_ms > 0 || !serving) && names_version) {
        /* following, or --wait-for-data before the first import: a server
         * with nothing to serve takes the first version even when following
         * is off */
        /* the same file failed before, or the same version name whose file
         * is missing: wait for a change, SIGHUP or the retry time */
        bool same_failure = f->failed &&
                            (seen ? (uint64_t)st.st_dev == f->failed_dev &&
                                        (uint64_t)st.st_ino == f->failed_ino
                                  : f->failed_dev == 0 && f->failed_ino == 0 &&
                                        strcmp(f->failed_version, active) == 0);
        if (!same_failure || time(NULL) >= f->retry_at)
            switch_to_active(f, active, seen ? &st : NULL);
    }
    if (f->collect_checks > 0)
        collect_retired(f);
}

void serving_follower_state(serving_follower *f, const dataset *served, serving_version_state *out)
{
    memset(out, 0, sizeof *out);
    out->has_active = datadir_current(serving_data_dir(f->state), out->active) == 0;
    if (!served || !out->has_active || dataset_maps_file(served, f->active_file))
        return;
    out->stale = true;
    char why[sizeof f->failed_why] = "";
    pthread_mutex_lock(&f->lock);
    bool failed = f->failed_version[0] && strcmp(f->failed_version, out->active) == 0;
    if (failed)
        snprintf(why, sizeof why, "%s", f->failed_why);
    pthread_mutex_unlock(&f->lock);
    if (failed)
        snprintf(out->problem, sizeof out->problem,
                 "the active version %s cannot be served: %s", out->active, why);
    else if (f->interval_ms == 0)
        snprintf(out->problem, sizeof out->problem,
                 "the active version is %s and automatic following is off "
                 "(--follow-interval 0): send SIGHUP", out->active);
    else
        out->switching = true;
}
