/* test_json_writer.c — the JSON writer's promises: RFC 8259 escaping, UTF-8
 * repair, commas and nesting, locale-proof numbers, and a buffer that is
 * reused rather than reallocated.
 */
#include "test_support.h"

#include <locale.h>
#include <math.h>

#include "transit/json_writer.h"

static void assert_output(json_writer *w, const char *expected)
{
    assert_false(w->oom);
    assert_int_equal(w->len, strlen(expected));
    assert_string_equal(w->buf, expected);
}

static void write_string(const char *s, size_t len, const char *expected)
{
    json_writer w;
    json_init(&w);
    json_string_n(&w, s, len);
    assert_output(&w, expected);
    json_free(&w);
}

static void test_escapes_quote_backslash_and_controls(void **state)
{
    (void)state;
    write_string("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    write_string("\n\t\r\b\f", 5, "\"\\u000a\\u0009\\u000d\\u0008\\u000c\"");
    write_string("\x01\x1f", 2, "\"\\u0001\\u001f\"");
    write_string("x\0y", 3, "\"x\\u0000y\"");
    write_string("/\x7f", 2, "\"/\x7f\"");   /* '/' and DEL need no escape */
    write_string("", 0, "\"\"");
}

static void test_valid_utf8_passes_through(void **state)
{
    (void)state;
    const char *s = "Gbaka d'Adjam\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x8c";  /* é € 🚌 */
    write_string(s, strlen(s), "\"Gbaka d'Adjam\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x8c\"");
    /* the largest code point, U+10FFFF */
    write_string("\xf4\x8f\xbf\xbf", 4, "\"\xf4\x8f\xbf\xbf\"");
}

#define FFFD "\xef\xbf\xbd"

static void test_invalid_utf8_is_replaced(void **state)
{
    (void)state;
    write_string("a\xff" "b", 3, "\"a" FFFD "b\"");                 /* never valid */
    write_string("\x80", 1, "\"" FFFD "\"");                        /* lone continuation */
    write_string("\xc3", 1, "\"" FFFD "\"");                        /* truncated at end */
    write_string("\xc3" "A", 2, "\"" FFFD "A\"");                   /* truncated mid-string */
    write_string("\xc0\xaf", 2, "\"" FFFD FFFD "\"");               /* overlong '/' */
    write_string("\xed\xa0\x80", 3, "\"" FFFD FFFD FFFD "\"");      /* surrogate D800 */
    write_string("\xf4\x90\x80\x80", 4, "\"" FFFD FFFD FFFD FFFD "\""); /* > U+10FFFF */
    write_string("\xe2\x82" "x", 3, "\"" FFFD "x\"");               /* maximal subpart: 1 FFFD */
    write_string("\xf0\x9f\x9a", 3, "\"" FFFD "\"");
}

static void test_null_string_writes_null(void **state)
{
    (void)state;
    json_writer w;
    json_init(&w);
    json_str(&w, NULL);
    assert_output(&w, "null");
    json_free(&w);
}

static void test_commas_and_nesting(void **state)
{
    (void)state;
    json_writer w;
    json_init(&w);
    json_object_begin(&w);
    json_kv_string(&w, "a", "x");
    json_key(&w, "list");
    json_array_begin(&w);
    json_int(&w, 1);
    json_object_begin(&w);
    json_object_end(&w);
    json_array_begin(&w);
    json_array_end(&w);
    json_null_value(&w);
    json_array_end(&w);
    json_key(&w, "o");
    json_object_begin(&w);
    json_kv_bool(&w, "t", true);
    json_kv_bool(&w, "f", false);
    json_kv_null(&w, "n");
    json_kv_int(&w, "i", -7);
    json_kv_double(&w, "d", 1.5, 3);
    json_object_end(&w);
    json_key(&w, "raw");
    json_raw(&w, "[1,2]", 5);
    json_object_end(&w);
    assert_output(&w, "{\"a\":\"x\",\"list\":[1,{},[],null],\"o\":{\"t\":true,\"f\":false,"
                      "\"n\":null,\"i\":-7,\"d\":1.5},\"raw\":[1,2]}");
    assert_int_equal(w.depth, 0);
    json_free(&w);
}

static void test_top_level_array_of_strings(void **state)
{
    (void)state;
    json_writer w;
    json_init(&w);
    json_array_begin(&w);
    json_str(&w, "a");
    json_str(&w, NULL);
    json_str(&w, "b");
    json_array_end(&w);
    assert_output(&w, "[\"a\",null,\"b\"]");
    json_free(&w);
}

static void test_integers(void **state)
{
    (void)state;
    json_writer w;
    json_init(&w);
    json_array_begin(&w);
    json_int(&w, 0);
    json_int(&w, INT64_MAX);
    json_int(&w, INT64_MIN);
    json_int(&w, 86400);
    json_array_end(&w);
    assert_output(&w, "[0,9223372036854775807,-9223372036854775808,86400]");
    json_free(&w);
}

static void expect_double(double v, int decimals, const char *expected)
{
    json_writer w;
    json_init(&w);
    json_double(&w, v, decimals);
    assert_output(&w, expected);
    json_free(&w);
}

static void test_doubles(void **state)
{
    (void)state;
    expect_double(-16.920876, 6, "-16.920876");
    expect_double(145.779259, 6, "145.779259");
    expect_double(40.7, 6, "40.7");
    expect_double(12.0, 6, "12");
    expect_double(0.0, 6, "0");
    expect_double(-0.0, 6, "0");
    expect_double(-0.0000001, 6, "0");           /* rounds to zero: no "-0" */
    expect_double(-0.5, 6, "-0.5");
    expect_double(1.23456789, 6, "1.234568");    /* rounded, not truncated */
    expect_double(2.5, 0, "2");                  /* round-half-even of printf */
    expect_double(100.0, 0, "100");
    expect_double(1e20, 2, "100000000000000000000");
    expect_double(NAN, 6, "null");
    expect_double(INFINITY, 6, "null");
    expect_double(-INFINITY, 6, "null");
    expect_double(1.5, -3, "2");                 /* negative decimals mean 0 */
}

/* What json_double must write: printf's "%.*f" (C locale), trailing zeros
 * and a bare point trimmed, "-0" as "0". */
static void printf_fixed(double v, int decimals, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%.*f", decimals, v);
    size_t len = (size_t)n;
    if (strchr(out, '.')) {
        while (out[len - 1] == '0')
            len--;
        if (out[len - 1] == '.')
            len--;
    }
    out[len] = '\0';
    if (strcmp(out, "-0") == 0)
        strcpy(out, "0");
}

/* The printf-free path for small numbers writes exactly printf's digits:
 * random coordinates at every precision, values a hair either side of a
 * rounding tie, exact ties (round-half-even in printf), and the edge of
 * the fast path's range. */
static void test_doubles_match_printf(void **state)
{
    (void)state;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    char want[400];
    for (int i = 0; i < 200000; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        double v = ((double)(seed >> 11) / 9007199254740992.0) * 360.0 - 180.0;
        int decimals = (int)(seed % 10);
        if (i % 4 == 1) {   /* near a tie at this precision */
            double unit = 1.0;
            for (int k = 0; k < decimals; k++)
                unit /= 10;
            v = (floor(v / unit) + 0.5) * unit + (double)((int)(seed >> 40) % 5 - 2) * 1e-13;
        }
        if (i % 4 == 2)
            v = (double)((int64_t)(seed >> 20) % 2000001 - 1000000) / 1e6;   /* 6-decimal data */
        json_writer w;
        json_init(&w);
        json_double(&w, v, decimals);
        printf_fixed(v, decimals, want, sizeof want);
        if (strcmp(w.buf, want) != 0)
            fail_msg("json_double(%.17g, %d) wrote %s, printf %s", v, decimals, w.buf, want);
        json_free(&w);
    }
    static const struct {
        double v;
        int decimals;
    } edges[] = {{0.5, 0}, {1.5, 0}, {2.5, 0}, {-2.5, 0}, {0.125, 2}, {0.375, 2}, {2147483647.4, 0},
                 {2147483648.6, 0}, {214.7483648, 7}, {1e-10, 9}, {-4e-10, 9}, {-6e-10, 9},
                 {179.9999995, 6}, {-179.9999995, 6}, {9.999999999, 9}};
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        json_writer w;
        json_init(&w);
        json_double(&w, edges[i].v, edges[i].decimals);
        printf_fixed(edges[i].v, edges[i].decimals, want, sizeof want);
        if (strcmp(w.buf, want) != 0)
            fail_msg("json_double(%.17g, %d) wrote %s, printf %s", edges[i].v, edges[i].decimals, w.buf,
                     want);
        json_free(&w);
    }
}

/* Puts LC_NUMERIC in a locale whose decimal separator is a comma: an
 * installed one, else one compiled with localedef into a scratch LOCPATH.
 * Returns false when neither is possible on this machine. */
static bool enter_comma_locale(void)
{
    char probe[16];
    const char *installed[] = {"de_DE.UTF-8", "fr_FR.UTF-8", "de_DE"};
    for (size_t i = 0; i < sizeof installed / sizeof *installed; i++) {
        if (setlocale(LC_NUMERIC, installed[i])) {
            snprintf(probe, sizeof probe, "%.1f", 1.5);
            if (strcmp(probe, "1,5") == 0)
                return true;
        }
    }
    char dir[512], cmd[1200];
    test_tmpdir(dir, sizeof dir, "json-locale");
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8' >/dev/null 2>&1", dir);
    if (system(cmd) != 0)
        return false;
    setenv("LOCPATH", dir, 1);
    bool ok = setlocale(LC_NUMERIC, "de_DE.UTF-8") != NULL;
    if (ok) {
        snprintf(probe, sizeof probe, "%.1f", 1.5);
        ok = strcmp(probe, "1,5") == 0;
    }
    return ok;
}

static void test_doubles_ignore_a_comma_locale(void **state)
{
    (void)state;
    if (!enter_comma_locale()) {
        fprintf(stderr, "SKIP: no comma-decimal locale and localedef cannot build one\n");
        setlocale(LC_NUMERIC, "C");
        skip();
    }
    expect_double(-16.920876, 6, "-16.920876");
    expect_double(3.25, 6, "3.25");
    expect_double(1234567.5, 1, "1234567.5");   /* no thousands grouping either */
    setlocale(LC_NUMERIC, "C");
}

static void test_buffer_is_reused_after_reset(void **state)
{
    (void)state;
    json_writer w;
    json_init(&w);
    for (int i = 0; i < 2000; i++)
        json_str(&w, "0123456789");
    assert_true(w.len > 20000);
    char *buf = w.buf;
    size_t cap = w.cap;
    for (int round = 0; round < 5; round++) {
        json_reset(&w);
        assert_int_equal(w.len, 0);
        assert_string_equal(w.buf, "");
        json_object_begin(&w);
        json_kv_int(&w, "round", round);
        json_object_end(&w);
        assert_ptr_equal(w.buf, buf);
        assert_int_equal(w.cap, cap);
    }
    assert_output(&w, "{\"round\":4}");
    json_free(&w);
    assert_null(w.buf);
}

static void test_reset_clears_comma_state(void **state)
{
    (void)state;
    json_writer w;
    json_init(&w);
    json_array_begin(&w);
    json_int(&w, 1);
    /* abandoned mid-array, as after an error */
    json_reset(&w);
    json_int(&w, 2);
    assert_output(&w, "2");
    json_free(&w);
}

static void test_too_deep_nesting_is_flagged(void **state)
{
    (void)state;
    json_writer w;
    json_init(&w);
    for (int i = 0; i < JSON_MAX_DEPTH + 2; i++)
        json_array_begin(&w);
    assert_true(w.oom);
    json_reset(&w);
    assert_false(w.oom);
    json_free(&w);
}

/* Direct writing: values written between json_raw_begin and json_raw_end
 * get the same commas as the writer's own values, and may sit among them. */
static void test_raw_values_take_commas(void **state)
{
    (void)state;
    json_writer w;
    json_init(&w);
    json_object_begin(&w);
    json_key(&w, "rows");
    json_array_begin(&w);
    for (unsigned i = 0; i < 3; i++) {
        char *p = json_raw_begin(&w, 64);
        assert_non_null(p);
        p = JSON_PUT_LITERAL(p, "{\"n\":");
        p = json_put_uint(p, i * 10);
        *p++ = '}';
        json_raw_end(&w, p);
    }
    json_int(&w, 7);
    json_array_end(&w);
    json_kv_bool(&w, "truncated", false);
    json_object_end(&w);
    assert_output(&w, "{\"rows\":[{\"n\":0},{\"n\":10},{\"n\":20},7],\"truncated\":false}");
    json_free(&w);
}

/* json_put_string writes exactly what json_string_n writes: escapes, UTF-8
 * kept or repaired, and every length around the eight-byte fast path. */
static void test_put_string_matches_string(void **state)
{
    (void)state;
    static const char *const samples[] = {
        "", "a", "plain ascii text", "1234567", "12345678", "123456789",
        "quote\" in the middle of a long run", "back\\slash", "ctl\x01\x1f", "tab\tnewline\n",
        "Gr\xc3\xbc\xc3\x9f Gott \xc3\xa9t\xc3\xa9", "\xe2\x82\xac euro", "bad \xff byte", "cut \xe2\x82",
        "exactly sixteen!", "seventeen chars!!",
    };
    for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
        size_t len = strlen(samples[i]);
        json_writer w;
        json_init(&w);
        json_string_n(&w, samples[i], len);
        char direct[256];
        char *end = json_put_string(direct, samples[i], len);
        assert_int_equal((size_t)(end - direct), w.len);
        assert_memory_equal(direct, w.buf, w.len);
        json_free(&w);
    }
}

static void test_put_uint(void **state)
{
    (void)state;
    static const struct {
        uint64_t v;
        const char *text;
    } cases[] = {{0, "0"}, {9, "9"}, {10, "10"}, {86399, "86399"}, {4294967296ull, "4294967296"},
                 {UINT64_MAX, "18446744073709551615"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[24];
        char *end = json_put_uint(buf, cases[i].v);
        *end = '\0';
        assert_string_equal(buf, cases[i].text);
    }
    /* every width, and both sides of each power of ten, against printf */
    for (uint64_t base = 1; base != 0 && base <= UINT64_MAX / 10; base *= 10) {
        for (uint64_t v = base - 1; v <= base + 101; v++) {
            char buf[24], want[24];
            *json_put_uint(buf, v) = '\0';
            snprintf(want, sizeof want, "%llu", (unsigned long long)v);
            assert_string_equal(buf, want);
        }
    }
}

/* The 32-bit writer inline, at its widest and on both sides of each power of ten. */
static void test_put_u32(void **state)
{
    (void)state;
    for (uint64_t base = 1; base <= 1000000000u; base *= 10) {
        for (uint64_t v = base - 1; v <= base + 101; v++) {
            char buf[16], want[16];
            *json_put_u32(buf, (uint32_t)v) = '\0';
            snprintf(want, sizeof want, "%u", (unsigned)v);
            assert_string_equal(buf, want);
        }
    }
    uint32_t tops[] = {UINT32_MAX, UINT32_MAX - 1, 4000000000u, 999999999u};
    for (size_t i = 0; i < sizeof tops / sizeof *tops; i++) {
        char buf[16], want[16];
        *json_put_u32(buf, tops[i]) = '\0';
        snprintf(want, sizeof want, "%u", (unsigned)tops[i]);
        assert_string_equal(buf, want);
    }
}

/* json_put_cstring measures a string as it copies it, reading whole words
 * up to the readable end. It must write what json_put_string writes for
 * every length, with each kind of byte that needs care at every position,
 * when the string ends right at the readable end (the string alone in an
 * allocation of its size, so that ASan sees any read past it) and when
 * more readable bytes follow. The output gets exactly the room promised. */
static void test_put_cstring_matches_put_string(void **state)
{
    (void)state;
    static const char *const specials[] = {"\"", "\\", "\t", "\x01", "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xff", "\xc3"};
    for (size_t len = 0; len <= 40; len++) {
        for (size_t k = 0; k <= sizeof specials / sizeof *specials; k++) {
            for (size_t at = 0; at <= len; at++) {
                char text[64];
                for (size_t i = 0; i < len; i++)
                    text[i] = (char)('a' + i % 26);
                text[len] = '\0';
                if (k < sizeof specials / sizeof *specials) {
                    size_t n = strlen(specials[k]);
                    if (at + n > len)
                        continue;
                    memcpy(text + at, specials[k], n);
                } else if (at > 0) {
                    continue;   /* plain: once per length */
                }
                char *want = malloc(6 * len + 2), *got = malloc(6 * len + 10);
                size_t want_len = (size_t)(json_put_string(want, text, len) - want);
                for (int tight = 0; tight < 2; tight++) {
                    size_t extra = tight ? 0 : 24;
                    char *alone = malloc(len + 1 + extra);
                    memset(alone, 'z', len + 1 + extra);
                    memcpy(alone, text, len + 1);
                    size_t got_len = (size_t)(json_put_cstring(got, alone, alone + len + 1 + extra) - got);
                    assert_int_equal(got_len, want_len);
                    assert_memory_equal(got, want, want_len);
                    free(alone);
                }
                free(want);
                free(got);
            }
        }
    }
}

/* A row larger than the buffer grows it; the bytes already written stay. */
static void test_raw_begin_grows_the_buffer(void **state)
{
    (void)state;
    json_writer w;
    json_init(&w);
    json_array_begin(&w);
    char *p = json_raw_begin(&w, 100000);
    assert_non_null(p);
    assert_true(w.cap > 100000);
    memset(p, 'x', 99998);
    p[0] = '"';
    p[99997] = '"';
    json_raw_end(&w, p + 99998);
    json_array_end(&w);
    assert_false(w.oom);
    assert_int_equal(w.len, 100000);
    assert_int_equal(w.buf[0], '[');
    assert_int_equal(w.buf[99999], ']');
    assert_int_equal(w.buf[100000], '\0');
    json_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes_quote_backslash_and_controls),
        cmocka_unit_test(test_valid_utf8_passes_through),
        cmocka_unit_test(test_invalid_utf8_is_replaced),
        cmocka_unit_test(test_null_string_writes_null),
        cmocka_unit_test(test_commas_and_nesting),
        cmocka_unit_test(test_top_level_array_of_strings),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_doubles),
        cmocka_unit_test(test_doubles_match_printf),
        cmocka_unit_test(test_doubles_ignore_a_comma_locale),
        cmocka_unit_test(test_buffer_is_reused_after_reset),
        cmocka_unit_test(test_reset_clears_comma_state),
        cmocka_unit_test(test_too_deep_nesting_is_flagged),
        cmocka_unit_test(test_raw_values_take_commas),
        cmocka_unit_test(test_put_string_matches_string),
        cmocka_unit_test(test_put_uint),
        cmocka_unit_test(test_put_u32),
        cmocka_unit_test(test_put_cstring_matches_put_string),
        cmocka_unit_test(test_raw_begin_grows_the_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
