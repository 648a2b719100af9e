/* json_writer.c — the streaming JSON writer behind every response body.
 *
 * Why it exists: see json_writer.h. Bytes are appended to one buffer that
 * grows geometrically and is kept across json_reset(), so a warm writer never
 * allocates. Commas are decided per nesting level; strings are escaped per
 * RFC 8259 with invalid UTF-8 replaced by U+FFFD; numbers never come out as
 * NaN/Infinity and never depend on the process locale.
 */
#include "transit/json_writer.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_INITIAL_CAPACITY 4096

void json_init(json_writer *w)
{
    memset(w, 0, sizeof *w);
}

void json_free(json_writer *w)
{
    free(w->buf);
    memset(w, 0, sizeof *w);
}

void json_reset(json_writer *w)
{
    w->len = 0;
    w->depth = 0;
    w->need_comma[0] = false;
    w->after_key = false;
    w->oom = false;
    if (w->buf)
        w->buf[0] = '\0';
}

void json_swap_buffer(json_writer *w, char **buf, size_t *cap)
{
    char *mine = w->buf;
    size_t mine_cap = w->cap;
    w->buf = *buf;
    w->cap = *buf ? *cap : 0;
    *buf = mine;
    *cap = mine_cap;
    json_reset(w);
}

/* Makes room for `extra` more bytes plus a terminating NUL. */
static bool reserve(json_writer *w, size_t extra)
{
    if (w->oom)
        return false;
    size_t need = w->len + extra + 1;
    if (need <= w->cap)
        return true;
    size_t cap = w->cap ? w->cap : JSON_INITIAL_CAPACITY;
    while (cap < need)
        cap *= 2;
    char *grown = realloc(w->buf, cap);
    if (!grown) {
        w->oom = true;
        return false;
    }
    w->buf = grown;
    w->cap = cap;
    return true;
}

static void append(json_writer *w, const char *s, size_t n)
{
    if (!reserve(w, n))
        return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static void append_char(json_writer *w, char c)
{
    if (!reserve(w, 1))
        return;
    w->buf[w->len++] = c;
    w->buf[w->len] = '\0';
}

/* Called before every value: a comma unless it is the first item of its
 * container or the value of a key just written. */
static void before_value(json_writer *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->need_comma[w->depth])
        append_char(w, ',');
    w->need_comma[w->depth] = true;
}

static void open_container(json_writer *w, char c)
{
    before_value(w);
    if (w->depth + 1 >= JSON_MAX_DEPTH) {
        /* Deeper than any response needs: refuse rather than corrupt state. */
        w->oom = true;
        return;
    }
    append_char(w, c);
    w->depth++;
    w->need_comma[w->depth] = false;
}

static void close_container(json_writer *w, char c)
{
    /* a close without its open is a caller's bug, unless the open was refused (oom) */
    assert(w->depth > 0 || w->oom);
    if (w->depth > 0)
        w->depth--;
    w->after_key = false;
    append_char(w, c);
}

void json_object_begin(json_writer *w) { open_container(w, '{'); }
void json_object_end(json_writer *w) { close_container(w, '}'); }
void json_array_begin(json_writer *w) { open_container(w, '['); }
void json_array_end(json_writer *w) { close_container(w, ']'); }

void json_key_n(json_writer *w, const char *key, size_t n)
{
    assert(!w->after_key && w->depth >= 0 && w->depth < JSON_MAX_DEPTH);   /* no key after a key */
    if (w->need_comma[w->depth])
        append_char(w, ',');
    w->need_comma[w->depth] = true;
    if (reserve(w, n + 3)) {
        char *p = w->buf + w->len;
        *p++ = '"';
        memcpy(p, key, n);
        p += n;
        *p++ = '"';
        *p++ = ':';
        w->len += n + 3;
        w->buf[w->len] = '\0';
    }
    w->after_key = true;
}

/* Length of the valid UTF-8 sequence starting at s[0] (1..4), or 0 when it
 * is invalid; *bad_len is then the length of its maximal ill-formed prefix
 * (at least 1), which is replaced by one U+FFFD. Ranges per Unicode table 3-7. */
static size_t utf8_sequence(const unsigned char *s, size_t avail, size_t *bad_len)
{
    unsigned char b0 = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;   /* range of the second byte */
    if (b0 < 0x80)
        return 1;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 3;
        if (b0 == 0xE0)
            lo = 0xA0;
        else if (b0 == 0xED)
            hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 4;
        if (b0 == 0xF0)
            lo = 0x90;
        else if (b0 == 0xF4)
            hi = 0x8F;
    } else {
        *bad_len = 1;
        return 0;
    }
    for (size_t i = 1; i < need; i++) {
        unsigned char lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xBF;
        if (i >= avail || s[i] < lo_i || s[i] > hi_i) {
            *bad_len = i;
            return 0;
        }
    }
    return need;
}

/* The high bit of each byte of the word x that a JSON string cannot carry
 * as it is: a control byte (NUL included), '"', '\\', or a byte >= 0x80 (a
 * UTF-8 sequence, checked on its own). Each byte is tested without a
 * borrow or carry crossing into its neighbour, so the first flagged byte is
 * the first such byte. */
static inline uint64_t special_bytes(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull, lows = 0x7f7f7f7f7f7f7f7full;
    uint64_t below_space = ~((x & lows) + ones * (0x80 - 0x20));   /* low 7 bits below 0x20 */
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    uint64_t is_quote = ~(((q & lows) + lows) | q), is_backslash = ~(((b & lows) + lows) | b);
    return (below_space | is_quote | is_backslash | x) & highs;
}

/* How many bytes of the word come before the first flagged one (in memory
 * order: the word was loaded with memcpy). */
static inline unsigned bytes_before_flag(uint64_t flags)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (unsigned)__builtin_clzll(flags) / 8;
#else
    return (unsigned)__builtin_ctzll(flags) / 8;
#endif
}

/* The body of a JSON string, unquoted. Runs of plain ASCII (no control
 * byte, quote, backslash or high bit) are copied eight bytes at a time, the
 * common case by far; a word is stored whole even when only its first
 * bytes are plain (the room, 6 * len, covers it), and the rest is escaped
 * byte by byte. */
static char *put_escaped(char *p, const unsigned char *u, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    while (i < len) {
        while (i + 8 <= len) {
            uint64_t x;
            memcpy(&x, u + i, 8);
            uint64_t flags = special_bytes(x);
            memcpy(p, u + i, 8);
            if (flags) {
                unsigned n = bytes_before_flag(flags);
                p += n;
                i += n;
                break;
            }
            p += 8;
            i += 8;
        }
        if (i >= len)
            break;
        unsigned char c = u[i];
        if (json_byte_is_plain(c)) {
            *p++ = (char)c;
            i++;
        } else if (c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = (char)c;
            i++;
        } else if (c < 0x20) {
            memcpy(p, "\\u00", 4);
            p[4] = hex[c >> 4];
            p[5] = hex[c & 15];
            p += 6;
            i++;
        } else {
            size_t bad = 0;
            size_t n = utf8_sequence(u + i, len - i, &bad);
            if (n) {
                memcpy(p, u + i, n);
                p += n;
                i += n;
            } else {
                memcpy(p, "\xEF\xBF\xBD", 3);   /* U+FFFD, 3 bytes <= bad*6 */
                p += 3;
                i += bad;
            }
        }
    }
    return p;
}

char *json_put_string(char *p, const char *s, size_t len)
{
    *p++ = '"';
    p = put_escaped(p, (const unsigned char *)s, len);
    *p++ = '"';
    return p;
}

size_t json_plain_length(const char *s, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t len = 0;
    while (len <= max && json_byte_is_plain(u[len]))
        len++;
    return len <= max && u[len] == '\0' ? len : max + 1;
}

char *json_put_cstring(char *p, const char *s, const char *readable_end)
{
    const unsigned char *u = (const unsigned char *)s;
    *p++ = '"';
    /* one pass for the common string, plain and ending in a word that can
     * be read whole: find its end and copy it together */
    while ((const char *)u + 8 <= readable_end) {
        uint64_t x;
        memcpy(&x, u, 8);
        uint64_t flags = special_bytes(x);
        memcpy(p, u, 8);
        if (flags) {
            unsigned n = bytes_before_flag(flags);
            p += n;
            u += n;
            if (*u == '\0') {
                *p++ = '"';
                return p;
            }
            break;
        }
        p += 8;
        u += 8;
    }
    p = put_escaped(p, u, strlen((const char *)u));
    *p++ = '"';
    return p;
}

void json_string_n(json_writer *w, const char *s, size_t len)
{
    before_value(w);
    /* Worst case: every byte becomes a 6-byte escape. */
    if (!reserve(w, len * 6 + 2))
        return;
    char *p = json_put_string(w->buf + w->len, s, len);
    w->len = (size_t)(p - w->buf);
    w->buf[w->len] = '\0';
}

/* "00".."99": two digits a step halves the divisions of a number */
const char json_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

char *json_put_uint(char *p, uint64_t v)
{
    if (v <= UINT32_MAX)
        return json_put_u32(p, (uint32_t)v);
    /* count the digits, then write them in place from the last: no
     * variable-length copy (a libc call) for a number of a few bytes */
    size_t n = 1;
    for (uint64_t t = v; t >= 10; t /= 10)
        n++;
    char *q = p + n;
    while (v >= 100) {
        unsigned pair = (unsigned)(v % 100);
        v /= 100;
        q -= 2;
        q[0] = json_digit_pairs[2 * pair];
        q[1] = json_digit_pairs[2 * pair + 1];
    }
    if (v >= 10) {
        q -= 2;
        q[0] = json_digit_pairs[2 * v];
        q[1] = json_digit_pairs[2 * v + 1];
    } else {
        *--q = (char)('0' + v);
    }
    return p + n;
}

char *json_raw_begin(json_writer *w, size_t max)
{
    before_value(w);
    if (!reserve(w, max))
        return NULL;
    return w->buf + w->len;
}

void json_raw_end(json_writer *w, char *end)
{
    /* within the room json_raw_begin reserved, which kept a byte for the NUL
     * (checked against the capacity: the writer does not remember `max`) */
    assert(!w->oom && end >= w->buf + w->len && end < w->buf + w->cap);
    w->len = (size_t)(end - w->buf);
    w->buf[w->len] = '\0';
}

void json_string_plain(json_writer *w, const char *s, size_t len)
{
    before_value(w);
    if (!reserve(w, len + 2))
        return;
    char *p = w->buf + w->len;
    *p++ = '"';
    memcpy(p, s, len);
    p[len] = '"';
    w->len += len + 2;
    w->buf[w->len] = '\0';
}

void json_str(json_writer *w, const char *s)
{
    if (!s) {
        json_null_value(w);
        return;
    }
    json_string_n(w, s, strlen(s));
}

void json_int(json_writer *w, int64_t v)
{
    char tmp[24];
    char *end = tmp + sizeof tmp, *p = end;
    /* Work on the magnitude as unsigned so INT64_MIN is safe. */
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    if (v < 0)
        *--p = '-';
    before_value(w);
    append(w, p, (size_t)(end - p));
}

/* printf's "%.*f" with trailing zeros trimmed, for the common case of a
 * small number (coordinates), without printf: it dominated the cost of a
 * stop's JSON. The scaled value |v| * 10^decimals is computed in double with
 * an absolute error below 2.5e-7 while it stays under 2^31, so its rounding
 * to an integer is certain unless its fraction lies within 1e-6 of one
 * half; those few cases, and anything larger, return false and take the
 * printf path. The digits are then exactly printf's. */
static bool put_fixed_small(json_writer *w, double v, int decimals)
{
    static const double pow10d[10] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    static const uint64_t pow10u[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
                                        1000000000};
    if (decimals > 9)
        return false;
    double scaled = fabs(v) * pow10d[decimals];
    if (!(scaled < 2147483648.0))
        return false;
    double whole = floor(scaled), frac = scaled - whole;
    if (fabs(frac - 0.5) < 1e-6)
        return false;
    uint64_t units = (uint64_t)whole + (frac > 0.5);
    uint64_t int_part = units / pow10u[decimals], frac_part = units % pow10u[decimals];
    before_value(w);
    if (!reserve(w, 32))
        return true;
    char *p = w->buf + w->len;
    if (v < 0 && units != 0)   /* what rounds to zero is "0", never "-0" */
        *p++ = '-';
    p = json_put_uint(p, int_part);
    if (frac_part != 0) {
        int digits = decimals;
        while (frac_part % 10 == 0) {   /* trailing zeros */
            frac_part /= 10;
            digits--;
        }
        *p++ = '.';
        for (int i = digits - 1; i >= 0; i--) {
            p[i] = (char)('0' + frac_part % 10);
            frac_part /= 10;
        }
        p += digits;
    }
    w->len = (size_t)(p - w->buf);
    w->buf[w->len] = '\0';
    return true;
}

void json_double(json_writer *w, double v, int decimals)
{
    if (!isfinite(v)) {
        json_null_value(w);
        return;
    }
    if (decimals < 0)
        decimals = 0;
    if (decimals > 17)
        decimals = 17;
    if (put_fixed_small(w, v, decimals))
        return;
    /* DBL_MAX in fixed notation is 309 digits; 17 decimals and a sign fit. */
    char tmp[352];
    int n = snprintf(tmp, sizeof tmp, "%.*f", decimals, v);
    if (n <= 0 || (size_t)n >= sizeof tmp) {
        json_null_value(w);
        return;
    }
    /* Whatever the locale made of the decimal separator (possibly several
     * bytes), it is the first run of bytes that are neither digits nor '-'. */
    size_t len = (size_t)n, i = 0;
    while (i < len && (tmp[i] == '-' || (tmp[i] >= '0' && tmp[i] <= '9')))
        i++;
    if (i < len) {
        size_t j = i;
        while (j < len && !(tmp[j] >= '0' && tmp[j] <= '9'))
            j++;
        tmp[i] = '.';
        memmove(tmp + i + 1, tmp + j, len - j);
        len = i + 1 + (len - j);
        /* trim trailing zeros, then a bare '.' */
        while (len > i + 1 && tmp[len - 1] == '0')
            len--;
        if (len == i + 1)
            len = i;
    }
    /* "-0" and "-0.0..." become "0": JSON readers would keep the sign. */
    if (len == 2 && tmp[0] == '-' && tmp[1] == '0') {
        tmp[0] = '0';
        len = 1;
    }
    before_value(w);
    append(w, tmp, len);
}

void json_bool(json_writer *w, bool v)
{
    before_value(w);
    if (v)
        append(w, "true", 4);
    else
        append(w, "false", 5);
}

void json_null_value(json_writer *w)
{
    before_value(w);
    append(w, "null", 4);
}

void json_raw(json_writer *w, const char *s, size_t len)
{
    before_value(w);
    append(w, s, len);
}


