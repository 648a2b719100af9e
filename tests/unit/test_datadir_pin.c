/* test_datadir_pin.c — readers pin versions; pruning leaves pinned ones alone.
 *
 * Why it exists: a server maps the version it serves. Pruning after an
 * import must not delete it underneath (the disk would not be freed, and the
 * server would serve a version that no longer exists), yet it must go once
 * the server lets go. These are the rules of datadir_pin, datadir_prune,
 * datadir_remove_stale, datadir_install and datadir_collect_retired, checked
 * on fake versions; the server side is tests/api/test_http_follow.py.
 */
#include "test_support.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "transit/datadir.h"

static const char *OLDEST = "111111111111";
static const char *OLDER = "222222222222";
static const char *NEWEST = "333333333333";

static bool path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void version_dir(const char *data, const char *v, char *out, size_t len)
{
    assert_int_equal(datadir_version_path(data, v, out, len), 0);
}

static bool version_exists(const char *data, const char *v)
{
    char dir[1100];
    version_dir(data, v, dir, sizeof dir);
    return path_exists(dir);
}

static bool version_retired(const char *data, const char *v)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/versions/%s/" DATADIR_RETIRED, data, v);
    return path_exists(path);
}

static void add_version(const char *data, const char *v, uint64_t sequence)
{
    char dir[1100], err[256];
    version_dir(data, v, dir, sizeof dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    test_write_file(dir, "timetable.bin", v);
    datadir_marker m = {.sequence = sequence, .imported_at = 1700000000};
    memcpy(m.version, v, DATADIR_VERSION_LEN + 1);
    snprintf(m.builder, sizeof m.builder, "test");
    assert_int_equal(datadir_write_marker(dir, &m, err, sizeof err), 0);
}

/* A data directory with three versions, NEWEST active. */
static void three_versions(char *data, size_t len, const char *tag)
{
    char err[256];
    test_tmpdir(data, len, tag);
    assert_int_equal(datadir_prepare(data, err, sizeof err), 0);
    add_version(data, OLDEST, 1);
    add_version(data, OLDER, 2);
    add_version(data, NEWEST, 3);
    assert_int_equal(datadir_activate(data, NEWEST, err, sizeof err), 0);
}

static int pin_version(const char *data, const char *v)
{
    char dir[1100], err[256];
    int fd = -1;
    version_dir(data, v, dir, sizeof dir);
    assert_int_equal(datadir_pin(dir, &fd, err, sizeof err), 0);
    assert_true(fd >= 0);
    return fd;
}

static void test_prune_skips_a_pinned_version_and_collect_removes_it_later(void **state)
{
    (void)state;
    char data[1024], err[256];
    three_versions(data, sizeof data, "pin-prune");
    int pin = pin_version(data, OLDEST);

    datadir_prune_result res;
    assert_int_equal(datadir_prune(data, 1, &res, err, sizeof err), 0);
    assert_int_equal(res.versions_removed, 1);   /* OLDER */
    assert_int_equal(res.versions_in_use, 1);    /* OLDEST, pinned */
    assert_false(version_exists(data, OLDER));
    assert_true(version_exists(data, OLDEST));
    assert_true(version_retired(data, OLDEST));
    assert_true(version_exists(data, NEWEST));

    /* still pinned: collecting leaves it, and says so */
    int removed = -1, pinned = -1;
    assert_int_equal(datadir_collect_retired(data, &removed, &pinned, err, sizeof err), 0);
    assert_int_equal(removed, 0);
    assert_int_equal(pinned, 1);
    assert_true(version_exists(data, OLDEST));

    datadir_unpin(pin);
    assert_int_equal(datadir_collect_retired(data, &removed, NULL, err, sizeof err), 0);
    assert_int_equal(removed, 1);
    assert_false(version_exists(data, OLDEST));
    assert_true(version_exists(data, NEWEST));
}

static void test_collect_waits_for_a_running_import(void **state)
{
    (void)state;
    char data[1024], err[256];
    three_versions(data, sizeof data, "pin-collect-lock");
    int pin = pin_version(data, OLDEST);
    datadir_prune_result res;
    assert_int_equal(datadir_prune(data, 1, &res, err, sizeof err), 0);
    datadir_unpin(pin);

    int import_lock = -1, removed = -1;
    assert_int_equal(datadir_lock(data, false, &import_lock, err, sizeof err), 0);
    assert_int_equal(datadir_collect_retired(data, &removed, NULL, err, sizeof err), 1);
    assert_true(version_exists(data, OLDEST));
    datadir_unlock(import_lock);
    assert_int_equal(datadir_collect_retired(data, &removed, NULL, err, sizeof err), 0);
    assert_false(version_exists(data, OLDEST));
}

static void test_a_retired_version_activated_again_is_kept(void **state)
{
    (void)state;
    char data[1024], err[256];
    three_versions(data, sizeof data, "pin-reactivate");
    int pin = pin_version(data, OLDEST);
    datadir_prune_result res;
    assert_int_equal(datadir_prune(data, 1, &res, err, sizeof err), 0);
    assert_true(version_retired(data, OLDEST));
    datadir_unpin(pin);

    /* an import re-activates it before anyone collected it */
    assert_int_equal(datadir_activate(data, OLDEST, err, sizeof err), 0);
    assert_false(version_retired(data, OLDEST));
    int removed = -1;
    assert_int_equal(datadir_collect_retired(data, &removed, NULL, err, sizeof err), 0);
    assert_true(version_exists(data, OLDEST));
    /* pruning with a larger keep clears the marker of a version it keeps */
    pin = pin_version(data, NEWEST);
    assert_int_equal(datadir_activate(data, OLDER, err, sizeof err), 0);
    assert_int_equal(datadir_prune(data, 1, &res, err, sizeof err), 0);
    assert_true(version_retired(data, NEWEST));
    assert_int_equal(datadir_prune(data, 3, &res, err, sizeof err), 0);
    assert_false(version_retired(data, NEWEST));
    datadir_unpin(pin);
}

static void test_pin_refuses_a_version_being_removed_or_gone(void **state)
{
    (void)state;
    char data[1024], dir[1100], lock[1200], err[256];
    three_versions(data, sizeof data, "pin-refuse");
    version_dir(data, OLDEST, dir, sizeof dir);
    snprintf(lock, sizeof lock, "%s/" DATADIR_READERS_LOCK, dir);

    /* a pruner holds the exclusive lock while it removes the directory */
    int remover = open(lock, O_RDWR | O_CREAT, 0644);
    assert_true(remover >= 0);
    assert_int_equal(flock(remover, LOCK_EX), 0);
    int fd = 7;
    assert_int_equal(datadir_pin(dir, &fd, err, sizeof err), -1);
    assert_int_equal(fd, -1);
    assert_non_null(strstr(err, "being removed"));
    close(remover);

    /* two readers pin the same version at once */
    int a = pin_version(data, OLDEST), b = pin_version(data, OLDEST);
    datadir_unpin(a);
    datadir_prune_result res;
    assert_int_equal(datadir_prune(data, 1, &res, err, sizeof err), 0);
    assert_true(version_exists(data, OLDEST));   /* b still pins it */
    datadir_unpin(b);
    assert_int_equal(datadir_prune(data, 1, &res, err, sizeof err), 0);
    assert_false(version_exists(data, OLDEST));

    assert_int_equal(datadir_pin(dir, &fd, err, sizeof err), -1);
    assert_non_null(strstr(err, "removed"));
}

static void test_stale_leftovers_and_replaced_versions_respect_pins(void **state)
{
    (void)state;
    char data[1024], err[256], old[1200], tmp[1100], dir[1100];
    three_versions(data, sizeof data, "pin-stale");

    /* a leftover of a dead import that a reader still maps */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        _exit(0);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    snprintf(old, sizeof old, "%s/versions/.old-%s-%ld", data, OLDEST, (long)child);
    assert_int_equal(mkdir(old, 0755), 0);
    int fd = -1;
    assert_int_equal(datadir_pin(old, &fd, err, sizeof err), 0);
    int removed = -1;
    assert_int_equal(datadir_remove_stale(data, &removed, err, sizeof err), 0);
    assert_int_equal(removed, 0);
    assert_true(path_exists(old));
    datadir_unpin(fd);
    assert_int_equal(datadir_remove_stale(data, &removed, err, sizeof err), 0);
    assert_int_equal(removed, 1);
    assert_false(path_exists(old));

    /* re-installing a version a reader maps moves the old files aside */
    int pin = pin_version(data, NEWEST);
    assert_int_equal(datadir_tmp_path(data, NEWEST, getpid(), tmp, sizeof tmp), 0);
    assert_int_equal(mkdir(tmp, 0755), 0);
    test_write_file(tmp, "timetable.bin", "rebuilt");
    assert_int_equal(datadir_install(data, tmp, NEWEST, err, sizeof err), 0);
    version_dir(data, NEWEST, dir, sizeof dir);
    char lock[1200];
    snprintf(lock, sizeof lock, "%s/" DATADIR_READERS_LOCK, dir);
    assert_true(path_exists(lock));   /* installed with its lock file */
    snprintf(old, sizeof old, "%s/versions/.old-%s-%ld", data, NEWEST, (long)getpid());
    assert_true(path_exists(old));
    datadir_unpin(pin);

    /* and replaces them outright when nobody does */
    assert_int_equal(datadir_tmp_path(data, OLDER, getpid(), tmp, sizeof tmp), 0);
    assert_int_equal(mkdir(tmp, 0755), 0);
    test_write_file(tmp, "timetable.bin", "rebuilt");
    assert_int_equal(datadir_install(data, tmp, OLDER, err, sizeof err), 0);
    snprintf(old, sizeof old, "%s/versions/.old-%s-%ld", data, OLDER, (long)getpid());
    assert_false(path_exists(old));
    assert_false(path_exists(tmp));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prune_skips_a_pinned_version_and_collect_removes_it_later),
        cmocka_unit_test(test_collect_waits_for_a_running_import),
        cmocka_unit_test(test_a_retired_version_activated_again_is_kept),
        cmocka_unit_test(test_pin_refuses_a_version_being_removed_or_gone),
        cmocka_unit_test(test_stale_leftovers_and_replaced_versions_respect_pins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
