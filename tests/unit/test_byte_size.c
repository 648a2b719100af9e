/* test_byte_size.c — the sizes `transitd import --memory-budget` takes
 * (src/base/byte_size.c): binary multiples, fractions rounded down, and a
 * refusal of anything else. */
#include "test_support.h"

#include <stdint.h>

#include "transit/byte_size.h"

static uint64_t parsed(const char *s)
{
    uint64_t v = 0;
    assert_int_equal(byte_size_parse(s, &v), 0);
    return v;
}

static void test_numbers_and_suffixes(void **state)
{
    (void)state;
    assert_true(parsed("1") == 1);
    assert_true(parsed("4096") == 4096);
    assert_true(parsed("4096B") == 4096);
    assert_true(parsed("1K") == 1024);
    assert_true(parsed("1k") == 1024);
    assert_true(parsed("800M") == 800ull << 20);
    assert_true(parsed("800MiB") == 800ull << 20);
    assert_true(parsed("2GB") == 2ull << 30);
    assert_true(parsed("1.5G") == 3ull << 29);
    assert_true(parsed("0.5K") == 512);
    assert_true(parsed("1.00098K") == 1025);    /* 1025.003 */
    assert_true(parsed("0.001K") == 1);      /* 1.024 bytes, rounded down */
    assert_true(parsed("4T") == 4ull << 40);
    assert_true(parsed("4194304T") == 1ull << 62);
}

static void test_everything_else_is_refused(void **state)
{
    (void)state;
    const char *bad[] = {"", "0", "0K", "0.0001", "-1", "+1", " 1", "1 ", "1.", ".5", "1.5.2", "1X", "1KB2",
                         "1iB", "1Ki", "G", "1e9", "0x10", "4194305T", "18446744073709551617",
                         "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint64_t v = 7;
        if (byte_size_parse(bad[i], &v) == 0) fail_msg("'%s' was taken as %llu", bad[i], (unsigned long long)v);
        assert_true(v == 7);
    }
    uint64_t v;
    assert_int_equal(byte_size_parse(NULL, &v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbers_and_suffixes),
        cmocka_unit_test(test_everything_else_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
