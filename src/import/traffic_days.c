/* traffic_days.c — every service's days as a bitset over the feed's dates,
 * identical bitsets kept once (see traffic_days.h).
 *
 * Why it exists: the one place where calendar.txt and calendar_dates.txt
 * become days, for both stores, and where a feed's thousands of per-trip
 * services fold into its few distinct sets of days.
 */
#include "import/traffic_days.h"

#include "import/tt_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transit/gtfs.h"

/* qsort has no context argument in C11; the comparator's context is per thread. */
static _Thread_local const uint64_t *g_bits;
static _Thread_local uint32_t g_words;
static _Thread_local const uint32_t *g_first;   /* per distinct set: the first service that has it */

/* Distinct sets (by index) in the order of their words. */
static int cmp_set_bits(const void *a, const void *b)
{
    uint32_t x = g_first[*(const uint32_t *)a], y = g_first[*(const uint32_t *)b];
    return memcmp(g_bits + (size_t)x * g_words, g_bits + (size_t)y * g_words, g_words * sizeof *g_bits);
}

static uint64_t hash_words(const uint64_t *w, uint32_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < n; i++) {
        h = (h ^ w[i]) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    return h;
}

static int fail(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "%s", what);
    return -1;
}

/* The date range of every row; -1 with err when empty or too long. */
static int date_range(const tb_calendar *cal, size_t ncal, const tb_calendar_date *dates, size_t ndates,
                      int32_t *lo_out, int32_t *hi_out, char *err, size_t errlen)
{
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    for (size_t i = 0; i < ncal; i++) {
        if (cal[i].start < lo) lo = cal[i].start;
        if (cal[i].end > hi) hi = cal[i].end;
    }
    for (size_t i = 0; i < ndates; i++) {
        if (dates[i].date < lo) lo = dates[i].date;
        if (dates[i].date > hi) hi = dates[i].date;
    }
    if (lo > hi) return fail(err, errlen, "calendar.txt/calendar_dates.txt: no service dates");
    if ((int64_t)hi - lo > 366 * 50)
        return fail(err, errlen, "calendar.txt/calendar_dates.txt: service dates span more than 50 years");
    *lo_out = lo;
    *hi_out = hi;
    return 0;
}

/* Each service's bits, in bits[service * words ...]. */
static void fill_bits(uint64_t *bits, uint32_t words, int32_t lo, const tb_calendar *cal, size_t ncal,
                      const tb_calendar_date *dates, size_t ndates)
{
    for (size_t i = 0; i < ncal; i++) {
        const tb_calendar *c = &cal[i];
        uint64_t *b = bits + (size_t)c->service * words;
        int wd = weekday_from_days(c->start);
        for (int32_t d = c->start; d <= c->end; d++, wd = wd == 6 ? 0 : wd + 1)
            if (c->weekdays & (1u << wd)) b[(d - lo) / 64] |= 1ull << ((d - lo) % 64);
    }
    for (int pass = 1; pass <= 2; pass++) {
        for (size_t i = 0; i < ndates; i++) {
            const tb_calendar_date *c = &dates[i];
            if (c->type != pass) continue;
            uint64_t *b = bits + (size_t)c->service * words;
            uint64_t bit = 1ull << ((c->date - lo) % 64);
            if (pass == 1) b[(c->date - lo) / 64] |= bit;
            else b[(c->date - lo) / 64] &= ~bit;
        }
    }
}

int traffic_days_build(traffic_days *out, const tb_calendar *cal, size_t ncal, const tb_calendar_date *dates,
                       size_t ndates, uint32_t nservices, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int32_t lo, hi;
    if (date_range(cal, ncal, dates, ndates, &lo, &hi, err, errlen)) return -1;
    uint32_t ndays = (uint32_t)(hi - lo + 1), words = (ndays + 63) / 64;
    if (nservices > (1u << 30)) return fail(err, errlen, "calendar.txt/calendar_dates.txt: more than 2^30 services");
    uint64_t *bits = calloc((size_t)nservices * words + 1, sizeof *bits);
    /* the distinct sets are found by hashing each service's words once (a
     * day-by-day feed has as many services as trips, and a handful of sets);
     * only those few are sorted */
    uint32_t nslots = 16;
    while (nslots < 2 * (uint64_t)nservices) nslots <<= 1;
    uint32_t *slot = calloc(nslots, sizeof *slot);                         /* distinct set + 1, or 0 */
    uint32_t *first = malloc(((size_t)nservices + 1) * sizeof *first);     /* per distinct set */
    uint32_t *order = malloc(((size_t)nservices + 1) * sizeof *order);     /* distinct sets, sorted */
    out->set_of = malloc(((size_t)nservices + 1) * sizeof *out->set_of);
    if (!bits || !slot || !first || !order || !out->set_of) goto oom;
    fill_bits(bits, words, lo, cal, ncal, dates, ndates);
    uint32_t nsets = 0;
    for (uint32_t s = 0; s < nservices; s++) {
        const uint64_t *w = bits + (size_t)s * words;
        uint32_t i = (uint32_t)hash_words(w, words) & (nslots - 1);
        for (;; i = (i + 1) & (nslots - 1)) {
            if (!slot[i]) {
                first[nsets] = s;
                slot[i] = ++nsets;
                break;
            }
            if (memcmp(bits + (size_t)first[slot[i] - 1] * words, w, words * sizeof *w) == 0) break;
        }
        out->set_of[s] = slot[i] - 1;   /* for now the set's number in order of first appearance */
    }
    for (uint32_t k = 0; k < nsets; k++) order[k] = k;
    g_bits = bits;
    g_words = words;
    g_first = first;
    qsort(order, nsets, sizeof *order, cmp_set_bits);
    /* slot's first nsets entries become each set's rank in the sorted order */
    for (uint32_t r = 0; r < nsets; r++) slot[order[r]] = r;
    for (uint32_t s = 0; s < nservices; s++) out->set_of[s] = slot[out->set_of[s]];
    out->sets = malloc(((size_t)nsets * words + 1) * sizeof *out->sets);
    if (!out->sets) goto oom;
    for (uint32_t r = 0; r < nsets; r++)
        memcpy(out->sets + (size_t)r * words, bits + (size_t)first[order[r]] * words, words * sizeof *bits);
    free(slot);
    free(first);
    free(bits);
    free(order);
    out->first_day = lo;
    out->ndays = ndays;
    out->words = words;
    out->nsets = nsets;
    return 0;
oom:
    free(bits);
    free(slot);
    free(first);
    free(order);
    traffic_days_free(out);
    return fail(err, errlen, "out of memory while computing the services' days");
}

void traffic_days_free(traffic_days *t)
{
    free(t->sets);
    free(t->set_of);
    memset(t, 0, sizeof *t);
}
