/* csv.h — a streaming, header-driven CSV reader for GTFS files.
 *
 * Why it exists: GTFS feeds are CSV, and stop_times.txt alone runs to 150 MB.
 * The importer must read it at memory speed, from chunks (zip inflate output
 * or a mapped file), without allocating per row or per field.
 *
 * Model (push, as in the book's "Faster CSV Parsing"):
 *   - the caller names the columns it wants ("keys of interest");
 *   - the first record is the header; keys are matched to columns by name,
 *     in any order; other columns are skipped without work;
 *   - bytes are pushed with csv_feed() in chunks of any size; a record may
 *     straddle chunks; memory is bounded by the longest record;
 *   - for each data record the row callback receives one csv_field per key,
 *     in key order. Views point into the chunk or into the parser's carry
 *     buffer and are valid only during the callback.
 *
 * Syntax: RFC 4180 (quotes, doubled quotes, separators and line breaks inside
 * quotes) plus what real feeds do: LF, CRLF or lone CR line ends, a UTF-8 BOM
 * before the header, a missing final newline, blank lines (skipped), and
 * spaces around unquoted fields (trimmed). Invalid UTF-8 in a key-of-interest
 * field is an error with file, line and column.
 *
 * Leniency, chosen to match what feeds in the wild contain:
 *   - a quote inside an unquoted field (`12" pipe`) is a literal byte;
 *   - anything but blanks between a closing quote and the next separator or
 *     line end is CSV_ERR_SYNTAX, as is a quote still open at the end;
 *   - a record with fewer fields than the header is rejected: it is not
 *     delivered, but counted (csv_rejected_rows) and passed to the reject
 *     callback with its line and field counts; extra fields are ignored;
 *   - a NUL byte in a key-of-interest field rejects the record the same way
 *     (names must not be cut short by C strings downstream);
 *   - a duplicated header name: the first column of that name is used;
 *   - an empty input is not an error: csv_finish returns CSV_OK with
 *     csv_header_seen() == 0 and no column found (the caller decides whether
 *     the file was required).
 * Memory: one carry buffer (a record straddling two chunks) and one buffer for
 * quoted fields holding doubled quotes; both grow to the longest record.
 */
#ifndef TRANSIT_CSV_H
#define TRANSIT_CSV_H

#include <stddef.h>
#include <stdint.h>

#define CSV_MAX_KEYS 32

typedef struct csv_field {
    const char *ptr;  /* not NUL-terminated */
    uint32_t len;
    uint32_t flags;   /* CSV_FIELD_* */
} csv_field;

enum {
    CSV_FIELD_QUOTED = 1u << 0,  /* the field was quoted */
    CSV_FIELD_ABSENT = 1u << 1,  /* the column is not in the header (len is 0) */
};

typedef struct csv_error {
    char file[64];      /* the name given to csv_open, e.g. "stop_times.txt" */
    uint64_t line;      /* 1-based physical line where the record starts */
    uint32_t column;    /* 1-based column (field index in the record); 0 if n/a */
    char message[160];
} csv_error;

/* Called once per data record. `line` is the 1-based physical line the
 * record starts on (the header is line 1). Return 0 to continue, non-zero to
 * stop parsing: csv_feed/csv_finish then return that value (and keep
 * returning it), and csv_last_error says "stopped by the row callback". */
typedef int (*csv_row_fn)(void *ctx, const csv_field *fields, uint64_t line);

typedef struct csv_parser csv_parser;

/* keys: nkeys column names (nkeys <= CSV_MAX_KEYS). The strings must outlive
 * the parser. Returns NULL only on allocation failure. */
csv_parser *csv_open(const char *filename, const char *const *keys, int nkeys,
                     csv_row_fn row_fn, void *ctx);
void csv_close(csv_parser *p);

/* Push bytes. Returns 0, or CSV_ERR_SYNTAX / CSV_ERR_UTF8 / CSV_ERR_NOMEM
 * (details in csv_last_error), or the callback's non-zero return. */
int csv_feed(csv_parser *p, const char *buf, size_t len);

/* End of input: flushes a last record without a final newline; reports an
 * unterminated quote. Same return values as csv_feed. */
int csv_finish(csv_parser *p);

enum { CSV_OK = 0, CSV_ERR_SYNTAX = -1, CSV_ERR_UTF8 = -2, CSV_ERR_NOMEM = -3, CSV_ERR_NOHEADER = -4,
       CSV_ERR_IO = -5 /* feed_parse_csv: the bytes could not be read */ };

/* Called for each rejected record (see "Leniency" above): e->line is its
 * first line, e->column the field (for a short record: how many it has), and
 * e->message says why. Parsing goes on. */
typedef void (*csv_reject_fn)(void *ctx, const csv_error *e);
void csv_set_reject_fn(csv_parser *p, csv_reject_fn fn, void *ctx);
/* Records rejected so far. */
uint64_t csv_rejected_rows(const csv_parser *p);

/* Rows that are plain (printable ASCII without quotes or blanks, at least
 * the header's fields, one line each) are split by a hand-written loop
 * first (csv_plain.c); every other row by the full reader. The rows, lines,
 * rejects and errors delivered are the same either way: it only saves time
 * on files of many plain rows (calendar_dates.txt, stop_times.txt). When
 * more than a quarter of the rows are not plain, the rest of the file goes
 * to the full reader alone. */
void csv_prefer_plain(csv_parser *p);
/* A reader of runs of rows in one fixed form, for a file whose header is
 * exactly the keys, in key order (with any other header it is never called).
 * At each record start after the header it is offered the bytes [s, end)
 * before the other readers, and takes as many whole rows as are in its form
 * (each one line, ended by LF or CRLF before `end`), delivering them itself:
 * it sets *used to their bytes and *rows to their count, and returns 0 or a
 * non-zero value to stop, like csv_row_fn (the row after those is then the
 * one it stopped at: its line is the error's, and it counts as delivered,
 * as with the row callback). `line` is the first row's line. The row it
 * stops before goes to the plain splitter or the full reader and the row
 * callback, so it need take only the rows whose meaning it knows for sure. */
typedef int (*csv_run_fn)(void *ctx, const char *s, const char *end, uint64_t line, size_t *used, uint64_t *rows);
void csv_set_run_fn(csv_parser *p, csv_run_fn fn, void *ctx);

/* After the header was read: whether key i was found in the header. */
int csv_has_column(const csv_parser *p, int key);
/* Whether the header has been read (csv_finish on an empty input leaves 0). */
int csv_header_seen(const csv_parser *p);
const csv_error *csv_last_error(const csv_parser *p);
/* Data records delivered so far, and input bytes consumed. */
uint64_t csv_rows(const csv_parser *p);
uint64_t csv_bytes(const csv_parser *p);

/* Whole-buffer parsing across threads. The buffer holds a complete file.
 * Parses the header, splits the body at record boundaries (aware of quotes:
 * a split point is accepted only where the quote parity from the start of the
 * body says it is outside quotes), and parses the parts on up to `nthreads`
 * threads. row_fn is called concurrently from several threads, each with its
 * own part index; within one part rows arrive in file order, and parts are
 * numbered in file order. ctxs[i] is the context for part i (ctxs has room for
 * nthreads). Split points are exact for any input the streaming parser
 * accepts: quote parity, counted per part in parallel, is used where every
 * quote it takes for an opening one starts a field (always so for RFC 4180
 * input); a part holding a literal quote inside an unquoted field has its
 * quotes walked with the parser's own rules instead. Line numbers are the
 * same as streaming would give.
 * A part is at least 256 KiB, so a small buffer is parsed as one part on the
 * calling thread.
 * Returns the number of parts used (>= 1), a negative CSV_ERR_*, or a row_fn's
 * non-zero return (so stop with a negative value other than the CSV_ERR_*s);
 * on error *err is filled: the error of the first part, in file order, that
 * failed. A failing part stops the parts after it, never the ones before. */
typedef int (*csv_part_row_fn)(void *ctx, const csv_field *fields, uint64_t line);
int csv_parse_parallel(const char *filename, const char *buf, size_t len,
                       const char *const *keys, int nkeys,
                       csv_part_row_fn row_fn, void **ctxs, int nthreads,
                       int *has_column /* out: nkeys flags */, csv_error *err);

#endif
