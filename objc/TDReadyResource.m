/* TDReadyResource.m — GET /readyz: readiness. 200 with the dataset version
 * and its feed_validity while a dataset is being served (plus a warning when
 * the feed has expired or is not in effect yet: the server still answers, so
 * it stays ready, and the warning says what is wrong); 503 (problem+json,
 * Retry-After) before the first one is loaded (`serve --wait-for-data`), and
 * while the server serves a version other than the data directory's active
 * one and will not switch by itself (opening the active version failed, or
 * --follow-interval 0 and no SIGHUP yet).
 *
 * Why it exists: a load balancer should send traffic only to a server that
 * can answer /v1 with the data the operator activated, which is a different
 * question from "is it alive". Every answer names the served and the active
 * version and says whether the served one is stale; between an import and
 * the follower's next check (at most --follow-interval seconds) the answer
 * stays 200 with "stale": true and "switching": true, so that a whole fleet
 * does not leave the pool at once on every import.
 */
#import "TDResource.h"
#import "TDServer.h"
#include "transit/serving.h"

#include <string.h>
#include <time.h>

#include "transit/feed_validity.h"
#include "transit/rfc3339.h"

@interface TDReadyResource : TDResource
@end

@implementation TDReadyResource

/* A replica's side: which primary, what it offers, how far behind this is. */
static void replica_members(json_writer *out, replica *r, dataset *ds)
{
    if (!r)
        return;
    replica_status st;
    replica_get_status(r, &st);
    json_key(out, "replica");
    json_object_begin(out);
    json_kv_string(out, "primary", st.primary);
    if (st.offered[0])
        json_kv_string(out, "primary_version", st.offered);
    else
        json_kv_null(out, "primary_version");
    json_kv_bool(out, "behind", !ds || !st.offered[0] || strcmp(st.offered, dataset_version(ds)) != 0);
    if (st.last_contact) {
        char when[21];
        rfc3339_format_utc(st.last_contact, when);
        json_kv_string(out, "last_contact", when);
        json_kv_int(out, "seconds_since_contact", (int64_t)time(NULL) - st.last_contact);
    } else {
        json_kv_null(out, "last_contact");
    }
    /* the live state's lag: when the primary's alerts were last confirmed */
    if (st.live_checked) {
        json_kv_int(out, "seconds_since_live_check", (int64_t)time(NULL) - st.live_checked);
        json_kv_int(out, "live_generation", st.live_generation);
    }
    if (st.last_error[0])
        json_kv_string(out, "last_error", st.last_error);
    json_object_end(out);
}

/* "realtime_sources": each GTFS-Realtime source by its label (no
 * credentials, no query string, no header), with its last good poll, last
 * error, age, entities and, of those, vehicle positions. */
static void realtime_members(json_writer *out, rt_ingest *rt, int64_t now)
{
    if (!rt)
        return;
    json_key(out, "realtime_sources");
    json_array_begin(out);
    for (size_t i = 0; i < rt_ingest_source_count(rt); i++) {
        rt_source_state st;
        rt_ingest_source_state(rt, i, &st);
        json_object_begin(out);
        json_kv_string(out, "source", rt_ingest_source_label(rt, i));
        if (st.last_success) {
            json_kv_int(out, "last_success", st.last_success);
            json_kv_int(out, "age_s", now - st.last_success);
        } else {
            json_kv_null(out, "last_success");
            json_kv_null(out, "age_s");
        }
        if (st.last_error[0])
            json_kv_string(out, "last_error", st.last_error);
        json_kv_int(out, "entities", st.entities);
        json_kv_int(out, "vehicles", st.vehicles);
        json_kv_bool(out, "merged", st.merged);
        json_object_end(out);
    }
    json_array_end(out);
}

static void version_members(json_writer *out, dataset *ds, const serving_version_state *vs)
{
    json_kv_string(out, "dataset_version", dataset_version(ds));
    if (vs->has_active)
        json_kv_string(out, "active_version", vs->active);
    else
        json_kv_null(out, "active_version");
    json_kv_bool(out, "stale", vs->stale);
}

- (void)get:(TDRequest *)req
{
    dataset *ds = serving_acquire_dataset(server->state);
    if (!ds) {
        td_request_problem(req, 503, NULL, server->replica ? "no dataset is loaded yet; waiting "
                           "for the first one from the primary" : "no dataset is loaded yet");
        if (server->replica) {
            api_problem_begin(&req->problem, "/readyz", req->out);
            replica_members(req->out, server->replica, NULL);
            json_object_end(req->out);
            req->problemWritten = true;
        }
        return;
    }
    serving_version_state vs;
    memset(&vs, 0, sizeof vs);
    if (server->follower)
        serving_follower_state(server->follower, ds, &vs);
    if (vs.stale && !vs.switching) {
        td_request_problem(req, 503, NULL, "serving version %s, which is not the active one: %s",
                           dataset_version(ds), vs.problem);
        api_problem_begin(&req->problem, "/readyz", req->out);
        version_members(req->out, ds, &vs);
        json_object_end(req->out);
        req->problemWritten = true;
        dataset_release(ds);
        return;
    }
    json_object_begin(req->out);
    json_kv_string(req->out, "status", "ready");
    version_members(req->out, ds, &vs);
    if (vs.stale)
        json_kv_bool(req->out, "switching", true);
    json_kv_bool(req->out, "realtime", serving_realtime(server->state) != NULL);
    realtime_members(req->out, serving_realtime(server->state), req->now);
    replica_members(req->out, server->replica, ds);
    feed_validity validity;
    feed_validity_at(ds, req->now, &validity);
    feed_validity_write(req->out, &validity);
    char warning[256];
    if (feed_validity_warning(&validity, warning, sizeof warning))
        json_kv_string(req->out, "warning", warning);
    json_object_end(req->out);
    dataset_release(ds);
}

@end
