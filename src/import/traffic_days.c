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

/* ------------------------------------------------------------------ additions as bits */

#define ADDS_FIRST_WORDS 4u                    /* 256 days: a season's feed; a year's moves the bits once */
#define TRAFFIC_DAYS_MAX_SPAN (366 * 50)         /* days from the first to the last: past it, no build */

static int32_t floor64(int32_t day) { return (int32_t)((int64_t)day - (((int64_t)day % 64) + 64) % 64); }

int day_additions_grow_add(day_additions *a, uint32_t service, int32_t day)
{
    uint32_t words = a->words, cap = a->cap;
    int32_t base = a->base;
    if (words == 0) {
        words = ADDS_FIRST_WORDS;
        base = floor64(day) - 64;   /* a word before the first day, the rest after */
        a->lo = a->hi = day;
    }
    if ((int64_t)(day > a->hi ? day : a->hi) - (day < a->lo ? day : a->lo) > TRAFFIC_DAYS_MAX_SPAN) {
        /* a span no build accepts: only its bounds are kept, so that the
         * build fails as it would with the rows */
        if (day < a->lo) a->lo = day;
        if (day > a->hi) a->hi = day;
        return 0;
    }
    /* the range doubled towards the day until it fits (the span is
     * bounded, so within a few times) */
    while ((int64_t)day < base || (int64_t)day >= (int64_t)base + (int64_t)words * 64) {
        if (day < base) base -= (int32_t)words * 64;
        words *= 2;
    }
    if (service >= (1u << 30)) return -1;   /* no build takes that many services */
    while (service >= cap) cap = cap ? cap * 2 : 1024;
    if (words != a->words || base != a->base || cap != a->cap) {
        uint64_t *bits = calloc((size_t)cap * words + 1, sizeof *bits);
        if (!bits) return -1;
        uint32_t shift = a->words ? (uint32_t)((a->base - base) / 64) : 0;
        for (uint32_t s = 0; s < a->nservices; s++)
            memcpy(bits + (size_t)s * words + shift, a->bits + (size_t)s * a->words, a->words * sizeof *bits);
        free(a->bits);
        a->bits = bits;
        a->words = words;
        a->base = base;
        a->cap = cap;
    }
    if (service >= a->nservices) a->nservices = service + 1;
    return day_additions_add(a, service, day);
}

void day_additions_free(day_additions *a)
{
    free(a->bits);
    memset(a, 0, sizeof *a);
}

/* ------------------------------------------------------------------ the sets */

/* The date range of every row and addition; -1 with err when empty or too long. */
static int date_range(const tb_calendar *cal, size_t ncal, const tb_calendar_date *dates, size_t ndates,
                      const day_additions *adds, int32_t *lo_out, int32_t *hi_out, char *err, size_t errlen)
{
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    if (adds && adds->words) {
        lo = adds->lo;
        hi = adds->hi;
    }
    for (size_t i = 0; i < ncal; i++) {
        if (cal[i].start < lo) lo = cal[i].start;
        if (cal[i].end > hi) hi = cal[i].end;
    }
    for (size_t i = 0; i < ndates; i++) {
        if (dates[i].date < lo) lo = dates[i].date;
        if (dates[i].date > hi) hi = dates[i].date;
    }
    if (lo > hi) return fail(err, errlen, "calendar.txt/calendar_dates.txt: no service dates");
    if ((int64_t)hi - lo > TRAFFIC_DAYS_MAX_SPAN)
        return fail(err, errlen, "calendar.txt/calendar_dates.txt: service dates span more than 50 years");
    *lo_out = lo;
    *hi_out = hi;
    return 0;
}

/* The additions' bits, moved from their base to day `lo`, into bits. */
static void fill_added_bits(uint64_t *bits, uint32_t words, int32_t lo, const day_additions *adds)
{
    int64_t shift = (int64_t)adds->base - lo;   /* bit i of a service's words is day lo + i + shift */
    for (uint32_t s = 0; s < adds->nservices; s++) {
        const uint64_t *from = adds->bits + (size_t)s * adds->words;
        uint64_t *to = bits + (size_t)s * words;
        for (uint32_t w = 0; w < adds->words; w++) {
            for (uint64_t x = from[w]; x; x &= x - 1) {   /* days lie in [lo, lo + 64 * words) */
                int64_t d = (int64_t)w * 64 + __builtin_ctzll(x) + shift;
                to[d / 64] |= 1ull << (d % 64);
            }
        }
    }
}

/* Each service's bits, in bits[service * words ...]. */
static void fill_bits(uint64_t *bits, uint32_t words, int32_t lo, const tb_calendar *cal, size_t ncal,
                      const tb_calendar_date *dates, size_t ndates, const day_additions *adds)
{
    for (size_t i = 0; i < ncal; i++) {
        const tb_calendar *c = &cal[i];
        uint64_t *b = bits + (size_t)c->service * words;
        int wd = weekday_from_days(c->start);
        for (int32_t d = c->start; d <= c->end; d++, wd = wd == 6 ? 0 : wd + 1)
            if (c->weekdays & (1u << wd)) b[(d - lo) / 64] |= 1ull << ((d - lo) % 64);
    }
    /* the additions, then the removals (a day-by-day feed has none: one
     * pass over its rows) */
    if (adds && adds->words) fill_added_bits(bits, words, lo, adds);
    size_t removals = 0;
    for (size_t i = 0; i < ndates; i++) {
        const tb_calendar_date *c = &dates[i];
        if (c->type != 1) {
            removals++;
            continue;
        }
        bits[(size_t)c->service * words + (uint32_t)(c->date - lo) / 64] |= 1ull << ((uint32_t)(c->date - lo) % 64);
    }
    for (size_t i = 0; i < ndates && removals; i++) {
        const tb_calendar_date *c = &dates[i];
        if (c->type == 1) continue;
        removals--;
        bits[(size_t)c->service * words + (uint32_t)(c->date - lo) / 64] &= ~(1ull << ((uint32_t)(c->date - lo) % 64));
    }
}

int traffic_days_build(traffic_days *out, const tb_calendar *cal, size_t ncal, const tb_calendar_date *dates,
                       size_t ndates, uint32_t nservices, char *err, size_t errlen)
{
    return traffic_days_build_adding(out, cal, ncal, dates, ndates, NULL, nservices, err, errlen);
}

int traffic_days_build_adding(traffic_days *out, const tb_calendar *cal, size_t ncal, const tb_calendar_date *dates,
                              size_t ndates, const day_additions *adds, uint32_t nservices, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int32_t lo, hi;
    if (date_range(cal, ncal, dates, ndates, adds, &lo, &hi, err, errlen)) return -1;
    if (adds && adds->nservices > nservices)
        return fail(err, errlen, "calendar_dates.txt: a day added to an unknown service");
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
    fill_bits(bits, words, lo, cal, ncal, dates, ndates, adds);
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
