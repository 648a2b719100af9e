/* rfc3339.c — the API's instants: reading the `time` parameter and writing
 * RFC 3339 timestamps.
 *
 * Why it exists: clients send either an RFC 3339 date-time with an offset or
 * a wall-clock time meant in the feed's timezone; responses carry instants
 * with the feed zone's offset at that instant. Both directions are plain
 * integer arithmetic on the civil calendar (gtfs.h), with no libc time zone
 * state, so the answers do not depend on TZ or locale.
 */
#include "transit/rfc3339.h"

#include <string.h>

#include "transit/gtfs.h"

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

/* Reads exactly n decimal digits. */
static bool read_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return true;
}

static bool expect_char(const char **p, char c)
{
    if (**p != c)
        return false;
    (*p)++;
    return true;
}

int rfc3339_parse(const char *s, int64_t *local_secs, bool *has_offset, int32_t *utc_offset)
{
    if (!s)
        return -1;
    const char *p = s;
    int year, month, day, hour, minute, second = 0;
    if (!read_digits(&p, 4, &year) || !expect_char(&p, '-') || !read_digits(&p, 2, &month) ||
        !expect_char(&p, '-') || !read_digits(&p, 2, &day))
        return -1;
    if (*p != 'T' && *p != 't')
        return -1;
    p++;
    if (!read_digits(&p, 2, &hour) || !expect_char(&p, ':') || !read_digits(&p, 2, &minute))
        return -1;
    if (*p == ':') {
        p++;
        if (!read_digits(&p, 2, &second))
            return -1;
        if (*p == '.') {   /* fractional seconds: accepted, truncated */
            p++;
            if (*p < '0' || *p > '9')
                return -1;
            while (*p >= '0' && *p <= '9')
                p++;
        }
    }
    if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59)
        return -1;
    static const int month_days[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (day < 1 || day > month_days[month - 1] || (month == 2 && day == 29 && !leap))
        return -1;

    int32_t offset = 0;
    bool offset_given = false;
    if (*p == 'Z' || *p == 'z') {
        p++;
        offset_given = true;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        int oh, om;
        p++;
        if (!read_digits(&p, 2, &oh) || !expect_char(&p, ':') || !read_digits(&p, 2, &om))
            return -1;
        if (oh > 23 || om > 59)
            return -1;
        offset = sign * (oh * 3600 + om * 60);
        offset_given = true;
    }
    if (*p != '\0')
        return -1;

    int64_t days = days_from_civil(year, (unsigned)month, (unsigned)day);
    *local_secs = days * 86400 + hour * 3600 + minute * 60 + second;
    *has_offset = offset_given;
    *utc_offset = offset;
    return 0;
}

static void put2(char *p, int v)
{
    p[0] = (char)('0' + v / 10 % 10);
    p[1] = (char)('0' + v % 10);
}

/* "YYYY-MM-DDTHH:MM:SS" for local seconds; 19 bytes, no NUL. */
static void put_local(char *out, int64_t local)
{
    int64_t days = floor_div(local, 86400);
    int64_t sod = local - days * 86400;
    int y;
    unsigned m, d;
    civil_from_days((int32_t)days, &y, &m, &d);
    if (y < 0)
        y = 0;
    if (y > 9999)
        y = 9999;
    put2(out, y / 100);
    put2(out + 2, y % 100);
    out[4] = '-';
    put2(out + 5, (int)m);
    out[7] = '-';
    put2(out + 8, (int)d);
    out[10] = 'T';
    put2(out + 11, (int)(sod / 3600));
    out[13] = ':';
    put2(out + 14, (int)(sod / 60 % 60));
    out[16] = ':';
    put2(out + 17, (int)(sod % 60));
}

void rfc3339_format_instant(int64_t instant, int32_t utc_offset, char out[26])
{
    put_local(out, instant + utc_offset);
    int32_t a = utc_offset < 0 ? -utc_offset : utc_offset;
    out[19] = utc_offset < 0 ? '-' : '+';
    put2(out + 20, (int)(a / 3600));
    out[22] = ':';
    put2(out + 23, (int)(a / 60 % 60));
    out[25] = '\0';
}

void rfc3339_format_utc(int64_t instant, char out[21])
{
    put_local(out, instant);
    out[19] = 'Z';
    out[20] = '\0';
}
