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

void json_object_begin(json_writer *w);
void json_object_end(json_writer *w);
void json_array_begin(json_writer *w);
void json_array_end(json_writer *w);
void json_key(json_writer *w, const char *key);   /* key is trusted ASCII */
void json_string(json_writer *w, const char *s);   /* NULL writes null */
void json_string_n(json_writer *w, const char *s, size_t len);
void json_int(json_writer *w, int64_t v);
void json_double(json_writer *w, double v, int decimals); /* fixed decimals, trailing zeros trimmed */
void json_bool(json_writer *w, bool v);
void json_null(json_writer *w);
void json_raw(json_writer *w, const char *s, size_t len); /* a pre-rendered JSON value */

/* key + value shorthands */
void json_kv_string(json_writer *w, const char *key, const char *s);
void json_kv_int(json_writer *w, const char *key, int64_t v);
void json_kv_double(json_writer *w, const char *key, double v, int decimals);
void json_kv_bool(json_writer *w, const char *key, bool v);
void json_kv_null(json_writer *w, const char *key);

#endif
