/* snapshot_delta.c — zstd patches between two versions of a store file
 * (transit/snapshot_delta.h).
 *
 * Why it exists: see transit/snapshot_delta.h. Making a patch reads both
 * files whole (they are at most a few hundred MB, and a server makes each
 * patch once and keeps it); applying one maps the old file and streams, so a
 * phone needs no more memory than zstd's buffers.
 */
#include "transit/snapshot_delta.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "transit/fd_io.h"

/* A read-only mapping of a whole file (NULL for an empty one). */
typedef struct mapped_file {
    void *data;
    size_t size;
} mapped_file;

static int map_file(const char *path, mapped_file *m, char *err, size_t cap)
{
    m->data = NULL;
    m->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, cap, "cannot read %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if ((uint64_t)st.st_size > SNAPSHOT_DELTA_MAX_FILE) {
        snprintf(err, cap, "%s is larger than a delta can cover (%llu bytes)", path,
                 (unsigned long long)SNAPSHOT_DELTA_MAX_FILE);
        close(fd);
        return -1;
    }
    m->size = (size_t)st.st_size;
    if (m->size > 0) {
        m->data = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m->data == MAP_FAILED) {
            m->data = NULL;
            snprintf(err, cap, "cannot map %s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
    }
    close(fd);
    return 0;
}

static void unmap_file(mapped_file *m)
{
    if (m->data)
        munmap(m->data, m->size);
    m->data = NULL;
}

/* The window both sides use: the old file and the new one must fit in it. */
static int window_log_for(size_t a, size_t b)
{
    size_t need = (a > b ? a : b) + 1;
    int log = 10;   /* zstd's smallest window */
    while (log < 30 && ((size_t)1 << log) < need)
        log++;
    return log;
}

int snapshot_delta_make(const char *old_path, const char *new_path, int level, unsigned char **out,
                        size_t *out_len, char *err, size_t cap)
{
    *out = NULL;
    *out_len = 0;
    mapped_file old, new;
    if (map_file(old_path, &old, err, cap) != 0)
        return -1;
    if (map_file(new_path, &new, err, cap) != 0) {
        unmap_file(&old);
        return -1;
    }
    int rc = -1;
    ZSTD_CCtx *c = ZSTD_createCCtx();
    size_t bound = ZSTD_compressBound(new.size);
    unsigned char *buf = c ? malloc(bound) : NULL;
    if (!buf) {
        snprintf(err, cap, "out of memory making a delta of %s", new_path);
        goto done;
    }
    size_t r = ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, window_log_for(old.size, new.size));
    if (!ZSTD_isError(r))   /* what --patch-from does: matches far back in the old file */
        r = ZSTD_CCtx_setParameter(c, ZSTD_c_enableLongDistanceMatching, 1);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(r) && old.size)
        r = ZSTD_CCtx_refPrefix(c, old.data, old.size);
    if (!ZSTD_isError(r))
        r = ZSTD_compress2(c, buf, bound, new.data ? new.data : "", new.size);
    if (ZSTD_isError(r)) {
        snprintf(err, cap, "zstd cannot make a delta of %s: %s", new_path, ZSTD_getErrorName(r));
        goto done;
    }
    unsigned char *shrunk = realloc(buf, r ? r : 1);
    *out = shrunk ? shrunk : buf;
    *out_len = r;
    buf = NULL;
    rc = 0;
done:
    free(buf);
    ZSTD_freeCCtx(c);
    unmap_file(&old);
    unmap_file(&new);
    return rc;
}

struct snapshot_patcher {
    mapped_file old;
    ZSTD_DCtx *d;
    int out_fd;
    uint64_t written, expected;
    bool frame_done;
    unsigned char buf[64 * 1024];
};

snapshot_patcher *snapshot_patcher_new(const char *old_path, uint64_t new_size, int out_fd, char *err,
                                       size_t cap)
{
    snapshot_patcher *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    p->out_fd = out_fd;
    p->expected = new_size;
    if (new_size > SNAPSHOT_DELTA_MAX_FILE) {
        snprintf(err, cap, "a file of %llu bytes is larger than a delta can make",
                 (unsigned long long)new_size);
        free(p);
        return NULL;
    }
    if (map_file(old_path, &p->old, err, cap) != 0) {
        free(p);
        return NULL;
    }
    /* no larger a window than the maker's for these sizes: a patch that
     * declares more is refused before zstd allocates it */
    p->d = ZSTD_createDCtx();
    size_t r = p->d ? ZSTD_DCtx_setParameter(p->d, ZSTD_d_windowLogMax, window_log_for(p->old.size, (size_t)new_size))
                    : (size_t)-1;
    if (p->d && !ZSTD_isError(r) && p->old.size)
        r = ZSTD_DCtx_refPrefix(p->d, p->old.data, p->old.size);
    if (!p->d || ZSTD_isError(r)) {
        snprintf(err, cap, "zstd cannot start a patch against %s", old_path);
        snapshot_patcher_free(p);
        return NULL;
    }
    return p;
}

/* Writes what zstd made of the patch (bounded by the expected size). */
static int emit(snapshot_patcher *p, size_t n, char *err, size_t cap)
{
    if (p->written + n > p->expected) {
        snprintf(err, cap, "the delta makes more than the file's %llu bytes", (unsigned long long)p->expected);
        return -1;
    }
    if (n && fd_write_all(p->out_fd, p->buf, n) != 0) {
        snprintf(err, cap, "cannot write the patched file: %s", strerror(errno));
        return -1;
    }
    p->written += n;
    return 0;
}

/* One step of zstd on `in` (empty at the end, to flush what it holds):
 * what it made written out. The bytes made, or -1 with err. */
static ssize_t step(snapshot_patcher *p, ZSTD_inBuffer *in, char *err, size_t cap)
{
    ZSTD_outBuffer o = {p->buf, sizeof p->buf, 0};
    size_t r = ZSTD_decompressStream(p->d, &o, in);
    if (ZSTD_isError(r)) {
        snprintf(err, cap, "the delta does not apply: %s", ZSTD_getErrorName(r));
        return -1;
    }
    if (emit(p, o.pos, err, cap) != 0)
        return -1;
    if (r == 0)
        p->frame_done = true;
    return (ssize_t)o.pos;
}

int snapshot_patcher_write(snapshot_patcher *p, const void *data, size_t len, char *err, size_t cap)
{
    ZSTD_inBuffer in = {data, len, 0};
    while (in.pos < in.size) {
        if (p->frame_done) {
            snprintf(err, cap, "the delta goes on after its frame ended");
            return -1;
        }
        if (step(p, &in, err, cap) < 0)
            return -1;
    }
    return 0;
}

int snapshot_patcher_finish(snapshot_patcher *p, uint64_t *written, char *err, size_t cap)
{
    /* flush what zstd still holds (its output buffer may have been full),
     * until the frame ends or it makes nothing more without input */
    for (int rounds = 0; !p->frame_done && rounds < 1 << 20; rounds++) {
        ZSTD_inBuffer in = {NULL, 0, 0};
        ssize_t made = step(p, &in, err, cap);
        if (made < 0)
            return -1;
        if (made == 0 && !p->frame_done)
            break;
    }
    *written = p->written;
    if (!p->frame_done) {
        snprintf(err, cap, "the delta ended before its frame did");
        return -1;
    }
    return 0;
}

void snapshot_patcher_free(snapshot_patcher *p)
{
    if (!p)
        return;
    ZSTD_freeDCtx(p->d);
    unmap_file(&p->old);
    free(p);
}
