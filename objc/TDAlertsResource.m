/* TDAlertsResource.m — /v1/alerts and /v1/alerts/{id}: service alerts, the
 * API's one writable resource.
 *
 * Why it exists: the verbs are messages. GET lists or shows (api_alerts and
 * api_alert in src/api/api_alerts.c, on the request's alert view); POST creates with a
 * server id; PUT creates or replaces by id (idempotent); PATCH applies a JSON
 * merge patch; DELETE removes. The server has already checked the bearer
 * token (TDServer's -answer:). A write checks the body (alert.c) and the ids
 * it names against the dataset being served, then, holding the server's
 * alert-write lock, commits to live.sqlite with the client's If-Match /
 * If-None-Match checked inside the transaction, and publishes a new alert
 * view: the next request sees the change, and the ETags of the responses
 * that show alerts change with the generation.
 */
#import "TDResource.h"
#import "TDServer.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "transit/rt_alerts.h"

/* ------------------------------------------------------------ shared */

/* The media type of the body, without parameters, is one of `types`. */
static bool content_type_is(TDRequest *req, const char *const *types)
{
    const char *ct = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!ct)
        return false;
    size_t n = strcspn(ct, ";");
    while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    for (const char *const *t = types; *t; t++)
        if (strlen(*t) == n && strncasecmp(ct, *t, n) == 0)
            return true;
    return false;
}

/* The checks every write makes before reading the body. */
static bool ready_to_write(TDServer *server, TDRequest *req, bool merge_patch)
{
    static const char *const json_types[] = {"application/json", NULL};
    static const char *const patch_types[] = {"application/merge-patch+json", "application/json",
                                              NULL};
    if (!serving_live(server->state)) {
        td_request_problem(req, 503, NULL, "the live store (%.200s/live.sqlite) could not be "
                                           "opened; see the server log",
                           server->config.data_dir);
        return false;
    }
    if (!content_type_is(req, merge_patch ? patch_types : json_types)) {
        td_request_problem(req, 415, NULL, "send the alert as Content-Type: %s",
                           merge_patch ? "application/merge-patch+json" : "application/json");
        return false;
    }
    if (!req->dataset) {
        td_request_problem(req, 503, NULL, "no dataset is loaded, so the stop, route and trip "
                                           "ids of an alert cannot be checked yet");
        return false;
    }
    return true;
}

/* An entity-tag's opaque characters (RFC 9110 §8.8.3: etagc, obs-text included). */
static bool is_etag_char(unsigned char ch)
{
    return ch == 0x21 || (ch >= 0x23 && ch <= 0x7e) || ch >= 0x80;
}

/* If-Match: * alone, or a list of entity-tags (RFC 9110 §13.1.1). A well-formed
 * tag that is not one of ours ("42") or is weak can never match: the write then
 * fails its precondition (412); only a malformed header is a 400. */
static bool read_if_match(TDRequest *req, const char *im, live_condition *c)
{
    c->if_match = true;
    const char *p = im + strspn(im, " \t,");
    if (*p == '*' && p[1 + strspn(p + 1, " \t,")] == '\0') {
        c->if_match_any = true;
        return true;
    }
    int ntags = 0;
    for (;;) {
        p += strspn(p, " \t,");
        if (!*p)
            break;
        bool weak = p[0] == 'W' && p[1] == '/';   /* never matches: If-Match compares strongly */
        if (weak)
            p += 2;
        const char *close = *p == '"' ? p + 1 : NULL;
        while (close && is_etag_char((unsigned char)*close))
            close++;
        const char *after = close && *close == '"' ? close + 1 : NULL;
        if (after)
            after += strspn(after, " \t");
        if (!after || (*after != ',' && *after != '\0')) {
            td_request_problem(req, 400, "If-Match",
                               "If-Match must be * or a list of ETags such as \"42\" (as GET returned)");
            return false;
        }
        char *end = NULL;
        long long v = p[1] >= '1' && p[1] <= '9' ? strtoll(p + 1, &end, 10) : 0;
        if (end && end < close && *end == '-' && close - end == 9 &&
            strspn(end + 1, "0123456789abcdef") >= 8)
            end = (char *)close;   /* "<revision>-<hash>": the same revision in another language */
        if (!weak && end == close && v > 0 && c->nrevisions < LIVE_CONDITION_TAGS)
            c->revisions[c->nrevisions++] = v;
        ntags++;
        p = after;
    }
    if (ntags == 0) {
        td_request_problem(req, 400, "If-Match", "If-Match is empty: send * or the ETag GET returned");
        return false;
    }
    return true;
}

/* If-Match (read_if_match); If-None-Match: * only. */
static bool read_conditions(TDRequest *req, live_condition *c)
{
    memset(c, 0, sizeof *c);
    const char *im = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_IF_MATCH);
    const char *inm = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (inm) {
        const char *p = inm + strspn(inm, " \t");
        if (p[0] != '*' || p[1 + strspn(p + 1, " \t")] != '\0') {
            td_request_problem(req, 400, "If-None-Match",
                               "on a write, If-None-Match takes only * (create, never replace)");
            return false;
        }
        c->if_none_match_any = true;
    }
    return !im || read_if_match(req, im, c);
}

static void problem_of(TDRequest *req, const alert_error *e)
{
    td_request_problem(req, e->status, NULL, "%s", e->detail);
    snprintf(req->problem.pointer, sizeof req->problem.pointer, "%s", e->pointer);
}

/* The alert's strong ETag: "<revision>" for the representation no language
 * was ranked for, "<revision>-<8 hex digits>" (a hash of the ranked tags) for one
 * whose texts were chosen by Accept-Language. If-Match takes both (read_if_match). */
static void alert_etag(TDRequest *req, const alert *a)
{
    const alert_language *l = &req->alertLanguage;
    if (!req->alertLanguageSet || l->nranked == 0 || !alert_multilingual(a)) {
        snprintf(req->responseEtag, sizeof req->responseEtag, "\"%lld\"", (long long)a->revision);
        return;
    }
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < l->nranked; i++)
        for (const char *c = l->ranked[i];; c++) {
            h = (h ^ (unsigned char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c)) * 16777619u;
            if (!*c)
                break;
        }
    snprintf(req->responseEtag, sizeof req->responseEtag, "\"%lld-%08x\"", (long long)a->revision, h);
}

/* The written alert's representation as the response, with its strong ETag:
 * its texts in the request's languages, ranked among its own. */
static void answer_with(TDRequest *req, const alert *a, int status)
{
    req->status = status;
    const char *tags[ALERT_TEXT_FIELDS * ALERT_TRANSLATIONS_MAX];
    uint32_t ntags = 0;
    for (int f = 0; f < ALERT_TEXT_FIELDS; f++)
        for (uint32_t i = 0; i < a->texts[f].count; i++)
            if (a->texts[f].items[i].language)
                tags[ntags++] = a->texts[f].items[i].language;
    req->alertLanguageSet = false;
    if (alert_multilingual(a))
        td_request_rank_alert_languages(req, MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                                         MHD_HTTP_HEADER_ACCEPT_LANGUAGE),
                                        tags, ntags);
    alert_write(req->out, a, req->alertLanguageSet ? &req->alertLanguage : NULL);
    alert_etag(req, a);
    req->cacheSeconds = -1;
}

static void precondition_failed(TDRequest *req, const live_condition *c, const char *id)
{
    if (c->if_none_match_any)
        td_request_problem(req, 412, NULL, "alert '%.100s' exists already (If-None-Match: *)", id);
    else if (c->if_match && c->expect_revision == 0)
        td_request_problem(req, 412, NULL, "alert '%.100s' has changed or is gone since the "
                                           "ETag in If-Match was read; GET it again", id);
    else
        td_request_problem(req, 412, NULL, "alert '%.100s' changed while the patch was applied; "
                                           "send it again", id);
}

/* Commits `a` (checked, its ids checked) and publishes the new view. Call
 * with the alert-write lock held. */
static void commit_alert(TDServer *server, TDRequest *req, alert *a, const live_condition *c)
{
    char err[512];
    live_result r = serving_put_alert(server->state, a, c, (int64_t)time(NULL), err, sizeof err);
    switch (r) {
    case LIVE_CREATED:
    case LIVE_REPLACED: {
        answer_with(req, a, r == LIVE_CREATED ? 201 : 200);
        if (r == LIVE_CREATED)
            snprintf(req->location, sizeof req->location, "/v1/alerts/%s", a->id);
        break;
    }
    case LIVE_PRECONDITION_FAILED:
        precondition_failed(req, c, a->id);
        break;
    case LIVE_FULL:
        td_request_problem(req, 409, NULL, "there are %d alerts already, the most the live store "
                                           "keeps; delete some first", LIVE_ALERTS_MAX);
        break;
    default:
        fprintf(stderr, "transitd: alert write failed: %s\n", err);
        td_request_problem(req, 500, NULL, "the live store could not write the alert: %.180s", err);
        break;
    }
}

/* ------------------------------------------------------------ /v1/alerts */

@interface TDAlertsResource : TDApiResource
@end

@implementation TDAlertsResource

- (api_endpoint_fn)endpoint
{
    return api_alerts;
}

+ (BOOL)needsDataset
{
    return NO;
}

+ (BOOL)showsAlerts
{
    return YES;
}

+ (BOOL)writesOnQueue
{
    return YES;   /* a commit waits for its fsync */
}

- (void)post:(TDRequest *)req
{
    live_condition c;
    if (!ready_to_write(server, req, false) || !read_conditions(req, &c))
        return;
    if (c.if_match) {
        td_request_problem(req, 400, "If-Match", "a POST creates a new alert; If-Match belongs "
                                                 "on PUT, PATCH or DELETE of /v1/alerts/{id}");
        return;
    }
    char id[ALERT_ID_MAX + 1];
    alert_new_id(id);
    alert_error e = {0};
    alert *a = alert_parse(req->body, req->bodyLength, id, false, &e);
    if (!a || alert_check_references(a, req->dataset, &e) != 0) {
        problem_of(req, &e);
        alert_release(a);
        return;
    }
    c.if_none_match_any = true;   /* a fresh id: never replace */
    serving_lock_alert_writes(server->state);
    commit_alert(server, req, a, &c);
    serving_unlock_alert_writes(server->state);
    alert_release(a);
}

@end

/* ------------------------------------------------------------ /v1/alerts/{id} */

@interface TDAlertResource : TDApiResource
@end

@implementation TDAlertResource

- (api_endpoint_fn)endpoint
{
    return api_alert;
}

+ (BOOL)needsDataset
{
    return NO;
}

+ (BOOL)showsAlerts
{
    return YES;
}

+ (BOOL)writesOnQueue
{
    return YES;   /* a commit waits for its fsync */
}

+ (BOOL)usesServerETag
{
    return NO;   /* the alert's own strong ETag, its revision, usable in If-Match */
}

- (void)get:(TDRequest *)req
{
    td_request_run_endpoint(req, endpointFunction);
    if (req->status != 200)
        return;
    long i = alert_view_find(req->alerts, req->resourceId);
    const alert *a = alert_view_at(req->alerts, (uint32_t)i);
    alert_etag(req, a);
    const char *inm = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (inm && (strstr(inm, req->responseEtag) || strchr(inm, '*'))) {
        json_reset(req->out);
        req->status = 304;
    }
}

/* The path's id, when it may name an alert the API writes ("rt:" ids are
 * the realtime feed's). */
static bool valid_id(TDRequest *req)
{
    if (alert_id_valid(req->resourceId) && rt_alert_id(req->resourceId)) {
        td_request_problem(req, 403, "alert_id",
                           "alert ids starting with \"" RT_ALERT_ID_PREFIX "\" come from the "
                           "GTFS-Realtime feed and are read-only (got '%.80s')", req->resourceId);
        return false;
    }
    if (alert_id_valid(req->resourceId))
        return true;
    td_request_problem(req, 400, "alert_id",
                       "an alert id is 1 to %d characters of A-Z a-z 0-9 . _ ~ : - (got '%.80s')",
                       ALERT_ID_MAX, req->resourceId);
    return false;
}

- (void)put:(TDRequest *)req
{
    live_condition c;
    if (!valid_id(req) || !ready_to_write(server, req, false) || !read_conditions(req, &c))
        return;
    alert_error e = {0};
    alert *a = alert_parse(req->body, req->bodyLength, req->resourceId, true, &e);
    if (!a || alert_check_references(a, req->dataset, &e) != 0) {
        problem_of(req, &e);
        alert_release(a);
        return;
    }
    serving_lock_alert_writes(server->state);
    commit_alert(server, req, a, &c);
    serving_unlock_alert_writes(server->state);
    alert_release(a);
}

- (void)patch:(TDRequest *)req
{
    live_condition c;
    if (!valid_id(req) || !ready_to_write(server, req, true) || !read_conditions(req, &c))
        return;
    if (c.if_none_match_any) {
        td_request_problem(req, 400, "If-None-Match", "a PATCH changes an existing alert; to "
                                                      "create one, PUT it");
        return;
    }
    serving_lock_alert_writes(server->state);
    alert_view *v = serving_acquire_alerts(server->state);
    long i = v ? alert_view_find(v, req->resourceId) : -1;
    if (i < 0) {
        td_request_problem(req, 404, "alert_id", "there is no alert '%.200s'", req->resourceId);
    } else {
        const alert *old = alert_view_at(v, (uint32_t)i);
        alert_error e = {0};
        alert *a = NULL;
        bool tag_matches = c.if_match_any || !c.if_match;
        for (int k = 0; k < c.nrevisions; k++)
            tag_matches = tag_matches || c.revisions[k] == old->revision;
        /* the store checks the client's If-Match again, and that nobody
         * wrote since `old` was read */
        c.expect_revision = old->revision;
        /* a malformed patch is a 400 or 422 whatever If-Match says: the client
         * learns what to fix before it fetches the alert again */
        if (!(a = alert_merge_patch(old, req->body, req->bodyLength, &e)))
            problem_of(req, &e);
        else if (!tag_matches)
            td_request_problem(req, 412, NULL, "alert '%.100s' has changed since the ETag in "
                                               "If-Match was read (it is now \"%lld\"); GET it "
                                               "again", old->id, (long long)old->revision);
        else if (alert_check_references(a, req->dataset, &e) != 0)
            problem_of(req, &e);
        else
            commit_alert(server, req, a, &c);
        alert_release(a);
    }
    if (v)
        alert_view_release(v);
    serving_unlock_alert_writes(server->state);
}

- (void)delete:(TDRequest *)req
{
    live_condition c;
    if (!valid_id(req) || !read_conditions(req, &c))
        return;
    if (!serving_live(server->state)) {
        td_request_problem(req, 503, NULL, "the live store could not be opened; see the server log");
        return;
    }
    char err[512];
    serving_lock_alert_writes(server->state);
    live_result r = serving_delete_alert(server->state, req->resourceId, &c, err, sizeof err);
    if (r == LIVE_DELETED) {
        req->status = 204;
    } else if (r == LIVE_NOT_FOUND) {
        td_request_problem(req, 404, "alert_id", "there is no alert '%.200s'", req->resourceId);
    } else if (r == LIVE_PRECONDITION_FAILED) {
        precondition_failed(req, &c, req->resourceId);
    } else {
        fprintf(stderr, "transitd: alert delete failed: %s\n", err);
        td_request_problem(req, 500, NULL, "the live store could not delete the alert: %.180s",
                           err);
    }
    serving_unlock_alert_writes(server->state);
}

@end
