/* datadir_internal.h — what the pieces of the data directory code share.
 * Private to src/store.
 *
 * Why it exists: versions and activation (datadir.c), readers pinning a
 * version (datadir_readers.c) and pruning (datadir_prune.c) are separate
 * concerns over one layout (datadir.h): they name the same leftovers, report
 * errors alike, and remove a directory only under its readers' lock.
 */
#ifndef TRANSIT_DATADIR_INTERNAL_H
#define TRANSIT_DATADIR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "transit/datadir.h"

/* Leftover names: an import in progress (versions/.tmp-<v>-<pid>), a
 * replaced version awaiting removal (versions/.old-<v>-<pid>), a symlink
 * about to replace `current` (.current-<pid>). */
#define TMP_PREFIX ".tmp-"
#define OLD_PREFIX ".old-"
#define LINK_PREFIX ".current-"

/* err = fmt with `a` put in, then ": strerror(e)" when e is not 0. */
void datadir_set_err(char *err, size_t errlen, const char *fmt, const char *a, int e);
/* out = a/b; -1 when it does not fit. */
int datadir_path_join(char *out, size_t outlen, const char *a, const char *b);
/* out = DATA/versions; -1 with "data directory path too long" in err when
 * it does not fit. */
int datadir_versions_dir(const char *data_dir, char *out, size_t outlen, char *err, size_t errlen);
/* fsync of a file or directory by path; -1 with err. */
int datadir_fsync_path(const char *path, bool directory, char *err, size_t errlen);
/* rm -rf of `name` in the directory parent_fd (links are not followed). */
int datadir_remove_at(int parent_fd, const char *name);

/* datadir_readers.c: the remover's side of a version's readers lock. */

/* Takes the exclusive lock of a directory about to be removed: 1 when a
 * reader pins it; else 0 with the lock in *fd (-1 when there is no lock
 * file to take: the directory is removed unguarded). */
int datadir_lock_for_removal(int parent_fd, const char *name, int *fd);
/* Removes versions/<name> unless a reader pins it: 0 removed, 1 in use, -1
 * failed; `aside` renames it to .old-<name>-<pid> first. */
int datadir_remove_unpinned(int versions_fd, const char *name, bool aside);

#endif
