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
 * csv_parse_parallel (csv_parallel.c) runs clones of this parser over the
 * parts of a whole buffer, one thread each.
 */
#include "base/csv_internal.h"

#include <assert.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ------------------------------------------------------------------ helpers */

static const char empty_str[1] = "";

const char csv_bom[3] = { '\xEF', '\xBB', '\xBF' };

const uint8_t csv_is_delim[256] = { [','] = 1, ['\n'] = 1, ['\r'] = 1 };

int csv_set_error(csv_parser *p, int code, uint64_t line, uint32_t column, const char *fmt, ...)
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
    while (len && csv_is_blank(*s)) { s++; len--; }
    while (len && csv_is_blank(s[len - 1])) len--;
    if (col >= p->colmap_cap) {
        size_t cap = p->colmap_cap;
        char *map = (char *)p->colmap;
        if (!grow(&map, &cap, (size_t)col + 1))
            return csv_set_error(p, CSV_ERR_NOMEM, p->line, col + 1,
                                 "out of memory reading the header");
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

/* Takes field `col`, [fs, fe), of the record being parsed: a header name, or
 * the view of a key of interest (unescaped into p->esc at *esc_used when it
 * holds a doubled quote, its bit then set in *mask). 0 or CSV_ERR_NOMEM.
 * Only this part of parse_record is a function of its own: moving the quoted
 * field's scan out too cost 1.3% of bench_csv's single-thread speed. */
static inline int take_field(csv_parser *p, bool header, uint32_t col, const char *fs,
                             const char *fe, uint32_t flags, bool doubled, size_t *esc_used,
                             uint32_t *mask)
{
    if (header) {
        const char *hs = fs;
        size_t hl = (size_t)(fe - fs);
        if (doubled) {
            if (!grow(&p->esc, &p->esc_cap, hl))
                return csv_set_error(p, CSV_ERR_NOMEM, p->line, col + 1, "out of memory");
            hl = unescape(p->esc, fs, fe);
            hs = p->esc;
        }
        return header_field(p, col, hs, hl);
    }
    if (col >= p->ncols || p->colmap[col] < 0)
        return 0;
    int k = p->colmap[col];
    csv_field *f = &p->fields[k];
    f->flags = flags;
    if (doubled) {
        if (!grow(&p->esc, &p->esc_cap, *esc_used + (size_t)(fe - fs)))
            return csv_set_error(p, CSV_ERR_NOMEM, p->line, col + 1, "out of memory");
        size_t n = unescape(p->esc + *esc_used, fs, fe);
        p->esc_off[k] = (uint32_t)*esc_used;
        f->len = (uint32_t)n;
        *esc_used += n;
        *mask |= 1u << k;
    } else {
        f->ptr = fs;
        f->len = (uint32_t)(fe - fs);
    }
    return 0;
}

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

        while (c < end && csv_is_blank(*c))
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
                    return csv_set_error(p, CSV_ERR_SYNTAX, p->line, col + 1,
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
            while (c < end && csv_is_blank(*c))
                c++;
            if (c == end) {
                if (!final)
                    return REC_INCOMPLETE;
            } else if (!csv_is_delim[(uint8_t)*c]) {
                return csv_set_error(p, CSV_ERR_SYNTAX, p->line, col + 1,
                                     "unexpected character '%c' after a closing quote",
                                     (*c >= 0x20 && *c < 0x7f) ? *c : '?');
            }
            only_empty = false;
        } else {
            fs = c;
            c = skip_to_any3(c, end, ',', '\n', '\r');
            while (c < end && !csv_is_delim[(uint8_t)*c])
                c++;
            if (c == end && !final)
                return REC_INCOMPLETE;
            fe = c;
            while (fe > fs && csv_is_blank(fe[-1]))
                fe--;
            if (fe != fs)
                only_empty = false;
        }
        int rc = take_field(p, header, col, fs, fe, flags, doubled, &esc_used, &mask);
        if (rc)
            return rc;
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
int csv_process_record(csv_parser *p, const char *s, const char *end, bool final, size_t *used)
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
                return csv_set_error(p, CSV_ERR_UTF8, line, p->key_col[k] + 1,
                                     "invalid UTF-8 in field '%s'", p->keys[k]);
        }
    }
    p->rows++;
    rc = p->row_fn(p->ctx, p->fields, line);
    if (rc)
        csv_set_error(p, rc, line, 0, "stopped by the row callback (%d)", rc);
    return rc;
}

static int carry_append(csv_parser *p, const char *buf, size_t n)
{
    if (!grow(&p->carry, &p->carry_cap, p->carry_len + n))
        return csv_set_error(p, CSV_ERR_NOMEM, p->line, 0,
                             "out of memory (record of %zu bytes)", p->carry_len + n);
    memcpy(p->carry + p->carry_len, buf, n);
    p->carry_len += n;
    return 0;
}

/* csv_set_run_fn's reader, offered the bytes at a record start: 0 with
 * *used its rows' bytes, or its non-zero return (the error set). */
static int take_run(csv_parser *p, const char *s, const char *end, size_t *used)
{
    *used = 0;
    if (!p->run_checked) {
        p->run_checked = true;
        bool exact = p->ncols == (uint32_t)p->nkeys;
        for (int k = 0; k < p->nkeys && exact; k++)
            exact = p->has_col[k] && p->key_col[k] == (uint32_t)k;
        if (!exact) {
            p->run_fn = NULL;
            return 0;
        }
    }
    uint64_t rows = 0;
    int rc = p->run_fn(p->run_ctx, s, end, p->line, used, &rows);
    assert(*used <= (size_t)(end - s) && rows <= *used);
    p->line += rows;
    p->rows += rows;
    if (rc) {   /* at the row it stopped at, counted as the row callback's would be */
        p->rows++;
        csv_set_error(p, rc, p->line, 0, "stopped by the row callback (%d)", rc);
    }
    return rc;
}

int csv_feed_data(csv_parser *p, const char *buf, size_t len)
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
        rc = csv_process_record(p, p->carry, p->carry + p->carry_len, false, &used);
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
    bool try_run = p->run_fn != NULL;   /* kept in a register: most files have none */
    while (i < len) {
        size_t used;
        if (try_run && p->header_seen) {
            int rc = take_run(p, buf + i, buf + len, &used);
            i += used;
            if (rc)
                return rc;
            try_run = p->run_fn != NULL;
            if (i == len)
                break;
        }
        bool taken = false, try_plain = p->plain && p->header_seen;
        int rc = try_plain ? csv_plain_record(p, buf + i, buf + len, &used, &taken) : 0;
        if (!taken) {
            if (try_plain)
                csv_plain_missed(p);
            rc = csv_process_record(p, buf + i, buf + len, false, &used);
        }
        if (rc == REC_INCOMPLETE)
            return carry_append(p, buf + i, len - i);
        if (rc)
            return rc;
        i += used;
    }
    return 0;
}

int csv_feed(csv_parser *p, const char *buf, size_t len)
{
    if (p->status)
        return p->status;
    if (p->finished)
        return csv_set_error(p, CSV_ERR_SYNTAX, p->line, 0, "csv_feed after csv_finish");
    p->bytes += len;
    if (p->bom_pos < 3) {
        while (len && p->bom_pos < 3 && buf[0] == csv_bom[p->bom_pos]) {
            buf++;
            len--;
            p->bom_pos++;
        }
        if (p->bom_pos < 3) {
            if (!len)
                return 0;   /* maybe the rest of a BOM comes next */
            int matched = p->bom_pos;
            p->bom_pos = 3;
            int rc = matched ? csv_feed_data(p, csv_bom, (size_t)matched) : 0;
            if (rc)
                return rc;
        }
    }
    return csv_feed_data(p, buf, len);
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
        int rc = matched ? csv_feed_data(p, csv_bom, (size_t)matched) : 0;
        if (rc)
            return rc;
    }
    p->finished = true;
    if (p->carry_len) {
        size_t used;
        int rc = csv_process_record(p, p->carry, p->carry + p->carry_len, true, &used);
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

void csv_set_run_fn(csv_parser *p, csv_run_fn fn, void *ctx)
{
    p->run_fn = fn;
    p->run_ctx = ctx;
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

