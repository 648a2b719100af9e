/* diag.c — counting the problems an import skipped, with a few examples
 * (see diag.h). Only the bad-row path comes here, so one mutex is enough. */
#include "transit/diag.h"

#include <stdio.h>
#include <string.h>

static const char *const kind_names[DIAG_KIND_COUNT] = {
    [DIAG_BAD_TIME] = "bad_time",
    [DIAG_BAD_DATE] = "bad_date",
    [DIAG_BAD_NUMBER] = "bad_number",
    [DIAG_BAD_COORDINATE] = "bad_coordinate",
    [DIAG_UNKNOWN_STOP] = "unknown_stop",
    [DIAG_UNKNOWN_TRIP] = "unknown_trip",
    [DIAG_UNKNOWN_ROUTE] = "unknown_route",
    [DIAG_UNKNOWN_SERVICE] = "unknown_service",
    [DIAG_UNKNOWN_AGENCY] = "unknown_agency",
    [DIAG_DUPLICATE_ID] = "duplicate_id",
    [DIAG_MISSING_VALUE] = "missing_value",
    [DIAG_BAD_SEQUENCE] = "bad_sequence",
    [DIAG_UNTIMED_TRIP] = "untimed_trip",
    [DIAG_IGNORED_FILE] = "ignored_file",
    [DIAG_BAD_VALUE] = "bad_value",
    [DIAG_BAD_ROW] = "bad_row",
};

void diag_init(diag *d)
{
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->lock, NULL);
}

void diag_destroy(diag *d) { pthread_mutex_destroy(&d->lock); }

void diag_mark_take(diag *d, diag_mark *m)
{
    pthread_mutex_lock(&d->lock);
    memcpy(m->count, d->count, sizeof m->count);
    m->nexamples = d->nexamples;
    memcpy(m->examples, d->examples, sizeof m->examples);
    memcpy(m->example_kind, d->example_kind, sizeof m->example_kind);
    pthread_mutex_unlock(&d->lock);
}

void diag_mark_restore(diag *d, const diag_mark *m)
{
    pthread_mutex_lock(&d->lock);
    memcpy(d->count, m->count, sizeof d->count);
    d->nexamples = m->nexamples;
    memcpy(d->examples, m->examples, sizeof d->examples);
    memcpy(d->example_kind, m->example_kind, sizeof d->example_kind);
    pthread_mutex_unlock(&d->lock);
}

const char *diag_kind_name(diag_kind k)
{
    return (unsigned)k < DIAG_KIND_COUNT ? kind_names[k] : "unknown";
}

/* Length of the well-formed UTF-8 sequence at p (1..4), or 0. */
static unsigned utf8_seq(const unsigned char *p)
{
    unsigned c = p[0], len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (unsigned k = 2; k < len; k++)
        if ((p[k] & 0xC0) != 0x80)
            return 0;
    return len;
}

/* Makes s valid UTF-8 in place, for JSON: a sequence cut off by truncation at
 * the end is dropped, and any other byte that does not start a well-formed
 * sequence becomes '?'. */
static void utf8_sanitize(char *s)
{
    size_t n = strlen(s), i = n;
    unsigned conts = 0;
    while (i > 0 && conts < 3 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        conts++;
    }
    if (i > 0) {
        unsigned c = (unsigned char)s[i - 1];
        unsigned want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        if (want > conts + 1)
            s[i - 1] = 0;
    }
    for (unsigned char *p = (unsigned char *)s; *p;) {
        unsigned len = utf8_seq(p);   /* stops at the NUL: it is no continuation byte */
        if (len) {
            p += len;
        } else {
            *p++ = '?';
        }
    }
}

/* Where a new example of `kind` goes, or -1 to drop it. Called locked. */
static int example_slot(diag *d, diag_kind kind)
{
    if (d->nexamples < DIAG_EXAMPLES)
        return d->nexamples++;
    if (d->count[kind] > 1)
        return -1;   /* this kind has its example already */
    int per_kind[DIAG_KIND_COUNT] = { 0 };
    for (int i = 0; i < DIAG_EXAMPLES; i++)
        per_kind[d->example_kind[i]]++;
    for (int i = DIAG_EXAMPLES - 1; i >= 0; i--) {
        if (per_kind[d->example_kind[i]] > 1) {
            /* keep the found-order: close the gap, append at the end */
            memmove(d->examples[i], d->examples[i + 1], sizeof d->examples[0] * (size_t)(DIAG_EXAMPLES - 1 - i));
            memmove(&d->example_kind[i], &d->example_kind[i + 1], (size_t)(DIAG_EXAMPLES - 1 - i));
            return DIAG_EXAMPLES - 1;
        }
    }
    return -1;
}

void diag_add(diag *d, diag_kind kind, const char *file, uint64_t line, const char *fmt, ...)
{
    if ((unsigned)kind >= DIAG_KIND_COUNT)
        kind = DIAG_BAD_VALUE;
    pthread_mutex_lock(&d->lock);
    d->count[kind]++;
    int slot = example_slot(d, kind);
    if (slot >= 0) {
        char *out = d->examples[slot];
        size_t cap = sizeof d->examples[0];
        int n = line ? snprintf(out, cap, "%s:%llu: ", file ? file : "", (unsigned long long)line)
                     : snprintf(out, cap, "%s: ", file ? file : "");
        if (n >= 0 && (size_t)n < cap) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(out + n, cap - (size_t)n, fmt, ap);
            va_end(ap);
        }
        utf8_sanitize(out);
        d->example_kind[slot] = (uint8_t)kind;
    }
    pthread_mutex_unlock(&d->lock);
}

uint64_t diag_total(const diag *d)
{
    diag *m = (diag *)d;   /* the counts are read under the lock writers take */
    uint64_t total = 0;
    pthread_mutex_lock(&m->lock);
    for (int k = 0; k < DIAG_KIND_COUNT; k++)
        if (k != DIAG_IGNORED_FILE)
            total += d->count[k];
    pthread_mutex_unlock(&m->lock);
    return total;
}
