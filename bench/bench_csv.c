/* bench_csv.c — how fast transitd reads GTFS CSV, next to libcsv.
 *
 * Why it exists: the import is bound by reading stop_times.txt (153 MB for the
 * NYC Brooklyn bus feed); this measures our streaming parser, its parallel
 * form and libcsv on the same bytes in memory (warm), so a change to csv.c
 * can be judged by a number.
 *
 *   bench_csv FILE [repeats]      (repeats: default 5; the median is reported)
 *
 * (a) csv_open/csv_feed, one thread, 1 MiB chunks as feed_stream gives them,
 *     keys of interest trip_id, arrival_time, departure_time, stop_id,
 *     stop_sequence, pickup_type;
 * (b) csv_parse_parallel on 2 threads, same keys;
 * (c) libcsv 3 (csv_parse with a field and a row callback, its standard use),
 *     fed the same 1 MiB chunks; it copies every field, wanted or not.
 * The last three lines are JSON, one per reader:
 * {"bench":"csv","reader":...,"mb_s":...,"cpu_s":...,"vs_libcsv":...}.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* libcsv and transit/csv.h both use the names csv_parser and csv_error: rename
 * libcsv's (a struct tag, and a function this file does not call). */
#define csv_parser libcsv_parser
#define csv_error libcsv_error_unused
#include <csv.h>
#undef csv_parser
#undef csv_error

#include "transit/csv.h"

#define CHUNK (1u << 20)

static const char *const KEYS[] = { "trip_id", "arrival_time", "departure_time",
                                    "stop_id", "stop_sequence", "pickup_type" };
enum { NKEYS = 6 };

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU seconds of all threads: on a busy machine wall time says little. */
static double cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* What every consumer does at least: look at the fields it asked for. */
typedef struct tally {
    uint64_t rows, bytes;
} tally;

static int our_row(void *ctx, const csv_field *f, uint64_t line)
{
    tally *t = ctx;
    (void)line;
    uint64_t n = 0;
    for (int k = 0; k < NKEYS; k++)
        n += f[k].len;
    t->bytes += n;
    t->rows++;
    return 0;
}

static int run_streaming(const char *buf, size_t len, tally *t)
{
    csv_parser *p = csv_open("bench.txt", KEYS, NKEYS, our_row, t);
    if (!p)
        return -1;
    int rc = 0;
    for (size_t at = 0; at < len && !rc; at += CHUNK)
        rc = csv_feed(p, buf + at, len - at < CHUNK ? len - at : CHUNK);
    if (!rc)
        rc = csv_finish(p);
    if (rc)
        fprintf(stderr, "bench_csv: %s:%llu: %s\n", csv_last_error(p)->file,
                (unsigned long long)csv_last_error(p)->line, csv_last_error(p)->message);
    csv_close(p);
    return rc;
}

static int run_parallel(const char *buf, size_t len, int threads, tally *t)
{
    tally parts[8];
    void *ctxs[8];
    memset(parts, 0, sizeof parts);
    for (int i = 0; i < 8; i++)
        ctxs[i] = &parts[i];
    csv_error err;
    int n = csv_parse_parallel("bench.txt", buf, len, KEYS, NKEYS, our_row, ctxs, threads, NULL, &err);
    if (n < 1) {
        fprintf(stderr, "bench_csv: %s:%llu: %s\n", err.file, (unsigned long long)err.line, err.message);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        t->rows += parts[i].rows;
        t->bytes += parts[i].bytes;
    }
    return 0;
}

typedef struct lc_tally {
    uint64_t rows, fields, bytes;
} lc_tally;

static void lc_field(void *s, size_t len, void *ctx)
{
    lc_tally *t = ctx;
    (void)s;
    t->fields++;
    t->bytes += len;
}

static void lc_row(int c, void *ctx)
{
    (void)c;
    ((lc_tally *)ctx)->rows++;
}

static int run_libcsv(const char *buf, size_t len, lc_tally *t)
{
    struct libcsv_parser p;
    if (csv_init(&p, 0) != 0)
        return -1;
    for (size_t at = 0; at < len; at += CHUNK) {
        size_t n = len - at < CHUNK ? len - at : CHUNK;
        if (csv_parse(&p, buf + at, n, lc_field, lc_row, t) != n) {
            fprintf(stderr, "bench_csv: libcsv could not parse the input\n");
            csv_free(&p);
            return -1;
        }
    }
    csv_fini(&p, lc_field, lc_row, t);
    csv_free(&p);
    return 0;
}

static char *load(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench_csv: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(size > 0 ? (size_t)size : 1);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "bench_csv: %s: cannot read\n", path);
        fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    *len = (size_t)size;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_csv FILE [repeats]\n");
        return 2;
    }
    int repeats = argc > 2 ? atoi(argv[2]) : 5;
    if (repeats < 1 || repeats > 100)
        repeats = 5;
    size_t len;
    char *buf = load(argv[1], &len);
    if (!buf)
        return 1;
    double mb = (double)len / 1e6;

    double ts[100], tp[100], tl[100], cs[100], cp[100], cl[100];
    tally st = { 0 }, pt = { 0 };
    lc_tally lt = { 0 };
    for (int r = 0; r < repeats; r++) {
        /* interleaved, so drift in the machine's speed hits all three alike */
        tally a = { 0 }, b = { 0 };
        lc_tally c = { 0 };
        double t0 = now(), c0 = cpu();
        if (run_streaming(buf, len, &a) != 0)
            return 1;
        double t1 = now(), c1 = cpu();
        if (run_parallel(buf, len, 2, &b) != 0)
            return 1;
        double t2 = now(), c2 = cpu();
        if (run_libcsv(buf, len, &c) != 0)
            return 1;
        double t3 = now(), c3 = cpu();
        ts[r] = t1 - t0;
        tp[r] = t2 - t1;
        tl[r] = t3 - t2;
        cs[r] = c1 - c0;
        cp[r] = c2 - c1;
        cl[r] = c3 - c2;
        st = a;
        pt = b;
        lt = c;
    }
    if (st.rows != pt.rows || st.bytes != pt.bytes) {
        fprintf(stderr, "bench_csv: streaming and parallel disagree: %llu/%llu rows\n",
                (unsigned long long)st.rows, (unsigned long long)pt.rows);
        return 1;
    }
    double ms = median(ts, repeats), mp = median(tp, repeats), ml = median(tl, repeats);
    double ks = median(cs, repeats), kp = median(cp, repeats), kl = median(cl, repeats);
    printf("file: %s (%.1f MB, %llu data rows; libcsv saw %llu records)\n", argv[1], mb,
           (unsigned long long)st.rows, (unsigned long long)lt.rows);
    printf("median of %d runs, warm, in memory; cpu = CPU seconds of all threads\n", repeats);
    printf("  %-34s %8s %8s %10s %8s %11s\n", "parser", "wall s", "MB/s", "vs libcsv", "cpu s",
           "MB/cpu-s");
    printf("  %-34s %8.3f %8.0f %9.2fx %8.3f %11.0f\n", "transitd csv_feed, 1 thread", ms, mb / ms,
           ml / ms, ks, mb / ks);
    printf("  %-34s %8.3f %8.0f %9.2fx %8.3f %11.0f\n", "transitd csv_parse_parallel, 2 thr", mp,
           mb / mp, ml / mp, kp, mb / kp);
    printf("  %-34s %8.3f %8.0f %9.2fx %8.3f %11.0f\n", "libcsv 3 csv_parse", ml, mb / ml, 1.0, kl,
           mb / kl);
    /* one JSON line per reader, the form bench/run_bench.py reads */
    const char *names[3] = { "transitd csv_feed 1 thread", "transitd csv_parse_parallel 2 threads",
                             "libcsv 3 csv_parse" };
    double wall[3] = { ms, mp, ml }, cpus[3] = { ks, kp, kl };
    for (int i = 0; i < 3; i++)
        printf("{\"bench\":\"csv\",\"reader\":\"%s\",\"bytes\":%zu,\"rows\":%llu,\"repeats\":%d,"
               "\"seconds\":%.4f,\"mb_s\":%.1f,\"cpu_s\":%.4f,\"mb_per_cpu_s\":%.1f,\"vs_libcsv\":%.2f}\n",
               names[i], len, (unsigned long long)st.rows, repeats, wall[i], mb / wall[i], cpus[i],
               mb / cpus[i], ml / wall[i]);
    free(buf);
    return 0;
}
