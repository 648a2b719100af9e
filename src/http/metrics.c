/* metrics.c — the counters behind /metrics: per route and status, a latency
 * histogram per route, and dataset reloads; C11 relaxed atomics throughout.
 *
 * Why it exists: see include/transit/metrics.h.
 */
#include "transit/metrics.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATUS_MIN 100
#define STATUS_SLOTS 500       /* 100..599 */

/* Upper bounds in microseconds; rendered in seconds. */
static const uint64_t bucket_micros[METRICS_BUCKETS] = {
    50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000, 5000000,
};

typedef struct route_counters {
    _Atomic uint64_t status[STATUS_SLOTS];
    _Atomic uint64_t bucket[METRICS_BUCKETS + 1];   /* non-cumulative; last is > max */
    _Atomic uint64_t micros_sum;
    _Atomic uint64_t count;
} route_counters;

struct metrics {
    int nroutes;
    const char *const *labels;
    _Atomic uint64_t reloads_ok, reloads_failed;
    _Atomic int64_t feed_days_until_expiry;    /* METRICS_NO_FEED: not rendered */
    route_counters routes[];                   /* nroutes + 1 (unmatched) */
};

metrics *metrics_new(int nroutes, const char *const *route_labels)
{
    if (nroutes < 0 || nroutes > METRICS_MAX_ROUTES || (nroutes > 0 && !route_labels))
        return NULL;
    metrics *m = calloc(1, sizeof *m + (size_t)(nroutes + 1) * sizeof(route_counters));
    if (!m)
        return NULL;
    m->nroutes = nroutes;
    m->labels = route_labels;
    atomic_init(&m->feed_days_until_expiry, METRICS_NO_FEED);
    return m;
}

void metrics_free(metrics *m)
{
    free(m);
}

static int route_slot(const metrics *m, int route)
{
    return (route < 0 || route >= m->nroutes) ? m->nroutes : route;
}

static int status_slot(int status)
{
    if (status < STATUS_MIN || status >= STATUS_MIN + STATUS_SLOTS)
        status = 599;
    return status - STATUS_MIN;
}

void metrics_observe(metrics *m, int route, int status, uint64_t micros)
{
    route_counters *r = &m->routes[route_slot(m, route)];
    atomic_fetch_add_explicit(&r->status[status_slot(status)], 1, memory_order_relaxed);
    int b = 0;
    while (b < METRICS_BUCKETS && micros > bucket_micros[b])
        b++;
    atomic_fetch_add_explicit(&r->bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->micros_sum, micros, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->count, 1, memory_order_relaxed);
}

void metrics_reload(metrics *m, bool ok)
{
    atomic_fetch_add_explicit(ok ? &m->reloads_ok : &m->reloads_failed, 1, memory_order_relaxed);
}

void metrics_set_feed_days_until_expiry(metrics *m, int64_t days)
{
    atomic_store_explicit(&m->feed_days_until_expiry, days, memory_order_relaxed);
}

uint64_t metrics_request_count(const metrics *m, int route, int status)
{
    const route_counters *r = &m->routes[route_slot(m, route)];
    return atomic_load_explicit(&r->status[status_slot(status)], memory_order_relaxed);
}

uint64_t metrics_reload_count(const metrics *m, bool ok)
{
    return atomic_load_explicit(ok ? &m->reloads_ok : &m->reloads_failed, memory_order_relaxed);
}

/* An snprintf that appends at out+len and keeps counting past cap. */
typedef struct text_out {
    char *buf;
    size_t cap, len;
} text_out;

static void emit(text_out *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(text_out *t, const char *fmt, ...)
{
    char scratch[1];
    va_list ap;
    va_start(ap, fmt);
    char *at = t->len < t->cap ? t->buf + t->len : scratch;
    size_t room = t->len < t->cap ? t->cap - t->len : 0;
    int n = vsnprintf(at, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n;
}

/* Label values: backslash, double quote and newline are escaped. */
static void emit_label_value(text_out *t, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            emit(t, "\\\\");
        else if (*s == '"')
            emit(t, "\\\"");
        else if (*s == '\n')
            emit(t, "\\n");
        else
            emit(t, "%c", *s);
    }
}

static void emit_route_label(text_out *t, const metrics *m, int slot)
{
    emit(t, "route=\"");
    emit_label_value(t, slot < m->nroutes ? m->labels[slot] : "unmatched");
    emit(t, "\"");
}

size_t metrics_render(const metrics *m, const char *dataset_version, char *out, size_t cap)
{
    text_out t = {out, cap, 0};
    if (cap)
        out[0] = '\0';
    emit(&t, "# HELP transitd_http_requests_total HTTP requests answered, by route and status.\n"
             "# TYPE transitd_http_requests_total counter\n");
    for (int r = 0; r <= m->nroutes; r++)
        for (int s = 0; s < STATUS_SLOTS; s++) {
            uint64_t n = atomic_load_explicit(&m->routes[r].status[s], memory_order_relaxed);
            if (!n)
                continue;
            emit(&t, "transitd_http_requests_total{");
            emit_route_label(&t, m, r);
            emit(&t, ",status=\"%d\"} %llu\n", s + STATUS_MIN, (unsigned long long)n);
        }
    emit(&t, "# HELP transitd_http_request_duration_seconds Time from the request line to the "
             "queued response.\n"
             "# TYPE transitd_http_request_duration_seconds histogram\n");
    for (int r = 0; r <= m->nroutes; r++) {
        const route_counters *rc = &m->routes[r];
        uint64_t count = atomic_load_explicit(&rc->count, memory_order_relaxed);
        if (!count)
            continue;
        uint64_t cumulative = 0;
        for (int b = 0; b <= METRICS_BUCKETS; b++) {
            cumulative += atomic_load_explicit(&rc->bucket[b], memory_order_relaxed);
            emit(&t, "transitd_http_request_duration_seconds_bucket{");
            emit_route_label(&t, m, r);
            if (b < METRICS_BUCKETS)
                emit(&t, ",le=\"%g\"} %llu\n", (double)bucket_micros[b] / 1e6,
                     (unsigned long long)cumulative);
            else
                emit(&t, ",le=\"+Inf\"} %llu\n", (unsigned long long)cumulative);
        }
        emit(&t, "transitd_http_request_duration_seconds_sum{");
        emit_route_label(&t, m, r);
        emit(&t, "} %.6f\n",
             (double)atomic_load_explicit(&rc->micros_sum, memory_order_relaxed) / 1e6);
        emit(&t, "transitd_http_request_duration_seconds_count{");
        emit_route_label(&t, m, r);
        /* the buckets' total, so _count equals the +Inf bucket in one scrape */
        emit(&t, "} %llu\n", (unsigned long long)cumulative);
    }
    emit(&t, "# HELP transitd_dataset_info The dataset being served (1), by version.\n"
             "# TYPE transitd_dataset_info gauge\n");
    if (dataset_version) {
        emit(&t, "transitd_dataset_info{version=\"");
        emit_label_value(&t, dataset_version);
        emit(&t, "\"} 1\n");
    }
    int64_t days = atomic_load_explicit(&m->feed_days_until_expiry, memory_order_relaxed);
    if (dataset_version && days != METRICS_NO_FEED)
        emit(&t, "# HELP transitd_feed_days_until_expiry Days from today (feed timezone) to the "
                 "feed's last service date; negative once it has expired.\n"
                 "# TYPE transitd_feed_days_until_expiry gauge\n"
                 "transitd_feed_days_until_expiry %lld\n",
             (long long)days);
    emit(&t, "# HELP transitd_dataset_reloads_total Dataset reloads (SIGHUP), by result.\n"
             "# TYPE transitd_dataset_reloads_total counter\n"
             "transitd_dataset_reloads_total{result=\"ok\"} %llu\n"
             "transitd_dataset_reloads_total{result=\"failed\"} %llu\n",
             (unsigned long long)metrics_reload_count(m, true),
             (unsigned long long)metrics_reload_count(m, false));
    return t.len;
}
