/* gzip_body.c — one reusable zlib deflate stream per thread for HTTP bodies.
 *
 * Why it exists: see include/transit/gzip_body.h. deflateReset keeps the
 * stream's window and hash tables, so compressing a response allocates
 * nothing once the output buffer has grown to the largest body seen.
 */
#include "transit/gzip_body.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

struct gzip_body {
    z_stream zs;
    unsigned char *buf;
    size_t cap;
};

gzip_body *gzip_body_new(int level)
{
    gzip_body *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    if (level < 1 || level > 9)
        level = 5;
    /* windowBits 15 + 16: a gzip header and trailer instead of zlib's. */
    if (deflateInit2(&g->zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(g);
        return NULL;
    }
    return g;
}

void gzip_body_free(gzip_body *g)
{
    if (!g)
        return;
    deflateEnd(&g->zs);
    free(g->buf);
    free(g);
}

int gzip_body_compress(gzip_body *g, const void *in, size_t len, const unsigned char **out,
                       size_t *out_len)
{
    if ((uLong)len != len || deflateReset(&g->zs) != Z_OK)
        return -1;
    size_t need = deflateBound(&g->zs, (uLong)len);
    if (need > g->cap) {
        size_t cap = g->cap ? g->cap : 4096;
        while (cap < need)
            cap *= 2;
        unsigned char *nb = realloc(g->buf, cap);
        if (!nb)
            return -1;
        g->buf = nb;
        g->cap = cap;
    }
    g->zs.next_in = (Bytef *)(uintptr_t)in;
    g->zs.avail_in = (uInt)len;
    g->zs.next_out = g->buf;
    g->zs.avail_out = (uInt)g->cap;
    /* deflateBound guarantees one Z_FINISH call completes. */
    if (deflate(&g->zs, Z_FINISH) != Z_STREAM_END)
        return -1;
    *out = g->buf;
    *out_len = g->cap - g->zs.avail_out;
    return 0;
}

/* Reads the q value of a coding's parameters (";q=0.5"); 1.0 when absent. */
static double coding_quality(const char *p, const char *end)
{
    while (p < end) {
        while (p < end && (*p == ';' || *p == ' ' || *p == '\t'))
            p++;
        if (end - p >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
            p += 2;
            double q = 0, scale = 0;
            for (; p < end && (isdigit((unsigned char)*p) || *p == '.'); p++) {
                if (*p == '.')
                    scale = 1;
                else if (scale > 0)
                    q += (*p - '0') * (scale /= 10);
                else
                    q = q * 10 + (*p - '0');
            }
            return q;
        }
        while (p < end && *p != ';')
            p++;
    }
    return 1.0;
}

static bool token_is(const char *p, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(p, word, n) == 0;
}

bool gzip_accepted(const char *accept_encoding)
{
    if (!accept_encoding)
        return false;
    int gzip = -1, star = -1;      /* -1 unmentioned, 0 refused, 1 accepted */
    const char *p = accept_encoding;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *elem_end = strchr(p, ',');
        if (!elem_end)
            elem_end = p + strlen(p);
        const char *tok_end = p;
        while (tok_end < elem_end && *tok_end != ';' && *tok_end != ' ' && *tok_end != '\t')
            tok_end++;
        int verdict = coding_quality(tok_end, elem_end) > 0 ? 1 : 0;
        size_t n = (size_t)(tok_end - p);
        if (token_is(p, n, "gzip") || token_is(p, n, "x-gzip"))
            gzip = verdict;
        else if (token_is(p, n, "*"))
            star = verdict;
        p = elem_end;
    }
    if (gzip >= 0)
        return gzip == 1;
    return star == 1;
}
