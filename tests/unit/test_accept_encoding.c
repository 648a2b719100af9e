/* test_accept_encoding.c — the Accept-Encoding reading of RFC 9110 §12.5.3: weights,
 * refusals, "*", identity, case, whitespace and malformed elements, and the coding
 * the server then picks among br, gzip and identity. */
#include "test_support.h"

#include "transit/accept_encoding.h"

static const content_coding server_order[] = {CODING_BR, CODING_GZIP};

static content_coding choose(const char *value)
{
    return accept_encoding_choose(value, value ? strlen(value) : 0, server_order, 2);
}

static accept_encoding parse(const char *value)
{
    accept_encoding ae;
    memset(&ae, 0x55, sizeof ae);   /* every weight must be written */
    accept_encoding_parse(value, strlen(value), &ae);
    return ae;
}

static void test_common_clients(void **state)
{
    (void)state;
    assert_int_equal(choose("gzip, deflate, br"), CODING_BR);   /* URLSession: server's order */
    assert_int_equal(choose("gzip, deflate, br, zstd"), CODING_BR);   /* Chromium */
    assert_int_equal(choose("gzip, deflate"), CODING_GZIP);   /* python-requests */
    assert_int_equal(choose("gzip"), CODING_GZIP);
    assert_int_equal(choose("br"), CODING_BR);
    assert_int_equal(choose("deflate"), CODING_IDENTITY);
    assert_int_equal(choose(NULL), CODING_IDENTITY);   /* no header: no coding */
    assert_int_equal(choose(""), CODING_IDENTITY);     /* empty: identity only */
    assert_int_equal(choose("identity"), CODING_IDENTITY);
}

static void test_weights_decide_before_server_order(void **state)
{
    (void)state;
    assert_int_equal(choose("br;q=0.5, gzip"), CODING_GZIP);
    assert_int_equal(choose("br;q=0.8, gzip;q=0.9"), CODING_GZIP);
    assert_int_equal(choose("br;q=0.9, gzip;q=0.9"), CODING_BR);
    assert_int_equal(choose("gzip;q=0.001"), CODING_GZIP);   /* any positive weight beats unnamed identity */
    assert_int_equal(choose("identity;q=1, gzip;q=0.5"), CODING_IDENTITY);
    assert_int_equal(choose("identity, gzip"), CODING_GZIP);   /* equal: the server's order */
    accept_encoding ae = parse("br;q=0.25, GZIP;Q=0.750, identity;q=0.1");
    assert_int_equal(ae.weight[CODING_BR], 250);
    assert_int_equal(ae.weight[CODING_GZIP], 750);
    assert_int_equal(ae.weight[CODING_IDENTITY], 100);
}

static void test_refusals(void **state)
{
    (void)state;
    assert_int_equal(choose("gzip;q=0"), CODING_IDENTITY);
    assert_int_equal(choose("gzip;q=0.000"), CODING_IDENTITY);
    assert_int_equal(choose("br;q=0, gzip"), CODING_GZIP);
    assert_int_equal(choose("br;q=0, gzip;q=0"), CODING_IDENTITY);
    assert_int_equal(choose("*, br;q=0"), CODING_GZIP);
    assert_int_equal(choose("*, gzip;q=0"), CODING_BR);
    assert_int_equal(choose("*;q=0"), CODING_IDENTITY);   /* nothing acceptable: no coding */
    assert_int_equal(choose("gzip, gzip;q=0"), CODING_IDENTITY);   /* a refusal is never overridden */
    assert_int_equal(choose("gzip;q=0, gzip"), CODING_IDENTITY);
    accept_encoding ae = parse("*;q=0");
    assert_int_equal(ae.weight[CODING_IDENTITY], 0);
    ae = parse("*;q=0, identity");
    assert_int_equal(ae.weight[CODING_IDENTITY], 1000);
    ae = parse("identity;q=0");
    assert_int_equal(ae.weight[CODING_IDENTITY], 0);
    assert_int_equal(ae.weight[CODING_GZIP], 0);
}

static void test_star_and_unnamed(void **state)
{
    (void)state;
    assert_int_equal(choose("*"), CODING_BR);
    assert_int_equal(choose("deflate, *;q=0.1"), CODING_BR);
    assert_int_equal(choose("*;q=0.5, gzip;q=0.6"), CODING_GZIP);
    accept_encoding ae = parse("gzip");
    assert_int_equal(ae.weight[CODING_GZIP], 1000);
    assert_int_equal(ae.weight[CODING_BR], 0);
    assert_int_equal(ae.weight[CODING_IDENTITY], 1);   /* acceptable, least preferred */
    ae = parse("*;q=0.3");
    assert_int_equal(ae.weight[CODING_IDENTITY], 300);
    assert_int_equal(ae.weight[CODING_BR], 300);
    ae = parse("");
    assert_int_equal(ae.weight[CODING_GZIP], 0);
    assert_int_equal(ae.weight[CODING_BR], 0);
    assert_int_equal(ae.weight[CODING_IDENTITY], 1);
}

static void test_case_and_whitespace(void **state)
{
    (void)state;
    assert_int_equal(choose("GZIP"), CODING_GZIP);
    assert_int_equal(choose("Br"), CODING_BR);
    assert_int_equal(choose("x-gzip"), CODING_GZIP);
    assert_int_equal(choose("X-GZip"), CODING_GZIP);
    assert_int_equal(choose("  gzip  "), CODING_GZIP);
    assert_int_equal(choose("\tbr\t;\tq=0\t,\tgzip\t"), CODING_GZIP);
    assert_int_equal(choose("br ; q=0 , gzip"), CODING_GZIP);
    assert_int_equal(choose(",, ,gzip,,"), CODING_GZIP);   /* empty list elements */
    assert_int_equal(choose("identity;Q=0, gzip"), CODING_GZIP);
}

static void test_malformed_elements_are_skipped(void **state)
{
    (void)state;
    /* a weight outside qvalue's grammar: the element is as if absent */
    assert_int_equal(choose("gzip;q=1.5"), CODING_IDENTITY);
    assert_int_equal(choose("gzip;q=2"), CODING_IDENTITY);
    assert_int_equal(choose("gzip;q=0.0001"), CODING_IDENTITY);
    assert_int_equal(choose("gzip;q=-1"), CODING_IDENTITY);
    assert_int_equal(choose("gzip;q="), CODING_IDENTITY);
    assert_int_equal(choose("gzip;q=.5"), CODING_IDENTITY);
    assert_int_equal(choose("gzip;q=1.001"), CODING_IDENTITY);
    assert_int_equal(choose("gzip;q = 0.5"), CODING_IDENTITY);
    assert_int_equal(choose("gzip;level=9"), CODING_IDENTITY);
    assert_int_equal(choose("gzip;"), CODING_IDENTITY);
    assert_int_equal(choose("gzip br"), CODING_IDENTITY);
    assert_int_equal(choose("\"gzip\""), CODING_IDENTITY);
    assert_int_equal(choose("gzipx, xgzip, gzi, brr"), CODING_IDENTITY);
    /* ... and only that element: a bad refusal does not refuse */
    assert_int_equal(choose("gzip;q=0.5x, br;q=0=1, gzip;q=0.5"), CODING_GZIP);
    assert_int_equal(choose("br;q=zero, br"), CODING_BR);
    /* q=1 with up to three zeros, q=0 with up to three digits */
    assert_int_equal(parse("gzip;q=1.000").weight[CODING_GZIP], 1000);
    assert_int_equal(parse("gzip;q=1.").weight[CODING_GZIP], 1000);
    assert_int_equal(parse("gzip;q=0.5").weight[CODING_GZIP], 500);
    assert_int_equal(parse("gzip;q=0.05").weight[CODING_GZIP], 50);
    assert_int_equal(parse("gzip;q=0.999").weight[CODING_GZIP], 999);
}

static void test_reads_only_len_bytes(void **state)
{
    (void)state;
    const char value[] = "gzip;q=0, br";
    /* the first 8 bytes are "gzip;q=0": nothing past them counts */
    assert_int_equal(accept_encoding_choose(value, 8, server_order, 2), CODING_IDENTITY);
    assert_int_equal(accept_encoding_choose(value, 4, server_order, 2), CODING_GZIP);
    assert_int_equal(accept_encoding_choose(value, sizeof value - 1, server_order, 2), CODING_BR);
}

static void test_offer_limits_the_choice(void **state)
{
    (void)state;
    const content_coding gzip_only[] = {CODING_GZIP};
    assert_int_equal(accept_encoding_choose("br", 2, gzip_only, 1), CODING_IDENTITY);
    assert_int_equal(accept_encoding_choose("br, gzip;q=0.1", 14, gzip_only, 1), CODING_GZIP);
    const content_coding gzip_first[] = {CODING_GZIP, CODING_BR};
    assert_int_equal(accept_encoding_choose("gzip, br", 8, gzip_first, 2), CODING_GZIP);
    assert_int_equal(accept_encoding_choose("gzip, br", 8, NULL, 0), CODING_IDENTITY);
    assert_string_equal(content_coding_name(CODING_BR), "br");
    assert_string_equal(content_coding_name(CODING_GZIP), "gzip");
    assert_string_equal(content_coding_name(CODING_IDENTITY), "identity");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_common_clients),
        cmocka_unit_test(test_weights_decide_before_server_order),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_star_and_unnamed),
        cmocka_unit_test(test_case_and_whitespace),
        cmocka_unit_test(test_malformed_elements_are_skipped),
        cmocka_unit_test(test_reads_only_len_bytes),
        cmocka_unit_test(test_offer_limits_the_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
