/* csv_internal.h — what the streaming reader (csv.c) and its parallel
 * driver (csv_parallel.c) share. Private to src/base.
 *
 * Why it exists: the parallel driver runs clones of one streaming parser
 * over the parts of a buffer, so it needs the parser's state, its record
 * delivery and the byte classes its split points must agree with; nothing
 * outside the CSV reader may see them.
 */
#ifndef TRANSIT_CSV_INTERNAL_H
#define TRANSIT_CSV_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transit/csv.h"

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

    bool plain;          /* csv_prefer_plain: rows are tried by csv_plain_record first */
    uint64_t plain_misses;   /* rows csv_plain_record left to the full reader */
    csv_run_fn run_fn;   /* csv_set_run_fn; NULL once the header is not exactly the keys */
    void *run_ctx;
    bool run_checked;    /* the header was compared with the keys */
    uint64_t line;       /* physical line where the next record starts */
    uint64_t rows, bytes;
    csv_error err;
    csv_field fields[CSV_MAX_KEYS];
    uint32_t esc_off[CSV_MAX_KEYS];   /* offset into esc for fields flagged in esc_mask */
};


/* The UTF-8 byte order mark a file may start with. */
extern const char csv_bom[3];

/* Bytes that end an unquoted field: ',', '\n' and '\r'. */
extern const uint8_t csv_is_delim[256];

static inline bool csv_is_blank(char c) { return c == ' ' || c == '\t'; }

/* Records an error in p->err and makes it sticky; returns `code`. */
int csv_set_error(csv_parser *p, int code, uint64_t line, uint32_t column, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Parses and delivers one record (header or row) starting at s. `final`: the
 * input ends at `end`. Returns 0 with *used = the record's bytes,
 * REC_INCOMPLETE when more input is needed, a CSV_ERR_* (p->err set), or the
 * row callback's non-zero return. */
int csv_process_record(csv_parser *p, const char *s, const char *end, bool final, size_t *used);

/* csv_plain.c: when the data record at s is plain (printable ASCII
 * without quotes or blanks, at least the header's fields, ended by LF or
 * CRLF before `end`), delivers it, sets *taken and *used (its bytes) and
 * returns 0 or the row callback's non-zero return; otherwise does nothing
 * (*taken false, returns 0): csv_process_record takes it. */
int csv_plain_record(csv_parser *p, const char *s, const char *end, size_t *used, bool *taken);

/* csv_plain.c: the record csv_plain_record just left goes to the full
 * reader; when that is the rule rather than the exception in this file,
 * the splitter is not tried again (p->plain off). */
void csv_plain_missed(csv_parser *p);

/* csv_feed after the BOM check: delivers every complete record of
 * [buf, buf+len) and carries the rest over. */
int csv_feed_data(csv_parser *p, const char *buf, size_t len);

#endif
