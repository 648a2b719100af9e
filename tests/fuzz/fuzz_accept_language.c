/* fuzz_accept_language.c — libFuzzer target for the Accept-Language reader
 * (src/http/accept_language.c), which sees every request's header as the client
 * sent it.
 *
 * Why it exists: besides crashes, UB and reads past the value (it gets exactly
 * `size` bytes, no NUL), the target checks what must hold for any input: the
 * choice is -1 or an index of the offered languages; it does not change when the
 * value is upper-cased (ranges and "q" are case-insensitive) or wrapped in empty
 * list elements and whitespace; and a value offered nothing chooses nothing. The
 * ranking (accept_language_rank) must agree with the choice on every subset of the
 * offered languages: its first index in the subset is the subset's choice.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transit/accept_language.h"

static const char *const offered[] = {"en", "de", "de-CH", "fr", "zh-Hant"};
#define OFFERED_COUNT (sizeof offered / sizeof offered[0])

static int choose(const char *v, size_t n)
{
    return accept_language_choose(v, n, offered, OFFERED_COUNT);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *v = malloc(size ? size : 1);
    memcpy(v, data, size);

    int chosen = choose(v, size);
    if (chosen < -1 || chosen >= (int)OFFERED_COUNT)
        abort();
    if (accept_language_choose(v, size, NULL, 0) != -1)
        abort();

    /* the ranking against every subset of the offered languages */
    int order[OFFERED_COUNT];
    size_t ranked = accept_language_rank(v, size, offered, OFFERED_COUNT, order, OFFERED_COUNT);
    if (ranked > OFFERED_COUNT || (ranked ? order[0] : -1) != chosen)
        abort();
    for (unsigned mask = 0; mask < (1u << OFFERED_COUNT); mask++) {
        const char *subset[OFFERED_COUNT];
        int index_of[OFFERED_COUNT];
        size_t m = 0;
        for (size_t i = 0; i < OFFERED_COUNT; i++)
            if (mask & (1u << i)) {
                index_of[m] = (int)i;
                subset[m++] = offered[i];
            }
        int sub = accept_language_choose(v, size, subset, m);
        int expect = -1;
        for (size_t k = 0; k < ranked && expect < 0; k++)
            if (mask & (1u << order[k]))
                expect = order[k];
        if ((sub < 0 ? -1 : index_of[sub]) != expect)
            abort();
    }

    /* the same value in capitals */
    char *upper = malloc(size ? size : 1);
    for (size_t i = 0; i < size; i++)
        upper[i] = (char)toupper((unsigned char)v[i]);
    if (choose(upper, size) != chosen)
        abort();
    free(upper);

    /* wrapped in whitespace: " \t" + value + "\t " changes no element that
     * parsed (the first and last element only gain optional whitespace) */
    char *wrapped = malloc(size + 4);
    memcpy(wrapped, " \t", 2);
    memcpy(wrapped + 2, v, size);
    memcpy(wrapped + 2 + size, "\t ", 2);
    if (choose(wrapped, size + 4) != chosen)
        abort();
    free(wrapped);
    free(v);
    return 0;
}
