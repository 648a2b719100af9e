/* csv.c — the streaming, header-driven CSV reader (see csv.h).
 *
 * One record parser, parse_record(), works on a contiguous byte range that
 * holds a record start. It either finishes the record (and reports how many
 * bytes it used), or says the range ends inside the record. csv_feed runs it
 * straight over the caller's chunk; only a record that straddles two chunks is
 * copied into the carry buffer, and it is parsed again from the carry once a
 * line-end byte has arrived (a record can only end at one). Fields of
 * interest become views into the chunk or the carry; a quoted field holding a
 * doubled quote is unescaped into the `esc` buffer. Nothing is allocated per
 * row: the carry and esc buffers grow to the longest record and stay.
 *
 * csv_parse_parallel splits a whole buffer at record boundaries: each
 * slice's quote parity is computed in parallel (64 bytes at a time), checked against
 * the parser's own quote rules, and where it cannot be trusted the quotes of
 * that slice are walked exactly; then one parser clone per part runs on its
 * own thread.
 */
#include "transit/csv.h"

#include <assert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { REC_INCOMPLETE = 1 };   /* parse_record: the range ends inside the record */

struct csv_parser {
    char filename[64];
    const char *const *keys;
    int nkeys;
    uint32_t keylen[CSV_MAX_KEYS];
    csv_row_fn row_fn;
    void *ctx;
    csv_reject_fn reject_fn;   /* may be NULL */
    void *reject_ctx;
    uint64_t rejected;

    /* header */
    bool header_seen;
    bool has_col[CSV_MAX_KEYS];
    uint32_t key_col[CSV_MAX_KEYS];   /* 0-based column of each found key */
    int8_t *colmap;                   /* column -> key index, or -1 */
    uint32_t ncols, colmap_cap;

    /* input state */
    int status;          /* sticky: 0, a CSV_ERR_*, or the callback's return */
    bool skip_lf;        /* the last record ended with CR at a chunk's end */
    bool finished;
    int bom_pos;         /* BOM bytes matched so far; 3 when the check is over */
    char *carry;
    size_t carry_len, carry_cap;
    char *esc;           /* unescaped quoted fields of the current record */
    size_t esc_cap;

    uint64_t line;       /* physical line where the next record starts */
    uint64_t rows, bytes;
    csv_error err;
    csv_field fields[CSV_MAX_KEYS];
    uint32_t esc_off[CSV_MAX_KEYS];   /* offset into esc for fields flagged in esc_mask */
};

/* ------------------------------------------------------------------ helpers */

static const char empty_str[1] = "";

/* Bytes that end an unquoted field. */
static const uint8_t is_delim[256] = { [','] = 1, ['\n'] = 1, ['\r'] = 1 };

static inline bool is_blank(char c) { return c == ' ' || c == '\t'; }

static int set_error(csv_parser *p, int code, uint64_t line, uint32_t column, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int set_error(csv_parser *p, int code, uint64_t line, uint32_t column, const char *fmt, ...)
{
    snprintf(p->err.file, sizeof p->err.file, "%s", p->filename);
    p->err.line = line;
    p->err.column = column;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err.message, sizeof p->err.message, fmt, ap);
    va_end(ap);
    p->status = code;
    return code;
}

static bool grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    char *b = realloc(*buf, n);
    if (!b)
        return false;
    *buf = b;
    *cap = n;
    return true;
}

/* Physical line ends in [s, e): LF, CRLF, lone CR. A CR as the last byte
 * counts as a line end (the record's own terminator never lies in the range).
 * Written so that the compiler vectorizes it: it runs over whole slices in
 * csv_parse_parallel. */
static uint64_t count_line_ends(const char *s, const char *e)
{
    const uint8_t *u = (const uint8_t *)s;
    size_t len = (size_t)(e - s);
    if (!len)
        return 0;
    uint64_t n = 0;
    for (size_t i = 0; i + 1 < len;) {
        size_t stop = len - 1 - i > 255 ? i + 255 : len - 1;
        uint8_t block = 0;   /* byte-wide, so 16 or 32 lanes per vector */
        for (; i < stop; i++)
            block += (uint8_t)((u[i] == '\n') | ((u[i] == '\r') & (u[i + 1] != '\n')));
        n += block;
    }
    return n + (u[len - 1] == '\n' || u[len - 1] == '\r');
}

/* Whether [s, s+n) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
static bool utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else
            return false;
        if (n - i < len || s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
        i += len;
    }
    return true;
}

static bool all_ascii(const char *s, size_t n)
{
    uint64_t acc = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        acc |= w;
    }
    for (; i < n; i++)
        acc |= (uint8_t)s[i];
    return (acc & 0x8080808080808080ull) == 0;
}

/* Copies [s, e) into dst replacing each doubled quote by one; returns the length. */
static size_t unescape(char *dst, const char *s, const char *e)
{
    char *d = dst;
    while (s < e) {
        char c = *s++;
        *d++ = c;
        if (c == '"' && s < e && *s == '"')
            s++;
    }
    return (size_t)(d - dst);
}

/* Skips ahead to the first of the bytes x, y, z at or after c, by whole
 * blocks: returns that byte's position, or where the whole blocks ended (the
 * caller finishes bytewise). Fields are short (GTFS: 1 to 40 bytes), so the
 * first block usually holds the answer. Never reads at or past `end`. */
static inline const char *skip_to_any3(const char *c, const char *end, char x, char y, char z)
{
#if defined(__SSE2__)
    const __m128i vx = _mm_set1_epi8(x), vy = _mm_set1_epi8(y), vz = _mm_set1_epi8(z);
    while (end - c >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)c);
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, vx), _mm_cmpeq_epi8(v, vy)),
                                   _mm_cmpeq_epi8(v, vz));
        unsigned mask = (unsigned)_mm_movemask_epi8(hit);
        if (mask)
            return c + __builtin_ctz(mask);
        c += 16;
    }
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* eight bytes at a time; the lowest flagged byte of "has a zero byte"
     * is exact (false flags only appear above a true one) */
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (end - c >= 8) {
        uint64_t w;
        memcpy(&w, c, 8);
        uint64_t a = w ^ (ones * (uint8_t)x), b = w ^ (ones * (uint8_t)y), d = w ^ (ones * (uint8_t)z);
        uint64_t hit = (((a - ones) & ~a) | ((b - ones) & ~b) | ((d - ones) & ~d)) & highs;
        if (hit)
            return c + (__builtin_ctzll(hit) >> 3);
        c += 8;
    }
#endif
    (void)end, (void)x, (void)y, (void)z;
    return c;
}

/* ------------------------------------------------------------------ header */

static int header_field(csv_parser *p, uint32_t col, const char *s, size_t len)
{
    while (len && is_blank(*s)) { s++; len--; }
    while (len && is_blank(s[len - 1])) len--;
    if (col >= p->colmap_cap) {
        size_t cap = p->colmap_cap;
        char *map = (char *)p->colmap;
        if (!grow(&map, &cap, (size_t)col + 1))
            return set_error(p, CSV_ERR_NOMEM, p->line, col + 1, "out of memory reading the header");
        p->colmap = (int8_t *)map;
        p->colmap_cap = (uint32_t)cap;
    }
    p->colmap[col] = -1;
    for (int k = 0; k < p->nkeys; k++) {
        if (!p->has_col[k] && p->keylen[k] == len && memcmp(p->keys[k], s, len) == 0) {
            p->has_col[k] = true;
            p->key_col[k] = col;
            p->colmap[col] = (int8_t)k;
            break;
        }
    }
    p->ncols = col + 1;
    return 0;
}

/* ------------------------------------------------------------------ records */

/* Parses the record starting at s. `final`: the input ends at `end`.
 * Returns 0 with *used = bytes of the record including its line end,
 * REC_INCOMPLETE when more input is needed, or a CSV_ERR_* (p->err set).
 * On success *blank tells an empty line, *nlines its physical line ends
 * (terminator included), and p->fields hold the keys' views (fields that were
 * unescaped hold offsets into p->esc, listed in *esc_mask). */
static int parse_record(csv_parser *p, const char *s, const char *end, bool final, size_t *used,
                        bool *blank, uint64_t *nlines, uint32_t *esc_mask, uint32_t *nfields)
{
    const bool header = !p->header_seen;
    const char *c = s;
    uint32_t col = 0;
    uint64_t lines = 0;
    size_t esc_used = 0;
    uint32_t mask = 0;
    bool only_empty = true;

    if (header)   /* an earlier try may have stopped inside the header */
        memset(p->has_col, 0, sizeof p->has_col);
    for (int k = 0; k < p->nkeys; k++) {
        p->fields[k].ptr = empty_str;
        p->fields[k].len = 0;
        p->fields[k].flags = p->has_col[k] ? 0 : CSV_FIELD_ABSENT;
    }

    for (;;) {
        const char *fs, *fe;
        uint32_t flags = 0;
        bool doubled = false;

        while (c < end && is_blank(*c))
            c++;
        if (c < end && *c == '"') {
            flags = CSV_FIELD_QUOTED;
            fs = ++c;
            for (;;) {
                /* to the next quote, counting the line breaks on the way */
                c = skip_to_any3(c, end, '"', '\n', '\r');
                while (c < end && *c != '"' && *c != '\n' && *c != '\r')
                    c++;
                if (c == end) {
                    if (!final)
                        return REC_INCOMPLETE;
                    return set_error(p, CSV_ERR_SYNTAX, p->line, col + 1,
                                     "unterminated quoted field at end of file");
                }
                if (*c != '"') {
                    /* LF, or CR not followed by LF (CRLF counts at its LF) */
                    lines += *c == '\n' || (c + 1 < end && c[1] != '\n');
                    c++;
                    continue;
                }
                if (c + 1 == end && !final)
                    return REC_INCOMPLETE;   /* a doubled quote or the close? */
                if (c + 1 < end && c[1] == '"') {
                    doubled = true;
                    c += 2;
                    continue;
                }
                fe = c++;
                break;
            }
            while (c < end && is_blank(*c))
                c++;
            if (c == end) {
                if (!final)
                    return REC_INCOMPLETE;
            } else if (!is_delim[(uint8_t)*c]) {
                return set_error(p, CSV_ERR_SYNTAX, p->line, col + 1,
                                 "unexpected character '%c' after a closing quote",
                                 (*c >= 0x20 && *c < 0x7f) ? *c : '?');
            }
            only_empty = false;
        } else {
            fs = c;
            c = skip_to_any3(c, end, ',', '\n', '\r');
            while (c < end && !is_delim[(uint8_t)*c])
                c++;
            if (c == end && !final)
                return REC_INCOMPLETE;
            fe = c;
            while (fe > fs && is_blank(fe[-1]))
                fe--;
            if (fe != fs)
                only_empty = false;
        }

        if (header) {
            const char *hs = fs;
            size_t hl = (size_t)(fe - fs);
            if (doubled) {
                if (!grow(&p->esc, &p->esc_cap, hl))
                    return set_error(p, CSV_ERR_NOMEM, p->line, col + 1, "out of memory");
                hl = unescape(p->esc, fs, fe);
                hs = p->esc;
            }
            int rc = header_field(p, col, hs, hl);
            if (rc)
                return rc;
        } else if (col < p->ncols && p->colmap[col] >= 0) {
            int k = p->colmap[col];
            csv_field *f = &p->fields[k];
            f->flags = flags;
            if (doubled) {
                if (!grow(&p->esc, &p->esc_cap, esc_used + (size_t)(fe - fs)))
                    return set_error(p, CSV_ERR_NOMEM, p->line, col + 1, "out of memory");
                size_t n = unescape(p->esc + esc_used, fs, fe);
                p->esc_off[k] = (uint32_t)esc_used;
                f->len = (uint32_t)n;
                esc_used += n;
                mask |= 1u << k;
            } else {
                f->ptr = fs;
                f->len = (uint32_t)(fe - fs);
            }
        }
        col++;

        if (c == end)   /* final: the last record has no line end */
            break;
        if (*c == ',') {
            c++;
            continue;
        }
        lines++;
        if (*c++ == '\r') {
            if (c < end) {
                if (*c == '\n')
                    c++;
            } else if (!final) {
                p->skip_lf = true;   /* a LF at the start of the next chunk belongs here */
            }
        }
        break;
    }
    *used = (size_t)(c - s);
    *blank = col == 1 && only_empty;
    *nlines = lines;
    *esc_mask = mask;
    *nfields = col;
    return 0;
}

/* A record that is not delivered: counted, and passed to the reject callback. */
static void reject(csv_parser *p, uint64_t line, uint32_t column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reject(csv_parser *p, uint64_t line, uint32_t column, const char *fmt, ...)
{
    p->rejected++;
    if (!p->reject_fn)
        return;
    csv_error e;
    memset(&e, 0, sizeof e);
    snprintf(e.file, sizeof e.file, "%s", p->filename);
    e.line = line;
    e.column = column;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    p->reject_fn(p->reject_ctx, &e);
}

/* The key whose field holds a NUL byte, or -1. */
static int key_with_nul(const csv_parser *p)
{
    for (int k = 0; k < p->nkeys; k++)
        if (p->fields[k].len && memchr(p->fields[k].ptr, 0, p->fields[k].len))
            return k;
    return -1;
}

/* Parses and delivers one record (header or row). Same returns as
 * parse_record, plus the callback's non-zero return. */
static int process_record(csv_parser *p, const char *s, const char *end, bool final, size_t *used)
{
    bool blank;
    uint64_t nlines;
    uint32_t esc_mask, nfields;
    int rc = parse_record(p, s, end, final, used, &blank, &nlines, &esc_mask, &nfields);
    if (rc)
        return rc;
    /* once per record; the byte loops of parse_record have none */
    assert(*used <= (size_t)(end - s));
    uint64_t line = p->line;
    p->line += nlines ? nlines : 1;   /* a final record without a line end still took a line */
    if (blank)
        return 0;
    if (!p->header_seen) {
        p->header_seen = true;
        return 0;
    }
    for (uint32_t m = esc_mask; m; m &= m - 1) {
        int k = __builtin_ctz(m);
        assert(k < p->nkeys);
        p->fields[k].ptr = p->esc + p->esc_off[k];
    }
    if (nfields < p->ncols) {
        reject(p, line, nfields, "row has %u field(s), the header has %u; row skipped", nfields,
               p->ncols);
        return 0;
    }
    if (memchr(s, 0, *used)) {   /* rare: look at the keys' fields only then */
        int k = key_with_nul(p);
        if (k >= 0) {
            reject(p, line, p->key_col[k] + 1, "NUL byte in field '%s'; row skipped", p->keys[k]);
            return 0;
        }
    }
    if (!all_ascii(s, *used) || esc_mask) {
        for (int k = 0; k < p->nkeys; k++) {
            const csv_field *f = &p->fields[k];
            if (!utf8_valid((const uint8_t *)f->ptr, f->len))
                return set_error(p, CSV_ERR_UTF8, line, p->key_col[k] + 1,
                                 "invalid UTF-8 in field '%s'", p->keys[k]);
        }
    }
    p->rows++;
    rc = p->row_fn(p->ctx, p->fields, line);
    if (rc)
        set_error(p, rc, line, 0, "stopped by the row callback (%d)", rc);
    return rc;
}

static int carry_append(csv_parser *p, const char *buf, size_t n)
{
    if (!grow(&p->carry, &p->carry_cap, p->carry_len + n))
        return set_error(p, CSV_ERR_NOMEM, p->line, 0, "out of memory (record of %zu bytes)",
                         p->carry_len + n);
    memcpy(p->carry + p->carry_len, buf, n);
    p->carry_len += n;
    return 0;
}

/* The body of csv_feed, after the BOM check. */
static int feed_data(csv_parser *p, const char *buf, size_t len)
{
    size_t i = 0;
    if (p->skip_lf && len) {
        p->skip_lf = false;
        if (buf[0] == '\n')
            i = 1;
    }
    /* Finish a record begun in an earlier chunk: it can only end at a line-end
     * byte, so append up to each one and try again. */
    while (p->carry_len && i < len) {
        size_t e = i;
        while (e < len && buf[e] != '\n' && buf[e] != '\r')
            e++;
        if (e == len)
            return carry_append(p, buf + i, len - i);
        int rc = carry_append(p, buf + i, e + 1 - i);
        if (rc)
            return rc;
        i = e + 1;
        size_t used;
        rc = process_record(p, p->carry, p->carry + p->carry_len, false, &used);
        if (rc == REC_INCOMPLETE)
            continue;
        if (rc)
            return rc;
        p->carry_len = 0;
        if (p->skip_lf && i < len) {
            p->skip_lf = false;
            if (buf[i] == '\n')
                i++;
        }
    }
    while (i < len) {
        size_t used;
        int rc = process_record(p, buf + i, buf + len, false, &used);
        if (rc == REC_INCOMPLETE)
            return carry_append(p, buf + i, len - i);
        if (rc)
            return rc;
        i += used;
    }
    return 0;
}

static const char bom[3] = { '\xEF', '\xBB', '\xBF' };

int csv_feed(csv_parser *p, const char *buf, size_t len)
{
    if (p->status)
        return p->status;
    if (p->finished)
        return set_error(p, CSV_ERR_SYNTAX, p->line, 0, "csv_feed after csv_finish");
    p->bytes += len;
    if (p->bom_pos < 3) {
        while (len && p->bom_pos < 3 && buf[0] == bom[p->bom_pos]) {
            buf++;
            len--;
            p->bom_pos++;
        }
        if (p->bom_pos < 3) {
            if (!len)
                return 0;   /* maybe the rest of a BOM comes next */
            int matched = p->bom_pos;
            p->bom_pos = 3;
            int rc = matched ? feed_data(p, bom, (size_t)matched) : 0;
            if (rc)
                return rc;
        }
    }
    return feed_data(p, buf, len);
}

int csv_finish(csv_parser *p)
{
    if (p->status)
        return p->status;
    if (p->finished)
        return 0;
    if (p->bom_pos < 3) {
        int matched = p->bom_pos;
        p->bom_pos = 3;
        int rc = matched ? feed_data(p, bom, (size_t)matched) : 0;
        if (rc)
            return rc;
    }
    p->finished = true;
    if (p->carry_len) {
        size_t used;
        int rc = process_record(p, p->carry, p->carry + p->carry_len, true, &used);
        if (rc)
            return rc;
        p->carry_len = 0;
    }
    return 0;
}

/* ------------------------------------------------------------------ lifecycle */

csv_parser *csv_open(const char *filename, const char *const *keys, int nkeys, csv_row_fn row_fn,
                     void *ctx)
{
    if (nkeys < 0 || nkeys > CSV_MAX_KEYS)
        return NULL;
    csv_parser *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    snprintf(p->filename, sizeof p->filename, "%s", filename ? filename : "");
    p->keys = keys;
    p->nkeys = nkeys;
    for (int k = 0; k < nkeys; k++)
        p->keylen[k] = (uint32_t)strlen(keys[k]);
    p->row_fn = row_fn;
    p->ctx = ctx;
    p->line = 1;
    return p;
}

void csv_close(csv_parser *p)
{
    if (!p)
        return;
    free(p->colmap);
    free(p->carry);
    free(p->esc);
    free(p);
}

int csv_has_column(const csv_parser *p, int key)
{
    return key >= 0 && key < p->nkeys && p->has_col[key];
}

int csv_header_seen(const csv_parser *p) { return p->header_seen; }
const csv_error *csv_last_error(const csv_parser *p) { return &p->err; }
uint64_t csv_rows(const csv_parser *p) { return p->rows; }
uint64_t csv_rejected_rows(const csv_parser *p) { return p->rejected; }

void csv_set_reject_fn(csv_parser *p, csv_reject_fn fn, void *ctx)
{
    p->reject_fn = fn;
    p->reject_ctx = ctx;
}
uint64_t csv_bytes(const csv_parser *p) { return p->bytes; }

/* ------------------------------------------------------------------ parallel */

/* Where records start. The exact rule, the quote walk: a quote outside a
 * quoted field opens one when it is the field's first non-blank byte and is
 * a literal byte otherwise; inside, a doubled quote is a literal and a single
 * one closes. This is what parse_record does, so a boundary found this way is
 * one the parser agrees with (for valid input; a syntax error is reported by
 * the parser of the part that holds it). */

static bool opens_field(const char *b, size_t q)
{
    while (q > 0 && is_blank(b[q - 1]))
        q--;
    return q == 0 || b[q - 1] == ',' || b[q - 1] == '\n' || b[q - 1] == '\r';
}

/* Processes the quote at q in state *in. Returns where the next event may start. */
static size_t quote_step(const char *b, size_t len, size_t q, bool *in)
{
    if (!*in) {
        *in = opens_field(b, q);
        return q + 1;
    }
    if (q + 1 < len && b[q + 1] == '"')
        return q + 2;
    *in = false;
    return q + 1;
}

/* Bit i set when p[i] is a quote. */
static uint64_t quote_mask(const char *p, size_t n)
{
    uint64_t m = 0;
#if defined(__SSE2__)
    if (n == 64) {
        const __m128i q = _mm_set1_epi8('"');
        for (int i = 0; i < 4; i++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
            m |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, q)) << (16 * i);
        }
        return m;
    }
#endif
    for (size_t i = 0; i < n; i++)
        m |= (uint64_t)(p[i] == '"') << i;
    return m;
}

/* The exact quote state at `to`, walking the quotes of [from, to) from
 * state `in`. Sequential; used for a slice whose parity cannot be trusted. */
static bool quote_walk(const char *b, size_t len, size_t from, size_t to, bool in)
{
    size_t pos = from;
    const char *hit;
    while (pos < to && (hit = memchr(b + pos, '"', to - pos)) != NULL)
        pos = quote_step(b, len, (size_t)(hit - b), &in);
    return in;
}

static inline uint64_t prefix_xor(uint64_t x)
{
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

/* Bit i set when p[i] is ',', '\n' or '\r' (a field starts after it). */
static uint64_t sep_mask(const char *p, size_t n)
{
    uint64_t m = 0;
#if defined(__SSE2__)
    if (n == 64) {
        const __m128i comma = _mm_set1_epi8(','), lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
        for (int i = 0; i < 4; i++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
            __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, comma), _mm_cmpeq_epi8(v, lf)),
                                       _mm_cmpeq_epi8(v, cr));
            m |= (uint64_t)(uint16_t)_mm_movemask_epi8(hit) << (16 * i);
        }
        return m;
    }
#endif
    for (size_t i = 0; i < n; i++)
        m |= (uint64_t)is_delim[(uint8_t)p[i]] << i;
    return m;
}

/* Whether every quote in `m` (bits relative to `at`) opens a field. */
static bool all_open_fields(const char *b, size_t at, uint64_t m)
{
    for (; m; m &= m - 1)
        if (!opens_field(b, at + (size_t)__builtin_ctzll(m)))
            return false;
    return true;
}

/* Quote parity of [from, to), 64 bytes at a time (prefix XOR of the quote
 * bits gives "inside quotes" at every byte). Parity is the parser's state
 * exactly when every quote that parity takes for an opening one really opens
 * a field; a literal quote inside an unquoted field breaks that. So for each
 * starting state the scan also says whether its openers all sit at a field's
 * start (`clean`); if not, the caller walks that slice exactly. */
static void parity_scan(const char *b, size_t from, size_t to, bool *odd_out, bool clean[2])
{
    bool odd = false;
    clean[0] = clean[1] = true;
    size_t at = from;
    while (at < to) {
        size_t n = to - at < 64 ? to - at : 64;
        uint64_t q = quote_mask(b + at, n);
        if (!q) {
            at += n;
            const char *hit = at < to ? memchr(b + at, '"', to - at) : NULL;
            if (!hit)
                break;
            at = (size_t)(hit - b);
            continue;
        }
        uint64_t starts = sep_mask(b + at, n) << 1 | (uint64_t)(at == 0 || is_delim[(uint8_t)b[at - 1]]);
        uint64_t inside = prefix_xor(q) ^ (odd ? ~0ull : 0);   /* after each byte, from state 0 */
        uint64_t before = inside ^ q;                          /* before each quote */
        if (clean[0] && (q & ~before & ~starts))
            clean[0] = all_open_fields(b, at, q & ~before & ~starts);
        if (clean[1] && (q & before & ~starts))
            clean[1] = all_open_fields(b, at, q & before & ~starts);
        odd = (inside >> (n - 1)) & 1;
        at += n;
    }
    *odd_out = odd;
}

/* The first record boundary at or after t, given the quote state at t. */
static size_t next_boundary(const char *b, size_t len, size_t t, bool in)
{
    size_t pos = t;
    for (;;) {
        if (in) {
            const char *hit = memchr(b + pos, '"', len - pos);
            if (!hit)
                return len;
            pos = quote_step(b, len, (size_t)(hit - b), &in);
            continue;
        }
        size_t e = pos;
        while (e < len && b[e] != '\n' && b[e] != '\r' && b[e] != '"')
            e++;
        if (e == len)
            return len;
        if (b[e] == '"') {
            pos = quote_step(b, len, e, &in);
            continue;
        }
        if (b[e] == '\r' && e + 1 < len && b[e + 1] == '\n')
            e++;
        return e + 1;
    }
}

#define PARALLEL_MAX_PARTS 64
#define PARALLEL_MIN_PART (256u << 10)   /* smaller parts are not worth a thread */
#define PART_FEED (4u << 20)             /* a part is fed in pieces, to notice an abort */

typedef struct part_job {
    /* phase 1 */
    const char *buf;
    size_t len, from, to;   /* slice */
    bool odd, clean[2];
    uint64_t line_ends;
    /* phase 2 */
    csv_parser *parser;
    size_t start, stop;     /* part */
    int index, last;
    atomic_int *abort_before;   /* parts with an index above this stop */
    int rc;
} part_job;

static void *phase1(void *arg)
{
    part_job *j = arg;
    parity_scan(j->buf, j->from, j->to, &j->odd, j->clean);
    j->line_ends = count_line_ends(j->buf + j->from, j->buf + j->to);
    /* count_line_ends took a CR at the slice's end as a line end; undo it if
     * a LF follows in the next slice (that LF was counted there). */
    if (j->to > j->from && j->to < j->len && j->buf[j->to - 1] == '\r' && j->buf[j->to] == '\n')
        j->line_ends--;
    return NULL;
}

static void *phase2(void *arg)
{
    part_job *j = arg;
    csv_parser *p = j->parser;
    int rc = 0;
    for (size_t at = j->start; at < j->stop && !rc;) {
        if (atomic_load_explicit(j->abort_before, memory_order_relaxed) < j->index) {
            j->rc = 0;
            return NULL;
        }
        size_t n = j->stop - at < PART_FEED ? j->stop - at : PART_FEED;
        rc = feed_data(p, j->buf + at, n);
        at += n;
    }
    if (!rc && j->last)
        rc = csv_finish(p);
    else if (!rc && p->carry_len)   /* cannot happen when the split is right */
        rc = set_error(p, CSV_ERR_SYNTAX, p->line, 0, "record crosses a parallel split point");
    if (rc) {
        int cur = atomic_load(j->abort_before);
        while (j->index < cur && !atomic_compare_exchange_weak(j->abort_before, &cur, j->index))
            ;
    }
    j->rc = rc;
    return NULL;
}

static void run_jobs(void *(*fn)(void *), part_job *jobs, int n)
{
    pthread_t tid[PARALLEL_MAX_PARTS];
    bool started[PARALLEL_MAX_PARTS] = { false };
    for (int i = 1; i < n; i++)
        started[i] = pthread_create(&tid[i], NULL, fn, &jobs[i]) == 0;
    fn(&jobs[0]);
    for (int i = 1; i < n; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            fn(&jobs[i]);
    }
}


int csv_parse_parallel(const char *filename, const char *buf, size_t len, const char *const *keys,
                       int nkeys, csv_part_row_fn row_fn, void **ctxs, int nthreads,
                       int *has_column, csv_error *err)
{
    csv_error spare;
    if (!err)
        err = &spare;
    csv_parser *hp = csv_open(filename, keys, nkeys, row_fn, ctxs[0]);
    if (!hp) {
        memset(err, 0, sizeof *err);
        snprintf(err->file, sizeof err->file, "%s", filename ? filename : "");
        snprintf(err->message, sizeof err->message, "out of memory");
        return CSV_ERR_NOMEM;
    }
    int rc = 0, nparts = 1;
    if (len == 0)
        buf = empty_str;
    size_t at = 0;
    if (len >= 3 && memcmp(buf, bom, 3) == 0)
        at = 3;
    hp->bom_pos = 3;
    hp->bytes = len;

    /* the header (and any blank lines before it) */
    while (!hp->header_seen && at < len) {
        size_t used;
        rc = process_record(hp, buf + at, buf + len, true, &used);
        if (rc)
            goto out;
        at += used;
    }
    const size_t body = at, blen = len - body;

    nparts = nthreads < 1 ? 1 : nthreads;
    if (nparts > PARALLEL_MAX_PARTS)
        nparts = PARALLEL_MAX_PARTS;
    if ((size_t)nparts > blen / PARALLEL_MIN_PART)
        nparts = (int)(blen / PARALLEL_MIN_PART);
    if (nparts <= 1) {
        nparts = 1;
        rc = feed_data(hp, buf + body, blen);
        if (!rc)
            rc = csv_finish(hp);
        goto out;
    }

    /* phase 1, in parallel: slices of equal size (a slice never starts right
     * after a quote, so no doubled quote straddles two); each slice's quote
     * parity, whether parity can be trusted from either starting state, and
     * its line ends */
    part_job jobs[PARALLEL_MAX_PARTS];
    memset(jobs, 0, sizeof jobs);
    size_t cut[PARALLEL_MAX_PARTS + 1];
    cut[0] = body;
    for (int i = 1; i < nparts; i++) {
        size_t t = body + blen / (size_t)nparts * (size_t)i;
        while (t < len && buf[t - 1] == '"')
            t++;
        cut[i] = t < cut[i - 1] ? cut[i - 1] : t;
    }
    cut[nparts] = len;
    for (int i = 0; i < nparts; i++) {
        jobs[i].buf = buf;
        jobs[i].len = len;
        jobs[i].from = cut[i];
        jobs[i].to = cut[i + 1];
    }
    run_jobs(phase1, jobs, nparts);

    /* sequential and short: the true state at each cut, the first record
     * boundary after it, and the physical line that record starts on */
    size_t start[PARALLEL_MAX_PARTS + 1];
    uint64_t line[PARALLEL_MAX_PARTS];
    bool in = false;
    uint64_t line_at_cut = hp->line;
    start[0] = body;
    line[0] = hp->line;
    for (int i = 1; i < nparts; i++) {
        const part_job *prev = &jobs[i - 1];
        in = prev->clean[in] ? in ^ prev->odd : quote_walk(buf, len, prev->from, prev->to, in);
        line_at_cut += jobs[i - 1].line_ends;
        start[i] = next_boundary(buf, len, cut[i], in);
        line[i] = line_at_cut + count_line_ends(buf + cut[i], buf + start[i]);
    }
    start[nparts] = len;

    /* phase 2, in parallel: one parser clone per part */
    atomic_int abort_before = PARALLEL_MAX_PARTS;
    for (int i = 0; i < nparts; i++) {
        csv_parser *p = hp;
        if (i > 0) {
            p = malloc(sizeof *p);
            if (!p) {
                for (int k = 1; k < i; k++) {
                    jobs[k].parser->colmap = NULL;
                    csv_close(jobs[k].parser);
                }
                rc = set_error(hp, CSV_ERR_NOMEM, 0, 0, "out of memory");
                goto out;
            }
            *p = *hp;   /* the header state; its own carry and esc buffers */
            p->carry = p->esc = NULL;
            p->carry_cap = p->esc_cap = 0;
            p->ctx = ctxs[i];
        }
        p->line = line[i];
        jobs[i].parser = p;
        jobs[i].start = start[i];
        jobs[i].stop = start[i + 1];
        jobs[i].index = i;
        jobs[i].last = start[i + 1] == len;   /* an unclosed quote runs to the end */
        jobs[i].abort_before = &abort_before;
    }
    run_jobs(phase2, jobs, nparts);
    for (int i = 0; i < nparts && !rc; i++) {
        if (jobs[i].rc) {
            rc = jobs[i].rc;
            *err = jobs[i].parser->err;
        }
    }
    for (int i = 1; i < nparts; i++) {
        jobs[i].parser->colmap = NULL;   /* hp's */
        csv_close(jobs[i].parser);
    }
    goto done;

out:
    if (rc)
        *err = hp->err;
done:
    if (has_column)
        for (int k = 0; k < nkeys; k++)
            has_column[k] = hp->has_col[k];
    csv_close(hp);
    return rc ? rc : nparts;
}
