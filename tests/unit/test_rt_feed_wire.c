/* test_rt_feed_wire.c — the streaming decode's top-level walk (rt_feed_wire.c
 * and rt_feed_decode): unknown fields of every wire type are skipped at the
 * top level and inside an entity, a header given twice is merged, a header
 * after the entities counts, and truncated or overlong varints, lengths past
 * the end, groups, field number 0 and a known field with the wrong wire type
 * fail with a message naming the byte.
 */
#include "test_support.h"

#include "transit/rt_feed.h"
#include "transit/rt_feed_wire.h"

/* A growing byte string to write protobuf by hand. */
typedef struct bytes {
    uint8_t b[4096];
    size_t n;
} bytes;

static void put_varint(bytes *o, uint64_t v)
{
    do {
        uint8_t c = v & 0x7F;
        v >>= 7;
        o->b[o->n++] = c | (v ? 0x80 : 0);
    } while (v);
}

static void put_tag(bytes *o, uint32_t field, uint8_t wire) { put_varint(o, (uint64_t)field << 3 | wire); }

static void put_len(bytes *o, uint32_t field, const void *p, size_t n)
{
    put_tag(o, field, PB_WIRE_LEN);
    put_varint(o, n);
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

static void put_str(bytes *o, uint32_t field, const char *s) { put_len(o, field, s, strlen(s)); }

static void put_bytes(bytes *o, uint32_t field, const bytes *inner) { put_len(o, field, inner->b, inner->n); }

/* Unknown fields of the four wire types, numbered from `first`. */
static void put_unknown(bytes *o, uint32_t first)
{
    put_tag(o, first, PB_WIRE_VARINT);
    put_varint(o, UINT64_MAX);                    /* ten bytes */
    put_tag(o, first + 1, PB_WIRE_FIXED64);
    memcpy(o->b + o->n, "12345678", 8);
    o->n += 8;
    put_str(o, first + 2, "skipped");
    put_tag(o, first + 3, PB_WIRE_FIXED32);
    memcpy(o->b + o->n, "1234", 4);
    o->n += 4;
}

/* A trip update entity: trip T<k> delayed k s, with unknown fields inside
 * the entity and the trip update when `noisy`. */
static void put_entity(bytes *o, int k, bool noisy)
{
    char id[16], trip[16];
    snprintf(id, sizeof id, "e%d", k);
    snprintf(trip, sizeof trip, "T%d", k);
    bytes td = {0}, tu = {0}, e = {0};
    put_str(&td, 1, trip);
    put_bytes(&tu, 1, &td);
    if (noisy) put_unknown(&tu, 900);
    put_tag(&tu, 5, PB_WIRE_VARINT);   /* TripUpdate.delay */
    put_varint(&tu, (uint64_t)k);
    if (noisy) put_unknown(&e, 1500);  /* an extension's numbers */
    put_str(&e, 1, id);
    put_bytes(&e, 3, &tu);
    put_bytes(o, 2, &e);
}

static void put_header(bytes *o, const char *version, uint64_t timestamp)
{
    bytes h = {0};
    if (version) put_str(&h, 1, version);
    if (timestamp) {
        put_tag(&h, 3, PB_WIRE_VARINT);
        put_varint(&h, timestamp);
    }
    put_bytes(o, 1, &h);
}

static rt_feed *decode(const bytes *o, char *err, size_t errlen)
{
    err[0] = 0;
    return rt_feed_decode(o->b, o->n, err, errlen);
}

static void test_unknown_fields_are_skipped(void **state)
{
    (void)state;
    bytes plain = {0}, noisy = {0};
    put_header(&plain, "2.0", 1700000000);
    put_entity(&plain, 1, false);
    put_entity(&plain, 2, false);
    put_unknown(&noisy, 10);
    put_header(&noisy, "2.0", 1700000000);
    put_unknown(&noisy, 20);
    put_entity(&noisy, 1, true);
    put_unknown(&noisy, 30);
    put_entity(&noisy, 2, true);
    put_unknown(&noisy, 1000);
    char err[256];
    rt_feed *a = decode(&plain, err, sizeof err), *b = decode(&noisy, err, sizeof err);
    assert_non_null(a);
    if (!b) fail_msg("the feed with unknown fields fails: %s", err);
    assert_int_equal(b->trip_update_count, 2);
    assert_int_equal(a->trip_update_count, 2);
    assert_int_equal(b->timestamp, 1700000000);
    for (uint32_t i = 0; i < 2; i++) {
        assert_string_equal(b->trip_updates[i].trip_id, a->trip_updates[i].trip_id);
        assert_int_equal(b->trip_updates[i].delay, (int32_t)i + 1);
    }
    rt_feed_free(a);
    rt_feed_free(b);
}

static void test_header_twice_or_last(void **state)
{
    (void)state;
    bytes o = {0};
    put_entity(&o, 7, false);
    put_header(&o, "1.0", 0);            /* after the entities */
    put_header(&o, "2.0", 1700000123);   /* a second header field: merged into the first */
    char err[256];
    rt_feed *f = decode(&o, err, sizeof err);
    if (!f) fail_msg("%s", err);
    assert_string_equal(f->version, "2.0");
    assert_int_equal(f->timestamp, 1700000123);
    assert_int_equal(f->trip_update_count, 1);
    assert_string_equal(f->trip_updates[0].trip_id, "T7");
    rt_feed_free(f);

    /* each header field must be whole on its own (protobuf-c checks each) */
    bytes partial = {0};
    put_header(&partial, "2.0", 0);
    put_header(&partial, NULL, 1700000123);
    assert_null(decode(&partial, err, sizeof err));
    assert_non_null(strstr(err, "the header at byte"));

    bytes none = {0};
    put_entity(&none, 1, false);
    assert_null(decode(&none, err, sizeof err));
    assert_non_null(strstr(err, "no header"));
}

/* Each broken input fails with `want` in its message. */
static void expect_failure(const bytes *o, const char *want)
{
    char err[256];
    rt_feed *f = decode(o, err, sizeof err);
    if (f) {
        rt_feed_free(f);
        fail_msg("decoded, but should fail with \"%s\"", want);
    }
    if (!strstr(err, want)) fail_msg("\"%s\" lacks \"%s\"", err, want);
    assert_non_null(strstr(err, "malformed or truncated"));
}

static void test_broken_wire_fails_with_the_byte(void **state)
{
    (void)state;
    bytes good = {0};
    put_header(&good, "2.0", 1);
    put_entity(&good, 1, false);

    bytes o = good;   /* a varint cut after its continuation bit */
    put_tag(&o, 40, PB_WIRE_VARINT);
    o.b[o.n++] = 0x80;
    char want[64];
    snprintf(want, sizeof want, "truncated varint at byte %zu", good.n + 2);   /* past the two-byte tag */
    expect_failure(&o, want);

    o = good;         /* eleven bytes of varint */
    put_tag(&o, 40, PB_WIRE_VARINT);
    for (int i = 0; i < 10; i++) o.b[o.n++] = 0xFF;
    o.b[o.n++] = 0x01;
    expect_failure(&o, "does not fit in 64 bits");
    o = good;
    put_tag(&o, 40, PB_WIRE_VARINT);
    for (int i = 0; i < 11; i++) o.b[o.n++] = 0x80;
    o.b[o.n++] = 0x00;
    expect_failure(&o, "64 bits");

    o = good;         /* a tag longer than five bytes */
    for (int i = 0; i < 6; i++) o.b[o.n++] = 0x80;
    o.b[o.n++] = 0x01;
    snprintf(want, sizeof want, "overlong field tag at byte %zu", good.n);
    expect_failure(&o, want);

    o = good;         /* a length past the end */
    put_tag(&o, 2, PB_WIRE_LEN);
    put_varint(&o, 100);
    o.b[o.n++] = 0x0A;
    snprintf(want, sizeof want, "field 2 at byte %zu: length 100 runs past the end (1 bytes left)", good.n);
    expect_failure(&o, want);

    o = good;         /* a cut fixed64 */
    put_tag(&o, 50, PB_WIRE_FIXED64);
    o.b[o.n++] = 1;
    expect_failure(&o, "truncated 8-byte value");

    o = good;         /* a group */
    put_tag(&o, 51, 3);
    expect_failure(&o, "groups (wire type 3) are not supported");
    o = good;
    put_tag(&o, 52, 7);
    expect_failure(&o, "invalid wire type 7");
    o = good;
    put_tag(&o, 0, PB_WIRE_VARINT);
    put_varint(&o, 1);
    expect_failure(&o, "field number 0");

    o = good;         /* entities as a varint */
    put_tag(&o, 2, PB_WIRE_VARINT);
    put_varint(&o, 5);
    expect_failure(&o, "field 2 (entity)");

    o = good;         /* a broken field inside the second entity: names it and its byte */
    bytes e = {0};
    put_str(&e, 1, "e2");
    put_tag(&e, 3, PB_WIRE_LEN);
    put_varint(&e, 50);
    put_bytes(&o, 2, &e);
    expect_failure(&o, "entity 1: field 3 at byte");

    o = good;         /* an entity whose id (required) is missing: protobuf-c's unpack refuses it */
    bytes tu = {0}, td = {0}, e2 = {0};
    put_str(&td, 1, "T9");
    put_bytes(&tu, 1, &td);
    put_bytes(&e2, 3, &tu);
    put_bytes(&o, 2, &e2);
    snprintf(want, sizeof want, "entity 1 at byte %zu", good.n);
    expect_failure(&o, want);
}

static void test_walker_reads_each_type(void **state)
{
    (void)state;
    bytes o = {0};
    put_unknown(&o, 3);
    pb_wire_field f;
    size_t pos = 0;
    char err[128];
    assert_int_equal(pb_wire_next(o.b, o.n, 0, &pos, &f, err, sizeof err), 1);
    assert_int_equal(f.number, 3);
    assert_int_equal(f.wire_type, PB_WIRE_VARINT);
    assert_true(f.value == UINT64_MAX);
    assert_int_equal(pb_wire_next(o.b, o.n, 0, &pos, &f, err, sizeof err), 1);
    assert_int_equal(f.wire_type, PB_WIRE_FIXED64);
    assert_true(f.value == 0x3837363534333231ull);
    assert_int_equal(pb_wire_next(o.b, o.n, 0, &pos, &f, err, sizeof err), 1);
    assert_int_equal(f.wire_type, PB_WIRE_LEN);
    assert_int_equal(f.len, 7);
    assert_memory_equal(f.data, "skipped", 7);
    assert_int_equal(pb_wire_next(o.b, o.n, 0, &pos, &f, err, sizeof err), 1);
    assert_int_equal(f.wire_type, PB_WIRE_FIXED32);
    assert_int_equal(f.number, 6);
    assert_int_equal(pb_wire_next(o.b, o.n, 0, &pos, &f, err, sizeof err), 0);
    assert_int_equal(pos, o.n);
    /* every cut of it fails cleanly or ends at a field boundary */
    for (size_t cut = 0; cut < o.n; cut++) {
        size_t p = 0;
        int rc;
        while ((rc = pb_wire_next(o.b, cut, 100, &p, &f, err, sizeof err)) == 1)
            assert_true(p <= cut);
        if (rc < 0) assert_non_null(strstr(err, "at byte 1"));   /* offsets counted from the base, 100 */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_fields_are_skipped),
        cmocka_unit_test(test_header_twice_or_last),
        cmocka_unit_test(test_broken_wire_fails_with_the_byte),
        cmocka_unit_test(test_walker_reads_each_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
