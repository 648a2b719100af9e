/* datadir.h — the layout of a data directory and its crash-safe updates.
 *
 * Why it exists: an import must never leave the server without a dataset.
 * Everything an import writes goes into a temporary directory; it becomes a
 * version only by rename(), and the active version changes only by renaming a
 * fresh symlink over `current`. A crash or kill -9 at any point therefore
 * leaves the previously active version active and intact; leftovers are
 * recognised by name and removed by the next import.
 *
 * Layout:
 *   DATA/current              symlink → versions/<v> (relative)
 *   DATA/live.sqlite          live data, outlives versions (stores.h)
 *   DATA/.import.lock         flock()ed by the importer
 *   DATA/.current-<pid>       a symlink about to replace `current`
 *   DATA/merge-cache/         the merged CSVs of the active version's
 *                             `import a b ...` and their index, for the next
 *                             re-import (import/merge_cache.h)
 *   DATA/versions/<v>/        a version: timetable.bin, schedule.sqlite,
 *                             shapes.sqlite, and COMPLETE, written last
 *   DATA/versions/.tmp-<v>-<pid>/  an import in progress
 *   DATA/versions/.old-<v>-<pid>/  a replaced version awaiting removal
 *   DATA/versions/<v>/.readers.lock  flock()ed shared by every process that
 *                             maps the version (serve, query): pruning skips
 *                             a version whose lock it cannot take exclusively
 *   DATA/versions/<v>/.retired  pruning wanted the version gone but a reader
 *                             held it: removed once the readers let go
 * <v> is 12 lowercase hex digits (the start of the feed's sha256).
 */
#ifndef TRANSIT_DATADIR_H
#define TRANSIT_DATADIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DATADIR_VERSION_LEN 12
#define DATADIR_MARKER "COMPLETE"
#define DATADIR_KEEP_VERSIONS 2
#define DATADIR_READERS_LOCK ".readers.lock"
#define DATADIR_RETIRED ".retired"
/* DATA/.merge-<pid>: the merged CSVs of `transitd import a b ...` while it
 * runs; a dead pid's is removed by the next prune. */
#define DATADIR_MERGE_PREFIX ".merge-"

/* Whether `name` is a version name: exactly 12 lowercase hex digits. */
bool datadir_is_version_name(const char *name);

/* Creates DATA (with its missing parents) and DATA/versions if absent. */
int datadir_prepare(const char *data_dir, char *err, size_t errlen);

/* Takes the exclusive import lock (flock on DATA/.import.lock). With wait
 * false, returns 1 at once when another process holds it. Returns 0 and the
 * descriptor in *fd, or -1 with err. Release with datadir_unlock (or exit). */
int datadir_lock(const char *data_dir, bool wait, int *fd, char *err, size_t errlen);
void datadir_unlock(int fd);

/* Pins a version directory for reading: a shared flock on its
 * .readers.lock (created when absent), kept until datadir_unpin. While it
 * is held, pruning leaves the directory alone. Returns 0 with the lock in
 * *fd; 1 when the version cannot be pinned here (no write access to create
 * the lock file, or locks unsupported): it may be read unprotected, err says
 * why; -1 when the directory is gone or being removed (err). */
int datadir_pin(const char *version_dir, int *fd, char *err, size_t errlen);
void datadir_unpin(int fd);

/* The active version: 0 and its name when DATA/current is a symlink to
 * versions/<v>; -1 when there is none (or it points elsewhere). */
int datadir_current(const char *data_dir, char version[DATADIR_VERSION_LEN + 1]);

/* The COMPLETE marker of a version directory. */
typedef struct datadir_marker {
    char version[DATADIR_VERSION_LEN + 1];
    uint64_t sequence;      /* import counter: higher is more recent */
    int64_t imported_at;    /* Unix seconds */
    char builder[32];       /* TRANSITD_VERSION of the writer */
    uint64_t feed_bytes;    /* the bytes the version's hash ran over (feed_hashed_bytes);
                               0: not recorded (markers written before it was) */
    char shapes_input[65];  /* the digest of shapes.sqlite's inputs (import/store_reuse.h), "" when
                               not recorded: the store may then not be reused */
    uint64_t shapes_rows;   /* the shapes.txt rows its build read */
} datadir_marker;

/* Reads dir/COMPLETE. Returns 0, or -1 when absent or unreadable (the
 * version is then incomplete). */
int datadir_read_marker(const char *version_dir, datadir_marker *m);
/* Writes dir/COMPLETE atomically (temp file, fsync, rename, fsync dir). */
int datadir_write_marker(const char *version_dir, const datadir_marker *m, char *err,
                         size_t errlen);
/* One more than the highest sequence among the complete versions. */
uint64_t datadir_next_sequence(const char *data_dir);
/* Whether a complete version written by `builder` may have been built from a
 * feed whose hash runs over feed_bytes bytes: one records that count, or
 * records none. False means no version of this data directory can be that
 * feed's (the import then builds while it hashes). */
bool datadir_may_hold_feed(const char *data_dir, const char *builder, uint64_t feed_bytes);

/* fsyncs every regular file directly inside dir, then dir itself. */
int datadir_sync_dir(const char *dir, char *err, size_t errlen);

/* Path helpers (snprintf into out; return -1 when it does not fit). */
int datadir_version_path(const char *data_dir, const char *version, char *out, size_t outlen);
int datadir_tmp_path(const char *data_dir, const char *version, pid_t pid, char *out,
                     size_t outlen);

/* Makes the complete directory tmp_dir the version DATA/versions/<v>. An
 * existing directory of that name is swapped out atomically (renameat2
 * RENAME_EXCHANGE, where available) and removed, so a version that `current`
 * points to never goes missing. DATA/versions is fsynced. */
int datadir_install(const char *data_dir, const char *tmp_dir, const char *version, char *err,
                    size_t errlen);

/* Points DATA/current at versions/<v>: symlink DATA/.current-<pid>, rename
 * it over DATA/current, fsync DATA. Atomic: readers see the old or the new
 * target, never a missing link. */
int datadir_activate(const char *data_dir, const char *version, char *err, size_t errlen);

typedef struct datadir_prune_result {
    int versions_removed;   /* complete versions beyond the kept ones */
    int leftovers_removed;  /* incomplete versions, stale .tmp-/.old-/.current- */
    int versions_in_use;    /* beyond the kept ones, but pinned by a reader: marked .retired */
} datadir_prune_result;

/* Removes old versions keeping `keep` complete ones: the active version
 * always, then the others with the highest sequence. Removes incomplete
 * version directories, and .tmp-/.old- directories and .current- links whose
 * process is dead. Never removes the active version, nor one a reader pins
 * (datadir_pin): that one is marked .retired and left to
 * datadir_collect_retired. Call with the lock held. */
int datadir_prune(const char *data_dir, int keep, datadir_prune_result *res, char *err,
                  size_t errlen);

/* Removes the .tmp-/.old- directories and .current- links of dead processes
 * only (what an interrupted import left), unless a reader pins them. Call
 * with the lock held. */
int datadir_remove_stale(const char *data_dir, int *removed, char *err, size_t errlen);

/* What a reader that let go of a version runs (serve, after it switched):
 * takes the import lock without waiting, then removes the versions pruning
 * marked .retired that are neither active nor pinned any more, and stale
 * leftovers. Returns 0 (the count in *removed, and in *still_pinned the
 * retired versions another reader still pins), 1 when an import holds the
 * lock (it prunes itself), -1 with err. */
int datadir_collect_retired(const char *data_dir, int *removed, int *still_pinned, char *err,
                            size_t errlen);

/* rm -rf path (does not follow symlinks). Returns 0 or -1. */
int datadir_remove_tree(const char *path);

/* Sum of the sizes of the regular files directly in dir. */
uint64_t datadir_dir_bytes(const char *dir);

#endif
