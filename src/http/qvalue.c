/* qvalue.c — the weight of an element of an Accept-* field (see qvalue.h).
 * Written by hand: a dozen lines of grammar that libmicrohttpd does not parse.
 */
#include "http/qvalue.h"

int http_parse_qvalue(const char *p, const char *end)
{
    if (p == end || (*p != '0' && *p != '1'))
        return -1;
    int whole = *p++ - '0';
    int thousandths = 0, digits = 0;
    if (p < end && *p == '.') {
        p++;
        for (; p < end && digits < 3 && *p >= '0' && *p <= '9'; p++, digits++)
            thousandths = thousandths * 10 + (*p - '0');
        for (int i = digits; i < 3; i++)
            thousandths *= 10;
    }
    if (p != end || (whole == 1 && thousandths != 0))
        return -1;
    return whole * QVALUE_MAX + thousandths;
}
