/* snapshot.h — a version of the stores as a content-addressed snapshot: the
 * list of its files with their sizes and SHA-256 digests.
 *
 * Why it exists: a replica on another host (or a phone) receives a dataset as
 * plain files over HTTP; the manifest says which files make the version and
 * what each must hash to, so a transfer is verified before anything is
 * activated, and an interrupted one can resume from the bytes it has. The
 * same manifest is served by `GET /v1/dataset` and written by `transitd
 * export`, so a static mirror (nginx, a CDN) serves exactly what a primary
 * does.
 */
#ifndef TRANSIT_SNAPSHOT_H
#define TRANSIT_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNAPSHOT_MAX_FILES 16
#define SNAPSHOT_NAME_MAX 64

typedef struct snapshot_file {
    char name[SNAPSHOT_NAME_MAX];   /* a plain file name, no '/' */
    uint64_t size;
    char sha256[65];                /* lower-case hex */
} snapshot_file;

typedef struct snapshot_manifest {
    char version[16];               /* the version directory's name */
    int64_t created;                /* Unix seconds: the import's (COMPLETE's imported_at) */
    uint32_t nfiles;
    snapshot_file files[SNAPSHOT_MAX_FILES];   /* by name */
} snapshot_manifest;

/* The manifest of a complete version directory: every regular file in it
 * whose name does not start with '.', hashed. 0, or -1 with err. */
int snapshot_manifest_of(const char *version_dir, snapshot_manifest *m, char *err, size_t cap);

/* Whether name is a file a snapshot may carry (letters, digits, '.', '_',
 * '-'; not starting with '.'; at most SNAPSHOT_NAME_MAX - 1 bytes). */
bool snapshot_file_name_ok(const char *name);

/* The entry for name, or NULL. */
const snapshot_file *snapshot_find(const snapshot_manifest *m, const char *name);

/* Reads a manifest as GET /v1/dataset writes it (len bytes of JSON): a
 * version name, and 1..SNAPSHOT_MAX_FILES files each with a valid name, a
 * size and a lower-case hex SHA-256, the version's COMPLETE marker among
 * them. 0, or -1 with err saying what is wrong. */
int snapshot_manifest_parse(const char *text, size_t len, snapshot_manifest *m, char *err, size_t cap);

/* SHA-256 of a whole file, hex, and its size. 0, or -1 with err. */
int snapshot_hash_file(const char *path, char hex[65], uint64_t *size, char *err, size_t cap);

#endif
