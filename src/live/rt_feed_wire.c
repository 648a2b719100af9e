/* rt_feed_wire.c — one protobuf field at a time; see
 * include/transit/rt_feed_wire.h.
 */
#include "transit/rt_feed_wire.h"

#include <stdbool.h>
#include <stdio.h>

/* A varint of at most max_bytes at buf[*pos..len). false with err set. */
static bool read_varint(const uint8_t *buf, size_t len, size_t base, size_t *pos, unsigned max_bytes,
                        const char *what, uint64_t *out, char *err, size_t errlen)
{
    uint64_t v = 0;
    size_t start = *pos;
    for (unsigned i = 0; i < max_bytes; i++) {
        if (start + i >= len) {
            snprintf(err, errlen, "truncated %s at byte %zu", what, base + start);
            return false;
        }
        uint8_t b = buf[start + i];
        if (i == 9 && b > 1) {   /* the tenth byte holds only bit 63 */
            snprintf(err, errlen, "%s at byte %zu does not fit in 64 bits", what, base + start);
            return false;
        }
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *pos = start + i + 1;
            *out = v;
            return true;
        }
    }
    snprintf(err, errlen, "overlong %s at byte %zu (more than %u bytes)", what, base + start, max_bytes);
    return false;
}

int pb_wire_next(const uint8_t *buf, size_t len, size_t base, size_t *pos, pb_wire_field *out, char *err,
                 size_t errlen)
{
    if (*pos >= len)
        return 0;
    size_t at = *pos, p = *pos;
    uint64_t tag;
    if (!read_varint(buf, len, base, &p, 5, "field tag", &tag, err, errlen))
        return -1;
    if (tag > UINT32_MAX) {
        snprintf(err, errlen, "field tag at byte %zu is larger than 32 bits", base + at);
        return -1;
    }
    *out = (pb_wire_field){.number = (uint32_t)(tag >> 3), .wire_type = (uint8_t)(tag & 7), .offset = base + at};
    if (out->number == 0) {
        snprintf(err, errlen, "field number 0 at byte %zu", base + at);
        return -1;
    }
    switch (out->wire_type) {
    case PB_WIRE_VARINT:
        if (!read_varint(buf, len, base, &p, 10, "varint", &out->value, err, errlen))
            return -1;
        break;
    case PB_WIRE_FIXED64:
    case PB_WIRE_FIXED32: {
        size_t n = out->wire_type == PB_WIRE_FIXED64 ? 8 : 4;
        if (len - p < n) {
            snprintf(err, errlen, "field %u at byte %zu: truncated %zu-byte value (%zu bytes left)", out->number,
                     base + at, n, len - p);
            return -1;
        }
        out->value = 0;
        for (size_t i = 0; i < n; i++)
            out->value |= (uint64_t)buf[p + i] << (8 * i);
        p += n;
        break;
    }
    case PB_WIRE_LEN: {
        uint64_t n;   /* at most 5 bytes, as protobuf-c reads lengths: a length is 32 bits */
        if (!read_varint(buf, len, base, &p, 5, "length", &n, err, errlen))
            return -1;
        if (n > len - p) {
            snprintf(err, errlen, "field %u at byte %zu: length %llu runs past the end (%zu bytes left)",
                     out->number, base + at, (unsigned long long)n, len - p);
            return -1;
        }
        out->data = buf + p;
        out->len = (size_t)n;
        p += (size_t)n;
        break;
    }
    case 3:
    case 4:
        snprintf(err, errlen, "field %u at byte %zu: groups (wire type %u) are not supported", out->number,
                 base + at, out->wire_type);
        return -1;
    default:
        snprintf(err, errlen, "field %u at byte %zu: invalid wire type %u", out->number, base + at,
                 out->wire_type);
        return -1;
    }
    *pos = p;
    return 1;
}
