/* snapshot.c — the manifest of a version directory (transit/snapshot.h).
 *
 * Why it exists: see transit/snapshot.h. A version's files are written once
 * and never changed (an import makes a new version), so a manifest is
 * computed once per version and kept by whoever serves it.
 */
#include "transit/snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transit/datadir.h"
#include "transit/sha256.h"

bool snapshot_file_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= SNAPSHOT_NAME_MAX || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

const snapshot_file *snapshot_find(const snapshot_manifest *m, const char *name)
{
    for (uint32_t i = 0; i < m->nfiles; i++)
        if (strcmp(m->files[i].name, name) == 0)
            return &m->files[i];
    return NULL;
}

int snapshot_hash_file(const char *path, char hex[65], uint64_t *size, char *err, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, cap, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK);
    if (!buf) {
        close(fd);
        snprintf(err, cap, "out of memory");
        return -1;
    }
    sha256_ctx c;
    sha256_init(&c);
    uint64_t total = 0;
    for (;;) {
        ssize_t r = read(fd, buf, CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, cap, "cannot read %s: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        sha256_update(&c, buf, (size_t)r);
        total += (uint64_t)r;
    }
    free(buf);
    close(fd);
    uint8_t digest[32];
    sha256_final(&c, digest);
    sha256_hex(digest, hex);
    *size = total;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const snapshot_file *)a)->name, ((const snapshot_file *)b)->name);
}

int snapshot_manifest_of(const char *version_dir, snapshot_manifest *m, char *err, size_t cap)
{
    memset(m, 0, sizeof *m);
    datadir_marker marker;
    if (datadir_read_marker(version_dir, &marker) != 0) {
        snprintf(err, cap, "%s is not a complete version (no readable %s)", version_dir,
                 DATADIR_MARKER);
        return -1;
    }
    snprintf(m->version, sizeof m->version, "%s", marker.version);
    m->created = marker.imported_at;
    DIR *dir = opendir(version_dir);
    if (!dir) {
        snprintf(err, cap, "cannot list %s: %s", version_dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        if (!snapshot_file_name_ok(e->d_name))
            continue;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", version_dir, e->d_name);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (m->nfiles == SNAPSHOT_MAX_FILES) {
            snprintf(err, cap, "%s holds more than %d files", version_dir, SNAPSHOT_MAX_FILES);
            rc = -1;
            break;
        }
        snapshot_file *f = &m->files[m->nfiles];
        snprintf(f->name, sizeof f->name, "%s", e->d_name);
        if (snapshot_hash_file(path, f->sha256, &f->size, err, cap) != 0) {
            rc = -1;
            break;
        }
        m->nfiles++;
    }
    closedir(dir);
    if (rc == 0)
        qsort(m->files, m->nfiles, sizeof m->files[0], by_name);
    return rc;
}

int snapshot_manifest_parse(const char *text, size_t len, snapshot_manifest *m, char *err, size_t cap)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    memset(m, 0, sizeof *m);
    if (!root || !json_is_object(root)) {
        snprintf(err, cap, "the manifest is not a JSON object (%s)", root ? "" : jerr.text);
        json_decref(root);
        return -1;
    }
    const char *version = json_string_value(json_object_get(root, "version"));
    json_t *files = json_object_get(root, "files");
    bool ok = version && datadir_is_version_name(version) && json_is_array(files) &&
              json_array_size(files) > 0 && json_array_size(files) <= SNAPSHOT_MAX_FILES;
    if (ok)
        snprintf(m->version, sizeof m->version, "%s", version);
    for (size_t i = 0; ok && i < json_array_size(files); i++) {
        json_t *f = json_array_get(files, i);
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *sha = json_string_value(json_object_get(f, "sha256"));
        json_t *size = json_object_get(f, "size");
        ok = name && snapshot_file_name_ok(name) && sha && strlen(sha) == 64 &&
             strspn(sha, "0123456789abcdef") == 64 && json_is_integer(size) &&
             json_integer_value(size) >= 0;
        if (ok) {
            snapshot_file *out = &m->files[m->nfiles++];
            snprintf(out->name, sizeof out->name, "%s", name);
            snprintf(out->sha256, sizeof out->sha256, "%s", sha);
            out->size = (uint64_t)json_integer_value(size);
        }
    }
    if (ok && !snapshot_find(m, DATADIR_MARKER))
        ok = false;
    if (!ok)
        snprintf(err, cap, "the manifest lacks a version, or a files list with names, sizes "
                           "and SHA-256 digests including %s", DATADIR_MARKER);
    json_decref(root);
    return ok ? 0 : -1;
}
