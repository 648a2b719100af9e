/* departure_json.c — Departure objects written straight into the buffer.
 *
 * Why it exists: a /v1/departures body is 50 rows of 13 fields, about 17 KB.
 * Written with one json_writer call per key and per value (about 1,300
 * calls) it cost twice what the query did. Here a row is one reservation
 * followed by plain copies:
 * - the JSON of each stop (its id, and its name) and of each route with a
 *   headsign is written once, when the dataset is opened, and every row
 *   copies it from there;
 * - the dates and the UTC offset around the instant are composed once per
 *   day and offset;
 * - the trip id is copied whole from the trip's cache line.
 * The bytes are the same as the generic writer's; tests/unit compares them
 * with it, and tests/api with the OpenAPI schema and the oracle.
 */
#include "api/departure_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/dataset_internal.h"
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

/* ------------------------------------------------------------ row texts
 *
 * A row is, in order:
 *   head    {"stop_id":"…","trip_id":                         by stop
 *   (the trip id)
 *   middle  ,"route_id":…,"route_type":3,"headsign":…,"service_date":
 *                                                  by route and headsign
 *   (the service date, departure, departure_secs and stop_sequence)
 *   tail    ,"stop_name":"…","distance_m":407}    by stop (or just "}")
 * The head, middle and tail texts are derived when the dataset is opened:
 * a stop's head and tail side by side, a middle once for every route and
 * headsign some trip has (NYC Brooklyn: 4,575 stops and 203 middles in
 * 0.45 MB). A row reads no string, no route record and no hash of its own,
 * and escapes nothing: where the 50 rows of a response name a dozen stops
 * and a handful of routes, the texts they copy stay in the cache. */

/* Text copies run sixteen bytes at a time, the last chunk reading past the
 * text's end (row_text keeps this much after its last byte) and writing
 * past it into room the row has reserved. */
#define ROW_TEXT_SLACK 16

/* The bytes a derived text may need: its literals, and each string at its
 * worst (every byte a \u escape, plus the word json_put_cstring may store
 * past its end). */
#define TEXT_LITERAL_BYTES 160

static size_t string_room(const char *s) { return 6 * strlen(s) + 10; }

static char *put_int(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return json_put_uint(p, (uint64_t)0 - (uint64_t)v);
    }
    return json_put_uint(p, (uint64_t)v);
}

static char *put_stop_texts(char *p, const char *stop_id, const char *stop_name, const char *end, size_t *head_len)
{
    char *start = p;
    p = JSON_PUT_LITERAL(p, "{\"stop_id\":");
    p = json_put_cstring(p, stop_id, end);
    p = JSON_PUT_LITERAL(p, ",\"trip_id\":");
    *head_len = (size_t)(p - start);
    p = JSON_PUT_LITERAL(p, ",\"stop_name\":");
    p = json_put_cstring(p, stop_name, end);
    return JSON_PUT_LITERAL(p, ",\"distance_m\":");
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

/* row_text as it grows, with its slack always allocated. */
typedef struct text_buf {
    char *buf;
    size_t len, cap;
} text_buf;

/* Room for `need` more bytes; NULL when out of memory or when the text
 * would pass what a uint32_t offset reaches. */
static char *text_reserve(text_buf *t, size_t need)
{
    if (t->len + need > UINT32_MAX)
        return NULL;
    if (t->len + need + ROW_TEXT_SLACK > t->cap) {
        size_t cap = t->cap ? t->cap : 64 * 1024;
        while (cap < t->len + need + ROW_TEXT_SLACK)
            cap *= 2;
        char *buf = realloc(t->buf, cap);
        if (!buf)
            return NULL;
        t->buf = buf;
        t->cap = cap;
    }
    return t->buf + t->len;
}

/* The middle of every trip, one text for each distinct (route, headsign):
 * an open-addressing table from that pair to the first trip that had it. */
static int derive_middles(dataset *ds, text_buf *t)
{
    uint32_t ntrips = ds->meta->ntrips;
    const char *end = ds->strings + ds->nstrings;
    size_t size = 16;
    unsigned bits = 4;
    while (size < 2 * (size_t)ntrips) {
        size *= 2;
        bits++;
    }
    uint64_t *keys = calloc(size, sizeof *keys);
    uint32_t *first_trip = malloc(size * sizeof *first_trip);
    int rc = -1;
    if (!keys || !first_trip)
        goto done;
    for (uint32_t i = 0; i < ntrips; i++) {
        const tt_trip *tr = &ds->trips[i];
        uint64_t key = ((uint64_t)tr->route + 1) << 32 | tr->headsign;   /* never 0 */
        size_t slot = (size_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - bits));
        while (keys[slot] && keys[slot] != key)
            slot = (slot + 1) & (size - 1);
        trip_hot *th = &ds->trip_hot[i];
        if (keys[slot]) {
            const trip_hot *seen = &ds->trip_hot[first_trip[slot]];
            th->middle_off = seen->middle_off;
            th->middle_len = seen->middle_len;
            continue;
        }
        route_info rt;
        dataset_route(ds, tr->route, &rt);
        const char *headsign = ds->strings + tr->headsign;
        char *p = text_reserve(t, TEXT_LITERAL_BYTES + string_room(rt.id) + string_room(rt.short_name) +
                                      string_room(rt.long_name) + string_room(headsign));
        if (!p)
            goto done;
        char *q = put_middle(p, &rt, headsign, end);
        th->middle_off = (uint32_t)t->len;
        th->middle_len = (uint32_t)(q - p);
        t->len += (size_t)(q - p);
        keys[slot] = key;
        first_trip[slot] = i;
    }
    rc = 0;
done:
    free(keys);
    free(first_trip);
    return rc;
}

int departure_json_derive(dataset *ds, char *err, size_t errlen)
{
    uint32_t nstops = ds->meta->nstops;
    const char *end = ds->strings + ds->nstrings;
    text_buf t = {0};
    if (!(ds->stop_text = calloc(nstops ? nstops : 1, sizeof *ds->stop_text)))
        goto fail;
    for (uint32_t i = 0; i < nstops; i++) {
        const char *id = ds->strings + ds->stops[i].id, *name = ds->strings + ds->stops[i].name;
        char *p = text_reserve(&t, TEXT_LITERAL_BYTES + string_room(id) + string_room(name));
        if (!p)
            goto fail;
        size_t head_len;
        char *q = put_stop_texts(p, id, name, end, &head_len);
        ds->stop_text[i] = (stop_text){(uint32_t)t.len, (uint32_t)head_len, (uint32_t)((size_t)(q - p) - head_len)};
        t.len += (size_t)(q - p);
    }
    /* (reserving nothing allocates the slack even for a feed with no stops
     * and no trips) */
    if (derive_middles(ds, &t) != 0 || !text_reserve(&t, 0))
        goto fail;
    memset(t.buf + t.len, 0, ROW_TEXT_SLACK);
    ds->row_text = t.buf;
    return 0;
fail:
    free(t.buf);
    free(ds->stop_text);
    ds->stop_text = NULL;
    snprintf(err, errlen, "out of memory for the departure rows' texts (or they would pass 4 GB)");
    return -1;
}

static inline char *put_text(char *p, const char *text, uint32_t len)
{
    for (uint32_t i = 0; i < len; i += 16)
        memcpy(p + i, text + i, 16);
    return p + len;
}

/* A row's own bytes, besides its texts and its trip id: the dates and
 * instant (37 + 8 + 25), ,"stop_sequence": (17), three numbers of at most 10
 * digits, the id's quotes, the comma before the row and its closing brace
 * (121 in all, rounded up), and the slack of its three text copies. */
#define ROW_OWN_BYTES (128 + 3 * ROW_TEXT_SLACK)

/* The realtime members' bytes at most:
 *   ,"scheduled":"…25…","predicted":"…25…","delay_s":-2147483648,"realtime":false,"canceled":false
 * (138), rounded up. */
#define ROW_REALTIME_BYTES 160
/* Where the instant lies in the dates-and-instant text: after
 * "2026-11-21","departure":" ; 25 bytes (2026-11-21T18:15:00-05:00). */
#define INSTANT_AT 26
#define INSTANT_LEN 25

/* 2026-11-21T18:17:00-05:00 for the predicted instant of a row whose
 * scheduled instant text is `sched_text`: the date and offset are copied
 * from it when the prediction falls on the same local day under the same
 * UTC offset (nearly always), else composed. */
static char *put_predicted(char *p, const dataset *ds, const departure *d, int64_t instant,
                           const char *sched_text)
{
    int32_t offset = d->utc_offset;
    int64_t sched_local = d->instant + offset;
    int64_t sched_day = floor_div(sched_local, 86400);
    int64_t local = instant + offset;
    int64_t day = floor_div(local, 86400);
    /* a transition between the two instants changes the offset */
    if (day != sched_day || dataset_utc_offset(ds, instant) != offset) {
        offset = dataset_utc_offset(ds, instant);
        local = instant + offset;
        day = floor_div(local, 86400);
        char text[11];
        format_date((int32_t)day, text);
        memcpy(p, text, 10);
    } else {
        memcpy(p, sched_text, 10);
    }
    p += 10;
    *p++ = 'T';
    uint32_t sod = (uint32_t)(local - day * 86400);
    p = json_put_2digits(p, sod / 3600);
    *p++ = ':';
    p = json_put_2digits(p, sod / 60 % 60);
    *p++ = ':';
    p = json_put_2digits(p, sod % 60);
    if (offset == d->utc_offset) {
        memcpy(p, sched_text + 19, 6);
        return p + 6;
    }
    uint32_t a = offset < 0 ? (uint32_t)0 - (uint32_t)offset : (uint32_t)offset;
    *p++ = offset < 0 ? '-' : '+';
    p = json_put_2digits(p, a / 3600 % 100);
    *p++ = ':';
    return json_put_2digits(p, a / 60 % 60);
}

/* The realtime members of a row whose scheduled instant text is at `instant_text`. */
static char *put_realtime(char *p, const dataset *ds, const rt_overlay *rt, const departure *d,
                          const char *instant_text)
{
    rt_departure r;
    bool known = rt && rt_overlay_lookup(rt, d, &r);
    p = JSON_PUT_LITERAL(p, ",\"scheduled\":\"");
    memcpy(p, instant_text, INSTANT_LEN);
    p += INSTANT_LEN;
    if (known && r.has_prediction) {
        p = JSON_PUT_LITERAL(p, "\",\"predicted\":\"");
        p = put_predicted(p, ds, d, d->instant + r.delay_s, instant_text);
        p = JSON_PUT_LITERAL(p, "\",\"delay_s\":");
        p = put_int(p, r.delay_s);
    } else {
        p = JSON_PUT_LITERAL(p, "\",\"predicted\":null,\"delay_s\":null");
    }
    if (known)
        p = JSON_PUT_LITERAL(p, ",\"realtime\":true");
    else
        p = JSON_PUT_LITERAL(p, ",\"realtime\":false");
    if (known && r.canceled)
        return JSON_PUT_LITERAL(p, ",\"canceled\":true");
    return JSON_PUT_LITERAL(p, ",\"canceled\":false");
}

/* The part of a row from its service date on, the same for every row:
 *   "2026-11-21","departure":"…","departure_secs":…,"stop_sequence":…
 * and near a point ,"stop_name":"…","distance_m":…  */
static inline char *put_times_and_tail(char *p, const char *text, const stop_text *st, const departure *d,
                                       row_texts *texts, bool near_point)
{
    p = put_dates_and_instant(p, texts, d->service_date, d->instant, d->utc_offset);
    p = json_put_u32(p, d->secs);
    p = JSON_PUT_LITERAL(p, ",\"stop_sequence\":");
    p = json_put_u32(p, d->stop_sequence);
    if (near_point) {
        p = put_text(p, text + st->off + st->head_len, st->tail_len);
        /* within the radius, so at most QUERY_RADIUS_MAX */
        p = json_put_u32(p, (uint32_t)(d->distance_m + 0.5));
    }
    return p;
}

/* ------------------------------------------------------------ ADDED trips
 * A trip the realtime feed added has no trip_hot record, middle text or
 * schedule: its row is composed from its overlay entry, member for member
 * in the order of the others, with `departure` the feed's time and
 *   ,"scheduled":null,"predicted":"<departure>","delay_s":null,"realtime":true,"canceled":false,"added":true */

#define ADDED_REALTIME_BYTES 140

static size_t added_row_room(const dataset *ds, const rt_added_trip *a, const stop_text *st, bool near_point)
{
    route_info rt;
    dataset_route(ds, a->route, &rt);
    return ROW_OWN_BYTES + st->head_len + (near_point ? st->tail_len : 0) + 6 * strlen(a->trip_id) + 2 +
           TEXT_LITERAL_BYTES + string_room(rt.id) + string_room(rt.short_name) + string_room(rt.long_name) +
           ADDED_REALTIME_BYTES;
}

static char *put_added_row(char *p, const dataset *ds, const rt_added_trip *a, const departure *d,
                           row_texts *texts, bool near_point)
{
    const stop_text *st = &ds->stop_text[d->stop];
    const char *text = ds->row_text;
    route_info rt;
    dataset_route(ds, a->route, &rt);
    p = put_text(p, text + st->off, st->head_len);
    p = json_put_string(p, a->trip_id, strlen(a->trip_id));
    p = put_middle(p, &rt, "", ds->strings + ds->nstrings);
    const char *instant_text = p + INSTANT_AT;
    p = put_times_and_tail(p, text, st, d, texts, near_point);
    p = JSON_PUT_LITERAL(p, ",\"scheduled\":null,\"predicted\":\"");
    memcpy(p, instant_text, INSTANT_LEN);
    p += INSTANT_LEN;
    return JSON_PUT_LITERAL(p, "\",\"delay_s\":null,\"realtime\":true,\"canceled\":false,\"added\":true");
}

void departure_json_write_items(json_writer *w, const dataset *ds, const departure *deps,
                                uint32_t count, bool near_point, alert_marks *alerts,
                                const rt_overlay *realtime)
{
    /* an overlay of another dataset knows none of these trips */
    const rt_overlay *rt = realtime && rt_overlay_dataset(realtime) == ds ? realtime : NULL;
    row_texts texts = {.service_day = INT32_MIN, .local_start = INT64_MIN, .offset = INT32_MIN};
    const char *text = ds->row_text, *strings_end = ds->strings + ds->nstrings;
    /* Ask for every text the rows copy before the first row needs one, so
     * the misses overlap instead of each row waiting for its own (drain
     * asked for the trip_hot and stop_text records). A middle is a few
     * lines long; its first two hold all but the longest route names. */
    uint32_t last_stop = UINT32_MAX, ntrips = ds->meta->ntrips;
    size_t room = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (deps[i].trip >= ntrips) {   /* an ADDED trip's (rt_merge puts them only with rt) */
            const rt_added_trip *a = rt_overlay_added_trip(rt, &deps[i]);
            room += added_row_room(ds, a, &ds->stop_text[deps[i].stop], near_point);
            if (alerts)
                room += alert_marks_added_departure(alerts, ds, &deps[i], i, a->route, a->direction_id);
            continue;
        }
        const trip_hot *th = &ds->trip_hot[deps[i].trip];
        const stop_text *st = &ds->stop_text[deps[i].stop];
        __builtin_prefetch(text + th->middle_off);
        __builtin_prefetch(text + th->middle_off + 64);
        /* an inline id is copied whole, TRIP_HOT_ID_MAX bytes, between its quotes */
        room += ROW_OWN_BYTES + TRIP_HOT_ID_MAX + st->head_len + th->middle_len + (near_point ? st->tail_len : 0) +
                (realtime ? ROW_REALTIME_BYTES : 0);
        if (th->id_len == TRIP_HOT_SPILLED)
            room += string_room(ds->strings + ds->trips[deps[i].trip].id);
        if (alerts)
            room += alert_marks_departure(alerts, ds, &deps[i], i);
        if (rt)
            rt_overlay_prefetch(rt, &deps[i]);
        if (deps[i].stop != last_stop) {
            __builtin_prefetch(text + st->off);
            __builtin_prefetch(text + st->off + st->head_len);
            last_stop = deps[i].stop;
        }
    }
    /* one reservation for every row; the rows after the first write their
     * own commas */
    char *p = count ? json_raw_begin(w, room) : NULL;
    if (!p)
        return;
    for (uint32_t i = 0; i < count; i++) {
        const departure *d = &deps[i];
        if (i)
            *p++ = ',';
        if (d->trip >= ntrips) {
            p = put_added_row(p, ds, rt_overlay_added_trip(rt, d), d, &texts, near_point);
            if (alerts && alert_marks_row_count(alerts, i))
                p = alert_marks_put_row(alerts, i, p);
            *p++ = '}';
            continue;
        }
        const trip_hot *th = &ds->trip_hot[d->trip];
        const stop_text *st = &ds->stop_text[d->stop];
        p = put_text(p, text + st->off, st->head_len);
        if (th->id_len == TRIP_HOT_SPILLED) {
            p = json_put_cstring(p, ds->strings + ds->trips[d->trip].id, strings_end);
        } else {
            *p++ = '"';
            memcpy(p, th->id, TRIP_HOT_ID_MAX);
            p += th->id_len;
            *p++ = '"';
        }
        p = put_text(p, text + th->middle_off, th->middle_len);
        const char *instant_text = p + INSTANT_AT;
        p = put_times_and_tail(p, text, st, d, &texts, near_point);
        if (realtime)
            p = put_realtime(p, ds, rt, d, instant_text);
        if (alerts && alert_marks_row_count(alerts, i))
            p = alert_marks_put_row(alerts, i, p);
        *p++ = '}';
    }
    json_raw_end(w, p);
}
