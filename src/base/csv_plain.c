/* csv_plain.c — a hand-written splitter for plain CSV records, tried before
 * the full reader (csv_prefer_plain).
 *
 * Why it exists: a day-by-day feed lists every trip's dates one per row in
 * calendar_dates.txt (Brooklyn rewritten so: 1.45M rows of three short
 * fields, `D12345,20260105,1`), and the full reader's per-byte work (quotes,
 * blanks to trim, line-break counting, NUL and UTF-8 checks) cost a sixth of
 * what such a feed adds to an import (issue #28). Nearly every row of such a
 * file needs none of it: printable ASCII without quotes or blanks, fields
 * split at commas, a line end. stop_times.txt, most of every import, is
 * written so too. This loop takes exactly those rows, sixteen bytes at a
 * time where SSE2 is there (one table lookup a byte elsewhere, and for the
 * last bytes of a chunk); any other row (a quote, a blank, a tab, a byte
 * outside printable ASCII, a lone CR, a blank line, fewer fields than the
 * header, a record cut by the chunk's end) is handed to csv_process_record
 * as it stands, so every answer (rows, lines, rejects, errors) is the full
 * reader's. fuzz_csv_plain checks that differentially.
 */
#include "base/csv_internal.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The class of each byte: printable ASCII but '"' and ' ' is plain; every
 * byte not listed is PLAIN_OTHER (0). */
enum { PLAIN_OTHER = 0, PLAIN_BYTE, PLAIN_COMMA, PLAIN_LF, PLAIN_CR };

static const uint8_t PLAIN_CLASS[256] = {
    ['!'] = PLAIN_BYTE, ['#'] = PLAIN_BYTE, ['$'] = PLAIN_BYTE, ['%'] = PLAIN_BYTE, ['&'] = PLAIN_BYTE,
    ['\''] = PLAIN_BYTE, ['('] = PLAIN_BYTE, [')'] = PLAIN_BYTE, ['*'] = PLAIN_BYTE, ['+'] = PLAIN_BYTE,
    ['-'] = PLAIN_BYTE, ['.'] = PLAIN_BYTE, ['/'] = PLAIN_BYTE, ['0'] = PLAIN_BYTE, ['1'] = PLAIN_BYTE,
    ['2'] = PLAIN_BYTE, ['3'] = PLAIN_BYTE, ['4'] = PLAIN_BYTE, ['5'] = PLAIN_BYTE, ['6'] = PLAIN_BYTE,
    ['7'] = PLAIN_BYTE, ['8'] = PLAIN_BYTE, ['9'] = PLAIN_BYTE, [':'] = PLAIN_BYTE, [';'] = PLAIN_BYTE,
    ['<'] = PLAIN_BYTE, ['='] = PLAIN_BYTE, ['>'] = PLAIN_BYTE, ['?'] = PLAIN_BYTE, ['@'] = PLAIN_BYTE,
    ['A'] = PLAIN_BYTE, ['B'] = PLAIN_BYTE, ['C'] = PLAIN_BYTE, ['D'] = PLAIN_BYTE, ['E'] = PLAIN_BYTE,
    ['F'] = PLAIN_BYTE, ['G'] = PLAIN_BYTE, ['H'] = PLAIN_BYTE, ['I'] = PLAIN_BYTE, ['J'] = PLAIN_BYTE,
    ['K'] = PLAIN_BYTE, ['L'] = PLAIN_BYTE, ['M'] = PLAIN_BYTE, ['N'] = PLAIN_BYTE, ['O'] = PLAIN_BYTE,
    ['P'] = PLAIN_BYTE, ['Q'] = PLAIN_BYTE, ['R'] = PLAIN_BYTE, ['S'] = PLAIN_BYTE, ['T'] = PLAIN_BYTE,
    ['U'] = PLAIN_BYTE, ['V'] = PLAIN_BYTE, ['W'] = PLAIN_BYTE, ['X'] = PLAIN_BYTE, ['Y'] = PLAIN_BYTE,
    ['Z'] = PLAIN_BYTE, ['['] = PLAIN_BYTE, ['\\'] = PLAIN_BYTE, [']'] = PLAIN_BYTE, ['^'] = PLAIN_BYTE,
    ['_'] = PLAIN_BYTE, ['`'] = PLAIN_BYTE, ['a'] = PLAIN_BYTE, ['b'] = PLAIN_BYTE, ['c'] = PLAIN_BYTE,
    ['d'] = PLAIN_BYTE, ['e'] = PLAIN_BYTE, ['f'] = PLAIN_BYTE, ['g'] = PLAIN_BYTE, ['h'] = PLAIN_BYTE,
    ['i'] = PLAIN_BYTE, ['j'] = PLAIN_BYTE, ['k'] = PLAIN_BYTE, ['l'] = PLAIN_BYTE, ['m'] = PLAIN_BYTE,
    ['n'] = PLAIN_BYTE, ['o'] = PLAIN_BYTE, ['p'] = PLAIN_BYTE, ['q'] = PLAIN_BYTE, ['r'] = PLAIN_BYTE,
    ['s'] = PLAIN_BYTE, ['t'] = PLAIN_BYTE, ['u'] = PLAIN_BYTE, ['v'] = PLAIN_BYTE, ['w'] = PLAIN_BYTE,
    ['x'] = PLAIN_BYTE, ['y'] = PLAIN_BYTE, ['z'] = PLAIN_BYTE, ['{'] = PLAIN_BYTE, ['|'] = PLAIN_BYTE,
    ['}'] = PLAIN_BYTE, ['~'] = PLAIN_BYTE,
    [','] = PLAIN_COMMA, ['\n'] = PLAIN_LF, ['\r'] = PLAIN_CR};

void csv_prefer_plain(csv_parser *p)
{
    p->plain = true;
}

/* A file whose rows are mostly not plain (stop_headsign texts with blanks,
 * quoted fields) would be scanned twice, by the splitter and then the full
 * reader: once more than PLAIN_MISSES_TOLERATED rows went back, and more
 * than one row in four, the rest of it goes to the full reader alone. A
 * record cut by a chunk's end, or a blank line, is a miss as well, a few per
 * MiB. */
#define PLAIN_MISSES_TOLERATED 256

void csv_plain_missed(csv_parser *p)
{
    if (++p->plain_misses > PLAIN_MISSES_TOLERATED && p->plain_misses * 4 > p->rows)
        p->plain = false;
}

/* Field `col` of the record, [from, to): kept when it is a key's. */
static inline void plain_field(csv_parser *p, uint32_t col, const char *from, const char *to)
{
    if (col < p->ncols) {
        int8_t key = p->colmap[col];
        if (key >= 0) {
            p->fields[key].ptr = from;
            p->fields[key].len = (uint32_t)(to - from);
        }
    }
}

int csv_plain_record(csv_parser *p, const char *s, const char *end, size_t *used, bool *taken)
{
    *taken = false;
    const char *c = s, *field = s, *next;
    uint32_t col = 0;
    /* a blank line: the full reader skips it, counting the line */
    if (s < end && (*s == '\n' || *s == '\r'))
        return 0;
    for (int k = 0; k < p->nkeys; k++) {
        p->fields[k].ptr = "";
        p->fields[k].len = 0;
        p->fields[k].flags = p->has_col[k] ? 0 : CSV_FIELD_ABSENT;
    }
#if defined(__SSE2__)
    /* Sixteen bytes at a time: the commas, line ends and bytes that are not
     * plain of a block as bit masks, taken in order (the same steps as the
     * byte loop below, which finishes the last bytes before `end`). A
     * stop_times.txt row is about 70 bytes: five blocks instead of seventy
     * table lookups and branches. */
    const __m128i comma_v = _mm_set1_epi8(','), lf_v = _mm_set1_epi8('\n'), cr_v = _mm_set1_epi8('\r');
    const __m128i quote_v = _mm_set1_epi8('"'), flip = _mm_set1_epi8((char)0x80);
    /* with the sign bit flipped, a signed compare orders bytes as unsigned */
    const __m128i below = _mm_set1_epi8((char)(0x21 ^ 0x80)), above = _mm_set1_epi8((char)(0x7e ^ 0x80));
    while (end - c >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)c);
        __m128i x = _mm_xor_si128(v, flip);
        unsigned comma = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, comma_v));
        unsigned lf = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, lf_v));
        unsigned cr = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, cr_v));
        unsigned outside = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_cmplt_epi8(x, below), _mm_cmpgt_epi8(x, above)));
        unsigned other = (outside & ~(lf | cr)) | (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote_v));
        for (unsigned events = comma | lf | cr | other; events; events &= events - 1) {
            unsigned bit = events & (0u - events);
            const char *at = c + __builtin_ctz(events);
            if (bit & other)
                return 0;
            plain_field(p, col++, field, at);
            field = at + 1;
            if (bit & comma)
                continue;
            if (bit & cr) {
                if (at + 1 == end || at[1] != '\n')
                    return 0;
                next = at + 2;
            } else {
                next = at + 1;
            }
            goto record_end;
        }
        c += 16;
    }
#endif
    for (;; c++) {
        if (c == end)
            return 0;   /* cut by the chunk's end: the full reader carries it */
        uint8_t k = PLAIN_CLASS[(unsigned char)*c];
        if (k == PLAIN_BYTE)
            continue;
        if (k == PLAIN_OTHER)
            return 0;
        const char *line_end = c;
        if (k == PLAIN_CR) {
            if (c + 1 == end || c[1] != '\n')
                return 0;
            c++;
        }
        plain_field(p, col++, field, line_end);
        field = c + 1;
        if (k == PLAIN_COMMA)
            continue;
        next = c + 1;
        break;   /* the line end */
    }
record_end:
    /* fewer fields than the header: the full reader rejects the row */
    if (col < p->ncols)
        return 0;
    *used = (size_t)(next - s);
    *taken = true;
    uint64_t line = p->line++;
    p->rows++;
    int rc = p->row_fn(p->ctx, p->fields, line);
    if (rc)
        csv_set_error(p, rc, line, 0, "stopped by the row callback (%d)", rc);
    return rc;
}
