/* rt_ingest.c — polling state of a GTFS-Realtime source: last good feed, counts.
 *
 * Why it exists: see include/transit/rt_ingest.h.
 */
#include "transit/rt_ingest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transit/rt_alerts.h"
#include "transit/rt_encode.h"
#include "transit/rt_fetch.h"

struct rt_ingest {
    char *source;
    unsigned timeout_s;
    pthread_mutex_t lock;
    rt_feed *good;                 /* the last good feed, or NULL */
    uint64_t polls, fetch_failures, decode_failures;
    int64_t last_success, last_failure;   /* Unix seconds, 0: never */
    size_t good_bytes;
    uint64_t good_hash;            /* FNV-1a of the good feed's bytes */
    char last_error[256];
    rt_overlay_stats stats;        /* of the last overlay built */
    uint32_t alerts_shown, alerts_rejected;   /* of the last rt_ingest_alerts */
};

rt_ingest *rt_ingest_new(const char *source, unsigned timeout_s)
{
    rt_ingest *in = calloc(1, sizeof *in);
    if (!in) return NULL;
    if (!(in->source = strdup(source))) {
        free(in);
        return NULL;
    }
    in->timeout_s = timeout_s;
    pthread_mutex_init(&in->lock, NULL);
    return in;
}

void rt_ingest_free(rt_ingest *in)
{
    if (!in) return;
    rt_feed_free(in->good);
    pthread_mutex_destroy(&in->lock);
    free(in->source);
    free(in);
}

const char *rt_ingest_source(const rt_ingest *in) { return in->source; }

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

rt_poll_result rt_ingest_poll(rt_ingest *in, int64_t now, char *err, size_t errlen)
{
    uint8_t *data = NULL;
    size_t len = 0;
    char why[224];
    bool fetched = rt_fetch(in->source, in->timeout_s, &data, &len, why, sizeof why) == 0;
    uint64_t hash = fetched ? fnv1a(data, len) : 0;
    pthread_mutex_lock(&in->lock);
    bool same = fetched && in->good && in->good_bytes == len && in->good_hash == hash;
    pthread_mutex_unlock(&in->lock);
    rt_feed *feed = fetched && !same ? rt_feed_decode(data, len, why, sizeof why) : NULL;
    free(data);
    pthread_mutex_lock(&in->lock);
    in->polls++;
    rt_feed *old = NULL;
    if (same) {
        in->last_success = now;
    } else if (feed) {
        old = in->good;
        in->good = feed;
        in->good_bytes = len;
        in->good_hash = hash;
        in->last_success = now;
    } else {
        if (fetched) in->decode_failures++;
        else in->fetch_failures++;
        in->last_failure = now;
        snprintf(in->last_error, sizeof in->last_error, "%s", why);
    }
    pthread_mutex_unlock(&in->lock);
    rt_feed_free(old);
    if (same) return RT_POLL_UNCHANGED;
    if (!feed) {
        snprintf(err, errlen, "%s", why);
        return RT_POLL_FAILED;
    }
    return RT_POLL_NEW;
}

rt_overlay *rt_ingest_overlay(rt_ingest *in, dataset *ds, int64_t now)
{
    rt_overlay_stats stats;
    /* the feed stays the last good one while the lock is held: a poll that
     * replaces it waits, and frees the old one only after */
    pthread_mutex_lock(&in->lock);
    rt_overlay *o = rt_overlay_build(in->good, ds, now, &stats);
    if (o) in->stats = stats;
    pthread_mutex_unlock(&in->lock);
    return o;
}

long rt_ingest_alerts(rt_ingest *in, int64_t now, alert ***out)
{
    uint32_t rejected = 0;
    char err[256];
    pthread_mutex_lock(&in->lock);
    long n = rt_alerts_from_feed(in->good, now, out, &rejected, err, sizeof err);
    if (n >= 0) {
        in->alerts_shown = (uint32_t)n;
        in->alerts_rejected = rejected;
    }
    pthread_mutex_unlock(&in->lock);
    return n;
}

int rt_ingest_encode_trip_updates(rt_ingest *in, int64_t now, uint8_t **out, size_t *len)
{
    pthread_mutex_lock(&in->lock);
    uint64_t stamp = in->good && in->good->timestamp ? in->good->timestamp : (uint64_t)(now > 0 ? now : 0);
    int rc = rt_encode_trip_updates(in->good, stamp, out, len);
    pthread_mutex_unlock(&in->lock);
    return rc;
}

size_t rt_ingest_render_metrics(rt_ingest *in, int64_t now, char *out, size_t cap)
{
    pthread_mutex_lock(&in->lock);
    const rt_feed *f = in->good;
    const rt_overlay_stats *s = &in->stats;
    int n = snprintf(
        out, cap,
        "# HELP transitd_rt_polls_total Polls of the GTFS-Realtime source.\n"
        "# TYPE transitd_rt_polls_total counter\n"
        "transitd_rt_polls_total %llu\n"
        "# HELP transitd_rt_poll_failures_total Failed polls, by stage; the last good feed stays.\n"
        "# TYPE transitd_rt_poll_failures_total counter\n"
        "transitd_rt_poll_failures_total{stage=\"fetch\"} %llu\n"
        "transitd_rt_poll_failures_total{stage=\"decode\"} %llu\n"
        "# HELP transitd_rt_last_success_age_seconds Seconds since the last good poll (-1: none yet).\n"
        "# TYPE transitd_rt_last_success_age_seconds gauge\n"
        "transitd_rt_last_success_age_seconds %lld\n"
        "# HELP transitd_rt_last_failure_timestamp_seconds When the last poll failed (0: never).\n"
        "# TYPE transitd_rt_last_failure_timestamp_seconds gauge\n"
        "transitd_rt_last_failure_timestamp_seconds %lld\n"
        "# HELP transitd_rt_feed_timestamp_seconds The header timestamp of the feed in use.\n"
        "# TYPE transitd_rt_feed_timestamp_seconds gauge\n"
        "transitd_rt_feed_timestamp_seconds %llu\n"
        "# HELP transitd_rt_feed_bytes Size of the feed in use.\n"
        "# TYPE transitd_rt_feed_bytes gauge\n"
        "transitd_rt_feed_bytes %zu\n"
        "# HELP transitd_rt_entities Entities of the feed in use, by kind.\n"
        "# TYPE transitd_rt_entities gauge\n"
        "transitd_rt_entities{kind=\"trip_update\"} %u\n"
        "transitd_rt_entities{kind=\"alert\"} %u\n"
        "transitd_rt_entities{kind=\"rejected\"} %u\n"
        "transitd_rt_entities{kind=\"ignored\"} %u\n"
        "# HELP transitd_rt_trip_updates Trip updates of the feed in use against the dataset, by outcome.\n"
        "# TYPE transitd_rt_trip_updates gauge\n"
        "transitd_rt_trip_updates{outcome=\"matched\"} %u\n"
        "transitd_rt_trip_updates{outcome=\"canceled\"} %u\n"
        "transitd_rt_trip_updates{outcome=\"unknown_trip\"} %u\n"
        "transitd_rt_trip_updates{outcome=\"not_running\"} %u\n"
        "transitd_rt_trip_updates{outcome=\"bad_start_time\"} %u\n"
        "transitd_rt_trip_updates{outcome=\"duplicate\"} %u\n"
        "transitd_rt_trip_updates{outcome=\"added\"} %u\n"
        "transitd_rt_trip_updates{outcome=\"added_no_route\"} %u\n"
        "transitd_rt_trip_updates{outcome=\"added_no_departure\"} %u\n"
        "# HELP transitd_rt_alerts Alerts of the feed in use, shown (as rt: ids) or refused by the alert checks.\n"
        "# TYPE transitd_rt_alerts gauge\n"
        "transitd_rt_alerts{outcome=\"shown\"} %u\n"
        "transitd_rt_alerts{outcome=\"rejected\"} %u\n",
        (unsigned long long)in->polls, (unsigned long long)in->fetch_failures,
        (unsigned long long)in->decode_failures,
        (long long)(in->last_success ? now - in->last_success : -1), (long long)in->last_failure,
        (unsigned long long)(f ? f->timestamp : 0), f ? in->good_bytes : 0, f ? f->trip_update_count : 0,
        f ? f->alert_count : 0, f ? f->rejected : 0, f ? f->ignored : 0, s->matched, s->canceled,
        s->unknown_trip, s->not_running, s->bad_start_time, s->duplicate, s->added,
        s->added_no_route, s->added_no_departure,
        in->alerts_shown, in->alerts_rejected);
    pthread_mutex_unlock(&in->lock);
    return n < 0 ? 0 : (size_t)n;
}
