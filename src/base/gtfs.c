/* gtfs.c — strict parsers for GTFS values and the civil-calendar arithmetic
 * behind service dates.
 *
 * Why it exists: one place decides what a valid time, date or number is, so
 * the timetable builder and the SQLite writers agree on every row they accept
 * or reject. No locale, no allocation, no libc time functions.
 */
#include "transit/gtfs.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

int gtfs_parse_time(const char *s, size_t len, uint32_t *secs)
{
    while (len && (*s == ' ' || *s == '\t')) s++, len--;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
    if (len == 0) {
        *secs = GTFS_TIME_NONE;
        return 0;
    }
    /* H:MM:SS (7) or HH:MM:SS (8) */
    unsigned h;
    const char *p;
    if (len == 7 && is_digit(s[0]) && s[1] == ':') {
        h = (unsigned)(s[0] - '0');
        p = s + 2;
    } else if (len == 8 && is_digit(s[0]) && is_digit(s[1]) && s[2] == ':') {
        h = (unsigned)(s[0] - '0') * 10 + (unsigned)(s[1] - '0');
        p = s + 3;
    } else {
        return -1;
    }
    if (!is_digit(p[0]) || !is_digit(p[1]) || p[2] != ':' || !is_digit(p[3]) || !is_digit(p[4]))
        return -1;
    unsigned m = (unsigned)(p[0] - '0') * 10 + (unsigned)(p[1] - '0');
    unsigned sec = (unsigned)(p[3] - '0') * 10 + (unsigned)(p[4] - '0');
    if (m > 59 || sec > 59)
        return -1;
    *secs = h * 3600u + m * 60u + sec;
    return 0;
}

int32_t days_from_civil(int y, unsigned m, unsigned d)
{
    /* Howard Hinnant's algorithm, re-derived: shift the year to start in March. */
    y -= m <= 2;
    const int era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int32_t)doe - 719468;
}

void civil_from_days(int32_t z, int *y, unsigned *m, unsigned *d)
{
    z += 719468;
    const int32_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = (unsigned)(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const int yy = (int)yoe + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yy + (*m <= 2);
}

int weekday_from_days(int32_t z)
{
    /* 1970-01-01 was a Thursday (3 when Monday is 0). */
    int w = (int)((z % 7 + 7) % 7);
    return (w + 3) % 7;
}

static int valid_civil(int y, unsigned m, unsigned d)
{
    static const unsigned mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1)
        return 0;
    unsigned lim = mdays[m - 1];
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        lim = 29;
    return d <= lim;
}

int gtfs_parse_date(const char *s, size_t len, int32_t *days)
{
    while (len && *s == ' ') s++, len--;
    while (len && s[len - 1] == ' ') len--;
    if (len != 8)
        return -1;
    for (int i = 0; i < 8; i++)
        if (!is_digit(s[i]))
            return -1;
    int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
    unsigned m = (unsigned)((s[4] - '0') * 10 + (s[5] - '0'));
    unsigned d = (unsigned)((s[6] - '0') * 10 + (s[7] - '0'));
    if (!valid_civil(y, m, d))
        return -1;
    *days = days_from_civil(y, m, d);
    return 0;
}

int gtfs_parse_date_memo(const char *s, size_t len, int32_t *days, gtfs_date_memo *memo)
{
    if (len == 8 && memo->month_days && memcmp(s, memo->year_month, 6) == 0) {
        if (!is_digit(s[6]) || !is_digit(s[7]))
            return -1;
        unsigned d = (unsigned)((s[6] - '0') * 10 + (s[7] - '0'));
        if (d < 1 || d > memo->month_days)
            return -1;
        *days = memo->first_day + (int32_t)d - 1;
        return 0;
    }
    int rc = gtfs_parse_date(s, len, days);
    if (rc == 0 && len == 8) {   /* untrimmed: s is the date itself */
        int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
        unsigned m = (unsigned)((s[4] - '0') * 10 + (s[5] - '0'));
        unsigned d = (unsigned)((s[6] - '0') * 10 + (s[7] - '0'));
        unsigned last = 28;
        while (last < 31 && valid_civil(y, m, last + 1))
            last++;
        memcpy(memo->year_month, s, 6);
        memo->month_days = (uint8_t)last;
        memo->first_day = *days - (int32_t)d + 1;
    }
    return rc;
}

int parse_iso_date(const char *s, size_t len, int32_t *days)
{
    if (len != 10 || s[4] != '-' || s[7] != '-')
        return -1;
    char compact[8] = {s[0], s[1], s[2], s[3], s[5], s[6], s[8], s[9]};
    return gtfs_parse_date(compact, 8, days);
}

void format_date(int32_t days, char out[11])
{
    int y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999) {
        memcpy(out, "0000-00-00", 11);
        return;
    }
    out[0] = (char)('0' + y / 1000);
    out[1] = (char)('0' + y / 100 % 10);
    out[2] = (char)('0' + y / 10 % 10);
    out[3] = (char)('0' + y % 10);
    out[4] = '-';
    out[5] = (char)('0' + m / 10);
    out[6] = (char)('0' + m % 10);
    out[7] = '-';
    out[8] = (char)('0' + d / 10);
    out[9] = (char)('0' + d % 10);
    out[10] = 0;
}

int gtfs_parse_int(const char *s, size_t len, int64_t *out)
{
    while (len && *s == ' ') s++, len--;
    while (len && s[len - 1] == ' ') len--;
    if (len == 0 || len > 19)
        return -1;
    int neg = 0;
    size_t i = 0;
    if (s[0] == '-' || s[0] == '+') {
        neg = s[0] == '-';
        i = 1;
        if (len == 1)
            return -1;
    }
    /* accumulate unsigned and stop before int64_t overflows (19 digits can
     * exceed INT64_MAX); INT64_MIN itself is allowed */
    const uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    for (; i < len; i++) {
        if (!is_digit(s[i]))
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (limit - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = !neg ? (int64_t)v : v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    return 0;
}

int gtfs_parse_double(const char *s, size_t len, double *out)
{
    while (len && *s == ' ') s++, len--;
    while (len && s[len - 1] == ' ') len--;
    if (len == 0 || len > 63)
        return -1;
    /* Fast path for plain decimals ([-]digits[.digits], at most 15 digits):
     * an integer mantissa below 2^53 divided by an exact power of ten is one
     * correctly rounded IEEE division, the same double strtod returns. */
    {
        static const double pow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
                                       1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
        size_t i = 0;
        int neg = 0, ndig = 0, frac = -1;
        uint64_t mant = 0;
        if (s[0] == '-' || s[0] == '+') neg = s[i++] == '-';
        for (; i < len; i++) {
            char c = s[i];
            if (is_digit(c)) {
                mant = mant * 10 + (uint64_t)(c - '0');
                ndig++;
                if (frac >= 0) frac++;
            } else if (c == '.' && frac < 0) {
                frac = 0;
            } else {
                break;
            }
        }
        if (i == len && ndig > 0 && ndig <= 15) {
            double v = (double)mant;
            if (frac > 0) v /= pow10[frac];
            *out = neg ? -v : v;
            return 0;
        }
    }
    char buf[64];
    memcpy(buf, s, len);
    buf[len] = 0;
    /* only plain decimal notation: digits, one dot, optional sign and exponent */
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (!(is_digit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
            return -1;
    }
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + len || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}
