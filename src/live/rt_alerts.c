/* rt_alerts.c — rt_alert → the alerts API's JSON → alert; see rt_alerts.h. */
#include "transit/rt_alerts.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const CAUSES[] = {NULL, "UNKNOWN_CAUSE", "OTHER_CAUSE", "TECHNICAL_PROBLEM", "STRIKE",
                                     "DEMONSTRATION", "ACCIDENT", "HOLIDAY", "WEATHER", "MAINTENANCE",
                                     "CONSTRUCTION", "POLICE_ACTIVITY", "MEDICAL_EMERGENCY"};
static const char *const EFFECTS[] = {NULL, "NO_SERVICE", "REDUCED_SERVICE", "SIGNIFICANT_DELAYS", "DETOUR",
                                      "ADDITIONAL_SERVICE", "MODIFIED_SERVICE", "OTHER_EFFECT",
                                      "UNKNOWN_EFFECT", "STOP_MOVED", "NO_EFFECT", "ACCESSIBILITY_ISSUE"};
static const char *const SEVERITIES[] = {NULL, "UNKNOWN_SEVERITY", "INFO", "WARNING", "SEVERE"};

#define ENUM_NAME(table, v, fallback) \
    ((v) >= 1 && (size_t)(v) < sizeof(table) / sizeof *(table) ? (table)[v] : (fallback))

bool rt_alert_id(const char *id)
{
    return strncmp(id, RT_ALERT_ID_PREFIX, sizeof RT_ALERT_ID_PREFIX - 1) == 0;
}

static void make_id(const char *entity_id, char out[ALERT_ID_MAX + 1])
{
    snprintf(out, ALERT_ID_MAX + 1, RT_ALERT_ID_PREFIX "%s", entity_id ? entity_id : "");
    if (entity_id && strlen(entity_id) + 3 <= ALERT_ID_MAX && alert_id_valid(out))
        return;
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)(entity_id ? entity_id : ""); *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    snprintf(out, ALERT_ID_MAX + 1, RT_ALERT_ID_PREFIX "h%016llx", (unsigned long long)h);
}

static json_t *text_json(const rt_text *t)
{
    json_t *arr = json_array();
    for (uint32_t i = 0; i < t->count; i++) {
        json_t *tr = json_object();
        json_object_set_new(tr, "text", json_string(t->items[i].text ? t->items[i].text : ""));
        if (t->items[i].language && t->items[i].language[0])
            json_object_set_new(tr, "language", json_string(t->items[i].language));
        json_array_append_new(arr, tr);
    }
    json_t *obj = json_object();
    json_object_set_new(obj, "translation", arr);
    return obj;
}

/* The body the alerts API would take for `a`; NULL when out of memory. */
static char *alert_body(const rt_alert *a, size_t *len)
{
    json_t *root = json_object();
    json_t *periods = json_array();
    for (uint32_t i = 0; i < a->period_count; i++) {
        json_t *p = json_object();
        if (a->periods[i].start) json_object_set_new(p, "start", json_integer((json_int_t)a->periods[i].start));
        if (a->periods[i].end) json_object_set_new(p, "end", json_integer((json_int_t)a->periods[i].end));
        json_array_append_new(periods, p);
    }
    json_object_set_new(root, "active_period", periods);
    json_t *entities = json_array();
    for (uint32_t i = 0; i < a->selector_count; i++) {
        const rt_selector *s = &a->selectors[i];
        json_t *e = json_object();
        if (s->agency_id) json_object_set_new(e, "agency_id", json_string(s->agency_id));
        if (s->route_id) json_object_set_new(e, "route_id", json_string(s->route_id));
        if (s->route_type >= 0) json_object_set_new(e, "route_type", json_integer(s->route_type));
        if (s->direction_id >= 0) json_object_set_new(e, "direction_id", json_integer(s->direction_id));
        if (s->stop_id) json_object_set_new(e, "stop_id", json_string(s->stop_id));
        if (s->trip_id) {
            json_t *trip = json_object();
            json_object_set_new(trip, "trip_id", json_string(s->trip_id));
            if (s->trip_start_date)
                json_object_set_new(trip, "start_date", json_string(s->trip_start_date));
            json_object_set_new(e, "trip", trip);
        }
        json_array_append_new(entities, e);
    }
    json_object_set_new(root, "informed_entity", entities);
    json_object_set_new(root, "cause", json_string(ENUM_NAME(CAUSES, a->cause, "UNKNOWN_CAUSE")));
    json_object_set_new(root, "effect", json_string(ENUM_NAME(EFFECTS, a->effect, "UNKNOWN_EFFECT")));
    json_object_set_new(root, "severity_level",
                        json_string(ENUM_NAME(SEVERITIES, a->severity, "UNKNOWN_SEVERITY")));
    json_object_set_new(root, "header_text", text_json(&a->header));
    if (a->description.count) json_object_set_new(root, "description_text", text_json(&a->description));
    if (a->url.count) json_object_set_new(root, "url", text_json(&a->url));
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (text) *len = strlen(text);
    return text;
}

static int compare_ids(const void *a, const void *b)
{
    return strcmp((*(alert *const *)a)->id, (*(alert *const *)b)->id);
}

long rt_alerts_from_feed(const rt_feed *feed, int64_t now, alert ***out, uint32_t *rejected, char *err,
                         size_t errlen)
{
    *out = NULL;
    *rejected = 0;
    if (err && errlen) err[0] = '\0';
    uint32_t n = feed ? feed->alert_count : 0;
    alert **list = calloc(n ? n : 1, sizeof *list);
    if (!list) return -1;
    int64_t stamp = feed && feed->timestamp ? (int64_t)feed->timestamp : now;
    uint32_t count = 0;
    for (uint32_t i = 0; i < n; i++) {
        const rt_alert *ra = &feed->alerts[i];
        char id[ALERT_ID_MAX + 1];
        make_id(ra->entity_id, id);
        size_t len = 0;
        char *body = alert_body(ra, &len);
        if (!body) goto oom;
        alert_error aerr;
        alert *a = alert_parse(body, len, id, false, &aerr);
        free(body);
        if (!a) {
            if (err && errlen && !err[0])
                snprintf(err, errlen, "alert \"%.64s\": %s%s%s", ra->entity_id ? ra->entity_id : "",
                         aerr.pointer, aerr.pointer[0] ? ": " : "", aerr.detail);
            (*rejected)++;
            continue;
        }
        if (alert_stamp(a, stamp, stamp, stamp) != 0) {
            alert_release(a);
            goto oom;
        }
        list[count++] = a;
    }
    qsort(list, count, sizeof *list, compare_ids);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (kept && strcmp(list[kept - 1]->id, list[i]->id) == 0) {
            alert_release(list[i]);
            (*rejected)++;
            continue;
        }
        list[kept++] = list[i];
    }
    *out = list;
    return kept;
oom:
    rt_alerts_free(list, count);
    return -1;
}

void rt_alerts_free(alert **alerts, uint32_t n)
{
    if (!alerts) return;
    for (uint32_t i = 0; i < n; i++) alert_release(alerts[i]);
    free(alerts);
}

alert **rt_alerts_merge(alert *const *stored, uint32_t nstored, alert *const *rt, uint32_t nrt,
                        uint32_t *count)
{
    alert **out = malloc(((size_t)nstored + nrt + 1) * sizeof *out);
    if (!out) return NULL;
    uint32_t i = 0, j = 0, n = 0;
    while (i < nstored || j < nrt) {
        if (i < nstored && rt_alert_id(stored[i]->id)) {
            i++;
            continue;
        }
        if (j >= nrt || (i < nstored && strcmp(stored[i]->id, rt[j]->id) < 0)) out[n++] = stored[i++];
        else out[n++] = rt[j++];
    }
    *count = n;
    return out;
}
