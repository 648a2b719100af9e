/* snapshot_delta.h — a file of one version as a binary patch against the same
 * file of an older version (zstd's --patch-from).
 *
 * Why it exists: a phone holding version A of the stores should not download
 * 13 MB again when the agency retimed 1 % of its trips (issue #25): the server
 * sends the new file compressed with the old one as zstd's dictionary prefix,
 * a few KB, and the phone decompresses it against its own old file. libzstd
 * does both sides (a well-kept library, not a home-made diff), and the result
 * is the format `zstd --patch-from=OLD -d` reads. The receiver always checks
 * the result against the manifest's SHA-256 and falls back to the whole file.
 */
#ifndef TRANSIT_SNAPSHOT_DELTA_H
#define TRANSIT_SNAPSHOT_DELTA_H

#include <stddef.h>
#include <stdint.h>

/* The largest file a delta is made for or applied to: zstd's window must
 * cover the old file and the new one (1 GB: windowLog 30). */
#define SNAPSHOT_DELTA_MAX_FILE (1ull << 30)
/* The compression level deltas are made with: Brooklyn's timetable.bin with
 * 1 % of trips retimed gives 10.8 KB in 0.19 s at 9, 5.1 KB in 3.9 s at 19. */
#define SNAPSHOT_DELTA_LEVEL 9

/* The patch turning old_path into new_path, into *out (malloc'd, *out_len
 * bytes). 0, or -1 with err (a file missing or over SNAPSHOT_DELTA_MAX_FILE,
 * out of memory). */
int snapshot_delta_make(const char *old_path, const char *new_path, int level, unsigned char **out,
                        size_t *out_len, char *err, size_t cap);

/* Applying a patch as its bytes arrive: the old file is mapped, what the
 * patch decompresses to is written to out_fd. new_size is the size the
 * manifest gives the new file: a patch that would make more, or that asks
 * for a larger window than one made for these sizes, is refused (a hostile
 * patch cannot make the phone allocate or write gigabytes). */
typedef struct snapshot_patcher snapshot_patcher;
snapshot_patcher *snapshot_patcher_new(const char *old_path, uint64_t new_size, int out_fd, char *err,
                                       size_t cap);
/* The next len bytes of the patch. 0, or -1 with err (not a zstd frame made
 * against this old file, a write error). */
int snapshot_patcher_write(snapshot_patcher *p, const void *data, size_t len, char *err, size_t cap);
/* The patch ended: 0 when its frame was complete, else -1 with err. *written
 * is what was written to out_fd. */
int snapshot_patcher_finish(snapshot_patcher *p, uint64_t *written, char *err, size_t cap);
void snapshot_patcher_free(snapshot_patcher *p);

#endif
