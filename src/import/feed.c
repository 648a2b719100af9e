/* feed.c — GTFS bytes from a .zip or a directory (see feed.h).
 *
 * feed_open lists the members once (name, size, where they are) into one
 * allocation; after that the feed_t is read-only, and every read opens its own
 * zip handle or file descriptor, so threads can share a feed. Directory
 * members are mapped, so streaming them copies nothing (and each chunk's
 * pages are dropped once the callback is done with them); a deflated zip
 * member of up to FEED_WHOLE_MAX bytes is inflated whole by libdeflate (its
 * CRC checked by libdeflate too), a larger or otherwise compressed one by
 * libzip into one 1 MiB buffer per stream. The one thing that changes after
 * feed_open is an atomic flag: feed_stop ends every read.
 */
#include "transit/feed.h"
#include "transit/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libdeflate.h>
#include <zip.h>

#define FEED_CHUNK (1u << 20)
/* A deflated member up to this size is inflated in one call: libdeflate
 * inflates about twice as fast as zlib's streaming inflate, and checks the
 * CRC-32 several times faster (a day-by-day calendar_dates.txt of 26 MB,
 * issue #28). stop_times.txt, far larger, is still streamed: the CSV is
 * never held whole. */
#define FEED_WHOLE_MAX ((int64_t)32 << 20)
/* feed_read_all's first buffer, at most: 8 MiB */
#define FEED_READ_START ((size_t)8 << 20)

typedef struct member {
    const char *name;   /* basename, e.g. "stops.txt" */
    const char *where;  /* the zip entry name, or the file's path */
    int64_t size;
} member;

struct feed {
    const char *path;
    bool is_zip;
    atomic_bool stopped;  /* feed_stop: reads fail from their next chunk on */
    uint64_t hashed_bytes; /* what feed_sha256 hashes (feed_hashed_bytes) */
    int n;
    member *m;            /* sorted by name */
    const char **names;   /* m[i].name, for feed_members */
    /* the strings live in the same allocation, after these arrays */
};

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------ listing */

/* Members while listing: names and places in a growing string pool, by offset. */
typedef struct listing {
    struct { size_t name, where; int64_t size; } *m;
    int n, cap;
    char *pool;
    size_t used, pool_cap;
} listing;

static size_t pool_add(listing *l, const char *s, size_t len)
{
    if (l->used + len + 1 > l->pool_cap) {
        size_t cap = l->pool_cap ? l->pool_cap * 2 : 4096;
        while (cap < l->used + len + 1)
            cap *= 2;
        char *p = realloc(l->pool, cap);
        if (!p)
            return SIZE_MAX;
        l->pool = p;
        l->pool_cap = cap;
    }
    size_t at = l->used;
    memcpy(l->pool + at, s, len);
    l->pool[at + len] = 0;
    l->used += len + 1;
    return at;
}

static bool listing_add(listing *l, const char *name, size_t name_len, const char *where, int64_t size)
{
    for (int i = 0; i < l->n; i++)   /* a name twice: the first one counts */
        if (strlen(l->pool + l->m[i].name) == name_len && memcmp(l->pool + l->m[i].name, name, name_len) == 0)
            return true;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        void *m = realloc(l->m, sizeof *l->m * (size_t)cap);
        if (!m)
            return false;
        l->m = m;
        l->cap = cap;
    }
    size_t a = pool_add(l, name, name_len);
    size_t b = a == SIZE_MAX ? SIZE_MAX : pool_add(l, where, strlen(where));
    if (b == SIZE_MAX)
        return false;
    l->m[l->n].name = a;
    l->m[l->n].where = b;
    l->m[l->n].size = size;
    l->n++;
    return true;
}

static void listing_free(listing *l)
{
    free(l->m);
    free(l->pool);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const member *)a)->name, ((const member *)b)->name);
}

/* Packs a listing into one allocation: struct feed, members sorted by name,
 * the names array, the strings. */
static feed_t *feed_pack(const char *path, bool is_zip, listing *l)
{
    size_t plen = strlen(path) + 1;
    size_t size = sizeof(feed_t) + sizeof(member) * (size_t)l->n + sizeof(char *) * (size_t)(l->n + 1) +
                  l->used + plen;
    char *block = malloc(size);
    if (!block)
        return NULL;
    feed_t *f = (feed_t *)block;
    f->is_zip = is_zip;
    atomic_init(&f->stopped, false);
    f->n = l->n;
    f->m = (member *)(block + sizeof(feed_t));
    f->names = (const char **)(f->m + l->n);
    char *strings = (char *)(f->names + l->n + 1);
    if (l->used)
        memcpy(strings, l->pool, l->used);
    memcpy(strings + l->used, path, plen);
    f->path = strings + l->used;
    for (int i = 0; i < l->n; i++) {
        f->m[i].name = strings + l->m[i].name;
        f->m[i].where = strings + l->m[i].where;
        f->m[i].size = l->m[i].size;
    }
    qsort(f->m, (size_t)f->n, sizeof *f->m, by_name);
    for (int i = 0; i < l->n; i++)
        f->names[i] = f->m[i].name;
    f->names[l->n] = NULL;
    return f;
}

static bool ends_with_txt(const char *s, size_t len)
{
    return len > 4 && memcmp(s + len - 4, ".txt", 4) == 0;
}

static void zip_err_text(int code, char *out, size_t outlen)
{
    zip_error_t ze;
    zip_error_init_with_code(&ze, code);
    snprintf(out, outlen, "%s", zip_error_strerror(&ze));
    zip_error_fini(&ze);
}

static zip_t *open_zip(const char *path, char *err, size_t errlen)
{
    int code = 0;
    zip_t *z = zip_open(path, ZIP_RDONLY, &code);
    if (!z) {
        char why[128];
        zip_err_text(code, why, sizeof why);
        if (code == ZIP_ER_NOENT || code == ZIP_ER_OPEN || code == ZIP_ER_READ)
            set_err(err, errlen, "%s: cannot open (%s)", path, why);
        else
            set_err(err, errlen, "%s: not a valid zip archive (%s)", path, why);
    }
    return z;
}

/* The .txt entries at the root of the zip, or else those of its single
 * folder. Mac archivers' "__MACOSX/" and "._name" entries are skipped. */
static int list_zip(const char *path, listing *l, char *err, size_t errlen)
{
    zip_t *z = open_zip(path, err, errlen);
    if (!z)
        return -1;
    zip_int64_t n = zip_get_num_entries(z, 0);
    struct stat zst;
    uint64_t zip_bytes = stat(path, &zst) == 0 ? (uint64_t)zst.st_size : UINT64_MAX;
    const char *folder = NULL;   /* "name/" of the first folder holding a .txt (an entry name's prefix) */
    size_t folder_len = 0;
    bool root = false, several = false;
    for (int pass = 0; pass < 2; pass++) {
        for (zip_int64_t i = 0; i < n; i++) {
            const char *name = zip_get_name(z, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
            if (!name || strncmp(name, "__MACOSX/", 9) == 0)
                continue;
            const char *slash = strchr(name, '/');
            const char *base = slash ? slash + 1 : name;
            size_t blen = strlen(base), dir_len = (size_t)(base - name);
            if (!ends_with_txt(base, blen) || strchr(base, '/') || base[0] == '.')
                continue;
            bool in_folder = folder && dir_len == folder_len && memcmp(name, folder, folder_len) == 0;
            if (pass == 0) {   /* where are the members? */
                if (!slash)
                    root = true;
                else if (!folder) {
                    folder = name;
                    folder_len = dir_len;
                } else if (!in_folder)
                    several = true;
                continue;
            }
            if (root ? slash != NULL : !in_folder)
                continue;
            zip_stat_t st;
            if (zip_stat_index(z, (zip_uint64_t)i, ZIP_FL_ENC_RAW, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) {
                set_err(err, errlen, "%s: cannot read the entry %s (%s)", path, name, zip_strerror(z));
                zip_discard(z);
                return -1;
            }
            /* A size deflate (at most 1032:1) or storing cannot produce is a
             * damaged or hostile directory entry: refuse it rather than let a
             * reader allocate what it claims (fuzz_feed_zip: a 1.8 KB zip
             * claiming 2.5 GB). */
            if ((st.valid & ZIP_STAT_COMP_METHOD) &&
                !zip_compression_method_supported((zip_int32_t)st.comp_method, 0)) {
                set_err(err, errlen,
                        "%s: the entry %s uses compression method %u, which this build cannot read",
                        path, name, (unsigned)st.comp_method);
                zip_discard(z);
                return -1;
            }
            if ((st.valid & ZIP_STAT_COMP_SIZE) && st.comp_size > zip_bytes) {
                set_err(err, errlen,
                        "%s: the entry %s claims %llu compressed bytes, more than the zip's %llu; "
                        "the zip is damaged",
                        path, name, (unsigned long long)st.comp_size, (unsigned long long)zip_bytes);
                zip_discard(z);
                return -1;
            }
            if ((st.valid & ZIP_STAT_COMP_SIZE) && (st.valid & ZIP_STAT_COMP_METHOD) &&
                (st.comp_method == ZIP_CM_STORE || st.comp_method == ZIP_CM_DEFLATE)) {
                uint64_t most = st.comp_method == ZIP_CM_STORE ? st.comp_size
                                                               : st.comp_size * 1032u + 1024u;
                if (st.size > most) {
                    set_err(err, errlen,
                            "%s: the entry %s claims %llu bytes from %llu compressed, more than "
                            "its compression can expand to; the zip is damaged",
                            path, name, (unsigned long long)st.size, (unsigned long long)st.comp_size);
                    zip_discard(z);
                    return -1;
                }
            }
            if (!listing_add(l, base, blen, name, (int64_t)st.size)) {
                set_err(err, errlen, "%s: out of memory", path);
                zip_discard(z);
                return -1;
            }
        }
        if (pass == 0 && !root && several) {
            set_err(err, errlen, "%s: the .txt files are in several folders; expected them at the top or in one folder",
                    path);
            zip_discard(z);
            return -1;
        }
    }
    zip_discard(z);
    return 0;
}

static int list_dir(const char *path, listing *l, char *err, size_t errlen)
{
    DIR *d = opendir(path);
    if (!d) {
        set_err(err, errlen, "%s: cannot open directory (%s)", path, strerror(errno));
        return -1;
    }
    char full[4096];
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (!ends_with_txt(e->d_name, len) || e->d_name[0] == '.')
            continue;
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        struct stat st;
        if (stat(full, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (!listing_add(l, e->d_name, len, full, (int64_t)st.st_size)) {
            set_err(err, errlen, "%s: out of memory", path);
            rc = -1;
            break;
        }
    }
    closedir(d);
    return rc;
}

feed_t *feed_open(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    listing l = { 0 };
    bool is_zip = !S_ISDIR(st.st_mode);
    int rc = is_zip ? list_zip(path, &l, err, errlen) : list_dir(path, &l, err, errlen);
    feed_t *f = NULL;
    if (rc == 0) {
        f = feed_pack(path, is_zip, &l);
        if (!f)
            set_err(err, errlen, "%s: out of memory", path);
    }
    if (f) {
        f->hashed_bytes = is_zip ? (uint64_t)st.st_size : 0;
        for (int i = 0; !is_zip && i < f->n; i++)
            f->hashed_bytes += strlen(f->m[i].name) + 1 + (uint64_t)f->m[i].size;
    }
    listing_free(&l);
    return f;
}

void feed_close(feed_t *f) { free(f); }

void feed_stop(feed_t *f) { atomic_store(&f->stopped, true); }

uint64_t feed_hashed_bytes(const feed_t *f) { return f->hashed_bytes; }

/* Whether feed_stop was called; the readers ask before each chunk. The flag
 * is the one mutable field of a shared feed, hence the cast. */
static bool stopped(const feed_t *f, const char *name, char *err, size_t errlen)
{
    if (!atomic_load_explicit((atomic_bool *)&f->stopped, memory_order_relaxed))
        return false;
    set_err(err, errlen, "%s: reading stopped (feed_stop)", name);
    return true;
}

const char *feed_path(const feed_t *f) { return f->path; }

static const member *find(const feed_t *f, const char *name)
{
    int lo = 0, hi = f->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp(f->m[mid].name, name);
        if (c == 0)
            return &f->m[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

int feed_has(const feed_t *f, const char *name) { return find(f, name) != NULL; }

int64_t feed_size(const feed_t *f, const char *name)
{
    const member *m = find(f, name);
    return m ? m->size : -1;
}

const char *const *feed_members(const feed_t *f, int *n)
{
    *n = f->n;
    return f->names;
}

/* ------------------------------------------------------------ reading */

/* A directory member, mapped read-only. An empty file maps to nothing. */
static int map_file(const char *path, const char *name, const char **data, size_t *len, char *err,
                    size_t errlen)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        set_err(err, errlen, "%s: cannot open (%s)", name, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        set_err(err, errlen, "%s: cannot stat (%s)", name, strerror(errno));
        close(fd);
        return -1;
    }
    *len = (size_t)st.st_size;
    *data = NULL;
    if (*len) {
        void *p = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            set_err(err, errlen, "%s: cannot map (%s)", name, strerror(errno));
            close(fd);
            return -1;
        }
        *data = p;
    }
    close(fd);
    return 0;
}

/* Opens a zip member for reading: its own archive handle. */
static zip_file_t *open_member(const feed_t *f, const member *m, zip_t **zo, char *err, size_t errlen)
{
    char why[256];
    zip_t *z = open_zip(f->path, why, sizeof why);
    if (!z) {
        set_err(err, errlen, "%s: %s", m->name, why);
        return NULL;
    }
    zip_file_t *zf = zip_fopen(z, m->where, ZIP_FL_ENC_RAW);
    if (!zf) {
        set_err(err, errlen, "%s: cannot open in %s (%s)", m->name, f->path, zip_strerror(z));
        zip_discard(z);
        return NULL;
    }
    *zo = z;
    return zf;
}

static void close_member(zip_t *z, zip_file_t *zf)
{
    zip_fclose(zf);
    zip_discard(z);
}

/* The member `name`, or NULL with err saying the feed lacks it. */
static const member *find_member(const feed_t *f, const char *name, char *err, size_t errlen)
{
    const member *m = find(f, name);
    if (!m)
        set_err(err, errlen, "%s: not in the feed %s", name, f->path);
    return m;
}

/* A buffer of `size` bytes and the zip member opened to read into it: both,
 * or neither with err set. */
static char *open_member_buffer(const feed_t *f, const member *m, size_t size, zip_t **z,
                                zip_file_t **zf, char *err, size_t errlen)
{
    /* open first: a member that cannot be read costs no allocation */
    *zf = open_member(f, m, z, err, errlen);
    if (!*zf)
        return NULL;
    char *buf = malloc(size);
    if (!buf) {
        set_err(err, errlen, "%s: out of memory (%zu bytes)", m->name, size);
        close_member(*z, *zf);
        *zf = NULL;
        return NULL;
    }
    return buf;
}

static int read_failed(const feed_t *f, const char *name, zip_file_t *zf, char *err,
                       size_t errlen)
{
    set_err(err, errlen, "%s: cannot read from %s (%s)", name, f->path, zip_file_strerror(zf));
    return -1;
}

/* Reads the raw deflate stream of a member (comp_size bytes) into *out. */
static int read_compressed(const feed_t *f, const member *m, zip_t *z, uint64_t comp_size, char **out, char *err,
                           size_t errlen)
{
    zip_file_t *zf = zip_fopen(z, m->where, ZIP_FL_ENC_RAW | ZIP_FL_COMPRESSED);
    if (!zf) {
        set_err(err, errlen, "%s: cannot open in %s (%s)", m->name, f->path, zip_strerror(z));
        return -1;
    }
    char *buf = malloc(comp_size + 1);
    if (!buf) {
        set_err(err, errlen, "%s: out of memory (%llu bytes)", m->name, (unsigned long long)comp_size + 1);
        zip_fclose(zf);
        return -1;
    }
    uint64_t have = 0;
    while (have < comp_size) {
        zip_int64_t got = zip_fread(zf, buf + have, comp_size - have);
        if (got <= 0) {
            if (got < 0)
                read_failed(f, m->name, zf, err, errlen);
            else
                set_err(err, errlen, "%s: %llu of %llu compressed bytes could be read from %s; the zip is damaged",
                        m->name, (unsigned long long)have, (unsigned long long)comp_size, f->path);
            free(buf);
            zip_fclose(zf);
            return -1;
        }
        have += (uint64_t)got;
    }
    zip_fclose(zf);
    *out = buf;
    return 0;
}

/* A deflated member of at most FEED_WHOLE_MAX bytes, inflated in one call
 * and handed to fn in FEED_CHUNK pieces: *taken set, and 0, -1 or fn's
 * non-zero return (any value: a callback may stop with 1). *taken false
 * when the member is not such a one (stored, another method, encrypted,
 * larger, or its sizes unknown): the caller streams it. */
static int stream_whole(const feed_t *f, const member *m, feed_chunk_fn fn, void *ctx, char *err, size_t errlen,
                        bool *taken)
{
    *taken = false;
    char why[256];
    zip_t *z = open_zip(f->path, why, sizeof why);
    if (!z) {
        set_err(err, errlen, "%s: %s", m->name, why);
        *taken = true;
        return -1;
    }
    zip_stat_t st;
    const zip_uint64_t need = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD | ZIP_STAT_CRC;
    if (zip_stat(z, m->where, ZIP_FL_ENC_RAW, &st) != 0 || (st.valid & need) != need ||
        st.comp_method != ZIP_CM_DEFLATE || st.size > (zip_uint64_t)FEED_WHOLE_MAX ||
        (int64_t)st.size != m->size ||
        ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)) {
        zip_discard(z);
        return 0;
    }
    *taken = true;
    char *packed = NULL, *plain = NULL;
    int rc = read_compressed(f, m, z, st.comp_size, &packed, err, errlen);
    zip_discard(z);
    if (rc != 0)
        return -1;
    plain = malloc(st.size + 1);
    struct libdeflate_decompressor *d = plain ? libdeflate_alloc_decompressor() : NULL;
    if (!d) {
        set_err(err, errlen, "%s: out of memory (%llu bytes)", m->name, (unsigned long long)st.size + 1);
        rc = -1;
    } else {
        size_t got = 0;
        enum libdeflate_result r = libdeflate_deflate_decompress(d, packed, st.comp_size, plain, st.size, &got);
        if (r != LIBDEFLATE_SUCCESS || got != st.size) {
            set_err(err, errlen, "%s: cannot read from %s (the deflated data is damaged%s)", m->name, f->path,
                    r == LIBDEFLATE_INSUFFICIENT_SPACE || (r == LIBDEFLATE_SUCCESS && got != st.size)
                        ? ": not its recorded size" : "");
            rc = -1;
        } else if (libdeflate_crc32(0, plain, st.size) != st.crc) {
            set_err(err, errlen, "%s: cannot read from %s (CRC error: the member is damaged)", m->name, f->path);
            rc = -1;
        }
        libdeflate_free_decompressor(d);
    }
    free(packed);
    for (size_t at = 0; rc == 0 && at < st.size; at += FEED_CHUNK) {
        size_t n = st.size - at < FEED_CHUNK ? st.size - at : FEED_CHUNK;
        rc = stopped(f, m->name, err, errlen) ? -1 : fn(ctx, plain + at, n);
    }
    free(plain);
    return rc;
}

int feed_stream(const feed_t *f, const char *name, feed_chunk_fn fn, void *ctx, char *err, size_t errlen)
{
    const member *m = find_member(f, name, err, errlen);
    if (!m || stopped(f, name, err, errlen))
        return -1;
    if (!f->is_zip) {
        const char *data;
        size_t len;
        if (map_file(m->where, name, &data, &len, err, errlen) != 0)
            return -1;
        if (len)
            madvise((void *)data, len, MADV_SEQUENTIAL);
        int rc = 0;
        for (size_t at = 0; at < len && !rc; at += FEED_CHUNK) {
            size_t n = len - at < FEED_CHUNK ? len - at : FEED_CHUNK;
            rc = stopped(f, name, err, errlen) ? -1 : fn(ctx, data + at, n);
            /* a chunk is not read again (the callback copies what it keeps):
             * its pages leave this process's memory now, so a 2.7 GB
             * stop_times.txt is never resident whole (at is page-aligned) */
            madvise((void *)(data + at), n, MADV_DONTNEED);
        }
        if (len)
            munmap((void *)data, len);
        return rc;
    }
    bool taken;
    int whole = stream_whole(f, m, fn, ctx, err, errlen, &taken);
    if (taken)
        return whole;
    zip_t *z;
    zip_file_t *zf;
    /* a small member (agency.txt, calendar.txt) needs no 1 MiB buffer; one
     * that holds more than its directory entry says is still read whole,
     * a buffer at a time */
    size_t chunk = m->size >= 0 && (uint64_t)m->size < FEED_CHUNK ? (size_t)m->size + 1 : FEED_CHUNK;
    char *buf = open_member_buffer(f, m, chunk, &z, &zf, err, errlen);
    if (!buf)
        return -1;
    int rc = 0;
    for (;;) {
        if (stopped(f, name, err, errlen)) {
            rc = -1;
            break;
        }
        zip_int64_t got = zip_fread(zf, buf, chunk);
        if (got < 0) {
            rc = read_failed(f, name, zf, err, errlen);
            break;
        }
        if (got == 0)
            break;
        rc = fn(ctx, buf, (size_t)got);
        if (rc)
            break;
    }
    close_member(z, zf);
    free(buf);
    return rc;
}

int feed_read_all(const feed_t *f, const char *name, feed_buffer *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const member *m = find_member(f, name, err, errlen);
    if (!m || stopped(f, name, err, errlen))
        return -1;
    if (!f->is_zip) {
        if (map_file(m->where, name, &out->data, &out->len, err, errlen) != 0)
            return -1;
        out->mapped = out->data != NULL;
        return 0;
    }
    size_t size = (size_t)m->size;
    zip_t *z;
    zip_file_t *zf;
    /* The recorded size is a claim until the bytes arrive (bzip2 and the
     * like expand far beyond deflate's 1032:1, so feed_open cannot bound it):
     * the buffer starts at no more than FEED_READ_START and doubles as bytes
     * come, so memory follows what is read. +1: a NUL after the bytes. */
    size_t cap = size < FEED_READ_START ? size : FEED_READ_START;
    char *buf = open_member_buffer(f, m, cap + 1, &z, &zf, err, errlen);
    if (!buf)
        return -1;
    size_t have = 0;
    int rc = 0;
    for (;;) {
        if (have == cap && cap < size) {
            size_t bigger = cap > size / 2 ? size : cap * 2;
            char *grown = realloc(buf, bigger + 1);
            if (!grown) {
                set_err(err, errlen, "%s: out of memory (%zu bytes) reading %s", name, bigger + 1, f->path);
                rc = -1;
                break;
            }
            buf = grown;
            cap = bigger;
        }
        if (stopped(f, name, err, errlen)) {
            rc = -1;
            break;
        }
        /* read past the known size: the CRC is checked when the end is seen */
        char extra;
        zip_int64_t got = have < size ? zip_fread(zf, buf + have, cap - have) : zip_fread(zf, &extra, 1);
        if (got < 0) {
            rc = read_failed(f, name, zf, err, errlen);
            break;
        }
        if (got == 0)
            break;
        if (have == size) {
            set_err(err, errlen, "%s: longer than its recorded size in %s", name, f->path);
            rc = -1;
            break;
        }
        have += (size_t)got;
    }
    close_member(z, zf);
    if (!rc && have != size) {
        set_err(err, errlen, "%s: %zu of %zu bytes could be read from %s", name, have, size, f->path);
        rc = -1;
    }
    if (rc) {
        free(buf);
        return -1;
    }
    buf[size] = 0;
    out->data = buf;
    out->len = size;
    out->mapped = 0;
    return 0;
}

void feed_buffer_free(feed_buffer *b)
{
    if (b->mapped)
        munmap((void *)b->data, b->len);
    else
        free((void *)b->data);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------ sha256 */

static int hash_chunk(void *ctx, const char *buf, size_t len)
{
    sha256_update(ctx, buf, len);
    return 0;
}

int feed_sha256(const feed_t *f, char out[65], char *err, size_t errlen)
{
    sha256_ctx c;
    sha256_init(&c);
    if (f->is_zip) {
        const char *data;
        size_t len;
        if (map_file(f->path, f->path, &data, &len, err, errlen) != 0)
            return -1;
        sha256_update(&c, data, len);
        if (len)
            munmap((void *)data, len);
    } else {
        for (int i = 0; i < f->n; i++) {   /* sorted by name */
            sha256_update(&c, f->m[i].name, strlen(f->m[i].name) + 1);
            if (feed_stream(f, f->m[i].name, hash_chunk, &c, err, errlen) != 0)
                return -1;
        }
    }
    uint8_t digest[32];
    sha256_final(&c, digest);
    sha256_hex(digest, out);
    return 0;
}

/* ------------------------------------------------------------ csv */

typedef struct csv_pipe {
    csv_parser *p;
    int csv_rc;
} csv_pipe;

static int pipe_chunk(void *ctx, const char *buf, size_t len)
{
    csv_pipe *cp = ctx;
    cp->csv_rc = csv_feed(cp->p, buf, len);
    return cp->csv_rc;
}

int feed_parse_csv(const feed_t *f, const char *name, const char *const *keys, int nkeys, csv_row_fn row_fn,
                   void *ctx, int *has_column, csv_error *err)
{
    return feed_parse_csv_rejects(f, name, keys, nkeys, row_fn, ctx, NULL, NULL, has_column, err);
}

int feed_parse_csv_rejects(const feed_t *f, const char *name, const char *const *keys, int nkeys,
                           csv_row_fn row_fn, void *ctx, csv_reject_fn reject_fn, void *reject_ctx,
                           int *has_column, csv_error *err)
{
    memset(err, 0, sizeof *err);
    snprintf(err->file, sizeof err->file, "%s", name);
    csv_pipe cp = { .p = csv_open(name, keys, nkeys, row_fn, ctx) };
    if (!cp.p) {
        snprintf(err->message, sizeof err->message, "out of memory");
        return CSV_ERR_NOMEM;
    }
    csv_set_reject_fn(cp.p, reject_fn, reject_ctx);
    char why[sizeof err->message];
    why[0] = 0;
    int rc = feed_stream(f, name, pipe_chunk, &cp, why, sizeof why);
    if (rc == 0)
        rc = cp.csv_rc = csv_finish(cp.p);
    if (rc != 0) {
        if (cp.csv_rc != 0) {
            *err = *csv_last_error(cp.p);
            rc = cp.csv_rc;
        } else {
            /* feed_stream's messages start with the member's name: keep the rest */
            size_t nl = strlen(name);
            const char *msg = strncmp(why, name, nl) == 0 && strncmp(why + nl, ": ", 2) == 0 ? why + nl + 2 : why;
            snprintf(err->message, sizeof err->message, "%s", msg);
            rc = CSV_ERR_IO;
        }
    }
    if (has_column)
        for (int k = 0; k < nkeys; k++)
            has_column[k] = csv_has_column(cp.p, k);
    csv_close(cp.p);
    return rc;
}
