/* test_support.h — what every C unit test shares: finding the real feeds in
 * ../shared/gtfs and the rule for their absence (skip visibly on a fresh
 * clone; fail when CI=true), plus scratch directories.
 */
#ifndef TRANSIT_TEST_SUPPORT_H
#define TRANSIT_TEST_SUPPORT_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

/* Path of a shared feed ("cairns_translink_2014.zip") in out, or skips the
 * test (fails it under CI=true) when ../shared/gtfs is absent. Tests run from
 * the repository root. */
static inline void shared_feed_path(const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, "../shared/gtfs/%s", name);
    if (access(out, R_OK) == 0)
        return;
    const char *ci = getenv("CI");
    if (ci && strcmp(ci, "true") == 0)
        fail_msg("shared feed %s is missing and CI=true", out);
    fprintf(stderr, "SKIP: %s not found (../shared/gtfs is absent)\n", out);
    skip();
}

/* A fresh empty directory under build/ for this test; returns its path. */
static inline const char *test_tmpdir(char *out, size_t outlen, const char *tag)
{
    const char *base = getenv("TRANSITD_TEST_TMP");
    snprintf(out, outlen, "%s/%s-%ld", base ? base : "/tmp/transitd-test", tag, (long)getpid());
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", out, out);
    if (system(cmd) != 0)
        fail_msg("cannot create %s", out);
    return out;
}

/* Writes `text` to dir/name, replacing it (a fixture feed file). */
static inline void test_write_file(const char *dir, const char *name, const char *text)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

#endif
