/* fuzz_accept_encoding.c — libFuzzer target for the Accept-Encoding reader
 * (src/http/accept_encoding.c), which sees every request's header as the client
 * sent it.
 *
 * Why it exists: besides crashes, UB and reads past the value (it gets exactly
 * `size` bytes, no NUL), the target checks what must hold for any input:
 * weights are 0..1000; the coding chosen is one the server offered or identity,
 * and never one the value refused (weight 0) unless it is identity; the choice
 * does not change when the value is upper-cased (tokens and "q" are
 * case-insensitive) or wrapped in empty list elements and whitespace; and
 * splitting the value at a comma into two header lines joined by ", " (how a
 * proxy may combine them) gives the same weights.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transit/accept_encoding.h"

static const content_coding server_order[] = {CODING_BR, CODING_GZIP};

static content_coding choose(const char *v, size_t n)
{
    return accept_encoding_choose(v, n, server_order, 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *v = malloc(size ? size : 1);
    memcpy(v, data, size);

    accept_encoding ae;
    accept_encoding_parse(v, size, &ae);
    for (int c = 0; c < CODING_COUNT; c++)
        if (ae.weight[c] < 0 || ae.weight[c] > 1000)
            abort();
    content_coding chosen = choose(v, size);
    if (chosen >= CODING_COUNT)
        abort();
    if (chosen != CODING_IDENTITY && ae.weight[chosen] == 0)
        abort();
    if (chosen != CODING_IDENTITY && ae.weight[chosen] < ae.weight[CODING_IDENTITY])
        abort();

    /* the same value in capitals */
    char *upper = malloc(size ? size : 1);
    for (size_t i = 0; i < size; i++)
        upper[i] = (char)toupper((unsigned char)v[i]);
    if (choose(upper, size) != chosen)
        abort();
    free(upper);

    /* wrapped in empty elements and whitespace: " ,\t" + value + "\t, " */
    char *wrapped = malloc(size + 6);
    memcpy(wrapped, " ,\t", 3);
    memcpy(wrapped + 3, v, size);
    memcpy(wrapped + 3 + size, "\t, ", 3);
    accept_encoding ae_wrapped;
    accept_encoding_parse(wrapped, size + 6, &ae_wrapped);
    if (memcmp(&ae, &ae_wrapped, sizeof ae) != 0)
        abort();
    free(wrapped);

    /* "a,b" read as "a, b": a space after a comma starts the next element */
    const char *comma = memchr(v, ',', size);
    if (comma) {
        size_t head = (size_t)(comma - v);
        accept_encoding joined;
        char *two = malloc(size + 1);
        memcpy(two, v, head);
        memcpy(two + head, ", ", 2);
        memcpy(two + head + 2, comma + 1, size - head - 1);
        accept_encoding_parse(two, size + 1, &joined);
        if (memcmp(&ae, &joined, sizeof ae) != 0)
            abort();
        free(two);
    }
    free(v);
    return 0;
}
