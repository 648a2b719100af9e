/* test_import.c — the data directory's crash-safety rules, on fake versions.
 *
 * Why it exists: activation must be atomic (a reader never sees `current`
 * missing), installing over an existing version must not leave a gap,
 * pruning must keep the active version plus the most recent other one, and
 * leftovers of killed imports (dead pids) must go while a live import's stay.
 * These rules are checked here on directories with fake version contents;
 * import_run() itself is run on a tiny feed written here (activation, no-op,
 * failure, the lock, one count for a problem two writers see). The command
 * line is tested in tests/api/test_import_cli.py.
 */
#include "test_support.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "transit/datadir.h"
#include "transit/import.h"

static const char *V1 = "aaaaaaaaaaa1";
static const char *V2 = "bbbbbbbbbbb2";
static const char *V3 = "ccccccccccc3";
static const char *V4 = "ddddddddddd4";

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static bool exists_in(const char *dir, const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return exists(path);
}

/* A complete fake version with the given import counter. */
static void make_version(const char *data, const char *v, uint64_t sequence)
{
    char dir[1100], err[256];
    assert_int_equal(datadir_version_path(data, v, dir, sizeof dir), 0);
    assert_int_equal(mkdir(dir, 0755), 0);
    test_write_file(dir, "timetable.bin", v);
    datadir_marker m = {.sequence = sequence, .imported_at = 1700000000, .feed_bytes = sequence * 1000};
    memcpy(m.version, v, DATADIR_VERSION_LEN + 1);
    snprintf(m.builder, sizeof m.builder, "test");
    assert_int_equal(datadir_write_marker(dir, &m, err, sizeof err), 0);
}

static pid_t dead_pid(void)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return pid;
}

static void new_data_dir(char *data, size_t len, const char *tag)
{
    char err[256];
    test_tmpdir(data, len, tag);
    assert_int_equal(datadir_prepare(data, err, sizeof err), 0);
}

/* ---------------------------------------------------------------- tests */

static void test_version_names(void **state)
{
    (void)state;
    assert_true(datadir_is_version_name("0123456789ab"));
    assert_false(datadir_is_version_name("0123456789AB"));
    assert_false(datadir_is_version_name("0123456789a"));
    assert_false(datadir_is_version_name("0123456789abc"));
    assert_false(datadir_is_version_name(".tmp-0123456789ab-12"));
    assert_false(datadir_is_version_name(""));
}

static void test_marker_roundtrip_and_sequence(void **state)
{
    (void)state;
    char data[1024], dir[1100];
    new_data_dir(data, sizeof data, "import-marker");
    assert_int_equal(datadir_next_sequence(data), 1);
    make_version(data, V1, 7);
    make_version(data, V2, 3);
    datadir_marker m;
    datadir_version_path(data, V1, dir, sizeof dir);
    assert_int_equal(datadir_read_marker(dir, &m), 0);
    assert_string_equal(m.version, V1);
    assert_int_equal(m.sequence, 7);
    assert_int_equal(m.imported_at, 1700000000);
    assert_string_equal(m.builder, "test");
    assert_int_equal(m.feed_bytes, 7000);
    assert_false(exists_in(dir, "COMPLETE.tmp"));
    assert_int_equal(datadir_next_sequence(data), 8);

    /* which feeds a version may hold: the same byte count and builder */
    assert_true(datadir_may_hold_feed(data, "test", 7000));
    assert_true(datadir_may_hold_feed(data, "test", 3000));
    assert_false(datadir_may_hold_feed(data, "test", 7001));
    assert_false(datadir_may_hold_feed(data, "other", 7000));
    /* a marker written before the count was recorded may hold any feed */
    char old_dir[1100];
    datadir_version_path(data, V2, old_dir, sizeof old_dir);
    char old_marker[256];
    snprintf(old_marker, sizeof old_marker,
             "transitd-version-dir 1\nversion %s\nsequence 3\nimported_at 1700000000\nbuilder test\n", V2);
    test_write_file(old_dir, "COMPLETE", old_marker);
    assert_int_equal(datadir_read_marker(old_dir, &m), 0);
    assert_int_equal(m.feed_bytes, 0);
    assert_true(datadir_may_hold_feed(data, "test", 7001));

    /* a directory without a marker, or with a garbled one, is incomplete */
    datadir_version_path(data, V3, dir, sizeof dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(datadir_read_marker(dir, &m), -1);
    test_write_file(dir, "COMPLETE", "version ccccccccccc3\n");
    assert_int_equal(datadir_read_marker(dir, &m), -1);
    assert_int_equal(datadir_next_sequence(data), 8);
}

static void test_activate_points_current_at_version(void **state)
{
    (void)state;
    char data[1024], err[256], version[DATADIR_VERSION_LEN + 1], target[256], path[1100];
    new_data_dir(data, sizeof data, "import-activate");
    assert_int_equal(datadir_current(data, version), -1);
    make_version(data, V1, 1);
    assert_int_equal(datadir_activate(data, V1, err, sizeof err), 0);
    assert_int_equal(datadir_current(data, version), 0);
    assert_string_equal(version, V1);

    snprintf(path, sizeof path, "%s/current", data);
    ssize_t n = readlink(path, target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = '\0';
    assert_string_equal(target, "versions/aaaaaaaaaaa1"); /* relative: the dir can move */
    snprintf(path, sizeof path, "%s/current/timetable.bin", data);
    assert_true(exists(path));

    make_version(data, V2, 2);
    assert_int_equal(datadir_activate(data, V2, err, sizeof err), 0);
    assert_int_equal(datadir_current(data, version), 0);
    assert_string_equal(version, V2);
    snprintf(path, sizeof path, "%s/.current-%ld", data, (long)getpid());
    assert_false(exists(path)); /* the temporary link was renamed, not left behind */

    assert_int_equal(datadir_activate(data, "../../etc", err, sizeof err), -1);
    assert_int_equal(datadir_current(data, version), 0);
    assert_string_equal(version, V2);
}

static void test_activate_refuses_a_real_directory(void **state)
{
    (void)state;
    char data[1024], err[256], path[1100];
    new_data_dir(data, sizeof data, "import-realdir");
    make_version(data, V1, 1);
    snprintf(path, sizeof path, "%s/current", data);
    assert_int_equal(mkdir(path, 0755), 0);
    test_write_file(path, "keep.txt", "user data");
    assert_int_equal(datadir_activate(data, V1, err, sizeof err), -1);
    assert_non_null(strstr(err, "not the symlink"));
    assert_true(exists_in(path, "keep.txt"));
}

typedef struct reader_state {
    const char *data;
    atomic_bool stop;
    atomic_long reads, failures;
} reader_state;

static void *reader(void *arg)
{
    reader_state *s = arg;
    char path[1100], probe[1200], target[256];
    snprintf(path, sizeof path, "%s/current", s->data);
    snprintf(probe, sizeof probe, "%s/current/timetable.bin", s->data);
    while (!atomic_load(&s->stop)) {
        ssize_t n = readlink(path, target, sizeof target);
        struct stat st;
        if (n <= 0 || stat(probe, &st) != 0)
            atomic_fetch_add(&s->failures, 1);
        atomic_fetch_add(&s->reads, 1);
    }
    return NULL;
}

static void test_activation_is_atomic_for_readers(void **state)
{
    (void)state;
    char data[1024], err[256];
    new_data_dir(data, sizeof data, "import-atomic");
    make_version(data, V1, 1);
    make_version(data, V2, 2);
    assert_int_equal(datadir_activate(data, V1, err, sizeof err), 0);

    reader_state s = {.data = data};
    atomic_init(&s.stop, false);
    atomic_init(&s.reads, 0);
    atomic_init(&s.failures, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, reader, &s), 0);
    for (int i = 0; i < 400; i++)
        assert_int_equal(datadir_activate(data, (i & 1) ? V1 : V2, err, sizeof err), 0);
    atomic_store(&s.stop, true);
    pthread_join(t, NULL);
    assert_true(atomic_load(&s.reads) > 0);
    assert_int_equal(atomic_load(&s.failures), 0);
}

static void test_install_new_and_over_existing(void **state)
{
    (void)state;
    char data[1024], err[256], tmp[1100], dir[1100], path[1200], text[64];
    new_data_dir(data, sizeof data, "import-install");

    /* a fresh version */
    assert_int_equal(datadir_tmp_path(data, V1, getpid(), tmp, sizeof tmp), 0);
    assert_int_equal(mkdir(tmp, 0755), 0);
    test_write_file(tmp, "timetable.bin", "first");
    assert_int_equal(datadir_sync_dir(tmp, err, sizeof err), 0);
    assert_int_equal(datadir_install(data, tmp, V1, err, sizeof err), 0);
    assert_false(exists(tmp));
    datadir_version_path(data, V1, dir, sizeof dir);
    assert_true(exists_in(dir, "timetable.bin"));
    assert_int_equal(datadir_activate(data, V1, err, sizeof err), 0);

    /* over the active version (import --force): swapped, never missing */
    assert_int_equal(mkdir(tmp, 0755), 0);
    test_write_file(tmp, "timetable.bin", "second");
    test_write_file(tmp, "extra.sqlite", "x");
    assert_int_equal(datadir_install(data, tmp, V1, err, sizeof err), 0);
    assert_false(exists(tmp));
    snprintf(path, sizeof path, "%s/current/timetable.bin", data);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(text, sizeof text, f));
    fclose(f);
    assert_string_equal(text, "second");
    assert_true(exists_in(dir, "extra.sqlite"));
    assert_int_equal(datadir_dir_bytes(dir), strlen("second") + 1);

    /* nothing left over in versions/ but the version itself */
    char versions[1100];
    snprintf(versions, sizeof versions, "%s/versions", data);
    int prune_removed = -1;
    assert_int_equal(datadir_remove_stale(data, &prune_removed, err, sizeof err), 0);
    assert_int_equal(prune_removed, 0);
}

static void test_prune_keeps_active_and_latest(void **state)
{
    (void)state;
    char data[1024], err[256], dir[1100], version[DATADIR_VERSION_LEN + 1];
    new_data_dir(data, sizeof data, "import-prune");
    make_version(data, V1, 1);
    make_version(data, V2, 2);
    make_version(data, V3, 3);
    make_version(data, V4, 4);
    /* the active one is an old version (re-activated by hand): kept anyway */
    assert_int_equal(datadir_activate(data, V2, err, sizeof err), 0);
    /* an incomplete version (no marker) is a leftover */
    char incomplete[1100];
    datadir_version_path(data, "eeeeeeeeeee5", incomplete, sizeof incomplete);
    assert_int_equal(mkdir(incomplete, 0755), 0);
    test_write_file(incomplete, "timetable.bin", "half");
    /* a directory that is not ours is left alone */
    char foreign[1100];
    snprintf(foreign, sizeof foreign, "%s/versions/notes", data);
    assert_int_equal(mkdir(foreign, 0755), 0);

    datadir_prune_result res;
    assert_int_equal(datadir_prune(data, 2, &res, err, sizeof err), 0);
    assert_int_equal(res.versions_removed, 2);
    assert_int_equal(res.leftovers_removed, 1);
    datadir_version_path(data, V2, dir, sizeof dir);
    assert_true(exists(dir));
    datadir_version_path(data, V4, dir, sizeof dir);
    assert_true(exists(dir));
    datadir_version_path(data, V1, dir, sizeof dir);
    assert_false(exists(dir));
    datadir_version_path(data, V3, dir, sizeof dir);
    assert_false(exists(dir));
    assert_false(exists(incomplete));
    assert_true(exists(foreign));
    assert_int_equal(datadir_current(data, version), 0);
    assert_string_equal(version, V2);

    /* pruning again changes nothing; keep 1 leaves only the active one */
    assert_int_equal(datadir_prune(data, 2, &res, err, sizeof err), 0);
    assert_int_equal(res.versions_removed, 0);
    assert_int_equal(datadir_prune(data, 1, &res, err, sizeof err), 0);
    assert_int_equal(res.versions_removed, 1);
    datadir_version_path(data, V2, dir, sizeof dir);
    assert_true(exists(dir));
    datadir_version_path(data, V4, dir, sizeof dir);
    assert_false(exists(dir));
}

static void test_prune_without_active_keeps_latest_two(void **state)
{
    (void)state;
    char data[1024], err[256], dir[1100];
    new_data_dir(data, sizeof data, "import-prune-noactive");
    make_version(data, V1, 5);
    make_version(data, V2, 9);
    make_version(data, V3, 1);
    datadir_prune_result res;
    assert_int_equal(datadir_prune(data, 2, &res, err, sizeof err), 0);
    assert_int_equal(res.versions_removed, 1);
    datadir_version_path(data, V3, dir, sizeof dir);
    assert_false(exists(dir));
    datadir_version_path(data, V1, dir, sizeof dir);
    assert_true(exists(dir));
    datadir_version_path(data, V2, dir, sizeof dir);
    assert_true(exists(dir));
}

static void test_stale_leftovers_of_dead_processes(void **state)
{
    (void)state;
    char data[1024], err[256], dead_tmp[1100], live_tmp[1100], dead_old[1100], link[1100],
        live_link[1100];
    new_data_dir(data, sizeof data, "import-stale");
    make_version(data, V1, 1);
    assert_int_equal(datadir_activate(data, V1, err, sizeof err), 0);

    pid_t dead = dead_pid();
    pid_t live = getppid(); /* our parent is alive while we run */
    datadir_tmp_path(data, V2, dead, dead_tmp, sizeof dead_tmp);
    datadir_tmp_path(data, V3, live, live_tmp, sizeof live_tmp);
    snprintf(dead_old, sizeof dead_old, "%s/versions/.old-%s-%ld", data, V1, (long)dead);
    snprintf(link, sizeof link, "%s/.current-%ld", data, (long)dead);
    snprintf(live_link, sizeof live_link, "%s/.current-%ld", data, (long)live);
    assert_int_equal(mkdir(dead_tmp, 0755), 0);
    test_write_file(dead_tmp, "timetable.bin", "partial");
    char nested[1200];
    snprintf(nested, sizeof nested, "%s/sub", dead_tmp);
    assert_int_equal(mkdir(nested, 0755), 0);
    test_write_file(nested, "deep", "x");
    assert_int_equal(mkdir(live_tmp, 0755), 0);
    assert_int_equal(mkdir(dead_old, 0755), 0);
    assert_int_equal(symlink("versions/" "aaaaaaaaaaa1", link), 0);
    assert_int_equal(symlink("versions/" "aaaaaaaaaaa1", live_link), 0);

    int removed = -1;
    assert_int_equal(datadir_remove_stale(data, &removed, err, sizeof err), 0);
    assert_int_equal(removed, 3);
    assert_false(exists(dead_tmp));
    assert_false(exists(dead_old));
    assert_false(exists(link));
    assert_true(exists(live_tmp));   /* an import still running keeps its work */
    assert_true(exists(live_link));
    char dir[1100], version[DATADIR_VERSION_LEN + 1];
    datadir_version_path(data, V1, dir, sizeof dir);
    assert_true(exists_in(dir, "timetable.bin"));
    assert_int_equal(datadir_current(data, version), 0);
    assert_string_equal(version, V1);
    unlink(live_link);
}

static void test_lock_is_exclusive(void **state)
{
    (void)state;
    char data[1024], err[256];
    new_data_dir(data, sizeof data, "import-lock");
    int fd1 = -1, fd2 = -1;
    assert_int_equal(datadir_lock(data, false, &fd1, err, sizeof err), 0);
    assert_int_equal(datadir_lock(data, false, &fd2, err, sizeof err), 1);
    datadir_unlock(fd1);
    assert_int_equal(datadir_lock(data, false, &fd2, err, sizeof err), 0);
    datadir_unlock(fd2);
}

static void test_prepare_creates_parents(void **state)
{
    (void)state;
    char base[1024], data[1100], err[256], versions[1200], file[1200];
    test_tmpdir(base, sizeof base, "import-prepare");
    snprintf(data, sizeof data, "%s/a/b/data", base);
    assert_int_equal(datadir_prepare(data, err, sizeof err), 0);
    snprintf(versions, sizeof versions, "%s/versions", data);
    struct stat st;
    assert_int_equal(stat(versions, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(datadir_prepare(data, err, sizeof err), 0); /* idempotent */
    /* a data directory path that is a file is an error naming it */
    snprintf(file, sizeof file, "%s/plain-file", base);
    test_write_file(base, "plain-file", "x");
    assert_int_equal(datadir_prepare(file, err, sizeof err), -1);
    assert_non_null(strstr(err, "plain-file"));
}

static void test_current_parsing(void **state)
{
    (void)state;
    char data[1024], path[1100], version[DATADIR_VERSION_LEN + 1];
    new_data_dir(data, sizeof data, "import-current");
    snprintf(path, sizeof path, "%s/current", data);
    assert_int_equal(symlink("elsewhere/aaaaaaaaaaa1", path), 0);
    assert_int_equal(datadir_current(data, version), -1);
    unlink(path);
    assert_int_equal(symlink("versions/not-a-version", path), 0);
    assert_int_equal(datadir_current(data, version), -1);
    unlink(path);
    assert_int_equal(symlink("/srv/transit/versions/aaaaaaaaaaa1/", path), 0);
    assert_int_equal(datadir_current(data, version), 0);
    assert_string_equal(version, V1);
}

static void test_import_names(void **state)
{
    (void)state;
    assert_string_equal(import_file_name(IMPORT_FILE_STOP_TIMES), "stop_times.txt");
    assert_string_equal(import_file_name(IMPORT_FILE_SHAPES), "shapes.txt");
    assert_string_equal(import_phase_name(IMPORT_PHASE_ACTIVATE), "activate");
    assert_string_equal(import_phase_name(IMPORT_PHASE_COUNT), "?");
}

/* ---------------------------------------------------------------- import_run */

static const char *const TINY_FILES[][2] = {
    {"agency.txt", "agency_id,agency_name,agency_url,agency_timezone\n"
                   "A,Tiny,https://example.org,Europe/Berlin\n"},
    {"stops.txt", "stop_id,stop_name,stop_lat,stop_lon\n"
                  "S1,One,52.50,13.40\nS2,Two,52.51,13.41\nS3,Three,52.52,13.42\n"},
    {"routes.txt", "route_id,agency_id,route_short_name,route_type\nR1,A,1,3\n"},
    {"trips.txt", "route_id,service_id,trip_id\nR1,WD,T1\nR1,WD,T2\n"},
    {"stop_times.txt", "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                       "T1,08:00:00,08:00:00,S1,1\nT1,08:05:00,08:05:00,S2,2\n"
                       "T1,08:10:00,08:10:00,S3,3\nT2,09:00:00,09:00:00,S1,1\n"
                       "T2,09:10:00,09:10:00,S3,2\n"},
    {"calendar.txt", "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
                     "start_date,end_date\nWD,1,1,1,1,1,0,0,20260101,20261231\n"},
};

/* Writes the tiny feed into a new directory, leaving out `skip` and adding
 * `extra_stop` (a stops.txt row) when given. */
static void write_tiny_feed(const char *dir, const char *skip, const char *extra_stop)
{
    assert_int_equal(mkdir(dir, 0755), 0);
    for (size_t i = 0; i < sizeof TINY_FILES / sizeof *TINY_FILES; i++) {
        if (skip && strcmp(skip, TINY_FILES[i][0]) == 0)
            continue;
        char text[1024];
        snprintf(text, sizeof text, "%s%s", TINY_FILES[i][1],
                 extra_stop && strcmp(TINY_FILES[i][0], "stops.txt") == 0 ? extra_stop : "");
        test_write_file(dir, TINY_FILES[i][0], text);
    }
}

typedef struct phase_log {
    int order[IMPORT_PHASE_COUNT];
    int n;
} phase_log;

static void log_phase(void *ctx, import_phase p, const import_result *r)
{
    phase_log *log = ctx;
    assert_true(r->phase_done[p]);
    if (log->n < IMPORT_PHASE_COUNT)
        log->order[log->n++] = (int)p;
}

/* Entries of DATA/versions (a version, or a leftover such as .tmp-import-<pid>). */
static int version_entries(const char *data)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/versions", data);
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void count_progress(void *ctx, const char *file, uint64_t done, uint64_t total, uint64_t rows,
                           double seconds, bool finished)
{
    (void)file, (void)done, (void)total, (void)rows, (void)seconds, (void)finished;
    atomic_fetch_add((atomic_int *)ctx, 1);
}

/* Whether the timetable read anything: its progress callback counts. */
static int import_counting_reads(const char *feed, const char *data, import_result *r, char *err,
                                 size_t errlen, int *rc)
{
    atomic_int reads = 0;
    import_options o = {.feed_path = feed, .data_dir = data, .on_progress = count_progress,
                        .ctx = &reads};
    import_result_init(r);
    *rc = import_run(&o, r, err, errlen);
    return atomic_load(&reads);
}

/* The hash runs beside the build when no version here can be the feed's, and
 * before it when one may be: an unchanged feed is then never read to build. */
static void test_hash_first_only_when_a_version_may_match(void **state)
{
    (void)state;
    char base[1024], feed[1100], same_size[1100], data[1100], err[1024];
    test_tmpdir(base, sizeof base, "import-hash-first");
    snprintf(feed, sizeof feed, "%s/feed", base);
    snprintf(same_size, sizeof same_size, "%s/feed-same-size", base);
    snprintf(data, sizeof data, "%s/data", base);
    write_tiny_feed(feed, NULL, NULL);
    /* the same bytes but one: "One" becomes "Uno", a count that proves nothing */
    write_tiny_feed(same_size, NULL, NULL);
    test_write_file(same_size, "stops.txt", "stop_id,stop_name,stop_lat,stop_lon\n"
                                            "S1,Uno,52.50,13.40\nS2,Two,52.51,13.41\nS3,Three,52.52,13.42\n");
    import_result r;
    int rc;
    assert_true(import_counting_reads(feed, data, &r, err, sizeof err, &rc) > 0);
    assert_int_equal(rc, 0);
    char first[DATADIR_VERSION_LEN + 1], dir[1200];
    memcpy(first, r.version, sizeof first);
    datadir_marker m;
    assert_int_equal(datadir_version_path(data, first, dir, sizeof dir), 0);
    assert_int_equal(datadir_read_marker(dir, &m), 0);
    assert_true(m.feed_bytes > 0);   /* name + NUL + bytes of its six members */
    import_result_destroy(&r);

    /* unchanged: hashed first, a no-op without one row read */
    assert_int_equal(import_counting_reads(feed, data, &r, err, sizeof err, &rc), 0);
    assert_int_equal(rc, 0);
    assert_true(r.noop);
    assert_string_equal(r.version, first);
    import_result_destroy(&r);

    /* the same count, other bytes: hashed first, then built, a new version */
    assert_true(import_counting_reads(same_size, data, &r, err, sizeof err, &rc) > 0);
    assert_int_equal(rc, 0);
    assert_true(r.activated && !r.noop && !r.reused);
    assert_string_not_equal(r.version, first);
    assert_int_equal(r.counts.stops, 3);
    import_result_destroy(&r);

    /* back to the first: re-activated without a build */
    assert_int_equal(import_counting_reads(feed, data, &r, err, sizeof err, &rc), 0);
    assert_int_equal(rc, 0);
    assert_true(r.reused && r.activated);
    assert_string_equal(r.version, first);
    import_result_destroy(&r);
    assert_int_equal(version_entries(data), 2);
}

static int run_import(const char *feed, const char *data, bool force, import_result *r,
                      phase_log *log, char *err, size_t errlen)
{
    import_options o = {.feed_path = feed, .data_dir = data, .force = force,
                        .on_phase = log ? log_phase : NULL, .ctx = log};
    import_result_init(r);
    return import_run(&o, r, err, errlen);
}

static void test_import_run_activates_then_noop(void **state)
{
    (void)state;
    char base[1024], feed[1100], data[1100], err[1024], version[DATADIR_VERSION_LEN + 1];
    test_tmpdir(base, sizeof base, "import-run");
    snprintf(feed, sizeof feed, "%s/feed", base);
    snprintf(data, sizeof data, "%s/data", base);
    write_tiny_feed(feed, NULL, NULL);

    import_result r;
    phase_log log = {.n = 0};
    assert_int_equal(run_import(feed, data, false, &r, &log, err, sizeof err), 0);
    assert_true(r.activated);
    assert_false(r.noop);
    assert_true(datadir_is_version_name(r.version));
    assert_int_equal(datadir_current(data, version), 0);
    assert_string_equal(version, r.version);
    assert_int_equal(import_file_rows(&r, IMPORT_FILE_STOP_TIMES), 5);
    assert_int_equal(import_file_rows(&r, IMPORT_FILE_STOPS), 3);
    assert_true(r.have_counts);
    assert_int_equal(r.counts.stops, 3);
    assert_int_equal(r.counts.trips, 2);
    assert_true(r.timetable_bytes > 0 && r.schedule_bytes > 0 && r.shapes_bytes > 0);
    assert_true(r.live_bytes > 0);
    assert_int_equal(version_entries(data), 1);   /* .tmp-import-<pid> became the version */
    /* every phase reported once; the hash (on its own thread, beside the
     * build) before verification; activation and pruning last */
    assert_int_equal(log.n, IMPORT_PHASE_COUNT);
    int at[IMPORT_PHASE_COUNT];
    for (int p = 0; p < IMPORT_PHASE_COUNT; p++)
        at[p] = -1;
    for (int i = 0; i < log.n; i++) {
        assert_int_equal(at[log.order[i]], -1);
        at[log.order[i]] = i;
    }
    assert_true(at[IMPORT_PHASE_HASH] >= 0 && at[IMPORT_PHASE_HASH] < at[IMPORT_PHASE_VERIFY]);
    assert_int_equal(log.order[IMPORT_PHASE_COUNT - 2], IMPORT_PHASE_ACTIVATE);
    assert_int_equal(log.order[IMPORT_PHASE_COUNT - 1], IMPORT_PHASE_PRUNE);
    char saved[DATADIR_VERSION_LEN + 1];
    memcpy(saved, r.version, sizeof saved);
    import_result_destroy(&r);

    assert_int_equal(run_import(feed, data, false, &r, NULL, err, sizeof err), 0);
    assert_true(r.noop);
    assert_false(r.activated);
    assert_string_equal(r.version, saved);
    /* the build that ran beside the hash is dropped: nothing of it is reported or left */
    assert_false(r.phase_done[IMPORT_PHASE_TIMETABLE]);
    assert_false(r.phase_done[IMPORT_PHASE_SCHEDULE]);
    assert_false(r.phase_done[IMPORT_PHASE_SHAPES]);
    assert_int_equal(import_file_rows(&r, IMPORT_FILE_STOP_TIMES), 0);
    assert_true(r.have_counts);
    assert_int_equal(r.counts.stops, 3);
    assert_int_equal(version_entries(data), 1);
    import_result_destroy(&r);

    assert_int_equal(run_import(feed, data, true, &r, NULL, err, sizeof err), 0);
    assert_false(r.noop);
    assert_true(r.activated);
    assert_true(r.phase_done[IMPORT_PHASE_TIMETABLE]);
    assert_string_equal(r.version, saved);
    import_result_destroy(&r);
}

static void test_import_run_failure_keeps_current(void **state)
{
    (void)state;
    char base[1024], feed[1100], data[1100], err[1024], version[DATADIR_VERSION_LEN + 1];
    test_tmpdir(base, sizeof base, "import-fail");
    snprintf(feed, sizeof feed, "%s/feed", base);
    snprintf(data, sizeof data, "%s/data", base);
    write_tiny_feed(feed, "stops.txt", NULL);
    assert_int_equal(datadir_prepare(data, err, sizeof err), 0);
    make_version(data, V1, 1);
    assert_int_equal(datadir_activate(data, V1, err, sizeof err), 0);

    import_result r;
    assert_int_equal(run_import(feed, data, false, &r, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "stops.txt"));
    assert_false(r.activated);
    import_result_destroy(&r);
    assert_int_equal(datadir_current(data, version), 0);
    assert_string_equal(version, V1);
    int removed = -1;
    assert_int_equal(datadir_remove_stale(data, &removed, err, sizeof err), 0);
    assert_int_equal(removed, 0); /* no temporary directory was left behind */
    char dir[1100];
    datadir_version_path(data, V1, dir, sizeof dir);
    assert_true(exists_in(dir, "timetable.bin"));
    assert_true(exists_in(dir, "COMPLETE"));
}

static void test_import_run_counts_a_shared_file_problem_once(void **state)
{
    (void)state;
    char base[1024], feed[1100], data[1100], err[1024];
    test_tmpdir(base, sizeof base, "import-dup");
    snprintf(feed, sizeof feed, "%s/feed", base);
    snprintf(data, sizeof data, "%s/data", base);
    /* stops.txt is read by the timetable and the schedule writers alike */
    write_tiny_feed(feed, NULL, "S2,Two again,52.515,13.415\n");
    import_result r;
    assert_int_equal(run_import(feed, data, false, &r, NULL, err, sizeof err), 0);
    assert_int_equal(r.diag.count[DIAG_DUPLICATE_ID], 1);
    int at_line = 0;
    for (int i = 0; i < r.diag.nexamples; i++)
        if (strncmp(r.diag.examples[i], "stops.txt:5:", 12) == 0)
            at_line++;
    assert_int_equal(at_line, 1);
    import_result_destroy(&r);
}

static void test_import_run_refuses_while_locked(void **state)
{
    (void)state;
    char base[1024], feed[1100], data[1100], err[1024];
    test_tmpdir(base, sizeof base, "import-locked");
    snprintf(feed, sizeof feed, "%s/feed", base);
    snprintf(data, sizeof data, "%s/data", base);
    write_tiny_feed(feed, NULL, NULL);
    assert_int_equal(datadir_prepare(data, err, sizeof err), 0);
    int fd = -1;
    assert_int_equal(datadir_lock(data, false, &fd, err, sizeof err), 0);
    import_result r;
    assert_int_equal(run_import(feed, data, false, &r, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "another import is running"));
    import_result_destroy(&r);
    datadir_unlock(fd);
    char path[1200];
    snprintf(path, sizeof path, "%s/current", data);
    assert_false(exists(path));
}

/* TRANSITD_TEST_SCHEDULE_AFTER=FILE (src/import/import_hold.h): the
 * schedule writer waits until the timetable has read FILE, so schedule.sqlite
 * is done only after it; a file the builder never reads holds it until the
 * builder ends. Either way the import completes with the same version. */
typedef struct hold_log {
    atomic_int next;
    int read_at, schedule_at;   /* when stop_times.txt was read, when schedule.sqlite was done */
} hold_log;

static void hold_progress(void *ctx, const char *file, uint64_t done, uint64_t total, uint64_t rows,
                          double seconds, bool finished)
{
    (void)done, (void)total, (void)rows, (void)seconds;
    hold_log *log = ctx;
    if (finished && strcmp(file, "stop_times.txt") == 0)
        log->read_at = atomic_fetch_add(&log->next, 1);
}

static void hold_phase(void *ctx, import_phase p, const import_result *r)
{
    (void)r;
    hold_log *log = ctx;
    if (p == IMPORT_PHASE_SCHEDULE)
        log->schedule_at = atomic_fetch_add(&log->next, 1);
}

static void test_import_run_schedule_held_after_a_file(void **state)
{
    (void)state;
    static const char *const after[] = {"stop_times.txt", "never-read.txt", ""};
    char base[1024], feed[1100], err[1024], first[DATADIR_VERSION_LEN + 1] = "";
    test_tmpdir(base, sizeof base, "import-held");
    snprintf(feed, sizeof feed, "%s/feed", base);
    write_tiny_feed(feed, NULL, NULL);
    for (size_t i = 0; i < sizeof after / sizeof *after; i++) {
        char data[1200];
        snprintf(data, sizeof data, "%s/data-%zu", base, i);
        assert_int_equal(setenv("TRANSITD_TEST_SCHEDULE_AFTER", after[i], 1), 0);
        hold_log log = {.read_at = -1, .schedule_at = -1};
        atomic_init(&log.next, 0);
        import_options o = {.feed_path = feed, .data_dir = data, .on_phase = hold_phase,
                            .on_progress = hold_progress, .ctx = &log};
        import_result r;
        import_result_init(&r);
        assert_int_equal(import_run(&o, &r, err, sizeof err), 0);
        assert_true(r.activated);
        assert_int_equal(r.counts.trips, 2);
        assert_true(log.read_at >= 0 && log.schedule_at >= 0);
        if (i == 0)
            assert_true(log.schedule_at > log.read_at);
        if (!first[0])
            memcpy(first, r.version, sizeof first);
        assert_string_equal(r.version, first);
        import_result_destroy(&r);
    }
    unsetenv("TRANSITD_TEST_SCHEDULE_AFTER");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_names),
        cmocka_unit_test(test_marker_roundtrip_and_sequence),
        cmocka_unit_test(test_activate_points_current_at_version),
        cmocka_unit_test(test_activate_refuses_a_real_directory),
        cmocka_unit_test(test_activation_is_atomic_for_readers),
        cmocka_unit_test(test_install_new_and_over_existing),
        cmocka_unit_test(test_prune_keeps_active_and_latest),
        cmocka_unit_test(test_prune_without_active_keeps_latest_two),
        cmocka_unit_test(test_stale_leftovers_of_dead_processes),
        cmocka_unit_test(test_lock_is_exclusive),
        cmocka_unit_test(test_prepare_creates_parents),
        cmocka_unit_test(test_current_parsing),
        cmocka_unit_test(test_import_names),
        cmocka_unit_test(test_import_run_activates_then_noop),
        cmocka_unit_test(test_hash_first_only_when_a_version_may_match),
        cmocka_unit_test(test_import_run_failure_keeps_current),
        cmocka_unit_test(test_import_run_counts_a_shared_file_problem_once),
        cmocka_unit_test(test_import_run_refuses_while_locked),
        cmocka_unit_test(test_import_run_schedule_held_after_a_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
