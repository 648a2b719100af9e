/* rt_ingest.c — polling state of the GTFS-Realtime sources: each one's last
 * good feed and counts, and the merge of them all.
 *
 * Why it exists: see include/transit/rt_ingest.h.
 */
#include "transit/rt_ingest.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transit/rt_alerts.h"
#include "transit/rt_encode.h"
#include "transit/rt_fetch.h"
#include "transit/rt_feed_merge.h"
#include "transit/rt_feed_namespace.h"

/* What one source's fetch and decode gave, before it is installed. */
typedef struct source_poll {
    enum { GOT_NOTHING, GOT_SAME, GOT_FEED, GOT_FETCH_ERROR, GOT_DECODE_ERROR } what;
    rt_feed *feed;
    uint8_t *data;                 /* fetched, not yet decoded (freed by decode_source) */
    size_t bytes;
    uint64_t hash;
    rt_fetch_validators validators;
    bool not_modified;             /* GOT_SAME from a 304 */
    char why[224];
} source_poll;


typedef struct rt_source {
    char *location;
    char label[512];
    char **headers;
    size_t nheaders;
    rt_fetch_validators validators;   /* of the good feed's answer */
    rt_feed *good;                    /* the last good feed, or NULL */
    size_t good_bytes;
    uint64_t good_hash;               /* FNV-1a of the good feed's bytes */
    uint64_t polls, fetch_failures, decode_failures, not_modified;
    int64_t last_success, last_failure;   /* Unix seconds, 0: never */
    char last_error[256];
    bool merged;                      /* its good feed is in the merge */
    char feed[48];                    /* --gtfs-rt-feed: its ids' feed of a merged dataset, or "" */
    /* its fetch on a thread of its own (several sources), under the lock: */
    struct rt_ingest *in;
    pthread_t fetcher;
    bool in_flight;                   /* started and not joined yet */
    bool fetched;                     /* ... and finished: `pending` is its result */
    source_poll pending;
} rt_source;

/* The feed in use: the merge, and a reference to every source feed it
 * points into. Counted: the overlay build, the alerts and the trip-updates
 * export each take a reference under the lock and work on it after letting
 * the lock go, so a poll never waits for them nor frees what they read, and
 * /metrics and /readyz never wait for a 64 MB feed's overlay. */
typedef struct feed_use {
    int refs;
    rt_feed *merged;               /* NULL: no feed */
    bool merged_owned;             /* several sources: arrays of ours over their feeds */
    rt_feed *sources[RT_MAX_SOURCES];
    size_t nsources;
} feed_use;

static feed_use *use_retain(feed_use *u)
{
    if (u) __atomic_add_fetch(&u->refs, 1, __ATOMIC_RELAXED);
    return u;
}

static void use_release(feed_use *u)
{
    if (!u || __atomic_sub_fetch(&u->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    if (u->merged_owned) rt_feed_merged_free(u->merged);
    for (size_t i = 0; i < u->nsources; i++) rt_feed_free(u->sources[i]);
    free(u);
}

struct rt_ingest {
    rt_source *sources;
    size_t count;
    unsigned timeout_s, max_age_s;
    pthread_mutex_t lock;          /* held only to read or swap the state, never to build */
    pthread_cond_t fetch_done;     /* a source's fetch thread finished (CLOCK_REALTIME) */
    unsigned poll_wait_ms;         /* how long a poll waits for fetches; 0: for all of them */
    int stopping;                  /* atomic: cancels the fetches in flight */
    feed_use *use;                 /* the feed in use, or NULL */
    uint64_t polls;                /* rounds */
    rt_overlay_stats stats;        /* of the last overlay built */
    rt_vehicles_stats vehicle_stats;   /* of the vehicles built with it */
    int64_t vehicles_expire_at;    /* when a vehicle shown goes stale: build again */
    uint32_t alerts_shown, alerts_rejected;   /* of the last rt_ingest_alerts */
    rt_id_exists_fn id_exists;     /* the served dataset's ids, for sources that name a feed */
    void *id_exists_ctx;
};

void rt_ingest_set_id_lookup(rt_ingest *in, rt_id_exists_fn exists, void *ctx)
{
    in->id_exists = exists;
    in->id_exists_ctx = ctx;
}

/* The feed in use with a reference of the caller's (release it with
 * use_release), or NULL. */
static feed_use *take_use(rt_ingest *in)
{
    pthread_mutex_lock(&in->lock);
    feed_use *u = use_retain(in->use);
    pthread_mutex_unlock(&in->lock);
    return u;
}

void rt_ingest_set_poll_wait(rt_ingest *in, unsigned ms) { in->poll_wait_ms = ms; }

void rt_ingest_free(rt_ingest *in)
{
    if (!in) return;
    __atomic_store_n(&in->stopping, 1, __ATOMIC_RELEASE);
    for (size_t i = 0; i < in->count && in->sources; i++)
        if (in->sources[i].in_flight) {   /* no poll runs now: nobody else joins it */
            pthread_join(in->sources[i].fetcher, NULL);
            free(in->sources[i].pending.data);
        }
    use_release(in->use);
    for (size_t i = 0; i < in->count; i++) {
        rt_source *s = &in->sources[i];
        rt_feed_free(s->good);
        for (size_t h = 0; h < s->nheaders; h++) free(s->headers[h]);
        free(s->headers);
        free(s->location);
    }
    free(in->sources);
    pthread_cond_destroy(&in->fetch_done);
    pthread_mutex_destroy(&in->lock);
    free(in);
}

rt_ingest *rt_ingest_new_sources(const rt_source_list *list, unsigned timeout_s, unsigned max_age_s)
{
    if (!list->count || list->count > RT_MAX_SOURCES) return NULL;
    rt_ingest *in = calloc(1, sizeof *in);
    if (!in) return NULL;
    pthread_mutex_init(&in->lock, NULL);
    pthread_cond_init(&in->fetch_done, NULL);
    in->timeout_s = timeout_s;
    in->max_age_s = max_age_s;
    in->vehicles_expire_at = INT64_MAX;
    if (!(in->sources = calloc(list->count, sizeof *in->sources))) {
        rt_ingest_free(in);
        return NULL;
    }
    for (size_t i = 0; i < list->count; i++) {
        const rt_source_spec *spec = &list->sources[i];
        rt_source *s = &in->sources[in->count++];
        s->in = in;
        rt_source_label(spec->location, s->label, sizeof s->label);
        snprintf(s->feed, sizeof s->feed, "%s", spec->feed ? spec->feed : "");
        if (!(s->location = strdup(spec->location)) ||
            !(s->headers = calloc(spec->nheaders ? spec->nheaders : 1, sizeof *s->headers))) {
            rt_ingest_free(in);
            return NULL;
        }
        for (size_t h = 0; h < spec->nheaders; h++, s->nheaders++)
            if (!(s->headers[h] = strdup(spec->headers[h]))) {
                rt_ingest_free(in);
                return NULL;
            }
    }
    return in;
}

rt_ingest *rt_ingest_new(const char *source, unsigned timeout_s)
{
    rt_source_list list = {.count = 1};
    list.sources[0].location = source;
    return rt_ingest_new_sources(&list, timeout_s, 0);
}

size_t rt_ingest_source_count(const rt_ingest *in) { return in->count; }
const char *rt_ingest_source_label(const rt_ingest *in, size_t i) { return in->sources[i].label; }

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* ------------------------------------------------------------ the merge */

/* Sources in the merge, newest feed timestamp first (a tie: the one given
 * first), into order; their count. */
static size_t merge_order(const rt_ingest *in, size_t *order)
{
    size_t n = 0;
    for (size_t i = 0; i < in->count; i++) {
        if (!in->sources[i].merged) continue;
        size_t j = n++;
        uint64_t t = in->sources[i].good->timestamp;
        for (; j > 0 && in->sources[order[j - 1]].good->timestamp < t; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    return n;
}

/* The merged feed of the sources marked merged, in use from now; call with
 * the lock held. The one it replaces goes to *old (release it after the
 * lock). False when out of memory (the previous merge stays). */
static bool rebuild_merge(rt_ingest *in, feed_use **old)
{
    size_t order[RT_MAX_SOURCES];
    size_t n = merge_order(in, order);
    feed_use *u = calloc(1, sizeof *u);
    if (!u)
        return false;
    u->refs = 1;
    if (in->count == 1 || n <= 1) {
        u->merged = n ? in->sources[order[0]].good : NULL;
    } else {
        const rt_feed *feeds[RT_MAX_SOURCES];
        for (size_t k = 0; k < n; k++)
            feeds[k] = in->sources[order[k]].good;
        if (!(u->merged = rt_feed_merge(feeds, n))) {
            free(u);
            return false;
        }
        u->merged_owned = true;
    }
    for (size_t k = 0; k < n; k++)
        u->sources[u->nsources++] = rt_feed_retain(in->sources[order[k]].good);
    *old = in->use;
    in->use = u;
    return true;
}

/* ------------------------------------------------------------ polling */


/* Whether the file at `path` holds the good feed's bytes (its size and
 * FNV-1a hash, as decode_source compares them), read a chunk at a time: a
 * file polled every second and not changed was read whole each time, 64 MB
 * for a large feed held beside the feed in use and its overlay. */
static bool file_unchanged(const char *path, size_t good_bytes, uint64_t good_hash)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    unsigned char chunk[65536];
    uint64_t h = 14695981039346656037ull;
    size_t total = 0, n;
    while (total <= good_bytes && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        for (size_t i = 0; i < n; i++) {
            h ^= chunk[i];
            h *= 1099511628211ull;
        }
        total += n;
    }
    bool same = !ferror(f) && total == good_bytes && h == good_hash;
    fclose(f);
    return same;
}

/* The network part of a poll: the bytes, or a 304, or an error (or, for a
 * file with the good feed's bytes, GOT_SAME without holding them). */
static void fetch_source(rt_ingest *in, rt_source *s, source_poll *out)
{
    pthread_mutex_lock(&in->lock);
    rt_fetch_validators sent = s->good ? s->validators : (rt_fetch_validators){{0}, {0}};
    bool has_good = s->good != NULL;
    size_t good_bytes = s->good_bytes;
    uint64_t good_hash = s->good_hash;
    pthread_mutex_unlock(&in->lock);
    if (has_good && good_bytes && !rt_source_is_url(s->location) &&
        file_unchanged(s->location, good_bytes, good_hash)) {
        out->what = GOT_SAME;
        return;
    }
    int rc = rt_fetch_conditional(s->location, s->label, in->timeout_s, (const char *const *)s->headers,
                                  s->nheaders, &sent, &out->validators, &out->data, &out->bytes,
                                  &in->stopping, out->why, sizeof out->why);
    if (rc == 1) {
        out->what = GOT_SAME;
        out->not_modified = true;
    } else if (rc != 0) {
        out->what = GOT_FETCH_ERROR;
    }
}

static void *fetch_source_thread(void *arg)
{
    rt_source *s = arg;
    source_poll got = {0};
    fetch_source(s->in, s, &got);
    pthread_mutex_lock(&s->in->lock);
    s->pending = got;
    s->fetched = true;
    pthread_cond_broadcast(&s->in->fetch_done);
    pthread_mutex_unlock(&s->in->lock);
    return NULL;
}

/* Several sources are fetched at once, each on a thread of its own, and a
 * poll waits for them at most poll_wait_ms (the server's poll interval): a
 * source that hangs until its timeout (30 s or the interval) delays no other
 * source's feed, as it did when they were fetched one after the other; its
 * fetch stays in flight across polls and is taken by the first poll after
 * it ends. Only the waiting overlaps: decoding stays one source at a time
 * (decode_source), so a poll's peak memory is the fetched bytes plus one
 * feed's decode. One source is fetched on the caller's thread. Sets got[i]
 * for each source whose result this poll takes. */
static void fetch_sources(rt_ingest *in, source_poll *polls, bool *got, size_t n)
{
    bool here[RT_MAX_SOURCES] = {false};
    pthread_mutex_lock(&in->lock);
    for (size_t i = 0; i < n; i++) {
        rt_source *s = &in->sources[i];
        if (s->in_flight)
            continue;
        s->fetched = false;
        s->pending = (source_poll){0};
        /* a thread that cannot start: fetched here */
        s->in_flight = n > 1 && pthread_create(&s->fetcher, NULL, fetch_source_thread, s) == 0;
        here[i] = !s->in_flight;
    }
    pthread_mutex_unlock(&in->lock);
    for (size_t i = 0; i < n; i++)
        if (here[i]) {
            fetch_source(in, &in->sources[i], &polls[i]);
            got[i] = true;
        }
    /* CLOCK_REALTIME: macOS has no pthread_condattr_setclock; a clock step
     * only makes this one wait shorter or longer */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += in->poll_wait_ms / 1000;
    until.tv_nsec += (long)(in->poll_wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&in->lock);
    for (;;) {
        bool waiting = false;
        for (size_t i = 0; i < n; i++)
            waiting |= in->sources[i].in_flight && !in->sources[i].fetched;
        if (!waiting)
            break;
        if (!in->poll_wait_ms)
            pthread_cond_wait(&in->fetch_done, &in->lock);
        else if (pthread_cond_timedwait(&in->fetch_done, &in->lock, &until) == ETIMEDOUT)
            break;
    }
    for (size_t i = 0; i < n; i++) {
        rt_source *s = &in->sources[i];
        if (!s->in_flight || !s->fetched)
            continue;
        /* it set `fetched` under this lock, so it has only to return */
        pthread_join(s->fetcher, NULL);
        s->in_flight = false;
        polls[i] = s->pending;
        s->pending = (source_poll){0};
        got[i] = true;
    }
    pthread_mutex_unlock(&in->lock);
}

/* The CPU part of a poll, for fetched bytes: the same bytes as the good
 * feed, or a new feed decoded (and namespaced), or a decode error. */
static void decode_source(rt_ingest *in, rt_source *s, source_poll *out)
{
    if (out->what != GOT_NOTHING)
        return;
    uint8_t *data = out->data;
    size_t len = out->bytes;
    out->data = NULL;
    uint64_t hash = fnv1a(data, len);
    pthread_mutex_lock(&in->lock);
    bool same = s->good && s->good_bytes == len && s->good_hash == hash;
    pthread_mutex_unlock(&in->lock);
    if (same) {
        out->what = GOT_SAME;
    } else if ((out->feed = rt_feed_decode_packed(data, len, out->why, sizeof out->why)) && s->feed[0] &&
               in->id_exists && rt_feed_namespace(out->feed, s->feed, in->id_exists, in->id_exists_ctx) < 0) {
        rt_feed_free(out->feed);
        out->feed = NULL;
        snprintf(out->why, sizeof out->why, "out of memory reading its ids in feed %s", s->feed);
        out->what = GOT_DECODE_ERROR;
    } else if (out->feed) {
        out->what = GOT_FEED;
        out->hash = hash;
    } else {
        out->what = GOT_DECODE_ERROR;
    }
    free(data);
}

static bool is_stale(const rt_ingest *in, const rt_source *s, int64_t now)
{
    return in->max_age_s && s->last_success && now - s->last_success > (int64_t)in->max_age_s;
}

/* Appends why to err, joined by "; ", prefixed "label: " unless it names
 * the source already (a fetch error does). */
static void add_error(char *err, size_t errlen, const char *label, const char *why)
{
    size_t used = strlen(err);
    bool named = strstr(why, label) != NULL;
    if (used + 1 < errlen)
        snprintf(err + used, errlen - used, "%s%s%s%s", used ? "; " : "", named ? "" : label,
                 named ? "" : ": ", why);
}

rt_poll_result rt_ingest_poll(rt_ingest *in, int64_t now, char *err, size_t errlen)
{
    source_poll polls[RT_MAX_SOURCES];
    size_t n = in->count < RT_MAX_SOURCES ? in->count : RT_MAX_SOURCES;
    if (errlen) err[0] = '\0';
    bool got[RT_MAX_SOURCES] = {false};
    for (size_t i = 0; i < n; i++)
        polls[i] = (source_poll){0};
    fetch_sources(in, polls, got, n);
    for (size_t i = 0; i < n; i++)
        if (got[i])
            decode_source(in, &in->sources[i], &polls[i]);
    rt_feed *old[RT_MAX_SOURCES];
    size_t nold = 0;
    bool failed = false, changed = false;
    pthread_mutex_lock(&in->lock);
    in->polls++;
    for (size_t i = 0; i < n; i++) {
        rt_source *s = &in->sources[i];
        source_poll *p = &polls[i];
        if (!got[i]) {
            /* still fetching: nothing new of it, but it may have gone stale */
        } else if (s->polls++, p->what == GOT_SAME) {
            s->last_success = now;
            if (p->not_modified) s->not_modified++;
            else s->validators = p->validators;   /* identical bytes: their answer's validators */
        } else if (p->what == GOT_FEED) {
            if (p->feed->rejected)   /* once per new feed: the entities it skips, the first by id and field */
                fprintf(stderr, "transitd: realtime: source %s: %u entities skipped; the first: %s\n", s->label,
                        p->feed->rejected, p->feed->first_rejection);
            old[nold++] = s->good;
            s->good = p->feed;
            s->good_bytes = p->bytes;
            s->good_hash = p->hash;
            s->validators = p->validators;
            s->last_success = now;
            changed = true;
        } else {
            if (p->what == GOT_DECODE_ERROR) s->decode_failures++;
            else s->fetch_failures++;
            s->last_failure = now;
            snprintf(s->last_error, sizeof s->last_error, "%s", p->why);
            add_error(err, errlen, s->label, p->why);
            failed = true;
        }
        bool merged = s->good && !is_stale(in, s, now);
        changed |= merged != s->merged;
        s->merged = merged;
    }
    /* a vehicle shown goes stale: the same feeds, but another set to show */
    bool expired = now >= in->vehicles_expire_at;
    feed_use *old_use = NULL;
    bool merged_ok = !changed || rebuild_merge(in, &old_use);
    if (!merged_ok) {
        /* keep the previous merge over the previous feeds: put them back */
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (polls[i].what == GOT_FEED) {
                rt_feed *fresh = in->sources[i].good;
                in->sources[i].good = old[k];
                in->sources[i].good_bytes = 0;   /* decoded again at the next poll */
                in->sources[i].good_hash = 0;
                in->sources[i].validators = (rt_fetch_validators){{0}, {0}};
                old[k++] = fresh;
            }
        add_error(err, errlen, "transitd", "out of memory merging the realtime feeds");
        failed = true;
        changed = false;
    }
    pthread_mutex_unlock(&in->lock);
    /* the feeds replaced go when the last reader of them lets go */
    use_release(old_use);
    for (size_t k = 0; k < nold; k++) rt_feed_free(old[k]);
    if (changed || (expired && merged_ok)) return RT_POLL_NEW;
    return failed ? RT_POLL_FAILED : RT_POLL_UNCHANGED;
}

/* ------------------------------------------------------------ the feed in use */

rt_overlay *rt_ingest_overlay(rt_ingest *in, dataset *ds, int64_t now)
{
    rt_overlay_stats stats;
    rt_vehicles_stats vstats;
    /* built off to the side without the lock: the reference keeps the
     * feeds while a poll replaces them, and readers keep the overlay
     * published until the caller swaps this one in */
    feed_use *u = take_use(in);
    const rt_feed *merged = u ? u->merged : NULL;
    rt_overlay *o = rt_overlay_build(merged, ds, now, &stats);
    rt_vehicles *v = o && merged ? rt_vehicles_build(merged->vehicles, merged->vehicle_count, ds, now,
                                                     in->max_age_s, &vstats)
                                 : NULL;
    if (o && merged && !v) {
        rt_overlay_release(o);   /* out of memory: the previous overlay stays */
        o = NULL;
    }
    if (o) {
        rt_overlay_set_vehicles(o, v);
        pthread_mutex_lock(&in->lock);
        /* a part of an entity the dataset cannot place (an unknown assigned stop): once per
         * overlay whose count of them changed, the first by entity id and field (said below,
         * outside the lock) */
        bool report = stats.unknown_assigned_stop && stats.unknown_assigned_stop != in->stats.unknown_assigned_stop;
        in->stats = stats;
        in->vehicle_stats = v ? vstats : (rt_vehicles_stats){0};
        in->vehicles_expire_at = rt_vehicles_expires_at(v);
        pthread_mutex_unlock(&in->lock);
        if (report)
            fprintf(stderr, "transitd: realtime: %u stop_time_update parts skipped; the first: %s\n",
                    stats.unknown_assigned_stop, stats.problem);
    }
    use_release(u);
    return o;
}

long rt_ingest_alerts(rt_ingest *in, int64_t now, alert ***out)
{
    uint32_t rejected = 0;
    char err[256];
    feed_use *u = take_use(in);
    long n = rt_alerts_from_feed(u ? u->merged : NULL, now, out, &rejected, err, sizeof err);
    use_release(u);
    if (n >= 0) {
        pthread_mutex_lock(&in->lock);
        in->alerts_shown = (uint32_t)n;
        in->alerts_rejected = rejected;
        pthread_mutex_unlock(&in->lock);
    }
    return n;
}

int rt_ingest_encode_trip_updates(rt_ingest *in, int64_t now, uint8_t **out, size_t *len)
{
    feed_use *u = take_use(in);
    const rt_feed *merged = u ? u->merged : NULL;
    uint64_t stamp = merged && merged->timestamp ? merged->timestamp : (uint64_t)(now > 0 ? now : 0);
    int rc = rt_encode_trip_updates(merged, stamp, out, len);
    use_release(u);
    return rc;
}

void rt_ingest_source_state(rt_ingest *in, size_t i, rt_source_state *out)
{
    pthread_mutex_lock(&in->lock);
    const rt_source *s = &in->sources[i];
    *out = (rt_source_state){
        .last_success = s->last_success,
        .last_failure = s->last_failure,
        .has_feed = s->good != NULL,
        .merged = s->merged,
        .entities = s->good ? s->good->trip_update_count + s->good->alert_count + s->good->vehicle_count : 0,
        .vehicles = s->good ? s->good->vehicle_count : 0,
        .feed_timestamp = s->good ? s->good->timestamp : 0,
    };
    if (s->last_failure && s->last_failure >= s->last_success)
        snprintf(out->last_error, sizeof out->last_error, "%s", s->last_error);
    pthread_mutex_unlock(&in->lock);
}

/* ------------------------------------------------------------ metrics */

typedef struct text_out {
    char *p;
    size_t cap, len;   /* len: what is needed, even past cap */
} text_out;

static void put(text_out *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->len < t->cap ? t->p + t->len : NULL, t->len < t->cap ? t->cap - t->len : 0, fmt, ap);
    va_end(ap);
    if (n > 0) t->len += (size_t)n;
}

/* A label's value, escaped as the Prometheus text format wants. */
static void escape_label(const char *in, char *out, size_t cap)
{
    size_t k = 0;
    for (; *in && k + 3 < cap; in++) {
        if (*in == '\\' || *in == '"') out[k++] = '\\', out[k++] = *in;
        else if (*in == '\n') out[k++] = '\\', out[k++] = 'n';
        else out[k++] = *in;
    }
    out[k] = '\0';
}

static void render_sources(rt_ingest *in, int64_t now, text_out *t)
{
    static const char *const series[][3] = {
        {"transitd_rt_source_polls_total", "counter", "Polls of each GTFS-Realtime source."},
        {"transitd_rt_source_poll_failures_total", "counter", "Failed polls of each source, by stage; its last good feed stays."},
        {"transitd_rt_source_not_modified_total", "counter", "Polls of each source that answered 304 Not Modified."},
        {"transitd_rt_source_last_success_age_seconds", "gauge", "Seconds since each source's last good poll (-1: none yet)."},
        {"transitd_rt_source_feed_timestamp_seconds", "gauge", "The header timestamp of each source's last good feed."},
        {"transitd_rt_source_entities", "gauge", "Entities of each source's last good feed."},
        {"transitd_rt_source_vehicles", "gauge", "Vehicle positions of each source's last good feed."},
        {"transitd_rt_source_merged", "gauge", "1 when the source's feed is in the merge, 0 when it has none or is stale."},
    };
    for (size_t k = 0; k < sizeof series / sizeof *series; k++) {
        put(t, "# HELP %s %s\n# TYPE %s %s\n", series[k][0], series[k][2], series[k][0], series[k][1]);
        for (size_t i = 0; i < in->count; i++) {
            const rt_source *s = &in->sources[i];
            char label[1100];
            escape_label(s->label, label, sizeof label);
            switch (k) {
            case 0: put(t, "%s{source=\"%s\"} %llu\n", series[k][0], label, (unsigned long long)s->polls); break;
            case 1:
                put(t, "%s{source=\"%s\",stage=\"fetch\"} %llu\n%s{source=\"%s\",stage=\"decode\"} %llu\n",
                    series[k][0], label, (unsigned long long)s->fetch_failures, series[k][0], label,
                    (unsigned long long)s->decode_failures);
                break;
            case 2: put(t, "%s{source=\"%s\"} %llu\n", series[k][0], label, (unsigned long long)s->not_modified); break;
            case 3:
                put(t, "%s{source=\"%s\"} %lld\n", series[k][0], label,
                    (long long)(s->last_success ? now - s->last_success : -1));
                break;
            case 4:
                put(t, "%s{source=\"%s\"} %llu\n", series[k][0], label,
                    (unsigned long long)(s->good ? s->good->timestamp : 0));
                break;
            case 5:
                put(t, "%s{source=\"%s\"} %u\n", series[k][0], label,
                    s->good ? s->good->trip_update_count + s->good->alert_count + s->good->vehicle_count : 0);
                break;
            case 6:
                put(t, "%s{source=\"%s\"} %u\n", series[k][0], label, s->good ? s->good->vehicle_count : 0);
                break;
            default: put(t, "%s{source=\"%s\"} %d\n", series[k][0], label, s->merged ? 1 : 0); break;
            }
        }
    }
}

size_t rt_ingest_render_metrics(rt_ingest *in, int64_t now, char *out, size_t cap)
{
    text_out t = {out, cap, 0};
    pthread_mutex_lock(&in->lock);
    const rt_feed *f = in->use ? in->use->merged : NULL;   /* the lock keeps the use's reference */
    const rt_overlay_stats *s = &in->stats;
    uint64_t fetch_failures = 0, decode_failures = 0;
    int64_t last_success = 0, last_failure = 0;
    size_t bytes = 0;
    for (size_t i = 0; i < in->count; i++) {
        const rt_source *src = &in->sources[i];
        fetch_failures += src->fetch_failures;
        decode_failures += src->decode_failures;
        if (src->last_success > last_success) last_success = src->last_success;
        if (src->last_failure > last_failure) last_failure = src->last_failure;
        if (src->merged) bytes += src->good_bytes;
    }
    put(&t,
        "# HELP transitd_rt_polls_total Polls of the GTFS-Realtime sources (rounds: every source once).\n"
        "# TYPE transitd_rt_polls_total counter\n"
        "transitd_rt_polls_total %llu\n"
        "# HELP transitd_rt_poll_failures_total Failed polls of any source, by stage; the last good feed stays.\n"
        "# TYPE transitd_rt_poll_failures_total counter\n"
        "transitd_rt_poll_failures_total{stage=\"fetch\"} %llu\n"
        "transitd_rt_poll_failures_total{stage=\"decode\"} %llu\n"
        "# HELP transitd_rt_last_success_age_seconds Seconds since the last good poll of any source (-1: none yet).\n"
        "# TYPE transitd_rt_last_success_age_seconds gauge\n"
        "transitd_rt_last_success_age_seconds %lld\n"
        "# HELP transitd_rt_last_failure_timestamp_seconds When a poll last failed (0: never).\n"
        "# TYPE transitd_rt_last_failure_timestamp_seconds gauge\n"
        "transitd_rt_last_failure_timestamp_seconds %lld\n"
        "# HELP transitd_rt_feed_timestamp_seconds The header timestamp of the feed in use (the newest merged).\n"
        "# TYPE transitd_rt_feed_timestamp_seconds gauge\n"
        "transitd_rt_feed_timestamp_seconds %llu\n"
        "# HELP transitd_rt_feed_bytes Size of the feeds in use.\n"
        "# TYPE transitd_rt_feed_bytes gauge\n"
        "transitd_rt_feed_bytes %zu\n"
        "# HELP transitd_rt_entities Entities of the feed in use (the merge), by kind.\n"
        "# TYPE transitd_rt_entities gauge\n"
        "transitd_rt_entities{kind=\"trip_update\"} %u\n"
        "transitd_rt_entities{kind=\"alert\"} %u\n"
        "transitd_rt_entities{kind=\"vehicle\"} %u\n"
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
        "transitd_rt_trip_updates{outcome=\"deleted\"} %u\n"
        "transitd_rt_trip_updates{outcome=\"duplicated\"} %u\n"
        "transitd_rt_trip_updates{outcome=\"replaced\"} %u\n"
        "transitd_rt_trip_updates{outcome=\"not_duplicable\"} %u\n"
        "transitd_rt_trip_updates{outcome=\"trip_properties\"} %u\n"
        "# HELP transitd_rt_assigned_stops Platform changes (assigned_stop_id) of the feed in use: events moved to their assigned stop, and assignments skipped for naming no stop of the dataset.\n"
        "# TYPE transitd_rt_assigned_stops gauge\n"
        "transitd_rt_assigned_stops{outcome=\"moved\"} %u\n"
        "transitd_rt_assigned_stops{outcome=\"unknown_stop\"} %u\n"
        "# HELP transitd_rt_alerts Alerts of the feed in use, shown (as rt: ids) or refused by the alert checks.\n"
        "# TYPE transitd_rt_alerts gauge\n"
        "transitd_rt_alerts{outcome=\"shown\"} %u\n"
        "transitd_rt_alerts{outcome=\"rejected\"} %u\n"
        "# HELP transitd_rt_vehicles Vehicle positions of the feed in use: shown (of them matched to a trip instance, or naming an unknown one) and left out (stale, an older duplicate).\n"
        "# TYPE transitd_rt_vehicles gauge\n"
        "transitd_rt_vehicles{outcome=\"shown\"} %u\n"
        "transitd_rt_vehicles{outcome=\"matched\"} %u\n"
        "transitd_rt_vehicles{outcome=\"unknown_trip\"} %u\n"
        "transitd_rt_vehicles{outcome=\"stale\"} %u\n"
        "transitd_rt_vehicles{outcome=\"duplicate\"} %u\n",
        (unsigned long long)in->polls, (unsigned long long)fetch_failures, (unsigned long long)decode_failures,
        (long long)(last_success ? now - last_success : -1), (long long)last_failure,
        (unsigned long long)(f ? f->timestamp : 0), f ? bytes : 0, f ? f->trip_update_count : 0,
        f ? f->alert_count : 0, f ? f->vehicle_count : 0, f ? f->rejected : 0, f ? f->ignored : 0, s->matched, s->canceled,
        s->unknown_trip, s->not_running, s->bad_start_time, s->duplicate, s->added,
        s->added_no_route, s->added_no_departure, s->deleted, s->duplicated, s->replaced, s->not_duplicable,
        s->properties, s->assigned, s->unknown_assigned_stop,
        in->alerts_shown, in->alerts_rejected, in->vehicle_stats.shown, in->vehicle_stats.matched,
        in->vehicle_stats.unknown_trip, in->vehicle_stats.stale, in->vehicle_stats.duplicate);
    render_sources(in, now, &t);
    pthread_mutex_unlock(&in->lock);
    return t.len;
}
