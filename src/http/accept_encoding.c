/* accept_encoding.c — reads an Accept-Encoding field value (RFC 9110 §12.5.3).
 *
 * Why it exists: see include/transit/accept_encoding.h. It is written by hand:
 * the grammar is a comma-separated list of a token and an optional weight, a few
 * dozen lines, and libmicrohttpd (the HTTP library the server uses) has no parser
 * for it. It reads exactly `len` bytes, never past them, and allocates nothing.
 */
#include "transit/accept_encoding.h"
#include "http/qvalue.h"

#include <stdbool.h>
#include <strings.h>

#define WEIGHT_MAX QVALUE_MAX
#define WEIGHT_UNNAMED (-1)

const char *content_coding_name(content_coding coding)
{
    switch (coding) {
    case CODING_GZIP:
        return "gzip";
    case CODING_BR:
        return "br";
    default:
        return "identity";
    }
}

/* tchar of RFC 9110 §5.6.2 */
static bool is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
        return true;
    default:
        return false;
    }
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* Which of the server's codings, "*" or nothing a token names. */
enum named { NAMED_IDENTITY, NAMED_GZIP, NAMED_BR, NAMED_ANY, NAMED_OTHER };

static bool token_is(const char *p, size_t n, const char *word, size_t word_len)
{
    return n == word_len && strncasecmp(p, word, n) == 0;
}

static enum named name_of(const char *p, size_t n)
{
    if (token_is(p, n, "gzip", 4) || token_is(p, n, "x-gzip", 6))
        return NAMED_GZIP;
    if (token_is(p, n, "br", 2))
        return NAMED_BR;
    if (token_is(p, n, "identity", 8))
        return NAMED_IDENTITY;
    if (token_is(p, n, "*", 1))
        return NAMED_ANY;
    return NAMED_OTHER;
}

/* One list element, [p, end) without the commas: codings [ weight ], where
 * weight = OWS ";" OWS "q=" qvalue. Sets *named and returns the weight, or -1
 * when the element is empty or does not parse. */
static int parse_element(const char *p, const char *end, enum named *named)
{
    while (p < end && is_ows(*p))
        p++;
    while (end > p && is_ows(end[-1]))
        end--;
    const char *token = p;
    while (p < end && is_tchar((unsigned char)*p))
        p++;
    if (p == token)
        return -1;
    *named = name_of(token, (size_t)(p - token));
    while (p < end && is_ows(*p))
        p++;
    if (p == end)
        return WEIGHT_MAX;
    if (*p++ != ';')
        return -1;
    while (p < end && is_ows(*p))
        p++;
    if (end - p < 2 || (p[0] != 'q' && p[0] != 'Q') || p[1] != '=')
        return -1;
    return http_parse_qvalue(p + 2, end);
}

/* The weight of `entry` where the field named it, else `fallback`. */
static int named_or(int entry, int fallback)
{
    return entry != WEIGHT_UNNAMED ? entry : fallback;
}

void accept_encoding_parse(const char *value, size_t len, accept_encoding *out)
{
    int named[NAMED_OTHER];
    for (int i = 0; i < NAMED_OTHER; i++)
        named[i] = WEIGHT_UNNAMED;
    const char *p = value, *end = value + len;
    while (p < end) {
        const char *element_end = p;
        while (element_end < end && *element_end != ',')
            element_end++;
        enum named which = NAMED_OTHER;
        int weight = parse_element(p, element_end, &which);
        if (weight >= 0 && which != NAMED_OTHER &&
            (named[which] == WEIGHT_UNNAMED || weight < named[which]))
            named[which] = weight;
        p = element_end < end ? element_end + 1 : end;
    }
    int any = named[NAMED_ANY];
    out->weight[CODING_GZIP] = named_or(named[NAMED_GZIP], named_or(any, 0));
    out->weight[CODING_BR] = named_or(named[NAMED_BR], named_or(any, 0));
    out->weight[CODING_IDENTITY] = named_or(named[NAMED_IDENTITY], named_or(any, 1));
}

content_coding accept_encoding_choose(const char *value, size_t len, const content_coding *offered,
                                      size_t n)
{
    if (!value)
        return CODING_IDENTITY;
    accept_encoding ae;
    accept_encoding_parse(value, len, &ae);
    content_coding best = CODING_IDENTITY;
    int best_weight = 0;
    for (size_t i = 0; i < n; i++) {
        content_coding c = offered[i];
        if (c >= CODING_COUNT)
            continue;
        if (ae.weight[c] > best_weight) {
            best = c;
            best_weight = ae.weight[c];
        }
    }
    /* identity is always on offer, last: only a higher weight makes it win */
    return best_weight >= ae.weight[CODING_IDENTITY] ? best : CODING_IDENTITY;
}
