/* shapes_write.c — writes shapes.sqlite, the polyline store of one feed
 * version.
 *
 * Why it exists: shapes.txt is large (100K+ points) and read only when a
 * client asks for a trip's or route's geometry, so it lives in a database of
 * its own instead of weighing on schedule.sqlite or timetable.bin. Points are
 * buffered, sorted by (shape_id, shape_pt_sequence) and appended in key order
 * into one WITHOUT ROWID table of an in-memory database (one transaction),
 * which VACUUM INTO then writes to the path in one pass with full B-tree
 * pages; one fsync. Beside the points, each shape's encoded polyline and
 * length (table shape_lines), which is what GET /v1/shapes/{id} serves:
 * one lookup instead of reading, encoding and measuring a few hundred points
 * per request (bench/bench_shapes.c: 1.2 against 29 µs a Brooklyn shape,
 * 2.5 against 75 µs a subway one). A feed without
 * shapes.txt gets a valid empty database. No global state (runs on its own
 * thread next to the other store writers).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "transit/gtfs.h"
#include "transit/polyline.h"
#include "transit/store_write.h"

#include "import/sqlite_write.h"

#define SHAPES_SCHEMA_VERSION 2   /* 2: shape_lines */
#define SHOWN_MAX 60
#define SHOWN(f) (int)((f)->len > SHOWN_MAX ? SHOWN_MAX : (f)->len), (f)->ptr

static const char *const SHAPE_KEYS[] = {"shape_id", "shape_pt_lat", "shape_pt_lon",
                                         "shape_pt_sequence", "shape_dist_traveled"};
enum { SH_ID, SH_LAT, SH_LON, SH_SEQ, SH_DIST, SH_N };

typedef struct shape_point {
    const char *id;       /* into the id arena; set once parsing is over */
    uint64_t line;
    uint32_t id_off, id_len;
    uint32_t seq;
    bool has_dist;
    double lat, lon, dist;
} shape_point;

typedef struct shapes_writer {
    diag *d;
    char *err;
    size_t errlen;
    bool failed;
    bool header_checked;
    uint64_t rows;
    int has_column[CSV_MAX_KEYS];
    /* shape ids, each stored once per run of consecutive points */
    char *ids;
    size_t ids_len, ids_cap;
    uint32_t last_off, last_len;
    shape_point *points;
    size_t npoints, points_cap;
} shapes_writer;

/* Buffers here start at 1024 elements and double. */
static void *grow_to(void *buf, size_t *cap, size_t need, size_t elem)
{
    return store_grow(buf, cap, need, 1024, elem);
}

static int stop_with(shapes_writer *w, const char *msg, const char *column)
{
    if (!w->failed) {
        snprintf(w->err, w->errlen, "shapes.txt: %s%s", msg, column ? column : "");
        w->failed = true;
    }
    return 1;
}

static bool coordinate(const csv_field *f, double limit, double *out)
{
    return f->len && gtfs_parse_double(f->ptr, f->len, out) == 0 && *out >= -limit &&
           *out <= limit;
}

/* A record the CSV parser rejected (too few fields, a NUL byte). */
static void on_rejected_row(void *ctx, const csv_error *e)
{
    shapes_writer *w = ctx;
    w->rows++;
    diag_add(w->d, DIAG_BAD_ROW, "shapes.txt", e->line, "%s", e->message);
}

static int on_shape_row(void *ctx, const csv_field *fields, uint64_t line)
{
    shapes_writer *w = ctx;
    if (!w->header_checked) {
        w->header_checked = true;
        for (int k = SH_ID; k <= SH_SEQ; k++)
            if (fields[k].flags & CSV_FIELD_ABSENT)
                return stop_with(w, "missing required column ", SHAPE_KEYS[k]);
    }
    w->rows++;
    csv_field f[SH_N];
    for (int k = 0; k < SH_N; k++)
        f[k] = store_field_trimmed(fields[k]);
    shape_point p = {.line = line};
    int64_t seq;
    if (f[SH_ID].len == 0) {
        diag_add(w->d, DIAG_MISSING_VALUE, "shapes.txt", line, "empty shape_id");
        return 0;
    }
    if (!coordinate(&f[SH_LAT], 90.0, &p.lat) || !coordinate(&f[SH_LON], 180.0, &p.lon)) {
        diag_add(w->d, DIAG_BAD_COORDINATE, "shapes.txt", line, "bad shape_pt_lat/lon '%.*s', '%.*s'",
                 SHOWN(&f[SH_LAT]), SHOWN(&f[SH_LON]));
        return 0;
    }
    if (gtfs_parse_int(f[SH_SEQ].ptr, f[SH_SEQ].len, &seq) != 0 || seq < 0 || seq > UINT32_MAX) {
        diag_add(w->d, DIAG_BAD_NUMBER, "shapes.txt", line,
                 "shape_pt_sequence is not a non-negative integer: '%.*s'", SHOWN(&f[SH_SEQ]));
        return 0;
    }
    p.seq = (uint32_t)seq;
    if (f[SH_DIST].len) {
        if (gtfs_parse_double(f[SH_DIST].ptr, f[SH_DIST].len, &p.dist) != 0 || !(p.dist >= 0)) {
            diag_add(w->d, DIAG_BAD_NUMBER, "shapes.txt", line,
                     "shape_dist_traveled is not a non-negative number: '%.*s'",
                     SHOWN(&f[SH_DIST]));
            return 0;
        }
        p.has_dist = true;
    }
    shape_point *points = grow_to(w->points, &w->points_cap, w->npoints + 1, sizeof *points);
    if (!points)
        return stop_with(w, "out of memory", NULL);
    w->points = points;
    /* Points of one shape are usually consecutive: store the id once per run. */
    if (!(w->last_len == f[SH_ID].len && w->ids_len &&
          memcmp(w->ids + w->last_off, f[SH_ID].ptr, f[SH_ID].len) == 0)) {
        if (w->ids_len + f[SH_ID].len > UINT32_MAX)
            return stop_with(w, "out of memory", NULL);
        char *ids = grow_to(w->ids, &w->ids_cap, w->ids_len + f[SH_ID].len, 1);
        if (!ids)
            return stop_with(w, "out of memory", NULL);
        w->ids = ids;
        memcpy(w->ids + w->ids_len, f[SH_ID].ptr, f[SH_ID].len);
        w->last_off = (uint32_t)w->ids_len;
        w->last_len = f[SH_ID].len;
        w->ids_len += f[SH_ID].len;
    }
    p.id_off = w->last_off;
    p.id_len = w->last_len;
    w->points[w->npoints++] = p;
    return 0;
}

/* SQLite's BINARY order on shape_id, then sequence, then file order. */
static int compare_points(const void *a, const void *b)
{
    const shape_point *x = a, *y = b;
    if (x->id != y->id) {
        int c = store_binary_order(x->id, x->id_len, y->id, y->id_len);
        if (c)
            return c;
    }
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static int sql_error(shapes_writer *w, sqlite3 *db, const char *what)
{
    if (!w->failed) {
        snprintf(w->err, w->errlen, "shapes.sqlite: %s: %s", what, sqlite3_errmsg(db));
        w->failed = true;
    }
    return -1;
}

static int insert_points(shapes_writer *w, sqlite3 *db)
{
    for (size_t i = 0; i < w->npoints; i++)
        w->points[i].id = w->ids + w->points[i].id_off;
    if (w->npoints > 1)
        qsort(w->points, w->npoints, sizeof *w->points, compare_points);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "INSERT INTO shapes VALUES (?1,?2,?3,?4,?5)", -1, &s, NULL) !=
        SQLITE_OK)
        return sql_error(w, db, "prepare");
    for (size_t i = 0; i < w->npoints; i++) {
        const shape_point *p = &w->points[i];
        sqlite3_bind_text(s, 1, p->id, (int)p->id_len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, p->seq);
        sqlite3_bind_double(s, 3, p->lat);
        sqlite3_bind_double(s, 4, p->lon);
        if (p->has_dist)
            sqlite3_bind_double(s, 5, p->dist);
        else
            sqlite3_bind_null(s, 5);
        int rc = sqlite3_step(s);
        sqlite3_reset(s);
        if (rc == SQLITE_DONE)
            continue;
        if (sqlite3_extended_errcode(db) == SQLITE_CONSTRAINT_PRIMARYKEY) {
            diag_add(w->d, DIAG_DUPLICATE_ID, "shapes.txt", p->line,
                     "duplicate (shape_id, shape_pt_sequence) ('%.*s', %u)",
                     (int)(p->id_len > SHOWN_MAX ? SHOWN_MAX : p->id_len), p->id, p->seq);
            continue;
        }
        sqlite3_finalize(s);
        return sql_error(w, db, "insert");
    }
    sqlite3_finalize(s);
    return 0;
}

/* One shape's polyline and length from its points [first, end) of the
 * sorted buffer, a repeated sequence skipped as insert_points skips it. */
static int insert_line(shapes_writer *w, sqlite3 *db, sqlite3_stmt *s, size_t first, size_t end, char **text,
                       size_t *text_cap)
{
    size_t need = (end - first) * POLYLINE_POINT_MAX + 1;
    if (need > *text_cap) {
        char *t = realloc(*text, need);
        if (!t) {
            stop_with(w, "out of memory", NULL);
            return -1;
        }
        *text = t;
        *text_cap = need;
    }
    polyline pl;
    polyline_begin(&pl);
    char *o = *text;
    double length = 0;
    uint32_t points = 0;
    const shape_point *prev = NULL;
    for (size_t i = first; i < end; i++) {
        const shape_point *p = &w->points[i];
        if (prev && prev->seq == p->seq)
            continue;   /* the first of a repeated sequence wins */
        o = polyline_put(&pl, o, p->lat, p->lon);
        if (prev)
            length += polyline_distance_m(prev->lat, prev->lon, p->lat, p->lon);
        prev = p;
        points++;
    }
    const shape_point *p = &w->points[first];
    sqlite3_bind_text(s, 1, p->id, (int)p->id_len, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, points);
    sqlite3_bind_double(s, 3, length);
    sqlite3_bind_text(s, 4, *text, (int)(o - *text), SQLITE_STATIC);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : sql_error(w, db, "insert a line");
}

/* shape_lines: every shape of the sorted points, in key order. */
static int insert_lines(shapes_writer *w, sqlite3 *db)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "INSERT INTO shape_lines VALUES (?1,?2,?3,?4)", -1, &s, NULL) != SQLITE_OK)
        return sql_error(w, db, "prepare");
    char *text = NULL;
    size_t text_cap = 0;
    int rc = 0;
    for (size_t first = 0; first < w->npoints && rc == 0;) {
        size_t end = first + 1;
        while (end < w->npoints && w->points[end].id_len == w->points[first].id_len &&
               memcmp(w->points[end].id, w->points[first].id, w->points[first].id_len) == 0)
            end++;
        rc = insert_line(w, db, s, first, end, &text, &text_cap);
        first = end;
    }
    free(text);
    sqlite3_finalize(s);
    return rc;
}

static int exec_sql(shapes_writer *w, sqlite3 *db, const char *sql)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return sql_error(w, db, "exec");
    return 0;
}

static int build(shapes_writer *w, const feed_t *feed, sqlite3 *db, const char *path,
                 store_stats *st)
{
    char version[64];
    snprintf(version, sizeof version, "PRAGMA user_version=%d;", SHAPES_SCHEMA_VERSION);
    if (exec_sql(w, db, "PRAGMA page_size=4096; PRAGMA journal_mode=OFF; BEGIN;") != 0 ||
        exec_sql(w, db, "CREATE TABLE shapes(shape_id TEXT NOT NULL,"
                        " shape_pt_sequence INTEGER NOT NULL, shape_pt_lat REAL NOT NULL,"
                        " shape_pt_lon REAL NOT NULL, shape_dist_traveled REAL,"
                        " PRIMARY KEY (shape_id, shape_pt_sequence)) WITHOUT ROWID;") != 0 ||
        exec_sql(w, db, "CREATE TABLE shape_lines(shape_id TEXT PRIMARY KEY, points INTEGER NOT NULL,"
                        " length_m REAL NOT NULL, polyline TEXT NOT NULL) WITHOUT ROWID;") != 0 ||
        exec_sql(w, db, version) != 0)
        return -1;
    if (feed_has(feed, "shapes.txt")) {
        csv_error ce;
        memset(&ce, 0, sizeof ce);
        int rc = feed_parse_csv_rejects(feed, "shapes.txt", SHAPE_KEYS, SH_N, on_shape_row, w,
                                        on_rejected_row, w, w->has_column, &ce);
        st->shapes = w->rows;
        if (w->failed)
            return -1;
        if (rc != 0) {
            if (ce.line)
                snprintf(w->err, w->errlen, "shapes.txt:%llu: %s", (unsigned long long)ce.line,
                         ce.message);
            else
                snprintf(w->err, w->errlen, "shapes.txt: %s",
                         ce.message[0] ? ce.message : "cannot be read");
            w->failed = true;
            return -1;
        }
        if (!w->header_checked)
            for (int k = SH_ID; k <= SH_SEQ; k++)
                if (!w->has_column[k]) {
                    stop_with(w, "missing required column ", SHAPE_KEYS[k]);
                    return -1;
                }
        if (insert_points(w, db) != 0 || insert_lines(w, db) != 0)
            return -1;
    }
    if (exec_sql(w, db, "COMMIT;") != 0)
        return -1;
    const char *step = "";
    if (store_build_vacuum_into(db, path, &step) != SQLITE_OK)
        return sql_error(w, db, step);
    return 0;
}

typedef struct shapes_build {
    shapes_writer *w;
    const feed_t *feed;
    store_stats *st;
} shapes_build;

/* store_fill_fn: the whole build on the in-memory database. */
static int fill_shapes(void *ctx, sqlite3 *db, const char *path)
{
    shapes_build *b = ctx;
    return build(b->w, b->feed, db, path, b->st);
}

int shapes_store_write(const feed_t *feed, const char *path, diag *d, store_stats *st,
                       char *err, size_t errlen)
{
    store_stats local;
    st = store_stats_reset(st, &local);
    shapes_writer w = {.d = d, .err = err, .errlen = errlen};
    shapes_build b = {.w = &w, .feed = feed, .st = st};
    int rc = store_build_file(path, "shapes.sqlite", fill_shapes, &b, st, err, errlen);
    free(w.ids);
    free(w.points);
    return rc;
}

int shapes_store_format(void)
{
    return SHAPES_SCHEMA_VERSION;
}
