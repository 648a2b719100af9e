/* fuzz_rt_source_header.c — libFuzzer target for what `--gtfs-rt` and
 * `--gtfs-rt-header` parse (src/live/rt_source_list.c): the header check
 * and the source label.
 *
 * Why it exists: both read operator text that ends up in HTTP requests and
 * in /metrics and /readyz. Besides crashes and UB it checks what must hold:
 * an accepted header has a colon after a non-empty name and no CR, LF or NUL
 * in it; a label never keeps a query string or "user@" credentials of a
 * URL, and is never longer than the location.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transit/rt_source_list.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    char err[300];
    if (rt_header_valid(s, err, sizeof err)) {
        const char *colon = strchr(s, ':');
        if (!colon || colon == s || strchr(s, '\r') || strchr(s, '\n'))
            abort();
    }
    rt_source_list list = {0};
    if (rt_source_list_add(&list, s, err, sizeof err) && rt_source_list_add_header(&list, s, err, sizeof err) &&
        list.sources[0].nheaders != 1)
        abort();
    char label[128];
    rt_source_label(s, label, sizeof label);
    size_t n = strlen(label);
    if (n > strlen(s) || n >= sizeof label)
        abort();
    if ((strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0) &&
        (strchr(label, '?') || strchr(label, '#')))
        abort();
    if (strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0) {
        const char *host = strstr(label, "://") + 3;
        const char *at = strchr(host, '@'), *slash = strchr(host, '/');
        if (at && (!slash || at < slash))
            abort();
    }
    free(s);
    return 0;
}
