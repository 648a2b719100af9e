/* test_gzip_body.c — gzip_body (libdeflate) writes gzip members that zlib's
 * inflate, an independent decoder, reads back exactly, reusing its compressor
 * and buffer across bodies of different sizes. */
#include "test_support.h"

#include <zlib.h>
#include "transit/gzip_body.h"

/* Inflates a gzip member (windowBits 15+16 accepts only gzip). */
static size_t gunzip(const unsigned char *in, size_t len, char *out, size_t cap)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)len;
    zs.next_out = (Bytef *)out;
    zs.avail_out = (uInt)cap;
    assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
    size_t n = cap - zs.avail_out;
    inflateEnd(&zs);
    return n;
}

static void test_round_trip_and_reuse(void **state)
{
    (void)state;
    gzip_body *g = gzip_body_new(GZIP_BODY_LEVEL);
    assert_non_null(g);
    static char body[200000], back[200000];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = "{\"stop_id\":\"abc\",\"name\":\"Central\"}"[i % 34];
    for (int round = 0; round < 3; round++) {
        size_t len = round == 1 ? 10 : sizeof body - (size_t)round * 1000;
        const unsigned char *z;
        size_t zlen;
        assert_int_equal(gzip_body_compress(g, body, len, &z, &zlen), 0);
        assert_true(z[0] == 0x1f && z[1] == 0x8b);   /* gzip magic */
        if (len > 1000)
            assert_true(zlen < len / 4);
        assert_int_equal(gunzip(z, zlen, back, sizeof back), len);
        assert_memory_equal(back, body, len);
    }
    const unsigned char *z;
    size_t zlen;
    assert_int_equal(gzip_body_compress(g, "", 0, &z, &zlen), 0);
    assert_int_equal(gunzip(z, zlen, back, sizeof back), 0);
    gzip_body_free(g);
    gzip_body_free(NULL);
}

static void test_every_level_and_incompressible_bytes(void **state)
{
    (void)state;
    static unsigned char noise[70000], back[70000];
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof noise; i++) {   /* xorshift: bytes gzip cannot shrink */
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        noise[i] = (unsigned char)x;
    }
    for (int level = 0; level <= 13; level++) {   /* 0 and 13: out of range, the default */
        gzip_body *g = gzip_body_new(level);
        assert_non_null(g);
        const unsigned char *z;
        size_t zlen;
        assert_int_equal(gzip_body_compress(g, noise, sizeof noise, &z, &zlen), 0);
        assert_true(zlen >= sizeof noise);   /* stored blocks: never smaller */
        assert_int_equal(gunzip(z, zlen, (char *)back, sizeof back), sizeof noise);
        assert_memory_equal(back, noise, sizeof noise);
        gzip_body_free(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_reuse),
        cmocka_unit_test(test_every_level_and_incompressible_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
