/* api_alerts.c — the service alerts endpoints: the list, filtered, and one alert.
 *
 * Why it exists: alerts are answered from the request's alert view, not from
 * the timetable (the dataset may even be absent), each alert as the canonical
 * JSON it was stored with, and never cached. Their filters and paging
 * (`after`) are theirs alone, so they live apart from the timetable's
 * endpoints.
 */
#include <string.h>

#include "api/api_internal.h"

#define ALERT_LIST_DEFAULT 100
#define ALERT_LIST_MAX 1000

/* Whether one of a's informed entities names `id` in the selector `which`. */
static bool alert_names(const alert *a, int which, const char *id)
{
    for (uint32_t i = 0; i < a->nentities; i++) {
        const alert_entity *e = &a->entities[i];
        const char *v = which == 0 ? e->stop_id : which == 1 ? e->route_id
                      : which == 2 ? e->trip_id : e->agency_id;
        if (v && strcmp(v, id) == 0)
            return true;
    }
    return false;
}

alert_language *api_alert_language(const api_request *req, dataset *ds, alert_language *local)
{
    if (req->alert_language)
        return req->alert_language;
    if (!req->alerts || !alert_view_multilingual(req->alerts))
        return NULL;
    memset(local, 0, sizeof *local);
    char why[256];
    const dataset_translations *tr = ds ? dataset_translations_get(ds, why, sizeof why) : NULL;
    const char *const *tags;
    if (tr && translations_languages(tr, &tags) >= 1 && tags[0][0])
        local->fallback = tags[0];
    return local;
}

int api_alerts(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
               api_problem *prob, int *cache_seconds)
{
    (void)t;
    static const char *const allowed[] = {"stop_id", "route_id", "trip_id", "agency_id",
                                          "active_at", "limit", "after", NULL};
    static const char *const selectors[] = {"stop_id", "route_id", "trip_id", "agency_id"};
    long limit;
    if (api_check_params(req, allowed, prob) ||
        api_get_int(req, "limit", ALERT_LIST_DEFAULT, 1, ALERT_LIST_MAX, "an integer", &limit,
                    prob))
        return prob->status;
    const char *wanted[4];
    for (int k = 0; k < 4; k++)
        wanted[k] = api_param_value(req, selectors[k]);
    const char *after = api_param_value(req, "after");
    const char *at = api_param_value(req, "active_at");
    int64_t instant = req->now;
    if (at && strcmp(at, "now") != 0) {
        int64_t local;
        bool has_offset;
        int32_t offset;
        if (rfc3339_parse(at, &local, &has_offset, &offset) != 0 || (!has_offset && !ds))
            return api_fail(prob, 400, "active_at",
                            "active_at must be now or an RFC 3339 date-time such as "
                            "2026-11-21T18:15:00-05:00");
        instant = has_offset ? local - offset : dataset_local_to_instant(ds, local);
    }
    const alert_view *v = req->alerts;
    uint32_t n = v ? alert_view_count(v) : 0, written = 0;
    alert_language local;
    alert_language *lang = api_alert_language(req, ds, &local);
    bool truncated = false;
    const char *last = NULL;
    api_begin_list(out, "alerts");
    for (uint32_t i = 0; i < n; i++) {
        const alert *a = alert_view_at(v, i);
        if (after && strcmp(a->id, after) <= 0)
            continue;
        bool keep = !at || alert_active_at(a, instant);
        for (int k = 0; keep && k < 4; k++)
            keep = !wanted[k] || alert_names(a, k, wanted[k]);
        if (!keep)
            continue;
        if (written == (uint32_t)limit) {
            truncated = true;
            break;
        }
        alert_write(out, a, lang);
        last = a->id;
        written++;
    }
    json_array_end(out);
    json_kv_bool(out, "truncated", truncated);
    if (truncated) {
        static const char *const kept[] = {"stop_id", "route_id", "trip_id", "agency_id", "active_at", NULL};
        board_link link = {"/v1/alerts", NULL, "", kept};
        json_kv_string(out, "next_after", last);
        api_write_next_after(out, req, &link, limit, last);
    } else {
        json_kv_null(out, "next");
    }
    json_object_end(out);
    return api_finish(out, prob, cache_seconds, 0);
}

int api_alert(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
              api_problem *prob, int *cache_seconds)
{
    (void)t;
    if (api_check_params(req, api_no_params, prob) || api_need_id(req, "alert_id", prob))
        return prob->status;
    long i = req->alerts ? alert_view_find(req->alerts, req->id) : -1;
    if (i < 0)
        return api_fail(prob, 404, "alert_id", "there is no alert '%.200s'", req->id);
    alert_language local;
    alert_write(out, alert_view_at(req->alerts, (uint32_t)i), api_alert_language(req, ds, &local));
    return api_finish(out, prob, cache_seconds, 0);
}
