/* test_tz.c — the POSIX TZ footer rules of src/base/tz.c.
 *
 * Why it exists: after a zone's last listed transition (2037 in most TZif
 * files, and at once in "slim" files) every offset comes from the footer
 * rule, and the importer turns every departure into an instant with it. The
 * footer parser is static, so each case writes a small TZif v2 file with the
 * footer under test into a scratch $TZDIR and loads it through tz_load:
 * southern-hemisphere rules that span New Year, "M", "J" (no Feb 29) and zero-
 * based day rules, angle-bracket names, zones without DST, transitions at the
 * exact second, and damaged footers refused.
 */
#include "test_support.h"

#include <sys/stat.h>

#include "transit/tz.h"

static char g_dir[1024];

static void put_be32(FILE *f, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                          (unsigned char)v};
    fwrite(b, 1, 4, f);
}

static void put_be64(FILE *f, int64_t v)
{
    put_be32(f, (uint32_t)((uint64_t)v >> 32));
    put_be32(f, (uint32_t)v);
}

/* A TZif v2 header: magic, version, 15 reserved bytes, the six counts. */
static void put_header(FILE *f, uint32_t timecnt, uint32_t typecnt)
{
    fwrite("TZif2", 1, 5, f);
    static const unsigned char reserved[15];
    fwrite(reserved, 1, sizeof reserved, f);
    put_be32(f, 0);         /* isutcnt */
    put_be32(f, 0);         /* isstdcnt */
    put_be32(f, 0);         /* leapcnt */
    put_be32(f, timecnt);
    put_be32(f, typecnt);
    put_be32(f, 4);         /* charcnt: "ABC\0" */
}

/* $TZDIR/name: a v1 block with one type, then the v2 block with `n`
 * transitions (at[i] switches to offset[i]; `initial` before the first),
 * then "\n<footer>\n". */
static void write_zone(const char *name, int32_t initial, const int64_t *at, const int32_t *offset,
                       uint32_t n, const char *footer)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    put_header(f, 0, 1);
    put_be32(f, (uint32_t)initial);
    fputc(0, f);
    fputc(0, f);
    fwrite("ABC", 1, 4, f);
    put_header(f, n, n + 1);
    for (uint32_t i = 0; i < n; i++)
        put_be64(f, at[i]);
    for (uint32_t i = 0; i < n; i++)
        fputc((int)(i + 1), f);
    uint32_t types = n + 1;
    for (uint32_t i = 0; i < types; i++) {
        put_be32(f, (uint32_t)(i == 0 ? initial : offset[i - 1]));
        fputc(0, f);   /* isdst: not read */
        fputc(0, f);   /* abbreviation index */
    }
    fwrite("ABC", 1, 4, f);
    fprintf(f, "\n%s\n", footer);
    fclose(f);
}

/* Loads the zone of a footer alone (no transitions). */
static void load_footer(const char *footer, tz_zone *z)
{
    write_zone("Test/Footer", 0, NULL, NULL, 0, footer);
    char err[512];
    if (tz_load("Test/Footer", z, err, sizeof err) != 0)
        fail_msg("footer '%s' refused: %s", footer, err);
}

/* The offset changes from `before` to `after` exactly at instant t. */
static void expect_switch(const tz_zone *z, int64_t t, int32_t before, int32_t after)
{
    int32_t got_before = tz_offset_at(z, t - 1), got_after = tz_offset_at(z, t);
    if (got_before != before || got_after != after)
        fail_msg("at %lld: %d then %d, expected %d then %d", (long long)t, got_before, got_after,
                 before, after);
}

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "tz");
    char sub[1100];
    snprintf(sub, sizeof sub, "%s/Test", g_dir);
    if (mkdir(sub, 0755) != 0)
        return -1;
    setenv("TZDIR", g_dir, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unsetenv("TZDIR");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------- rules */

static void test_southern_hemisphere_sydney(void **state)
{
    (void)state;
    tz_zone z;
    load_footer("AEST-10AEDT,M10.1.0,M4.1.0/3", &z);
    assert_int_equal(z.std_offset, 36000);
    assert_int_equal(z.dst_offset, 39600);
    /* ends Sunday 2026-04-05 03:00 AEDT = 04-04T16:00Z; starts Sunday
     * 2026-10-04 02:00 AEST = 10-03T16:00Z */
    expect_switch(&z, 1775318400, 39600, 36000);
    expect_switch(&z, 1791043200, 36000, 39600);
    assert_int_equal(tz_offset_at(&z, 1768435200), 39600);   /* January: summer */
    assert_int_equal(tz_offset_at(&z, 1782864000), 36000);   /* July: winter */
    assert_int_equal(tz_offset_at(&z, 1798718400), 39600);   /* New Year's Eve */
    tz_free(&z);
}

static void test_southern_rule_spanning_new_year(void **state)
{
    (void)state;
    tz_zone z;
    /* Brazil's rule until 2019, both changes at local midnight */
    load_footer("<-03>3<-02>,M11.1.0/0,M2.3.0/0", &z);
    assert_int_equal(z.std_offset, -10800);
    assert_int_equal(z.dst_offset, -7200);
    expect_switch(&z, 1793502000, -10800, -7200);   /* 2026-11-01 00:00-03 */
    expect_switch(&z, 1803175200, -7200, -10800);   /* 2027-02-21 00:00-02 */
    assert_int_equal(tz_offset_at(&z, 1798718400), -7200);            /* 2026-12-31 */
    assert_int_equal(tz_offset_at(&z, 1798718400 + 86400), -7200);    /* 2027-01-01 */
    assert_int_equal(tz_offset_at(&z, 1782864000), -10800);           /* July */
    tz_free(&z);
}

static void test_last_week_and_negative_rule_time(void **state)
{
    (void)state;
    tz_zone z;
    load_footer("CET-1CEST,M3.5.0,M10.5.0/3", &z);
    expect_switch(&z, 1774746000, 3600, 7200);   /* 2026-03-29 01:00Z */
    expect_switch(&z, 1792890000, 7200, 3600);   /* 2026-10-25 01:00Z */
    tz_free(&z);
    /* America/Nuuk since 2023: -1:00 is Saturday 23:00 local */
    load_footer("<-02>2<-01>,M3.5.0/-1,M10.5.0/0", &z);
    expect_switch(&z, 1774746000, -7200, -3600);
    expect_switch(&z, 1792890000, -3600, -7200);
    tz_free(&z);
}

static void test_default_us_rule(void **state)
{
    (void)state;
    tz_zone z;
    load_footer("EST5EDT", &z);
    assert_int_equal(z.dst_offset, -14400);   /* one hour ahead unless given */
    expect_switch(&z, 1772953200, -18000, -14400);   /* 2026-03-08 02:00 EST */
    expect_switch(&z, 1793512800, -14400, -18000);   /* 2026-11-01 02:00 EDT */
    tz_free(&z);
    load_footer("XST5XDT3:30,M3.2.0,M11.1.0", &z);
    assert_int_equal(z.dst_offset, -12600);
    tz_free(&z);
}

static void test_julian_rule_skips_february_29(void **state)
{
    (void)state;
    tz_zone z;
    /* J60 is March 1 in every year */
    load_footer("EST5EDT,J60/2,J300/2", &z);
    expect_switch(&z, 1835506800, -18000, -14400);   /* 2028-03-01 02:00 EST (leap) */
    expect_switch(&z, 1803884400, -18000, -14400);   /* 2027-03-01 */
    assert_int_equal(tz_offset_at(&z, 1835420400), -18000);   /* 2028-02-29: not yet */
    tz_free(&z);
}

static void test_zero_based_rule_counts_february_29(void **state)
{
    (void)state;
    tz_zone z;
    /* day 59 is March 1 in a common year, February 29 in a leap year */
    load_footer("EST5EDT,59/2,299/2", &z);
    expect_switch(&z, 1835420400, -18000, -14400);   /* 2028-02-29 02:00 EST */
    expect_switch(&z, 1803884400, -18000, -14400);   /* 2027-03-01 */
    tz_free(&z);
}

static void test_zones_without_dst(void **state)
{
    (void)state;
    tz_zone z;
    load_footer("<+07>-7", &z);
    assert_false(z.has_dst);
    assert_int_equal(tz_offset_at(&z, 1782864000), 25200);
    assert_int_equal(tz_offset_at(&z, 1768435200), 25200);
    tz_free(&z);
    load_footer("UTC0", &z);
    assert_int_equal(tz_offset_at(&z, 1782864000), 0);
    assert_int_equal(tz_local_to_instant(&z, 1782864000), 1782864000);
    tz_free(&z);
    load_footer("<+0545>-5:45", &z);
    assert_int_equal(tz_offset_at(&z, 1782864000), 20700);
    tz_free(&z);
    load_footer("<-0930>9:30", &z);
    assert_int_equal(tz_offset_at(&z, 1782864000), -34200);
    tz_free(&z);
}

static void test_local_time_in_gap_and_fold(void **state)
{
    (void)state;
    tz_zone z;
    load_footer("CET-1CEST,M3.5.0,M10.5.0/3", &z);
    /* 2026-03-29 02:30 does not exist: shifted forward by the gap (03:30 CEST) */
    assert_int_equal(tz_local_to_instant(&z, 1774751400), 1774751400 - 3600);
    /* 2026-10-25 02:30 happens twice: the earlier one (CEST) */
    assert_int_equal(tz_local_to_instant(&z, 1792895400), 1792895400 - 7200);
    /* 2026-10-25 00:30 and 03:30 once each */
    assert_int_equal(tz_local_to_instant(&z, 1792888200), 1792888200 - 7200);
    assert_int_equal(tz_local_to_instant(&z, 1792895400 + 3600), 1792895400 + 3600 - 3600);
    tz_free(&z);
}

static void test_transitions_then_footer(void **state)
{
    (void)state;
    /* two explicit changes in 2020 (the last one agreeing with the rule, as
     * zic writes them), then the footer's rule */
    const int64_t at[] = {1577836800, 1603587600};   /* 2020-01-01, 2020-10-25 01:00Z */
    const int32_t offset[] = {7200, 3600};
    write_zone("Test/Mixed", 3600, at, offset, 2, "CET-1CEST,M3.5.0,M10.5.0/3");
    tz_zone z;
    char err[512];
    assert_int_equal(tz_load("Test/Mixed", &z, err, sizeof err), 0);
    assert_int_equal(z.ntrans, 2);
    assert_int_equal(tz_offset_at(&z, 0), 3600);          /* before the first */
    expect_switch(&z, 1577836800, 3600, 7200);            /* the table */
    expect_switch(&z, 1603587600, 7200, 3600);            /* the last one itself */
    expect_switch(&z, 1774746000, 3600, 7200);            /* then the rule */
    tz_free(&z);
}

static void test_damaged_footers_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "AB5",                              /* name shorter than 3 */
        "EST",                              /* no offset */
        "EST5EDT,M3.2.0",                   /* no end rule */
        "EST5EDT,M13.1.0,M11.1.0",          /* month 13 */
        "EST5EDT,M0.1.0,M11.1.0",           /* month 0 */
        "EST5EDT,M3.6.0,M11.1.0",           /* week 6 */
        "EST5EDT,M3.0.0,M11.1.0",           /* week 0 */
        "EST5EDT,M3.2.7,M11.1.0",           /* weekday 7 */
        "EST5EDT,M3.2,M11.1.0",             /* no weekday */
        "EST5EDT,J0,J300",                  /* Julian days are 1..365 */
        "EST5EDT,J366,J300",
        "EST5EDT,J,J300",
        "EST5EDT,366,300",                  /* zero-based days are 0..365 */
        "EST5EDT,M3.2.0,M11.1.0junk",       /* trailing text */
        "EST5EDT4junk",
        "EST5x",
        "<+07-7",                           /* unterminated quoted name */
        "<+7>-7",                           /* quoted name shorter than 3 */
        "EST99999999999",                   /* offset out of range */
        "EST25",
        "EST5:60",
        "EST5:",
        "EST5EDT,M3.2.0/168,M11.1.0",       /* rule time beyond 167 hours */
        "EST5EDT,M3.2.0/99999999999,M11.1.0",
        "EST5EDT,X3,M11.1.0",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_zone("Test/Bad", 0, NULL, NULL, 0, bad[i]);
        tz_zone z;
        char err[512] = "";
        if (tz_load("Test/Bad", &z, err, sizeof err) == 0) {
            tz_free(&z);
            fail_msg("damaged footer '%s' was accepted", bad[i]);
        }
        assert_non_null(strstr(err, "damaged"));
        assert_null(z.trans_at);
    }
    /* an empty footer is allowed: the table alone */
    write_zone("Test/Empty", 3600, NULL, NULL, 0, "");
    tz_zone z;
    char err[512];
    assert_int_equal(tz_load("Test/Empty", &z, err, sizeof err), 0);
    assert_false(z.has_rule);
    assert_int_equal(tz_offset_at(&z, 1782864000), 3600);
    tz_free(&z);
}

static void test_bad_names_and_files(void **state)
{
    (void)state;
    tz_zone z;
    char err[512];
    assert_int_equal(tz_load("Test/Missing", &z, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown timezone 'Test/Missing'"));
    assert_int_equal(tz_load("../etc/passwd", &z, err, sizeof err), -1);
    assert_int_equal(tz_load("/etc/passwd", &z, err, sizeof err), -1);
    assert_int_equal(tz_load("", &z, err, sizeof err), -1);
    test_write_file(g_dir, "Test/NotTZif", "this is not a TZif file, but it is long enough to read");
    assert_int_equal(tz_load("Test/NotTZif", &z, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a TZif file"));
}

/* The system's own Australia/Sydney, far enough ahead that its footer
 * answers (skips visibly where there is no tz database). */
static void test_system_sydney_footer(void **state)
{
    (void)state;
    unsetenv("TZDIR");
    tz_zone z;
    char err[512];
    int rc = tz_load("Australia/Sydney", &z, err, sizeof err);
    setenv("TZDIR", g_dir, 1);
    if (rc != 0) {
        fprintf(stderr, "SKIP: no system Australia/Sydney (%s)\n", err);
        skip();
    }
    assert_true(z.has_rule);
    assert_int_equal(tz_offset_at(&z, 2208988800), 39600);            /* 2040-01-01 */
    assert_int_equal(tz_offset_at(&z, 2208988800 + 182 * 86400), 36000);   /* July 2040 */
    tz_free(&z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_southern_hemisphere_sydney),
        cmocka_unit_test(test_southern_rule_spanning_new_year),
        cmocka_unit_test(test_last_week_and_negative_rule_time),
        cmocka_unit_test(test_default_us_rule),
        cmocka_unit_test(test_julian_rule_skips_february_29),
        cmocka_unit_test(test_zero_based_rule_counts_february_29),
        cmocka_unit_test(test_zones_without_dst),
        cmocka_unit_test(test_local_time_in_gap_and_fold),
        cmocka_unit_test(test_transitions_then_footer),
        cmocka_unit_test(test_damaged_footers_refused),
        cmocka_unit_test(test_bad_names_and_files),
        cmocka_unit_test(test_system_sydney_footer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
