/* rt_source_list.c — the --gtfs-rt / --gtfs-rt-header / --gtfs-rt-feed rule, header checks
 * and source labels; see include/transit/rt_source_list.h.
 */
#include "transit/rt_source_list.h"

#include <stdio.h>
#include <string.h>

bool rt_source_list_add(rt_source_list *list, const char *location, char *err, size_t errlen)
{
    if (!location || !*location) {
        snprintf(err, errlen, "--gtfs-rt needs a file or an http(s) URL");
        return false;
    }
    if (list->count >= RT_MAX_SOURCES) {
        snprintf(err, errlen, "at most %d --gtfs-rt sources", RT_MAX_SOURCES);
        return false;
    }
    list->sources[list->count++] = (rt_source_spec){.location = location};
    return true;
}

/* RFC 9110 tchar */
static bool is_token_char(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

bool rt_header_valid(const char *header, char *err, size_t errlen)
{
    size_t n = strlen(header);
    if (n > RT_MAX_HEADER_BYTES) {
        snprintf(err, errlen, "--gtfs-rt-header is longer than %d bytes", RT_MAX_HEADER_BYTES);
        return false;
    }
    size_t i = 0;
    while (is_token_char((unsigned char)header[i])) i++;
    if (i == 0 || header[i] != ':') {
        snprintf(err, errlen, "--gtfs-rt-header must be 'NAME: VALUE' with NAME a header name "
                              "(letters, digits, -), got %s at byte %zu",
                 i == 0 ? "no name" : "a character not allowed in a name", i + 1);
        return false;
    }
    const char *v = header + i + 1;
    while (*v == ' ' || *v == '\t') v++;
    if (!*v) {
        snprintf(err, errlen, "--gtfs-rt-header %.*s has no value", (int)(i > 64 ? 64 : i), header);
        return false;
    }
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f) {
            snprintf(err, errlen, "--gtfs-rt-header %.*s: the value has a control character",
                     (int)(i > 64 ? 64 : i), header);
            return false;
        }
    return true;
}

bool rt_source_list_add_header(rt_source_list *list, const char *header, char *err, size_t errlen)
{
    if (list->count == 0) {
        snprintf(err, errlen, "--gtfs-rt-header applies to the --gtfs-rt given before it; give that first");
        return false;
    }
    if (!rt_header_valid(header, err, errlen))
        return false;
    rt_source_spec *s = &list->sources[list->count - 1];
    if (s->nheaders >= RT_MAX_SOURCE_HEADERS) {
        snprintf(err, errlen, "at most %d --gtfs-rt-header per --gtfs-rt", RT_MAX_SOURCE_HEADERS);
        return false;
    }
    s->headers[s->nheaders++] = header;
    return true;
}

bool rt_source_list_set_feed(rt_source_list *list, const char *feed, char *err, size_t errlen)
{
    if (list->count == 0) {
        snprintf(err, errlen, "--gtfs-rt-feed applies to the --gtfs-rt given before it; give that first");
        return false;
    }
    rt_source_spec *s = &list->sources[list->count - 1];
    if (s->feed) {
        snprintf(err, errlen, "one --gtfs-rt-feed per --gtfs-rt");
        return false;
    }
    size_t len = feed ? strlen(feed) : 0;
    bool ok = len > 0 && len < 48;
    for (size_t i = 0; ok && i < len; i++)
        ok = (feed[i] >= 'a' && feed[i] <= 'z') || (feed[i] >= 'A' && feed[i] <= 'Z') ||
             (feed[i] >= '0' && feed[i] <= '9') || feed[i] == '_' || feed[i] == '-' || feed[i] == '.';
    if (!ok) {
        snprintf(err, errlen, "--gtfs-rt-feed '%.48s': a feed name is 1 to 47 letters, digits, '_', '-' or '.'",
                 feed ? feed : "");
        return false;
    }
    s->feed = feed;
    return true;
}

void rt_source_label(const char *location, char *out, size_t cap)
{
    if (cap == 0)
        return;
    const char *scheme_end = strstr(location, "://");
    if (strncmp(location, "http://", 7) != 0 && strncmp(location, "https://", 8) != 0) {
        snprintf(out, cap, "%s", location);
        return;
    }
    const char *host = scheme_end + 3;
    size_t authority = strcspn(host, "/?#");
    const char *at = memchr(host, '@', authority);
    /* the last '@' of the authority ends the credentials */
    for (const char *p = at; p && p < host + authority; p = memchr(p + 1, '@', (size_t)(host + authority - p - 1)))
        at = p;
    const char *rest = at ? at + 1 : host;
    size_t keep = strcspn(rest, "?#");
    snprintf(out, cap, "%.*s%.*s", (int)(host - location), location, (int)keep, rest);
}
