/* departure_json.c — Departure objects written straight into the buffer.
 *
 * Why it exists: a /v1/departures body is 50 rows of 13 fields, about 17 KB.
 * Written with one json_writer call per key and per value (about 1,300
 * calls) it cost twice what the query did. Here a row is one reservation
 * followed by plain copies: keys are literals laid out in contract order,
 * each string is measured and escaped in one pass, and the date and offset
 * texts are formatted once per local day and per UTC offset, not per row.
 * The bytes are the same as the generic writer's; tests/api compares them
 * with the OpenAPI schema and the oracle.
 */
#include "departure_json.h"

#include <string.h>

#include "transit/gtfs.h"

/* Texts that repeat across the rows of one response. */
typedef struct row_texts {
    int32_t service_day;        /* service_date text below is for this day */
    char service_date[10];
    int64_t local_day;          /* local_date text below is for this day */
    char local_date[10];
    int32_t offset;             /* offset text below is for this UTC offset */
    char offset_text[6];        /* "-05:00" */
} row_texts;

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static char *put2(char *p, unsigned v)
{
    p[0] = (char)('0' + v / 10 % 10);
    p[1] = (char)('0' + v % 10);
    return p + 2;
}

static char *put_int(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return json_put_uint(p, (uint64_t)0 - (uint64_t)v);
    }
    return json_put_uint(p, (uint64_t)v);
}

/* "2026-11-21T18:15:00-05:00", quoted: as api_format_instant writes it. */
static char *put_instant(char *p, row_texts *t, int64_t instant, int32_t offset)
{
    int64_t local = instant + offset;
    int64_t day = floor_div(local, 86400);
    unsigned sod = (unsigned)(local - day * 86400);
    if (day != t->local_day) {
        char text[11];
        t->local_day = day;
        format_date((int32_t)day, text);
        memcpy(t->local_date, text, 10);
    }
    if (offset != t->offset) {
        int32_t a = offset < 0 ? -offset : offset;
        t->offset = offset;
        t->offset_text[0] = offset < 0 ? '-' : '+';
        put2(t->offset_text + 1, (unsigned)(a / 3600));
        t->offset_text[3] = ':';
        put2(t->offset_text + 4, (unsigned)(a / 60 % 60));
    }
    *p++ = '"';
    p = json_put_bytes(p, t->local_date, 10);
    *p++ = 'T';
    p = put2(p, sod / 3600);
    *p++ = ':';
    p = put2(p, sod / 60 % 60);
    *p++ = ':';
    p = put2(p, sod % 60);
    p = json_put_bytes(p, t->offset_text, 6);
    *p++ = '"';
    return p;
}

static char *put_service_date(char *p, row_texts *t, int32_t day)
{
    if (day != t->service_day) {
        char text[11];
        t->service_day = day;
        format_date(day, text);
        memcpy(t->service_date, text, 10);
    }
    *p++ = '"';
    p = json_put_bytes(p, t->service_date, 10);
    *p++ = '"';
    return p;
}

/* Rows repeat stops, routes and headsigns: a response of 50 rows near a
 * point typically names a dozen stops and a handful of routes. The first
 * row that writes one of them remembers where its bytes landed in the
 * output; later rows copy those bytes instead of measuring and escaping the
 * strings again. A small direct-mapped table per kind: a collision only
 * means writing the string afresh. */
#define MEMO_SLOTS 64

typedef struct memo_slot {
    uintptr_t key;              /* 0: empty */
    size_t off, len;            /* the fragment's bytes in w->buf */
} memo_slot;

typedef struct row_memo {
    memo_slot stop_id[MEMO_SLOTS], stop_name[MEMO_SLOTS], route[MEMO_SLOTS], headsign[MEMO_SLOTS];
} row_memo;

static memo_slot *memo_find(memo_slot *table, uintptr_t key)
{
    memo_slot *slot = &table[(key ^ (key >> 6)) % MEMO_SLOTS];
    return slot->key == key ? slot : NULL;
}

static void memo_keep(memo_slot *table, uintptr_t key, const json_writer *w, const char *from,
                      const char *to)
{
    memo_slot *slot = &table[(key ^ (key >> 6)) % MEMO_SLOTS];
    *slot = (memo_slot){key, (size_t)(from - w->buf), (size_t)(to - from)};
}

/* The literal bytes of a row with every value empty, plus room for the
 * numbers (20 digits and a sign each) and the two texts of fixed length. */
#define ROW_FIXED_BYTES 400

/* Room for a remembered fragment, or for escaping `s` afresh. */
static size_t room_for(const memo_slot *hit, const char *s, size_t *len)
{
    if (hit)
        return hit->len;
    *len = strlen(s);
    return 6 * *len + 2;
}

/* Copies a remembered fragment from earlier in the buffer. */
static char *put_memo(char *p, const json_writer *w, const memo_slot *hit)
{
    return json_put_bytes(p, w->buf + hit->off, hit->len);
}

/* A string value: the remembered fragment when there is one, else escaped
 * afresh and remembered under `key`. */
static char *put_memo_string(char *p, const json_writer *w, const memo_slot *hit, memo_slot *table,
                             uintptr_t key, const char *s, size_t len)
{
    if (hit)
        return put_memo(p, w, hit);
    char *from = p;
    p = json_put_string(p, s, len);
    memo_keep(table, key, w, from, p);
    return p;
}

void departure_json_write_items(json_writer *w, const dataset *ds, const departure *deps,
                                uint32_t count, bool near_point)
{
    row_texts texts = {.service_day = INT32_MIN, .local_day = INT64_MIN, .offset = INT32_MIN};
    row_memo memo;
    memset(&memo, 0, sizeof memo);
    /* Each row's trip id lies somewhere in the string pool, most likely out
     * of cache: ask for all of them first, so the misses overlap instead of
     * each row waiting for its own. */
    for (uint32_t i = 0; i < count; i++) {
        trip_info tr;
        dataset_trip(ds, deps[i].trip, &tr);
        __builtin_prefetch(tr.id);
    }
    for (uint32_t i = 0; i < count; i++) {
        const departure *d = &deps[i];
        stop_info st;
        trip_info tr;
        route_info rt;
        dataset_stop(ds, d->stop, &st);
        dataset_trip(ds, d->trip, &tr);
        uintptr_t stop_key = (uintptr_t)d->stop + 1, route_key = (uintptr_t)tr.route + 1;
        uintptr_t headsign_key = (uintptr_t)tr.headsign;
        const memo_slot *stop_id = memo_find(memo.stop_id, stop_key);
        const memo_slot *stop_name = near_point ? memo_find(memo.stop_name, stop_key) : NULL;
        const memo_slot *route = memo_find(memo.route, route_key);
        const memo_slot *headsign = memo_find(memo.headsign, headsign_key);
        size_t stop_id_len = 0, name_len = 0, trip_id_len = strlen(tr.id), headsign_len = 0;
        size_t route_id_len = 0, short_len = 0, long_len = 0;
        size_t room = ROW_FIXED_BYTES + 6 * trip_id_len;
        room += room_for(stop_id, st.id, &stop_id_len);
        if (near_point)
            room += room_for(stop_name, st.name, &name_len);
        room += room_for(headsign, tr.headsign, &headsign_len);
        if (!route) {
            dataset_route(ds, tr.route, &rt);
            room += room_for(NULL, rt.id, &route_id_len) + room_for(NULL, rt.short_name, &short_len) +
                    room_for(NULL, rt.long_name, &long_len);
        } else {
            room += route->len;
        }
        char *p = json_raw_begin(w, room);
        if (!p)
            return;
        p = JSON_PUT_LITERAL(p, "{\"stop_id\":");
        p = put_memo_string(p, w, stop_id, memo.stop_id, stop_key, st.id, stop_id_len);
        p = JSON_PUT_LITERAL(p, ",\"trip_id\":");
        p = json_put_string(p, tr.id, trip_id_len);
        if (route) {
            p = put_memo(p, w, route);
        } else {
            char *from = p;
            p = JSON_PUT_LITERAL(p, ",\"route_id\":");
            p = json_put_string(p, rt.id, route_id_len);
            p = JSON_PUT_LITERAL(p, ",\"route_short_name\":");
            p = json_put_string(p, rt.short_name, short_len);
            p = JSON_PUT_LITERAL(p, ",\"route_long_name\":");
            p = json_put_string(p, rt.long_name, long_len);
            p = JSON_PUT_LITERAL(p, ",\"route_type\":");
            p = put_int(p, rt.type);
            memo_keep(memo.route, route_key, w, from, p);
        }
        p = JSON_PUT_LITERAL(p, ",\"headsign\":");
        if (headsign) {
            p = put_memo(p, w, headsign);
        } else {
            char *from = p;
            if (headsign_len)
                p = json_put_string(p, tr.headsign, headsign_len);
            else
                p = JSON_PUT_LITERAL(p, "null");
            memo_keep(memo.headsign, headsign_key, w, from, p);
        }
        p = JSON_PUT_LITERAL(p, ",\"service_date\":");
        p = put_service_date(p, &texts, d->service_date);
        p = JSON_PUT_LITERAL(p, ",\"departure\":");
        p = put_instant(p, &texts, d->instant, d->utc_offset);
        p = JSON_PUT_LITERAL(p, ",\"departure_secs\":");
        p = json_put_uint(p, d->secs);
        p = JSON_PUT_LITERAL(p, ",\"stop_sequence\":");
        p = json_put_uint(p, d->stop_sequence);
        if (near_point) {
            p = JSON_PUT_LITERAL(p, ",\"stop_name\":");
            p = put_memo_string(p, w, stop_name, memo.stop_name, stop_key, st.name, name_len);
            p = JSON_PUT_LITERAL(p, ",\"distance_m\":");
            p = put_int(p, (int64_t)(d->distance_m + 0.5));
        }
        *p++ = '}';
        json_raw_end(w, p);
    }
}
