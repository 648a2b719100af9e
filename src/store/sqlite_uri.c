/* sqlite_uri.c — see sqlite_uri.h. */
#include "store/sqlite_uri.h"

#include <stdio.h>
#include <string.h>

/* Appends s to out[n..], percent-encoding what a URI path cannot hold. */
static size_t uri_append_path(char *out, size_t cap, size_t n, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s && n + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '%' || c == '?' || c == '#' || c <= ' ' || c >= 0x7f) {
            out[n++] = '%';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        } else {
            out[n++] = (char)c;
        }
    }
    out[n] = '\0';
    return n;
}

int store_sqlite_uri(char *out, size_t cap, const char *version_dir, const char *file)
{
    size_t n = (size_t)snprintf(out, cap, "file:");
    n = uri_append_path(out, cap, n, version_dir);
    n = uri_append_path(out, cap, n, "/");
    n = uri_append_path(out, cap, n, file);
    if (n + 16 >= cap)
        return -1;
    memcpy(out + n, "?immutable=1", sizeof "?immutable=1");
    return 0;
}
