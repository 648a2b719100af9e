/* json_writer.h — a streaming JSON writer into one growable, reusable buffer.
 *
 * Why it exists: every response is JSON, and building a tree of objects to
 * serialise it is exactly the intermediate-object cost the design avoids.
 * The writer appends bytes as the caller walks its data, tracks commas and
 * nesting itself, escapes strings (RFC 8259), and keeps its buffer between
 * requests so the steady state allocates nothing.
 */
#ifndef TRANSIT_JSON_WRITER_H
#define TRANSIT_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define JSON_MAX_DEPTH 32

typedef struct json_writer {
    char *buf;
    size_t len, cap;
    int depth;
    bool need_comma[JSON_MAX_DEPTH];
    bool after_key;
    bool oom;          /* an allocation failed: output is incomplete */
} json_writer;

void json_init(json_writer *w);
void json_free(json_writer *w);
void json_reset(json_writer *w);              /* empty, keeps the buffer */
/* Hands the written bytes away without a copy: exchanges the writer's
 * buffer (*buf, *cap) with the one passed in, which may be NULL/0, and
 * leaves the writer empty on it. */
void json_swap_buffer(json_writer *w, char **buf, size_t *cap);

void json_object_begin(json_writer *w);
void json_object_end(json_writer *w);
void json_array_begin(json_writer *w);
void json_array_end(json_writer *w);
void json_key_n(json_writer *w, const char *key, size_t len);  /* key is trusted ASCII */
void json_str(json_writer *w, const char *s);   /* NULL writes null */
void json_string_n(json_writer *w, const char *s, size_t len);
/* A string the caller knows needs no escaping (e.g. a formatted date). */
void json_string_plain(json_writer *w, const char *s, size_t len);
void json_int(json_writer *w, int64_t v);
void json_double(json_writer *w, double v, int decimals); /* fixed decimals, trailing zeros trimmed */
void json_bool(json_writer *w, bool v);
void json_null_value(json_writer *w);
void json_raw(json_writer *w, const char *s, size_t len); /* a pre-rendered JSON value */

/* Direct writing, for loops that emit many small pieces (departure rows).
 * json_raw_begin writes the comma the next value needs, makes room for up to
 * `max` bytes and returns where to write, or NULL when out of memory (oom is
 * then set). The caller writes with the json_put_* helpers below and hands
 * the end of what it wrote to json_raw_end. */
char *json_raw_begin(json_writer *w, size_t max);
void json_raw_end(json_writer *w, char *end);
/* A quoted, escaped string, as json_string_n writes it; needs 6 * len + 2 bytes. */
char *json_put_string(char *p, const char *s, size_t len);
/* The same for a NUL-terminated string, measured as it is copied: bytes up
 * to `readable_end` may be read past its NUL. Needs 6 * strlen(s) + 10. */
char *json_put_cstring(char *p, const char *s, const char *readable_end);
/* Whether a string byte is copied into JSON as it is: plain ASCII, no
 * control byte, quote or backslash. */
static inline bool json_byte_is_plain(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }
/* The length of NUL-terminated s when every byte of it is plain and it is
 * at most `max` bytes long (JSON then holds it as it is), else max + 1. */
size_t json_plain_length(const char *s, size_t max);
/* A non-negative integer in decimal; needs 20 bytes. */
char *json_put_uint(char *p, uint64_t v);

/* "00".."99", for writing numbers two digits a step. */
extern const char json_digit_pairs[201];

/* v (below 100) as two digits, a leading zero included. */
static inline char *json_put_2digits(char *p, unsigned v)
{
    memcpy(p, &json_digit_pairs[2 * v], 2);
    return p + 2;
}

/* A uint32_t in decimal, inline: the numbers of a departure row are all
 * 32-bit, and 32-bit divisions by constants are a multiply each. Counts the
 * digits by comparison, then writes pairs from the last; needs 10 bytes. */
static inline char *json_put_u32(char *p, uint32_t v)
{
    unsigned n = v < 100000 ? (v < 100 ? (v < 10 ? 1 : 2) : v < 1000 ? 3 : v < 10000 ? 4 : 5)
                            : v < 10000000 ? (v < 1000000 ? 6 : 7)
                            : v < 100000000 ? 8 : v < 1000000000 ? 9 : 10;
    char *q = p + n;
    while (v >= 100) {
        unsigned pair = v % 100;
        v /= 100;
        q -= 2;
        memcpy(q, &json_digit_pairs[2 * pair], 2);
    }
    if (v >= 10)
        memcpy(q - 2, &json_digit_pairs[2 * v], 2);
    else
        q[-1] = (char)('0' + v);
    return p + n;
}
static inline char *json_put_bytes(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}
/* A string literal, its length folded at compile time. */
#define JSON_PUT_LITERAL(p, lit) json_put_bytes((p), (lit), sizeof(lit) - 1)

/* Keys are nearly always literals: inlined, their strlen folds to a constant. */
static inline void json_key(json_writer *w, const char *key) { json_key_n(w, key, strlen(key)); }

/* key + value shorthands */
static inline void json_kv_string(json_writer *w, const char *key, const char *s)
{
    json_key(w, key);
    json_str(w, s);
}
static inline void json_kv_int(json_writer *w, const char *key, int64_t v)
{
    json_key(w, key);
    json_int(w, v);
}
static inline void json_kv_double(json_writer *w, const char *key, double v, int decimals)
{
    json_key(w, key);
    json_double(w, v, decimals);
}
static inline void json_kv_bool(json_writer *w, const char *key, bool v)
{
    json_key(w, key);
    json_bool(w, v);
}
static inline void json_kv_null(json_writer *w, const char *key)
{
    json_key(w, key);
    json_null_value(w);
}

#endif
