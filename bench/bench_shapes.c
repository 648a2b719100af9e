/* bench_shapes.c — what a shape costs to serve, read from shapes.sqlite or
 * from a packed store.
 *
 * Why it exists: GET /v1/shapes/{id} and /v1/trips/{id}?include=shape answer
 * with an encoded polyline and its length. Issue #27 asked for them from
 * shapes.sqlite, or from a packed store if that measures faster. This
 * measures, per shape of a data directory, in process:
 *   sqlite   the served way: the points from shapes.sqlite (one range of
 *            its WITHOUT ROWID B-tree, a pooled connection's prepared
 *            statement), encoded and measured per request;
 *   lines    a table of pre-encoded polylines in SQLite (in memory, what a
 *            shapes.sqlite of schema version 2 could hold): one lookup;
 *   packed   pre-encoded polylines in one buffer with a sorted id index (a
 *            mapped file's layout, here in memory): a binary search and a copy.
 * Each request copies its polyline into a buffer, as the JSON writer would.
 * Prints µs per request (median and p99 over every shape, several rounds)
 * and the polyline bytes against the raw points'.
 *
 * Usage: bench_shapes DATA_DIR [--rounds N]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "transit/polyline.h"
#include "transit/query.h"
#include "transit/stores.h"

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The served way's work: points to polyline and length, into out. */
static size_t encode(const shape_point *p, uint32_t n, char *out, double *length)
{
    polyline pl;
    polyline_begin(&pl);
    char *o = out;
    *length = 0;
    for (uint32_t i = 0; i < n; i++) {
        o = polyline_put(&pl, o, p[i].lat, p[i].lon);
        if (i)
            *length += polyline_distance_m(p[i - 1].lat, p[i - 1].lon, p[i].lat, p[i].lon);
    }
    return (size_t)(o - out);
}

typedef struct packed_line {
    const char *id;
    uint32_t off, len;
    double length_m;
} packed_line;

static int cmp_line(const void *a, const void *b)
{
    return strcmp(((const packed_line *)a)->id, ((const packed_line *)b)->id);
}

static void report(const char *name, double *us, size_t n)
{
    qsort(us, n, sizeof *us, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += us[i];
    printf("%-8s  p50 %8.2f us   p99 %8.2f us   mean %8.2f us\n", name, us[n / 2], us[n * 99 / 100], sum / (double)n);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_shapes DATA_DIR [--rounds N]\n");
        return 2;
    }
    int rounds = argc >= 4 && strcmp(argv[2], "--rounds") == 0 ? atoi(argv[3]) : 5;
    char err[512];
    dataset *ds = dataset_open(argv[1], err, sizeof err);
    if (!ds) {
        fprintf(stderr, "bench_shapes: %s\n", err);
        return 1;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/shapes.sqlite", dataset_dir(ds));
    sqlite3 *db;
    sqlite3_stmt *ids;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT DISTINCT shape_id FROM shapes ORDER BY shape_id", -1, &ids, NULL) != SQLITE_OK) {
        fprintf(stderr, "bench_shapes: %s: %s\n", path, sqlite3_errmsg(db));
        return 1;
    }
    size_t nshapes = 0, cap = 0;
    char **names = NULL;
    while (sqlite3_step(ids) == SQLITE_ROW) {
        if (nshapes == cap) {
            cap = cap ? cap * 2 : 256;
            names = realloc(names, cap * sizeof *names);
        }
        names[nshapes++] = strdup((const char *)sqlite3_column_text(ids, 0));
    }
    sqlite3_finalize(ids);
    sqlite3_close(db);
    if (!nshapes) {
        fprintf(stderr, "bench_shapes: %s holds no shape\n", path);
        return 1;
    }

    shapes_db *sdb = dataset_take_shapes(ds, err, sizeof err);
    if (!sdb) {
        fprintf(stderr, "bench_shapes: %s\n", err);
        return 1;
    }
    shape_point *points = NULL;
    uint32_t points_cap = 0;
    size_t out_cap = 1 << 20, total_points = 0, total_bytes = 0;
    char *out = malloc(out_cap);
    /* the packed store and the table of lines, built from the served way */
    packed_line *lines = calloc(nshapes, sizeof *lines);
    char *pool = malloc(64 << 20);
    size_t pool_len = 0;
    sqlite3 *mem;
    sqlite3_open(":memory:", &mem);
    sqlite3_exec(mem, "CREATE TABLE shape_lines(shape_id TEXT PRIMARY KEY, length_m REAL, polyline TEXT) WITHOUT ROWID",
                 NULL, NULL, NULL);
    sqlite3_stmt *ins, *get;
    sqlite3_prepare_v2(mem, "INSERT INTO shape_lines VALUES (?1, ?2, ?3)", -1, &ins, NULL);
    for (size_t i = 0; i < nshapes; i++) {
        int n = shapes_read(sdb, names[i], &points, &points_cap, err, sizeof err);
        double length;
        size_t len = encode(points, (uint32_t)n, pool + pool_len, &length);
        lines[i] = (packed_line){names[i], (uint32_t)pool_len, (uint32_t)len, length};
        sqlite3_bind_text(ins, 1, names[i], -1, SQLITE_STATIC);
        sqlite3_bind_double(ins, 2, length);
        sqlite3_bind_text(ins, 3, pool + pool_len, (int)len, SQLITE_STATIC);
        sqlite3_step(ins);
        sqlite3_reset(ins);
        pool_len += len;
        total_points += (size_t)n;
        total_bytes += len;
    }
    sqlite3_finalize(ins);
    qsort(lines, nshapes, sizeof *lines, cmp_line);
    sqlite3_prepare_v2(mem, "SELECT length_m, polyline FROM shape_lines WHERE shape_id = ?1", -1, &get, NULL);

    size_t nsamples = nshapes * (size_t)rounds;
    double *us_sqlite = malloc(nsamples * sizeof(double)), *us_lines = malloc(nsamples * sizeof(double)),
           *us_packed = malloc(nsamples * sizeof(double));
    size_t k = 0;
    volatile double sink = 0;
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < nshapes; i++, k++) {
            const char *id = names[(i * 7919 + (size_t)r) % nshapes];
            double t0 = now_us(), length;
            int n = shapes_read(sdb, id, &points, &points_cap, err, sizeof err);
            sink += (double)encode(points, (uint32_t)n, out, &length) + length;
            double t1 = now_us();
            sqlite3_bind_text(get, 1, id, -1, SQLITE_STATIC);
            if (sqlite3_step(get) == SQLITE_ROW) {
                memcpy(out, sqlite3_column_text(get, 1), (size_t)sqlite3_column_bytes(get, 1));
                sink += sqlite3_column_double(get, 0);
            }
            sqlite3_reset(get);
            double t2 = now_us();
            packed_line key = {.id = id};
            const packed_line *l = bsearch(&key, lines, nshapes, sizeof *lines, cmp_line);
            memcpy(out, pool + l->off, l->len);
            sink += l->length_m;
            double t3 = now_us();
            us_sqlite[k] = t1 - t0;
            us_lines[k] = t2 - t1;
            us_packed[k] = t3 - t2;
        }
    }
    printf("shapes of %s: %zu shapes, %zu points (%.0f a shape), polylines %zu bytes (%.1f a point), %d rounds\n",
           argv[1], nshapes, total_points, (double)total_points / (double)nshapes, total_bytes,
           (double)total_bytes / (double)total_points, rounds);
    report("sqlite", us_sqlite, nsamples);
    report("lines", us_lines, nsamples);
    report("packed", us_packed, nsamples);
    (void)sink;
    sqlite3_finalize(get);
    sqlite3_close(mem);
    dataset_give_shapes(ds, sdb);
    dataset_close(ds);
    for (size_t i = 0; i < nshapes; i++)
        free(names[i]);
    free(names);
    free(points);
    free(out);
    free(lines);
    free(pool);
    free(us_sqlite);
    free(us_lines);
    free(us_packed);
    return 0;
}
