/* fuzz_calendar_dates_run.c — libFuzzer target for calendar_dates.txt's run
 * reader (src/import/calendar_dates_run.c, csv_set_run_fn), differentially.
 *
 * Why it exists: the run reader is a third way to read calendar_dates.txt's
 * rows, beside the plain splitter and the full reader, and it must give what
 * they and the row callback give: the same services numbered in the same
 * order (a row the callback rejects adds none), the same rejected lines,
 * rows counted and errors, and the same days: the additions it sets as bits
 * (day_additions, traffic_days.c) and the rows it keeps build the same day
 * sets as all the rows kept. The input is pushed in chunks whose size the
 * first byte picks (so rows straddle chunk ends) through a parser with the
 * run reader and one without; the second byte caps the services (past it
 * the lookup fails as when out of memory). Any difference, crash, leak or
 * UB is a finding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import/calendar_dates_run.h"
#include "import/traffic_days.h"
#include "transit/csv.h"
#include "transit/gtfs.h"

static const char *const KEYS[] = {"service_id", "date", "exception_type"};

typedef struct reading {
    tb_calendar_date *rows;
    size_t nrows, cap;
    char **ids;                  /* services, in the order they were first named */
    uint32_t nids, max_ids;
    uint64_t h;                  /* the lines rejected, and the result */
    calendar_dates_run run;
    day_additions adds;
    traffic_days days;
    int days_rc;
    char err[200];
} reading;

static void mix(reading *r, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        r->h = (r->h ^ b[i]) * 1099511628211ull;
    r->h = (r->h ^ n) * 1099511628211ull;
}

static uint32_t service(void *ctx, const char *id, size_t len)
{
    reading *r = ctx;
    for (uint32_t i = 0; i < r->nids; i++)
        if (strlen(r->ids[i]) == len && memcmp(r->ids[i], id, len) == 0)
            return i;
    if (r->nids == r->max_ids)
        return UINT32_MAX;
    char *copy = malloc(len + 1);
    if (!copy)
        abort();
    memcpy(copy, id, len);
    copy[len] = 0;
    r->ids[r->nids] = copy;
    return r->nids++;
}

/* What gtfs_read.c's calendar_date_row does with a row. */
static int on_row(void *ctx, const csv_field *f, uint64_t line)
{
    reading *r = ctx;
    int32_t day;
    if (f[0].len == 0 || gtfs_parse_date(f[1].ptr, f[1].len, &day) != 0 || f[2].len != 1 ||
        (f[2].ptr[0] != '1' && f[2].ptr[0] != '2')) {
        mix(r, &line, sizeof line);
        return 0;
    }
    uint32_t svc = service(r, f[0].ptr, f[0].len);
    if (svc == UINT32_MAX)
        return -1;
    if (r->nrows == r->cap && tb_grow((void **)&r->rows, &r->cap, sizeof *r->rows, r->nrows + 1) != 0)
        abort();
    r->rows[r->nrows++] = (tb_calendar_date){svc, day, (uint8_t)(f[2].ptr[0] - '0')};
    return 0;
}

static void on_reject(void *ctx, const csv_error *e)
{
    reading *r = ctx;
    mix(r, &e->line, sizeof e->line);
    mix(r, e->message, strlen(e->message));
}

static void read_all(reading *r, const char *in, size_t len, size_t chunk, uint32_t max_ids, int with_run)
{
    memset(r, 0, sizeof *r);
    r->h = 14695981039346656037ull;
    r->max_ids = max_ids;
    r->ids = malloc((max_ids + 1) * sizeof *r->ids);
    csv_parser *p = csv_open("calendar_dates.txt", KEYS, 3, on_row, r);
    if (!p || !r->ids)
        abort();
    csv_set_reject_fn(p, on_reject, r);
    csv_prefer_plain(p);
    if (with_run) {
        calendar_dates_run_init(&r->run, &r->rows, &r->nrows, &r->cap, &r->adds, service, r);
        csv_set_run_fn(p, calendar_dates_run_rows, &r->run);
    }
    int rc = 0;
    for (size_t at = 0; at < len && rc == 0; at += chunk) {
        size_t n = len - at < chunk ? len - at : chunk;
        char *copy = malloc(n);   /* nothing may be read past the chunk */
        memcpy(copy, in + at, n);
        rc = csv_feed(p, copy, n);
        free(copy);
    }
    if (rc == 0)
        rc = csv_finish(p);
    const csv_error *e = csv_last_error(p);
    uint64_t counts[3] = {csv_rows(p), csv_rejected_rows(p), e->line};
    mix(r, &rc, sizeof rc);
    mix(r, counts, sizeof counts);
    mix(r, e->message, strlen(e->message));
    csv_close(p);
    r->days_rc = traffic_days_build_adding(&r->days, NULL, 0, r->rows, r->nrows, with_run ? &r->adds : NULL,
                                           r->nids, r->err, sizeof r->err);
}

static void same_days(const reading *a, const reading *b)
{
    if (a->days_rc != b->days_rc)
        abort();
    if (a->days_rc != 0) {
        if (strcmp(a->err, b->err) != 0)
            abort();
        return;
    }
    const traffic_days *x = &a->days, *y = &b->days;
    if (x->first_day != y->first_day || x->ndays != y->ndays || x->words != y->words || x->nsets != y->nsets ||
        memcmp(x->sets, y->sets, (size_t)x->nsets * x->words * sizeof *x->sets) != 0 ||
        memcmp(x->set_of, y->set_of, a->nids * sizeof *x->set_of) != 0)
        abort();
}

static void done(reading *r)
{
    for (uint32_t i = 0; i < r->nids; i++)
        free(r->ids[i]);
    free(r->ids);
    free(r->rows);
    day_additions_free(&r->adds);
    traffic_days_free(&r->days);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t chunk = (size_t)data[0] % 64 + 1;
    uint32_t max_ids = data[1] % 16 ? data[1] % 16 : 1000;
    const char *in = (const char *)data + 2;
    size_t len = size - 2;
    static reading a, b;
    read_all(&a, in, len, chunk, max_ids, 0);
    read_all(&b, in, len, chunk, max_ids, 1);
    if (a.h != b.h || a.nids != b.nids)
        abort();
    same_days(&a, &b);
    for (uint32_t i = 0; i < a.nids; i++)
        if (strcmp(a.ids[i], b.ids[i]) != 0)
            abort();
    done(&a);
    done(&b);
    return 0;
}
