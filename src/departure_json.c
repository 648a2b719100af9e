/* departure_json.c — Departure objects written straight into the buffer.
 *
 * Why it exists: a /v1/departures body is 50 rows of 13 fields, about 17 KB.
 * Written with one json_writer call per key and per value (about 1,300
 * calls) it cost twice what the query did. Here a row is one reservation
 * followed by plain copies:
 * - the parts that repeat across rows (a stop's id and name, a route with
 *   a headsign) are written once a response and copied after that;
 * - the dates and the UTC offset around the instant are composed once per
 *   day and offset;
 * - a fresh string is measured as it is escaped, in one pass, with room
 *   reserved from the dataset's longest string.
 * The bytes are the same as the generic writer's; tests/api compares them
 * with the OpenAPI schema and the oracle.
 */
#include "departure_json.h"

#include <string.h>

#include "dataset_internal.h"
#include "transit/gtfs.h"

/* The texts around a row's instant, which repeat across the rows of one
 * response (rows come in time order, mostly on one day and one offset):
 *   dates        "2026-11-21","departure":"2026-11-21T
 *                (the service date, then the instant's local date)
 *   offset_text  -05:00","departure_secs":
 * Each is composed when its day or offset changes, and copied whole. */
#define DATES_LEN 37
#define OFFSET_TEXT_LEN 25

typedef struct row_texts {
    int32_t service_day;        /* dates is for this service day ... */
    int64_t local_start;        /* ... and the local day starting at this local second */
    char dates[DATES_LEN];
    int32_t offset;             /* offset_text is for this UTC offset */
    char offset_text[OFFSET_TEXT_LEN];
} row_texts;

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static char *put_int(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return json_put_uint(p, (uint64_t)0 - (uint64_t)v);
    }
    return json_put_uint(p, (uint64_t)v);
}

static void compose_dates(row_texts *t, int32_t service_day, int64_t local)
{
    char text[11];
    int64_t day = floor_div(local, 86400);
    t->service_day = service_day;
    t->local_start = day * 86400;
    char *p = t->dates;
    *p++ = '"';
    format_date(service_day, text);
    p = json_put_bytes(p, text, 10);
    p = JSON_PUT_LITERAL(p, "\",\"departure\":\"");
    format_date((int32_t)day, text);
    p = json_put_bytes(p, text, 10);
    *p = 'T';
}

static void compose_offset(row_texts *t, int32_t offset)
{
    uint32_t a = offset < 0 ? (uint32_t)0 - (uint32_t)offset : (uint32_t)offset;
    t->offset = offset;
    char *p = t->offset_text;
    *p++ = offset < 0 ? '-' : '+';
    p = json_put_2digits(p, a / 3600 % 100);
    *p++ = ':';
    p = json_put_2digits(p, a / 60 % 60);
    JSON_PUT_LITERAL(p, "\",\"departure_secs\":");
}

/* "2026-11-21","departure":"2026-11-21T18:15:00-05:00","departure_secs":
 * as the generic writer writes the service date and api_format_instant
 * the instant. */
static char *put_dates_and_instant(char *p, row_texts *t, int32_t service_day, int64_t instant, int32_t offset)
{
    int64_t local = instant + offset;
    if (service_day != t->service_day || (uint64_t)local - (uint64_t)t->local_start >= 86400)
        compose_dates(t, service_day, local);
    if (offset != t->offset)
        compose_offset(t, offset);
    uint32_t sod = (uint32_t)((uint64_t)local - (uint64_t)t->local_start);
    uint32_t hours = sod / 3600, rest = sod % 3600;
    p = json_put_bytes(p, t->dates, DATES_LEN);
    p = json_put_2digits(p, hours);
    *p++ = ':';
    p = json_put_2digits(p, rest / 60);
    *p++ = ':';
    p = json_put_2digits(p, rest % 60);
    return json_put_bytes(p, t->offset_text, OFFSET_TEXT_LEN);
}

/* Rows repeat their stops, routes and headsigns: the 50 rows of a response
 * near a point typically name a dozen stops and a handful of routes. So a
 * row is written as three fragments that later rows copy from where an
 * earlier row wrote them in the output, and a few values of its own:
 *
 *   head    {"stop_id":"…","trip_id":            by stop
 *   (the trip id)
 *   middle  ,"route_id":…,"route_type":3,"headsign":…,"service_date":
 *                                                by route and headsign
 *   (the service date, departure, departure_secs and stop_sequence)
 *   tail    ,"stop_name":"…","distance_m":407}   by stop (or just "}")
 *
 * Each kind is a small direct-mapped table: a collision only means writing
 * the fragment afresh. */
#define FRAG_SLOTS 64

typedef struct frag {
    uint64_t key;               /* 0: empty */
    uint32_t off, len;          /* the fragment's bytes in w->buf */
} frag;

typedef struct row_frags {
    frag head[FRAG_SLOTS], middle[FRAG_SLOTS], tail[FRAG_SLOTS];
} row_frags;

static frag *frag_slot(frag *table, uint64_t key)
{
    return &table[(key ^ (key >> 6) ^ (key >> 32)) % FRAG_SLOTS];
}

/* Copies are at most a few hundred bytes: sixteen at a time, inline, the
 * last chunk running past the end into room the row has reserved (and
 * reading past the fragment's end into what followed it in the buffer,
 * which may be where this copy writes: hence the chunk in between). */
#define FRAG_SLACK 16

static char *put_frag(char *p, const json_writer *w, const frag *f)
{
    const char *src = w->buf + f->off;
    for (uint32_t i = 0; i < f->len; i += 16) {
        char chunk[16];
        memcpy(chunk, src + i, 16);
        memcpy(p + i, chunk, 16);
    }
    return p + f->len;
}

static void frag_keep(frag *f, uint64_t key, const json_writer *w, const char *from, const char *to)
{
    *f = (frag){key, (uint32_t)(from - w->buf), (uint32_t)(to - from)};
}

/* The bytes a fresh fragment may need: its literals, and each string at
 * its worst (every byte a \u escape, plus the word json_put_cstring may
 * store past its end). The dataset's longest string bounds every string,
 * so none is measured before it is written; a feed whose longest string is
 * too long to reserve for every row measures each instead. */
#define FRAG_LITERAL_BYTES 160
#define LONGEST_ASSUMED 1024

static size_t string_room(const dataset *ds, const char *s)
{
    size_t len = ds->longest_string <= LONGEST_ASSUMED ? ds->longest_string : strlen(s);
    return 6 * len + 10;
}

static char *put_head(char *p, const char *stop_id, const char *end)
{
    p = JSON_PUT_LITERAL(p, "{\"stop_id\":");
    p = json_put_cstring(p, stop_id, end);
    return JSON_PUT_LITERAL(p, ",\"trip_id\":");
}

static char *put_middle(char *p, const route_info *rt, const char *headsign, const char *end)
{
    p = JSON_PUT_LITERAL(p, ",\"route_id\":");
    p = json_put_cstring(p, rt->id, end);
    p = JSON_PUT_LITERAL(p, ",\"route_short_name\":");
    p = json_put_cstring(p, rt->short_name, end);
    p = JSON_PUT_LITERAL(p, ",\"route_long_name\":");
    p = json_put_cstring(p, rt->long_name, end);
    p = JSON_PUT_LITERAL(p, ",\"route_type\":");
    p = put_int(p, rt->type);
    p = JSON_PUT_LITERAL(p, ",\"headsign\":");
    if (*headsign)
        p = json_put_cstring(p, headsign, end);
    else
        p = JSON_PUT_LITERAL(p, "null");
    return JSON_PUT_LITERAL(p, ",\"service_date\":");
}

static char *put_tail(char *p, const char *stop_name, double distance_m, bool near_point,
                      const char *end)
{
    if (near_point) {
        p = JSON_PUT_LITERAL(p, ",\"stop_name\":");
        p = json_put_cstring(p, stop_name, end);
        p = JSON_PUT_LITERAL(p, ",\"distance_m\":");
        p = put_int(p, (int64_t)(distance_m + 0.5));
    }
    *p++ = '}';
    return p;
}

/* The row's own values, after the middle fragment: 12 + 13 + 27 + 18 + 17
 * bytes of text and two numbers of at most 20 digits. */
#define ROW_OWN_BYTES 140

void departure_json_write_items(json_writer *w, const dataset *ds, const departure *deps,
                                uint32_t count, bool near_point)
{
    row_texts texts = {.service_day = INT32_MIN, .local_start = INT64_MIN, .offset = INT32_MIN};
    row_frags frags;
    memset(&frags, 0, sizeof frags);
    const char *strings_end = ds->strings + ds->nstrings;
    /* Each row's headsign lies somewhere in the string pool, most likely
     * out of cache, and so do the route record and the id and name of each
     * stop met for the first time (and the rare trip id that is not kept
     * inline): ask for all of them first, so the misses overlap instead of
     * each row waiting for its own. (The trip_hot and stop records
     * themselves were asked for when the query put the departure out.) */
    uint32_t last_stop = UINT32_MAX;
    for (uint32_t i = 0; i < count; i++) {
        const trip_hot *th = &ds->trip_hot[deps[i].trip];
        __builtin_prefetch(ds->strings + th->headsign);
        __builtin_prefetch(&ds->routes[th->route]);
        if (th->id_len == TRIP_HOT_SPILLED)
            __builtin_prefetch(ds->strings + ds->trips[deps[i].trip].id);
        if (deps[i].stop != last_stop) {
            const tt_stop *sp = &ds->stops[deps[i].stop];
            __builtin_prefetch(ds->strings + sp->id);
            __builtin_prefetch(ds->strings + sp->name);
            last_stop = deps[i].stop;
        }
    }
    for (uint32_t i = 0; i < count; i++) {
        const departure *d = &deps[i];
        const trip_hot *th = &ds->trip_hot[d->trip];
        const char *headsign = ds->strings + th->headsign;
        const char *spilled_id = th->id_len == TRIP_HOT_SPILLED ? ds->strings + ds->trips[d->trip].id : NULL;
        uint64_t stop_key = (uint64_t)d->stop + 1;
        uint64_t middle_key = ((uint64_t)th->route + 1) << 32 | th->headsign;
        frag *head = frag_slot(frags.head, stop_key), *middle = frag_slot(frags.middle, middle_key);
        frag *tail = frag_slot(frags.tail, stop_key);
        bool have_head = head->key == stop_key, have_middle = middle->key == middle_key;
        bool have_tail = tail->key == stop_key;
        /* an inline id is copied whole, TRIP_HOT_ID_MAX bytes, between its quotes */
        size_t room = ROW_OWN_BYTES + (spilled_id ? string_room(ds, spilled_id) : TRIP_HOT_ID_MAX + 2) +
                      3 * FRAG_SLACK;
        const char *stop_id = NULL, *stop_name = NULL;
        route_info rt;
        if (!have_head || !have_tail) {
            const tt_stop *sp = &ds->stops[d->stop];
            stop_id = ds->strings + sp->id;
            stop_name = ds->strings + sp->name;
            room += 2 * FRAG_LITERAL_BYTES + string_room(ds, stop_id) + string_room(ds, stop_name);
        }
        if (!have_middle) {
            dataset_route(ds, th->route, &rt);
            room += FRAG_LITERAL_BYTES + string_room(ds, rt.id) + string_room(ds, rt.short_name) +
                    string_room(ds, rt.long_name) + string_room(ds, headsign);
        }
        room += (have_head ? head->len : 0) + (have_middle ? middle->len : 0) + (have_tail ? tail->len : 0);
        char *p = json_raw_begin(w, room);
        if (!p)
            return;
        char *from = p;
        if (have_head) {
            p = put_frag(p, w, head);
        } else {
            p = put_head(p, stop_id, strings_end);
            frag_keep(head, stop_key, w, from, p);
        }
        if (spilled_id) {
            p = json_put_cstring(p, spilled_id, strings_end);
        } else {
            *p++ = '"';
            memcpy(p, th->id, TRIP_HOT_ID_MAX);
            p += th->id_len;
            *p++ = '"';
        }
        from = p;
        if (have_middle) {
            p = put_frag(p, w, middle);
        } else {
            p = put_middle(p, &rt, headsign, strings_end);
            frag_keep(middle, middle_key, w, from, p);
        }
        p = put_dates_and_instant(p, &texts, d->service_date, d->instant, d->utc_offset);
        p = json_put_u32(p, d->secs);
        p = JSON_PUT_LITERAL(p, ",\"stop_sequence\":");
        p = json_put_u32(p, d->stop_sequence);
        from = p;
        if (have_tail) {
            p = put_frag(p, w, tail);
        } else {
            p = put_tail(p, stop_name, d->distance_m, near_point, strings_end);
            frag_keep(tail, stop_key, w, from, p);
        }
        json_raw_end(w, p);
    }
}
