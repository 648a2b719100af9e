/* stop_times_spill.c — the held rows of a feed not grouped by trip, sorted
 * by trip in runs on disk and merged back trip by trip (see
 * stop_times_spill.h). */
#include "import/stop_times_spill.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* A row as a run holds it. */
typedef struct spill_rec {
    tb_stop_time st;
    double dist;
} spill_rec;

typedef struct spill_run {
    uint64_t first, count;      /* records */
} spill_run;

typedef struct sts_spill {
    int fd;
    char path[4200];
    uint64_t nrecs;             /* written so far */
    TB_VEC(spill_run) runs;
} sts_spill;

enum { WRITE_BATCH = 4096, MAX_READ_BATCH = 65536 };
#define SPARE_BYTES ((uint64_t)64 << 20)   /* left free on the disk besides a run */

size_t sts_row_bytes(const tt_builder *b)
{
    return sizeof(tb_stop_time) + (b->have_dist ? sizeof(double) : 0) + sizeof(uint32_t);
}

bool sts_spilled(const tt_builder *b) { return b->spill && b->spill->runs.n > 0; }

static int io_fail(tt_builder *b, const char *what, int e)
{
    snprintf(b->err, b->errlen,
             "stop_times.txt: the rows are not grouped by trip_id and pass the memory budget, so they are sorted "
             "in runs on disk: %s %s: %s",
             what, b->spill ? b->spill->path : b->spill_dir, strerror(e));
    return -1;
}

static int open_spill(tt_builder *b)
{
    sts_spill *sp = calloc(1, sizeof *sp);
    if (!sp) return -1;
    sp->fd = -1;
    b->spill = sp;
    snprintf(sp->path, sizeof sp->path, "%s/stop_times-runs-%ld", b->spill_dir[0] ? b->spill_dir : ".",
             (long)getpid());
    sp->fd = open(sp->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (sp->fd < 0) return io_fail(b, "cannot create", errno);
    unlink(sp->path);   /* its space goes with the descriptor, whatever happens */
    return 0;
}

/* Whether the disk holding the runs has room for `bytes` more. */
static int check_space(tt_builder *b, uint64_t bytes)
{
    struct statvfs v;
    if (fstatvfs(b->spill->fd, &v) != 0) return 0;   /* unknown: the writes will tell */
    uint64_t avail = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
    if (avail >= bytes + SPARE_BYTES) return 0;
    snprintf(b->err, b->errlen,
             "stop_times.txt: the rows are not grouped by trip_id and pass the memory budget, so they are sorted "
             "in runs on disk, but %s has %llu MB free and the next run needs %llu MB (and %llu MB spare): free "
             "space there, raise --memory-budget, or sort stop_times.txt by trip_id",
             b->spill_dir, (unsigned long long)(avail >> 20), (unsigned long long)(bytes >> 20),
             (unsigned long long)(SPARE_BYTES >> 20));
    return -1;
}

static int write_at(tt_builder *b, const void *buf, size_t len, uint64_t off)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = pwrite(b->spill->fd, p, len, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return io_fail(b, "cannot write", w < 0 ? errno : ENOSPC);
        p += w;
        len -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

static int read_at(tt_builder *b, void *buf, size_t len, uint64_t off)
{
    char *p = buf;
    while (len > 0) {
        ssize_t r = pread(b->spill->fd, p, len, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return io_fail(b, "cannot read", r < 0 ? errno : EIO);
        p += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int sts_spill_run(tt_builder *b)
{
    size_t n = b->stop_times.n;
    if (n == 0) return 0;
    if (!b->spill && open_spill(b) != 0) return b->err[0] ? -1 : (snprintf(b->err, b->errlen, "out of memory"), -1);
    sts_spill *sp = b->spill;
    if (check_space(b, (uint64_t)n * sizeof(spill_rec))) return -1;
    uint32_t ntrips = (uint32_t)b->trips.n;
    uint32_t *first = calloc((size_t)ntrips + 1, sizeof *first);
    uint32_t *order = malloc(n * sizeof *order);
    spill_rec *batch = malloc(WRITE_BATCH * sizeof *batch);
    spill_run *run = TB_PUSH(sp->runs);
    int rc = -1;
    if (!first || !order || !batch || !run) {
        snprintf(b->err, b->errlen, "out of memory while sorting stop_times.txt's rows");
        goto out;
    }
    /* a stable counting sort by trip: file order within a trip */
    const tb_stop_time *rows = b->stop_times.v;
    for (size_t i = 0; i < n; i++) first[rows[i].trip + 1]++;
    for (uint32_t t = 0; t < ntrips; t++) first[t + 1] += first[t];
    for (size_t i = 0; i < n; i++) order[first[rows[i].trip]++] = (uint32_t)i;
    *run = (spill_run){sp->nrecs, n};
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t r = order[i];
        batch[k].st = rows[r];
        batch[k].dist = b->have_dist ? b->dists.v[r] : NAN;
        if (++k == WRITE_BATCH || i + 1 == n) {
            if (write_at(b, batch, k * sizeof *batch, (sp->nrecs + i + 1 - k) * sizeof *batch)) goto out;
            k = 0;
        }
    }
    sp->nrecs += n;
    b->stop_times.n = b->dists.n = 0;
    rc = 0;
out:
    if (rc != 0 && run) sp->runs.n--;
    free(first);
    free(order);
    free(batch);
    return rc;
}

/* A run being merged: its records not yet read, and a batch of them. */
typedef struct run_cursor {
    uint64_t next, end;         /* records */
    spill_rec *buf;
    uint32_t bn, bi;
} run_cursor;

static int refill(tt_builder *b, run_cursor *c, uint32_t batch)
{
    uint64_t left = c->end - c->next;
    c->bn = (uint32_t)(left < batch ? left : batch);
    c->bi = 0;
    if (c->bn == 0) return 0;
    if (read_at(b, c->buf, c->bn * sizeof *c->buf, c->next * sizeof *c->buf)) return -1;
    c->next += c->bn;
    return 0;
}

/* Heap order: the smaller trip first, then the earlier run (file order). */
static bool before(const run_cursor *c, uint32_t x, uint32_t y)
{
    uint32_t tx = c[x].buf[c[x].bi].st.trip, ty = c[y].buf[c[y].bi].st.trip;
    return tx != ty ? tx < ty : x < y;
}

static void sift_down(const run_cursor *c, uint32_t *heap, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, m = i;
        if (l < n && before(c, heap[l], heap[m])) m = l;
        if (l + 1 < n && before(c, heap[l + 1], heap[m])) m = l + 1;
        if (m == i) return;
        uint32_t t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

int sts_merge_fold(tt_builder *b, trip_stream *s)
{
    if (sts_spill_run(b)) return -1;
    sts_spill *sp = b->spill;
    uint32_t k = (uint32_t)sp->runs.n;
    uint64_t budget = b->opt->memory_budget ? b->opt->memory_budget : TIMETABLE_MEMORY_BUDGET;
    uint64_t per = budget / 2 / ((uint64_t)k * sizeof(spill_rec));
    uint32_t batch = per < 1 ? 1 : per > MAX_READ_BATCH ? MAX_READ_BATCH : (uint32_t)per;
    run_cursor *c = calloc(k, sizeof *c);
    uint32_t *heap = malloc(k * sizeof *heap);
    TB_VEC(tb_stop_time) rows = {0};
    TB_VEC(double) dists = {0};
    int rc = -1;
    if (!c || !heap) goto oom;
    uint32_t n = 0;
    for (uint32_t r = 0; r < k; r++) {
        c[r].next = sp->runs.v[r].first;
        c[r].end = sp->runs.v[r].first + sp->runs.v[r].count;
        if (!(c[r].buf = malloc(batch * sizeof *c[r].buf))) goto oom;
        if (refill(b, &c[r], batch)) goto out;
        if (c[r].bn) heap[n++] = r;
    }
    for (uint32_t i = n / 2; i-- > 0;) sift_down(c, heap, n, i);
    uint32_t cur = TT_NONE;
    while (n > 0) {
        run_cursor *rc_ = &c[heap[0]];
        const spill_rec *rec = &rc_->buf[rc_->bi];
        if (rec->st.trip != cur) {
            if (rows.n && ts_fold_trip(b, s, cur, rows.v, b->have_dist ? dists.v : NULL, (uint32_t)rows.n)) goto oom;
            rows.n = dists.n = 0;
            cur = rec->st.trip;
        }
        tb_stop_time *st = TB_PUSH(rows);
        double *d = TB_PUSH(dists);
        if (!st || !d) goto oom;
        *st = rec->st;
        *d = rec->dist;
        if (++rc_->bi == rc_->bn && refill(b, rc_, batch)) goto out;
        if (rc_->bn == 0) heap[0] = heap[--n];
        sift_down(c, heap, n, 0);
    }
    if (rows.n && ts_fold_trip(b, s, cur, rows.v, b->have_dist ? dists.v : NULL, (uint32_t)rows.n)) goto oom;
    rc = 0;
    goto out;
oom:
    snprintf(b->err, b->errlen, "out of memory while merging stop_times.txt's sorted runs");
out:
    if (c)
        for (uint32_t r = 0; r < k; r++) free(c[r].buf);
    free(c);
    free(heap);
    free(rows.v);
    free(dists.v);
    sts_close(b);
    return rc;
}

void sts_close(tt_builder *b)
{
    if (!b->spill) return;
    if (b->spill->fd >= 0) close(b->spill->fd);
    free(b->spill->runs.v);
    free(b->spill);
    b->spill = NULL;
}
