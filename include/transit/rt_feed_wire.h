/* rt_feed_wire.h — the protobuf wire format, one field at a time, for the
 * top level of a GTFS-Realtime FeedMessage and of each FeedEntity.
 *
 * Why it exists: protobuf-c has no streaming API. Its unpack of a whole
 * FeedMessage builds the tree of every entity at once, several times the
 * feed's size (a 64 MB feed of 200,000 entities). rt_feed.c walks the top
 * level with this instead, and hands protobuf-c one FeedEntity at a time.
 * It follows the protobuf encoding rules (developers.google.com/protocol-
 * buffers/docs/encoding): varints of at most 10 bytes (the tenth holding
 * only bit 63), tags and lengths of at most 5,
 * wire types 0 (varint), 1 (64-bit), 2 (length-delimited) and 5 (32-bit);
 * groups (3, 4) are refused as protobuf-c refuses them, and field number 0
 * is invalid. Every error says what and at which byte.
 */
#ifndef TRANSIT_RT_FEED_WIRE_H
#define TRANSIT_RT_FEED_WIRE_H

#include <stddef.h>
#include <stdint.h>

enum {
    PB_WIRE_VARINT = 0,
    PB_WIRE_FIXED64 = 1,
    PB_WIRE_LEN = 2,
    PB_WIRE_FIXED32 = 5,
};

typedef struct pb_wire_field {
    uint32_t number;           /* the field number, >= 1 */
    uint8_t wire_type;         /* PB_WIRE_* */
    size_t offset;             /* of its tag, in the buffer walked */
    uint64_t value;            /* a varint's or a fixed field's value */
    const uint8_t *data;       /* a length-delimited field's bytes (len of them) */
    size_t len;
} pb_wire_field;

/* Reads the field at *pos of buf[0..len): 1 with *out filled and *pos past
 * the field; 0 at the end (*pos == len); -1 when malformed, with err saying
 * what at which byte (offsets counted from `base`, the position of buf in
 * the outer message, so a nested walk names bytes of the whole feed). */
int pb_wire_next(const uint8_t *buf, size_t len, size_t base, size_t *pos, pb_wire_field *out, char *err,
                 size_t errlen);

#endif
