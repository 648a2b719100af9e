/* accept_language.c — reads an Accept-Language field value (RFC 9110 §12.5.4) and
 * looks its ranges up among a feed's languages (RFC 4647 §3.4).
 *
 * Why it exists: see include/transit/accept_language.h. Written by hand, as
 * accept_encoding.c is: the grammar is a comma-separated list of a language range
 * and an optional weight, and libmicrohttpd has no parser for it. The ranges are
 * kept as offsets into the value in a fixed array, so nothing is allocated and no
 * byte past `len` is read.
 */
#include "transit/accept_language.h"
#include "http/qvalue.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

#define WEIGHT_MAX QVALUE_MAX
#define SUBTAG_MAX 8

typedef struct language_range {
    const char *start;
    size_t len;
    int weight;   /* thousandths, 1..1000 */
} language_range;

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* language-range = (1*8ALPHA *("-" 1*8alphanum)) / "*" (RFC 4647 §2.1), the
 * whole of [p, end). */
static bool is_language_range(const char *p, const char *end)
{
    if (end - p == 1 && *p == '*')
        return true;
    size_t subtag = 0;
    bool first = true;
    for (; p < end; p++) {
        if (*p == '-') {
            if (subtag == 0)
                return false;
            subtag = 0;
            first = false;
            continue;
        }
        if (!(is_alpha(*p) || (!first && is_digit(*p))) || ++subtag > SUBTAG_MAX)
            return false;
    }
    return subtag > 0;
}

/* One list element, [p, end) without the commas: language-range [ weight ].
 * Fills *range and returns true, or false when the element is empty or does not
 * parse. */
static bool parse_element(const char *p, const char *end, language_range *range)
{
    while (p < end && is_ows(*p))
        p++;
    while (end > p && is_ows(end[-1]))
        end--;
    const char *tag = p;
    while (p < end && *p != ';' && !is_ows(*p))
        p++;
    if (!is_language_range(tag, p))
        return false;
    range->start = tag;
    range->len = (size_t)(p - tag);
    while (p < end && is_ows(*p))
        p++;
    if (p == end) {
        range->weight = WEIGHT_MAX;
        return true;
    }
    if (*p++ != ';')
        return false;
    while (p < end && is_ows(*p))
        p++;
    if (end - p < 2 || (p[0] != 'q' && p[0] != 'Q') || p[1] != '=')
        return false;
    range->weight = http_parse_qvalue(p + 2, end);
    return range->weight >= 0;
}

/* The index of the tag of `available` equal to [tag, tag+len), or -1. */
static int find_tag(const char *tag, size_t len, const char *const *available, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (available[i] && strlen(available[i]) == len && strncasecmp(available[i], tag, len) == 0)
            return (int)i;
    return -1;
}

/* Appends index i to order (count so far *count, room cap) unless it is there. */
static void add_ranked(int i, int *order, size_t *count, size_t cap)
{
    for (size_t k = 0; k < *count; k++)
        if (order[k] == i)
            return;
    if (*count < cap)
        order[(*count)++] = i;
}

/* RFC 4647 §3.4 for one range: the range, then shorter by a subtag at a time;
 * every tag of `available` met on the way, in that order. */
static void lookup_range(const language_range *range, const char *const *available, size_t n, int *order,
                         size_t *count, size_t cap)
{
    size_t len = range->len;
    while (len > 0) {
        int found = find_tag(range->start, len, available, n);
        if (found >= 0)
            add_ranked(found, order, count, cap);
        while (len > 0 && range->start[len - 1] != '-')
            len--;
        if (len > 0)
            len--;   /* the '-' */
        /* a single-letter subtag ("x" of "de-x-abc") goes with the one after it */
        if (len >= 2 && range->start[len - 2] == '-')
            len -= 2;
    }
}

size_t accept_language_rank(const char *value, size_t len, const char *const *available, size_t n, int *order,
                            size_t cap)
{
    if (!value || cap == 0)
        return 0;
    language_range ranges[ACCEPT_LANGUAGE_MAX_RANGES];
    size_t count = 0;
    const char *p = value, *end = value + len;
    while (p < end && count < ACCEPT_LANGUAGE_MAX_RANGES) {
        const char *element_end = memchr(p, ',', (size_t)(end - p));
        if (!element_end)
            element_end = end;
        language_range range;
        if (parse_element(p, element_end, &range) && range.weight > 0)
            ranges[count++] = range;
        p = element_end < end ? element_end + 1 : end;
    }
    /* the highest weight first, the header's order on a tie (a stable insertion sort) */
    for (size_t i = 1; i < count; i++) {
        language_range moving = ranges[i];
        size_t j = i;
        for (; j > 0 && ranges[j - 1].weight < moving.weight; j--)
            ranges[j] = ranges[j - 1];
        ranges[j] = moving;
    }
    size_t ranked = 0;
    for (size_t i = 0; i < count && ranked < cap; i++) {
        if (ranges[i].len == 1 && ranges[i].start[0] == '*')
            break;   /* the default comes before every range after it */
        lookup_range(&ranges[i], available, n, order, &ranked, cap);
    }
    return ranked;
}

int accept_language_choose(const char *value, size_t len, const char *const *available, size_t n)
{
    int first;
    return accept_language_rank(value, len, available, n, &first, 1) ? first : -1;
}
