/* tz.c — reads TZif files (RFC 8536) and their POSIX TZ footer, and computes
 * UTC offsets. See tz.h for why it does not use libc's localtime. */
#include "transit/tz.h"
#include "transit/gtfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/* ---- POSIX TZ string: std offset [dst [offset] [,start[/time],end[/time]]] */

static const char *parse_tz_name(const char *s)
{
    const char *b;
    if (*s == '<') {
        /* quoted: letters, digits, '+' and '-' ("<+0545>", "<-03>") */
        b = ++s;
        while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
               *s == '+' || *s == '-')
            s++;
        return *s == '>' && s - b >= 3 ? s + 1 : NULL;
    }
    b = s;
    while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')) s++;
    return s - b >= 3 ? s : NULL;
}

/* At most `digits` decimal digits (at least one) no greater than max. */
static const char *parse_bounded(const char *s, int digits, int max, int *out)
{
    int v = 0, n = 0;
    while (*s >= '0' && *s <= '9') {
        if (++n > digits) return NULL;
        v = v * 10 + (*s++ - '0');
    }
    if (n == 0 || v > max) return NULL;
    *out = v;
    return s;
}

/* [+-]hh[:mm[:ss]] → seconds; hours up to max_hours (24 for an offset, 167
 * for a rule time as RFC 8536 allows), minutes and seconds 0..59 */
static const char *parse_hms(const char *s, int max_hours, int32_t *out)
{
    int sign = 1;
    if (*s == '+' || *s == '-') {
        sign = *s == '-' ? -1 : 1;
        s++;
    }
    int h = 0, m = 0, sec = 0;
    s = parse_bounded(s, 3, max_hours, &h);
    if (s && *s == ':') {
        s = parse_bounded(s + 1, 2, 59, &m);
        if (s && *s == ':') s = parse_bounded(s + 1, 2, 59, &sec);
    }
    if (!s) return NULL;
    *out = sign * (h * 3600 + m * 60 + sec);
    return s;
}

/* Mm.w.d, Jn (1..365, Feb 29 never counted) or n (0..365), then [/time] */
static const char *parse_rule_date(const char *s, tz_rule_date *d)
{
    memset(d, 0, sizeof *d);
    d->time = 7200;
    if (*s == 'M') {
        d->kind = 'M';
        s = parse_bounded(s + 1, 2, 12, &d->month);
        if (s && *s == '.') s = parse_bounded(s + 1, 1, 5, &d->week);
        else s = NULL;
        if (s && *s == '.') s = parse_bounded(s + 1, 1, 6, &d->wday);
        else s = NULL;
        if (!s || d->month < 1 || d->week < 1) return NULL;
    } else if (*s == 'J') {
        d->kind = 'J';
        s = parse_bounded(s + 1, 3, 365, &d->day);
        if (!s || d->day < 1) return NULL;
    } else {
        d->kind = 'D';
        s = parse_bounded(s, 3, 365, &d->day);
        if (!s) return NULL;
    }
    if (*s == '/') {
        s = parse_hms(s + 1, 167, &d->time);
        if (!s) return NULL;
    }
    return s;
}

static int parse_posix(tz_zone *z, const char *s)
{
    s = parse_tz_name(s);
    if (!s) return -1;
    int32_t std;
    s = parse_hms(s, 24, &std);
    if (!s) return -1;
    z->std_offset = -std; /* POSIX offsets are west-positive */
    z->has_rule = 1;
    if (!*s) return 0;
    /* a name follows the offset, or nothing: "EST5x" is damaged */
    s = parse_tz_name(s);
    if (!s) return -1;
    z->has_dst = 1;
    z->dst_offset = z->std_offset + 3600;
    if (*s && *s != ',') {
        int32_t dst;
        s = parse_hms(s, 24, &dst);
        if (!s) return -1;
        z->dst_offset = -dst;
    }
    if (*s && *s != ',') return -1;
    if (!*s) {
        /* no rule given: the traditional US default */
        z->start = (tz_rule_date){'M', 3, 2, 0, 0, 7200};
        z->end = (tz_rule_date){'M', 11, 1, 0, 0, 7200};
        return 0;
    }
    s = parse_rule_date(s + 1, &z->start);
    if (!s || *s != ',') return -1;
    s = parse_rule_date(s + 1, &z->end);
    return s && !*s ? 0 : -1;   /* nothing may follow the end rule */
}

/* Local wall-clock seconds (as if UTC) at which rule date d happens in year y. */
static int64_t rule_local(const tz_rule_date *d, int y)
{
    int32_t day;
    if (d->kind == 'M') {
        int32_t first = days_from_civil(y, (unsigned)d->month, 1);
        int wd_first = (weekday_from_days(first) + 1) % 7; /* 0 = Sunday */
        int32_t day1 = first + (d->wday - wd_first + 7) % 7;
        int32_t dd = day1 + 7 * (d->week - 1);
        if (d->week == 5) {
            unsigned nm = (unsigned)d->month % 12 + 1;
            int32_t next = days_from_civil(nm == 1 ? y + 1 : y, nm, 1);
            while (dd >= next) dd -= 7;
        }
        day = dd;
    } else if (d->kind == 'J') {
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        int n = d->day;
        if (leap && n >= 60) n += 1;
        day = days_from_civil(y, 1, 1) + n - 1;
    } else {
        day = days_from_civil(y, 1, 1) + d->day;
    }
    return (int64_t)day * 86400 + d->time;
}

static int32_t rule_offset_at(const tz_zone *z, int64_t t)
{
    if (!z->has_dst) return z->std_offset;
    int y;
    unsigned m, d;
    civil_from_days((int32_t)((t + z->std_offset) / 86400 - ((t + z->std_offset) % 86400 < 0)), &y, &m, &d);
    (void)m;
    (void)d;
    /* DST starts at start-local expressed in standard time, ends at end-local in DST */
    int64_t start = rule_local(&z->start, y) - z->std_offset;
    int64_t end = rule_local(&z->end, y) - z->dst_offset;
    if (start < end) /* northern hemisphere */
        return (t >= start && t < end) ? z->dst_offset : z->std_offset;
    /* southern: DST from start to end of next year */
    return (t >= end && t < start) ? z->std_offset : z->dst_offset;
}

int32_t tz_offset_at(const tz_zone *z, int64_t t)
{
    if (z->ntrans == 0 || t < z->trans_at[0]) {
        if (z->ntrans == 0 && z->has_rule) return rule_offset_at(z, t);
        return z->initial_offset;
    }
    if (t >= z->trans_at[z->ntrans - 1] && z->has_rule) {
        /* after the last explicit transition the footer rule governs */
        return rule_offset_at(z, t);
    }
    uint32_t lo = 0, hi = z->ntrans; /* find last trans_at <= t */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (z->trans_at[mid] <= t) lo = mid;
        else hi = mid;
    }
    return z->trans_offset[lo];
}

int64_t tz_local_to_instant(const tz_zone *z, int64_t local)
{
    /* fold=0: try the offset in effect a day earlier first (the "before"
     * offset), then the one after. */
    int32_t before = tz_offset_at(z, local - 86400);
    int32_t after = tz_offset_at(z, local + 86400);
    int64_t t1 = local - before;
    if (tz_offset_at(z, t1) == before) return t1;   /* valid with the earlier offset: fold=0 */
    int64_t t2 = local - after;
    if (tz_offset_at(z, t2) == after) return t2;
    /* in a gap: zoneinfo fold=0 uses the offset before the gap */
    return t1;
}

int tz_load(const char *name, tz_zone *z, char *err, size_t errlen)
{
    memset(z, 0, sizeof *z);
    if (!name || !*name || strlen(name) >= sizeof z->name || strstr(name, "..") || name[0] == '/') {
        snprintf(err, errlen, "invalid timezone name '%s'", name ? name : "");
        return -1;
    }
    snprintf(z->name, sizeof z->name, "%s", name);
    const char *dir = getenv("TZDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        snprintf(err, errlen, "unknown timezone '%s' (not in the tz database at %s)", name, path);
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 44 || st.st_size > (1 << 20)) {
        close(fd);
        snprintf(err, errlen, "unknown timezone '%s' (%s is not a TZif file)", name, path);
        return -1;
    }
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (n != st.st_size || memcmp(buf, "TZif", 4) != 0) {
        free(buf);
        snprintf(err, errlen, "unknown timezone '%s' (%s is not a TZif file)", name, path);
        return -1;
    }
    size_t len = (size_t)n, off = 0;
    buf[len] = 0;
    int version = buf[4];
    /* v1 block: skip it when a v2+ block follows */
    uint32_t isutcnt = be32(buf + 20), isstdcnt = be32(buf + 24), leapcnt = be32(buf + 28);
    uint32_t timecnt = be32(buf + 32), typecnt = be32(buf + 36), charcnt = be32(buf + 40);
    int tsize = 4;
    off = 44;
    if (version >= '2') {
        off += timecnt * 4 + timecnt + typecnt * 6 + charcnt + leapcnt * 8 + isstdcnt + isutcnt;
        if (off + 44 > len || memcmp(buf + off, "TZif", 4) != 0) goto bad;
        isutcnt = be32(buf + off + 20);
        isstdcnt = be32(buf + off + 24);
        leapcnt = be32(buf + off + 28);
        timecnt = be32(buf + off + 32);
        typecnt = be32(buf + off + 36);
        charcnt = be32(buf + off + 40);
        off += 44;
        tsize = 8;
    }
    size_t need = (size_t)timecnt * (size_t)tsize + timecnt + (size_t)typecnt * 6 + charcnt +
                  (size_t)leapcnt * (size_t)(tsize + 4) + isstdcnt + isutcnt;
    if (typecnt == 0 || off + need > len) goto bad;
    const unsigned char *times = buf + off;
    const unsigned char *idx = times + (size_t)timecnt * (size_t)tsize;
    const unsigned char *types = idx + timecnt;
    z->trans_at = malloc(sizeof(int64_t) * (timecnt ? timecnt : 1));
    z->trans_offset = malloc(sizeof(int32_t) * (timecnt ? timecnt : 1));
    if (!z->trans_at || !z->trans_offset) goto bad;
    for (uint32_t i = 0; i < timecnt; i++) {
        if (idx[i] >= typecnt) goto bad;
        z->trans_at[i] = tsize == 8 ? be64(times + (size_t)i * 8) : (int32_t)be32(times + (size_t)i * 4);
        z->trans_offset[i] = (int32_t)be32(types + (size_t)idx[i] * 6);
    }
    z->ntrans = timecnt;
    z->initial_offset = (int32_t)be32(types); /* type 0 is the initial local time type */
    off += need;
    if (version >= '2' && off < len && buf[off] == '\n') {
        char *footer = (char *)buf + off + 1;
        char *nl = strchr(footer, '\n');
        if (nl) *nl = 0;
        if (*footer && parse_posix(z, footer) != 0) goto bad;
    }
    free(buf);
    return 0;
bad:
    free(buf);
    tz_free(z);
    snprintf(err, errlen, "timezone '%s': %s is damaged or not a TZif file", name, path);
    return -1;
}

void tz_free(tz_zone *z)
{
    free(z->trans_at);
    free(z->trans_offset);
    z->trans_at = NULL;
    z->trans_offset = NULL;
    z->ntrans = 0;
}
