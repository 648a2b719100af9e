/* import_guard.c — refuses to activate a version that lost too many rows or
 * shrank too much against the active one (see import_guard.h). */
#include "transit/import_guard.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const FILE_NAMES[IMPORT_GUARD_FILE_COUNT] = {
    [IMPORT_GUARD_STOPS] = "stops.txt",
    [IMPORT_GUARD_ROUTES] = "routes.txt",
    [IMPORT_GUARD_TRIPS] = "trips.txt",
    [IMPORT_GUARD_STOP_TIMES] = "stop_times.txt",
};

const char *import_guard_file_name(import_guard_file f)
{
    return (unsigned)f < IMPORT_GUARD_FILE_COUNT ? FILE_NAMES[f] : "?";
}

/* 2400187 → "2,400,187" */
static const char *thousands(uint64_t v, char buf[32])
{
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

typedef struct out {
    char *buf;
    size_t len, used;
    int clauses;
} out;

static void add(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(out *o, const char *fmt, ...)
{
    if (o->used >= o->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->used += (size_t)n < o->len - o->used ? (size_t)n : o->len - o->used - 1;
}

static void clause_start(out *o)
{
    if (o->clauses++ > 0)
        add(o, "; ");
}

/* part of whole in percent (whole > 0) */
static double pct(uint64_t part, uint64_t whole)
{
    return 100.0 * (double)part / (double)whole;
}

static void check_shrink(out *o, const char *what, uint64_t before, uint64_t after, double limit)
{
    if (before == 0 || after >= before)
        return;
    double fall = pct(before - after, before);
    if (fall <= limit)
        return;
    char a[32], b[32];
    clause_start(o);
    add(o, "%s: %s in the active version, %s in the new one (-%.1f %%) > --max-shrink %g %%", what,
        thousands(before, a), thousands(after, b), fall, limit);
}

int import_guard_check(const import_guard_input *in, const import_guard_limits *lim, char *msg,
                       size_t msglen)
{
    out o = {.buf = msg, .len = msglen};
    if (msglen > 0)
        msg[0] = '\0';
    if (in->have_rows) {
        for (int f = 0; f < IMPORT_GUARD_FILE_COUNT; f++) {
            uint64_t read = in->read[f], kept = in->kept[f];
            if (read == 0 || kept >= read || read - kept <= IMPORT_GUARD_MIN_DROPPED_ROWS)
                continue;
            double dropped = pct(read - kept, read);
            if (dropped <= lim->max_drop_pct)
                continue;
            char a[32], b[32];
            clause_start(&o);
            add(&o, "%s: %s of %s rows dropped (%.1f %%) > --max-drop %g %%", FILE_NAMES[f],
                thousands(read - kept, a), thousands(read, b), dropped, lim->max_drop_pct);
        }
    }
    if (in->have_previous) {
        check_shrink(&o, "stops", in->previous.stops, in->next.stops, lim->max_shrink_pct);
        check_shrink(&o, "trips", in->previous.trips, in->next.trips, lim->max_shrink_pct);
        check_shrink(&o, "stop times", in->previous.stop_times, in->next.stop_times,
                     lim->max_shrink_pct);
    }
    if (o.clauses == 0)
        return 0;
    const char *v = in->previous_version;
    if (v && v[0])
        add(&o, "; not activated, current stays %s; use --force to activate anyway", v);
    else
        add(&o, "; not activated (there is no active version); use --force to activate anyway");
    return 1;
}
