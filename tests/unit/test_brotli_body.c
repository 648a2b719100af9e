/* test_brotli_body.c — brotli_body writes Brotli streams that libbrotlidec reads
 * back exactly (small, large, empty and incompressible bodies), reusing its
 * output buffer across bodies, at every quality. */
#include "test_support.h"

#include <brotli/decode.h>
#include "transit/brotli_body.h"

/* Decodes a whole Brotli stream into out; returns its length. */
static size_t unbrotli(const unsigned char *in, size_t len, unsigned char *out, size_t cap)
{
    size_t n = cap;
    assert_int_equal(BrotliDecoderDecompress(len, in, &n, out), BROTLI_DECODER_RESULT_SUCCESS);
    return n;
}

static void test_round_trip_and_reuse(void **state)
{
    (void)state;
    brotli_body *b = brotli_body_new(BROTLI_BODY_QUALITY);
    assert_non_null(b);
    static unsigned char body[300000], back[300000];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (unsigned char)"{\"stop_id\":\"abc\",\"name\":\"Central\",\"t\":12}"[i % 41];
    const size_t sizes[] = {sizeof body, 10, 1025, 70000, sizeof body - 1, 0};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        const unsigned char *z;
        size_t zlen;
        assert_int_equal(brotli_body_compress(b, body, sizes[k], &z, &zlen), 0);
        if (sizes[k] > 1000)
            assert_true(zlen < sizes[k] / 8);
        assert_int_equal(unbrotli(z, zlen, back, sizeof back), sizes[k]);
        assert_memory_equal(back, body, sizes[k]);
    }
    brotli_body_free(b);
    brotli_body_free(NULL);
}

static void test_every_quality_and_incompressible_bytes(void **state)
{
    (void)state;
    static unsigned char noise[40000], back[40000];
    uint32_t x = 88172645u;
    for (size_t i = 0; i < sizeof noise; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        noise[i] = (unsigned char)x;
    }
    for (int quality = -1; quality <= 12; quality++) {   /* -1 and 12: out of range, the default */
        brotli_body *b = brotli_body_new(quality);
        assert_non_null(b);
        const unsigned char *z;
        size_t zlen;
        assert_int_equal(brotli_body_compress(b, noise, sizeof noise, &z, &zlen), 0);
        assert_true(zlen >= sizeof noise);
        assert_int_equal(unbrotli(z, zlen, back, sizeof back), sizeof noise);
        assert_memory_equal(back, noise, sizeof noise);
        brotli_body_free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_reuse),
        cmocka_unit_test(test_every_quality_and_incompressible_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
