/* test_calendar_dates_run.c — calendar_dates.txt's run reader
 * (src/import/calendar_dates_run.c) behind the CSV reader's run hook
 * (csv_set_run_fn): which rows it takes, and that every other row reaches
 * the row callback as before. */
#include "test_support.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/calendar_dates_run.h"
#include "transit/csv.h"
#include "transit/gtfs.h"

static const char *const KEYS[] = {"service_id", "date", "exception_type"};

typedef struct reading {
    tb_calendar_date *rows;
    size_t nrows, cap;
    char ids[8][128];
    uint32_t nids;
    uint64_t lookups;             /* calls of the service lookup */
    uint64_t callback_lines[16];  /* rows the row callback saw */
    size_t ncallback;
    calendar_dates_run run;
} reading;

static uint32_t service(void *ctx, const char *id, size_t len)
{
    reading *r = ctx;
    r->lookups++;
    for (uint32_t i = 0; i < r->nids; i++)
        if (strlen(r->ids[i]) == len && memcmp(r->ids[i], id, len) == 0)
            return i;
    assert_true(r->nids < 8 && len < sizeof r->ids[0]);
    memcpy(r->ids[r->nids], id, len);
    r->ids[r->nids][len] = 0;
    return r->nids++;
}

/* gtfs_read.c's calendar_date_row, as far as these tests look. */
static int on_row(void *ctx, const csv_field *f, uint64_t line)
{
    reading *r = ctx;
    if (r->ncallback < 16)
        r->callback_lines[r->ncallback++] = line;
    int32_t day;
    if (f[0].len == 0 || gtfs_parse_date(f[1].ptr, f[1].len, &day) != 0 || f[2].len != 1 ||
        (f[2].ptr[0] != '1' && f[2].ptr[0] != '2'))
        return 0;
    uint32_t svc = service(r, f[0].ptr, f[0].len);
    assert_int_equal(tb_grow((void **)&r->rows, &r->cap, sizeof *r->rows, r->nrows + 1), 0);
    r->rows[r->nrows++] = (tb_calendar_date){svc, day, (uint8_t)(f[2].ptr[0] - '0')};
    return 0;
}

/* Reads `text` in chunks of `chunk` bytes; returns the rows delivered. */
static uint64_t read_text(reading *r, const char *text, size_t chunk)
{
    memset(r, 0, sizeof *r);
    csv_parser *p = csv_open("calendar_dates.txt", KEYS, 3, on_row, r);
    assert_non_null(p);
    csv_prefer_plain(p);
    calendar_dates_run_init(&r->run, &r->rows, &r->nrows, &r->cap, NULL, service, r);
    csv_set_run_fn(p, calendar_dates_run_rows, &r->run);
    size_t len = strlen(text);
    for (size_t at = 0; at < len; at += chunk)
        assert_int_equal(csv_feed(p, text + at, len - at < chunk ? len - at : chunk), 0);
    assert_int_equal(csv_finish(p), 0);
    uint64_t rows = csv_rows(p);
    csv_close(p);
    return rows;
}

static int32_t day(int y, unsigned m, unsigned d) { return days_from_civil(y, m, d); }

static void assert_row(const reading *r, size_t i, uint32_t service, int32_t date, uint8_t type)
{
    assert_true(i < r->nrows);
    assert_int_equal(r->rows[i].service, service);
    assert_int_equal(r->rows[i].date, date);
    assert_int_equal(r->rows[i].type, type);
}

/* Rows of the form are taken by the run reader, the callback sees none,
 * and a service's rows listed together are looked up once. */
static void test_plain_rows_taken_in_runs(void **state)
{
    (void)state;
    reading r;
    uint64_t rows = read_text(&r,
                              "service_id,date,exception_type\n"
                              "D1,20260105,1\nD1,20260106,1\r\nD1,20260107,2\nD22,20260105,1\nD1,20260228,1\n",
                              1 << 20);
    assert_int_equal(rows, 5);
    assert_int_equal(r.ncallback, 0);
    assert_int_equal(r.nrows, 5);
    assert_int_equal(r.nids, 2);
    assert_string_equal(r.ids[0], "D1");
    assert_string_equal(r.ids[1], "D22");
    assert_int_equal(r.lookups, 3);   /* D1, D22, D1 again */
    assert_row(&r, 0, 0, day(2026, 1, 5), 1);
    assert_row(&r, 1, 0, day(2026, 1, 6), 1);
    assert_row(&r, 2, 0, day(2026, 1, 7), 2);
    assert_row(&r, 3, 1, day(2026, 1, 5), 1);
    assert_row(&r, 4, 0, day(2026, 2, 28), 1);
    free(r.rows);
}

/* Any other row goes to the callback, with its line; a row with a bad date
 * names no service (the callback rejects it before the lookup). */
static void test_other_rows_reach_the_callback(void **state)
{
    (void)state;
    reading r;
    uint64_t rows = read_text(&r,
                              "service_id,date,exception_type\n"
                              "D1,20260105,1\n"        /* line 2: run */
                              "BAD,20260230,1\n"       /* 3: no such date */
                              ",20260105,1\n"          /* 4: empty id */
                              "D1,20260105,3\n"        /* 5: type */
                              "\"D2\",20260106,1\n"    /* 6: quoted */
                              "D2 ,20260107,1\n"       /* 7: a blank, trimmed */
                              "D1,2026010,1\n"         /* 8: seven digits */
                              "D1,20260108,1,x\n"      /* 9: a fourth field */
                              "D1,20260109,1\n",       /* 10: run */
                              1 << 20);
    assert_int_equal(rows, 9);
    assert_int_equal(r.ncallback, 7);
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(r.callback_lines[i], 3 + i);
    assert_int_equal(r.nids, 2);   /* D1, D2: never BAD */
    assert_int_equal(r.nrows, 5);
    assert_row(&r, 0, 0, day(2026, 1, 5), 1);
    assert_row(&r, 1, 1, day(2026, 1, 6), 1);
    assert_row(&r, 2, 1, day(2026, 1, 7), 1);
    assert_row(&r, 3, 0, day(2026, 1, 8), 1);
    assert_row(&r, 4, 0, day(2026, 1, 9), 1);
    free(r.rows);
}

/* A header other than exactly the three keys in order: the callback reads
 * every row. */
static void test_other_headers_are_left_alone(void **state)
{
    (void)state;
    reading r;
    assert_int_equal(read_text(&r, "date,service_id,exception_type\n20260105,D1,1\n20260106,D1,1\n", 64), 2);
    assert_int_equal(r.ncallback, 2);
    assert_int_equal(r.nrows, 2);
    free(r.rows);
    assert_int_equal(read_text(&r, "service_id,date,exception_type,note\nD1,20260105,1,\n", 64), 1);
    assert_int_equal(r.ncallback, 1);
    free(r.rows);
}

/* Rows cut by every chunk size: the same rows, the cut ones read by the
 * other readers; many dates (more than the reader keeps) all parsed right;
 * an id too long to be compared in place still found. */
static void test_chunks_many_dates_and_long_ids(void **state)
{
    (void)state;
    static char text[64 * 1024];
    size_t len = (size_t)snprintf(text, sizeof text, "service_id,date,exception_type\n");
    char long_id[100];
    memset(long_id, 'L', 99);
    long_id[99] = 0;
    int32_t first = day(2025, 12, 1);
    for (int i = 0; i < 700; i++) {
        int y;
        unsigned m, d;
        civil_from_days(first + i, &y, &m, &d);
        len += (size_t)snprintf(text + len, sizeof text - len, "%s,%04d%02u%02u,1\n", i % 3 ? "S" : long_id, y, m, d);
    }
    for (size_t chunk = 1; chunk <= 37; chunk += 6) {
        reading r;
        assert_int_equal(read_text(&r, text, chunk), 700);
        assert_int_equal(r.nrows, 700);
        assert_int_equal(r.nids, 2);
        for (int i = 0; i < 700; i++)
            assert_row(&r, (size_t)i, i % 3 ? 1 : 0, first + i, 1);
        free(r.rows);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_rows_taken_in_runs),
        cmocka_unit_test(test_other_rows_reach_the_callback),
        cmocka_unit_test(test_other_headers_are_left_alone),
        cmocka_unit_test(test_chunks_many_dates_and_long_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
