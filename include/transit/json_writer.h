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

void json_object_begin(json_writer *w);
void json_object_end(json_writer *w);
void json_array_begin(json_writer *w);
void json_array_end(json_writer *w);
void json_key_n(json_writer *w, const char *key, size_t len);  /* key is trusted ASCII */
void json_string(json_writer *w, const char *s);   /* NULL writes null */
void json_string_n(json_writer *w, const char *s, size_t len);
/* A string the caller knows needs no escaping (e.g. a formatted date). */
void json_string_plain(json_writer *w, const char *s, size_t len);
void json_int(json_writer *w, int64_t v);
void json_double(json_writer *w, double v, int decimals); /* fixed decimals, trailing zeros trimmed */
void json_bool(json_writer *w, bool v);
void json_null(json_writer *w);
void json_raw(json_writer *w, const char *s, size_t len); /* a pre-rendered JSON value */

/* Keys are nearly always literals: inlined, their strlen folds to a constant. */
static inline void json_key(json_writer *w, const char *key) { json_key_n(w, key, strlen(key)); }

/* key + value shorthands */
static inline void json_kv_string(json_writer *w, const char *key, const char *s)
{
    json_key(w, key);
    json_string(w, s);
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
    json_null(w);
}

#endif
