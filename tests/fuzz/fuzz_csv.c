/* fuzz_csv.c — libFuzzer target for the CSV reader (src/base/csv.c).
 *
 * Why it exists: every byte of a feed goes through csv_feed first. The input
 * is pushed in chunks whose size the first byte picks (so records straddle
 * chunk ends, the carry buffer and the CR/LF split are exercised), through a
 * streaming parser and through csv_parse_parallel on one thread; both must
 * agree on the rows delivered. Any crash, leak or UB is a finding.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transit/csv.h"

static const char *const KEYS[] = {"stop_id", "stop_name", "stop_lat", "arrival_time", "x"};
enum { NKEYS = sizeof KEYS / sizeof *KEYS };

typedef struct count {
    uint64_t rows, bytes, rejected;
} count;

static int on_row(void *ctx, const csv_field *f, uint64_t line)
{
    count *c = ctx;
    (void)line;
    c->rows++;
    for (int k = 0; k < NKEYS; k++) {
        /* touch every byte of every view: ASan catches a view out of bounds */
        for (uint32_t i = 0; i < f[k].len; i++)
            c->bytes += (unsigned char)f[k].ptr[i];
        if (f[k].len && memchr(f[k].ptr, 0, f[k].len))
            abort();   /* a NUL in a key field must have been rejected */
    }
    return 0;
}

static void on_reject(void *ctx, const csv_error *e)
{
    count *c = ctx;
    if (e->line == 0)
        abort();
    c->rejected++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t chunk = (size_t)data[0] % 64 + 1;
    const char *in = (const char *)data + 1;
    size_t len = size - 1;

    count streamed = {0};
    csv_parser *p = csv_open("fuzz.txt", KEYS, NKEYS, on_row, &streamed);
    if (!p)
        return 0;
    csv_set_reject_fn(p, on_reject, &streamed);
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
    if (rc == 0 && csv_rows(p) != streamed.rows)
        abort();
    csv_close(p);

    count par = {0};
    void *ctxs[1] = {&par};
    int has[CSV_MAX_KEYS];
    csv_error err;
    char *copy = malloc(len ? len : 1);
    memcpy(copy, in, len);
    int prc = csv_parse_parallel("fuzz.txt", copy, len, KEYS, NKEYS, on_row, ctxs, 1, has, &err);
    free(copy);
    /* the two readers accept the same inputs and deliver the same rows */
    if ((rc == 0) != (prc >= 0))
        abort();
    if (rc == 0 && (par.rows != streamed.rows || par.bytes != streamed.bytes))
        abort();
    return 0;
}
