/* serving.c — the served dataset, alert view and realtime overlay, and
 * their swaps; see serving.h.
 *
 * The three current pointers sit under one spinlock held only for loading
 * and retaining them (or for storing new ones), so a request's snapshot is
 * consistent and costs three atomic increments. Everything slow — opening
 * a dataset, deriving its texts, resolving alerts, building an overlay —
 * happens before the lock is taken.
 */
#include "transit/serving.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/departure_json.h"
#include "transit/translations.h"
#include "transit/network.h"
#include "transit/rt_alerts.h"

struct serving {
    const char *data_dir;
    int lock;                    /* spinlock (__atomic) over the three pointers below */
    dataset *ds;
    alert_view *alerts;          /* resolved against ds */
    rt_overlay *realtime;        /* of the source's last good feed, or NULL */
    void (*on_reload)(void *ctx, bool ok);
    void *on_reload_ctx;
    void (*on_change)(void *ctx);   /* serving_on_change */
    void *on_change_ctx;
    /* alerts: one write (store, then view) at a time */
    pthread_mutex_t alert_writes;
    live_store *live;            /* DATA/live.sqlite, or NULL when it could not be opened */
    alert **rt_alerts;           /* the realtime feed's alerts ("rt:" ids), under alert_writes */
    uint32_t nrt_alerts;
    bool alerts_mirrored;        /* a replica: every alert comes from the primary (serving_mirror_alerts) */
    /* realtime: one overlay build and publish at a time */
    pthread_mutex_t realtime_builds;
    rt_ingest *source;           /* NULL without one */
    uint64_t realtime_generation;   /* of the last overlay published (under realtime_builds) */
};

static void lock_current(serving *s)
{
    while (__atomic_exchange_n(&s->lock, 1, __ATOMIC_ACQUIRE))
        ;
}

static void unlock_current(serving *s)
{
    __atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE);
}

serving *serving_new(const char *data_dir)
{
    serving *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->data_dir = data_dir;
    pthread_mutex_init(&s->alert_writes, NULL);
    pthread_mutex_init(&s->realtime_builds, NULL);
    return s;
}

void serving_free(serving *s)
{
    if (!s)
        return;
    if (s->alerts)
        alert_view_release(s->alerts);
    if (s->realtime)
        rt_overlay_release(s->realtime);
    rt_ingest_free(s->source);
    rt_alerts_free(s->rt_alerts, s->nrt_alerts);
    if (s->ds)
        dataset_release(s->ds);
    live_store_close(s->live);
    pthread_mutex_destroy(&s->alert_writes);
    pthread_mutex_destroy(&s->realtime_builds);
    free(s);
}

const char *serving_data_dir(const serving *s) { return s->data_dir; }

void serving_on_reload(serving *s, void (*fn)(void *ctx, bool ok), void *ctx)
{
    s->on_reload = fn;
    s->on_reload_ctx = ctx;
}

void serving_on_change(serving *s, void (*fn)(void *ctx), void *ctx)
{
    s->on_change = fn;
    s->on_change_ctx = ctx;
}

static void tell_change(serving *s)
{
    if (s->on_change)
        s->on_change(s->on_change_ctx);
}

/* ------------------------------------------------------------ snapshots */

void serving_acquire(serving *s, serving_view *out)
{
    lock_current(s);
    if ((out->ds = s->ds))
        dataset_retain(out->ds);
    if ((out->alerts = s->alerts))
        alert_view_retain(out->alerts);
    if ((out->realtime = s->realtime))
        rt_overlay_retain(out->realtime);
    unlock_current(s);
}

void serving_view_release(serving_view *v)
{
    if (v->realtime)
        rt_overlay_release(v->realtime);
    if (v->alerts)
        alert_view_release(v->alerts);
    if (v->ds)
        dataset_release(v->ds);
    *v = (serving_view){0};
}

dataset *serving_acquire_dataset(serving *s)
{
    lock_current(s);
    dataset *ds = s->ds;
    if (ds)
        dataset_retain(ds);
    unlock_current(s);
    return ds;
}

alert_view *serving_acquire_alerts(serving *s)
{
    lock_current(s);
    alert_view *v = s->alerts;
    if (v)
        alert_view_retain(v);
    unlock_current(s);
    return v;
}

/* ------------------------------------------------------------ realtime */

bool serving_set_realtime_source(serving *s, const char *source, unsigned timeout_s, char *err,
                                 size_t errlen)
{
    assert(!s->source);
    if (!(s->source = rt_ingest_new(source, timeout_s))) {
        snprintf(err, errlen, "out of memory for the realtime source");
        return false;
    }
    return true;
}

/* rt_id_exists_fn on the dataset served now: a --gtfs-rt-feed source's ids
 * are read in its feed's namespace (rt_feed_namespace.h) when it is
 * decoded. */
static bool served_id_exists(void *ctx, rt_id_kind kind, const char *id)
{
    dataset *ds = serving_acquire_dataset(ctx);
    if (!ds)
        return false;
    size_t len = strlen(id);
    bool found = false;
    switch (kind) {
    case RT_ID_TRIP: found = dataset_find_trip(ds, id, len) != QUERY_NONE; break;
    case RT_ID_ROUTE: found = dataset_find_route(ds, id, len) != QUERY_NONE; break;
    case RT_ID_STOP: found = dataset_find_stop(ds, id, len) != QUERY_NONE; break;
    case RT_ID_AGENCY:
        for (uint32_t i = 0, n = dataset_agency_count(ds); i < n && !found; i++) {
            agency_info a;
            dataset_agency(ds, i, &a);
            found = a.id && strcmp(a.id, id) == 0;
        }
        break;
    }
    dataset_release(ds);
    return found;
}

bool serving_set_realtime_sources(serving *s, const rt_source_list *list, unsigned timeout_s,
                                  unsigned max_age_s, char *err, size_t errlen)
{
    assert(!s->source);
    if (!(s->source = rt_ingest_new_sources(list, timeout_s, max_age_s))) {
        snprintf(err, errlen, "out of memory for the realtime sources");
        return false;
    }
    rt_ingest_set_id_lookup(s->source, served_id_exists, s);
    return true;
}

rt_ingest *serving_realtime(serving *s) { return s->source; }

void serving_rebuild_realtime(serving *s)
{
    if (!s->source)
        return;
    pthread_mutex_lock(&s->realtime_builds);
    dataset *ds = serving_acquire_dataset(s);
    rt_overlay *o = ds ? rt_ingest_overlay(s->source, ds, (int64_t)time(NULL)) : NULL;
    if (ds && !o)
        fprintf(stderr, "transitd: out of memory building the realtime overlay; keeping the "
                        "previous one\n");
    if (o) {
        rt_overlay_set_generation(o, ++s->realtime_generation);
        lock_current(s);
        rt_overlay *old = s->realtime;
        s->realtime = o;
        unlock_current(s);
        if (old)
            rt_overlay_release(old);
    }
    if (ds)
        dataset_release(ds);
    pthread_mutex_unlock(&s->realtime_builds);
    if (o)
        tell_change(s);
}

/* ------------------------------------------------------------ alerts */

void serving_lock_alert_writes(serving *s) { pthread_mutex_lock(&s->alert_writes); }
void serving_unlock_alert_writes(serving *s) { pthread_mutex_unlock(&s->alert_writes); }

static void publish_alerts(serving *s, alert_view *v)
{
    lock_current(s);
    alert_view *old = s->alerts;
    s->alerts = v;
    unlock_current(s);
    if (old)
        alert_view_release(old);
    tell_change(s);
}

/* A view of the stored alerts (ordered by id) merged with the realtime
 * feed's, resolved against ds; call with alert_writes held. NULL when out
 * of memory. */
static alert_view *merged_view(serving *s, alert *const *stored, uint32_t n, dataset *ds, int64_t generation)
{
    if (!s->source && !__atomic_load_n(&s->alerts_mirrored, __ATOMIC_ACQUIRE))
        return alert_view_new(stored, n, ds, generation);
    /* (the merge also drops the "rt:" alerts of the view `stored` came from) */
    uint32_t count = 0;
    alert **all = rt_alerts_merge(stored, n, s->rt_alerts, s->nrt_alerts, &count);
    if (!all)
        return NULL;
    alert_view *v = alert_view_new(all, count, ds, generation);
    free(all);
    return v;
}

/* Shows the stored alerts `stored` (ordered by id) with the realtime feed's,
 * at `generation`; call with alert_writes held. False when out of memory
 * (the previous view stays). */
static bool show_alerts(serving *s, alert *const *stored, uint32_t n, int64_t generation)
{
    dataset *ds = serving_acquire_dataset(s);
    alert_view *v = merged_view(s, stored, n, ds, generation);
    if (v)
        publish_alerts(s, v);
    if (ds)
        dataset_release(ds);
    return v != NULL;
}

/* Replaces the realtime feed's alerts (taking over `list`) and shows them
 * merged with the stored ones. */
static void set_rt_alerts(serving *s, alert **list, uint32_t n)
{
    pthread_mutex_lock(&s->alert_writes);
    alert **old = s->rt_alerts;
    uint32_t nold = s->nrt_alerts;
    s->rt_alerts = list;
    s->nrt_alerts = n;
    alert_view *current = serving_acquire_alerts(s);
    uint32_t nstored = current ? alert_view_count(current) : 0;
    alert **stored = malloc((nstored ? nstored : 1) * sizeof *stored);
    bool ok = false;
    if (stored) {
        for (uint32_t i = 0; i < nstored; i++)
            stored[i] = (alert *)alert_view_at(current, i);
        ok = show_alerts(s, stored, nstored, current ? alert_view_generation(current) : 0);
        free(stored);
    }
    if (!ok)
        fprintf(stderr, "transitd: out of memory merging the realtime alerts\n");
    if (current)
        alert_view_release(current);
    pthread_mutex_unlock(&s->alert_writes);
    rt_alerts_free(old, nold);
}

rt_poll_result serving_poll_realtime(serving *s, int64_t now, char *err, size_t errlen)
{
    rt_poll_result r = rt_ingest_poll(s->source, now, err, errlen);
    if (r != RT_POLL_NEW)
        return r;
    /* the alerts first: the overlay's new generation then changes the ETags
     * of answers that show either */
    alert **alerts = NULL;
    long n = __atomic_load_n(&s->alerts_mirrored, __ATOMIC_ACQUIRE) ? 0 : rt_ingest_alerts(s->source, now, &alerts);
    if (n > 0 || (n == 0 && !__atomic_load_n(&s->alerts_mirrored, __ATOMIC_ACQUIRE)))
        set_rt_alerts(s, alerts, (uint32_t)n);
    else if (n < 0)
        fprintf(stderr, "transitd: realtime: out of memory converting the alerts\n");
    serving_rebuild_realtime(s);
    return r;
}

bool serving_mirror_alerts(serving *s, alert *const *stored, uint32_t n, alert **rt, uint32_t nrt,
                           int64_t generation)
{
    __atomic_store_n(&s->alerts_mirrored, true, __ATOMIC_RELEASE);
    pthread_mutex_lock(&s->alert_writes);
    alert **old = s->rt_alerts;
    uint32_t nold = s->nrt_alerts;
    s->rt_alerts = rt;
    s->nrt_alerts = nrt;
    bool ok = show_alerts(s, stored, n, generation);
    pthread_mutex_unlock(&s->alert_writes);
    rt_alerts_free(old, nold);
    return ok;
}

static void warn_to_stderr(void *ctx, const char *message)
{
    (void)ctx;
    fprintf(stderr, "transitd: warning: %s\n", message);
}

/* Shows every alert of the store; false with err when they cannot be read
 * or shown (the previous view stays). */
static bool load_alerts(serving *s, char *err, size_t errlen)
{
    alert **alerts = NULL;
    uint32_t n = 0;
    int64_t generation = 0;
    if (live_store_load(s->live, &alerts, &n, &generation, warn_to_stderr, NULL, err, errlen) != 0)
        return false;
    pthread_mutex_lock(&s->alert_writes);
    bool ok = show_alerts(s, alerts, n, generation);
    if (!ok)
        snprintf(err, errlen, "out of memory showing %u alerts", n);
    pthread_mutex_unlock(&s->alert_writes);
    live_alerts_free(alerts, n);
    return ok;
}

bool serving_reload_alerts(serving *s)
{
    char err[512] = "";
    if (!s->live)
        return false;
    if (load_alerts(s, err, sizeof err))
        return true;
    fprintf(stderr, "transitd: cannot load the alerts, still showing the previous ones: %s\n", err);
    return false;
}

bool serving_open_live(serving *s, char *err, size_t errlen)
{
    if (!(s->live = live_store_open(s->data_dir, err, errlen)))
        return false;
    return load_alerts(s, err, errlen);
}

live_store *serving_live(serving *s) { return s->live; }

live_result serving_put_alert(serving *s, alert *a, const live_condition *c, int64_t now, char *err,
                              size_t errlen)
{
    if (!s->live) {
        snprintf(err, errlen, "the live store could not be opened");
        return LIVE_ERROR;
    }
    live_result r = live_store_put(s->live, a, c, now, err, errlen);
    if (r != LIVE_CREATED && r != LIVE_REPLACED)
        return r;
    alert_view *current = serving_acquire_alerts(s);
    dataset *ds = serving_acquire_dataset(s);
    alert_view *v = alert_view_with(current, a, ds, a->revision);
    if (v)
        publish_alerts(s, v);
    else
        fprintf(stderr, "transitd: out of memory publishing alert %s; it is stored and shows after the "
                        "next reload\n", a->id);
    if (current)
        alert_view_release(current);
    if (ds)
        dataset_release(ds);
    return r;
}

live_result serving_delete_alert(serving *s, const char *id, const live_condition *c, char *err,
                                 size_t errlen)
{
    if (!s->live) {
        snprintf(err, errlen, "the live store could not be opened");
        return LIVE_ERROR;
    }
    int64_t generation = 0;
    live_result r = live_store_delete(s->live, id, c, &generation, err, errlen);
    if (r != LIVE_DELETED)
        return r;
    alert_view *current = serving_acquire_alerts(s);
    dataset *ds = serving_acquire_dataset(s);
    alert_view *v = alert_view_without(current, id, ds, generation);
    if (v)
        publish_alerts(s, v);
    else
        fprintf(stderr, "transitd: out of memory unpublishing alert %s; it is deleted and goes after the "
                        "next reload\n", id);
    if (current)
        alert_view_release(current);
    if (ds)
        dataset_release(ds);
    return r;
}

/* ------------------------------------------------------------ the dataset */

void serving_install_dataset(serving *s, dataset *ds)
{
    char err[256];
    /* the rows' texts now, so that no request pays for them; a failure
     * here is tried again by the first departures request */
    if (departure_json_prepare(ds, err, sizeof err) != 0 || network_prepare(ds, err, sizeof err) != 0 ||
        !dataset_translations_get(ds, err, sizeof err))
        fprintf(stderr, "transitd: warning: %s\n", err);
    dataset_drop_pages(ds);   /* the preparation read it all */
    pthread_mutex_lock(&s->alert_writes);
    alert_view *current = serving_acquire_alerts(s);
    alert_view *v = current ? alert_view_rebase(current, ds) : NULL;
    if (current && !v)
        fprintf(stderr, "transitd: out of memory resolving the alerts; none shown until the next write\n");
    if (current)
        alert_view_release(current);
    /* the dataset and its alert view together, so that a request never
     * pairs a view with a dataset it was not resolved against */
    lock_current(s);
    dataset *old = s->ds;
    alert_view *old_view = s->alerts;
    s->ds = ds;
    s->alerts = v;
    unlock_current(s);
    if (old_view)
        alert_view_release(old_view);
    if (old)
        dataset_release(old);
    pthread_mutex_unlock(&s->alert_writes);
    tell_change(s);
    /* until this finishes, rows of the new dataset say realtime false (the
     * overlay knows only the old one's trips) */
    serving_rebuild_realtime(s);
}

bool serving_reload(serving *s, char *err, size_t errlen)
{
    dataset *ds = dataset_open(s->data_dir, err, errlen);
    if (!ds) {
        if (s->on_reload)
            s->on_reload(s->on_reload_ctx, false);
        fprintf(stderr, "transitd: reload failed, still serving the previous dataset: %s\n", err);
        return false;
    }
    /* said once it is served: a client (or a test) that reads this line may
     * ask for the dataset straight away (the names are copied first: once
     * installed, the dataset is the serving state's to release) */
    char version[64], dir[4096];
    snprintf(version, sizeof version, "%s", dataset_version(ds));
    snprintf(dir, sizeof dir, "%s", dataset_dir(ds));
    if (dataset_derived_belongs_in_files(ds))
        dataset_keep_derived_in_files(ds);   /* a large one: only what queries touch stays resident */
    serving_install_dataset(s, ds);
    fprintf(stderr, "transitd: now serving dataset %s from %s\n", version, dir);
    if (s->on_reload)
        s->on_reload(s->on_reload_ctx, true);
    return true;
}
