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

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/dataset_internal.h"
#include "transit/fd_io.h"
#include "transit/gtfs.h"
#include "transit/translations.h"

/* The texts around a row's instant, which repeat across the rows of one
 * response (rows come in time order, mostly on one day and one offset):
 *   dates        "2026-11-21","departure":"2026-11-21T
 *                (the service date, then the instant's local date)
 *   offset_text  -05:00","departure_secs":
 * Each is composed when its day or offset changes, and copied whole. An
 * arrival row's say "arrival" and "arrival_secs", two bytes shorter each,
 * and are kept apart (a board of both kinds alternates between them). */
#define DATES_LEN 37
#define OFFSET_TEXT_LEN 25
#define ARR_DATES_LEN 35
#define ARR_OFFSET_TEXT_LEN 23
#define EVENT_DATES_LEN(arrival) ((arrival) ? ARR_DATES_LEN : DATES_LEN)
#define EVENT_OFFSET_TEXT_LEN(arrival) ((arrival) ? ARR_OFFSET_TEXT_LEN : OFFSET_TEXT_LEN)

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

static void compose_dates(row_texts *t, int32_t service_day, int64_t local, bool arrival)
{
    char text[11];
    int64_t day = floor_div(local, 86400);
    t->service_day = service_day;
    t->local_start = day * 86400;
    char *p = t->dates;
    *p++ = '"';
    format_date(service_day, text);
    p = json_put_bytes(p, text, 10);
    if (arrival)
        p = JSON_PUT_LITERAL(p, "\",\"arrival\":\"");
    else
        p = JSON_PUT_LITERAL(p, "\",\"departure\":\"");
    format_date((int32_t)day, text);
    p = json_put_bytes(p, text, 10);
    *p = 'T';
}

static void compose_offset(row_texts *t, int32_t offset, bool arrival)
{
    uint32_t a = offset < 0 ? (uint32_t)0 - (uint32_t)offset : (uint32_t)offset;
    t->offset = offset;
    char *p = t->offset_text;
    *p++ = offset < 0 ? '-' : '+';
    p = json_put_2digits(p, a / 3600 % 100);
    *p++ = ':';
    p = json_put_2digits(p, a / 60 % 60);
    if (arrival)
        JSON_PUT_LITERAL(p, "\",\"arrival_secs\":");
    else
        JSON_PUT_LITERAL(p, "\",\"departure_secs\":");
}

/* "2026-11-21","departure":"2026-11-21T18:15:00-05:00","departure_secs":
 * as the generic writer writes the service date and rfc3339_format_instant
 * the instant (an arrival: "arrival", "arrival_secs", from texts of its
 * own); *local_sod is the instant's second of its local day. */
static inline __attribute__((always_inline)) char *put_dates_and_instant(char *p, row_texts *t, int32_t service_day,
                                                                         int64_t instant, int32_t offset,
                                                                         bool arrival, uint32_t *local_sod)
{
    int64_t local = instant + offset;
    if (service_day != t->service_day || (uint64_t)local - (uint64_t)t->local_start >= 86400)
        compose_dates(t, service_day, local, arrival);
    if (offset != t->offset)
        compose_offset(t, offset, arrival);
    uint32_t sod = (uint32_t)((uint64_t)local - (uint64_t)t->local_start);
    uint32_t hours = sod / 3600, rest = sod % 3600;
    *local_sod = sod;
    p = json_put_bytes(p, t->dates, EVENT_DATES_LEN(arrival));
    p = json_put_2digits(p, hours);
    *p++ = ':';
    p = json_put_2digits(p, rest / 60);
    *p++ = ':';
    p = json_put_2digits(p, rest % 60);
    return json_put_bytes(p, t->offset_text, EVENT_OFFSET_TEXT_LEN(arrival));
}

/* ------------------------------------------------------------ row texts
 *
 * A row is, in order:
 *   head    {"stop_id":"…","trip_id":                         by stop
 *   (the trip id)
 *   middle  ,"route_id":…,"route_type":3,"headsign":…,"wheelchair_accessible":0,
 *           "bikes_allowed":0,"service_date":     by route, headsign and the two flags
 *   (the service date, departure, departure_secs and stop_sequence)
 *   tail    ,"stop_name":"…","distance_m":407}    by stop (or just "}")
 * The head, middle and tail texts are derived once per dataset (a dataset
 * extension, query.h; the serving state asks for them when it installs a
 * dataset, so no request pays for it):
 * a stop's head and tail side by side, a middle once for every route and
 * headsign some trip has (NYC Brooklyn: 4,575 stops and 203 middles in
 * 0.45 MB). A row reads no string, no route record and no hash of its own,
 * and escapes nothing: where the 50 rows of a response name a dozen stops
 * and a handful of routes, the texts they copy stay in the cache. */

/* Text copies run sixteen bytes at a time, the last chunk reading past the
 * text's end (row_text keeps this much after its last byte) and writing
 * past it into room the row has reserved. */
#define ROW_TEXT_SLACK 16

/* What a row reads of its trip, in one cache line: its id inline when it is
 * plain ASCII (written to JSON as it is) and fits, which is every id of the
 * shared feeds (else id_len is TRIP_ROW_SPILLED and the row writes the
 * dataset's string), and where its route-and-headsign middle lies in the
 * text. 64 bytes a trip (3.7 MB for NYC Brooklyn). */
#define TRIP_ROW_ID_MAX 55
#define TRIP_ROW_SPILLED 0xff
typedef struct trip_row {
    uint32_t middle_off, middle_len;
    uint8_t id_len;
    char id[TRIP_ROW_ID_MAX];
} trip_row;

/* A stop's head and tail, side by side in the text. 12 bytes a stop. */
typedef struct stop_text {
    uint32_t off;                     /* the head's first byte */
    uint32_t head_len, tail_len;
} stop_text;

/* The texts of one dataset: derived once, read by every row. */
typedef struct departure_texts {
    trip_row *trips;                  /* ntrips, 64-byte aligned */
    stop_text *stops;                 /* nstops */
    char *text;                       /* the heads, tails and middles, then ROW_TEXT_SLACK zero bytes */
    size_t text_len;                  /* with the slack */
    uint32_t ntrips, nstops;
    bool mapped;                      /* the three arrays are a kept file's (texts_view): not owned */
    const dataset_translations *names;   /* the language of the texts (translations.h), for the */
    int language;                        /* rows composed per request (ADDED trips); NULL, 0: the feed's */
} departure_texts;

/* The bytes a derived text may need: its literals, and each string at its
 * worst (every byte a \u escape, plus the word json_put_cstring may store
 * past its end). */
#define TEXT_LITERAL_BYTES 208

static size_t string_room(const char *s) { return 6 * strlen(s) + 10; }

static char *put_int(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return json_put_uint(p, (uint64_t)0 - (uint64_t)v);
    }
    return json_put_uint(p, (uint64_t)v);
}

/* A string of the dataset, measured; derivation only (rows copy texts). */
static char *put_cstr(char *p, const char *s) { return json_put_string(p, s, strlen(s)); }

static char *put_stop_texts(char *p, const char *stop_id, const char *stop_name, size_t *head_len)
{
    char *start = p;
    p = JSON_PUT_LITERAL(p, "{\"stop_id\":");
    p = put_cstr(p, stop_id);
    p = JSON_PUT_LITERAL(p, ",\"trip_id\":");
    *head_len = (size_t)(p - start);
    p = JSON_PUT_LITERAL(p, ",\"stop_name\":");
    p = put_cstr(p, stop_name);
    return JSON_PUT_LITERAL(p, ",\"distance_m\":");
}

static char *put_middle(char *p, const route_info *rt, const char *headsign, int wheelchair_accessible,
                        int bikes_allowed)
{
    p = JSON_PUT_LITERAL(p, ",\"route_id\":");
    p = put_cstr(p, rt->id);
    p = JSON_PUT_LITERAL(p, ",\"route_short_name\":");
    p = put_cstr(p, rt->short_name);
    p = JSON_PUT_LITERAL(p, ",\"route_long_name\":");
    p = put_cstr(p, rt->long_name);
    p = JSON_PUT_LITERAL(p, ",\"route_type\":");
    p = put_int(p, rt->type);
    p = JSON_PUT_LITERAL(p, ",\"headsign\":");
    if (*headsign)
        p = put_cstr(p, headsign);
    else
        p = JSON_PUT_LITERAL(p, "null");
    p = JSON_PUT_LITERAL(p, ",\"wheelchair_accessible\":");
    p = put_int(p, wheelchair_accessible);
    p = JSON_PUT_LITERAL(p, ",\"bikes_allowed\":");
    p = put_int(p, bikes_allowed);
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

/* Each trip's inline id (see trip_row). */
static void put_trip_id(trip_row *r, const char *id)
{
    memset(r, 0, sizeof *r);
    size_t len = json_plain_length(id, TRIP_ROW_ID_MAX);
    if (len <= TRIP_ROW_ID_MAX) {
        r->id_len = (uint8_t)len;
        memcpy(r->id, id, len);
    } else {
        r->id_len = TRIP_ROW_SPILLED;
    }
}

/* The middle of every trip, one text for each distinct (route, headsign,
 * wheelchair_accessible, bikes_allowed): an open-addressing table from that
 * key to the first trip that had it. Headsigns are strings of the mapped
 * pool, so equal texts are one pointer. */
static int derive_trips(const dataset *ds, const dataset_translations *names, int language, departure_texts *x,
                        text_buf *t)
{
    uint32_t ntrips = x->ntrips;
    size_t size = 16;
    unsigned bits = 4;
    while (size < 2 * (size_t)ntrips) {
        size *= 2;
        bits++;
    }
    typedef struct middle_key { uint32_t route, flags; const char *headsign; } middle_key;
    middle_key *keys = calloc(size, sizeof *keys);
    uint32_t *first_trip = malloc(size * sizeof *first_trip);
    int rc = -1;
    if (!keys || !first_trip)
        goto done;
    for (uint32_t i = 0; i < ntrips; i++) {
        trip_info tr;
        dataset_trip(ds, i, &tr);
        tr.headsign = translated(names, language, TRANSLATED_TRIP_HEADSIGN, i, tr.headsign);
        trip_row *row = &x->trips[i];
        put_trip_id(row, tr.id);
        uint32_t flags = (uint32_t)tr.wheelchair_accessible << 8 | (uint32_t)tr.bikes_allowed;
        uint64_t h = ((uint64_t)tr.route << 32 | flags << 16) ^ (uint64_t)(uintptr_t)tr.headsign;
        size_t slot = (size_t)((h * 0x9e3779b97f4a7c15ull) >> (64 - bits));
        while (keys[slot].headsign &&
               (keys[slot].route != tr.route || keys[slot].flags != flags || keys[slot].headsign != tr.headsign))
            slot = (slot + 1) & (size - 1);
        if (keys[slot].headsign) {
            const trip_row *seen = &x->trips[first_trip[slot]];
            row->middle_off = seen->middle_off;
            row->middle_len = seen->middle_len;
            continue;
        }
        route_info rt;
        dataset_route(ds, tr.route, &rt);
        rt.short_name = translated(names, language, TRANSLATED_ROUTE_SHORT_NAME, tr.route, rt.short_name);
        rt.long_name = translated(names, language, TRANSLATED_ROUTE_LONG_NAME, tr.route, rt.long_name);
        char *p = text_reserve(t, TEXT_LITERAL_BYTES + string_room(rt.id) + string_room(rt.short_name) +
                                      string_room(rt.long_name) + string_room(tr.headsign));
        if (!p)
            goto done;
        char *q = put_middle(p, &rt, tr.headsign, tr.wheelchair_accessible, tr.bikes_allowed);
        row->middle_off = (uint32_t)t->len;
        row->middle_len = (uint32_t)(q - p);
        t->len += (size_t)(q - p);
        keys[slot] = (middle_key){tr.route, flags, tr.headsign};
        first_trip[slot] = i;
    }
    rc = 0;
done:
    free(keys);
    free(first_trip);
    return rc;
}

static void release_texts(void *derived)
{
    departure_texts *x = derived;
    if (!x)
        return;
    if (x->mapped) {
        free(x);
        return;
    }
    free(x->trips);
    free(x->stops);
    free(x->text);
    free(x);
}

/* The texts with the names of `language` (translations.h; NULL names: the
 * feed's own). */
static departure_texts *derive_texts_in(const dataset *ds, const dataset_translations *names, int language,
                                        char *err, size_t errlen)
{
    _Static_assert(sizeof(trip_row) == 64, "a trip_row is one cache line");
    dataset_counts counts;
    dataset_get_counts(ds, &counts);
    text_buf t = {0};
    departure_texts *x = calloc(1, sizeof *x);
    if (!x)
        goto fail;
    x->ntrips = counts.trips;
    x->nstops = counts.stops;
    x->names = names;
    x->language = language;
    if (!(x->trips = aligned_alloc(64, (x->ntrips ? x->ntrips : 1) * sizeof *x->trips)) ||
        !(x->stops = calloc(x->nstops ? x->nstops : 1, sizeof *x->stops)))
        goto fail;
    for (uint32_t i = 0; i < x->nstops; i++) {
        stop_info st;
        dataset_stop(ds, i, &st);
        st.name = translated(names, language, TRANSLATED_STOP_NAME, i, st.name);
        char *p = text_reserve(&t, TEXT_LITERAL_BYTES + string_room(st.id) + string_room(st.name));
        if (!p)
            goto fail;
        size_t head_len;
        char *q = put_stop_texts(p, st.id, st.name, &head_len);
        x->stops[i] = (stop_text){(uint32_t)t.len, (uint32_t)head_len, (uint32_t)((size_t)(q - p) - head_len)};
        t.len += (size_t)(q - p);
    }
    /* (reserving nothing allocates the slack even for a feed with no stops
     * and no trips) */
    if (derive_trips(ds, names, language, x, &t) != 0 || !text_reserve(&t, 0))
        goto fail;
    memset(t.buf + t.len, 0, ROW_TEXT_SLACK);
    x->text = t.buf;
    x->text_len = t.len + ROW_TEXT_SLACK;
    return x;
fail:
    free(t.buf);
    release_texts(x);
    snprintf(err, errlen, "out of memory for the departure rows' texts (or they would pass 4 GB)");
    return NULL;
}

static void *derive_texts(const dataset *ds, char *err, size_t errlen)
{
    return derive_texts_in(ds, NULL, 0, err, errlen);
}

/* The texts as a phone keeps them (dataset_extension's file): a 64-byte
 * head with the counts, the trips' rows (64-byte aligned where the file is
 * mapped), the stops', then the text with its slack. A phone then answers
 * its first departures without the 4 ms of deriving them (Brooklyn). */
typedef struct texts_file_head {
    uint32_t ntrips, nstops;
    uint64_t text_len;
    uint8_t pad[48];
} texts_file_head;
_Static_assert(sizeof(texts_file_head) == 64, "the trips' rows stay 64-byte aligned");

static size_t stops_room(uint32_t nstops) { return ((size_t)nstops * sizeof(stop_text) + 63) / 64 * 64; }

static int save_texts(const void *derived, int fd)
{
    const departure_texts *x = derived;
    texts_file_head h = {x->ntrips, x->nstops, x->text_len, {0}};
    static const char zeros[64];
    size_t stop_bytes = (size_t)x->nstops * sizeof(stop_text);
    return fd_write_all(fd, &h, sizeof h) == 0 &&
                   fd_write_all(fd, x->trips, (size_t)x->ntrips * sizeof(trip_row)) == 0 &&
                   fd_write_all(fd, x->stops, stop_bytes) == 0 &&
                   fd_write_all(fd, zeros, stops_room(x->nstops) - stop_bytes) == 0 &&
                   fd_write_all(fd, x->text, x->text_len) == 0
               ? 0
               : -1;
}

static void *view_texts(const dataset *ds, const void *bytes, size_t len)
{
    if (len < sizeof(texts_file_head) || ((uintptr_t)bytes & 63) != 0)
        return NULL;
    texts_file_head h;
    memcpy(&h, bytes, sizeof h);
    dataset_counts counts;
    dataset_get_counts(ds, &counts);
    size_t need = sizeof h + (size_t)h.ntrips * sizeof(trip_row) + stops_room(h.nstops);
    if (h.ntrips != counts.trips || h.nstops != counts.stops || h.text_len < ROW_TEXT_SLACK ||
        h.text_len > UINT32_MAX || len != need + h.text_len)
        return NULL;
    departure_texts *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    const char *p = bytes;
    x->trips = (trip_row *)(void *)(p + sizeof h);
    x->stops = (stop_text *)(void *)(p + sizeof h + (size_t)h.ntrips * sizeof(trip_row));
    x->text = (char *)(p + need);
    x->text_len = (size_t)h.text_len;
    x->ntrips = h.ntrips;
    x->nstops = h.nstops;
    x->mapped = true;
    return x;
}

static const dataset_extension departure_texts_extension = {
    "departure rows' texts", derive_texts, release_texts, "departure-texts", save_texts, view_texts,
};

int departure_json_prepare(dataset *ds, char *err, size_t errlen)
{
    return dataset_extension_get(ds, &departure_texts_extension, err, errlen) ? 0 : -1;
}

/* The texts in the dataset's other languages, each derived on the first
 * request that asks for it (at most TRANSLATION_LANGUAGES_MAX of them), so that
 * a dataset answered only in its own language never derives one. */
typedef struct translated_texts {
    pthread_mutex_t lock;
    departure_texts *_Atomic by_language[TRANSLATION_LANGUAGES_MAX + 1];
} translated_texts;

static void *derive_translated(const dataset *ds, char *err, size_t errlen)
{
    (void)ds;
    translated_texts *x = calloc(1, sizeof *x);
    if (!x || pthread_mutex_init(&x->lock, NULL) != 0) {
        free(x);
        snprintf(err, errlen, "out of memory for the translated departure rows' texts");
        return NULL;
    }
    return x;
}

static void release_translated(void *derived)
{
    translated_texts *x = derived;
    if (!x)
        return;
    for (int l = 0; l <= TRANSLATION_LANGUAGES_MAX; l++)
        release_texts(atomic_load_explicit(&x->by_language[l], memory_order_relaxed));
    pthread_mutex_destroy(&x->lock);
    free(x);
}

static const dataset_extension translated_texts_extension = {
    "translated departure rows' texts", derive_translated, release_translated, NULL, NULL, NULL,
};

static const departure_texts *texts_for(dataset *ds, const dataset_translations *names, int language, char *err,
                                        size_t errlen)
{
    if (!names || language < 1 || language > TRANSLATION_LANGUAGES_MAX)
        return dataset_extension_get(ds, &departure_texts_extension, err, errlen);
    translated_texts *all = dataset_extension_get(ds, &translated_texts_extension, err, errlen);
    if (!all)
        return NULL;
    departure_texts *x = atomic_load_explicit(&all->by_language[language], memory_order_acquire);
    if (x)
        return x;
    pthread_mutex_lock(&all->lock);
    x = atomic_load_explicit(&all->by_language[language], memory_order_relaxed);
    if (!x && (x = derive_texts_in(ds, names, language, err, errlen)))
        atomic_store_explicit(&all->by_language[language], x, memory_order_release);
    pthread_mutex_unlock(&all->lock);
    return x;
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
 * "2026-11-21","departure":" (or "arrival":"); 25 bytes (2026-11-21T18:15:00-05:00). */
#define INSTANT_AT 26
#define ARR_INSTANT_AT 24
#define EVENT_INSTANT_AT(arrival) ((arrival) ? ARR_INSTANT_AT : INSTANT_AT)
#define INSTANT_LEN 25

/* The UTC offset in force over [from, until), kept over a board's rows:
 * their predictions seldom cross a transition, so most rows skip the
 * search among the transitions (a few dependent, unpredictable branches a
 * row). Empty to begin with: {1, 0, 0}. */
typedef struct offset_span {
    int64_t from, until;
    int32_t offset;
} offset_span;

static inline int32_t offset_at(const dataset *ds, offset_span *span, int64_t instant)
{
    if (instant < span->from || instant >= span->until)
        span->offset = dataset_utc_offset_span(ds, instant, &span->from, &span->until);
    return span->offset;
}

/* 2026-11-21T18:17:00-05:00 for the predicted instant of a row whose
 * scheduled instant text is `sched_text`, when the prediction falls on
 * another local day than the schedule or under another UTC offset: the
 * date, time and offset composed. */
static __attribute__((noinline)) char *put_predicted_composed(char *p, const dataset *ds, offset_span *span,
                                                             const departure *d, int64_t instant,
                                                             const char *sched_text)
{
    int32_t offset = offset_at(ds, span, instant);
    int64_t local = instant + offset;
    int64_t day = floor_div(local, 86400);
    char text[11];
    format_date((int32_t)day, text);
    memcpy(p, text, 10);
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

/* The predicted instant's text, for a row scheduled at `sched_text`,
 * `sched_sod` seconds into its local day, and predicted delay_s later. When
 * the prediction falls on the same local day under the same UTC offset
 * (nearly always), it is the scheduled text with the hours, minutes and
 * seconds written over. */
static inline __attribute__((always_inline)) char *put_predicted(char *p, const dataset *ds, offset_span *span,
                                                                 const departure *d, int32_t delay_s,
                                                                 const char *sched_text, uint32_t sched_sod)
{
    int64_t instant = d->instant + delay_s;
    int64_t sod = (int64_t)sched_sod + delay_s;
    if (__builtin_expect((uint64_t)sod >= 86400 || offset_at(ds, span, instant) != d->utc_offset, 0))
        return put_predicted_composed(p, ds, span, d, instant, sched_text);
    uint32_t s = (uint32_t)sod, hours = s / 3600, rest = s % 3600;
    memcpy(p, sched_text, INSTANT_LEN);   /* 2026-11-21T18:15:00-05:00 */
    json_put_2digits(p + 11, hours);
    json_put_2digits(p + 14, rest / 60);
    json_put_2digits(p + 17, rest % 60);
    return p + INSTANT_LEN;
}

/* A delay in seconds: an int32_t, inline. */
static inline char *put_delay(char *p, int32_t v)
{
    if (v < 0) {
        *p++ = '-';
        return json_put_u32(p, (uint32_t)0 - (uint32_t)v);
    }
    return json_put_u32(p, (uint32_t)v);
}

/* The realtime members of a row whose scheduled instant text is at
 * `instant_text`, `sched_sod` seconds into its local day, from what the
 * board joined for it:
 *   ,"scheduled":"…","predicted":"…","delay_s":…,"realtime":true,"canceled":false
 * (null prediction and delay where the overlay predicts nothing, realtime
 * and canceled false where it does not know the row). */
static inline __attribute__((always_inline)) char *put_realtime(char *p, const dataset *ds, offset_span *span,
                                                                const rt_departure *r, const departure *d,
                                                                const char *instant_text, uint32_t sched_sod)
{
    p = JSON_PUT_LITERAL(p, ",\"scheduled\":\"");
    memcpy(p, instant_text, INSTANT_LEN);
    p += INSTANT_LEN;
    if (!r->realtime)
        return JSON_PUT_LITERAL(p, "\",\"predicted\":null,\"delay_s\":null,\"realtime\":false,\"canceled\":false");
    if (r->has_prediction) {
        p = JSON_PUT_LITERAL(p, "\",\"predicted\":\"");
        p = put_predicted(p, ds, span, d, r->delay_s, instant_text, sched_sod);
        p = JSON_PUT_LITERAL(p, "\",\"delay_s\":");
        p = put_delay(p, r->delay_s);
    } else {
        p = JSON_PUT_LITERAL(p, "\",\"predicted\":null,\"delay_s\":null");
    }
    if (__builtin_expect(r->canceled, 0))
        return JSON_PUT_LITERAL(p, ",\"realtime\":true,\"canceled\":true");
    return JSON_PUT_LITERAL(p, ",\"realtime\":true,\"canceled\":false");
}

/* ,"occupancy_status":"…" (from the stop's update, else the vehicle's) and
 * ,"vehicle":{…} (rt_vehicles.h wrote it) of a row of a trip instance
 * with a vehicle or an occupancy, and their bytes at most. */
#define ROW_OCCUPANCY_BYTES 64

static size_t vehicle_room(const board *b, const board_row *r)
{
    size_t len = 0;
    if (r->vehicle)
        rt_vehicles_json(b->vehicles, r->vehicle - 1, true, &len);
    return ROW_OCCUPANCY_BYTES + (r->vehicle ? 11 + len : 0);
}

static char *put_vehicle(char *p, const board *b, const board_row *r)
{
    const rt_vehicle *v = r->vehicle ? rt_vehicles_at(b->vehicles, r->vehicle - 1) : NULL;
    const char *occupancy = rt_occupancy_name(r->rt.occupancy ? r->rt.occupancy - 1 : v ? v->occupancy_status : -1);
    if (occupancy) {
        p = JSON_PUT_LITERAL(p, ",\"occupancy_status\":\"");
        size_t n = strlen(occupancy);
        memcpy(p, occupancy, n);
        p += n;
        *p++ = '"';
    }
    if (v) {
        size_t len;
        const char *json = rt_vehicles_json(b->vehicles, r->vehicle - 1, true, &len);
        p = JSON_PUT_LITERAL(p, ",\"vehicle\":");
        memcpy(p, json, len);
        p += len;
    }
    return p;
}

/* ------------------------------------------------------------ realtime instances
 * What the feed says of one trip instance beyond its times: a platform
 * change (the row's ,"assigned_stop":{…}, where the vehicle serves it
 * instead of the row's stop_id) and TripProperties' headsign in place of
 * the trip's (the middle text with its headsign replaced). Both are rare:
 * a row reads nothing of them unless its look-up said so. */

/* A latitude or longitude as json_double writes it with 6 decimals. */
static char *put_coord(char *p, double v)
{
    char tmp[48];
    int n = snprintf(tmp, sizeof tmp, "%.6f", v);
    if (n <= 0 || (size_t)n >= sizeof tmp)
        return JSON_PUT_LITERAL(p, "null");
    size_t len = (size_t)n;
    while (len > 0 && tmp[len - 1] == '0')
        len--;
    if (len > 0 && tmp[len - 1] == '.')
        len--;
    if (len == 2 && tmp[0] == '-' && tmp[1] == '0')
        return JSON_PUT_LITERAL(p, "0");
    return json_put_bytes(p, tmp, len);
}

/* The bytes of a row's assigned stop at most. */
static size_t assigned_stop_room(const dataset *ds, const departure_texts *x, uint32_t stop)
{
    stop_info si;
    dataset_stop(ds, stop, &si);
    return x->stops[stop].head_len + x->stops[stop].tail_len + string_room(si.platform_code) + 128;
}

/* ,"assigned_stop":{"id":…,"name":…,"platform_code":…,"lat":…,"lon":…}: the
 * id and (translated) name taken from the stop's own texts,
 *   {"stop_id":"…","trip_id":   and   ,"stop_name":"…","distance_m":  */
static char *put_assigned_stop(char *p, const dataset *ds, const departure_texts *x, uint32_t stop)
{
    const stop_text *st = &x->stops[stop];
    const char *head = x->text + st->off, *tail = head + st->head_len;
    stop_info si;
    dataset_stop(ds, stop, &si);
    p = JSON_PUT_LITERAL(p, ",\"assigned_stop\":{\"id\":");
    p = json_put_bytes(p, head + sizeof "{\"stop_id\":" - 1,
                       st->head_len - (sizeof "{\"stop_id\":" - 1) - (sizeof ",\"trip_id\":" - 1));
    p = JSON_PUT_LITERAL(p, ",\"name\":");
    p = json_put_bytes(p, tail + sizeof ",\"stop_name\":" - 1,
                       st->tail_len - (sizeof ",\"stop_name\":" - 1) - (sizeof ",\"distance_m\":" - 1));
    p = JSON_PUT_LITERAL(p, ",\"platform_code\":");
    p = si.platform_code[0] ? put_cstr(p, si.platform_code) : JSON_PUT_LITERAL(p, "null");
    p = JSON_PUT_LITERAL(p, ",\"lat\":");
    p = put_coord(p, si.lat);
    p = JSON_PUT_LITERAL(p, ",\"lon\":");
    p = put_coord(p, si.lon);
    *p++ = '}';
    return p;
}

/* The first occurrence of needle[0..n) in text[0..len), or NULL. */
static const char *find_bytes(const char *text, size_t len, const char *needle, size_t n)
{
    for (size_t i = 0; i + n <= len; i++)
        if (text[i] == needle[0] && memcmp(text + i, needle, n) == 0)
            return text + i;
    return NULL;
}

/* A trip's middle text with `headsign` in place of its own. */
static char *put_middle_headsign(char *p, const char *middle, size_t len, const char *headsign)
{
    static const char key[] = ",\"headsign\":", next[] = ",\"wheelchair_accessible\":";
    /* inside the route's strings a quote is escaped: the first match is the member */
    const char *h = find_bytes(middle, len, key, sizeof key - 1);
    const char *w = h ? find_bytes(h, len - (size_t)(h - middle), next, sizeof next - 1) : NULL;
    if (!h || !w)
        return json_put_bytes(p, middle, len);
    p = json_put_bytes(p, middle, (size_t)(h - middle) + sizeof key - 1);
    p = put_cstr(p, headsign);
    return json_put_bytes(p, w, len - (size_t)(w - middle));
}

/* ,"alerts":["id",...] of a row that shows n > 0 alerts, and its bytes. */
static size_t alerts_room(const alert_marks *m, uint32_t row, uint32_t n)
{
    size_t bytes = 12;   /* ,"alerts":[] */
    for (uint32_t i = 0; i < n; i++)
        bytes += strlen(alert_marks_row_id(m, row, i)) + 3;
    return bytes;
}

static char *put_alerts(char *p, const alert_marks *m, uint32_t row, uint32_t n)
{
    p = JSON_PUT_LITERAL(p, ",\"alerts\":[");
    for (uint32_t i = 0; i < n; i++) {
        const char *id = alert_marks_row_id(m, row, i);   /* plain: alert_id_valid */
        size_t len = strlen(id);
        if (i)
            *p++ = ',';
        *p++ = '"';
        memcpy(p, id, len);
        p += len;
        *p++ = '"';
    }
    *p++ = ']';
    return p;
}

/* The part of a row from its service date on, the same for every row:
 *   "2026-11-21","departure":"…","departure_secs":…,"stop_sequence":…
 * (an arrival's "arrival":"…","arrival_secs":…) and near a point
 * ,"stop_name":"…","distance_m":…; *local_sod is the instant's second of
 * its local day. */
static inline __attribute__((always_inline)) char *put_times_and_tail(char *p, const char *text,
                                                                      const stop_text *st, const departure *d,
                                                                      row_texts *texts, bool near_point,
                                                                      bool arrival, uint32_t *local_sod)
{
    p = put_dates_and_instant(p, texts, d->service_date, d->instant, d->utc_offset, arrival, local_sod);
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
 * A trip the realtime feed added (ADDED, NEW, DUPLICATED, REPLACEMENT) has
 * no trip_row, middle text or schedule: its row is composed from what the
 * board joined (row.added), member for member in the order of the others,
 * its headsign TripProperties' (or the scheduled trip's), with `departure`
 * the feed's time and
 *   ,"scheduled":null,"predicted":"<departure>","delay_s":null,"realtime":true,"canceled":false,"added":true,
 *   "trip_relationship":"NEW"
 * where a call's time is the schedule's (a REPLACEMENT's NO_DATA call, a
 * copy's stop no update predicts: row.rt.has_prediction false) `scheduled`
 * is the time and `predicted` null; a skipped call's row is canceled. */

#define ADDED_REALTIME_BYTES 180

static const char *relationship_name(rt_trip_relationship r)
{
    switch (r) {
    case RT_TRIP_NEW: return "NEW";
    case RT_TRIP_DUPLICATED: return "DUPLICATED";
    case RT_TRIP_REPLACEMENT: return "REPLACEMENT";
    default: return "ADDED";
    }
}

const char *departure_json_added_headsign(const dataset *ds, const dataset_translations *names, int language,
                                          const rt_added_trip *a)
{
    if (!a->headsign || !names || language < 1)
        return a->headsign;
    if (a->source_trip_id) {
        uint32_t trip = dataset_find_trip(ds, a->source_trip_id, strlen(a->source_trip_id));
        if (trip != QUERY_NONE) {
            trip_info tr;
            dataset_trip(ds, trip, &tr);
            if (tr.headsign && strcmp(tr.headsign, a->headsign) == 0)
                return translated(names, language, TRANSLATED_TRIP_HEADSIGN, trip, a->headsign);
        }
    }
    return translated_text(names, language, TRANSLATED_TRIP_HEADSIGN, a->headsign);
}

/* The route and headsign an ADDED trip's row shows, in the texts' language. */
static void added_names(const dataset *ds, const departure_texts *x, const rt_added_trip *a, route_info *rt,
                        const char **headsign)
{
    dataset_route(ds, a->route, rt);
    rt->short_name = translated(x->names, x->language, TRANSLATED_ROUTE_SHORT_NAME, a->route, rt->short_name);
    rt->long_name = translated(x->names, x->language, TRANSLATED_ROUTE_LONG_NAME, a->route, rt->long_name);
    *headsign = departure_json_added_headsign(ds, x->names, x->language, a);
}

static size_t added_row_room(const dataset *ds, const departure_texts *x, const rt_added_trip *a,
                             const stop_text *st, bool near_point)
{
    route_info rt;
    const char *headsign;
    added_names(ds, x, a, &rt, &headsign);
    return ROW_OWN_BYTES + st->head_len + (near_point ? st->tail_len : 0) + 6 * strlen(a->trip_id) + 2 +
           TEXT_LITERAL_BYTES + string_room(rt.id) + string_room(rt.short_name) + string_room(rt.long_name) +
           (headsign ? string_room(headsign) : 0) + ADDED_REALTIME_BYTES;
}

static char *put_added_row(char *p, const dataset *ds, const departure_texts *x, const rt_added_trip *a,
                           const rt_departure *said, const departure *d, row_texts *texts, bool near_point,
                           bool arrival)
{
    const stop_text *st = &x->stops[d->stop];
    route_info rt;
    const char *headsign;
    added_names(ds, x, a, &rt, &headsign);
    p = put_text(p, x->text + st->off, st->head_len);
    p = json_put_string(p, a->trip_id, strlen(a->trip_id));
    p = put_middle(p, &rt, headsign ? headsign : "", 0, 0);   /* the feed says nothing of its accessibility */
    const char *instant_text = p + EVENT_INSTANT_AT(arrival);
    uint32_t sod;
    p = put_times_and_tail(p, x->text, st, d, texts, near_point, arrival, &sod);
    p = said->has_prediction ? JSON_PUT_LITERAL(p, ",\"scheduled\":null,\"predicted\":\"")
                             : JSON_PUT_LITERAL(p, ",\"scheduled\":\"");
    memcpy(p, instant_text, INSTANT_LEN);
    p += INSTANT_LEN;
    p = said->has_prediction ? JSON_PUT_LITERAL(p, "\",\"delay_s\":null,\"realtime\":true")
                             : JSON_PUT_LITERAL(p, "\",\"predicted\":null,\"delay_s\":null,\"realtime\":true");
    p = said->canceled ? JSON_PUT_LITERAL(p, ",\"canceled\":true,\"added\":true,\"trip_relationship\":\"")
                       : JSON_PUT_LITERAL(p, ",\"canceled\":false,\"added\":true,\"trip_relationship\":\"");
    const char *rel = relationship_name(a->relationship);
    memcpy(p, rel, strlen(rel));
    p += strlen(rel);
    *p++ = '"';
    return p;
}

/* What a board hands the rows besides their departures (board.h), a
 * constant where put_rows and board_room are inlined: nothing (no realtime,
 * or an overlay of another dataset), each row's word of the overlay alone
 * (board.rts: realtime, and nothing else joined), or a board_row a row. */
typedef enum row_join { JOIN_NONE, JOIN_WORDS, JOIN_ROWS } row_join;

/* The bytes every row of the board needs at most; asks for every text the
 * rows copy before the first row needs one, so the misses overlap instead
 * of each row waiting for its own. A middle is a few lines long; its first
 * two hold all but the longest route names. */
static inline __attribute__((always_inline)) size_t board_room(const dataset *ds, const departure_texts *x,
                                                                const board *b, bool near_point, row_join join)
{
    const bool joined = join == JOIN_ROWS;
    const char *text = x->text;
    uint32_t last_stop = UINT32_MAX;
    size_t room = 0;
    for (uint32_t i = 0; i < b->count; i++)
        if (!joined || !b->rows[i].added)
            __builtin_prefetch(&x->trips[b->deps[i].trip]);
    /* every row's own bytes, the realtime members' included */
    size_t row_bytes = ROW_OWN_BYTES + TRIP_ROW_ID_MAX +
                       (join == JOIN_WORDS || b->realtime ? ROW_REALTIME_BYTES : 0);
    for (uint32_t i = 0; i < b->count; i++) {
        const departure *d = &b->deps[i];
        const board_row *r = joined ? &b->rows[i] : NULL;
        const stop_text *st = &x->stops[d->stop];
        if (joined && r->alerts)
            room += alerts_room(b->alerts, i, r->alerts);
        if (joined && r->added) {
            room += added_row_room(ds, x, r->added, st, near_point);
            if (r->rt.moved)
                room += assigned_stop_room(ds, x, r->assigned_stop);
            continue;
        }
        const trip_row *tr = &x->trips[d->trip];
        __builtin_prefetch(text + tr->middle_off);
        __builtin_prefetch(text + tr->middle_off + 64);
        /* an inline id is copied whole, TRIP_ROW_ID_MAX bytes, between its quotes */
        room += row_bytes + st->head_len + tr->middle_len + (near_point ? st->tail_len : 0);
        if (joined && (r->vehicle || r->rt.occupancy))
            room += vehicle_room(b, r);
        if (joined && r->rt.moved)
            room += assigned_stop_room(ds, x, r->assigned_stop);
        if (joined && r->properties && r->properties->headsign)
            room += string_room(r->properties->headsign);
        if (tr->id_len == TRIP_ROW_SPILLED) {
            trip_info ti;
            dataset_trip(ds, d->trip, &ti);
            room += string_room(ti.id);
        }
        if (d->stop != last_stop) {
            __builtin_prefetch(text + st->off);
            __builtin_prefetch(text + st->off + st->head_len);
            last_stop = d->stop;
        }
    }
    return room;
}

/* The rows into the reservation at p. `join` and `arrivals` are constants
 * where this is inlined: a board with nothing joined (no realtime, no
 * alerts: the common case) pays no test of its rows' joins, a board with
 * realtime alone reads each row's word of the overlay and nothing else, and
 * a board of departures none of its rows' kinds. */
static inline __attribute__((always_inline)) char *put_rows(char *p, const dataset *ds, const departure_texts *x,
                                                             const board *b, bool near_point, row_join join,
                                                             bool arrivals)
{
    const bool joined = join == JOIN_ROWS;
    static const rt_departure unknown = {0};
    row_texts dep_texts = {.service_day = INT32_MIN, .local_start = INT64_MIN, .offset = INT32_MIN};
    row_texts arr_texts = dep_texts;
    offset_span span = {1, 0, 0};   /* the predicted instants' UTC offset */
    const char *text = x->text;
    for (uint32_t i = 0; i < b->count; i++) {
        const departure *d = &b->deps[i];
        const board_row *r = joined ? &b->rows[i] : NULL;
        bool arrival = arrivals && d->arrival;
        row_texts *texts = arrival ? &arr_texts : &dep_texts;
        assert(d->stop < x->nstops);
        if (i)
            *p++ = ',';
        if (joined && r->added) {
            p = put_added_row(p, ds, x, r->added, &r->rt, d, texts, near_point, arrival);
            if (r->rt.moved)
                p = put_assigned_stop(p, ds, x, r->assigned_stop);
        } else {
            assert(d->trip < x->ntrips);
            const trip_row *tr = &x->trips[d->trip];
            const stop_text *st = &x->stops[d->stop];
            p = put_text(p, text + st->off, st->head_len);
            if (tr->id_len == TRIP_ROW_SPILLED) {
                trip_info ti;
                dataset_trip(ds, d->trip, &ti);
                p = put_cstr(p, ti.id);
            } else {
                *p++ = '"';
                memcpy(p, tr->id, TRIP_ROW_ID_MAX);
                p += tr->id_len;
                *p++ = '"';
            }
            if (joined && r->properties && r->properties->headsign)
                p = put_middle_headsign(p, text + tr->middle_off, tr->middle_len, r->properties->headsign);
            else
                p = put_text(p, text + tr->middle_off, tr->middle_len);
            const char *instant_text = p + EVENT_INSTANT_AT(arrival);
            uint32_t sod;
            p = put_times_and_tail(p, text, st, d, texts, near_point, arrival, &sod);
            if (join == JOIN_WORDS)
                p = put_realtime(p, ds, &span, &b->rts[i], d, instant_text, sod);
            else if (b->realtime)
                p = put_realtime(p, ds, &span, joined ? &r->rt : &unknown, d, instant_text, sod);
            if (joined && r->rt.moved)
                p = put_assigned_stop(p, ds, x, r->assigned_stop);
            if (joined && (r->vehicle || r->rt.occupancy))
                p = put_vehicle(p, b, r);
        }
        if (joined && r->alerts)
            p = put_alerts(p, b->alerts, i, r->alerts);
        *p++ = '}';
    }
    return p;
}

int departure_json_write_items(json_writer *w, dataset *ds, const board *b, bool near_point,
                               const dataset_translations *names, int language, char *err, size_t errlen)
{
    const departure_texts *x = texts_for(ds, names, language, err, errlen);
    if (!x)
        return -1;
    if (!b->count)
        return 0;
    /* one reservation for every row; the rows after the first write their
     * own commas */
    row_join join = b->rows ? JOIN_ROWS : b->rts ? JOIN_WORDS : JOIN_NONE;
    char *p = json_raw_begin(w, join == JOIN_ROWS    ? board_room(ds, x, b, near_point, JOIN_ROWS)
                                : join == JOIN_WORDS ? board_room(ds, x, b, near_point, JOIN_WORDS)
                                                     : board_room(ds, x, b, near_point, JOIN_NONE));
    if (!p)
        return 0;
    if (b->arrivals)
        p = join == JOIN_ROWS    ? put_rows(p, ds, x, b, near_point, JOIN_ROWS, true)
            : join == JOIN_WORDS ? put_rows(p, ds, x, b, near_point, JOIN_WORDS, true)
                                 : put_rows(p, ds, x, b, near_point, JOIN_NONE, true);
    else
        p = join == JOIN_ROWS    ? put_rows(p, ds, x, b, near_point, JOIN_ROWS, false)
            : join == JOIN_WORDS ? put_rows(p, ds, x, b, near_point, JOIN_WORDS, false)
                                 : put_rows(p, ds, x, b, near_point, JOIN_NONE, false);
    json_raw_end(w, p);
    return 0;
}
