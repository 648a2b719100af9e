/* shapes_read.c — the read side of shapes.sqlite: a shape's encoded
 * polyline and length, and its points in order.
 *
 * Why it exists: the import writes every shapes.txt point into shapes.sqlite
 * (shapes_write.c) keyed by (shape_id, shape_pt_sequence), a WITHOUT ROWID
 * table, so one shape is one range of one B-tree, and beside them each
 * shape's polyline, encoded once (table shape_lines, schema version 2): a
 * request reads one row. A version imported before shape_lines existed
 * (schema version 1) still answers: its points are read and encoded per
 * request. Like schedule.sqlite, a version's file never changes, so each
 * thread opens it read-only and immutable. The dataset pools these
 * connections (dataset_take_shapes).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "transit/polyline.h"
#include "transit/stores.h"
#include "store/sqlite_uri.h"

struct shapes_db {
    sqlite3 *db;
    sqlite3_stmt *points, *line;   /* line: NULL in a file without shape_lines */
    char *text;                    /* the last line's polyline */
    size_t text_cap;
    shape_point *pts;              /* the points of a line encoded here */
    uint32_t pts_cap;
};

static const char POINTS_SQL[] =
    "SELECT shape_pt_lat, shape_pt_lon FROM shapes WHERE shape_id = ?1 ORDER BY shape_pt_sequence";
static const char LINE_SQL[] = "SELECT points, length_m, polyline FROM shape_lines WHERE shape_id = ?1";

shapes_db *shapes_open(const char *version_dir, char *err, size_t errlen)
{
    char uri[8192];
    if (store_sqlite_uri(uri, sizeof uri, version_dir, "shapes.sqlite") != 0) {
        snprintf(err, errlen, "%s: path too long", version_dir);
        return NULL;
    }
    shapes_db *sdb = calloc(1, sizeof *sdb);
    if (!sdb) {
        snprintf(err, errlen, "%s/shapes.sqlite: out of memory", version_dir);
        return NULL;
    }
    if (sqlite3_open_v2(uri, &sdb->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "%s/shapes.sqlite: cannot open: %s", version_dir,
                 sdb->db ? sqlite3_errmsg(sdb->db) : "out of memory");
        shapes_close(sdb);
        return NULL;
    }
    if (sqlite3_exec(sdb->db, "PRAGMA mmap_size=268435456", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(sdb->db, POINTS_SQL, -1, &sdb->points, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s/shapes.sqlite: not a shapes database: %s", version_dir, sqlite3_errmsg(sdb->db));
        shapes_close(sdb);
        return NULL;
    }
    if (sqlite3_prepare_v2(sdb->db, LINE_SQL, -1, &sdb->line, NULL) != SQLITE_OK)
        sdb->line = NULL;   /* schema version 1: lines are encoded per request */
    return sdb;
}

void shapes_close(shapes_db *db)
{
    if (!db)
        return;
    sqlite3_finalize(db->points);
    sqlite3_finalize(db->line);
    sqlite3_close(db->db);
    free(db->text);
    free(db->pts);
    free(db);
}

int shapes_read(shapes_db *db, const char *shape_id, shape_point **points, uint32_t *cap, char *err,
                size_t errlen)
{
    sqlite3_stmt *s = db->points;
    sqlite3_bind_text(s, 1, shape_id, -1, SQLITE_STATIC);
    int rc;
    uint32_t n = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (n == *cap) {
            uint32_t more = *cap ? (*cap > UINT32_MAX / 2 ? UINT32_MAX : *cap * 2) : 256;
            shape_point *p = more > *cap ? realloc(*points, (size_t)more * sizeof *p) : NULL;
            if (!p) {
                snprintf(err, errlen, "shape '%.100s': out of memory for its points", shape_id);
                sqlite3_reset(s);
                sqlite3_clear_bindings(s);
                return -1;
            }
            *points = p;
            *cap = more;
        }
        (*points)[n++] = (shape_point){sqlite3_column_double(s, 0), sqlite3_column_double(s, 1)};
    }
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "shape '%.100s': %s", shape_id, sqlite3_errmsg(db->db));
        n = 0;
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_DONE ? (int)(n > INT32_MAX ? INT32_MAX : n) : -1;
}

/* Room for `need` bytes of polyline text. */
static bool reserve_text(shapes_db *db, size_t need)
{
    if (need <= db->text_cap)
        return true;
    size_t cap = db->text_cap ? db->text_cap : 4096;
    while (cap < need)
        cap *= 2;
    char *t = realloc(db->text, cap);
    if (!t)
        return false;
    db->text = t;
    db->text_cap = cap;
    return true;
}

/* The line of a file without shape_lines: its points, encoded and measured. */
static int encode_line(shapes_db *db, const char *shape_id, shape_line *out, char *err, size_t errlen)
{
    int n = shapes_read(db, shape_id, &db->pts, &db->pts_cap, err, errlen);
    if (n <= 0)
        return n;
    if (!reserve_text(db, (size_t)n * POLYLINE_POINT_MAX + 1)) {
        snprintf(err, errlen, "shape '%.100s': out of memory for its polyline", shape_id);
        return -1;
    }
    polyline pl;
    polyline_begin(&pl);
    char *o = db->text;
    double length = 0;
    for (int i = 0; i < n; i++) {
        o = polyline_put(&pl, o, db->pts[i].lat, db->pts[i].lon);
        if (i)
            length += polyline_distance_m(db->pts[i - 1].lat, db->pts[i - 1].lon, db->pts[i].lat, db->pts[i].lon);
    }
    *o = '\0';
    *out = (shape_line){(uint32_t)n, length, db->text, (size_t)(o - db->text)};
    return 1;
}

int shapes_line(shapes_db *db, const char *shape_id, shape_line *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!db->line)
        return encode_line(db, shape_id, out, err, errlen);
    sqlite3_stmt *s = db->line;
    sqlite3_bind_text(s, 1, shape_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s), found = 0;
    if (rc == SQLITE_ROW) {
        const unsigned char *text = sqlite3_column_text(s, 2);
        size_t len = (size_t)sqlite3_column_bytes(s, 2);
        sqlite3_int64 points = sqlite3_column_int64(s, 0);
        if (!reserve_text(db, len + 1)) {
            snprintf(err, errlen, "shape '%.100s': out of memory for its polyline", shape_id);
            found = -1;
        } else {
            if (len)
                memcpy(db->text, text, len);
            db->text[len] = '\0';
            *out = (shape_line){points < 0 ? 0 : points > UINT32_MAX ? UINT32_MAX : (uint32_t)points,
                                sqlite3_column_double(s, 1), db->text, len};
            found = 1;
        }
    } else if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "shape '%.100s': %s", shape_id, sqlite3_errmsg(db->db));
        found = -1;
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return found;
}
