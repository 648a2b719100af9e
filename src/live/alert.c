/* alert.c — checks an alert body, makes its canonical JSON, applies merge
 * patches.
 *
 * Why it exists: see alert.h. jansson parses the body (duplicate keys are an
 * error) and builds the canonical object; nothing outside this file sees a
 * json_t. The canonical content always has every member, in one order:
 * active_period, informed_entity, cause, effect, severity_level, header_text,
 * description_text, url (the last two may be null). Times are written as
 * RFC 3339 in UTC; they are read as RFC 3339 with an offset or as Unix seconds
 * (GTFS-Realtime's own form).
 */
#include "transit/alert.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transit/alert_text.h"
#include "transit/rfc3339.h"
#include "transit/gtfs.h"

static const char *const CAUSES[] = {
    "UNKNOWN_CAUSE", "OTHER_CAUSE", "TECHNICAL_PROBLEM", "STRIKE", "DEMONSTRATION", "ACCIDENT",
    "HOLIDAY", "WEATHER", "MAINTENANCE", "CONSTRUCTION", "POLICE_ACTIVITY", "MEDICAL_EMERGENCY",
    NULL};
static const char *const EFFECTS[] = {
    "NO_SERVICE", "REDUCED_SERVICE", "SIGNIFICANT_DELAYS", "DETOUR", "ADDITIONAL_SERVICE",
    "MODIFIED_SERVICE", "OTHER_EFFECT", "UNKNOWN_EFFECT", "STOP_MOVED", "NO_EFFECT",
    "ACCESSIBILITY_ISSUE", NULL};
static const char *const SEVERITIES[] = {"UNKNOWN_SEVERITY", "INFO", "WARNING", "SEVERE", NULL};

/* A GTFS-RT time in JSON is at most 2^53 seconds; keep instants far from int64's ends. */
#define INSTANT_MAX ((int64_t)253402300799)   /* 9999-12-31T23:59:59Z */

/* ------------------------------------------------------------ errors */

static bool fail(alert_error *err, int status, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool fail(alert_error *err, int status, const char *pointer, const char *fmt, ...)
{
    err->status = status;
    snprintf(err->pointer, sizeof err->pointer, "%s", pointer);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->detail, sizeof err->detail, fmt, ap);
    va_end(ap);
    return false;
}

/* The JSON pointer of member `key` below `base` (RFC 6901 escapes). */
static void pointer_key(char *out, size_t cap, const char *base, const char *key)
{
    size_t o = (size_t)snprintf(out, cap, "%s/", base);
    for (const char *k = key; *k && o + 3 < cap; k++) {
        if (*k == '~' || *k == '/') {
            out[o++] = '~';
            out[o++] = *k == '~' ? '0' : '1';
        } else {
            out[o++] = *k;
        }
    }
    out[o < cap ? o : cap - 1] = '\0';
}

static void pointer_index(char *out, size_t cap, const char *base, size_t i)
{
    snprintf(out, cap, "%s/%zu", base, i);
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* ------------------------------------------------------------ checks */

/* Every member of object `obj` (at `base`) must be one of `allowed`. */
static bool only_members(json_t *obj, const char *base, const char *const *allowed,
                         alert_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strcmp(*a, key) == 0;
        if (!known) {
            char ptr[160];
            pointer_key(ptr, sizeof ptr, base, key);
            char list[256];
            size_t o = 0;
            list[0] = '\0';
            for (const char *const *a = allowed; *a && o < sizeof list; a++)
                o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", o ? ", " : "", *a);
            return fail(err, 422, ptr, "unknown member '%.60s' (allowed here: %s)", key, list);
        }
    }
    return true;
}

/* A string member that is present and not null, or NULL. Type errors set err. */
static bool get_string(json_t *obj, const char *base, const char *key, size_t max,
                       const char **out, alert_error *err)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return true;
    char ptr[160];
    pointer_key(ptr, sizeof ptr, base, key);
    if (!json_is_string(v))
        return fail(err, 422, ptr, "%s must be a string, not %s", key, json_kind(v));
    size_t len = json_string_length(v);
    if (len == 0 || len > max)
        return fail(err, 422, ptr, "%s must be 1 to %zu bytes long (got %zu)", key, max, len);
    *out = json_string_value(v);
    return true;
}

static bool get_enum(json_t *obj, const char *key, const char *const *names, const char *def,
                     const char **out, alert_error *err)
{
    const char *s;
    if (!get_string(obj, "", key, 64, &s, err))
        return false;
    if (!s) {
        *out = def;
        return true;
    }
    for (const char *const *n = names; *n; n++)
        if (strcmp(*n, s) == 0) {
            *out = *n;
            return true;
        }
    char ptr[160], list[400];
    pointer_key(ptr, sizeof ptr, "", key);
    size_t o = 0;
    for (const char *const *n = names; *n && o < sizeof list; n++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", o ? ", " : "", *n);
    return fail(err, 422, ptr, "%s '%.60s' is not one of %s", key, s, list);
}

/* An instant: RFC 3339 with an offset, or integer Unix seconds. */
static bool get_instant(json_t *obj, const char *base, const char *key, int64_t *out,
                        bool *given, alert_error *err)
{
    json_t *v = json_object_get(obj, key);
    *given = false;
    if (!v || json_is_null(v))
        return true;
    char ptr[160];
    pointer_key(ptr, sizeof ptr, base, key);
    if (json_is_integer(v)) {
        json_int_t t = json_integer_value(v);
        if (t < 0 || t > INSTANT_MAX)
            return fail(err, 422, ptr, "%s must be Unix seconds from 0 to %lld", key,
                        (long long)INSTANT_MAX);
        *out = (int64_t)t;
    } else if (json_is_string(v)) {
        int64_t local;
        bool has_offset;
        int32_t offset;
        if (rfc3339_parse(json_string_value(v), &local, &has_offset, &offset) != 0 ||
            !has_offset)
            return fail(err, 422, ptr,
                        "%s must be an RFC 3339 date-time with an offset, e.g. "
                        "2026-11-25T08:00:00Z (got '%.40s')",
                        key, json_string_value(v));
        *out = local - offset;
        if (*out < 0 || *out > INSTANT_MAX)
            return fail(err, 422, ptr, "%s is out of range", key);
    } else {
        return fail(err, 422, ptr, "%s must be a date-time string or Unix seconds, not %s", key,
                    json_kind(v));
    }
    *given = true;
    return true;
}

static bool get_small_int(json_t *obj, const char *base, const char *key, int min, int max,
                          int32_t *out, alert_error *err)
{
    json_t *v = json_object_get(obj, key);
    *out = -1;
    if (!v || json_is_null(v))
        return true;
    char ptr[160];
    pointer_key(ptr, sizeof ptr, base, key);
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return fail(err, 422, ptr, "%s must be an integer from %d to %d", key, min, max);
    *out = (int32_t)json_integer_value(v);
    return true;
}

/* Accumulates the strings of the entities, copied into the alert later. */
typedef struct parsed {
    json_t *content;          /* the canonical object being built */
    alert_period periods[ALERT_PERIODS_MAX];
    uint32_t nperiods;
    alert_entity entities[ALERT_ENTITIES_MAX];
    uint32_t nentities;
    size_t string_bytes;      /* of the entities' strings, NULs included */
} parsed;

static bool check_periods(json_t *arr, parsed *p, json_t *out, alert_error *err)
{
    if (!json_is_array(arr))
        return fail(err, 422, "/active_period", "active_period must be an array, not %s",
                    json_kind(arr));
    if (json_array_size(arr) > ALERT_PERIODS_MAX)
        return fail(err, 422, "/active_period", "at most %d active periods", ALERT_PERIODS_MAX);
    static const char *const allowed[] = {"start", "end", NULL};
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        char base[160];
        pointer_index(base, sizeof base, "/active_period", i);
        if (!json_is_object(v))
            return fail(err, 422, base, "an active period must be an object, not %s", json_kind(v));
        if (!only_members(v, base, allowed, err))
            return false;
        alert_period per = {INT64_MIN, INT64_MAX};
        bool has_start, has_end;
        if (!get_instant(v, base, "start", &per.start, &has_start, err) ||
            !get_instant(v, base, "end", &per.end, &has_end, err))
            return false;
        if (!has_start)
            per.start = INT64_MIN;
        if (!has_end)
            per.end = INT64_MAX;
        if (!has_start && !has_end)
            return fail(err, 422, base, "an active period needs a start, an end or both");
        if (per.start >= per.end)
            return fail(err, 422, base, "the period's end must come after its start");
        json_t *o = json_object();
        char text[21];
        if (has_start) {
            rfc3339_format_utc(per.start, text);
            json_object_set_new(o, "start", json_string(text));
        }
        if (has_end) {
            rfc3339_format_utc(per.end, text);
            json_object_set_new(o, "end", json_string(text));
        }
        json_array_append_new(out, o);
        p->periods[p->nperiods++] = per;
    }
    return true;
}

/* A feed name of a merged dataset (feed_merge.h): letters, digits, '_', '-', '.'. */
static bool feed_name_ok(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              *s == '-' || *s == '.'))
            return false;
    return true;
}

static bool check_entity(json_t *v, const char *base, parsed *p, json_t *out, alert_error *err)
{
    static const char *const allowed[] = {"agency_id", "route_id", "route_type", "direction_id",
                                          "stop_id", "trip", "feed", NULL};
    static const char *const trip_allowed[] = {"trip_id", "start_date", NULL};
    if (!json_is_object(v))
        return fail(err, 422, base, "an informed entity must be an object, not %s", json_kind(v));
    if (!only_members(v, base, allowed, err))
        return false;
    alert_entity e = {NULL, NULL, NULL, NULL, -1, -1, ALERT_NONE_DATE, NULL};
    if (!get_string(v, base, "agency_id", ALERT_REF_ID_MAX, &e.agency_id, err) ||
        !get_string(v, base, "route_id", ALERT_REF_ID_MAX, &e.route_id, err) ||
        !get_string(v, base, "stop_id", ALERT_REF_ID_MAX, &e.stop_id, err) ||
        !get_small_int(v, base, "route_type", 0, 1999, &e.route_type, err) ||
        !get_small_int(v, base, "direction_id", 0, 1, &e.direction_id, err) ||
        !get_string(v, base, "feed", ALERT_FEED_MAX, &e.feed, err))
        return false;
    if (e.feed && !feed_name_ok(e.feed)) {
        char ptr[160];
        pointer_key(ptr, sizeof ptr, base, "feed");
        return fail(err, 422, ptr, "feed must be a feed name: letters, digits, '_', '-' or '.'");
    }
    json_t *trip = json_object_get(v, "trip");
    const char *start_date = NULL;
    if (trip && !json_is_null(trip)) {
        char tbase[160];
        pointer_key(tbase, sizeof tbase, base, "trip");
        if (!json_is_object(trip))
            return fail(err, 422, tbase, "trip must be an object, not %s", json_kind(trip));
        if (!only_members(trip, tbase, trip_allowed, err) ||
            !get_string(trip, tbase, "trip_id", ALERT_REF_ID_MAX, &e.trip_id, err) ||
            !get_string(trip, tbase, "start_date", 8, &start_date, err))
            return false;
        if (!e.trip_id)
            return fail(err, 422, tbase, "trip needs a trip_id");
        if (start_date && gtfs_parse_date(start_date, strlen(start_date), &e.start_date) != 0) {
            char ptr[160];
            pointer_key(ptr, sizeof ptr, tbase, "start_date");
            return fail(err, 422, ptr, "start_date must be a date YYYYMMDD (got '%s')", start_date);
        }
    }
    if (e.direction_id >= 0 && !e.route_id && !e.trip_id)
        return fail(err, 422, base, "direction_id needs a route_id or a trip");
    if (!e.agency_id && !e.route_id && !e.stop_id && !e.trip_id && e.route_type < 0)
        return fail(err, 422, base,
                    "an informed entity needs at least one of agency_id, route_id, route_type, "
                    "stop_id, trip");
    json_t *o = json_object();
    if (e.agency_id)
        json_object_set_new(o, "agency_id", json_string(e.agency_id));
    if (e.route_id)
        json_object_set_new(o, "route_id", json_string(e.route_id));
    if (e.route_type >= 0)
        json_object_set_new(o, "route_type", json_integer(e.route_type));
    if (e.direction_id >= 0)
        json_object_set_new(o, "direction_id", json_integer(e.direction_id));
    if (e.stop_id)
        json_object_set_new(o, "stop_id", json_string(e.stop_id));
    if (e.trip_id) {
        json_t *t = json_object();
        json_object_set_new(t, "trip_id", json_string(e.trip_id));
        if (start_date)
            json_object_set_new(t, "start_date", json_string(start_date));
        json_object_set_new(o, "trip", t);
    }
    if (e.feed)
        json_object_set_new(o, "feed", json_string(e.feed));
    json_array_append_new(out, o);
    const char *strings[5] = {e.agency_id, e.route_id, e.stop_id, e.trip_id, e.feed};
    for (int k = 0; k < 5; k++)
        if (strings[k])
            p->string_bytes += strlen(strings[k]) + 1;
    p->entities[p->nentities++] = e;
    return true;
}

static bool check_entities(json_t *arr, parsed *p, json_t *out, alert_error *err)
{
    if (!json_is_array(arr))
        return fail(err, 422, "/informed_entity", "informed_entity must be an array, not %s",
                    json_kind(arr));
    if (json_array_size(arr) == 0 || json_array_size(arr) > ALERT_ENTITIES_MAX)
        return fail(err, 422, "/informed_entity", "informed_entity needs 1 to %d entities (got %zu)",
                    ALERT_ENTITIES_MAX, json_array_size(arr));
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        char base[160];
        pointer_index(base, sizeof base, "/informed_entity", i);
        if (!check_entity(v, base, p, out, err))
            return false;
    }
    return true;
}

/* The read-only members a response adds to a TranslatedString (alert_text.h):
 * "text" and "language" of the translation it chose. A body read back from a
 * GET may carry them; they must then name one of its translations, so that an
 * edit of "text" alone is refused rather than lost. */
static bool check_chosen(json_t *v, json_t *translations, const char *base, alert_error *err)
{
    json_t *text = json_object_get(v, "text"), *lang = json_object_get(v, "language");
    if (!text && !lang)
        return true;
    char ptr[160];
    pointer_key(ptr, sizeof ptr, base, text ? "text" : "language");
    if ((text && !json_is_string(text)) || (lang && !json_is_string(lang) && !json_is_null(lang)))
        return fail(err, 422, ptr, "text and language must be strings");
    size_t i;
    json_t *item;
    json_array_foreach(translations, i, item) {
        json_t *t = json_object_get(item, "text"), *l = json_object_get(item, "language");
        bool same_text = !text || strcmp(json_string_value(text), json_string_value(t)) == 0;
        bool same_lang = !lang || (json_is_null(lang) ? !l : l && strcmp(json_string_value(lang), json_string_value(l)) == 0);
        if (same_text && same_lang)
            return true;
    }
    return fail(err, 422, ptr, "text and language are the server's choice among the translations (read-only): "
                               "change the translation array instead");
}

/* A TranslatedString: {"translation":[{"text":..., "language":...}, ...]}.
 * Returns the canonical copy in *out (NULL when absent and optional). */
static bool check_translated(json_t *obj, const char *key, bool required, bool is_url,
                             json_t **out, alert_error *err)
{
    static const char *const allowed[] = {"translation", "text", "language", NULL};
    static const char *const item_allowed[] = {"text", "language", NULL};
    json_t *v = json_object_get(obj, key);
    char base[160];
    pointer_key(base, sizeof base, "", key);
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (required)
            return fail(err, 422, base, "%s is required: {\"translation\":[{\"text\":\"...\","
                                        "\"language\":\"en\"}]}", key);
        return true;
    }
    if (!json_is_object(v))
        return fail(err, 422, base, "%s must be an object with a translation array, not %s", key,
                    json_kind(v));
    if (!only_members(v, base, allowed, err))
        return false;
    char abase[160];
    pointer_key(abase, sizeof abase, base, "translation");
    json_t *arr = json_object_get(v, "translation");
    if (!arr || !json_is_array(arr) || json_array_size(arr) == 0 ||
        json_array_size(arr) > ALERT_TRANSLATIONS_MAX)
        return fail(err, 422, abase, "translation must be an array of 1 to %d translations",
                    ALERT_TRANSLATIONS_MAX);
    json_t *translations = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(arr, i, item) {
        char ibase[160];
        pointer_index(ibase, sizeof ibase, abase, i);
        const char *text, *lang;
        if (!json_is_object(item)) {
            json_decref(translations);
            return fail(err, 422, ibase, "a translation must be an object, not %s", json_kind(item));
        }
        if (!only_members(item, ibase, item_allowed, err) ||
            !get_string(item, ibase, "text", ALERT_TEXT_MAX, &text, err) ||
            !get_string(item, ibase, "language", 35, &lang, err)) {
            json_decref(translations);
            return false;
        }
        if (!text) {
            json_decref(translations);
            char ptr[160];
            pointer_key(ptr, sizeof ptr, ibase, "text");
            return fail(err, 422, ptr, "a translation needs a text");
        }
        if (is_url && strncmp(text, "https://", 8) != 0 && strncmp(text, "http://", 7) != 0) {
            json_decref(translations);
            char ptr[160];
            pointer_key(ptr, sizeof ptr, ibase, "text");
            return fail(err, 422, ptr, "a url must start with http:// or https://");
        }
        for (const char *c = lang; c && *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '-')) {
                json_decref(translations);
                char ptr[160];
                pointer_key(ptr, sizeof ptr, ibase, "language");
                return fail(err, 422, ptr, "language must be a BCP 47 tag such as en or fr-CA");
            }
        for (size_t j = 0; j < i; j++) {
            json_t *prev = json_object_get(json_array_get(translations, j), "language");
            if ((!prev && !lang) || (prev && lang && strcmp(json_string_value(prev), lang) == 0)) {
                json_decref(translations);
                return fail(err, 422, ibase, "two translations with the same language");
            }
        }
        json_t *t = json_object();
        json_object_set_new(t, "text", json_string(text));
        if (lang)
            json_object_set_new(t, "language", json_string(lang));
        json_array_append_new(translations, t);
    }
    if (!check_chosen(v, translations, base, err)) {
        json_decref(translations);
        return false;
    }
    *out = json_object();
    json_object_set_new(*out, "translation", translations);
    return true;
}

/* Checks the members of an alert object into p->content (canonical). */
static bool check_content(json_t *root, const char *id, bool allow_id, parsed *p,
                          alert_error *err)
{
    static const char *const allowed[] = {
        "id", "revision", "created_at", "updated_at", "active_period", "informed_entity",
        "cause", "effect", "severity_level", "header_text", "description_text", "url", NULL};
    if (!json_is_object(root))
        return fail(err, 400, "", "the body must be a JSON object, not %s", json_kind(root));
    if (!only_members(root, "", allowed, err))
        return false;
    json_t *idv = json_object_get(root, "id");
    if (idv && !allow_id)
        return fail(err, 422, "/id", "the server assigns the id of a POSTed alert; "
                                     "to choose one, PUT /v1/alerts/{id}");
    if (idv && (!json_is_string(idv) || strcmp(json_string_value(idv), id) != 0))
        return fail(err, 422, "/id", "id must equal the id in the path ('%s')", id);

    p->content = json_object();
    json_t *periods = json_array();
    json_object_set_new(p->content, "active_period", periods);
    json_t *v = json_object_get(root, "active_period");
    if (v && !json_is_null(v) && !check_periods(v, p, periods, err))
        return false;
    json_t *entities = json_array();
    json_object_set_new(p->content, "informed_entity", entities);
    v = json_object_get(root, "informed_entity");
    if (!v || json_is_null(v))
        return fail(err, 422, "/informed_entity", "informed_entity is required: which agency, "
                                                  "routes, stops or trips the alert is about");
    if (!check_entities(v, p, entities, err))
        return false;
    const char *cause, *effect, *severity;
    if (!get_enum(root, "cause", CAUSES, "UNKNOWN_CAUSE", &cause, err) ||
        !get_enum(root, "effect", EFFECTS, "UNKNOWN_EFFECT", &effect, err) ||
        !get_enum(root, "severity_level", SEVERITIES, "UNKNOWN_SEVERITY", &severity, err))
        return false;
    json_object_set_new(p->content, "cause", json_string(cause));
    json_object_set_new(p->content, "effect", json_string(effect));
    json_object_set_new(p->content, "severity_level", json_string(severity));
    static const struct { const char *key; bool required, is_url; } texts[] = {
        {"header_text", true, false}, {"description_text", false, false}, {"url", false, true}};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        json_t *t;
        if (!check_translated(root, texts[i].key, texts[i].required, texts[i].is_url, &t, err))
            return false;
        json_object_set_new(p->content, texts[i].key, t ? t : json_null());
    }
    return true;
}

/* ------------------------------------------------------------ the alert */

static char *copy_string(char **pool, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *out = *pool;
    memcpy(out, s, n);
    *pool += n;
    return out;
}

static const char *const TEXT_NAMES[ALERT_TEXT_FIELDS] = {"header_text", "description_text", "url"};

/* a->texts from the canonical content: each translation's text as a JSON
 * string and its tag, and the translation array, in one block (a->texts_mem).
 * false when out of memory. */
static bool render_texts(alert *a, json_t *content)
{
    char *pieces[ALERT_TEXT_FIELDS][ALERT_TRANSLATIONS_MAX + 1];
    memset(pieces, 0, sizeof pieces);
    size_t bytes = 0, items = 0;
    bool ok = true;
    for (int f = 0; f < ALERT_TEXT_FIELDS; f++) {
        json_t *arr = json_object_get(json_object_get(content, TEXT_NAMES[f]), "translation");
        size_t n = json_array_size(arr);
        if (n == 0)
            continue;
        ok = ok && (pieces[f][0] = json_dumps(arr, JSON_COMPACT | JSON_PRESERVE_ORDER)) != NULL;
        bytes += ok ? strlen(pieces[f][0]) + 1 : 0;
        for (size_t i = 0; ok && i < n; i++) {
            json_t *item = json_array_get(arr, i);
            ok = (pieces[f][i + 1] = json_dumps(json_object_get(item, "text"), JSON_ENCODE_ANY)) != NULL;
            const char *tag = json_string_value(json_object_get(item, "language"));
            bytes += ok ? strlen(pieces[f][i + 1]) + 1 + (tag ? strlen(tag) + 1 : 0) : 0;
        }
        items += n;
    }
    char *mem = ok ? malloc(items * sizeof(alert_translation) + bytes + 1) : NULL;
    if (mem) {
        alert_translation *list = (alert_translation *)mem;
        char *text = mem + items * sizeof(alert_translation);
        for (int f = 0; f < ALERT_TEXT_FIELDS; f++) {
            json_t *arr = json_object_get(json_object_get(content, TEXT_NAMES[f]), "translation");
            size_t n = json_array_size(arr);
            alert_text *t = &a->texts[f];
            memset(t, 0, sizeof *t);
            if (n == 0)
                continue;
            t->count = (uint32_t)n;
            t->items = list;
            t->translations_json = text;
            t->translations_json_len = strlen(pieces[f][0]);
            memcpy(text, pieces[f][0], t->translations_json_len + 1);
            text += t->translations_json_len + 1;
            for (size_t i = 0; i < n; i++) {
                alert_translation *tr = list++;
                tr->text_json = text;
                tr->text_json_len = strlen(pieces[f][i + 1]);
                memcpy(text, pieces[f][i + 1], tr->text_json_len + 1);
                text += tr->text_json_len + 1;
                const char *tag = json_string_value(json_object_get(json_array_get(arr, i), "language"));
                tr->language = NULL;
                if (tag) {
                    tr->language = text;
                    memcpy(text, tag, strlen(tag) + 1);
                    text += strlen(tag) + 1;
                }
            }
        }
        a->texts_mem = mem;
    }
    for (int f = 0; f < ALERT_TEXT_FIELDS; f++)
        for (int i = 0; i <= ALERT_TRANSLATIONS_MAX; i++)
            free(pieces[f][i]);
    return mem != NULL;
}

/* a->content_head: the content's members before its texts, without braces. */
static bool render_content_head(alert *a, json_t *content)
{
    json_t *head = json_copy(content);
    for (int f = 0; head && f < ALERT_TEXT_FIELDS; f++)
        json_object_del(head, TEXT_NAMES[f]);
    char *text = head ? json_dumps(head, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(head);
    if (!text)
        return false;
    size_t len = strlen(text);   /* {...}: at least the informed entities */
    memmove(text, text + 1, len - 2);
    text[len - 2] = '\0';
    a->content_head = text;
    a->content_head_len = len - 2;
    return true;
}

/* The alert of a checked body: periods, entities (strings copied), content. */
static alert *alert_of(parsed *p, const char *id, alert_error *err)
{
    char *content = json_dumps(p->content, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t arrays = p->nperiods * sizeof(alert_period) + p->nentities * sizeof(alert_entity);
    alert *a = calloc(1, sizeof *a + arrays + p->string_bytes);
    if (!a || !content) {
        free(a);
        free(content);
        fail(err, 500, "", "out of memory");
        return NULL;
    }
    a->refs = 1;
    snprintf(a->id, sizeof a->id, "%s", id);
    unsigned char *mem = (unsigned char *)(a + 1);
    a->periods = (alert_period *)mem;
    a->nperiods = p->nperiods;
    memcpy(a->periods, p->periods, p->nperiods * sizeof(alert_period));
    a->entities = (alert_entity *)(mem + p->nperiods * sizeof(alert_period));
    a->nentities = p->nentities;
    char *pool = (char *)(mem + arrays);
    for (uint32_t i = 0; i < p->nentities; i++) {
        alert_entity e = p->entities[i];
        e.agency_id = copy_string(&pool, e.agency_id);
        e.route_id = copy_string(&pool, e.route_id);
        e.stop_id = copy_string(&pool, e.stop_id);
        e.trip_id = copy_string(&pool, e.trip_id);
        e.feed = copy_string(&pool, e.feed);
        a->entities[i] = e;
    }
    a->content = content;
    a->content_len = strlen(content);
    if (!render_texts(a, p->content) || !render_content_head(a, p->content)) {
        alert_release(a);
        fail(err, 500, "", "out of memory");
        return NULL;
    }
    return a;
}

static alert *alert_of_json(json_t *root, const char *id, bool allow_id, alert_error *err)
{
    parsed *p = calloc(1, sizeof *p);
    if (!p) {
        fail(err, 500, "", "out of memory");
        return NULL;
    }
    alert *a = NULL;
    if (check_content(root, id, allow_id, p, err))
        a = alert_of(p, id, err);
    json_decref(p->content);
    free(p);
    return a;
}

static json_t *load_body(const char *body, size_t len, alert_error *err)
{
    json_error_t jerr;
    if (len == 0) {
        fail(err, 400, "", "the body is empty; send a JSON object");
        return NULL;
    }
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        fail(err, 400, "", "the body is not valid JSON: %.160s (line %d, column %d)", jerr.text,
             jerr.line, jerr.column);
    return root;
}

alert *alert_parse(const char *body, size_t len, const char *id, bool allow_id, alert_error *err)
{
    json_t *root = load_body(body, len, err);
    if (!root)
        return NULL;
    alert *a = alert_of_json(root, id, allow_id, err);
    json_decref(root);
    return a;
}

/* RFC 7396: returns the patched target (a new or the same reference). */
static json_t *merge_patch(json_t *target, json_t *patch)
{
    if (!json_is_object(patch)) {
        json_decref(target);
        return json_incref(patch);
    }
    if (!json_is_object(target)) {
        json_decref(target);
        target = json_object();
    }
    const char *key;
    json_t *v;
    json_object_foreach(patch, key, v) {
        if (json_is_null(v)) {
            json_object_del(target, key);
        } else {
            json_t *old = json_object_get(target, key);
            json_t *merged = merge_patch(old ? json_incref(old) : NULL, v);
            json_object_set_new(target, key, merged);
        }
    }
    return target;
}

alert *alert_merge_patch(const alert *old, const char *patch, size_t len, alert_error *err)
{
    json_t *p = load_body(patch, len, err);
    if (!p)
        return NULL;
    if (!json_is_object(p)) {
        json_decref(p);
        fail(err, 400, "", "a merge patch for an alert must be a JSON object");
        return NULL;
    }
    /* unknown members are refused here too, even as null (which would
     * remove nothing): the patch is an alert's shape, as the PUT body is */
    static const char *const patch_members[] = {
        "id", "revision", "created_at", "updated_at", "active_period", "informed_entity",
        "cause", "effect", "severity_level", "header_text", "description_text", "url", NULL};
    static const char *const texts[] = {"header_text", "description_text", "url"};
    static const char *const text_members[] = {"translation", "text", "language", NULL};
    bool known = only_members(p, "", patch_members, err);
    for (size_t i = 0; known && i < sizeof texts / sizeof texts[0]; i++) {
        json_t *text = json_object_get(p, texts[i]);
        char base[160];
        pointer_key(base, sizeof base, "", texts[i]);
        known = !json_is_object(text) || only_members(text, base, text_members, err);
    }
    if (!known) {
        json_decref(p);
        return NULL;
    }
    json_error_t jerr;
    json_t *target = json_loadb(old->content, old->content_len, 0, &jerr);
    if (!target) {
        json_decref(p);
        fail(err, 500, "", "the stored alert does not parse: %s", jerr.text);
        return NULL;
    }
    /* read-only members in a patch are ignored like in a PUT body, and a null
     * for them changes nothing */
    static const char *const read_only[] = {"revision", "created_at", "updated_at"};
    for (size_t i = 0; i < sizeof read_only / sizeof read_only[0]; i++)
        json_object_del(p, read_only[i]);
    json_t *idv = json_object_get(p, "id");
    if (idv && (!json_is_string(idv) || strcmp(json_string_value(idv), old->id) != 0)) {
        json_decref(p);
        json_decref(target);
        fail(err, 422, "/id", "an alert's id cannot change ('%s')", old->id);
        return NULL;
    }
    json_object_del(p, "id");
    target = merge_patch(target, p);
    json_decref(p);
    alert *a = alert_of_json(target, old->id, true, err);
    json_decref(target);
    return a;
}

alert *alert_from_store(const char *id, const char *content, size_t len, int64_t revision,
                        int64_t created_at, int64_t updated_at, alert_error *err)
{
    if (!alert_id_valid(id)) {
        fail(err, 422, "/id", "stored alert id '%.80s' is not a valid id", id);
        return NULL;
    }
    alert *a = alert_parse(content, len, id, true, err);
    if (a && alert_stamp(a, revision, created_at, updated_at) != 0) {
        alert_release(a);
        fail(err, 500, "", "out of memory");
        return NULL;
    }
    return a;
}

int alert_stamp(alert *a, int64_t revision, int64_t created_at, int64_t updated_at)
{
    a->revision = revision;
    a->created_at = created_at;
    a->updated_at = updated_at;
    char created[21], updated[21];
    rfc3339_format_utc(created_at, created);
    rfc3339_format_utc(updated_at, updated);
    /* {"id":"<id>","revision":N,"created_at":"...","updated_at":"...",<content before its texts> */
    size_t cap = a->content_head_len + ALERT_ID_MAX + 128;
    char *head = malloc(cap);
    if (!head)
        return -1;
    int n = snprintf(head, cap, "{\"id\":\"%s\",\"revision\":%lld,\"created_at\":\"%s\","
                                "\"updated_at\":\"%s\",%s",
                     a->id, (long long)revision, created, updated, a->content_head);
    free(a->head);
    a->head = head;
    a->head_len = (size_t)n;
    /* the representation no request chose a language for */
    json_writer w;
    json_init(&w);
    alert_write(&w, a, NULL);
    if (w.oom) {
        json_free(&w);
        return -1;
    }
    char *json = NULL;
    size_t json_cap = 0, len = w.len;
    json_swap_buffer(&w, &json, &json_cap);
    json_free(&w);
    free(a->json);
    a->json = json;
    a->json_len = len;
    return 0;
}
