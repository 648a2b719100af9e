/* client_update.c — bringing a phone's snapshot to the version a server
 * offers (transit/client.h: transit_update_*).
 *
 * Why it exists: a phone must update without a full download and without
 * ever opening a broken snapshot, over a network it does not control. The
 * app does the HTTP (URLSession on iOS, libcurl in `transit fetch`); this
 * file decides what to ask for, and keeps the data directory right:
 *   - a file the held version already has with the manifest's digest is
 *     linked (or copied), not fetched;
 *   - a file the held version has in another form is asked for as a zstd
 *     patch against it (?from=<held>, transit/snapshot_delta.h); a patch
 *     that does not apply or does not hash to the manifest is dropped and
 *     the whole file asked for instead;
 *   - a whole file resumes from the bytes already staged (Range), so a
 *     transfer cut by a tunnel, or by the app being killed, goes on from
 *     there: a staging directory left by a dead process is adopted;
 *   - the new version is activated with the importer's atomic steps only
 *     when every file matches the manifest (transit/datadir.h), and opened
 *     once, so that the indexes a trusted open keeps (dataset_cache.c) are
 *     there before the app's next start.
 */
#include "transit/client.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/departure_json.h"
#include "transit/datadir.h"
#include "transit/fd_io.h"
#include "transit/query.h"
#include "transit/snapshot.h"
#include "transit/snapshot_delta.h"

/* Files smaller than this are fetched whole: a patch would save nothing. */
#define DELTA_MIN_SIZE (64 * 1024)

enum { FILE_PENDING, FILE_READY };

struct transit_update {
    char dir[4096];
    char held[DATADIR_VERSION_LEN + 1];     /* the active version, or "" */
    char held_dir[4200], staging[4200];
    snapshot_manifest m;
    int state[SNAPSHOT_MAX_FILES];
    bool delta_failed[SNAPSHOT_MAX_FILES];
    bool up_to_date, committed;
    /* the open step */
    bool step_open;
    transit_step step;
    uint32_t step_file;
    int fd;
    snapshot_patcher *patcher;
    uint64_t step_bytes;
    bool step_broken;                       /* a write failed: the step ends in failure */
    transit_update_stats stats;
};

static void fail(transit_error *err, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fail(transit_error *err, int status, const char *fmt, ...)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

static bool pid_alive(long pid)
{
    return pid > 0 && (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* Takes over a staging directory of this version that a dead process left
 * (.tmp-<v>-<pid>), so that its bytes are resumed instead of fetched again. */
static void adopt_staging(transit_update *u)
{
    char versions[4200], prefix[40];
    snprintf(versions, sizeof versions, "%s/versions", u->dir);
    snprintf(prefix, sizeof prefix, ".tmp-%s-", u->m.version);
    DIR *d = opendir(versions);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char *end;
        long pid = strtol(e->d_name + strlen(prefix), &end, 10);
        if (*end || pid_alive(pid))
            continue;
        char from[4500];
        snprintf(from, sizeof from, "%s/%s", versions, e->d_name);
        if (rename(from, u->staging) == 0)
            break;
    }
    closedir(d);
}

transit_update *transit_update_begin(const char *dir, const char *manifest, size_t length,
                                     transit_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    transit_update *u = calloc(1, sizeof *u);
    if (!u) {
        fail(err, 503, "out of memory");
        return NULL;
    }
    u->fd = -1;
    char why[512];
    if (strlen(dir) >= sizeof u->dir) {
        fail(err, 400, "the directory name is too long");
        free(u);
        return NULL;
    }
    snprintf(u->dir, sizeof u->dir, "%s", dir);
    if (snapshot_manifest_parse(manifest ? manifest : "", manifest ? length : 0, &u->m, why, sizeof why) != 0) {
        fail(err, 502, "not a dataset manifest: %s", why);
        free(u);
        return NULL;
    }
    if (datadir_prepare(dir, why, sizeof why) != 0) {
        fail(err, 503, "%s", why);
        free(u);
        return NULL;
    }
    if (datadir_current(dir, u->held) != 0)
        u->held[0] = '\0';
    if (u->held[0])
        datadir_version_path(dir, u->held, u->held_dir, sizeof u->held_dir);
    if (strcmp(u->held, u->m.version) == 0) {
        u->up_to_date = true;
        return u;
    }
    if (datadir_tmp_path(dir, u->m.version, getpid(), u->staging, sizeof u->staging) != 0) {
        fail(err, 400, "the directory name is too long");
        free(u);
        return NULL;
    }
    struct stat st;
    if (stat(u->staging, &st) != 0)
        adopt_staging(u);
    if (mkdir(u->staging, 0755) != 0 && errno != EEXIST) {
        fail(err, 503, "cannot create %s: %s", u->staging, strerror(errno));
        free(u);
        return NULL;
    }
    return u;
}

const char *transit_update_version(const transit_update *u) { return u->m.version; }

void transit_update_get_stats(const transit_update *u, transit_update_stats *out) { *out = u->stats; }

static void close_step(transit_update *u)
{
    snapshot_patcher_free(u->patcher);
    u->patcher = NULL;
    if (u->fd >= 0)
        close(u->fd);
    u->fd = -1;
    u->step_open = false;
}

/* Whether path holds exactly the file f (size and SHA-256). */
static bool holds(const char *path, const snapshot_file *f)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != f->size)
        return false;
    char hex[65], why[300];
    uint64_t size;
    return snapshot_hash_file(path, hex, &size, why, sizeof why) == 0 && size == f->size &&
           strcmp(hex, f->sha256) == 0;
}

/* Copies from into a new file to (a hard link where the file system has them). */
static bool copy_file(const char *from, const char *to)
{
    unlink(to);
    if (link(from, to) == 0)
        return true;
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int out = in >= 0 ? open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    bool ok = in >= 0 && out >= 0;
    char buf[64 * 1024];
    while (ok) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        ok = fd_write_all(out, buf, (size_t)n) == 0;
    }
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    if (!ok)
        unlink(to);
    return ok;
}

int transit_update_next(transit_update *u, transit_step *step)
{
    if (u->step_open)
        close_step(u);   /* a step left without its end: decided afresh */
    if (u->up_to_date || u->committed)
        return 0;
    for (uint32_t i = 0; i < u->m.nfiles; i++) {
        const snapshot_file *f = &u->m.files[i];
        if (u->state[i] == FILE_READY)
            continue;
        char staged[4400], held[4400];
        snprintf(staged, sizeof staged, "%s/%s", u->staging, f->name);
        snprintf(held, sizeof held, "%s/%s", u->held_dir, f->name);
        struct stat st;
        uint64_t have = stat(staged, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
        if (have == f->size && holds(staged, f)) {
            u->state[i] = FILE_READY;   /* staged by an earlier run */
            continue;
        }
        if (have >= f->size) {
            unlink(staged);
            have = 0;
        }
        bool held_has = u->held[0] && stat(held, &st) == 0 && S_ISREG(st.st_mode);
        if (held_has && have == 0 && (uint64_t)st.st_size == f->size && holds(held, f) &&
            copy_file(held, staged)) {
            u->state[i] = FILE_READY;
            u->stats.files_kept++;
            continue;
        }
        memset(&u->step, 0, sizeof u->step);
        snprintf(u->step.file, sizeof u->step.file, "%s", f->name);
        snprintf(u->step.sha256, sizeof u->step.sha256, "%s", f->sha256);
        u->step.size = f->size;
        bool delta = held_has && have == 0 && !u->delta_failed[i] && f->size >= DELTA_MIN_SIZE &&
                     (uint64_t)st.st_size >= DELTA_MIN_SIZE && f->size <= SNAPSHOT_DELTA_MAX_FILE &&
                     (uint64_t)st.st_size <= SNAPSHOT_DELTA_MAX_FILE;
        char why[300];
        if (delta) {
            u->fd = open(staged, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            u->patcher = u->fd >= 0 ? snapshot_patcher_new(held, f->size, u->fd, why, sizeof why) : NULL;
            if (!u->patcher) {
                close_step(u);
                u->delta_failed[i] = true;
                delta = false;
            }
        }
        if (delta) {
            u->step.kind = TRANSIT_STEP_DELTA;
            snprintf(u->step.path, sizeof u->step.path, "/v1/dataset/%s/%s?from=%s", u->m.version,
                     f->name, u->held);
        } else {
            u->fd = open(staged, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            u->step.kind = TRANSIT_STEP_FILE;
            u->step.resume_from = have;
            snprintf(u->step.path, sizeof u->step.path, "/v1/dataset/%s/%s", u->m.version, f->name);
        }
        u->step_file = i;
        u->step_open = true;
        u->step_bytes = 0;
        u->step_broken = u->fd < 0;
        *step = u->step;
        return 1;
    }
    return 0;
}

int transit_update_write(transit_update *u, const void *bytes, size_t length, transit_error *err)
{
    if (!u->step_open) {
        fail(err, 400, "no step is open (call transit_update_next first)");
        return -1;
    }
    u->stats.bytes_received += length;
    u->step_bytes += length;
    if (u->step_broken)
        return 0;   /* reported by transit_update_end */
    char why[300];
    if (u->patcher) {
        if (snapshot_patcher_write(u->patcher, bytes, length, why, sizeof why) != 0) {
            u->step_broken = true;
            return 0;   /* a patch that does not apply: the whole file comes next */
        }
        return 0;
    }
    if (fd_write_all(u->fd, bytes, length) != 0) {
        fail(err, 503, "cannot write %s: %s", u->step.file, strerror(errno));
        u->step_broken = true;
        return -1;
    }
    return 0;
}

int transit_update_end(transit_update *u, int status, transit_error *err)
{
    if (!u->step_open) {
        fail(err, 400, "no step is open (call transit_update_next first)");
        return -1;
    }
    uint32_t i = u->step_file;
    const snapshot_file *f = &u->m.files[i];
    char staged[4400], why[300];
    snprintf(staged, sizeof staged, "%s/%s", u->staging, f->name);
    if (u->step.kind == TRANSIT_STEP_DELTA) {
        uint64_t written = 0;
        bool applied = status == 200 && !u->step_broken &&
                       snapshot_patcher_finish(u->patcher, &written, why, sizeof why) == 0 &&
                       fsync(u->fd) == 0;
        close_step(u);
        if (applied && written == f->size && holds(staged, f)) {
            u->state[i] = FILE_READY;
            u->stats.deltas_applied++;
            return 0;
        }
        /* not offered, cut, not applying or not matching: the whole file next */
        unlink(staged);
        u->delta_failed[i] = true;
        u->stats.deltas_failed++;
        return 0;
    }
    bool synced = u->fd >= 0 && fsync(u->fd) == 0;
    bool broken = u->step_broken;
    uint64_t resumed_from = u->step.resume_from;
    close_step(u);
    if (broken || !synced) {
        fail(err, 503, "cannot write %s in %s", f->name, u->staging);
        return -1;
    }
    if (status == 200 && resumed_from > 0) {
        /* the whole file came after the bytes held: start it again */
        unlink(staged);
        fail(err, 502, "the server sent all of %s instead of its rest; it is fetched whole next",
             f->name);
        return -1;
    }
    if (status != 200 && status != 206) {
        fail(err, status >= 400 && status < 600 ? status : 502,
             "the server answered %d for %s of version %s%s", status, f->name, u->m.version,
             status == 404 ? " (it no longer serves it: read the manifest again)" : "");
        return -1;
    }
    struct stat st;
    uint64_t have = stat(staged, &st) == 0 ? (uint64_t)st.st_size : 0;
    if (have < f->size) {
        fail(err, 504, "the transfer of %s stopped at %llu of %llu bytes; the next step resumes it",
             f->name, (unsigned long long)have, (unsigned long long)f->size);
        return -1;
    }
    if (!holds(staged, f)) {
        unlink(staged);
        fail(err, 502, "%s does not match the manifest's SHA-256; dropped, and fetched whole next",
             f->name);
        return -1;
    }
    u->state[i] = FILE_READY;
    u->stats.files_fetched++;
    return 0;
}

int transit_update_commit(transit_update *u, transit_error *err)
{
    if (u->step_open)
        close_step(u);
    if (u->up_to_date || u->committed)
        return 0;
    for (uint32_t i = 0; i < u->m.nfiles; i++)
        if (u->state[i] != FILE_READY) {
            fail(err, 409, "%s of version %s is not ready yet", u->m.files[i].name, u->m.version);
            return -1;
        }
    char why[512];
    datadir_marker marker;
    if (datadir_read_marker(u->staging, &marker) != 0 || strcmp(marker.version, u->m.version) != 0) {
        fail(err, 502, "the %s of version %s names another version", DATADIR_MARKER, u->m.version);
        return -1;
    }
    int lock_fd = -1;
    if (datadir_lock(u->dir, true, &lock_fd, why, sizeof why) != 0) {
        fail(err, 503, "%s", why);
        return -1;
    }
    int rc = datadir_sync_dir(u->staging, why, sizeof why) == 0 &&
                     datadir_install(u->dir, u->staging, u->m.version, why, sizeof why) == 0 &&
                     datadir_activate(u->dir, u->m.version, why, sizeof why) == 0
                 ? 0
                 : -1;
    if (rc == 0) {
        datadir_prune_result pruned;
        char prune_why[256];
        datadir_prune(u->dir, DATADIR_KEEP_VERSIONS, &pruned, prune_why, sizeof prune_why);
        u->committed = true;
    } else {
        fail(err, 503, "cannot activate version %s: %s", u->m.version, why);
    }
    datadir_unlock(lock_fd);
    if (rc == 0) {
        /* the first open derives the indexes and the rows' texts and keeps them
         * (dataset_open_trusted): done here, where the app updates in the
         * background, so that the open after an update is as fast as any */
        dataset *ds = dataset_open_trusted(u->dir, why, sizeof why);
        if (ds) {
            departure_json_prepare(ds, why, sizeof why);
            dataset_close(ds);
        }
    }
    return rc;
}

void transit_update_free(transit_update *u)
{
    if (!u)
        return;
    if (u->step_open)
        close_step(u);
    free(u);
}
