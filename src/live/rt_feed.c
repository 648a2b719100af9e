/* rt_feed.c — GTFS-Realtime protobuf in, rt_feed (include/transit/rt_feed.h) out.
 *
 * Why it exists: the one place that knows protobuf-c and the generated
 * gtfs-realtime.pb-c.h (built from proto/ into build/gen). It reads a
 * FeedMessage, checks the header and each entity, and copies what transitd
 * uses into one arena the rt_feed owns, one entity at a time (see
 * rt_feed_decode for why the top level is walked by hand).
 */
#include "transit/rt_feed.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gtfs-realtime.pb-c.h"
#include "live/rt_stop_pack.h"
#include "transit/rt_feed_wire.h"

/* ------------------------------------------------------------ arena */

typedef struct rt_arena_block {
    struct rt_arena_block *next;
    size_t used, size;
    _Alignas(max_align_t) unsigned char data[];
} rt_arena_block;

/* Strings that repeat across a feed (stop ids, dates, route ids) are kept
 * once: a 64 MB feed names a few thousand stops millions of times. The
 * table lives only while the feed is decoded. */
typedef struct rt_intern {
    const char **slots;        /* arena strings; NULL: empty */
    size_t mask, count;
} rt_intern;

struct rt_arena {
    rt_arena_block *head;
    rt_intern intern;
    bool pack_stops;           /* rt_feed_decode_packed: stop_time_updates kept packed */
    rt_stop_update *unpacked;  /* while decoding so: the entity at hand's, full width */
    uint32_t unpacked_cap;
};

/* The blocks are mapped from the system, not malloc'd: a feed's blocks go
 * back whole when it is freed, where malloc (its mmap threshold raised by
 * the frees of earlier feeds and overlays) would take them from the heap and
 * keep them there, so that a server taking in a 64 MB feed after another
 * grew by the size of one more feed each time. */
static rt_arena_block *block_map(size_t size)
{
    void *p = mmap(NULL, sizeof(rt_arena_block) + size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* n bytes aligned to `align` (a power of two), zeroed when `zero`. */
static void *arena_take(struct rt_arena *a, size_t n, size_t align, bool zero) {
    if (n == 0) n = 1;
    rt_arena_block *b = a->head;
    size_t at = b ? (b->used + align - 1) & ~(align - 1) : 0;
    if (!b || at > b->size || b->size - at < n) {
        size_t size = n > 262144 ? n : 262144;
        rt_arena_block *nb = block_map(size);
        if (!nb) return NULL;
        nb->next = b;
        nb->used = 0;
        nb->size = size;
        a->head = nb;
        b = nb;
        at = 0;
    }
    void *p = b->data + at;
    b->used = at + n;
    if (zero) memset(p, 0, n);
    return p;
}

static void *arena_alloc(struct rt_arena *a, size_t n) { return arena_take(a, n, _Alignof(max_align_t), true); }

static void arena_free(struct rt_arena *a) {
    if (!a) return;
    rt_arena_block *b = a->head;
    while (b) {
        rt_arena_block *next = b->next;
        munmap(b, sizeof *b + b->size);
        b = next;
    }
    free(a->intern.slots);
    free(a->unpacked);
    free(a);
}

/* A copy of s in the arena (no alignment: strings are read byte by byte);
 * NULL stays NULL. *oom is set when it cannot. */
static const char *arena_str(struct rt_arena *a, const char *s, bool *oom) {
    if (!s) return NULL;
    size_t n = strlen(s);
    char *p = arena_take(a, n + 1, 1, false);
    if (!p) {
        *oom = true;
        return NULL;
    }
    memcpy(p, s, n + 1);
    return p;
}

static uint64_t intern_hash(const char *s) {
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* arena_str for a string that repeats: the copy made the first time. */
static const char *arena_str_shared(struct rt_arena *a, const char *s, bool *oom) {
    if (!s) return NULL;
    rt_intern *t = &a->intern;
    if (t->count + 1 > (t->mask + 1) / 2) {   /* grow: at most half full */
        size_t cap = t->slots ? 2 * (t->mask + 1) : 1024;
        const char **slots = calloc(cap, sizeof *slots);
        if (!slots) {
            *oom = true;
            return NULL;
        }
        for (size_t i = 0; t->slots && i <= t->mask; i++) {
            if (!t->slots[i]) continue;
            size_t k = intern_hash(t->slots[i]) & (cap - 1);
            while (slots[k]) k = (k + 1) & (cap - 1);
            slots[k] = t->slots[i];
        }
        free(t->slots);
        t->slots = slots;
        t->mask = cap - 1;
    }
    size_t k = intern_hash(s) & t->mask;
    for (; t->slots[k]; k = (k + 1) & t->mask)
        if (strcmp(t->slots[k], s) == 0) return t->slots[k];
    const char *copy = arena_str(a, s, oom);
    if (copy) {
        t->slots[k] = copy;
        t->count++;
    }
    return copy;
}

/* The table is for the decode only. */
static void intern_done(struct rt_arena *a) {
    free(a->intern.slots);
    a->intern = (rt_intern){0};
    free(a->unpacked);
    a->unpacked = NULL;
    a->unpacked_cap = 0;
}

/* ------------------------------------------------------------ parsing helpers */

static bool is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int32_t days_from_civil(int y, int m, int d) {
    y -= m <= 2;
    int era = (y >= 0 ? y : y - 399) / 400;
    int yoe = y - era * 400;
    int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

bool rt_parse_date(const char *s, int32_t *days) {
    if (!s || strlen(s) != 8) return false;
    int v[8];
    for (int i = 0; i < 8; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v[i] = s[i] - '0';
    }
    int y = v[0] * 1000 + v[1] * 100 + v[2] * 10 + v[3];
    int m = v[4] * 10 + v[5];
    int d = v[6] * 10 + v[7];
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || m < 1 || m > 12 || d < 1) return false;
    int max = mdays[m - 1] + (m == 2 && is_leap(y));
    if (d > max) return false;
    *days = days_from_civil(y, m, d);
    return true;
}

bool rt_parse_time(const char *s, int32_t *secs) {
    if (!s) return false;
    size_t n = strlen(s);
    if (n != 7 && n != 8) return false;
    const char *p = s;
    int h = 0;
    size_t hl = n - 6;
    for (size_t i = 0; i < hl; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        h = h * 10 + (p[i] - '0');
    }
    p += hl;
    if (p[0] != ':' || p[3] != ':') return false;
    for (int i = 1; i < 6; i++) {
        if (i == 3) continue;
        if (p[i] < '0' || p[i] > '9') return false;
    }
    int m = (p[1] - '0') * 10 + (p[2] - '0');
    int sec = (p[4] - '0') * 10 + (p[5] - '0');
    if (m > 59 || sec > 59) return false;
    *secs = h * 3600 + m * 60 + sec;
    return true;
}

static void reject(rt_feed *f, const char *entity_id, const char *fmt, ...) {
    f->rejected++;
    if (f->first_rejection[0]) return;
    int n = snprintf(f->first_rejection, sizeof f->first_rejection, "entity \"%.40s\": ",
                     entity_id ? entity_id : "");
    if (n < 0 || (size_t)n >= sizeof f->first_rejection) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->first_rejection + n, sizeof f->first_rejection - (size_t)n, fmt, ap);
    va_end(ap);
}

/* false when the event's uncertainty is past RT_UNCERTAINTY_MAX (rt_event
 * keeps it in 28 bits). */
static bool event_fits(const TransitRealtime__TripUpdate__StopTimeEvent *e) {
    return !e || !e->has_uncertainty || (e->uncertainty >= -RT_UNCERTAINTY_MAX && e->uncertainty <= RT_UNCERTAINTY_MAX);
}

static void copy_event(rt_event *out, const TransitRealtime__TripUpdate__StopTimeEvent *e) {
    if (!e) return;
    out->present = true;
    out->has_delay = e->has_delay;
    out->delay = e->delay;
    out->has_time = e->has_time;
    out->time = e->time;
    out->has_uncertainty = e->has_uncertainty;
    out->uncertainty = e->uncertainty;
}

/* ------------------------------------------------------------ trip updates */

/* TripProperties into `out`: a DUPLICATED trip needs trip_id, start_date and
 * start_time there (its copy's identity and start); other trips take the
 * shape, headsign and short name. false: rejected (reason recorded) or *oom. */
static bool decode_trip_properties(rt_feed *f, const char *entity_id, rt_trip_relationship rel,
                                   const TransitRealtime__TripUpdate__TripProperties *p, rt_trip_update *out,
                                   bool *oom)
{
    struct rt_arena *a = f->arena;
    out->new_start_day = INT32_MIN;
    out->new_start_secs = -1;
    if (rel == RT_TRIP_DUPLICATED) {
        if (!p || !p->trip_id || !p->trip_id[0]) {
            reject(f, entity_id, "DUPLICATED trip without trip_properties.trip_id");
            return false;
        }
        if (!p->start_date || !rt_parse_date(p->start_date, &out->new_start_day)) {
            reject(f, entity_id, "DUPLICATED trip: trip_properties.start_date \"%.16s\" is not YYYYMMDD",
                   p->start_date ? p->start_date : "");
            return false;
        }
        if (!p->start_time || !rt_parse_time(p->start_time, &out->new_start_secs)) {
            reject(f, entity_id, "DUPLICATED trip: trip_properties.start_time \"%.16s\" is not HH:MM:SS",
                   p->start_time ? p->start_time : "");
            return false;
        }
        out->new_trip_id = arena_str(a, p->trip_id, oom);
        out->new_start_date = arena_str(a, p->start_date, oom);
        out->new_start_time = arena_str(a, p->start_time, oom);
    }
    if (p) {
        out->shape_id = arena_str(a, p->shape_id && p->shape_id[0] ? p->shape_id : NULL, oom);
        out->headsign = arena_str(a, p->trip_headsign, oom);
        out->short_name = arena_str(a, p->trip_short_name, oom);
    }
    return !*oom;
}

/* false: the entity is rejected (reason recorded) or memory ran out (*oom). */
static bool decode_trip_update(rt_feed *f, const char *entity_id,
                               const TransitRealtime__TripUpdate *tu, rt_trip_update *out,
                               bool *oom) {
    struct rt_arena *a = f->arena;
    const TransitRealtime__TripDescriptor *td = tu->trip;   /* required: unpack checked it */
    rt_trip_relationship rel =
        td->has_schedule_relationship ? (rt_trip_relationship)td->schedule_relationship
                                      : RT_TRIP_SCHEDULED;
    switch (rel) {
    case RT_TRIP_SCHEDULED: case RT_TRIP_ADDED: case RT_TRIP_UNSCHEDULED: case RT_TRIP_CANCELED:
    case RT_TRIP_REPLACEMENT: case RT_TRIP_DUPLICATED: case RT_TRIP_DELETED: case RT_TRIP_NEW:
        break;
    default:
        reject(f, entity_id, "unknown trip schedule_relationship %d", (int)rel);
        return false;
    }
    bool added = rel == RT_TRIP_ADDED || rel == RT_TRIP_NEW;
    if ((!td->trip_id || !td->trip_id[0]) && !added) {
        reject(f, entity_id, "trip_update without a trip_id");
        return false;
    }
    if (added && (!td->trip_id || !td->trip_id[0]) && (!td->route_id || !td->route_id[0])) {
        reject(f, entity_id, "%s trip without a trip_id or a route_id", rel == RT_TRIP_NEW ? "NEW" : "ADDED");
        return false;
    }
    if (!decode_trip_properties(f, entity_id, rel, tu->trip_properties, out, oom)) return false;
    out->start_day = INT32_MIN;
    out->start_secs = -1;
    if (td->start_date && !rt_parse_date(td->start_date, &out->start_day)) {
        reject(f, entity_id, "start_date \"%.16s\" is not YYYYMMDD", td->start_date);
        return false;
    }
    if (td->start_time && !rt_parse_time(td->start_time, &out->start_secs)) {
        reject(f, entity_id, "start_time \"%.16s\" is not HH:MM:SS", td->start_time);
        return false;
    }
    out->relationship = rel;
    out->direction_id = td->has_direction_id ? (td->direction_id <= 1 ? (int)td->direction_id : -1) : -1;
    out->entity_id = arena_str(a, entity_id, oom);
    out->trip_id = arena_str(a, td->trip_id, oom);
    out->route_id = arena_str_shared(a, td->route_id, oom);
    out->start_date = arena_str_shared(a, td->start_date, oom);
    out->start_time = arena_str_shared(a, td->start_time, oom);
    if (tu->vehicle) {
        out->vehicle_id = arena_str(a, tu->vehicle->id, oom);
        out->vehicle_label = arena_str(a, tu->vehicle->label, oom);
    }
    out->has_timestamp = tu->has_timestamp;
    out->timestamp = tu->timestamp;
    out->has_delay = tu->has_delay;
    out->delay = tu->delay;
    if (*oom) return false;

    if (tu->n_stop_time_update > UINT32_MAX / 2) {
        reject(f, entity_id, "too many stop_time_updates");
        return false;
    }
    uint32_t n = (uint32_t)tu->n_stop_time_update;
    rt_stop_update *stops = NULL;   /* full width: the feed's, or (packing) the arena's scratch */
    if (n && a->pack_stops) {
        if (n > a->unpacked_cap) {
            rt_stop_update *more = realloc(a->unpacked, sizeof *more * n);
            if (!more) {
                *oom = true;
                return false;
            }
            a->unpacked = more;
            a->unpacked_cap = n;
        }
        stops = a->unpacked;
        memset(stops, 0, sizeof *stops * n);
    } else if (n) {
        out->stops = stops = arena_alloc(a, sizeof *out->stops * n);
        if (!out->stops) {
            *oom = true;
            return false;
        }
    }
    out->stop_count = n;
    bool have_prev = false;
    uint32_t prev_seq = 0;
    for (uint32_t i = 0; i < n; i++) {
        const TransitRealtime__TripUpdate__StopTimeUpdate *u = tu->stop_time_update[i];
        rt_stop_update *s = &stops[i];
        if (!u->has_stop_sequence && (!u->stop_id || !u->stop_id[0])) {
            reject(f, entity_id, "stop_time_update %u has neither stop_sequence nor stop_id", i);
            return false;
        }
        if (u->has_stop_sequence) {
            if (have_prev && u->stop_sequence <= prev_seq) {
                reject(f, entity_id, "stop_time_updates are not sorted by stop_sequence (%u after %u)",
                       u->stop_sequence, prev_seq);
                return false;
            }
            have_prev = true;
            prev_seq = u->stop_sequence;
        }
        rt_stop_relationship srel = u->has_schedule_relationship
                                        ? (rt_stop_relationship)u->schedule_relationship
                                        : RT_STOP_SCHEDULED;
        if (srel > RT_STOP_UNSCHEDULED) {
            reject(f, entity_id, "unknown stop schedule_relationship %d", (int)srel);
            return false;
        }
        bool has_arr = u->arrival && (u->arrival->has_delay || u->arrival->has_time);
        bool has_dep = u->departure && (u->departure->has_delay || u->departure->has_time);
        if (srel == RT_STOP_SCHEDULED && !has_arr && !has_dep) {
            reject(f, entity_id, "SCHEDULED stop_time_update %u has no arrival or departure delay/time", i);
            return false;
        }
        if (!event_fits(u->arrival) || !event_fits(u->departure)) {
            reject(f, entity_id, "stop_time_update %u: uncertainty %d is out of range (at most %d seconds either way)",
                   i, event_fits(u->arrival) ? u->departure->uncertainty : u->arrival->uncertainty,
                   RT_UNCERTAINTY_MAX);
            return false;
        }
        s->has_stop_sequence = u->has_stop_sequence;
        s->stop_sequence = u->stop_sequence;
        s->stop_id = arena_str_shared(a, u->stop_id, oom);
        s->relationship = (uint8_t)srel;
        s->departure_occupancy = u->has_departure_occupancy_status &&
                                         (unsigned)u->departure_occupancy_status <= RT_OCCUPANCY_MAX
                                     ? (uint8_t)(u->departure_occupancy_status + 1)
                                     : 0;
        if (u->stop_time_properties && u->stop_time_properties->assigned_stop_id) {
            if (!u->stop_time_properties->assigned_stop_id[0]) {
                reject(f, entity_id, "stop_time_update %u: stop_time_properties.assigned_stop_id is empty", i);
                return false;
            }
            s->assigned_stop_id = arena_str(a, u->stop_time_properties->assigned_stop_id, oom);
        }
        copy_event(&s->arrival, u->arrival);
        copy_event(&s->departure, u->departure);
    }
    if (n && a->pack_stops && !*oom) {
        size_t size = rt_stop_pack_size(stops, n);
        uint8_t *packed = arena_take(a, size, 1, false);
        if (!packed) {
            *oom = true;
            return false;
        }
        rt_stop_pack(stops, n, packed);
        out->packed_stops = packed;
    }
    return !*oom;
}

/* ------------------------------------------------------------ alerts */

static bool copy_text(struct rt_arena *a, rt_text *out, const TransitRealtime__TranslatedString *t,
                      bool *oom) {
    if (!t || !t->n_translation) return true;
    if (t->n_translation > 1024) return false;
    out->items = arena_alloc(a, sizeof *out->items * t->n_translation);
    if (!out->items) {
        *oom = true;
        return false;
    }
    out->count = (uint32_t)t->n_translation;
    for (size_t i = 0; i < t->n_translation; i++) {
        out->items[i].text = arena_str(a, t->translation[i]->text, oom);
        out->items[i].language = arena_str(a, t->translation[i]->language, oom);
    }
    return !*oom;
}

static bool decode_alert(rt_feed *f, const char *entity_id, const TransitRealtime__Alert *al,
                         rt_alert *out, bool *oom) {
    struct rt_arena *a = f->arena;
    if (al->n_informed_entity == 0) {
        reject(f, entity_id, "alert without an informed_entity");
        return false;
    }
    if (al->n_informed_entity > 65536 || al->n_active_period > 65536) {
        reject(f, entity_id, "alert with too many informed entities or periods");
        return false;
    }
    out->entity_id = arena_str(a, entity_id, oom);
    out->cause = al->has_cause ? (int)al->cause : 1;
    out->effect = al->has_effect ? (int)al->effect : 8;
    out->severity = al->has_severity_level ? (int)al->severity_level : 1;
    if (al->n_active_period) {
        out->periods = arena_alloc(a, sizeof *out->periods * al->n_active_period);
        if (!out->periods) {
            *oom = true;
            return false;
        }
        out->period_count = (uint32_t)al->n_active_period;
        for (size_t i = 0; i < al->n_active_period; i++) {
            const TransitRealtime__TimeRange *r = al->active_period[i];
            out->periods[i].start = r->has_start ? r->start : 0;
            out->periods[i].end = r->has_end ? r->end : 0;
            if (r->has_start && r->has_end && r->end && r->end < r->start) {
                reject(f, entity_id, "active_period %zu ends before it starts", i);
                return false;
            }
        }
    }
    out->selectors = arena_alloc(a, sizeof *out->selectors * al->n_informed_entity);
    if (!out->selectors) {
        *oom = true;
        return false;
    }
    out->selector_count = (uint32_t)al->n_informed_entity;
    for (size_t i = 0; i < al->n_informed_entity; i++) {
        const TransitRealtime__EntitySelector *e = al->informed_entity[i];
        rt_selector *s = &out->selectors[i];
        const char *trip_id = e->trip ? e->trip->trip_id : NULL;
        if (!e->agency_id && !e->route_id && !e->has_route_type && !trip_id && !e->stop_id) {
            reject(f, entity_id, "informed_entity %zu selects nothing", i);
            return false;
        }
        s->agency_id = arena_str(a, e->agency_id, oom);
        s->route_id = arena_str(a, e->route_id, oom);
        s->stop_id = arena_str(a, e->stop_id, oom);
        s->trip_id = arena_str(a, trip_id, oom);
        s->trip_start_date = arena_str(a, e->trip ? e->trip->start_date : NULL, oom);
        s->route_type = e->has_route_type ? e->route_type : -1;
        s->direction_id = e->has_direction_id && e->direction_id <= 1 ? (int)e->direction_id : -1;
    }
    if (!copy_text(a, &out->url, al->url, oom) || !copy_text(a, &out->header, al->header_text, oom) ||
        !copy_text(a, &out->description, al->description_text, oom)) {
        if (!*oom) reject(f, entity_id, "too many translations");
        return false;
    }
    return !*oom;
}

/* ------------------------------------------------------------ feed */

static bool supported_version(const char *v) {
    return v && (strcmp(v, "1.0") == 0 || strncmp(v, "2.", 2) == 0);
}

/* One FeedEntity, unpacked: its vehicle, trip update or alert copied into f
 * (or skipped, counted, or rejected with its reason). */
static void decode_entity(rt_feed *f, const TransitRealtime__FeedEntity *e, bool *oom)
{
    if (e->is_deleted || (!e->trip_update && !e->alert && !e->vehicle)) {
        f->ignored++;
        return;
    }
    /* a vehicle may share its entity with its trip's update */
    if (e->vehicle && !e->alert) {
        rt_vehicle *v = &f->vehicles[f->vehicle_count];
        if (rt_vehicle_decode(f, e->id, e->vehicle, v, oom)) f->vehicle_count++;
        else memset(v, 0, sizeof *v);
        if (!e->trip_update) return;
    } else if (e->vehicle) {
        reject(f, e->id, "entity holds both a vehicle and an alert");
        return;
    }
    if (e->trip_update && e->alert) {
        reject(f, e->id, "entity holds both a trip_update and an alert");
        return;
    }
    if (e->trip_update) {
        rt_trip_update *t = &f->trip_updates[f->trip_update_count];
        if (decode_trip_update(f, e->id, e->trip_update, t, oom)) f->trip_update_count++;
        else memset(t, 0, sizeof *t);
    } else {
        rt_alert *al = &f->alerts[f->alert_count];
        if (decode_alert(f, e->id, e->alert, al, oom)) f->alert_count++;
        else memset(al, 0, sizeof *al);
    }
}

/* FeedMessage's field numbers (proto/gtfs-realtime.proto), and FeedEntity's
 * that say which kind an entity is. */
enum { FEED_HEADER = 1, FEED_ENTITY = 2, ENTITY_TRIP_UPDATE = 3, ENTITY_VEHICLE = 4, ENTITY_ALERT = 5 };

#define NOT_A_FEED "not a GTFS-Realtime FeedMessage (malformed or truncated protobuf, or a required field is missing)"

/* What the first walk over the top level found: the header's bytes (more
 * than one header field: merged, as protobuf concatenation merges), and how
 * many entities of each kind the arrays must hold. */
typedef struct feed_outline {
    const uint8_t *header;     /* the first header field's bytes */
    size_t header_len;
    size_t header_fields;
    size_t entities, trip_updates, vehicles, alerts;
} feed_outline;

/* Walks the top level of data (and each entity's own top level, for its
 * kind) without unpacking anything. false with err set when the wire format
 * is broken or a known field has the wrong wire type. */
static bool outline_feed(const uint8_t *data, size_t len, feed_outline *o, char *err, size_t errlen)
{
    char why[200];
    pb_wire_field fld;
    size_t pos = 0;
    int rc;
    *o = (feed_outline){0};
    while ((rc = pb_wire_next(data, len, 0, &pos, &fld, why, sizeof why)) == 1) {
        if (fld.number != FEED_HEADER && fld.number != FEED_ENTITY)
            continue;   /* an unknown field or an extension: skipped, as protobuf-c skips it */
        if (fld.wire_type != PB_WIRE_LEN) {
            snprintf(err, errlen, NOT_A_FEED ": field %u (%s) at byte %zu has wire type %u, not length-delimited",
                     fld.number, fld.number == FEED_HEADER ? "header" : "entity", fld.offset, fld.wire_type);
            return false;
        }
        if (fld.number == FEED_HEADER) {
            if (!o->header_fields++) {
                o->header = fld.data;
                o->header_len = fld.len;
            }
            continue;
        }
        bool kind[6] = {false};
        pb_wire_field inner;
        size_t ipos = 0;
        size_t base = (size_t)(fld.data - data);
        while ((rc = pb_wire_next(fld.data, fld.len, base, &ipos, &inner, why, sizeof why)) == 1)
            if (inner.number >= ENTITY_TRIP_UPDATE && inner.number <= ENTITY_ALERT)
                kind[inner.number] = true;
        if (rc < 0) {
            snprintf(err, errlen, NOT_A_FEED ": entity %zu: %s", o->entities, why);
            return false;
        }
        o->entities++;
        o->trip_updates += kind[ENTITY_TRIP_UPDATE];
        o->vehicles += kind[ENTITY_VEHICLE];
        o->alerts += kind[ENTITY_ALERT];
    }
    if (rc < 0) {
        snprintf(err, errlen, NOT_A_FEED ": %s", why);
        return false;
    }
    if (!o->header_fields) {
        snprintf(err, errlen, NOT_A_FEED ": no header, %zu bytes", len);
        return false;
    }
    if (o->entities > UINT32_MAX / 2) {
        snprintf(err, errlen, "too many entities");
        return false;
    }
    return true;
}

/* The header, unpacked: from its one field's bytes, or from all of its
 * fields concatenated (protobuf merges a message field given twice), each
 * of which must be a whole header on its own, as protobuf-c's unpack of the
 * whole message wants. NULL with err set when it cannot be. */
static TransitRealtime__FeedHeader *unpack_header(const uint8_t *data, size_t len, const feed_outline *o,
                                                  char *err, size_t errlen)
{
    TransitRealtime__FeedHeader *h = NULL;
    if (o->header_fields == 1) {
        h = transit_realtime__feed_header__unpack(NULL, o->header_len, o->header);
    } else {
        size_t total = 0, pos = 0;
        pb_wire_field fld;
        char why[200];
        while (pb_wire_next(data, len, 0, &pos, &fld, why, sizeof why) == 1) {
            if (fld.number != FEED_HEADER) continue;
            TransitRealtime__FeedHeader *alone = transit_realtime__feed_header__unpack(NULL, fld.len, fld.data);
            if (!alone) {
                snprintf(err, errlen, NOT_A_FEED ": the header at byte %zu is malformed or has no "
                         "gtfs_realtime_version", fld.offset);
                return NULL;
            }
            transit_realtime__feed_header__free_unpacked(alone, NULL);
            total += fld.len;
        }
        uint8_t *joined = malloc(total ? total : 1);
        if (!joined) {
            snprintf(err, errlen, "out of memory decoding the feed");
            return NULL;
        }
        size_t at = 0;
        pos = 0;
        while (pb_wire_next(data, len, 0, &pos, &fld, why, sizeof why) == 1)
            if (fld.number == FEED_HEADER) {
                memcpy(joined + at, fld.data, fld.len);
                at += fld.len;
            }
        h = transit_realtime__feed_header__unpack(NULL, total, joined);
        free(joined);
    }
    if (!h)
        snprintf(err, errlen, NOT_A_FEED ": the header is malformed or has no gtfs_realtime_version");
    return h;
}

/* Why the top level is walked by hand: protobuf-c has no streaming API.
 * transit_realtime__feed_message__unpack builds the tree of every entity
 * at once, several times the wire size (a 64 MB feed of 200,000 entities
 * took well over a gigabyte), before anything is copied out of it. A
 * FeedMessage's top level is only field 1 (the header) and repeated field
 * 2 (the entities), both length-delimited, so rt_feed_wire.c walks it, and
 * protobuf-c's generated unpack takes one FeedEntity at a time, which is
 * copied into the arena and freed: the peak is the feed's bytes, the arena
 * and one entity. The first walk only sizes the arrays (no entity is
 * unpacked twice). A malformed entity still fails the whole feed, as the
 * whole-message unpack did. */
/* Gives back to the system the whole pages of data[*released, upto) (data:
 * the caller's buffer of `len`, which is no longer read; nothing outside it
 * is touched), once they are more than a MiB; *released moves on. */
static void release_behind(uint8_t *data, size_t len, size_t *released, size_t upto)
{
    if (upto - *released < ((size_t)1 << 20)) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)data + *released + page - 1) & ~(page - 1);
    uintptr_t to = ((uintptr_t)data + upto) & ~(page - 1);
    if (upto <= len && to > from) madvise((void *)from, to - from, MADV_DONTNEED);
    *released = upto;
}

/* rt_feed_decode; with `consume`, data is the caller's to free unread
 * afterwards, and the pages of the entities decoded are given back as the
 * decode goes (see rt_feed_decode_consuming). */
static rt_feed *decode_feed(const uint8_t *data, size_t len, uint8_t *consume, bool pack_stops, char *err,
                           size_t errlen) {
    if (!data && len) {
        snprintf(err, errlen, "no data");
        return NULL;
    }
    if (!data) data = (const uint8_t *)"";
    feed_outline o;
    if (!outline_feed(data, len, &o, err, errlen))
        return NULL;
    TransitRealtime__FeedHeader *h = unpack_header(data, len, &o, err, errlen);
    if (!h)
        return NULL;
    rt_feed *f = NULL;
    if (!supported_version(h->gtfs_realtime_version)) {
        snprintf(err, errlen, "unsupported gtfs_realtime_version \"%.16s\" (1.0 or 2.x)",
                 h->gtfs_realtime_version);
        goto out;
    }
    if (h->has_incrementality &&
        h->incrementality != TRANSIT_REALTIME__FEED_HEADER__INCREMENTALITY__FULL_DATASET) {
        snprintf(err, errlen, "DIFFERENTIAL feeds are not supported (FULL_DATASET only)");
        goto out;
    }
    f = calloc(1, sizeof *f);
    if (!f || !(f->arena = calloc(1, sizeof *f->arena))) goto oom;
    f->arena->pack_stops = pack_stops;
    f->refs = 1;
    bool oom = false;
    f->version = arena_str(f->arena, h->gtfs_realtime_version, &oom);
    f->timestamp = h->has_timestamp ? h->timestamp : 0;
    if (o.trip_updates && !(f->trip_updates = arena_alloc(f->arena, sizeof *f->trip_updates * o.trip_updates)))
        goto oom;
    if (o.alerts && !(f->alerts = arena_alloc(f->arena, sizeof *f->alerts * o.alerts))) goto oom;
    if (o.vehicles && !(f->vehicles = arena_alloc(f->arena, sizeof *f->vehicles * o.vehicles))) goto oom;
    char why[200];
    pb_wire_field fld;
    size_t pos = 0, index = 0, released = 0;
    while (!oom && pb_wire_next(data, len, 0, &pos, &fld, why, sizeof why) == 1) {
        if (fld.number != FEED_ENTITY)
            continue;
        TransitRealtime__FeedEntity *e = transit_realtime__feed_entity__unpack(NULL, fld.len, fld.data);
        if (!e) {
            snprintf(err, errlen, NOT_A_FEED ": entity %zu at byte %zu is malformed or misses a required field",
                     index, fld.offset);
            goto out;
        }
        decode_entity(f, e, &oom);
        transit_realtime__feed_entity__free_unpacked(e, NULL);
        index++;
        if (consume) release_behind(consume, len, &released, pos);
    }
    if (oom) goto oom;
    intern_done(f->arena);
    transit_realtime__feed_header__free_unpacked(h, NULL);
    return f;
oom:
    snprintf(err, errlen, "out of memory decoding the feed");
out:
    rt_feed_free(f);
    transit_realtime__feed_header__free_unpacked(h, NULL);
    return NULL;
}

rt_feed *rt_feed_decode(const uint8_t *data, size_t len, char *err, size_t errlen)
{
    return decode_feed(data, len, NULL, false, err, errlen);
}

rt_feed *rt_feed_decode_consuming(uint8_t *data, size_t len, char *err, size_t errlen)
{
    return decode_feed(data, len, data, false, err, errlen);
}

rt_feed *rt_feed_decode_packed(uint8_t *data, size_t len, char *err, size_t errlen)
{
    return decode_feed(data, len, data, true, err, errlen);
}

rt_feed *rt_feed_retain(rt_feed *feed)
{
    if (feed) __atomic_add_fetch(&feed->refs, 1, __ATOMIC_RELAXED);
    return feed;
}

void rt_feed_free(rt_feed *feed) {
    if (!feed || __atomic_sub_fetch(&feed->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    arena_free(feed->arena);
    free(feed);
}

const char *rt_feed_add_string(rt_feed *feed, const char *s) {
    bool oom = false;
    const char *copy = arena_str(feed->arena, s, &oom);
    return oom ? NULL : copy;
}

/* ------------------------------------------------------------ for the other entity decoders */

void *rt_feed_alloc(rt_feed *f, size_t n) { return arena_alloc(f->arena, n); }

const char *rt_feed_strdup(rt_feed *f, const char *s, bool *oom) { return arena_str(f->arena, s, oom); }

void rt_feed_reject(rt_feed *f, const char *entity_id, const char *fmt, ...)
{
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    reject(f, entity_id, "%s", why);
}
