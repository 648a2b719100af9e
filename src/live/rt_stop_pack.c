/* rt_stop_pack.c — stop_time_updates as packed records; see rt_stop_pack.h.
 *
 * Also the readers' side of rt_feed.h: rt_trip_update_stops and
 * rt_trip_update_map_stop_ids work on either form of a trip update's
 * stops (an array, as tests and merges make them, or packed records).
 */
#include "live/rt_stop_pack.h"

#include <string.h>

enum {
    PACK_SEQUENCE = 1,       /* has_stop_sequence: a varint follows */
    PACK_REL_SHIFT = 1,      /* bits 1-2: the relationship (0..3) */
    PACK_STOP_ID = 8,
    PACK_ASSIGNED = 16,
    PACK_ARRIVAL = 32,       /* an event follows */
    PACK_DEPARTURE = 64,
    PACK_OCCUPANCY = 128,    /* a byte follows */
};
enum { EVENT_DELAY = 1, EVENT_TIME = 2, EVENT_UNCERTAINTY = 4 };

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Reads what put_varint wrote (the bytes are ours: no bounds to check). */
static const uint8_t *get_varint(const uint8_t *p, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t b = *p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
    }
    *v = x;
    return p;
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static int64_t unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

static size_t event_size(const rt_event *e)
{
    size_t n = 1;
    if (e->has_delay) n += varint_size(zigzag(e->delay));
    if (e->has_time) n += varint_size(zigzag(e->time));
    if (e->has_uncertainty) n += varint_size(zigzag(e->uncertainty));
    return n;
}

static uint8_t *put_event(uint8_t *p, const rt_event *e)
{
    *p++ = (uint8_t)((e->has_delay ? EVENT_DELAY : 0) | (e->has_time ? EVENT_TIME : 0) |
                     (e->has_uncertainty ? EVENT_UNCERTAINTY : 0));
    if (e->has_delay) p = put_varint(p, zigzag(e->delay));
    if (e->has_time) p = put_varint(p, zigzag(e->time));
    if (e->has_uncertainty) p = put_varint(p, zigzag(e->uncertainty));
    return p;
}

static const uint8_t *get_event(const uint8_t *p, rt_event *e)
{
    uint8_t flags = *p++;
    uint64_t v;
    e->present = true;
    if (flags & EVENT_DELAY) {
        p = get_varint(p, &v);
        e->has_delay = true;
        e->delay = (int32_t)unzigzag(v);
    }
    if (flags & EVENT_TIME) {
        p = get_varint(p, &v);
        e->has_time = true;
        e->time = unzigzag(v);
    }
    if (flags & EVENT_UNCERTAINTY) {
        p = get_varint(p, &v);
        e->has_uncertainty = true;
        e->uncertainty = (int32_t)unzigzag(v);
    }
    return p;
}

static uint8_t record_flags(const rt_stop_update *s)
{
    return (uint8_t)((s->has_stop_sequence ? PACK_SEQUENCE : 0) | (s->relationship & 3) << PACK_REL_SHIFT |
                     (s->stop_id ? PACK_STOP_ID : 0) | (s->assigned_stop_id ? PACK_ASSIGNED : 0) |
                     (s->arrival.present ? PACK_ARRIVAL : 0) | (s->departure.present ? PACK_DEPARTURE : 0) |
                     (s->departure_occupancy ? PACK_OCCUPANCY : 0));
}

size_t rt_stop_pack_size(const rt_stop_update *stops, uint32_t n)
{
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const rt_stop_update *s = &stops[i];
        total += 1 + (s->stop_id ? sizeof(char *) : 0) + (s->assigned_stop_id ? sizeof(char *) : 0) +
                 (s->has_stop_sequence ? varint_size(s->stop_sequence) : 0) + (s->departure_occupancy ? 1 : 0) +
                 (s->arrival.present ? event_size(&s->arrival) : 0) +
                 (s->departure.present ? event_size(&s->departure) : 0);
    }
    return total;
}

void rt_stop_pack(const rt_stop_update *stops, uint32_t n, uint8_t *out)
{
    for (uint32_t i = 0; i < n; i++) {
        const rt_stop_update *s = &stops[i];
        *out++ = record_flags(s);
        if (s->stop_id) {
            memcpy(out, &s->stop_id, sizeof s->stop_id);
            out += sizeof s->stop_id;
        }
        if (s->assigned_stop_id) {
            memcpy(out, &s->assigned_stop_id, sizeof s->assigned_stop_id);
            out += sizeof s->assigned_stop_id;
        }
        if (s->has_stop_sequence) out = put_varint(out, s->stop_sequence);
        if (s->departure_occupancy) *out++ = s->departure_occupancy;
        if (s->arrival.present) out = put_event(out, &s->arrival);
        if (s->departure.present) out = put_event(out, &s->departure);
    }
}

/* One record into s (zeroed first); returns what follows it. Where the ids
 * lie is given too (for rt_trip_update_map_stop_ids), NULL when absent. */
static const uint8_t *unpack_one(const uint8_t *in, rt_stop_update *s, const uint8_t **stop_id_at)
{
    *s = (rt_stop_update){0};
    uint8_t flags = *in++;
    *stop_id_at = NULL;
    if (flags & PACK_STOP_ID) {
        *stop_id_at = in;
        memcpy(&s->stop_id, in, sizeof s->stop_id);
        in += sizeof s->stop_id;
    }
    if (flags & PACK_ASSIGNED) {
        memcpy(&s->assigned_stop_id, in, sizeof s->assigned_stop_id);
        in += sizeof s->assigned_stop_id;
    }
    s->relationship = (uint8_t)(flags >> PACK_REL_SHIFT & 3);
    if (flags & PACK_SEQUENCE) {
        uint64_t v;
        in = get_varint(in, &v);
        s->has_stop_sequence = true;
        s->stop_sequence = (uint32_t)v;
    }
    if (flags & PACK_OCCUPANCY) s->departure_occupancy = *in++;
    if (flags & PACK_ARRIVAL) in = get_event(in, &s->arrival);
    if (flags & PACK_DEPARTURE) in = get_event(in, &s->departure);
    return in;
}

void rt_stop_unpack(const uint8_t *in, uint32_t n, rt_stop_update *out)
{
    const uint8_t *at;
    for (uint32_t i = 0; i < n; i++) in = unpack_one(in, &out[i], &at);
}

const rt_stop_update *rt_trip_update_stops(const rt_trip_update *tu, rt_stop_update *room)
{
    if (tu->stops || !tu->packed_stops) return tu->stops;
    rt_stop_unpack(tu->packed_stops, tu->stop_count, room);
    return room;
}

void rt_trip_update_map_stop_ids(rt_trip_update *tu, void (*fn)(void *ctx, const char **id), void *ctx)
{
    if (tu->stops || !tu->packed_stops) {
        for (uint32_t k = 0; tu->stops && k < tu->stop_count; k++) fn(ctx, &tu->stops[k].stop_id);
        return;
    }
    const uint8_t *in = tu->packed_stops;
    for (uint32_t k = 0; k < tu->stop_count; k++) {
        rt_stop_update s;
        const uint8_t *at;
        in = unpack_one(in, &s, &at);
        if (!at) continue;
        const char *id = s.stop_id;
        fn(ctx, &id);
        if (id) memcpy((uint8_t *)(uintptr_t)at, &id, sizeof id);   /* the feed's own bytes (packed by it) */
    }
}
