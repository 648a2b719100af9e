/* fuzz_csv_plain.c — libFuzzer target for the plain-row splitter
 * (src/base/csv_plain.c, csv_prefer_plain), differentially.
 *
 * Why it exists: the splitter is a second, hand-written way to read rows,
 * and it must never answer otherwise than the full reader (src/base/csv.c):
 * the same rows with the same fields and lines, the same rejects, the same
 * result and error. The input is pushed in chunks whose size the first byte
 * picks (so rows straddle chunk ends) through a parser with and one without
 * it, and a digest of everything each delivered is compared. The second byte
 * picks a row after which the callback stops (0: never). Any difference,
 * crash, leak or UB is a finding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transit/csv.h"

static const char *const KEYS[] = {"service_id", "date", "exception_type", "absent"};
enum { NKEYS = sizeof KEYS / sizeof *KEYS };

typedef struct digest {
    uint64_t h, rows, rejects;
    uint64_t stop_after;
} digest;

static void mix(digest *d, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        d->h = (d->h ^ b[i]) * 1099511628211ull;
    d->h = (d->h ^ n) * 1099511628211ull;
}

static int on_row(void *ctx, const csv_field *f, uint64_t line)
{
    digest *d = ctx;
    mix(d, &line, sizeof line);
    for (int k = 0; k < NKEYS; k++) {
        mix(d, f[k].ptr, f[k].len);   /* touches every byte: ASan catches a view out of bounds */
        mix(d, &f[k].flags, sizeof f[k].flags);
    }
    return ++d->rows == d->stop_after ? 7 : 0;
}

static void on_reject(void *ctx, const csv_error *e)
{
    digest *d = ctx;
    d->rejects++;
    mix(d, &e->line, sizeof e->line);
    mix(d, &e->column, sizeof e->column);
    mix(d, e->message, strlen(e->message));
}

static digest run(const char *in, size_t len, size_t chunk, uint64_t stop_after, int plain)
{
    digest d = {14695981039346656037ull, 0, 0, stop_after};
    csv_parser *p = csv_open("calendar_dates.txt", KEYS, NKEYS, on_row, &d);
    if (!p)
        abort();
    csv_set_reject_fn(p, on_reject, &d);
    if (plain)
        csv_prefer_plain(p);
    int rc = 0;
    for (size_t at = 0; at < len && rc == 0; at += chunk) {
        size_t n = len - at < chunk ? len - at : chunk;
        char *copy = malloc(n);   /* views must not outlive their chunk */
        memcpy(copy, in + at, n);
        rc = csv_feed(p, copy, n);
        free(copy);
    }
    if (rc == 0)
        rc = csv_finish(p);
    const csv_error *e = csv_last_error(p);
    mix(&d, &rc, sizeof rc);
    mix(&d, &e->line, sizeof e->line);
    mix(&d, &e->column, sizeof e->column);
    mix(&d, e->message, strlen(e->message));
    uint64_t counts[3] = {csv_rows(p), csv_rejected_rows(p), (uint64_t)csv_header_seen(p)};
    mix(&d, counts, sizeof counts);
    for (int k = 0; k < NKEYS; k++) {
        int has = csv_has_column(p, k);
        mix(&d, &has, sizeof has);
    }
    csv_close(p);
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t chunk = (size_t)data[0] % 64 + 1;
    uint64_t stop_after = data[1] % 16;
    const char *in = (const char *)data + 2;
    size_t len = size - 2;
    digest full = run(in, len, chunk, stop_after, 0);
    digest plain = run(in, len, chunk, stop_after, 1);
    if (full.h != plain.h || full.rows != plain.rows || full.rejects != plain.rejects)
        abort();
    return 0;
}
