/* import.c — the import pipeline: hash and build concurrently, verify, activate.
 *
 * Why it exists: it is the only code that decides when a new dataset becomes
 * visible. The writers (timetable.h, stores.h) produce files; this module
 * puts them in a temporary directory, runs them on two threads (the timetable
 * on the calling thread; the hash then schedule.sqlite on a second one;
 * shapes.sqlite on whichever is free first; each writer with its own diag,
 * merged at the end), checks the result by opening it as the server would
 * (the timetable as soon as it is written, beside the store thread), and
 * hands it to datadir.h for the atomic switch. Nothing outside the
 * temporary directory is modified before the new version is complete.
 *
 * The version's name, the SHA-256 of the feed (feed_sha256), is computed
 * while the timetable parses: hashing every byte first was a phase of its own
 * that parsing waited for (12 of 20 s for 16 copies of Brooklyn, issue #28).
 * The build therefore starts before the version is known, in
 * versions/.tmp-import-<pid>. The hash runs at the head of the store thread,
 * before schedule.sqlite: the SQLite stores take less time than the
 * timetable, and the hash fills that slack. A third thread for it took CPU
 * from the timetable on two cores and measured slower (bench/README.md,
 * "Import hashing"). When the hash names a version already built, it stops
 * the feed's readers (feed_stop), the build is thrown away and the import is
 * a no-op or a re-activation, as when the hash came first.
 *
 * Hashing first is kept for one case: a re-import of a feed that may be
 * unchanged (a periodic job). Each version's marker records how many bytes
 * its hash ran over; when a version of this data directory has the feed's
 * count (or records none), the hash runs before anything else, so an
 * unchanged feed costs its hash alone, not a build that the hash ends. A new
 * feed almost always differs in size from every kept version and is hashed
 * beside the build.
 */
#include "import/days_handoff.h"
#include "import/import_hold.h"
#include "import/store_reuse.h"
#include "transit/import.h"
#include "transit/live_store.h"
#include "transit/stores.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "transit/feed.h"
#include "transit/version.h"

static const char *const PHASE_NAMES[IMPORT_PHASE_COUNT] = {
    [IMPORT_PHASE_HASH] = "hash",         [IMPORT_PHASE_TIMETABLE] = "timetable",
    [IMPORT_PHASE_SCHEDULE] = "schedule", [IMPORT_PHASE_SHAPES] = "shapes",
    [IMPORT_PHASE_LIVE] = "live",         [IMPORT_PHASE_VERIFY] = "verify",
    [IMPORT_PHASE_ACTIVATE] = "activate", [IMPORT_PHASE_PRUNE] = "prune",
};

static const char *const FILE_NAMES[IMPORT_FILE_COUNT] = {
    [IMPORT_FILE_AGENCY] = "agency.txt",
    [IMPORT_FILE_STOPS] = "stops.txt",
    [IMPORT_FILE_ROUTES] = "routes.txt",
    [IMPORT_FILE_TRIPS] = "trips.txt",
    [IMPORT_FILE_STOP_TIMES] = "stop_times.txt",
    [IMPORT_FILE_CALENDAR] = "calendar.txt",
    [IMPORT_FILE_CALENDAR_DATES] = "calendar_dates.txt",
    [IMPORT_FILE_FREQUENCIES] = "frequencies.txt",
    [IMPORT_FILE_TRANSFERS] = "transfers.txt",
    [IMPORT_FILE_FEED_INFO] = "feed_info.txt",
    [IMPORT_FILE_SHAPES] = "shapes.txt",
};

const char *import_phase_name(import_phase p)
{
    return (p >= 0 && p < IMPORT_PHASE_COUNT) ? PHASE_NAMES[p] : "?";
}

const char *import_file_name(import_file f)
{
    return (f >= 0 && f < IMPORT_FILE_COUNT) ? FILE_NAMES[f] : "?";
}

uint64_t import_file_rows(const import_result *r, import_file f)
{
    const timetable_stats *t = &r->timetable;
    const store_stats *s = &r->schedule;
    bool tt = r->phase_done[IMPORT_PHASE_TIMETABLE];
    switch (f) {
    case IMPORT_FILE_AGENCY: return tt ? t->agency : s->agency;
    case IMPORT_FILE_STOPS: return tt ? t->stops : s->stops;
    case IMPORT_FILE_ROUTES: return tt ? t->routes : s->routes;
    case IMPORT_FILE_TRIPS: return tt ? t->trips : s->trips;
    case IMPORT_FILE_STOP_TIMES: return t->stop_times;
    case IMPORT_FILE_CALENDAR: return tt ? t->calendar : s->calendar;
    case IMPORT_FILE_CALENDAR_DATES: return tt ? t->calendar_dates : s->calendar_dates;
    case IMPORT_FILE_FREQUENCIES: return tt ? t->frequencies : s->frequencies;
    case IMPORT_FILE_TRANSFERS: return s->transfers;
    case IMPORT_FILE_FEED_INFO: return s->feed_info;
    case IMPORT_FILE_SHAPES: return r->shapes.shapes;
    default: return 0;
    }
}

void import_result_init(import_result *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < IMPORT_FILE_COUNT; i++)
        r->file_bytes[i] = -1;
    diag_init(&r->diag);
}

void import_result_destroy(import_result *r)
{
    diag_destroy(&r->diag);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t file_bytes(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* One run's shared state: the phase callback is called from two threads. */
typedef struct run {
    const import_options *o;
    import_result *r;
    uint64_t feed_bytes;   /* feed_hashed_bytes, recorded in the marker */
    char shapes_input[65]; /* the digest of shapes.sqlite's inputs (store_reuse.h), "" when unknown */
    bool shapes_clean;     /* its build reported no problem: the digest goes into the marker */
    pthread_mutex_t report_lock;
    /* the written timetable.bin opened as the server would, by the calling
     * thread while the store thread still writes (check_timetable) */
    bool timetable_checked;
    int timetable_check_rc;
    double timetable_check_seconds;
    char timetable_check_err[300];
} run;

static void phase_done(run *ru, import_phase p, double seconds)
{
    pthread_mutex_lock(&ru->report_lock);
    ru->r->phase_seconds[p] = seconds;
    ru->r->phase_done[p] = true;
    if (ru->o->on_phase)
        ru->o->on_phase(ru->o->ctx, p, ru->r);
    pthread_mutex_unlock(&ru->report_lock);
}

/* ---------------------------------------------------------------- the store thread */

/* The version's hash (feed_sha256), run by hash_run (below): first, or at the
 * head of the store thread. */
typedef struct hash_job {
    run *ru;
    feed_t *feed;
    double started;          /* when the import opened the feed */
    bool done;
    int rc;
    char err[512];
    bool usable;             /* the version is already built and complete (not with --force) */
    dataset_counts counts;   /* its counts, when usable */
} hash_job;

static void hash_run(hash_job *h);

typedef struct store_job {
    run *ru;
    const feed_t *feed;
    hash_job *hash;          /* run first on this thread, unless done */
    diag *schedule_diag, *shapes_diag;
    days_handoff *days;      /* the timetable builder's days for the schedule writer, or NULL */
    import_hold *hold;       /* tests and benchmarks: waited for before schedule.sqlite, or NULL */
    char dir[4096];
    int rc;
    char err[512];
    /* shapes.sqlite is written by whichever thread is free first: the store
     * thread after schedule.sqlite, or the calling one after the timetable
     * (the two take about as long; the one that ends first takes it) */
    atomic_bool shapes_taken;
    int shapes_rc;
    char shapes_err[512];
} store_job;

/* shapes.sqlite from the active version when the digest of its inputs is
 * the one recorded there (store_reuse.h; not with --force): true when it was
 * taken. The digest is kept for this version's marker either way. */
static bool take_shapes(run *ru, const feed_t *feed, const char *dir, const char *path)
{
    char derr[256];
    if (store_reuse_shapes_digest(feed, shapes_store_format(), ru->shapes_input, derr, sizeof derr) != 0) {
        ru->shapes_input[0] = '\0';
        return false;
    }
    uint64_t rows = 0;
    if (ru->o->force || !store_reuse_from_active(ru->o->data_dir, "shapes.sqlite", ru->shapes_input, dir, &rows))
        return false;
    struct stat st;
    memset(&ru->r->shapes, 0, sizeof ru->r->shapes);
    ru->r->shapes.shapes = rows;
    ru->r->shapes.bytes = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
    ru->r->shapes_reused = true;
    return true;
}

/* Writes shapes.sqlite unless the other thread took it. Not when the hash
 * already said the build is not needed (it would be thrown away). */
static void store_shapes(store_job *j)
{
    if (atomic_exchange(&j->shapes_taken, true))
        return;
    if (j->hash->done && (j->hash->rc != 0 || j->hash->usable)) {
        j->shapes_rc = -1;
        snprintf(j->shapes_err, sizeof j->shapes_err, "shapes.sqlite not built");
        return;
    }
    char path[4200];
    double t = now_seconds();
    snprintf(path, sizeof path, "%s/shapes.sqlite", j->dir);
    if (take_shapes(j->ru, j->feed, j->dir, path)) {
        j->shapes_rc = 0;
        j->ru->r->shapes.seconds = now_seconds() - t;
    } else {
        j->shapes_rc = shapes_store_write(j->feed, path, j->shapes_diag, &j->ru->r->shapes, j->shapes_err,
                                          sizeof j->shapes_err);
    }
    if (j->shapes_rc == 0)
        phase_done(j->ru, IMPORT_PHASE_SHAPES, now_seconds() - t);
}

static void *store_thread(void *arg)
{
    store_job *j = arg;
    if (!j->hash->done)
        hash_run(j->hash);
    if (j->hash->rc != 0 || j->hash->usable) {   /* the stores are not needed */
        j->rc = -1;
        snprintf(j->err, sizeof j->err, "not built: %s",
                 j->hash->rc != 0 ? "the feed could not be hashed" : "the version exists");
        return NULL;
    }
    import_hold_wait(j->hold);
    char path[4200];
    double t = now_seconds();
    snprintf(path, sizeof path, "%s/schedule.sqlite", j->dir);
    j->rc = schedule_store_write_days(j->feed, path, j->days, j->schedule_diag, &j->ru->r->schedule, j->err,
                                      sizeof j->err);
    if (j->rc != 0)
        return NULL;
    phase_done(j->ru, IMPORT_PHASE_SCHEDULE, now_seconds() - t);
    store_shapes(j);
    return NULL;
}

/* ---------------------------------------------------------------- checks */

/* The files a feed cannot do without; calendar.txt or calendar_dates.txt
 * must be there as well. An empty (0-byte) required file has no header. */
static int check_required_files(const feed_t *feed, char *err, size_t errlen)
{
    static const char *const required[] = {"agency.txt", "stops.txt", "routes.txt", "trips.txt",
                                           "stop_times.txt"};
    for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
        if (!feed_has(feed, required[i])) {
            snprintf(err, errlen, "%s: required file %s is missing from the feed",
                     feed_path(feed), required[i]);
            return -1;
        }
        if (feed_size(feed, required[i]) == 0) {
            snprintf(err, errlen, "%s: required file %s is empty (0 bytes; it needs a header row)",
                     feed_path(feed), required[i]);
            return -1;
        }
    }
    if (!feed_has(feed, "calendar.txt") && !feed_has(feed, "calendar_dates.txt")) {
        snprintf(err, errlen,
                 "%s: the feed has neither calendar.txt nor calendar_dates.txt (one is required)",
                 feed_path(feed));
        return -1;
    }
    return 0;
}

/* Whether versions/<v> is complete, written by this build, and opens as a
 * dataset. Fills counts when it does. */
/* The counts of the version in `dir`, when it opens. */
static bool counts_of(const char *dir, dataset_counts *counts)
{
    char derr[256];
    dataset *ds = dataset_open(dir, derr, sizeof derr);
    if (!ds)
        return false;
    dataset_get_counts(ds, counts);
    dataset_close(ds);
    return true;
}

static bool version_usable(const char *data_dir, const char *version, dataset_counts *counts)
{
    char dir[4096];
    if (datadir_version_path(data_dir, version, dir, sizeof dir) != 0)
        return false;
    datadir_marker m;
    if (datadir_read_marker(dir, &m) != 0 || strcmp(m.version, version) != 0 ||
        strcmp(m.builder, TRANSITD_VERSION) != 0)
        return false;
    return counts_of(dir, counts);
}

static void fill_store_sizes(import_result *r, const char *data_dir)
{
    char dir[4096];
    if (datadir_version_path(data_dir, r->version, dir, sizeof dir) != 0)
        return;
    r->timetable_bytes = file_bytes(dir, "timetable.bin");
    r->schedule_bytes = file_bytes(dir, "schedule.sqlite");
    r->shapes_bytes = file_bytes(dir, "shapes.sqlite");
    r->live_bytes = file_bytes(data_dir, "live.sqlite");
}

/* The active version's counts, when it opens. */
static bool previous_counts(const char *data_dir, const char *version, dataset_counts *counts)
{
    char dir[4096];
    if (!version[0] || datadir_version_path(data_dir, version, dir, sizeof dir) != 0)
        return false;
    return counts_of(dir, counts);
}

/* Whether the guard lets r's version replace the active one. With rows, the
 * timetable's rows read per file are compared with what the version holds. */
static int guard_activation(run *ru, bool have_rows, char *err, size_t errlen)
{
    const import_options *o = ru->o;
    import_result *r = ru->r;
    if (o->force)
        return 0;
    import_guard_input in = {.have_rows = have_rows, .previous_version = r->previous};
    if (have_rows) {
        const timetable_stats *t = &r->timetable;
        in.read[IMPORT_GUARD_STOPS] = t->stops;
        in.read[IMPORT_GUARD_ROUTES] = t->routes;
        in.read[IMPORT_GUARD_TRIPS] = t->trips;
        in.read[IMPORT_GUARD_STOP_TIMES] = t->stop_times;
        in.kept[IMPORT_GUARD_STOPS] = r->counts.stops;
        in.kept[IMPORT_GUARD_ROUTES] = r->counts.routes;
        in.kept[IMPORT_GUARD_TRIPS] = r->counts.trips;
        in.kept[IMPORT_GUARD_STOP_TIMES] = r->counts.stop_times;
    }
    dataset_counts prev;
    if (strcmp(r->previous, r->version) != 0 && previous_counts(o->data_dir, r->previous, &prev)) {
        in.have_previous = true;
        in.previous = (import_guard_size){prev.stops, prev.trips, prev.stop_times};
        in.next = (import_guard_size){r->counts.stops, r->counts.trips, r->counts.stop_times};
    }
    import_guard_limits lim = {
        .max_drop_pct = o->max_drop_set ? o->max_drop_pct : IMPORT_GUARD_DEFAULT_MAX_DROP_PCT,
        .max_shrink_pct = o->max_shrink_set ? o->max_shrink_pct : IMPORT_GUARD_DEFAULT_MAX_SHRINK_PCT,
    };
    if (import_guard_check(&in, &lim, err, errlen) == 0)
        return 0;
    r->refused = true;
    return -1;
}

/* Activation and pruning, shared by a fresh build and a re-activation. */
static int activate_and_prune(run *ru, char *err, size_t errlen)
{
    const import_options *o = ru->o;
    import_result *r = ru->r;
    double t = now_seconds();
    if (datadir_activate(o->data_dir, r->version, err, errlen) != 0)
        return -1;
    r->activated = true;
    phase_done(ru, IMPORT_PHASE_ACTIVATE, now_seconds() - t);

    t = now_seconds();
    char perr[512];
    int keep = o->keep_versions > 0 ? o->keep_versions : DATADIR_KEEP_VERSIONS;
    if (datadir_prune(o->data_dir, keep, &r->pruned, perr, sizeof perr) != 0) {
        /* The new version is active; a failed cleanup is reported, not fatal. */
        diag_add(&r->diag, DIAG_IGNORED_FILE, "versions", 0, "pruning failed: %s", perr);
    }
    phase_done(ru, IMPORT_PHASE_PRUNE, now_seconds() - t);
    return 0;
}

/* ---------------------------------------------------------------- the pipeline */

/* The timetable and schedule writers read the same files (stops, routes,
 * trips, calendars...) and would both report a bad row there, so each writer
 * gets its own diag and they are merged: per kind the larger of the two
 * counts (shapes.txt is read by the shapes writer alone, so its counts add),
 * and the examples of all three without repeating a "file:line:". */
static bool has_example_at(const diag *d, const char *example)
{
    const char *colon = strchr(example, ':');
    if (!colon || !(colon = strchr(colon + 1, ':')))
        return false;
    size_t prefix = (size_t)(colon - example) + 1;
    for (int i = 0; i < d->nexamples; i++)
        if (strncmp(d->examples[i], example, prefix) == 0)
            return true;
    return false;
}

static void merge_diags(diag *out, const diag *timetable, const diag *schedule, const diag *shapes)
{
    for (int k = 0; k < DIAG_KIND_COUNT; k++) {
        uint64_t shared = timetable->count[k] > schedule->count[k] ? timetable->count[k]
                                                                    : schedule->count[k];
        out->count[k] += shared + shapes->count[k];
    }
    const diag *sources[] = {timetable, schedule, shapes};
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < sources[s]->nexamples && out->nexamples < DIAG_EXAMPLES; i++) {
            if (has_example_at(out, sources[s]->examples[i]))
                continue;
            memcpy(out->examples[out->nexamples++], sources[s]->examples[i],
                   sizeof out->examples[0]);
        }
}

/* Opens the timetable.bin written in `tmp` as the server would (checksum,
 * indexes, orders) and takes its counts: the first half of the verify
 * phase, run as soon as the timetable is written, beside the store thread.
 * install_version reports its result. */
static void check_timetable(run *ru, const char *tmp)
{
    double t = now_seconds();
    char derr[256];
    dataset *ds = dataset_open(tmp, derr, sizeof derr);
    ru->timetable_checked = true;
    if (!ds) {
        ru->timetable_check_rc = -1;
        snprintf(ru->timetable_check_err, sizeof ru->timetable_check_err,
                 "the written timetable.bin does not open: %s", derr);
    } else {
        dataset_get_counts(ds, &ru->r->counts);
        ru->r->have_counts = true;
        dataset_close(ds);
    }
    ru->timetable_check_seconds = now_seconds() - t;
}

/* Whether the written timetable may be checked beside the store thread.
 * The check opens it as a server does, which derives about as many bytes
 * again in the heap (661 MB for the national 64x's 777 MB) beside the
 * timetable's pages: alone it peaks at about 1.39 GB there, the import's
 * peak now that the schedule writer holds no trips.txt rows (at most about
 * 100 MB at 64x; its buffered rows with the check made 2.1 GB). Beside the
 * writer it measured 1.42 GB, and could reach the budget; one after the
 * other they stay under it with a margin. So a timetable over a quarter of
 * the budget is checked after the store thread, and a smaller one (the
 * 16x's 207 MB: 0.5 GB at most beside) keeps the overlap's time
 * (bench/README.md, "The schedule writer's trips not held"). */
static bool check_fits_beside(const run *ru, const char *path)
{
    struct stat st;
    uint64_t budget = ru->o->memory_budget ? ru->o->memory_budget : TIMETABLE_MEMORY_BUDGET;
    return stat(path, &st) == 0 && (uint64_t)st.st_size <= budget / 4;
}

/* Builds the three stores into `tmp` (created here; the caller removes it):
 * the timetable on this thread; on a second one the hash, unless done, then
 * the SQLite stores. Returns 0, or -1 with err. */
static int build_stores(run *ru, const feed_t *feed, hash_job *hash, const char *tmp, char *err,
                        size_t errlen)
{
    import_result *r = ru->r;
    datadir_remove_tree(tmp);
    if (mkdir(tmp, 0755) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }

    diag timetable_diag, schedule_diag, shapes_diag;
    diag_init(&timetable_diag);
    diag_init(&schedule_diag);
    diag_init(&shapes_diag);
    store_job job;
    memset(&job, 0, sizeof job);
    atomic_init(&job.shapes_taken, false);
    job.ru = ru;
    job.feed = feed;
    job.hash = hash;
    job.schedule_diag = &schedule_diag;
    job.shapes_diag = &shapes_diag;
    snprintf(job.dir, sizeof job.dir, "%s", tmp);
    /* the timetable builder hands the services' days to the schedule writer */
    days_handoff days;
    bool have_days = days_handoff_init(&days) == 0;
    job.days = have_days ? &days : NULL;
    import_hold hold;
    bool have_hold = import_hold_init(&hold, ru->o->on_progress, ru->o->ctx);
    job.hold = have_hold ? &hold : NULL;
    pthread_t thread;
    bool threaded = pthread_create(&thread, NULL, store_thread, &job) == 0;
    if (!threaded) {
        job.days = NULL;    /* nobody would publish them before the writer waits */
        job.hold = NULL;    /* nor release it */
        store_thread(&job); /* no second thread available: hash and stores, then the timetable */
    }

    char tt_err[512] = "", path[4200];
    snprintf(path, sizeof path, "%s/timetable.bin", tmp);
    double t = now_seconds();
    timetable_options tt_opt = {ru->o->on_progress, ru->o->ctx, job.days, 0, ru->o->memory_budget};
    if (have_hold) {
        tt_opt.progress = import_hold_progress;
        tt_opt.progress_ctx = &hold;
    }
    int tt_rc = timetable_build(feed, path, &tt_opt, &timetable_diag, &r->timetable, tt_err, sizeof tt_err);
    if (have_hold)
        import_hold_release(&hold);
    if (tt_rc == 0) {
        phase_done(ru, IMPORT_PHASE_TIMETABLE, now_seconds() - t);
        if (!threaded || check_fits_beside(ru, path))
            check_timetable(ru, tmp);   /* else install_version checks it, after the join */
        store_shapes(&job);   /* unless the store thread took it already */
    }
    if (threaded)
        pthread_join(thread, NULL);
    if (have_days)
        days_handoff_destroy(&days);
    if (have_hold)
        import_hold_destroy(&hold);
    ru->shapes_clean = true;
    for (int k = 0; k < DIAG_KIND_COUNT; k++)
        if (shapes_diag.count[k])
            ru->shapes_clean = false;
    merge_diags(&r->diag, &timetable_diag, &schedule_diag, &shapes_diag);
    diag_destroy(&timetable_diag);
    diag_destroy(&schedule_diag);
    diag_destroy(&shapes_diag);

    int st_rc = job.rc != 0 ? job.rc : job.shapes_rc;
    if (tt_rc != 0 || st_rc != 0) {
        /* Both may fail for one cause (a missing column makes the timetable
         * find no usable rows): report both, the timetable's first. */
        const char *tt_msg = tt_err[0] ? tt_err : "timetable build failed";
        const char *st_err = job.rc != 0 ? job.err : job.shapes_err;
        const char *st_msg = st_err[0] ? st_err : "store write failed";
        if (tt_rc != 0 && st_rc != 0 && strcmp(tt_msg, st_msg) != 0)
            snprintf(err, errlen, "%s; %s", tt_msg, st_msg);
        else
            snprintf(err, errlen, "%s", tt_rc != 0 ? tt_msg : st_msg);
        return -1;
    }
    return 0;
}

/* What a build that the hash made pointless leaves in the result: nothing, as
 * when the hash came first and no build started. */
static void forget_build(import_result *r)
{
    static const import_phase build_phases[] = {IMPORT_PHASE_TIMETABLE, IMPORT_PHASE_SCHEDULE,
                                                IMPORT_PHASE_SHAPES};
    for (size_t i = 0; i < sizeof build_phases / sizeof *build_phases; i++) {
        r->phase_done[build_phases[i]] = false;
        r->phase_seconds[build_phases[i]] = 0;
    }
    memset(&r->timetable, 0, sizeof r->timetable);
    memset(&r->schedule, 0, sizeof r->schedule);
    memset(&r->shapes, 0, sizeof r->shapes);
    r->shapes_reused = false;
    diag_destroy(&r->diag);
    diag_init(&r->diag);
}

/* The built stores in `tmp` become r->version: live store, verification, the
 * guard, the marker, installation, activation. Removes tmp on failure. */
static int install_version(run *ru, const char *tmp, char *err, size_t errlen)
{
    const import_options *o = ru->o;
    import_result *r = ru->r;
    double t = now_seconds();
    if (live_store_ensure(o->data_dir, err, errlen) != 0) {
        datadir_remove_tree(tmp);
        return -1;
    }
    phase_done(ru, IMPORT_PHASE_LIVE, now_seconds() - t);

    t = now_seconds();
    char derr[256];
    if (datadir_sync_dir(tmp, err, errlen) != 0) {
        datadir_remove_tree(tmp);
        return -1;
    }
    bool checked_beside = ru->timetable_checked;
    if (!checked_beside)
        check_timetable(ru, tmp);
    if (ru->timetable_check_rc != 0) {
        snprintf(err, errlen, "%s", ru->timetable_check_err);
        datadir_remove_tree(tmp);
        return -1;
    }
    if (checked_beside)
        t -= ru->timetable_check_seconds;   /* the phase counts the check made beside the store thread */
    schedule_db *db = schedule_open(tmp, derr, sizeof derr);
    if (!db) {
        snprintf(err, errlen, "the written schedule.sqlite does not open: %s", derr);
        datadir_remove_tree(tmp);
        return -1;
    }
    schedule_close(db);
    phase_done(ru, IMPORT_PHASE_VERIFY, now_seconds() - t);

    if (guard_activation(ru, true, err, errlen) != 0) {
        datadir_remove_tree(tmp);
        return -1;
    }

    t = now_seconds();
    datadir_marker m;
    memset(&m, 0, sizeof m);
    memcpy(m.version, r->version, sizeof m.version);
    m.sequence = datadir_next_sequence(o->data_dir);
    m.imported_at = (int64_t)time(NULL);
    snprintf(m.builder, sizeof m.builder, "%s", TRANSITD_VERSION);
    m.feed_bytes = ru->feed_bytes;
    if (ru->shapes_input[0] && ru->shapes_clean) {
        memcpy(m.shapes_input, ru->shapes_input, sizeof m.shapes_input);
        m.shapes_rows = r->shapes.shapes;
    }
    if (datadir_write_marker(tmp, &m, err, errlen) != 0 ||
        datadir_install(o->data_dir, tmp, r->version, err, errlen) != 0) {
        datadir_remove_tree(tmp);
        return -1;
    }
    double install_seconds = now_seconds() - t;
    if (activate_and_prune(ru, err, errlen) != 0)
        return -1;
    r->phase_seconds[IMPORT_PHASE_ACTIVATE] += install_seconds;
    return 0;
}

/* ---------------------------------------------------------------- the hash */

/* Names the version and reports the hash phase. When that version is
 * already built, or the feed cannot be hashed (the import fails with that
 * error), stops the writers' reads: their work is not needed. */
static void hash_run(hash_job *h)
{
    import_result *r = h->ru->r;
    char sha[65];
    h->done = true;
    const char *given = h->ru->o->sha256;
    if (given && strlen(given) == 64) {
        memcpy(sha, given, 65);
        h->rc = 0;
    } else {
        h->rc = feed_sha256(h->feed, sha, h->err, sizeof h->err);
    }
    if (h->rc != 0) {
        feed_stop(h->feed);
        return;
    }
    memcpy(r->version, sha, DATADIR_VERSION_LEN);
    r->version[DATADIR_VERSION_LEN] = '\0';
    phase_done(h->ru, IMPORT_PHASE_HASH, now_seconds() - h->started);
    if (!h->ru->o->force && version_usable(h->ru->o->data_dir, r->version, &h->counts)) {
        h->usable = true;
        feed_stop(h->feed);
    }
}

/* An already built version: bump its import counter and activate it. */
static int reactivate_version(run *ru, char *err, size_t errlen)
{
    const import_options *o = ru->o;
    import_result *r = ru->r;
    char dir[4096];
    datadir_marker m;
    if (datadir_version_path(o->data_dir, r->version, dir, sizeof dir) != 0 ||
        datadir_read_marker(dir, &m) != 0) {
        snprintf(err, errlen, "version %s vanished while reactivating it", r->version);
        return -1;
    }
    if (guard_activation(ru, false, err, errlen) != 0)
        return -1;
    double t = now_seconds();
    if (live_store_ensure(o->data_dir, err, errlen) != 0)
        return -1;
    phase_done(ru, IMPORT_PHASE_LIVE, now_seconds() - t);
    m.sequence = datadir_next_sequence(o->data_dir);
    m.feed_bytes = ru->feed_bytes;   /* a marker older than the count gets it */
    if (datadir_write_marker(dir, &m, err, errlen) != 0)
        return -1;
    return activate_and_prune(ru, err, errlen);
}

static int check_current_is_ours(const char *data_dir, char *err, size_t errlen)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/current", data_dir);
    if (lstat(path, &st) == 0 && !S_ISLNK(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not the symlink transitd manages; move it away",
                 path);
        return -1;
    }
    return 0;
}

int import_run(const import_options *o, import_result *r, char *err, size_t errlen)
{
    double t_start = now_seconds();
    run ru = {.o = o, .r = r};
    pthread_mutex_init(&ru.report_lock, NULL);
    int rc = -1, lock_fd = -1;
    feed_t *feed = NULL;

    if (datadir_prepare(o->data_dir, err, errlen) != 0 ||
        check_current_is_ours(o->data_dir, err, errlen) != 0)
        goto done;
    int lr = datadir_lock(o->data_dir, false, &lock_fd, err, errlen);
    if (lr == 1) {
        char lock_path[4096];
        snprintf(lock_path, sizeof lock_path, "%s/.import.lock", o->data_dir);
        if (!o->wait_for_lock) {
            snprintf(err, errlen, "another import is running on %s (it holds %s)", o->data_dir,
                     lock_path);
            goto done;
        }
        if (o->on_lock_wait)
            o->on_lock_wait(o->ctx, lock_path);
        lr = datadir_lock(o->data_dir, true, &lock_fd, err, errlen);
    }
    if (lr != 0)
        goto done;
    /* Leftovers of killed imports go first: they may hold a lot of disk. */
    datadir_remove_stale(o->data_dir, NULL, NULL, 0);

    hash_job hash = {.ru = &ru, .started = now_seconds()};
    feed = feed_open(o->feed_path, err, errlen);
    if (!feed)
        goto done;
    for (int i = 0; i < IMPORT_FILE_COUNT; i++)
        r->file_bytes[i] = feed_has(feed, FILE_NAMES[i]) ? feed_size(feed, FILE_NAMES[i]) : -1;
    if (datadir_current(o->data_dir, r->previous) != 0)
        r->previous[0] = '\0';
    hash.feed = feed;
    ru.feed_bytes = feed_hashed_bytes(feed);
    /* A version here may be this feed's (the same byte count, or none
     * recorded): hash first, so an unchanged feed is not built. Otherwise no
     * version can be, and the hash runs beside the build. */
    bool hash_first = !o->force && datadir_may_hold_feed(o->data_dir, TRANSITD_VERSION, ru.feed_bytes);
    if (hash_first)
        hash_run(&hash);

    /* the build starts before its version is known: a name of its own */
    char tmp[4096], build_err[1024] = "";
    if (datadir_tmp_path(o->data_dir, "import", getpid(), tmp, sizeof tmp) != 0) {
        snprintf(build_err, sizeof build_err, "data directory path too long: %s", o->data_dir);
        tmp[0] = '\0';
    }
    int built = -1;
    bool build = !(hash_first && (hash.rc != 0 || hash.usable));
    if (build && tmp[0] && check_required_files(feed, build_err, sizeof build_err) == 0)
        built = build_stores(&ru, feed, &hash, tmp, build_err, sizeof build_err);
    if (!hash.done)   /* no build was started */
        hash_run(&hash);

    /* The hash decides what the build was for. Its error comes first, as
     * when it ran first; then an already built version is used as it is. */
    if (hash.rc != 0) {
        snprintf(err, errlen, "%s", hash.err);
        if (tmp[0] && build)
            datadir_remove_tree(tmp);
        goto done;
    }
    if (hash.usable) {
        if (tmp[0] && build)
            datadir_remove_tree(tmp);
        forget_build(r);
        r->counts = hash.counts;
        r->have_counts = true;
        if (strcmp(r->previous, r->version) == 0) {
            r->noop = true;
            rc = 0;
        } else {
            r->reused = true;
            rc = reactivate_version(&ru, err, errlen);
        }
    } else if (built != 0) {
        if (tmp[0])
            datadir_remove_tree(tmp);
        snprintf(err, errlen, "%s", build_err);
    } else {
        rc = install_version(&ru, tmp, err, errlen);
    }
    if (rc == 0)
        fill_store_sizes(r, o->data_dir);

done:
    if (feed)
        feed_close(feed);
    if (lock_fd >= 0)
        datadir_unlock(lock_fd);
    pthread_mutex_destroy(&ru.report_lock);
    r->seconds = now_seconds() - t_start;
    return rc;
}
