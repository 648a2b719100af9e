/* test_rt_source_list.c — the --gtfs-rt / --gtfs-rt-header rule: a header
 * goes with the source given just before it, malformed headers are refused
 * without quoting their value (an API key), and labels drop credentials and
 * query strings.
 */
#include "test_support.h"

#include "transit/rt_source_list.h"

static void test_headers_go_with_the_source_before_them(void **state)
{
    (void)state;
    rt_source_list list = {0};
    char err[300];
    assert_false(rt_source_list_add_header(&list, "X-Api-Key: k", err, sizeof err));
    assert_non_null(strstr(err, "give that first"));
    assert_true(rt_source_list_add(&list, "https://a.example/tu", err, sizeof err));
    assert_true(rt_source_list_add_header(&list, "X-Api-Key: k1", err, sizeof err));
    assert_true(rt_source_list_add_header(&list, "Accept:application/x-protobuf", err, sizeof err));
    assert_true(rt_source_list_add(&list, "/var/feeds/alerts.pb", err, sizeof err));
    assert_true(rt_source_list_add(&list, "https://b.example/tu", err, sizeof err));
    assert_true(rt_source_list_add_header(&list, "Authorization: Bearer k2", err, sizeof err));
    assert_int_equal(list.count, 3);
    assert_int_equal(list.sources[0].nheaders, 2);
    assert_string_equal(list.sources[0].headers[0], "X-Api-Key: k1");
    assert_int_equal(list.sources[1].nheaders, 0);
    assert_int_equal(list.sources[2].nheaders, 1);
    assert_string_equal(list.sources[2].headers[0], "Authorization: Bearer k2");
    assert_false(rt_source_list_add(&list, "", err, sizeof err));
}

static void test_limits(void **state)
{
    (void)state;
    rt_source_list list = {0};
    char err[300];
    for (int i = 0; i < RT_MAX_SOURCES; i++)
        assert_true(rt_source_list_add(&list, "f.pb", err, sizeof err));
    assert_false(rt_source_list_add(&list, "f.pb", err, sizeof err));
    assert_non_null(strstr(err, "at most 16"));
    for (int i = 0; i < RT_MAX_SOURCE_HEADERS; i++)
        assert_true(rt_source_list_add_header(&list, "A: b", err, sizeof err));
    assert_false(rt_source_list_add_header(&list, "A: b", err, sizeof err));
    char long_header[RT_MAX_HEADER_BYTES + 8];
    memset(long_header, 'v', sizeof long_header - 1);
    long_header[sizeof long_header - 1] = '\0';
    memcpy(long_header, "X: ", 3);
    assert_false(rt_header_valid(long_header, err, sizeof err));
}

static void test_malformed_headers_never_quote_the_value(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "no colon secret", ": secret", "X Key: secret", "X-Key:", "X-Key:   ", "X-Key: sec\r\nret",
        "X-Key: sec\nret", "X-Key: sec\x7fret", "(X): secret", "X-Key secret:",
    };
    char err[300];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_false(rt_header_valid(bad[i], err, sizeof err));
        assert_null(strstr(err, "secret"));
        assert_null(strstr(err, "sec"));
    }
    assert_true(rt_header_valid("X-Key: a b\tc", err, sizeof err));
    assert_true(rt_header_valid("x_key!#$%&'*+-.^`|~:v", err, sizeof err));
}

static void test_labels_drop_credentials_and_queries(void **state)
{
    (void)state;
    char out[256];
    rt_source_label("https://user:pw@feeds.example.org:8443/tu.pb?key=abc#frag", out, sizeof out);
    assert_string_equal(out, "https://feeds.example.org:8443/tu.pb");
    rt_source_label("http://a@b@host/x", out, sizeof out);
    assert_string_equal(out, "http://host/x");
    rt_source_label("http://host?key=1", out, sizeof out);
    assert_string_equal(out, "http://host");
    rt_source_label("http://host/p@th", out, sizeof out);
    assert_string_equal(out, "http://host/p@th");
    rt_source_label("/var/feeds/tu.pb", out, sizeof out);
    assert_string_equal(out, "/var/feeds/tu.pb");
    rt_source_label("https://k:s@host", out, 9);
    assert_string_equal(out, "https://");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_headers_go_with_the_source_before_them),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_malformed_headers_never_quote_the_value),
        cmocka_unit_test(test_labels_drop_credentials_and_queries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
