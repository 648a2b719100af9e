/* merge_cache.c — the merge cache's index: its bytes, their check, the id
 * lists it keeps, and the executable's identity (merge_cache.h).
 *
 * Why it exists: feed_merge.c decides which feeds' parts may be copied; this
 * file owns the on-disk form, so the merge never reads a length it has not
 * checked, and never takes an index that is not whole (its SHA-256 is the
 * last 32 bytes, over all the bytes before).
 *
 * The index: "TDMERGE1", u32 format, u32 files, u32 feeds; per feed its key
 * and context (64 hex each), the counts (u64 each), the time zone and the
 * first and last dates (u32 length + bytes each), the defined and the foreign
 * id lists (u64 length + bytes), then per file the part (u64 offset, length,
 * lines, CRC-32), the records (the same) and the lines map (u32
 * count, then u64 out_line and src_line each). Integers are in the
 * machine's order (the cache is read where it was written; another order
 * fails the format number's check). A range: u64 offset, length, lines, u32
 * CRC-32.
 */
#include "import/merge_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transit/fd_io.h"
#include "transit/sha256.h"
#include "transit/share_dir.h"

#define MAGIC "TDMERGE1"
#define FORMAT 1
#define MAX_INDEX_BYTES (1ull << 31)

/* ------------------------------------------------------------ buffers and id lists */

int mc_buf_put(mc_buf *b, const void *p, size_t len)
{
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + len)
            cap *= 2;
        char *n = realloc(b->p, cap);
        if (!n)
            return -1;
        b->p = n;
        b->cap = cap;
    }
    if (len)
        memcpy(b->p + b->len, p, len);
    b->len += len;
    return 0;
}

void mc_buf_free(mc_buf *b)
{
    free(b->p);
    *b = (mc_buf){0};
}

int mc_ids_add(mc_buf *b, int table, const char *id, size_t len)
{
    uint8_t t = (uint8_t)table;
    uint32_t n = (uint32_t)len;
    return mc_buf_put(b, &t, 1) || mc_buf_put(b, &n, 4) || mc_buf_put(b, id, len) ? -1 : 0;
}

bool mc_ids_next(const mc_buf *b, size_t *pos, int *table, const char **id, size_t *len)
{
    if (*pos + 5 > b->len)
        return false;
    uint32_t n;
    memcpy(&n, b->p + *pos + 1, 4);
    if (n > b->len - *pos - 5)
        return false;
    *table = (uint8_t)b->p[*pos];
    *id = b->p + *pos + 5;
    *len = n;
    *pos += 5 + (size_t)n;
    return true;
}

typedef struct id_ref {
    const char *p;   /* the entry: table byte, length, bytes */
    uint32_t len;
} id_ref;

static int by_table_then_id(const void *a, const void *b)
{
    const id_ref *x = a, *y = b;
    if (x->p[0] != y->p[0])
        return (uint8_t)x->p[0] < (uint8_t)y->p[0] ? -1 : 1;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p + 5, y->p + 5, n);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len ? 1 : 0;
}

int mc_ids_sort_unique(mc_buf *b)
{
    size_t n = 0, pos = 0;
    int t;
    const char *id;
    size_t len;
    while (mc_ids_next(b, &pos, &t, &id, &len))
        n++;
    if (n < 2)
        return 0;
    id_ref *refs = malloc(n * sizeof *refs);
    if (!refs)
        return -1;
    pos = 0;
    for (size_t i = 0; mc_ids_next(b, &pos, &t, &id, &len); i++)
        refs[i] = (id_ref){.p = id - 5, .len = (uint32_t)len};
    qsort(refs, n, sizeof *refs, by_table_then_id);
    mc_buf out = {0};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (i == 0 || by_table_then_id(&refs[i - 1], &refs[i]) != 0)
            rc = mc_buf_put(&out, refs[i].p, 5 + (size_t)refs[i].len);
    free(refs);
    if (rc) {
        mc_buf_free(&out);
        return -1;
    }
    mc_buf_free(b);
    *b = out;
    return 0;
}

/* ------------------------------------------------------------ the index's bytes */

static int put_u32(mc_buf *b, uint32_t v) { return mc_buf_put(b, &v, 4); }
static int put_u64(mc_buf *b, uint64_t v) { return mc_buf_put(b, &v, 8); }

static int put_str(mc_buf *b, const char *s)
{
    return put_u32(b, (uint32_t)strlen(s)) || mc_buf_put(b, s, strlen(s));
}

static int put_range(mc_buf *b, const mc_range *r)
{
    return put_u64(b, r->off) || put_u64(b, r->len) || put_u64(b, r->lines) || put_u32(b, r->crc);
}

static int encode(mc_buf *b, const mc_index *idx)
{
    if (mc_buf_put(b, MAGIC, 8) || put_u32(b, FORMAT) || put_u32(b, (uint32_t)idx->nfiles) ||
        put_u32(b, (uint32_t)idx->nfeeds))
        return -1;
    for (int i = 0; i < idx->nfeeds; i++) {
        const mc_feed *f = &idx->feeds[i];
        if (mc_buf_put(b, f->key, 64) || mc_buf_put(b, f->context, 64))
            return -1;
        for (int k = 0; k < MERGE_CACHE_COUNTS; k++)
            if (put_u64(b, f->counts[k]))
                return -1;
        if (put_str(b, f->timezone) || put_str(b, f->first_date) || put_str(b, f->last_date) ||
            put_u64(b, f->defined.len) || mc_buf_put(b, f->defined.p, f->defined.len) ||
            put_u64(b, f->foreign.len) || mc_buf_put(b, f->foreign.p, f->foreign.len))
            return -1;
        for (int r = 0; r < idx->nfiles; r++) {
            if (put_range(b, &f->part[r]) || put_range(b, &f->records[r]) || put_u32(b, f->nsegs[r]))
                return -1;
            for (uint32_t s = 0; s < f->nsegs[r]; s++)
                if (put_u64(b, f->segs[r][s].out_line) || put_u64(b, f->segs[r][s].src_line))
                    return -1;
        }
    }
    uint8_t d[32];
    sha256(b->p, b->len, d);
    return mc_buf_put(b, d, 32);
}

typedef struct reader {
    const uint8_t *p;
    size_t left;
} reader;

static int take(reader *r, void *out, size_t n)
{
    if (n > r->left)
        return -1;
    memcpy(out, r->p, n);
    r->p += n;
    r->left -= n;
    return 0;
}

static int take_str(reader *r, char *out, size_t cap)
{
    uint32_t n;
    if (take(r, &n, 4) || n >= cap || take(r, out, n))
        return -1;
    out[n] = 0;
    return 0;
}

static int take_buf(reader *r, mc_buf *b)
{
    uint64_t n;
    if (take(r, &n, 8) || n > r->left)
        return -1;
    if (mc_buf_put(b, r->p, (size_t)n))
        return -1;
    r->p += n;
    r->left -= (size_t)n;
    /* every entry whole */
    size_t pos = 0, len;
    int t;
    const char *id;
    while (mc_ids_next(b, &pos, &t, &id, &len))
        ;
    return pos == b->len ? 0 : -1;
}

static int take_range(reader *r, mc_range *g)
{
    return take(r, &g->off, 8) || take(r, &g->len, 8) || take(r, &g->lines, 8) || take(r, &g->crc, 4) ||
                   g->off + g->len < g->off
               ? -1
               : 0;
}

static int decode_feed(reader *r, int nfiles, mc_feed *f)
{
    if (take(r, f->key, 64) || take(r, f->context, 64))
        return -1;
    f->key[64] = f->context[64] = 0;
    for (int k = 0; k < MERGE_CACHE_COUNTS; k++)
        if (take(r, &f->counts[k], 8))
            return -1;
    if (take_str(r, f->timezone, sizeof f->timezone) || take_str(r, f->first_date, sizeof f->first_date) ||
        take_str(r, f->last_date, sizeof f->last_date) || take_buf(r, &f->defined) || take_buf(r, &f->foreign))
        return -1;
    for (int i = 0; i < nfiles; i++) {
        uint32_t n;
        if (take_range(r, &f->part[i]) || take_range(r, &f->records[i]) || take(r, &n, 4) ||
            (uint64_t)n * 16 > r->left)
            return -1;
        f->nsegs[i] = n;
        if (n) {
            if (!(f->segs[i] = malloc((size_t)n * sizeof *f->segs[i])))
                return -1;
            for (uint32_t s = 0; s < n; s++)
                if (take(r, &f->segs[i][s].out_line, 8) || take(r, &f->segs[i][s].src_line, 8))
                    return -1;
        }
    }
    return 0;
}

int mc_index_parse(const void *buf, size_t len, int nfiles, mc_index *out)
{
    *out = (mc_index){0};
    if (len < 8 + 12 + 32 || nfiles < 1 || nfiles > MERGE_CACHE_MAX_FILES)
        return -1;
    uint8_t d[32];
    sha256(buf, len - 32, d);
    if (memcmp(d, (const uint8_t *)buf + len - 32, 32) != 0 || memcmp(buf, MAGIC, 8) != 0)
        return -1;
    reader r = {.p = (const uint8_t *)buf + 8, .left = len - 8 - 32};
    uint32_t format, files, feeds;
    if (take(&r, &format, 4) || take(&r, &files, 4) || take(&r, &feeds, 4) || format != FORMAT ||
        files != (uint32_t)nfiles || feeds > 64)
        return -1;
    out->nfiles = nfiles;
    if (feeds && !(out->feeds = calloc(feeds, sizeof *out->feeds)))
        return -1;
    out->nfeeds = (int)feeds;
    for (uint32_t i = 0; i < feeds; i++)
        if (decode_feed(&r, nfiles, &out->feeds[i]) != 0) {
            mc_index_free(out);
            return -1;
        }
    if (r.left != 0) {
        mc_index_free(out);
        return -1;
    }
    return 0;
}

int mc_index_read(const char *dir, int nfiles, mc_index *out)
{
    *out = (mc_index){0};
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, MERGE_CACHE_INDEX);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    char *buf = NULL;
    int rc = -1;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < MAX_INDEX_BYTES &&
        (buf = malloc((size_t)st.st_size))) {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (got == (size_t)st.st_size)
            rc = mc_index_parse(buf, got, nfiles, out);
    }
    free(buf);
    close(fd);
    return rc;
}

int mc_index_write(const char *dir, const mc_index *idx, char *err, size_t errlen)
{
    mc_buf b = {0};
    if (encode(&b, idx) != 0) {
        mc_buf_free(&b);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char tmp[4200], path[4200];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, MERGE_CACHE_INDEX);
    snprintf(path, sizeof path, "%s/%s", dir, MERGE_CACHE_INDEX);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int rc = fd < 0 || fd_write_all(fd, b.p, b.len) != 0 ? -1 : 0;
    if (fd >= 0 && close(fd) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno ? errno : EIO));
        unlink(tmp);
    }
    mc_buf_free(&b);
    return rc;
}

void mc_feed_free(mc_feed *f)
{
    mc_buf_free(&f->defined);
    mc_buf_free(&f->foreign);
    for (int i = 0; i < MERGE_CACHE_MAX_FILES; i++)
        free(f->segs[i]);
    memset(f, 0, sizeof *f);
}

void mc_index_free(mc_index *idx)
{
    for (int i = 0; i < idx->nfeeds; i++)
        mc_feed_free(&idx->feeds[i]);
    free(idx->feeds);
    *idx = (mc_index){0};
}

/* ------------------------------------------------------------ the build */

int mc_build_id(char out[65])
{
    char exe[SHARE_PATH_MAX];
    if (!share_executable_path(exe, sizeof exe))
        return -1;
    int fd = open(exe, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    sha256_ctx c;
    sha256_init(&c);
    char buf[1 << 16];
    int rc = 0;
    for (int rounds = 0;; rounds++) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || rounds > (1 << 16)) {   /* an executable over 4 GB is not one */
            rc = -1;
            break;
        }
        if (n == 0)
            break;
        sha256_update(&c, buf, (size_t)n);
    }
    close(fd);
    uint8_t d[32];
    sha256_final(&c, d);
    if (rc == 0)
        sha256_hex(d, out);
    return rc;
}
