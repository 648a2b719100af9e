/* fuzz_rt_feed_wire.c — libFuzzer target for the streaming decode's top-level
 * walk (rt_feed_wire.c) and rt_feed_decode, against protobuf-c's unpack of
 * the whole message.
 *
 * Why it exists: rt_feed.c walks a FeedMessage's top level by hand (protobuf-c
 * has no streaming API), so that walk is a parser of network bytes of its
 * own. Every input must walk to its end or stop with a message, each field
 * inside the input and past the one before; and the streaming decode must
 * agree with transit_realtime__feed_message__unpack, the whole-message path
 * it replaced: what it decodes protobuf-c unpacks too, with as many entities
 * walked as protobuf-c unpacked; what protobuf-c unpacks (with a header
 * transitd supports) it decodes too, unless it refused a rule protobuf-c does
 * not check (an overlong varint, field number 0, a tag past 32 bits, a group).
 * rt_feed_decode_consuming (the poller's) decodes a copy the same way.
 * `make fuzz` builds build/fuzz/fuzz_rt_feed_wire; its seeds are
 * tests/fuzz/seeds/rt_feed_wire/ (unknown fields of each wire type,
 * truncations, a header twice or last) and make_seeds.py's feeds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtfs-realtime.pb-c.h"
#include "transit/rt_feed.h"
#include "transit/rt_feed_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const uint8_t *data, size_t size)
{
    pb_wire_field f;
    char err[256];
    size_t pos = 0, last = 0;
    int rc;
    while ((rc = pb_wire_next(data, size, 7, &pos, &f, err, sizeof err)) == 1) {
        if (pos <= last && !(pos == 0 && last == 0)) __builtin_trap();
        if (pos > size || f.offset < 7 || f.offset - 7 >= pos) __builtin_trap();
        if (f.wire_type == PB_WIRE_LEN && (f.data < data || f.data + f.len > data + size)) __builtin_trap();
        last = pos;
    }
    if (rc < 0 && !err[0]) __builtin_trap();
    if (rc == 0 && pos != size) __builtin_trap();
}

/* Entity fields (2, length-delimited) at the top level, when it walks. */
static size_t count_entities(const uint8_t *data, size_t size)
{
    pb_wire_field f;
    char err[256];
    size_t pos = 0, n = 0;
    while (pb_wire_next(data, size, 0, &pos, &f, err, sizeof err) == 1)
        n += f.number == 2;
    return n;
}

static bool stricter_rule(const char *err)
{
    static const char *const rules[] = {"64 bits", "overlong", "field number 0", "larger than 32 bits", "groups",
                                        "invalid wire type"};
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
        if (strstr(err, rules[i])) return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    walk(data, size);
    char err[512] = "";
    rt_feed *f = rt_feed_decode(data, size, err, sizeof err);
    if (!f && !err[0]) __builtin_trap();
    TransitRealtime__FeedMessage *whole = transit_realtime__feed_message__unpack(NULL, size, data);
    if (f) {
        if (!whole) {
            fprintf(stderr, "fuzz_rt_feed_wire: decoded what protobuf-c refuses\n");
            __builtin_trap();
        }
        if (whole->n_entity != count_entities(data, size)) {
            fprintf(stderr, "fuzz_rt_feed_wire: %zu entities walked, protobuf-c unpacked %zu\n",
                    count_entities(data, size), whole->n_entity);
            __builtin_trap();
        }
        if (f->trip_update_count + f->alert_count + f->vehicle_count + f->rejected + f->ignored < whole->n_entity &&
            f->vehicle_count == 0) {
            fprintf(stderr, "fuzz_rt_feed_wire: entities lost\n");
            __builtin_trap();
        }
    } else if (whole && strncmp(err, "unsupported", 11) != 0 && !strstr(err, "DIFFERENTIAL") &&
               !strstr(err, "out of memory") && !stricter_rule(err)) {
        fprintf(stderr, "fuzz_rt_feed_wire: protobuf-c unpacks what the streaming decode refuses: %s\n", err);
        __builtin_trap();
    }
    /* the poller's decode, which gives the bytes' pages back as it goes,
     * decodes the same from a copy it may spoil */
    uint8_t *copy = malloc(size ? size : 1);
    if (copy) {
        memcpy(copy, data, size);
        char err2[512] = "";
        rt_feed *g = rt_feed_decode_consuming(copy, size, err2, sizeof err2);
        free(copy);
        if (!f != !g || (!f && strcmp(err, err2) != 0 && !strstr(err2, "out of memory")) ||
            (f && g && (f->trip_update_count != g->trip_update_count || f->alert_count != g->alert_count ||
                        f->vehicle_count != g->vehicle_count || f->rejected != g->rejected ||
                        f->ignored != g->ignored))) {
            fprintf(stderr, "fuzz_rt_feed_wire: the consuming decode differs (%s / %s)\n", err, err2);
            __builtin_trap();
        }
        rt_feed_free(g);
    }
    if (whole) transit_realtime__feed_message__free_unpacked(whole, NULL);
    rt_feed_free(f);
    return 0;
}
