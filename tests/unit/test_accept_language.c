/* test_accept_language.c — the Accept-Language reading of RFC 9110 §12.5.4 and the
 * RFC 4647 §3.4 lookup among a feed's languages: weights, the header's order on
 * ties, truncation ("de-CH" falls back to "de"), "*", case, and malformed values
 * that are ignored rather than refused. */
#include "test_support.h"

#include "transit/accept_language.h"

/* a feed in English with German and French translations */
static const char *const feed_languages[] = {"en", "de", "fr"};

static int choose(const char *value)
{
    return accept_language_choose(value, value ? strlen(value) : 0, feed_languages, 3);
}

static void test_plain_choices(void **state)
{
    (void)state;
    assert_int_equal(choose("de"), 1);
    assert_int_equal(choose("fr"), 2);
    assert_int_equal(choose("en"), 0);
    assert_int_equal(choose("it"), -1);   /* not offered: the default */
    assert_int_equal(choose(NULL), -1);   /* no header */
    assert_int_equal(choose(""), -1);
    assert_int_equal(choose("it, fr"), 2);   /* the first one offered */
}

static void test_weights_then_header_order(void **state)
{
    (void)state;
    assert_int_equal(choose("de;q=0.5, fr"), 2);
    assert_int_equal(choose("de;q=0.8, fr;q=0.9"), 2);
    assert_int_equal(choose("de;q=0.9, fr;q=0.9"), 1);
    assert_int_equal(choose("fr;q=0.9, de;q=0.9"), 2);
    assert_int_equal(choose("fr;q=0, de;q=0.1"), 1);
    assert_int_equal(choose("fr;q=0"), -1);   /* a refusal is never chosen */
    assert_int_equal(choose("fr;q=0.000, de;q=0.001"), 1);
    assert_int_equal(choose("fr;q=1.000, de"), 2);
}

static void test_lookup_truncates(void **state)
{
    (void)state;
    assert_int_equal(choose("de-CH"), 1);
    assert_int_equal(choose("de-CH-1996"), 1);
    assert_int_equal(choose("fr-x-private"), 2);   /* the single-letter subtag goes too */
    assert_int_equal(choose("zh-Hant-TW, de-AT;q=0.5"), 1);
    const char *const swiss[] = {"de", "de-CH"};
    assert_int_equal(accept_language_choose("de-CH", 5, swiss, 2), 1);   /* the longest match */
    assert_int_equal(accept_language_choose("de-AT", 5, swiss, 2), 0);
    assert_int_equal(accept_language_choose("de", 2, swiss + 1, 1), -1);   /* lookup never extends */
}

static void test_star(void **state)
{
    (void)state;
    assert_int_equal(choose("*"), -1);
    assert_int_equal(choose("it, *;q=0.5, de;q=0.1"), -1);   /* "*" first: the default */
    assert_int_equal(choose("de, *;q=0.5"), 1);
    assert_int_equal(choose("*;q=0, fr"), 2);
}

static void test_case_and_whitespace(void **state)
{
    (void)state;
    assert_int_equal(choose("DE"), 1);
    assert_int_equal(choose("De-ch"), 1);
    assert_int_equal(choose("fr;Q=0.5 , de ; q=0.4"), 2);
    assert_int_equal(choose(" \t,, de ,"), 1);
    const char *const upper[] = {"EN", "De"};
    assert_int_equal(accept_language_choose("de", 2, upper, 2), 1);
}

static void test_malformed_elements_are_ignored(void **state)
{
    (void)state;
    assert_int_equal(choose("d_e, fr"), 2);
    assert_int_equal(choose("de;q=1.5, fr;q=0.2"), 2);
    assert_int_equal(choose("de;q=0.0001, fr;q=0.2"), 2);
    assert_int_equal(choose("de;level=1, fr;q=0.2"), 2);
    assert_int_equal(choose("deutschland-x, fr;q=0.2"), 2);   /* a subtag over 8 letters */
    assert_int_equal(choose("1de, fr;q=0.2"), 2);   /* the first subtag is letters only */
    assert_int_equal(choose("de-, -de, de--ch, fr;q=0.2"), 2);
    assert_int_equal(choose(";q=1"), -1);
    assert_int_equal(choose("\xff\xfe"), -1);
}

static void test_reads_only_len_bytes(void **state)
{
    (void)state;
    assert_int_equal(accept_language_choose("de, fr", 2, feed_languages, 3), 1);
    assert_int_equal(accept_language_choose("fr;q=0.5", 2, feed_languages, 3), 2);
    assert_int_equal(accept_language_choose("de", 2, NULL, 0), -1);
}

static void test_ranges_after_the_limit_are_ignored(void **state)
{
    (void)state;
    char value[ACCEPT_LANGUAGE_MAX_RANGES * 4 + 8];
    size_t len = 0;
    for (int i = 0; i < ACCEPT_LANGUAGE_MAX_RANGES; i++)
        len += (size_t)snprintf(value + len, sizeof value - len, "it, ");
    len += (size_t)snprintf(value + len, sizeof value - len, "de");
    assert_int_equal(accept_language_choose(value, len, feed_languages, 3), -1);
    assert_int_equal(accept_language_choose(value + 4, len - 4, feed_languages, 3), 1);
}

/* The ranking: every tag the lookup meets, in the order it meets them, up to a "*". */
static void test_rank_orders_every_tag_met(void **state)
{
    (void)state;
    static const char *const tags[] = {"en", "de", "de-CH", "fr"};
    int order[4];
    const char *v = "de-CH-1996, fr;q=0.5, en;q=0.8";
    size_t n = accept_language_rank(v, strlen(v), tags, 4, order, 4);
    assert_int_equal(n, 4);   /* de-CH, de (its fallback), then en (0.8), then fr (0.5) */
    assert_int_equal(order[0], 2);
    assert_int_equal(order[1], 1);
    assert_int_equal(order[2], 0);
    assert_int_equal(order[3], 3);
    v = "fr, *;q=0.9, en;q=0.5";   /* the default comes before en */
    n = accept_language_rank(v, strlen(v), tags, 4, order, 4);
    assert_int_equal(n, 1);
    assert_int_equal(order[0], 3);
    v = "de, de-CH";   /* each once */
    assert_int_equal(accept_language_rank(v, strlen(v), tags, 4, order, 4), 2);
    assert_int_equal(accept_language_rank(v, strlen(v), tags, 4, order, 1), 1);   /* room for one */
    assert_int_equal(accept_language_rank(NULL, 0, tags, 4, order, 4), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_choices),
        cmocka_unit_test(test_weights_then_header_order),
        cmocka_unit_test(test_lookup_truncates),
        cmocka_unit_test(test_star),
        cmocka_unit_test(test_case_and_whitespace),
        cmocka_unit_test(test_malformed_elements_are_ignored),
        cmocka_unit_test(test_reads_only_len_bytes),
        cmocka_unit_test(test_ranges_after_the_limit_are_ignored),
        cmocka_unit_test(test_rank_orders_every_tag_met),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
