/* test_diag.c — the import's problem counter: counts by kind, the examples'
 * format and selection, UTF-8-safe examples, and counting from many threads. */
#include "test_support.h"

#include <pthread.h>

#include "transit/diag.h"

static void test_counts_and_format(void **state)
{
    (void)state;
    diag d;
    diag_init(&d);
    assert_int_equal(diag_total(&d), 0);
    diag_add(&d, DIAG_BAD_TIME, "stop_times.txt", 12, "bad arrival_time '%s'", "25:6x:00");
    diag_add(&d, DIAG_IGNORED_FILE, "fare_rules.txt", 0, "not read");
    diag_add(&d, DIAG_BAD_TIME, "stop_times.txt", 13, "bad departure_time ''");
    assert_int_equal(d.count[DIAG_BAD_TIME], 2);
    assert_int_equal(d.count[DIAG_IGNORED_FILE], 1);
    assert_int_equal(diag_total(&d), 2);   /* notes are not problems */
    assert_int_equal(d.nexamples, 3);
    assert_string_equal(d.examples[0], "stop_times.txt:12: bad arrival_time '25:6x:00'");
    assert_string_equal(d.examples[1], "fare_rules.txt: not read");
    assert_string_equal(d.examples[2], "stop_times.txt:13: bad departure_time ''");
    diag_destroy(&d);
}

static void test_kind_names(void **state)
{
    (void)state;
    assert_string_equal(diag_kind_name(DIAG_BAD_TIME), "bad_time");
    assert_string_equal(diag_kind_name(DIAG_UNKNOWN_STOP), "unknown_stop");
    assert_string_equal(diag_kind_name(DIAG_IGNORED_FILE), "ignored_file");
    assert_string_equal(diag_kind_name(DIAG_BAD_VALUE), "bad_value");
    /* every kind has a distinct snake_case name */
    for (int k = 0; k < DIAG_KIND_COUNT; k++) {
        const char *n = diag_kind_name((diag_kind)k);
        assert_non_null(n);
        for (const char *c = n; *c; c++)
            assert_true((*c >= 'a' && *c <= 'z') || *c == '_');
        for (int j = 0; j < k; j++)
            assert_string_not_equal(n, diag_kind_name((diag_kind)j));
    }
    assert_string_equal(diag_kind_name(DIAG_KIND_COUNT), "unknown");
}

/* Ten examples of one kind fill the list; then every new kind still gets one. */
static void test_examples_keep_every_kind(void **state)
{
    (void)state;
    diag d;
    diag_init(&d);
    for (int i = 1; i <= 25; i++)
        diag_add(&d, DIAG_UNKNOWN_STOP, "stop_times.txt", (uint64_t)i, "unknown stop_id 'X%d'", i);
    assert_int_equal(d.nexamples, DIAG_EXAMPLES);
    assert_string_equal(d.examples[9], "stop_times.txt:10: unknown stop_id 'X10'");
    diag_add(&d, DIAG_BAD_DATE, "calendar.txt", 4, "bad start_date");
    diag_add(&d, DIAG_BAD_DATE, "calendar.txt", 5, "bad start_date");   /* the kind has one: dropped */
    diag_add(&d, DIAG_DUPLICATE_ID, "stops.txt", 9, "duplicate stop_id 'S1'");
    assert_int_equal(d.nexamples, DIAG_EXAMPLES);
    assert_string_equal(d.examples[0], "stop_times.txt:1: unknown stop_id 'X1'");
    assert_string_equal(d.examples[7], "stop_times.txt:8: unknown stop_id 'X8'");
    assert_string_equal(d.examples[8], "calendar.txt:4: bad start_date");
    assert_string_equal(d.examples[9], "stops.txt:9: duplicate stop_id 'S1'");
    assert_int_equal(d.count[DIAG_UNKNOWN_STOP], 25);
    assert_int_equal(d.count[DIAG_BAD_DATE], 2);
    assert_int_equal(diag_total(&d), 28);
    diag_destroy(&d);
}

static int valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int len = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 ? 4 : 0;
        if (!len || (*p >= 0x80 && *p < 0xC2) || *p > 0xF4)
            return 0;
        for (int k = 1; k < len; k++)
            if ((p[k] & 0xC0) != 0x80)
                return 0;
        p += len;
    }
    return 1;
}

static void test_examples_are_utf8(void **state)
{
    (void)state;
    diag d;
    diag_init(&d);
    /* a value with an invalid byte */
    diag_add(&d, DIAG_BAD_VALUE, "routes.txt", 3, "bad route_type 'caf\xE9'");
    assert_string_equal(d.examples[0], "routes.txt:3: bad route_type 'caf?'");
    /* a long message cut in the middle of a 2-byte character */
    char msg[400];
    memset(msg, 'e', sizeof msg);
    for (size_t i = 1; i + 1 < sizeof msg; i += 2)
        memcpy(msg + i, "\xC3\xA9", 2);
    msg[sizeof msg - 1] = 0;
    for (int shift = 0; shift < 4; shift++) {
        diag_add(&d, DIAG_BAD_VALUE, "stops.txt", 100 + (uint64_t)shift, "%.*s%s", shift, "xxx", msg);
        const char *ex = d.examples[1 + shift];
        assert_true(strlen(ex) >= 190 && strlen(ex) < 200);
        assert_true(valid_utf8(ex));
        assert_null(strchr(ex, '?'));   /* nothing valid was replaced */
    }
    diag_destroy(&d);
}

typedef struct worker {
    diag *d;
    int id;
} worker;

static void *add_many(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < 20000; i++)
        diag_add(w->d, (diag_kind)(i % 3), "stop_times.txt", (uint64_t)i, "thread %d row %d", w->id, i);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    diag d;
    diag_init(&d);
    pthread_t t[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){ &d, i };
        assert_int_equal(pthread_create(&t[i], NULL, add_many, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(diag_total(&d), 80000);
    assert_int_equal(d.count[0] + d.count[1] + d.count[2], 80000);
    assert_int_equal(d.nexamples, DIAG_EXAMPLES);
    for (int i = 0; i < DIAG_EXAMPLES; i++)
        assert_non_null(strstr(d.examples[i], "stop_times.txt:"));
    diag_destroy(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_format),
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test(test_examples_keep_every_kind),
        cmocka_unit_test(test_examples_are_utf8),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
