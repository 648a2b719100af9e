/* feed_merge.c — several GTFS feeds written as one directory (feed_merge.h).
 *
 * Why it exists: the import pipeline reads one feed; this is the one place
 * that knows how feeds combine. Two passes, feeds in command-line order:
 * the first notes which feed first defines each id of each table (the
 * owner); the second copies every file of every feed into the merged file,
 * rewriting an id as "<feed>:<id>" wherever its owner is another feed. Both
 * depend only on the feeds' order and contents, so the merged bytes (and so
 * the dataset version, their SHA-256) are the same on every run. Each copied
 * row goes through the CSV reader, so a syntax error names the feed file,
 * the file inside it, the line and the column; the lines of the merged files
 * are mapped back to the feeds' own (feed_merge_locate) for the import's
 * messages. With the merge cache (feed_merge_write_cached, merge_cache.h) a
 * feed whose rows would come out the same as in the previous merge has them
 * copied from there, with its ids, counts and lines map, instead of read.
 */
#define _GNU_SOURCE /* copy_file_range on Linux */
#include "transit/feed_merge.h"

#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strmap.h"
#include "import/merge_cache.h"
#include "transit/csv.h"
#include "transit/feed.h"
#include "transit/sha256.h"

enum { T_AGENCY, T_STOP, T_ROUTE, T_TRIP, T_SERVICE, T_SHAPE, T_FARE, T_ZONE, T_N, T_NONE = -1 };

typedef struct col_ref {
    const char *column;
    int table;
} col_ref;

#define MAX_REFS 6
typedef struct file_rule {
    const char *file;
    col_ref refs[MAX_REFS];
    const char *defines;      /* the column whose ids this file defines, or NULL */
    int defines_table;
    const char *record_kind;  /* written to transitd_record_feeds.txt, or NULL */
    bool needs_agency_id;     /* agency_id is written even when the feed omits it */
} file_rule;

/* Every file the merge carries, in the order it writes them. */
static const file_rule RULES[] = {
    {"agency.txt", {{"agency_id", T_AGENCY}}, "agency_id", T_AGENCY, "agency", true},
    {"stops.txt", {{"stop_id", T_STOP}, {"parent_station", T_STOP}, {"zone_id", T_ZONE}}, "stop_id", T_STOP,
     "stop", false},
    {"routes.txt", {{"route_id", T_ROUTE}, {"agency_id", T_AGENCY}}, "route_id", T_ROUTE, "route", true},
    {"trips.txt",
     {{"trip_id", T_TRIP}, {"route_id", T_ROUTE}, {"service_id", T_SERVICE}, {"shape_id", T_SHAPE}},
     "trip_id", T_TRIP, "trip", false},
    {"stop_times.txt", {{"trip_id", T_TRIP}, {"stop_id", T_STOP}}, NULL, T_NONE, NULL, false},
    {"calendar.txt", {{"service_id", T_SERVICE}}, "service_id", T_SERVICE, NULL, false},
    {"calendar_dates.txt", {{"service_id", T_SERVICE}}, "service_id", T_SERVICE, NULL, false},
    {"shapes.txt", {{"shape_id", T_SHAPE}}, "shape_id", T_SHAPE, NULL, false},
    {"frequencies.txt", {{"trip_id", T_TRIP}}, NULL, T_NONE, NULL, false},
    {"transfers.txt",
     {{"from_stop_id", T_STOP}, {"to_stop_id", T_STOP}, {"from_route_id", T_ROUTE}, {"to_route_id", T_ROUTE},
      {"from_trip_id", T_TRIP}, {"to_trip_id", T_TRIP}},
     NULL, T_NONE, NULL, false},
    {"fare_attributes.txt", {{"fare_id", T_FARE}, {"agency_id", T_AGENCY}}, "fare_id", T_FARE, NULL, true},
    {"fare_rules.txt",
     {{"fare_id", T_FARE}, {"route_id", T_ROUTE}, {"origin_id", T_ZONE}, {"destination_id", T_ZONE},
      {"contains_id", T_ZONE}},
     NULL, T_NONE, NULL, false},
};
#define NRULES (sizeof RULES / sizeof *RULES)

/* stops.txt also defines zones. */
static const struct { const char *file, *column; int table; } EXTRA_DEFINES[] = {{"stops.txt", "zone_id", T_ZONE}};

static const char *const REQUIRED[] = {"agency.txt", "stops.txt", "routes.txt", "trips.txt", "stop_times.txt"};

/* Bump when the merged bytes of the same feeds change (the rule, the files
 * written, their columns): the version names what was built. */
#define MERGE_REVISION "transitd feed_merge 1\n"

#define MAX_UNION 64
#define STAGE_BYTES ((size_t)1 << 20)
#define RECORDS_FILE "transitd_record_feeds.txt"
#define DATE_LEN 8

/* A run of merged lines that map to one feed's lines one to one. */
typedef struct segment {
    uint64_t out_line, src_line;
    int feed;
} segment;

typedef struct file_map {
    segment *seg;
    size_t n, cap;
} file_map;

typedef struct feed_info_row {
    char publisher[256], url[256], lang[32], start[DATE_LEN + 1], end[DATE_LEN + 1], version[128];
} feed_info_row;

typedef struct one_feed {
    const char *path;
    char name[FEED_MERGE_NAME_MAX];
    feed_t *f;
    char sha256[65];
    char timezone[64];
    char first_date[DATE_LEN + 1], last_date[DATE_LEN + 1];
    uint64_t agencies, stops, routes, trips, stop_times, renamed;
    feed_info_row info;
    bool has_info;
    /* the merge cache (merge_cache.h): */
    const mc_feed *old;       /* the cached record with this feed's content key, or NULL */
    bool cached;              /* its rows copied from the cache, not read from the feed */
    mc_feed rec;              /* its record in the index written with this merge */
} one_feed;

typedef struct mapped_file {
    const uint8_t *p;
    size_t size;
    int fd;            /* kept for copy_file_range, -1 when not open */
    bool tried;
} mapped_file;

struct feed_merge {
    int n;
    one_feed feeds[FEED_MERGE_MAX_FEEDS];
    strmap owner[T_N];             /* id -> index of the feed that first defines it */
    strmap renamed;                /* table letter + "<feed>:<id>": each namespaced id once */
    file_map maps[NRULES];
    char *skipped;
    size_t skipped_len;
    char *err;
    size_t errlen;
    bool use_cache;                /* the feeds' records are collected and the index written */
    const char *cache_dir;         /* the previous merge's directory, or NULL */
    mc_index old;                  /* its index, empty when absent or not intact */
    mapped_file old_files[NRULES + 1];   /* its files (the last: transitd_record_feeds.txt) */
    char build[65];                /* the executable's SHA-256 */
    uint8_t layout[32];            /* every merged file's header (layout_digest) */
    char headers[FEED_MERGE_MAX_FEEDS][CSV_MAX_KEYS][64];   /* copy_file: each feed's header */
    char out_buffer[STAGE_BYTES];                            /* copy_file: the merged file's stdio buffer */
    char stage[STAGE_BYTES];                                 /* copy_pass: rows before their CRC-32 */
};

static int fail(feed_merge *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(feed_merge *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, m->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int fail_csv(feed_merge *m, int feed, const char *file, const csv_error *e)
{
    const char *path = m->feeds[feed].path;
    if (e->line && e->column)
        return fail(m, "%s: %s:%llu: column %u: %s", path, file, (unsigned long long)e->line, e->column,
                    e->message);
    if (e->line)
        return fail(m, "%s: %s:%llu: %s", path, file, (unsigned long long)e->line, e->message);
    return fail(m, "%s: %s: %s", path, file, e->message[0] ? e->message : "cannot be read");
}

/* ------------------------------------------------------------ names */

static bool name_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
}

/* The file name without its folder and .zip, other characters as '_'. */
static void derive_name(const char *path, char *out, size_t cap)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && path[start - 1] != '/')
        start--;
    size_t end = len;
    if (end - start > 4 && strncmp(path + end - 4, ".zip", 4) == 0)
        end -= 4;
    size_t o = 0;
    for (size_t i = start; i < end && o + 1 < cap; i++)
        out[o++] = name_char_ok(path[i]) ? path[i] : '_';
    out[o] = 0;
    if (o == 0)
        snprintf(out, cap, "feed");
}

static int check_given_name(feed_merge *m, const char *path, const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len >= FEED_MERGE_NAME_MAX)
        return fail(m, "%s: --feed-id '%s': must be 1 to %d characters", path, name, FEED_MERGE_NAME_MAX - 1);
    for (size_t i = 0; i < len; i++)
        if (!name_char_ok(name[i]))
            return fail(m, "%s: --feed-id '%s': only letters, digits, '_', '-' and '.' are allowed", path, name);
    return 0;
}

void feed_merge_input_name(const feed_merge_input *in, char out[FEED_MERGE_NAME_MAX])
{
    if (in->name)
        snprintf(out, FEED_MERGE_NAME_MAX, "%s", in->name);
    else
        derive_name(in->path, out, FEED_MERGE_NAME_MAX);
}

/* ------------------------------------------------------------ pass 1: owners */

typedef struct owner_pass {
    feed_merge *m;
    int feed, table;
    bool empty_is_feed_name;
} owner_pass;

static int note_owner(owner_pass *o, const char *id, size_t len)
{
    int inserted;
    strmap *owners = &o->m->owner[o->table];
    uint32_t e = strmap_put(owners, id, len, (uint32_t)o->feed, &inserted);
    if (e == UINT32_MAX)
        return fail(o->m, "out of memory");
    /* the cache keeps the ids each feed defines (each at least once) */
    if (o->m->use_cache && (inserted || strmap_value(owners, e) != (uint32_t)o->feed) &&
        mc_ids_add(&o->m->feeds[o->feed].rec.defined, o->table, id, len) != 0)
        return fail(o->m, "out of memory");
    return 0;
}

static int owner_row(void *ctx, const csv_field *f, uint64_t line)
{
    (void)line;
    owner_pass *o = ctx;
    if (f[0].len == 0) {
        if (!o->empty_is_feed_name)
            return 0;
        const char *name = o->m->feeds[o->feed].name;
        return note_owner(o, name, strlen(name)) ? 1 : 0;
    }
    return note_owner(o, f[0].ptr, f[0].len) ? 1 : 0;
}

static int read_owners(feed_merge *m, int feed, const char *file, const char *column, int table)
{
    if (!feed_has(m->feeds[feed].f, file))
        return 0;
    owner_pass o = {.m = m, .feed = feed, .table = table, .empty_is_feed_name = table == T_AGENCY};
    const char *keys[1] = {column};
    csv_error e;
    int rc = feed_parse_csv(m->feeds[feed].f, file, keys, 1, owner_row, &o, NULL, &e);
    if (rc == 1)
        return -1;
    if (rc != 0)
        return fail_csv(m, feed, file, &e);
    return 0;
}

/* ------------------------------------------------------------ headers */

typedef struct header_read {
    char line[8192];
    size_t len;
    bool done;
} header_read;

static int header_chunk(void *ctx, const char *buf, size_t len)
{
    header_read *h = ctx;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n' || buf[i] == '\r') {
            if (h->len > 0) {
                h->done = true;
                return 1;
            }
            continue;
        }
        if (h->len + 1 >= sizeof h->line) {
            h->done = true;
            return 2;
        }
        h->line[h->len++] = buf[i];
    }
    return 0;
}

/* The column names of a file's header, split the way csv.c splits a record
 * (RFC 4180: a separator inside quotes is part of the name, a doubled quote is
 * one quote; blanks around an unquoted name trimmed), so that every name
 * found here is a key csv_open matches in the same file. csv.c hands out
 * only the keys it was asked for, not the header's names, hence this split. */
static int read_header(feed_merge *m, int feed, const char *file, char names[][64], int *n)
{
    header_read h = {.len = 0};
    char why[256] = "";
    int rc = feed_stream(m->feeds[feed].f, file, header_chunk, &h, why, sizeof why);
    if (rc == 2)
        return fail(m, "%s: %s:1: the header is longer than %zu bytes", m->feeds[feed].path, file,
                    sizeof h.line - 1);
    if (rc != 0 && rc != 1)
        return fail(m, "%s: %s", m->feeds[feed].path, why);
    const char *p = h.line, *end = h.line + h.len;
    if (h.len >= 3 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF)
        p += 3;
    *n = 0;
    while (h.len > 0) {
        char name[64];
        size_t len = 0;
        bool too_long = false;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p < end && *p == '"') {
            p++;
            for (;;) {
                if (p == end)
                    return fail(m, "%s: %s:1: column %d: a quote is still open at the end of the header",
                                m->feeds[feed].path, file, *n + 1);
                if (*p == '"') {
                    if (p + 1 < end && p[1] == '"')
                        p++;
                    else {
                        p++;
                        break;
                    }
                }
                if (len < sizeof name - 1)
                    name[len++] = *p;
                else
                    too_long = true;
                p++;
            }
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            if (p < end && *p != ',')
                return fail(m, "%s: %s:1: column %d: text after a closing quote", m->feeds[feed].path, file,
                            *n + 1);
        } else {
            while (p < end && *p != ',') {
                if (len < sizeof name - 1)
                    name[len++] = *p;
                else
                    too_long = true;
                p++;
            }
            while (len > 0 && (name[len - 1] == ' ' || name[len - 1] == '\t'))
                len--;
        }
        if (*n == CSV_MAX_KEYS)
            return fail(m, "%s: %s:1: more than %d columns", m->feeds[feed].path, file, CSV_MAX_KEYS);
        if (too_long)
            return fail(m, "%s: %s:1: column %d: a column name longer than 63 bytes", m->feeds[feed].path, file,
                        *n + 1);
        memcpy(names[*n], name, len);
        names[*n][len] = 0;
        (*n)++;
        if (p == end)
            break;
        p++;    /* the separator */
    }
    return 0;
}

/* ------------------------------------------------------------ pass 2: copying */

typedef struct copy_pass {
    feed_merge *m;
    const file_rule *rule;
    file_map *map;
    int feed;
    FILE *out, *records;
    const char *out_path;
    int nkeys;
    int slot[CSV_MAX_KEYS];     /* the key's column in the merged header */
    int table[CSV_MAX_KEYS];    /* T_* of an id column, else T_NONE */
    int nunion;
    int agency_slot;            /* the merged agency_id column, or -1 */
    int defines_key;            /* the key of the column this file defines, or -1 */
    int date_key[3];            /* start_date, end_date, date (calendar files), or -1 */
    int timezone_key;
    uint64_t out_line;          /* the merged line the next row starts on */
    uint64_t *count;
    char *row;                  /* the merged row being written (one fwrite a row) */
    size_t row_len, row_cap;
    uint32_t last_owner[CSV_MAX_KEYS];      /* the owner lookup of each key's last value: */
    char last_id[CSV_MAX_KEYS][64];         /* stop_times repeats trip_id row after row */
    uint8_t last_len[CSV_MAX_KEYS];
    char renamed[CSV_MAX_KEYS + 1][FEED_MERGE_NAME_MAX + 256];   /* the last: the agency_id a feed leaves out */
    bool hash;                  /* the merge cache: the CRC-32 of the part and of its records taken */
    uint32_t part_crc, records_crc;   /* CRC-32 (libdeflate) of the bytes written so far */
    size_t staged;              /* with hash: rows gathered in the merge's stage, so the CRC-32 runs */
    char *stage;                /* over 1 MB at a time (its fast path), not row by row, and stdio */
                                /* writes the full stage without copying it into its buffer */
    char last_foreign[64];      /* note_foreign: the id noted last, not noted again row after row */
    size_t last_foreign_len;
    int last_foreign_table;
} copy_pass;

static bool needs_quotes(const char *s, size_t len)
{
    if (len && (s[0] == ' ' || s[len - 1] == ' ' || s[0] == '\t' || s[len - 1] == '\t'))
        return true;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r')
            return true;
    return false;
}

/* Writes one field; returns the line breaks it holds. The output files
 * are this thread's own: the unlocked putc keeps 2.4M stop_times rows from
 * taking a lock per byte. */
static uint64_t put_field(FILE *out, const char *s, size_t len)
{
    uint64_t breaks = 0;
    if (!needs_quotes(s, len)) {
        for (size_t i = 0; i < len; i++)
            putc_unlocked(s[i], out);
        return 0;
    }
    putc_unlocked('"', out);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"')
            putc_unlocked('"', out);
        if (s[i] == '\n' || (s[i] == '\r' && (i + 1 == len || s[i + 1] != '\n')))
            breaks++;
        putc_unlocked(s[i], out);
    }
    putc_unlocked('"', out);
    return breaks;
}

static void note_date(one_feed *f, const csv_field *v)
{
    if (v->len != DATE_LEN)
        return;
    for (int i = 0; i < DATE_LEN; i++)
        if (v->ptr[i] < '0' || v->ptr[i] > '9')
            return;
    if (!f->first_date[0] || memcmp(v->ptr, f->first_date, DATE_LEN) < 0)
        memcpy(f->first_date, v->ptr, DATE_LEN);
    if (!f->last_date[0] || memcmp(v->ptr, f->last_date, DATE_LEN) > 0)
        memcpy(f->last_date, v->ptr, DATE_LEN);
}

static int map_line(copy_pass *c, uint64_t src_line)
{
    file_map *fm = c->map;
    segment *last = fm->n ? &fm->seg[fm->n - 1] : NULL;
    if (last && last->feed == c->feed && src_line - last->src_line == c->out_line - last->out_line)
        return 0;
    if (fm->n == fm->cap) {
        size_t cap = fm->cap ? fm->cap * 2 : 16;
        segment *s = realloc(fm->seg, cap * sizeof *s);
        if (!s)
            return fail(c->m, "out of memory");
        fm->seg = s;
        fm->cap = cap;
    }
    fm->seg[fm->n++] = (segment){.out_line = c->out_line, .src_line = src_line, .feed = c->feed};
    return 0;
}

static bool row_reserve(copy_pass *c, size_t more)
{
    if (c->row_len + more <= c->row_cap)
        return true;
    size_t cap = c->row_cap ? c->row_cap : 4096;
    while (cap < c->row_len + more)
        cap *= 2;
    char *row = realloc(c->row, cap);
    if (!row)
        return false;
    c->row = row;
    c->row_cap = cap;
    return true;
}

/* Appends one field to the row, quoted where CSV needs it; returns the line
 * breaks it holds, or -1 when out of memory. Inlined: it is called for
 * every field of every row (the records' calls kept the compiler from it). */
static inline __attribute__((always_inline)) long row_field(copy_pass *c, const char *s, size_t len)
{
    if (!row_reserve(c, 2 * len + 3))
        return -1;
    char *o = c->row + c->row_len;
    if (!needs_quotes(s, len)) {
        memcpy(o, s, len);
        c->row_len += len;
        return 0;
    }
    long breaks = 0;
    size_t n = 0;
    o[n++] = '"';
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"')
            o[n++] = '"';
        if (s[i] == '\n' || (s[i] == '\r' && (i + 1 == len || s[i + 1] != '\n')))
            breaks++;
        o[n++] = s[i];
    }
    o[n++] = '"';
    c->row_len += n;
    return breaks;
}

/* The owner of id in table t (UINT32_MAX: none), remembered per key. */
static uint32_t owner_of(copy_pass *c, int k, int t, const char *id, size_t len)
{
    if (len < sizeof c->last_id[k] && c->last_len[k] == len && len && memcmp(c->last_id[k], id, len) == 0)
        return c->last_owner[k];
    uint32_t owner = strmap_get(&c->m->owner[t], id, len);
    if (len < sizeof c->last_id[k]) {
        memcpy(c->last_id[k], id, len);
        c->last_len[k] = (uint8_t)len;
        c->last_owner[k] = owner;
    }
    return owner;
}

/* An id this feed looks up and does not own, for the cache's collision set
 * (the one before it is not noted again: stop_times repeats them). */
static int note_foreign(copy_pass *c, int t, const char *id, size_t len)
{
    if (c->last_foreign_table == t && c->last_foreign_len == len && len < sizeof c->last_foreign &&
        memcmp(c->last_foreign, id, len) == 0)
        return 0;
    if (len < sizeof c->last_foreign) {
        memcpy(c->last_foreign, id, len);
        c->last_foreign_len = len;
        c->last_foreign_table = t;
    }
    if (mc_ids_add(&c->m->feeds[c->feed].rec.foreign, t, id, len) != 0) {
        fail(c->m, "out of memory");
        return 1;
    }
    return 0;
}

/* The id `id` of table t as merged: itself, or "<feed>:<id>" (into buf)
 * when an earlier feed owns it. Returns 0, or 1 with the error set. */
static int merged_id(copy_pass *c, int t, bool defines, uint64_t line, int column, char *buf, size_t cap,
                     const char **id, size_t *len)
{
    feed_merge *m = c->m;
    one_feed *feed = &m->feeds[c->feed];
    uint32_t owner = column - 1 < CSV_MAX_KEYS ? owner_of(c, column - 1, t, *id, *len)
                                               : strmap_get(&m->owner[t], *id, *len);
    if (owner != (uint32_t)c->feed && m->use_cache && note_foreign(c, t, *id, *len) != 0)
        return 1;
    if (owner == UINT32_MAX || owner == (uint32_t)c->feed)
        return 0;
    int n = snprintf(buf, cap, "%s:%.*s", feed->name, (int)*len, *id);
    if (n < 0 || (size_t)n >= cap) {
        fail(m, "%s: %s:%llu: column %d: id '%.40s...' is too long to be namespaced", feed->path, c->rule->file,
             (unsigned long long)line, column, *id);
        return 1;
    }
    uint32_t taken = strmap_get(&m->owner[t], buf, (size_t)n);
    if (taken != UINT32_MAX) {
        fail(m, "%s: %s:%llu: column %d: id '%.*s' collides with feed %s and its namespaced form '%s' is"
                " already an id of feed %s (give another --feed-id)",
             feed->path, c->rule->file, (unsigned long long)line, column, (int)*len, *id, m->feeds[owner].name,
             buf, m->feeds[taken].name);
        return 1;
    }
    *id = buf;
    *len = (size_t)n;
    if (defines) {   /* counted once per id */
        char key[FEED_MERGE_NAME_MAX + 258];
        key[0] = (char)('a' + t);
        memcpy(key + 1, buf, (size_t)n);
        int inserted;
        if (strmap_put(&m->renamed, key, (size_t)n + 1, 0, &inserted) == UINT32_MAX) {
            fail(m, "out of memory");
            return 1;
        }
        feed->renamed += inserted ? 1 : 0;
    }
    return 0;
}

/* The staged rows written out, their CRC-32 taken. */
static void stage_flush(copy_pass *c)
{
    if (!c->staged)
        return;
    c->part_crc = libdeflate_crc32(c->part_crc, c->stage, c->staged);
    fwrite(c->stage, 1, c->staged, c->out);
    c->staged = 0;
}

static void stage_row(copy_pass *c)
{
    if (c->staged + c->row_len > STAGE_BYTES)
        stage_flush(c);
    if (c->row_len > STAGE_BYTES) {
        c->part_crc = libdeflate_crc32(c->part_crc, c->row, c->row_len);
        fwrite(c->row, 1, c->row_len, c->out);
        return;
    }
    memcpy(c->stage + c->staged, c->row, c->row_len);
    c->staged += c->row_len;
}

static int copy_row(void *ctx, const csv_field *f, uint64_t line)
{
    copy_pass *c = ctx;
    feed_merge *m = c->m;
    one_feed *feed = &m->feeds[c->feed];
    const char *val[MAX_UNION];
    size_t len[MAX_UNION];
    for (int i = 0; i < c->nunion; i++)
        val[i] = "", len[i] = 0;
    bool agency_given = false;
    for (int k = 0; k < c->nkeys; k++) {
        int s = c->slot[k], t = c->table[k];
        val[s] = f[k].ptr;
        len[s] = f[k].len;
        if (s == c->agency_slot && len[s] == 0)
            continue;  /* an empty agency_id: the feed's name, below */
        agency_given |= s == c->agency_slot;
        if (t != T_NONE && len[s] > 0 &&
            merged_id(c, t, k == c->defines_key, line, k + 1, c->renamed[k], sizeof c->renamed[k], &val[s],
                      &len[s]) != 0)
            return 1;
    }
    if (c->agency_slot >= 0 && !agency_given) {   /* a one-agency feed: its agency is the feed's name */
        int s = c->agency_slot;
        val[s] = feed->name;
        len[s] = strlen(feed->name);
        if (merged_id(c, T_AGENCY, strcmp(c->rule->file, "agency.txt") == 0, line, CSV_MAX_KEYS + 1 + s,
                      c->renamed[CSV_MAX_KEYS], sizeof c->renamed[CSV_MAX_KEYS], &val[s], &len[s]) != 0)
            return 1;
    }
    for (int d = 0; d < 3; d++)
        if (c->date_key[d] >= 0)
            note_date(feed, &f[c->date_key[d]]);
    if (c->timezone_key >= 0 && !feed->timezone[0] && f[c->timezone_key].len)
        snprintf(feed->timezone, sizeof feed->timezone, "%.*s", (int)f[c->timezone_key].len,
                 f[c->timezone_key].ptr);
    if (map_line(c, line) != 0)
        return 1;
    uint64_t breaks = 0;
    c->row_len = 0;
    for (int i = 0; i < c->nunion; i++) {
        long b = (i == 0 || row_reserve(c, 1)) ? row_field(c, val[i], len[i]) : -1;
        if (b < 0) {
            fail(m, "out of memory");
            return 1;
        }
        breaks += (uint64_t)b;
        if (i + 1 < c->nunion)
            c->row[c->row_len++] = ',';
    }
    if (!row_reserve(c, 1)) {
        fail(m, "out of memory");
        return 1;
    }
    c->row[c->row_len++] = '\n';
    if (c->hash)
        stage_row(c);
    else
        fwrite(c->row, 1, c->row_len, c->out);
    c->out_line += 1 + breaks;
    (*c->count)++;
    /* the record's feed, by its id as merged (agency.txt: "" became the feed's name) */
    int s = c->defines_key >= 0                      ? c->slot[c->defines_key]
            : strcmp(c->rule->file, "agency.txt") == 0 ? c->agency_slot
                                                       : -1;
    if (c->records && c->rule->record_kind && s >= 0) {
        char tail[16];
        int tail_len = snprintf(tail, sizeof tail, ",%d\n", c->feed);
        c->row_len = 0;
        if (!row_reserve(c, strlen(c->rule->record_kind) + 1)) {
            fail(m, "out of memory");
            return 1;
        }
        memcpy(c->row, c->rule->record_kind, strlen(c->rule->record_kind));
        c->row_len = strlen(c->rule->record_kind);
        c->row[c->row_len++] = ',';
        if (row_field(c, val[s], len[s]) < 0 || !row_reserve(c, (size_t)tail_len)) {
            fail(m, "out of memory");
            return 1;
        }
        memcpy(c->row + c->row_len, tail, (size_t)tail_len);
        c->row_len += (size_t)tail_len;
        fwrite(c->row, 1, c->row_len, c->records);
        if (c->hash)
            c->records_crc = libdeflate_crc32(c->records_crc, c->row, c->row_len);
    }
    return 0;
}

static int union_slot(char names[][64], int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    if (*n == MAX_UNION)
        return -1;
    snprintf(names[*n], 64, "%s", name);
    return (*n)++;
}

static uint64_t *count_of(one_feed *f, const char *file)
{
    static uint64_t ignored;
    if (strcmp(file, "agency.txt") == 0) return &f->agencies;
    if (strcmp(file, "stops.txt") == 0) return &f->stops;
    if (strcmp(file, "routes.txt") == 0) return &f->routes;
    if (strcmp(file, "trips.txt") == 0) return &f->trips;
    if (strcmp(file, "stop_times.txt") == 0) return &f->stop_times;
    ignored = 0;
    return &ignored;
}

static int close_out(feed_merge *m, FILE *out, const char *path)
{
    bool bad = ferror(out) != 0;
    if (fclose(out) != 0 || bad)
        return fail(m, "%s: cannot write: %s", path, strerror(errno ? errno : EIO));
    return 0;
}

/* Every feed's header of file r and their union, the merged header: 1, 0
 * when no feed has the file, -1 on an error. */
static int read_union(feed_merge *m, size_t r, int ncols[], char merged[][64], int *nunion, int *agency_slot)
{
    const file_rule *rule = &RULES[r];
    bool any = false;
    *nunion = 0;
    for (int i = 0; i < m->n; i++) {
        ncols[i] = 0;
        if (!feed_has(m->feeds[i].f, rule->file))
            continue;
        any = true;
        if (read_header(m, i, rule->file, m->headers[i], &ncols[i]) != 0)
            return -1;
        for (int k = 0; k < ncols[i]; k++)
            if (union_slot(merged, nunion, m->headers[i][k]) < 0)
                return fail(m, "%s: more than %d columns in all feeds together", rule->file, MAX_UNION);
    }
    if (!any)
        return 0;
    *agency_slot = -1;
    if (rule->needs_agency_id && (*agency_slot = union_slot(merged, nunion, "agency_id")) < 0)
        return fail(m, "%s: more than %d columns in all feeds together", rule->file, MAX_UNION);
    return 1;
}

/* The cached files are read through a mapping a window at a time, each
 * window's pages let go once read, so the process holds at most one
 * window of them (the page cache keeps them for the copy). */
#define WINDOW ((size_t)8 << 20)

static void drop_pages(const uint8_t *p, size_t len)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)p + page - 1) & ~(page - 1), to = ((uintptr_t)p + len) & ~(page - 1);
    if (to > from)
        madvise((void *)from, to - from, MADV_DONTNEED);
}

/* Writes bytes of a cached file, a window at a time. */
static bool write_cached(FILE *out, const uint8_t *p, uint64_t len)
{
    if (len == 0)
        return true;
    for (uint64_t at = 0; at < len; at += WINDOW) {
        size_t n = len - at < WINDOW ? (size_t)(len - at) : WINDOW;
        if (fwrite(p + at, 1, n, out) != n)
            return false;
        drop_pages(p + at, n);
    }
    return true;
}

/* Copies len bytes at off of cached file f to the end of out: in the kernel
 * where it can (copy_file_range, about 0.6 of the CPU of a write from the
 * mapping), the rest through the mapping. */
static bool copy_range(FILE *out, const mapped_file *f, uint64_t off, uint64_t len)
{
    uint64_t done = 0;
#if defined(__linux__)
    if (fflush(out) != 0)
        return false;
    off_t pos = ftello(out);
    loff_t from = (loff_t)off;
    if (pos < 0)
        return false;
    for (int tries = 0; done < len && tries < 1 << 20; tries++) {
        ssize_t n = copy_file_range(f->fd, &from, fileno(out), NULL, (size_t)(len - done), 0);
        if (n <= 0)
            break;   /* not here (another file system, an old kernel): the rest is written */
        done += (uint64_t)n;
    }
    if (fseeko(out, pos + (off_t)done, SEEK_SET) != 0)
        return false;
#endif
    return write_cached(out, f->p + off + done, len - done);
}

/* Copies feed i's rows of file r from the previous merge (its part was
 * checked by cache_decide), with its records and lines map. */
static int copy_cached(feed_merge *m, int i, size_t r, FILE *out, FILE *records, uint64_t *out_line)
{
    one_feed *f = &m->feeds[i];
    const mc_feed *old = f->old;
    mc_range *part = &f->rec.part[r], *rec = &f->rec.records[r];
    *part = old->part[r];
    *rec = old->records[r];
    part->off = (uint64_t)ftello(out);
    rec->off = (uint64_t)ftello(records);
    if (old->part[r].len && !copy_range(out, &m->old_files[r], old->part[r].off, old->part[r].len))
        return fail(m, "%s: cannot write: %s", RULES[r].file, strerror(errno ? errno : EIO));
    if (old->records[r].len &&
        !copy_range(records, &m->old_files[NRULES], old->records[r].off, old->records[r].len))
        return fail(m, RECORDS_FILE ": cannot write: %s", strerror(errno ? errno : EIO));
    file_map *fm = &m->maps[r];
    for (uint32_t s = 0; s < old->nsegs[r]; s++) {
        if (fm->n == fm->cap) {
            size_t cap = fm->cap ? fm->cap * 2 : 16;
            segment *g = realloc(fm->seg, cap * sizeof *g);
            if (!g)
                return fail(m, "out of memory");
            fm->seg = g;
            fm->cap = cap;
        }
        fm->seg[fm->n++] = (segment){.out_line = *out_line + old->segs[r][s].out_line,
                                     .src_line = old->segs[r][s].src_line, .feed = i};
    }
    *out_line += old->part[r].lines;
    return 0;
}

/* Feed i's part of file r as this merge wrote it, for the next one's cache. */
static int note_part(feed_merge *m, int i, size_t r, const copy_pass *c, uint64_t off, uint64_t rec_off,
                     uint64_t first_line, size_t first_seg)
{
    mc_feed *rec = &m->feeds[i].rec;
    rec->part[r] = (mc_range){.off = off, .len = (uint64_t)ftello(c->out) - off, .lines = c->out_line - first_line};
    rec->part[r].crc = c->part_crc;
    rec->records[r] = (mc_range){.off = rec_off, .len = (uint64_t)ftello(c->records) - rec_off};
    rec->records[r].crc = c->records_crc;
    const file_map *fm = &m->maps[r];
    size_t n = fm->n - first_seg;
    if (n == 0)
        return 0;
    if (!(rec->segs[r] = malloc(n * sizeof *rec->segs[r])))
        return fail(m, "out of memory");
    for (size_t s = 0; s < n; s++)
        rec->segs[r][s] = (mc_seg){.out_line = fm->seg[first_seg + s].out_line - first_line,
                                   .src_line = fm->seg[first_seg + s].src_line};
    rec->nsegs[r] = (uint32_t)n;
    return 0;
}

static int copy_file(feed_merge *m, size_t r, const char *out_dir, FILE *records)
{
    const file_rule *rule = &RULES[r];
    char (*headers)[CSV_MAX_KEYS][64] = m->headers;
    int ncols[FEED_MERGE_MAX_FEEDS] = {0};
    char merged[MAX_UNION][64];
    int nunion = 0, agency_slot = -1;
    int any = read_union(m, r, ncols, merged, &nunion, &agency_slot);
    if (any <= 0)
        return any;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", out_dir, rule->file);
    FILE *out = fopen(path, "w");
    if (!out)
        return fail(m, "%s: cannot create: %s", path, strerror(errno));
    setvbuf(out, m->out_buffer, _IOFBF, sizeof m->out_buffer);
    for (int i = 0; i < nunion; i++) {
        if (i)
            putc(',', out);
        put_field(out, merged[i], strlen(merged[i]));
    }
    putc('\n', out);
    uint64_t out_line = 2;
    for (int i = 0; i < m->n; i++) {
        if (!ncols[i] && !feed_has(m->feeds[i].f, rule->file))
            continue;
        if (m->feeds[i].cached) {
            if (copy_cached(m, i, r, out, records, &out_line) != 0) {
                fclose(out);
                return -1;
            }
            continue;
        }
        copy_pass c = {.m = m, .rule = rule, .map = &m->maps[r], .feed = i, .out = out, .records = records,
                       .out_path = path, .nkeys = ncols[i], .nunion = nunion, .agency_slot = agency_slot,
                       .defines_key = -1, .date_key = {-1, -1, -1}, .timezone_key = -1, .out_line = out_line,
                       .count = count_of(&m->feeds[i], rule->file), .hash = m->use_cache, .stage = m->stage,
                       .last_foreign_table = -1};
        uint64_t off = m->use_cache ? (uint64_t)ftello(out) : 0, rec_off = m->use_cache ? (uint64_t)ftello(records) : 0;
        size_t first_seg = m->maps[r].n;
        const char *keys[CSV_MAX_KEYS];
        for (int k = 0; k < ncols[i]; k++) {
            const char *name = headers[i][k];
            keys[k] = name;
            c.slot[k] = union_slot(merged, &nunion, name);
            c.table[k] = T_NONE;
            for (int x = 0; x < MAX_REFS && rule->refs[x].column; x++)
                if (strcmp(rule->refs[x].column, name) == 0)
                    c.table[k] = rule->refs[x].table;
            if (rule->defines && strcmp(rule->defines, name) == 0)
                c.defines_key = k;
            if (strncmp(rule->file, "calendar", 8) == 0) {
                if (strcmp(name, "start_date") == 0) c.date_key[0] = k;
                if (strcmp(name, "end_date") == 0) c.date_key[1] = k;
                if (strcmp(name, "date") == 0) c.date_key[2] = k;
            }
            if (strcmp(rule->file, "agency.txt") == 0 && strcmp(name, "agency_timezone") == 0)
                c.timezone_key = k;
        }
        csv_error e;
        int rc = feed_parse_csv(m->feeds[i].f, rule->file, keys, ncols[i], copy_row, &c, NULL, &e);
        stage_flush(&c);
        free(c.row);
        if (rc == 0 && c.hash && note_part(m, i, r, &c, off, rec_off, out_line, first_seg) != 0)
            rc = 1;
        out_line = c.out_line;
        if (rc == 1 || (rc != 0 && fail_csv(m, i, rule->file, &e))) {
            fclose(out);
            return -1;
        }
    }
    return close_out(m, out, path);
}

/* ------------------------------------------------------------ feed_info and the feed list */

static const char *const INFO_KEYS[] = {"feed_publisher_name", "feed_publisher_url", "feed_lang",
                                        "feed_start_date", "feed_end_date", "feed_version"};

static int info_row(void *ctx, const csv_field *f, uint64_t line)
{
    (void)line;
    one_feed *o = ctx;
    feed_info_row *r = &o->info;
    snprintf(r->publisher, sizeof r->publisher, "%.*s", (int)f[0].len, f[0].ptr);
    snprintf(r->url, sizeof r->url, "%.*s", (int)f[1].len, f[1].ptr);
    snprintf(r->lang, sizeof r->lang, "%.*s", (int)f[2].len, f[2].ptr);
    if (f[3].len == DATE_LEN) snprintf(r->start, sizeof r->start, "%.*s", DATE_LEN, f[3].ptr);
    if (f[4].len == DATE_LEN) snprintf(r->end, sizeof r->end, "%.*s", DATE_LEN, f[4].ptr);
    snprintf(r->version, sizeof r->version, "%.*s", (int)f[5].len, f[5].ptr);
    o->has_info = true;
    return 1;  /* the first row is the feed's */
}

static int read_info(feed_merge *m, int i)
{
    if (!feed_has(m->feeds[i].f, "feed_info.txt"))
        return 0;
    csv_error e;
    int rc = feed_parse_csv(m->feeds[i].f, "feed_info.txt", INFO_KEYS, 6, info_row, &m->feeds[i], NULL, &e);
    return rc == 0 || rc == 1 ? 0 : fail_csv(m, i, "feed_info.txt", &e);
}

static void append(char *dst, size_t cap, const char *sep, const char *s)
{
    size_t n = strlen(dst);
    if (!s[0] || n + 1 >= cap)
        return;
    snprintf(dst + n, cap - n, "%s%s", n ? sep : "", s);
}

/* One feed_info.txt row for all: the publishers, the earliest start, the
 * latest end, and "name=version" of each feed that has a version. */
static int write_info(feed_merge *m, const char *out_dir)
{
    bool any = false;
    for (int i = 0; i < m->n; i++)
        any |= m->feeds[i].has_info;
    if (!any)
        return 0;
    char publisher[1024] = "", url[256] = "", lang[32] = "", start[9] = "", end[9] = "", version[1024] = "";
    for (int i = 0; i < m->n; i++) {
        const feed_info_row *r = &m->feeds[i].info;
        if (!m->feeds[i].has_info)
            continue;
        if (!strstr(publisher, r->publisher))
            append(publisher, sizeof publisher, ", ", r->publisher);
        if (!url[0]) snprintf(url, sizeof url, "%s", r->url);
        if (!lang[0]) snprintf(lang, sizeof lang, "%s", r->lang);
        else if (r->lang[0] && strcmp(lang, r->lang) != 0) snprintf(lang, sizeof lang, "mul");
        if (r->start[0] && (!start[0] || strcmp(r->start, start) < 0)) snprintf(start, sizeof start, "%s", r->start);
        if (r->end[0] && (!end[0] || strcmp(r->end, end) > 0)) snprintf(end, sizeof end, "%s", r->end);
        if (r->version[0]) {
            char v[FEED_MERGE_NAME_MAX + 130];
            snprintf(v, sizeof v, "%s=%s", m->feeds[i].name, r->version);
            append(version, sizeof version, " ", v);
        }
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/feed_info.txt", out_dir);
    FILE *out = fopen(path, "w");
    if (!out)
        return fail(m, "%s: cannot create: %s", path, strerror(errno));
    fputs("feed_publisher_name,feed_publisher_url,feed_lang,feed_start_date,feed_end_date,feed_version\n", out);
    const char *vals[] = {publisher, url, lang, start, end, version};
    for (int k = 0; k < 6; k++) {
        if (k)
            putc(',', out);
        put_field(out, vals[k], strlen(vals[k]));
    }
    putc('\n', out);
    return close_out(m, out, path);
}

static int write_feed_list(feed_merge *m, const char *out_dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/transitd_feeds.txt", out_dir);
    FILE *out = fopen(path, "w");
    if (!out)
        return fail(m, "%s: cannot create: %s", path, strerror(errno));
    fputs("feed_index,feed_name,file,sha256,publisher_name,feed_version,feed_start_date,feed_end_date,"
          "service_start_date,service_end_date,agency_timezone,agencies,stops,routes,trips,stop_times,"
          "renamed_ids\n", out);
    for (int i = 0; i < m->n; i++) {
        const one_feed *f = &m->feeds[i];
        const char *slash = strrchr(f->path, '/');
        const char *file = slash && slash[1] ? slash + 1 : f->path;
        fprintf(out, "%d,", i);
        const char *vals[] = {f->name, file, f->sha256, f->info.publisher, f->info.version, f->info.start,
                              f->info.end, f->first_date, f->last_date, f->timezone};
        for (size_t k = 0; k < sizeof vals / sizeof *vals; k++) {
            put_field(out, vals[k], strlen(vals[k]));
            putc(',', out);
        }
        fprintf(out, "%llu,%llu,%llu,%llu,%llu,%llu\n", (unsigned long long)f->agencies,
                (unsigned long long)f->stops, (unsigned long long)f->routes, (unsigned long long)f->trips,
                (unsigned long long)f->stop_times, (unsigned long long)f->renamed);
    }
    return close_out(m, out, path);
}

/* ------------------------------------------------------------ the whole merge */

static bool carried(const char *file)
{
    for (size_t r = 0; r < NRULES; r++)
        if (strcmp(RULES[r].file, file) == 0)
            return true;
    return strcmp(file, "feed_info.txt") == 0;
}

static int note_skipped(feed_merge *m, int i)
{
    int n;
    const char *const *names = feed_members(m->feeds[i].f, &n);
    for (int k = 0; k < n; k++) {
        if (carried(names[k]))
            continue;
        size_t need = strlen(m->feeds[i].path) + strlen(names[k]) + 4;
        char *s = realloc(m->skipped, m->skipped_len + need + 1);
        if (!s)
            return fail(m, "out of memory");
        m->skipped = s;
        m->skipped_len += (size_t)sprintf(s + m->skipped_len, "%s: %s\n", m->feeds[i].path, names[k]);
    }
    return 0;
}

static int open_feeds(feed_merge *m, const feed_merge_input *in)
{
    for (int i = 0; i < m->n; i++) {
        one_feed *f = &m->feeds[i];
        f->path = in[i].path;
        if (in[i].name) {
            if (check_given_name(m, in[i].path, in[i].name) != 0)
                return -1;
            snprintf(f->name, sizeof f->name, "%s", in[i].name);
        } else {
            derive_name(in[i].path, f->name, sizeof f->name);
        }
        for (int j = 0; j < i; j++)
            if (strcmp(m->feeds[j].name, f->name) == 0)
                return fail(m, "%s and %s: both are named '%s'; give one --feed-id NAME", m->feeds[j].path,
                            f->path, f->name);
        char why[512];
        if (!(f->f = feed_open(f->path, why, sizeof why)))
            return fail(m, "%s", why);
        for (size_t k = 0; k < sizeof REQUIRED / sizeof *REQUIRED; k++)
            if (!feed_has(f->f, REQUIRED[k]))
                return fail(m, "%s: %s: required file is missing from the feed", f->path, REQUIRED[k]);
        if (!feed_has(f->f, "calendar.txt") && !feed_has(f->f, "calendar_dates.txt"))
            return fail(m, "%s: calendar.txt and calendar_dates.txt: the feed has neither (one is required)",
                        f->path);
        if (in[i].sha256 && strlen(in[i].sha256) == 64)
            memcpy(f->sha256, in[i].sha256, 65);
        else if (feed_sha256(f->f, f->sha256, why, sizeof why) != 0)
            return fail(m, "%s: %s", f->path, why);
        if (note_skipped(m, i) != 0 || read_info(m, i) != 0)
            return -1;
    }
    return 0;
}

static int check_timezones(feed_merge *m)
{
    for (int i = 1; i < m->n; i++)
        if (m->feeds[i].timezone[0] && m->feeds[0].timezone[0] &&
            strcmp(m->feeds[i].timezone, m->feeds[0].timezone) != 0)
            return fail(m, "%s: agency.txt: agency_timezone '%s' differs from %s's '%s': one dataset has one"
                           " time zone; import feeds of other time zones into another data directory",
                        m->feeds[i].path, m->feeds[i].timezone, m->feeds[0].path, m->feeds[0].timezone);
    return 0;
}

/* ------------------------------------------------------------ the merge cache */

/* What a feed's merged rows are made of, apart from the other feeds: the
 * cache's format, the merge rule, this executable, the feed's name and bytes. */
static void content_key(const feed_merge *m, const one_feed *f, char out[65])
{
    static const char head[] = "transitd merge cache 1\n" MERGE_REVISION;
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, head, sizeof head - 1);
    sha256_update(&c, m->build, 64);
    sha256_update(&c, f->name, strlen(f->name) + 1);
    sha256_update(&c, f->sha256, 64);
    uint8_t d[32];
    sha256_final(&c, d);
    sha256_hex(d, out);
}

/* The merged header of every file (the union of the feeds' columns, in
 * order): a feed's rows are laid out by it. */
static int layout_digest(feed_merge *m)
{
    sha256_ctx c;
    sha256_init(&c);
    for (size_t r = 0; r < NRULES; r++) {
        int ncols[FEED_MERGE_MAX_FEEDS], nunion = 0, agency_slot = -1;
        char merged[MAX_UNION][64];
        int any = read_union(m, r, ncols, merged, &nunion, &agency_slot);
        if (any < 0)
            return -1;
        char head[64];
        int n = snprintf(head, sizeof head, "%zu %d %d %d\n", r, any, any ? nunion : 0, any ? agency_slot : -1);
        sha256_update(&c, head, (size_t)n);
        for (int k = 0; any && k < nunion; k++)
            sha256_update(&c, merged[k], strlen(merged[k]) + 1);
    }
    sha256_final(&c, m->layout);
    return 0;
}

/* Feed i's context: its position, the layout, and its collision set (the ids
 * of `defined` and `foreign` that another feed owns, which it namespaces).
 * *clash (when given) is set when a namespaced form is another feed's id or
 * too long, which the merge reports as an error. -1 on a bad table number. */
static int context_of(const feed_merge *m, int i, const mc_buf *defined, const mc_buf *foreign, char out[65],
                      bool *clash)
{
    sha256_ctx c;
    sha256_init(&c);
    char head[64];
    int n = snprintf(head, sizeof head, "transitd merge context 1\n%d\n", i);
    sha256_update(&c, head, (size_t)n);
    sha256_update(&c, m->layout, 32);
    for (int pass = 0; pass < 2; pass++) {
        const mc_buf *b = pass ? foreign : defined;
        sha256_update(&c, pass ? "F" : "D", 1);
        size_t pos = 0, len;
        int t;
        const char *id;
        while (mc_ids_next(b, &pos, &t, &id, &len)) {
            if (t >= T_N)
                return -1;
            uint32_t owner = strmap_get(&m->owner[t], id, len);
            if (owner == (uint32_t)i || (pass == 1 && owner == UINT32_MAX))
                continue;
            uint8_t tb = (uint8_t)t;
            uint32_t l = (uint32_t)len;
            sha256_update(&c, &tb, 1);
            sha256_update(&c, &l, 4);
            sha256_update(&c, id, len);
            if (clash) {
                char buf[FEED_MERGE_NAME_MAX + 256];
                int k = snprintf(buf, sizeof buf, "%s:%.*s", m->feeds[i].name, (int)len, id);
                if (len > 1024 || k < 0 || (size_t)k >= sizeof buf ||
                    strmap_get(&m->owner[t], buf, (size_t)k) != UINT32_MAX)
                    *clash = true;
            }
        }
    }
    uint8_t d[32];
    sha256_final(&c, d);
    sha256_hex(d, out);
    return 0;
}

/* The previous merge's index, and each feed's record in it by content key. */
static void cache_open(feed_merge *m)
{
    if (m->cache_dir && mc_index_read(m->cache_dir, (int)NRULES, &m->old) != 0)
        m->old = (mc_index){0};
    for (int i = 0; i < m->n; i++) {
        one_feed *f = &m->feeds[i];
        content_key(m, f, f->rec.key);
        for (int k = 0; k < m->old.nfeeds && !f->old; k++)
            if (strcmp(m->old.feeds[k].key, f->rec.key) == 0)
                f->old = &m->old.feeds[k];
    }
}

/* A cached feed's ids as owners (what the first pass would read from it). */
static int owners_from_cache(feed_merge *m, int i)
{
    const mc_buf *b = &m->feeds[i].old->defined;
    size_t pos = 0, len;
    int t, inserted;
    const char *id;
    while (mc_ids_next(b, &pos, &t, &id, &len)) {
        if (t >= T_N)
            return fail(m, "the merge cache: a bad table number");
        if (strmap_put(&m->owner[t], id, len, (uint32_t)i, &inserted) == UINT32_MAX)
            return fail(m, "out of memory");
    }
    return mc_buf_put(&m->feeds[i].rec.defined, b->p, b->len) != 0 ? fail(m, "out of memory") : 0;
}

static const mapped_file *old_file(feed_merge *m, size_t r)
{
    mapped_file *f = &m->old_files[r];
    if (f->tried)
        return f;
    f->tried = true;
    f->fd = -1;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", m->cache_dir, r < NRULES ? RULES[r].file : RECORDS_FILE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return f;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            f->p = p;
            f->size = (size_t)st.st_size;
            f->fd = fd;
            return f;
        }
    }
    close(fd);
    return f;
}

/* Whether range g of the previous merge's file r is there and intact (an
 * empty one, a file the feed has no rows in, has nothing to check: the
 * index's own SHA-256 vouches for its length). */
static bool range_intact(feed_merge *m, size_t r, const mc_range *g)
{
    if (g->len == 0)
        return true;
    const mapped_file *f = old_file(m, r);
    if (!f->p || g->off > f->size || g->len > f->size - g->off)
        return false;
    uint32_t crc = 0;
    for (uint64_t at = 0; at < g->len; at += WINDOW) {
        size_t n = g->len - at < WINDOW ? (size_t)(g->len - at) : WINDOW;
        crc = libdeflate_crc32(crc, f->p + g->off + at, n);
        drop_pages(f->p + g->off + at, n);
    }
    return crc == g->crc;
}

/* Which feeds are copied from the cache: the same content key, the same
 * context, no namespaced form taken, every range intact. */
static int cache_decide(feed_merge *m)
{
    for (int i = 0; i < m->n; i++) {
        one_feed *f = &m->feeds[i];
        const mc_feed *old = f->old;
        if (!old)
            continue;
        char context[65];
        bool clash = false;
        if (context_of(m, i, &old->defined, &old->foreign, context, &clash) != 0 || clash ||
            strcmp(context, old->context) != 0)
            continue;
        bool intact = true;
        for (size_t r = 0; r < NRULES && intact; r++)
            intact = range_intact(m, r, &old->part[r]) && range_intact(m, NRULES, &old->records[r]);
        if (!intact)
            continue;
        f->cached = true;
        memcpy(f->rec.context, old->context, 65);
        if (mc_buf_put(&f->rec.foreign, old->foreign.p, old->foreign.len) != 0)
            return fail(m, "out of memory");
        uint64_t *counts[] = {&f->agencies, &f->stops, &f->routes, &f->trips, &f->stop_times, &f->renamed};
        for (int k = 0; k < MERGE_CACHE_COUNTS; k++)
            *counts[k] = old->counts[k];
        snprintf(f->timezone, sizeof f->timezone, "%s", old->timezone);
        snprintf(f->first_date, sizeof f->first_date, "%s", old->first_date);
        snprintf(f->last_date, sizeof f->last_date, "%s", old->last_date);
    }
    return 0;
}

/* The index of this merge's files, for the next merge. */
static int write_index(feed_merge *m, const char *out_dir)
{
    mc_feed recs[FEED_MERGE_MAX_FEEDS];
    for (int i = 0; i < m->n; i++) {
        one_feed *f = &m->feeds[i];
        mc_feed *rec = &f->rec;
        if (!f->cached) {
            if (mc_ids_sort_unique(&rec->defined) != 0 || mc_ids_sort_unique(&rec->foreign) != 0)
                return fail(m, "out of memory");
            if (context_of(m, i, &rec->defined, &rec->foreign, rec->context, NULL) != 0)
                return fail(m, "the merge cache: a bad table number");
            const uint64_t counts[] = {f->agencies, f->stops, f->routes, f->trips, f->stop_times, f->renamed};
            memcpy(rec->counts, counts, sizeof counts);
            snprintf(rec->timezone, sizeof rec->timezone, "%s", f->timezone);
            snprintf(rec->first_date, sizeof rec->first_date, "%s", f->first_date);
            snprintf(rec->last_date, sizeof rec->last_date, "%s", f->last_date);
        } else {
            memcpy(rec->counts, f->old->counts, sizeof rec->counts);
            memcpy(rec->timezone, f->old->timezone, sizeof rec->timezone);
            memcpy(rec->first_date, f->old->first_date, sizeof rec->first_date);
            memcpy(rec->last_date, f->old->last_date, sizeof rec->last_date);
            for (size_t r = 0; r < NRULES; r++) {   /* the lines map as it was, relative to the part */
                uint32_t n = f->old->nsegs[r];
                if (n && !(rec->segs[r] = malloc(n * sizeof *rec->segs[r])))
                    return fail(m, "out of memory");
                if (n)
                    memcpy(rec->segs[r], f->old->segs[r], n * sizeof *rec->segs[r]);
                rec->nsegs[r] = n;
            }
        }
        recs[i] = *rec;
    }
    mc_index idx = {.nfiles = (int)NRULES, .nfeeds = m->n, .feeds = recs};
    char why[512];
    return mc_index_write(out_dir, &idx, why, sizeof why) != 0 ? fail(m, "%s", why) : 0;
}

static int merge_all(feed_merge *m, const feed_merge_input *in, const char *out_dir)
{
    if (open_feeds(m, in) != 0)
        return -1;
    for (int t = 0; t < T_N; t++)
        if (strmap_init(&m->owner[t], 1024) != 0)
            return fail(m, "out of memory");
    if (strmap_init(&m->renamed, 256) != 0)
        return fail(m, "out of memory");
    if (m->use_cache)
        cache_open(m);
    for (int i = 0; i < m->n; i++) {
        if (m->feeds[i].old) {
            if (owners_from_cache(m, i) != 0)
                return -1;
            continue;
        }
        for (size_t r = 0; r < NRULES; r++)
            if (RULES[r].defines && read_owners(m, i, RULES[r].file, RULES[r].defines, RULES[r].defines_table) != 0)
                return -1;
        for (size_t x = 0; x < sizeof EXTRA_DEFINES / sizeof *EXTRA_DEFINES; x++)
            if (read_owners(m, i, EXTRA_DEFINES[x].file, EXTRA_DEFINES[x].column, EXTRA_DEFINES[x].table) != 0)
                return -1;
    }
    if (m->use_cache && (layout_digest(m) != 0 || cache_decide(m) != 0))
        return -1;
    char path[4096];
    snprintf(path, sizeof path, "%s/" RECORDS_FILE, out_dir);
    FILE *records = fopen(path, "w");
    if (!records)
        return fail(m, "%s: cannot create: %s", path, strerror(errno));
    fputs("kind,id,feed_index\n", records);
    for (size_t r = 0; r < NRULES; r++) {
        if (copy_file(m, r, out_dir, records) != 0) {
            fclose(records);
            return -1;
        }
        if (r == 0 && check_timezones(m) != 0) {
            fclose(records);
            return -1;
        }
    }
    if (close_out(m, records, path) != 0)
        return -1;
    if (m->use_cache && write_index(m, out_dir) != 0)
        return -1;
    return write_info(m, out_dir) != 0 || write_feed_list(m, out_dir) != 0 ? -1 : 0;
}

static feed_merge *merge_write(const feed_merge_input *in, int n, const char *out_dir, bool use_cache,
                               const char *cache_dir, char *err, size_t errlen)
{
    if (n < 2 || n > FEED_MERGE_MAX_FEEDS) {
        snprintf(err, errlen, "a merge takes 2 to %d feeds, not %d", FEED_MERGE_MAX_FEEDS, n);
        return NULL;
    }
    feed_merge *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    m->n = n;
    m->err = err;
    m->errlen = errlen;
    m->use_cache = use_cache && mc_build_id(m->build) == 0;
    m->cache_dir = cache_dir;
    if (merge_all(m, in, out_dir) != 0) {
        feed_merge_free(m);
        return NULL;
    }
    m->err = NULL;
    return m;
}

feed_merge *feed_merge_write(const feed_merge_input *in, int n, const char *out_dir, char *err, size_t errlen)
{
    return merge_write(in, n, out_dir, false, NULL, err, errlen);
}

feed_merge *feed_merge_write_cached(const feed_merge_input *in, int n, const char *out_dir, const char *cache_dir,
                                    char *err, size_t errlen)
{
    return merge_write(in, n, out_dir, true, cache_dir, err, errlen);
}

void feed_merge_free(feed_merge *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n; i++)
        if (m->feeds[i].f)
            feed_close(m->feeds[i].f);
    for (int t = 0; t < T_N; t++)
        strmap_free(&m->owner[t]);
    strmap_free(&m->renamed);
    for (size_t r = 0; r < NRULES; r++)
        free(m->maps[r].seg);
    for (int i = 0; i < m->n; i++)
        mc_feed_free(&m->feeds[i].rec);
    mc_index_free(&m->old);
    for (size_t r = 0; r <= NRULES; r++)
        if (m->old_files[r].p) {
            munmap((void *)m->old_files[r].p, m->old_files[r].size);
            close(m->old_files[r].fd);
        }
    free(m->skipped);
    free(m);
}

void feed_merge_sha256(const feed_merge *m, char out[65])
{
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, MERGE_REVISION, strlen(MERGE_REVISION));
    for (int i = 0; i < m->n; i++) {
        const one_feed *f = &m->feeds[i];
        sha256_update(&c, f->name, strlen(f->name) + 1);
        sha256_update(&c, f->sha256, 65);
    }
    uint8_t digest[32];
    sha256_final(&c, digest);
    sha256_hex(digest, out);
}

int feed_merge_count(const feed_merge *m) { return m->n; }
bool feed_merge_from_cache(const feed_merge *m, int feed) { return m->feeds[feed].cached; }
const char *feed_merge_name(const feed_merge *m, int feed) { return m->feeds[feed].name; }
const char *feed_merge_path(const feed_merge *m, int feed) { return m->feeds[feed].path; }
uint64_t feed_merge_renamed(const feed_merge *m, int feed) { return m->feeds[feed].renamed; }
const char *feed_merge_skipped(const feed_merge *m) { return m->skipped ? m->skipped : ""; }

int feed_merge_locate(const feed_merge *m, const char *file, uint64_t line, uint64_t *src_line)
{
    for (size_t r = 0; r < NRULES; r++) {
        if (strcmp(RULES[r].file, file) != 0)
            continue;
        const file_map *fm = &m->maps[r];
        size_t lo = 0, hi = fm->n;   /* the last segment starting at or before line */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (fm->seg[mid].out_line <= line)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0)
            return -1;
        const segment *s = &fm->seg[lo - 1];
        *src_line = s->src_line + (line - s->out_line);
        return s->feed;
    }
    return -1;
}

void feed_merge_explain(const feed_merge *m, const char *msg, char *out, size_t cap)
{
    const char *colon = strchr(msg, ':');
    if (colon && colon - msg > 4 && colon - msg < 64 && strncmp(colon - 4, ".txt", 4) == 0) {
        char file[64];
        snprintf(file, sizeof file, "%.*s", (int)(colon - msg), msg);
        char *end;
        unsigned long long line = strtoull(colon + 1, &end, 10);
        uint64_t src;
        int feed;
        if (end != colon + 1 && *end == ':' && (feed = feed_merge_locate(m, file, line, &src)) >= 0) {
            snprintf(out, cap, "%s: %s:%llu%s", m->feeds[feed].path, file, (unsigned long long)src, end);
            return;
        }
    }
    snprintf(out, cap, "%s", msg);
}
