/* csv_plain.c — a hand-written splitter for plain CSV records, tried before
 * the full reader (csv_prefer_plain).
 *
 * Why it exists: a day-by-day feed lists every trip's dates one per row in
 * calendar_dates.txt (Brooklyn rewritten so: 1.45M rows of three short
 * fields, `D12345,20260105,1`), and the full reader's per-byte work (quotes,
 * blanks to trim, line-break counting, NUL and UTF-8 checks) cost a sixth of
 * what such a feed adds to an import (issue #28). Nearly every row of such a
 * file needs none of it: printable ASCII without quotes or blanks, fields
 * split at commas, a line end. This loop takes exactly those rows, with one
 * table lookup a byte; any other row (a quote, a blank, a tab, a byte
 * outside printable ASCII, a lone CR, a blank line, fewer fields than the
 * header, a record cut by the chunk's end) is handed to csv_process_record
 * as it stands, so every answer (rows, lines, rejects, errors) is the full
 * reader's. fuzz_csv_plain checks that differentially.
 */
#include "base/csv_internal.h"

#include <string.h>

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

int csv_plain_record(csv_parser *p, const char *s, const char *end, size_t *used, bool *taken)
{
    *taken = false;
    const char *c = s, *field = s;
    uint32_t col = 0;
    /* a blank line: the full reader skips it, counting the line */
    if (s < end && (*s == '\n' || *s == '\r'))
        return 0;
    for (int k = 0; k < p->nkeys; k++) {
        p->fields[k].ptr = "";
        p->fields[k].len = 0;
        p->fields[k].flags = p->has_col[k] ? 0 : CSV_FIELD_ABSENT;
    }
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
        if (col < p->ncols) {
            int8_t key = p->colmap[col];
            if (key >= 0) {
                p->fields[key].ptr = field;
                p->fields[key].len = (uint32_t)(line_end - field);
            }
        }
        col++;
        field = c + 1;
        if (k == PLAIN_COMMA)
            continue;
        break;   /* the line end */
    }
    /* fewer fields than the header: the full reader rejects the row */
    if (col < p->ncols)
        return 0;
    *used = (size_t)(c + 1 - s);
    *taken = true;
    uint64_t line = p->line++;
    p->rows++;
    int rc = p->row_fn(p->ctx, p->fields, line);
    if (rc)
        csv_set_error(p, rc, line, 0, "stopped by the row callback (%d)", rc);
    return rc;
}
