/* rt_vehicles.c — the served vehicle set: kept, matched, indexed, written once;
 * see include/transit/rt_vehicles.h.
 *
 * Layout: the vehicles sorted by key, their strings copied into one buffer,
 * their two JSON texts into another; beside them the matched ones sorted by
 * (trip, service date, start) and a bitmap over the dataset's trips, so a
 * departure row of a trip without a vehicle costs one bit test.
 */
#include "transit/rt_vehicles.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "transit/json_writer.h"
#include "transit/rfc3339.h"
#include "transit/rt_overlay.h"

typedef struct match {
    uint32_t trip;
    int32_t service_date;
    int32_t start_secs;        /* frequency-based instances; -1 otherwise */
    uint32_t vehicle;          /* index in vehicles[] */
    uint64_t timestamp;        /* the newest of two claiming one instance stays */
} match;

struct rt_vehicles {
    long refs;                 /* __atomic */
    rt_vehicle *vehicles;      /* by key */
    uint32_t count;
    uint32_t *routes;          /* per vehicle: route index or QUERY_NONE */
    char *strings;             /* the vehicles' strings */
    rt_carriage *carriages;    /* the vehicles' carriages, each vehicle's a run */
    char *json;                /* per vehicle: the row's object, then the list's */
    size_t *json_at;           /* 3 per vehicle: row start, list start, end */
    match *matches;            /* by trip, service date, start */
    uint32_t match_count;
    uint64_t *trip_bits;       /* over the dataset's trips */
    uint32_t ntrips;
    int64_t expires_at;
};

static const char *const stop_status_names[] = {"INCOMING_AT", "STOPPED_AT", "IN_TRANSIT_TO"};
static const char *const occupancy_names[] = {
    "EMPTY", "MANY_SEATS_AVAILABLE", "FEW_SEATS_AVAILABLE", "STANDING_ROOM_ONLY", "CRUSHED_STANDING_ROOM_ONLY",
    "FULL", "NOT_ACCEPTING_PASSENGERS", "NO_DATA_AVAILABLE", "NOT_BOARDABLE"};
static const char *const congestion_names[] = {"UNKNOWN_CONGESTION_LEVEL", "RUNNING_SMOOTHLY", "STOP_AND_GO",
                                               "CONGESTION", "SEVERE_CONGESTION"};
static const char *const trip_relationship_names[] = {"SCHEDULED", "ADDED", "UNSCHEDULED", "CANCELED",
                                                      NULL, "REPLACEMENT", "DUPLICATED", "DELETED", "NEW"};

const char *rt_vehicle_stop_status_name(int s) { return s >= 0 && s <= 2 ? stop_status_names[s] : NULL; }
const char *rt_occupancy_name(int o) { return o >= 0 && o <= RT_OCCUPANCY_MAX ? occupancy_names[o] : NULL; }
const char *rt_congestion_name(int c) { return c >= 0 && c <= 4 ? congestion_names[c] : NULL; }

static int compare_keys(const void *a, const void *b)
{
    const rt_vehicle *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c) return c;
    /* the newest first: it is the one kept */
    return x->timestamp > y->timestamp ? -1 : x->timestamp < y->timestamp;
}

static int compare_matches(const void *a, const void *b)
{
    const match *x = a, *y = b;
    if (x->trip != y->trip) return x->trip < y->trip ? -1 : 1;
    if (x->service_date != y->service_date) return x->service_date < y->service_date ? -1 : 1;
    if (x->start_secs != y->start_secs) return x->start_secs < y->start_secs ? -1 : 1;
    return x->timestamp > y->timestamp ? -1 : x->timestamp < y->timestamp;
}

/* ------------------------------------------------------------ strings */

static size_t strings_size(const rt_vehicle *v)
{
    const char *s[] = {v->entity_id, v->id, v->label, v->license_plate, v->trip_id,
                       v->route_id,  v->start_date, v->start_time, v->stop_id};
    size_t n = 0;
    for (size_t i = 0; i < sizeof s / sizeof *s; i++)
        n += s[i] ? strlen(s[i]) + 1 : 0;
    for (uint32_t i = 0; i < v->carriage_count; i++)
        n += (v->carriages[i].id ? strlen(v->carriages[i].id) + 1 : 0) +
             (v->carriages[i].label ? strlen(v->carriages[i].label) + 1 : 0);
    return n;
}

static const char *copy_string(char **at, const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *p = *at;
    memcpy(p, s, n);
    *at += n;
    return p;
}

/* v's strings into *at and its carriages into *cars, repointed. */
static void own_strings(rt_vehicle *v, char **at, rt_carriage **cars)
{
    if (v->carriage_count) {
        rt_carriage *c = *cars;
        for (uint32_t i = 0; i < v->carriage_count; i++) {
            c[i] = v->carriages[i];
            c[i].id = copy_string(at, c[i].id);
            c[i].label = copy_string(at, c[i].label);
        }
        v->carriages = c;
        *cars += v->carriage_count;
    }
    bool key_is_id = v->key == v->id;
    v->entity_id = copy_string(at, v->entity_id);
    v->id = copy_string(at, v->id);
    v->label = copy_string(at, v->label);
    v->license_plate = copy_string(at, v->license_plate);
    v->trip_id = copy_string(at, v->trip_id);
    v->route_id = copy_string(at, v->route_id);
    v->start_date = copy_string(at, v->start_date);
    v->start_time = copy_string(at, v->start_time);
    v->stop_id = copy_string(at, v->stop_id);
    v->key = key_is_id ? v->id : v->entity_id ? v->entity_id : "";
}

/* ------------------------------------------------------------ JSON */

static void kv_text(json_writer *w, const char *key, const char *s)
{
    json_key(w, key);
    json_str(w, s);
}

static void kv_enum(json_writer *w, const char *key, const char *name)
{
    json_key(w, key);
    if (name) json_string_n(w, name, strlen(name));
    else json_null_value(w);
}

static void kv_optional_int(json_writer *w, const char *key, bool has, int64_t value)
{
    json_key(w, key);
    if (has) json_int(w, value);
    else json_null_value(w);
}

static void kv_optional_double(json_writer *w, const char *key, bool has, double value, int decimals)
{
    json_key(w, key);
    if (has) json_double(w, value, decimals);
    else json_null_value(w);
}

/* The members a departure row's vehicle shows (the list's object starts with them). */
static void write_row_members(json_writer *w, const dataset *ds, const rt_vehicle *v)
{
    kv_text(w, "id", v->key);
    kv_text(w, "label", v->label);
    /* 5 decimals (about a metre): what a float of the feed holds */
    kv_optional_double(w, "lat", v->has_position, v->latitude, 5);
    kv_optional_double(w, "lon", v->has_position, v->longitude, 5);
    kv_optional_double(w, "bearing", v->has_bearing, v->bearing, 1);
    kv_optional_double(w, "speed_mps", v->has_speed, v->speed, 1);
    json_key(w, "timestamp");
    if (v->has_timestamp && v->timestamp <= 253402300799u) {   /* up to 9999-12-31 */
        char text[26];
        int64_t t = (int64_t)v->timestamp;
        rfc3339_format_instant(t, dataset_utc_offset(ds, t), text);
        json_string_n(w, text, strlen(text));
    } else {
        json_null_value(w);
    }
    kv_enum(w, "stop_status", rt_vehicle_stop_status_name(v->current_status));
    kv_text(w, "stop_id", v->stop_id);
    kv_optional_int(w, "stop_sequence", v->has_stop_sequence, v->current_stop_sequence);
    kv_enum(w, "occupancy_status", rt_occupancy_name(v->occupancy_status));
    kv_optional_int(w, "occupancy_percentage", v->occupancy_percentage >= 0, v->occupancy_percentage);
    if (!v->carriage_count)
        return;
    json_key(w, "carriages");   /* multi_carriage_details, when the feed gives them */
    json_array_begin(w);
    for (uint32_t i = 0; i < v->carriage_count; i++) {
        const rt_carriage *c = &v->carriages[i];
        json_object_begin(w);
        kv_text(w, "id", c->id);
        kv_text(w, "label", c->label);
        kv_enum(w, "occupancy_status", rt_occupancy_name(c->occupancy_status));
        kv_optional_int(w, "occupancy_percentage", c->occupancy_percentage >= 0, c->occupancy_percentage);
        kv_optional_int(w, "carriage_sequence", c->has_sequence, c->carriage_sequence);
        json_object_end(w);
    }
    json_array_end(w);
}

static void write_list_members(json_writer *w, const dataset *ds, const rt_vehicle *v, uint32_t route,
                               const match *m)
{
    kv_text(w, "license_plate", v->license_plate);
    kv_enum(w, "congestion_level", rt_congestion_name(v->congestion_level));
    kv_optional_double(w, "odometer_m", v->has_odometer, v->odometer, 1);
    json_key(w, "route_id");
    if (v->route_id) {
        json_str(w, v->route_id);
    } else if (route != QUERY_NONE) {
        route_info ri;
        dataset_route(ds, route, &ri);
        json_str(w, ri.id);
    } else {
        json_null_value(w);
    }
    json_key(w, "trip");
    if (v->trip_relationship < 0) {
        json_null_value(w);
        return;
    }
    json_object_begin(w);
    kv_text(w, "trip_id", v->trip_id);
    kv_text(w, "route_id", v->route_id);
    kv_optional_int(w, "direction_id", v->direction_id >= 0, v->direction_id);
    kv_text(w, "start_date", v->start_date);
    kv_text(w, "start_time", v->start_time);
    int rel = v->trip_relationship;
    kv_enum(w, "schedule_relationship",
            rel >= 0 && rel < (int)(sizeof trip_relationship_names / sizeof *trip_relationship_names)
                ? trip_relationship_names[rel] : NULL);
    json_kv_bool(w, "matched", m != NULL);
    json_key(w, "service_date");
    if (m) {
        char date[11];
        int64_t z = m->service_date;
        /* civil date of a day count (H. Hinnant's algorithm) */
        z += 719468;
        int64_t era = (z >= 0 ? z : z - 146096) / 146097;
        unsigned doe = (unsigned)(z - era * 146097);
        unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        unsigned mp = (5 * doy + 2) / 153;
        unsigned d = doy - (153 * mp + 2) / 5 + 1, mo = mp < 10 ? mp + 3 : mp - 9;
        int64_t y = (int64_t)yoe + era * 400 + (mo <= 2);
        char *p = date;
        p = json_put_2digits(p, (unsigned)(y / 100 % 100));
        p = json_put_2digits(p, (unsigned)(y % 100));
        *p++ = '-';
        p = json_put_2digits(p, mo);
        *p++ = '-';
        p = json_put_2digits(p, d);
        json_string_n(w, date, 10);
    } else {
        json_null_value(w);
    }
    json_object_end(w);
}

/* ------------------------------------------------------------ build */

/* The trip instance a vehicle serves, or false. */
static bool match_vehicle(const dataset *ds, const rt_vehicle *v, int64_t now, trip_stop_time *first,
                          match *out)
{
    if (!v->trip_id) return false;
    uint32_t trip = dataset_find_trip(ds, v->trip_id, strlen(v->trip_id));
    if (trip == QUERY_NONE) return false;
    uint32_t n = 0;
    query_error qerr;
    /* the first stop time is all the matching needs (n says how many there are) */
    if (trip_detail(ds, trip, first, 1, &n, &qerr) != QUERY_OK || n == 0) return false;
    trip_info ti;
    dataset_trip(ds, trip, &ti);
    int32_t start = -1, offset = 0;
    if (ti.frequency_based) {
        if (v->start_secs < 0) return false;
        start = v->start_secs;
        offset = start - (int32_t)first->departure_secs;
    }
    int32_t date = v->start_day;
    if (date == INT32_MIN)
        date = rt_nearest_service_date(ds, trip, (uint32_t)((int32_t)first->departure_secs + offset), now);
    else if (!trip_runs_on(ds, trip, date))
        return false;
    if (date == INT32_MIN) return false;
    *out = (match){trip, date, start, 0, v->timestamp};
    return true;
}

rt_vehicles *rt_vehicles_build(const rt_vehicle *vehicles, uint32_t n, const dataset *ds, int64_t now,
                               unsigned max_age_s, rt_vehicles_stats *stats)
{
    rt_vehicles_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    rt_vehicles *set = calloc(1, sizeof *set);
    if (!set) return NULL;
    set->refs = 1;
    set->expires_at = INT64_MAX;
    dataset_counts counts;
    dataset_get_counts(ds, &counts);
    set->ntrips = counts.trips;
    set->vehicles = malloc((n ? n : 1) * sizeof *set->vehicles);
    set->trip_bits = calloc((size_t)set->ntrips / 64 + 1, sizeof *set->trip_bits);
    if (!set->vehicles || !set->trip_bits) goto oom;
    /* kept: not stale */
    size_t bytes = 0, ncarriages = 0;
    for (uint32_t i = 0; i < n; i++) {
        const rt_vehicle *v = &vehicles[i];
        if (max_age_s && v->has_timestamp && now - (int64_t)(v->timestamp > (uint64_t)INT64_MAX ? 0 : v->timestamp) >
                                                 (int64_t)max_age_s) {
            stats->stale++;
            continue;
        }
        set->vehicles[set->count++] = *v;
    }
    qsort(set->vehicles, set->count, sizeof *set->vehicles, compare_keys);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < set->count; i++) {
        if (kept && strcmp(set->vehicles[kept - 1].key, set->vehicles[i].key) == 0) {
            stats->duplicate++;
            continue;
        }
        set->vehicles[kept++] = set->vehicles[i];
        bytes += strings_size(&set->vehicles[i]);
        ncarriages += set->vehicles[i].carriage_count;
    }
    set->count = kept;
    set->strings = malloc(bytes ? bytes : 1);
    set->routes = malloc((kept ? kept : 1) * sizeof *set->routes);
    set->json_at = malloc(((size_t)kept * 3 + 1) * sizeof *set->json_at);
    set->matches = malloc((kept ? kept : 1) * sizeof *set->matches);
    set->carriages = malloc((ncarriages ? ncarriages : 1) * sizeof *set->carriages);
    if (!set->strings || !set->routes || !set->json_at || !set->matches || !set->carriages) goto oom;
    char *at = set->strings;
    rt_carriage *cars = set->carriages;
    json_writer w;
    json_init(&w);
    trip_stop_time first;
    for (uint32_t i = 0; i < kept; i++) {
        rt_vehicle *v = &set->vehicles[i];
        own_strings(v, &at, &cars);
        if (max_age_s && v->has_timestamp && v->timestamp < (uint64_t)INT64_MAX / 2 &&
            (int64_t)v->timestamp + (int64_t)max_age_s + 1 < set->expires_at)
            set->expires_at = (int64_t)v->timestamp + (int64_t)max_age_s + 1;
        match m;
        bool matched = match_vehicle(ds, v, now, &first, &m);
        if (matched) {
            m.vehicle = i;
            set->matches[set->match_count++] = m;
            stats->matched++;
        } else if (v->trip_id) {
            stats->unknown_trip++;
        }
        uint32_t route = v->route_id ? dataset_find_route(ds, v->route_id, strlen(v->route_id)) : QUERY_NONE;
        if (route == QUERY_NONE && matched) {
            trip_info ti;
            dataset_trip(ds, m.trip, &ti);
            route = ti.route;
        }
        set->routes[i] = route;
        /* the row's object, then the list's (the same members and more);
         * each a value of its own, without the comma the writer would put
         * between two top-level values */
        set->json_at[3 * (size_t)i] = w.len;
        w.need_comma[0] = false;
        json_object_begin(&w);
        write_row_members(&w, ds, v);
        json_object_end(&w);
        set->json_at[3 * (size_t)i + 1] = w.len;
        w.need_comma[0] = false;
        json_object_begin(&w);
        write_row_members(&w, ds, v);
        write_list_members(&w, ds, v, route, matched ? &m : NULL);
        json_object_end(&w);
        set->json_at[3 * (size_t)i + 2] = w.len;
    }
    if (w.oom) {
        json_free(&w);
        goto oom;
    }
    set->json = w.buf;   /* taken over */
    stats->shown = kept;
    qsort(set->matches, set->match_count, sizeof *set->matches, compare_matches);
    uint32_t nm = 0;
    for (uint32_t i = 0; i < set->match_count; i++) {
        const match *m = &set->matches[i];
        if (nm && set->matches[nm - 1].trip == m->trip && set->matches[nm - 1].service_date == m->service_date &&
            set->matches[nm - 1].start_secs == m->start_secs)
            continue;   /* two vehicles on one instance: rows show the newest */
        set->matches[nm++] = *m;
        set->trip_bits[m->trip / 64] |= (uint64_t)1 << (m->trip % 64);
    }
    set->match_count = nm;
    return set;
oom:
    rt_vehicles_release(set);
    return NULL;
}

rt_vehicles *rt_vehicles_retain(rt_vehicles *v)
{
    if (v) __atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
    return v;
}

void rt_vehicles_release(rt_vehicles *v)
{
    if (!v || __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    free(v->vehicles);
    free(v->routes);
    free(v->strings);
    free(v->carriages);
    free(v->json);
    free(v->json_at);
    free(v->matches);
    free(v->trip_bits);
    free(v);
}

uint32_t rt_vehicles_count(const rt_vehicles *v) { return v ? v->count : 0; }
const rt_vehicle *rt_vehicles_at(const rt_vehicles *v, uint32_t i) { return &v->vehicles[i]; }
uint32_t rt_vehicles_route(const rt_vehicles *v, uint32_t i) { return v->routes[i]; }
int64_t rt_vehicles_expires_at(const rt_vehicles *v) { return v ? v->expires_at : INT64_MAX; }

const char *rt_vehicles_json(const rt_vehicles *v, uint32_t i, bool row, size_t *len)
{
    size_t a = v->json_at[3 * (size_t)i + (row ? 0 : 1)], b = v->json_at[3 * (size_t)i + (row ? 1 : 2)];
    *len = b - a;
    return v->json + a;
}

uint32_t rt_vehicles_after(const rt_vehicles *v, const char *key)
{
    uint32_t a = 0, b = v->count;
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        if (strcmp(v->vehicles[mid].key, key) <= 0) a = mid + 1;
        else b = mid;
    }
    return a;
}

long rt_vehicles_find_row(const rt_vehicles *v, const departure *d)
{
    if (!v || d->trip >= v->ntrips || !(v->trip_bits[d->trip / 64] >> (d->trip % 64) & 1)) return -1;
    uint32_t a = 0, b = v->match_count;
    while (a < b) {   /* the trip's first instance on the row's date */
        uint32_t mid = a + (b - a) / 2;
        const match *m = &v->matches[mid];
        if (m->trip < d->trip || (m->trip == d->trip && m->service_date < d->service_date)) a = mid + 1;
        else b = mid;
    }
    long found = -1;
    for (; a < v->match_count && v->matches[a].trip == d->trip && v->matches[a].service_date == d->service_date;
         a++)
        if (v->matches[a].start_secs < 0 || (uint32_t)v->matches[a].start_secs <= d->secs)
            found = v->matches[a].vehicle;
    return found;
}
