/* test_alloc_failures.c — every allocation site of import, dataset open,
 * queries and alert writes fails once: no crash, no leak, a clean error.
 *
 * Why it exists: out-of-memory paths are the ones no other test walks, and a
 * server that crashes or leaks when one malloc fails is not robust. The test
 * is linked with -Wl,--wrap=malloc,... (Makefile: TEST_LDFLAGS_test_alloc_failures),
 * so every allocation made by libtransit.a and this file goes through the
 * wrappers below (those inside SQLite, libzip, jansson and libc do not: they are
 * shared libraries). A first run of an operation records its allocation
 * sites (the callers' return addresses) and how often each allocates; then
 * for every site the first call, and the last one when there are several,
 * returns NULL. The operation must then fail with a message, or succeed
 * with the right answer when that allocation had a fallback, and a run
 * without failure right after must give the right answer again. Failing by
 * site rather than by global count keeps the choice the same when the import's
 * two threads interleave differently. Leaks are LeakSanitizer's to find
 * (make test SANITIZE=1); under it each injected failure is followed by a
 * leak check, so a leak names the site that caused it.
 * ld64 (macOS) has no --wrap: there the test skips visibly.
 */
#define _GNU_SOURCE
#include "test_support.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transit/alert.h"
#include "transit/alert_view.h"
#include "transit/api.h"
#include "transit/serving.h"
#include "transit/import.h"
#include "transit/live_store.h"
#include "transit/query.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#include <sanitizer/lsan_interface.h>
#endif
#endif
#if !defined(HAVE_LSAN) && defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#include <sanitizer/lsan_interface.h>
#endif

#if defined(__linux__)

/* ---------------------------------------------------------------- the wrappers */

#define MAX_SITES 4096

typedef struct site {
    const void *addr;
    uint32_t calls;
} site;

enum { MODE_OFF, MODE_COUNT, MODE_FAIL };

static _Atomic int g_mode = MODE_OFF;
static _Atomic bool g_armed = false;       /* inside the operation under test */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static site g_sites[MAX_SITES];
static uint32_t g_nsites;
static const void *g_fail_site;
static uint32_t g_fail_nth, g_fail_seen;
static _Atomic bool g_fired;
static char g_where[600] = "no failure";   /* the failure being injected, for messages */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);

/* Whether the allocation made from `addr` must fail. */
static bool must_fail(const void *addr)
{
    if (!atomic_load(&g_armed))
        return false;
    int mode = atomic_load(&g_mode);
    if (mode == MODE_OFF)
        return false;
    bool fail = false;
    pthread_mutex_lock(&g_lock);
    if (mode == MODE_COUNT) {
        uint32_t i = 0;
        while (i < g_nsites && g_sites[i].addr != addr)
            i++;
        if (i == g_nsites && g_nsites < MAX_SITES)
            g_sites[g_nsites++] = (site){addr, 0};
        if (i < g_nsites)
            g_sites[i].calls++;
    } else if (addr == g_fail_site && ++g_fail_seen == g_fail_nth) {
        fail = true;
        atomic_store(&g_fired, true);
    }
    pthread_mutex_unlock(&g_lock);
    return fail;
}

#define CALLER __builtin_return_address(0)

void *__wrap_malloc(size_t n) { return must_fail(CALLER) ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return must_fail(CALLER) ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return must_fail(CALLER) ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return must_fail(CALLER) ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return must_fail(CALLER) ? NULL : __real_strndup(s, n); }
void *__wrap_aligned_alloc(size_t align, size_t n)
{
    return must_fail(CALLER) ? NULL : __real_aligned_alloc(align, n);
}

static void inject_arm(void) { atomic_store(&g_armed, true); }
static void inject_disarm(void) { atomic_store(&g_armed, false); }

/* "function+0xoff (file offset 0x...)" of a site, for addr2line. */
static void describe_site(const void *addr, char *out, size_t cap)
{
    Dl_info info;
    if (dladdr(addr, &info) && info.dli_fbase) {
        snprintf(out, cap, "%s+0x%lx (addr2line -e %s 0x%lx)",
                 info.dli_sname ? info.dli_sname : "?",
                 (unsigned long)((const char *)addr - (const char *)(info.dli_saddr ? info.dli_saddr : info.dli_fbase)),
                 info.dli_fname ? info.dli_fname : "?",
                 (unsigned long)((const char *)addr - (const char *)info.dli_fbase));
    } else {
        snprintf(out, cap, "%p", addr);
    }
}

/* ---------------------------------------------------------------- the driver */

/* One operation: runs it (arming the injection around the library calls
 * only), checks a success against the first run's answer itself, and
 * returns 0, or -1 after checking that the failure came with a message. */
typedef int (*operation_fn)(void *ctx);

/* Runs `op` once counting, then once per site failing its first call (and its
 * last, when it allocates more than once), each followed by a run without
 * failure that must succeed. */
static void exercise(const char *name, operation_fn op, void *ctx)
{
    pthread_mutex_lock(&g_lock);
    g_nsites = 0;
    pthread_mutex_unlock(&g_lock);
    atomic_store(&g_mode, MODE_COUNT);
    int rc = op(ctx);
    atomic_store(&g_mode, MODE_OFF);
    if (rc != 0)
        fail_msg("%s: the run without failures failed", name);

    static site sites[MAX_SITES];
    uint32_t nsites = g_nsites, calls = 0;
    memcpy(sites, g_sites, nsites * sizeof *sites);
    for (uint32_t i = 0; i < nsites; i++)
        calls += sites[i].calls;
    assert_true(nsites > 0);

    uint32_t injected = 0, errors = 0, recovered = 0, not_reached = 0;
    for (uint32_t i = 0; i < nsites; i++) {
        uint32_t nths[2] = {1, sites[i].calls};
        for (int j = 0; j < (sites[i].calls > 1 ? 2 : 1); j++) {
            pthread_mutex_lock(&g_lock);
            g_fail_site = sites[i].addr;
            g_fail_nth = nths[j];
            g_fail_seen = 0;
            pthread_mutex_unlock(&g_lock);
            char where[512];
            describe_site(sites[i].addr, where, sizeof where);
            snprintf(g_where, sizeof g_where, "call %u of %s", nths[j], where);
            atomic_store(&g_fired, false);
            atomic_store(&g_mode, MODE_FAIL);
            rc = op(ctx);
            atomic_store(&g_mode, MODE_OFF);
            snprintf(g_where, sizeof g_where, "the run after failing call %u of %s", nths[j], where);
            if (!atomic_load(&g_fired)) {
                not_reached++;   /* the threads took another path this time */
            } else {
                injected++;
                if (rc == 0)
                    recovered++;
                else
                    errors++;
            }
#ifdef HAVE_LSAN
            if (__lsan_do_recoverable_leak_check() != 0)
                fail_msg("%s: a leak after failing call %u of %s", name, nths[j], where);
#endif
            if (op(ctx) != 0)
                fail_msg("%s: the run after failing call %u of %s failed", name, nths[j], where);
        }
    }
    snprintf(g_where, sizeof g_where, "no failure");
    printf("%s: %u allocations at %u sites; %u failures injected: %u clean errors, "
           "%u recovered with the right answer (%u not reached)\n",
           name, calls, nsites, injected, errors, recovered, not_reached);
    assert_true(injected > 0);
    assert_true(errors > 0);
}

static void remove_tree(const char *dir)
{
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---------------------------------------------------------------- the feed */

static const char *const FEED_FILES[][2] = {
    {"agency.txt", "agency_id,agency_name,agency_url,agency_timezone\n"
                   "A,Tiny,https://example.org,Europe/Berlin\n"},
    {"stops.txt", "stop_id,stop_name,stop_lat,stop_lon,parent_station,location_type\n"
                  "P,Main Station,52.50,13.40,,1\n"
                  "S1,Main Station Platform 1,52.5001,13.4001,P,0\n"
                  "S2,Two,52.51,13.41,,0\nS3,Three,52.52,13.42,,0\n"},
    {"routes.txt", "route_id,agency_id,route_short_name,route_long_name,route_type\n"
                   "R1,A,1,One Line,3\nR2,A,2,Two Line,0\n"},
    {"trips.txt", "route_id,service_id,trip_id,trip_headsign,direction_id,shape_id\n"
                  "R1,WD,T1,Three,0,SH1\nR1,WD,T2,Three,0,SH1\nR2,WE,T3,One,1,\n"},
    {"stop_times.txt", "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                       "T1,08:00:00,08:00:00,S1,1\nT1,08:05:00,08:05:00,S2,2\n"
                       "T1,08:10:00,08:10:00,S3,3\nT2,09:00:00,09:00:00,S1,1\n"
                       "T2,,,S2,2\nT2,09:10:00,09:10:00,S3,3\n"
                       "T3,25:00:00,25:00:00,S3,1\nT3,25:20:00,25:20:00,S1,2\n"},
    {"calendar.txt", "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
                     "start_date,end_date\nWD,1,1,1,1,1,0,0,20260101,20261231\n"
                     "WE,0,0,0,0,0,1,1,20260101,20261231\n"},
    {"calendar_dates.txt", "service_id,date,exception_type\nWD,20260406,2\nWE,20260406,1\n"},
    {"frequencies.txt", "trip_id,start_time,end_time,headway_secs\nT2,12:00:00,13:00:00,1200\n"},
    {"shapes.txt", "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\n"
                   "SH1,52.50,13.40,1\nSH1,52.51,13.41,2\nSH1,52.52,13.42,3\n"},
    {"feed_info.txt", "feed_publisher_name,feed_publisher_url,feed_lang\n"
                      "Tiny,https://example.org,de\n"},
};

typedef struct fixture {
    char base[1024], feed[1100], data[1100], scratch[1100];
    uint32_t runs;
} fixture;

static fixture g_fx;

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_fx.base, sizeof g_fx.base, "alloc-failures");
    snprintf(g_fx.feed, sizeof g_fx.feed, "%s/feed", g_fx.base);
    snprintf(g_fx.data, sizeof g_fx.data, "%s/data", g_fx.base);
    snprintf(g_fx.scratch, sizeof g_fx.scratch, "%s/scratch", g_fx.base);
    if (mkdir(g_fx.feed, 0755) != 0 || mkdir(g_fx.scratch, 0755) != 0)
        return -1;
    for (size_t i = 0; i < sizeof FEED_FILES / sizeof *FEED_FILES; i++)
        test_write_file(g_fx.feed, FEED_FILES[i][0], FEED_FILES[i][1]);
    import_options o = {.feed_path = g_fx.feed, .data_dir = g_fx.data};
    import_result r;
    import_result_init(&r);
    char err[1024] = "";
    int rc = import_run(&o, &r, err, sizeof err);
    import_result_destroy(&r);
    if (rc != 0) {
        fprintf(stderr, "import of the fixture feed failed: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    remove_tree(g_fx.base);
    return 0;
}

/* The same timetable (imported_at aside: each import stamps its own). */
static bool counts_equal(const dataset_counts *a, const dataset_counts *b)
{
    return a->stops == b->stops && a->routes == b->routes && a->trips == b->trips &&
           a->agencies == b->agencies && a->services == b->services &&
           a->stop_times == b->stop_times && a->first_date == b->first_date &&
           a->last_date == b->last_date && a->max_secs == b->max_secs;
}

static void expect_message(const char *what, const char *err)
{
    if (!err[0])
        fail_msg("[%s] %s failed without a message", g_where, what);
}

/* ---------------------------------------------------------------- import */

typedef struct import_ctx {
    bool have_want;
    dataset_counts want;
    char version[DATADIR_VERSION_LEN + 1];
} import_ctx;

static int op_import(void *vctx)
{
    import_ctx *c = vctx;
    char data[1200], err[1024] = "";
    snprintf(data, sizeof data, "%s/import-%u", g_fx.scratch, g_fx.runs++);
    import_options o = {.feed_path = g_fx.feed, .data_dir = data};
    import_result r;
    import_result_init(&r);
    inject_arm();
    int rc = import_run(&o, &r, err, sizeof err);
    inject_disarm();
    if (rc == 0) {
        if (!r.activated || !r.have_counts)
            fail_msg("[%s] import succeeded without activating a version", g_where);
        if (!c->have_want) {
            c->want = r.counts;
            memcpy(c->version, r.version, sizeof c->version);
            c->have_want = true;
        } else if (!counts_equal(&c->want, &r.counts) || strcmp(c->version, r.version) != 0) {
            fail_msg("[%s] import succeeded with other counts or version (%s)", g_where, r.version);
        }
        char err2[512] = "";
        dataset *ds = dataset_open(data, err2, sizeof err2);
        if (!ds)
            fail_msg("[%s] the imported version does not open: %s", g_where, err2);
        dataset_close(ds);
    } else {
        expect_message("import", err);
        if (r.activated)
            fail_msg("[%s] import failed after activating: %s", g_where, err);
    }
    import_result_destroy(&r);
    remove_tree(data);
    return rc;
}

static void test_import(void **state)
{
    (void)state;
    import_ctx c = {0};
    exercise("import", op_import, &c);
}

/* ---------------------------------------------------------------- dataset_open */

typedef struct open_ctx {
    bool have_want;
    dataset_counts want;
} open_ctx;

static int op_dataset_open(void *vctx)
{
    open_ctx *c = vctx;
    char err[512] = "";
    inject_arm();
    dataset *ds = dataset_open(g_fx.data, err, sizeof err);
    inject_disarm();
    if (!ds) {
        expect_message("dataset_open", err);
        return -1;
    }
    dataset_counts got;
    dataset_get_counts(ds, &got);
    if (!c->have_want) {
        c->want = got;
        c->have_want = true;
    } else if (!counts_equal(&c->want, &got)) {
        fail_msg("[%s] dataset_open succeeded with other counts", g_where);
    }
    inject_arm();
    dataset_close(ds);
    inject_disarm();
    return 0;
}

static void test_dataset_open(void **state)
{
    (void)state;
    open_ctx c = {0};
    exercise("dataset_open", op_dataset_open, &c);
}

/* ---------------------------------------------------------------- queries */

#define P(k, v) {k, v}
#define NQUERIES 6

typedef struct query_ctx {
    char *want[NQUERIES];   /* the bodies of the run without failures */
    const alert_view *alerts;
    dataset *ds;            /* when set, used instead of a fresh dataset */
} query_ctx;

/* 2026-03-02 is a Monday: Berlin is on CET (UTC+1). */
static const api_param Q_BOARD[] = {P("time", "2026-03-02T07:30"), P("window", "360")};
static const api_param Q_NEAR[] = {P("lat", "52.505"), P("lon", "13.405"), P("radius", "2000"),
                                   P("time", "2026-03-02T07:30"), P("window", "360")};
static const api_param Q_SEARCH[] = {P("q", "main")};
static const api_param Q_STOPS_NEAR[] = {P("lat", "52.505"), P("lon", "13.405"), P("radius", "2000")};

/* Runs the queries with a fresh thread context; stores or compares the
 * bodies. Returns -1 when one answered 503 (its detail checked). */
static int run_queries(query_ctx *c, dataset *ds)
{
    struct {
        api_endpoint_fn fn;
        const api_param *params;
        int n;
        const char *id;
    } q[NQUERIES] = {
        {api_stop_departures, Q_BOARD, 2, "P"},
        {api_departures, Q_NEAR, 5, NULL},
        {api_stops_search, Q_SEARCH, 1, NULL},
        {api_trip, NULL, 0, "T2"},
        {api_stops_nearby, Q_STOPS_NEAR, 3, NULL},
        {api_stop, NULL, 0, "P"},
    };
    json_writer out;
    json_init(&out);
    inject_arm();
    api_thread *t = api_thread_new();
    inject_disarm();
    if (!t)
        return -1;
    int rc = 0;
    for (int i = 0; i < NQUERIES; i++) {
        api_problem prob;
        memset(&prob, 0, sizeof prob);
        int cache = 0;
        api_request req = {.params = q[i].params, .nparams = q[i].n, .id = q[i].id,
                           .now = 1772433000, .alerts = c->alerts};
        json_reset(&out);
        inject_arm();
        int status = q[i].fn(t, ds, &req, &out, &prob, &cache);
        inject_disarm();
        if (status == 503) {
            expect_message("a query", prob.detail);
            rc = -1;
            continue;
        }
        if (status != 200)
            fail_msg("[%s] query %d answered %d: %s", g_where, i, status, prob.detail);
        if (out.oom)
            fail_msg("[%s] query %d answered 200 with an incomplete body", g_where, i);
        if (!c->want[i])
            c->want[i] = strdup(out.buf);
        else if (strcmp(c->want[i], out.buf) != 0)
            fail_msg("[%s] query %d answered otherwise:\n%s\nexpected:\n%s", g_where, i, out.buf, c->want[i]);
    }
    inject_arm();
    api_thread_free(t);
    inject_disarm();
    json_free(&out);
    return rc;
}

static int op_queries(void *vctx)
{
    query_ctx *c = vctx;
    char err[512] = "";
    /* a fresh dataset each time: the first query opens its schedule database */
    dataset *ds = dataset_open(g_fx.data, err, sizeof err);
    if (!ds)
        fail_msg("[%s] dataset_open: %s", g_where, err);
    int rc = run_queries(c, ds);
    dataset_close(ds);
    return rc;
}

static void free_wants(query_ctx *c)
{
    for (int i = 0; i < NQUERIES; i++) {
        free(c->want[i]);
        c->want[i] = NULL;
    }
}

static void test_queries(void **state)
{
    (void)state;
    query_ctx c = {0};
    exercise("queries", op_queries, &c);
    free_wants(&c);
}

/* ---------------------------------------------------------------- alerts */

static const char *const ALERT_BODIES[][2] = {
    {"route-1", "{\"informed_entity\":[{\"route_id\":\"R1\"}],"
                "\"header_text\":{\"translation\":[{\"text\":\"Diversion\",\"language\":\"en\"},"
                "{\"text\":\"Umleitung\",\"language\":\"de\"}]},"
                "\"active_period\":[{\"start\":1772400000,\"end\":1772500000}]}"},
    {"stop-p", "{\"informed_entity\":[{\"stop_id\":\"P\"},{\"trip\":{\"trip_id\":\"T1\"}}],"
               "\"cause\":\"STRIKE\",\"effect\":\"REDUCED_SERVICE\","
               "\"header_text\":{\"translation\":[{\"text\":\"Strike\"}]},"
               "\"description_text\":{\"translation\":[{\"text\":\"Fewer trains \\u00e0 P\"}]}}"},
};

typedef struct alerts_ctx {
    char *want_list, *want_one;
    query_ctx queries;
} alerts_ctx;

/* Writes the alerts into a fresh live store, loads them back, builds the
 * view, and answers the alert list, one alert and the queries with it. */
/* One alerts endpoint's answer: stored as *want on the first run, compared
 * with it after; -1 when it answered 503 (its detail checked). */
static int answer_alerts_endpoint(const char *name, api_endpoint_fn fn, api_thread *t, dataset *ds,
                                  const api_request *req, json_writer *out, char **want)
{
    api_problem prob;
    memset(&prob, 0, sizeof prob);
    int cache = 0;
    json_reset(out);
    inject_arm();
    int status = fn(t, ds, req, out, &prob, &cache);
    inject_disarm();
    if (status == 503) {
        expect_message(name, prob.detail);
        return -1;
    }
    assert_int_equal(status, 200);
    if (!*want)
        *want = strdup(out->buf);
    else if (strcmp(*want, out->buf) != 0)
        fail_msg("[%s] %s answered otherwise:\n%s\nexpected:\n%s", g_where, name, out->buf, *want);
    return 0;
}

static int op_alerts(void *vctx)
{
    alerts_ctx *c = vctx;
    char live[1200], err[512] = "";
    snprintf(live, sizeof live, "%s/live-%u", g_fx.scratch, g_fx.runs++);
    remove_tree(live);
    assert_int_equal(mkdir(live, 0755), 0);
    dataset *ds = dataset_open(g_fx.data, err, sizeof err);
    if (!ds)
        fail_msg("[%s] dataset_open: %s", g_where, err);

    int rc = -1;
    alert **loaded = NULL;
    uint32_t count = 0;
    int64_t generation = 0;
    alert_view *v = NULL;
    api_thread *t = NULL;
    json_writer out;
    json_init(&out);

    inject_arm();
    live_store *ls = live_store_open(live, err, sizeof err);
    inject_disarm();
    if (!ls) {
        expect_message("live_store_open", err);
        goto done;
    }
    for (size_t i = 0; i < sizeof ALERT_BODIES / sizeof *ALERT_BODIES; i++) {
        alert_error aerr;
        memset(&aerr, 0, sizeof aerr);
        const char *body = ALERT_BODIES[i][1];
        inject_arm();
        alert *a = alert_parse(body, strlen(body), ALERT_BODIES[i][0], true, &aerr);
        inject_disarm();
        if (!a) {
            if (aerr.status != 503 && aerr.status != 500)
                fail_msg("[%s] alert_parse refused with %d: %s", g_where, aerr.status, aerr.detail);
            expect_message("alert_parse", aerr.detail);
            goto done;
        }
        live_condition none;
        memset(&none, 0, sizeof none);
        err[0] = '\0';
        inject_arm();
        live_result put = live_store_put(ls, a, &none, 1772430000 + (int64_t)i, err, sizeof err);
        alert_release(a);
        inject_disarm();
        if (put == LIVE_ERROR) {
            expect_message("live_store_put", err);
            goto done;
        }
        if (put != LIVE_CREATED)
            fail_msg("[%s] live_store_put gave %d: %s", g_where, put, err);
    }
    err[0] = '\0';
    inject_arm();
    int lrc = live_store_load(ls, &loaded, &count, &generation, NULL, NULL, err, sizeof err);
    inject_disarm();
    if (lrc != 0) {
        expect_message("live_store_load", err);
        goto done;
    }
    if (count != 2)
        fail_msg("[%s] live_store_load gave %u alerts", g_where, count);
    inject_arm();
    v = alert_view_new(loaded, count, ds, generation);
    inject_disarm();
    if (!v)
        goto done;

    inject_arm();
    t = api_thread_new();
    inject_disarm();
    if (!t)
        goto done;
    api_request req = {.now = 1772433000, .alerts = v};
    if (answer_alerts_endpoint("api_alerts", api_alerts, t, ds, &req, &out, &c->want_list) != 0)
        goto done;
    req.id = "stop-p";
    if (answer_alerts_endpoint("api_alert", api_alert, t, ds, &req, &out, &c->want_one) != 0)
        goto done;

    c->queries.alerts = v;
    rc = run_queries(&c->queries, ds);
    c->queries.alerts = NULL;
done:
    inject_arm();
    api_thread_free(t);
    alert_view_release(v);
    if (loaded)
        live_alerts_free(loaded, count);
    live_store_close(ls);
    inject_disarm();
    json_free(&out);
    dataset_close(ds);
    remove_tree(live);
    return rc;
}

static void test_alerts(void **state)
{
    (void)state;
    alerts_ctx c = {0};
    exercise("alerts", op_alerts, &c);
    free(c.want_list);
    free(c.want_one);
    free_wants(&c.queries);
}

/* ---------------------------------------------------------------- serving
 * The serving state as the server and `transitd query` use it: a dataset
 * installed (its row texts derived), the live store opened, alerts written
 * and deleted through it, and the queries answered from a snapshot. An
 * alert that was stored but whose view could not be built for want of
 * memory is logged and shows after the next reload: the run counts that as
 * its error, after checking that the reload shows it. */

typedef struct serving_ctx {
    query_ctx queries;
} serving_ctx;

/* A data directory of its own (a fresh live.sqlite) serving the fixture's
 * version. */
static void serving_dir(char *dir, size_t cap)
{
    char target[PATH_MAX], link[1300];
    snprintf(dir, cap, "%s/serving-%u", g_fx.scratch, g_fx.runs++);
    remove_tree(dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(link, sizeof link, "%s/current", g_fx.data);
    assert_non_null(realpath(link, target));
    snprintf(link, sizeof link, "%s/current", dir);
    assert_int_equal(symlink(target, link), 0);
}

static int serving_alerts(serving *st)
{
    char err[512] = "";
    int rc = 0;
    for (size_t i = 0; i < sizeof ALERT_BODIES / sizeof *ALERT_BODIES && rc == 0; i++) {
        alert_error aerr;
        memset(&aerr, 0, sizeof aerr);
        const char *body = ALERT_BODIES[i][1];
        inject_arm();
        alert *a = alert_parse(body, strlen(body), ALERT_BODIES[i][0], true, &aerr);
        inject_disarm();
        if (!a) {
            expect_message("alert_parse", aerr.detail);
            return -1;
        }
        live_condition none;
        memset(&none, 0, sizeof none);
        serving_lock_alert_writes(st);
        inject_arm();
        live_result put = serving_put_alert(st, a, &none, 1772430000 + (int64_t)i, err, sizeof err);
        inject_disarm();
        serving_unlock_alert_writes(st);
        alert_release(a);
        if (put == LIVE_ERROR) {
            expect_message("serving_put_alert", err);
            rc = -1;
        } else if (put != LIVE_CREATED) {
            fail_msg("[%s] serving_put_alert gave %d: %s", g_where, put, err);
        }
    }
    return rc;
}

static int op_serving(void *vctx)
{
    serving_ctx *c = vctx;
    char dir[1200], err[512] = "";
    serving_dir(dir, sizeof dir);
    int rc = -1;
    inject_arm();
    serving *st = serving_new(dir);
    inject_disarm();
    if (!st)
        goto done;
    dataset *ds = dataset_open(dir, err, sizeof err);
    if (!ds)
        fail_msg("[%s] dataset_open: %s", g_where, err);
    inject_arm();
    serving_install_dataset(st, ds);
    bool live = serving_open_live(st, err, sizeof err);
    inject_disarm();
    if (!live) {
        expect_message("serving_open_live", err);
        goto done;
    }
    if (serving_alerts(st) != 0)
        goto done;
    serving_view v;
    serving_acquire(st, &v);
    bool shown = v.alerts && alert_view_count(v.alerts) == 2;
    serving_view_release(&v);
    if (!shown) {
        /* stored, not shown: the next reload shows them */
        inject_arm();
        bool reloaded = serving_reload_alerts(st);
        inject_disarm();
        serving_acquire(st, &v);
        shown = v.alerts && alert_view_count(v.alerts) == 2;
        serving_view_release(&v);
        if (reloaded && !shown)
            fail_msg("[%s] the reloaded alerts are not shown", g_where);
        goto done;
    }
    serving_acquire(st, &v);
    c->queries.alerts = v.alerts;
    rc = run_queries(&c->queries, v.ds);
    c->queries.alerts = NULL;
    serving_view_release(&v);
    if (rc == 0) {
        serving_lock_alert_writes(st);
        live_condition none;
        memset(&none, 0, sizeof none);
        inject_arm();
        live_result del = serving_delete_alert(st, "stop-p", &none, err, sizeof err);
        inject_disarm();
        serving_unlock_alert_writes(st);
        if (del == LIVE_ERROR) {
            expect_message("serving_delete_alert", err);
            rc = -1;
        } else if (del != LIVE_DELETED) {
            fail_msg("[%s] serving_delete_alert gave %d: %s", g_where, del, err);
        }
    }
done:
    inject_arm();
    serving_free(st);
    inject_disarm();
    remove_tree(dir);
    return rc;
}

static void test_serving(void **state)
{
    (void)state;
    serving_ctx c = {0};
    exercise("serving", op_serving, &c);
    free_wants(&c.queries);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import),
        cmocka_unit_test(test_dataset_open),
        cmocka_unit_test(test_queries),
        cmocka_unit_test(test_alerts),
        cmocka_unit_test(test_serving),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

#else /* no --wrap: ld64 */

static void test_skipped_without_wrap(void **state)
{
    (void)state;
    fprintf(stderr, "SKIP: the linker has no --wrap (allocation failures are injected on Linux only)\n");
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_skipped_without_wrap)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
