/* name_words.c — cuts a name into folded words; see name_words.h. */
#include "base/name_words.h"

#include <stdbool.h>

/* The base letter of U+00C0 + i (the byte after 0xC3 is 0x80 + i), or 0 (×, ÷). */
static const char LATIN1_BASE[64] = "aaaaaaaceeeeiiiidnooooo\0ouuuuyts"
                                    "aaaaaaaceeeeiiiidnooooo\0ouuuuyty";

static bool word_byte(unsigned char c)
{
    return c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

size_t name_word_next(const char *s, size_t *at, char out[NAME_WORD_MAX])
{
    const unsigned char *p = (const unsigned char *)s + *at;
    while (*p && !word_byte(*p))
        p++;
    size_t n = 0;
    while (*p && word_byte(*p)) {
        unsigned char c = *p++;
        if (c == 0xC3 && *p >= 0x80 && *p <= 0xBF && LATIN1_BASE[*p - 0x80]) {
            c = (unsigned char)LATIN1_BASE[*p - 0x80];
            p++;
        } else if (c >= 'A' && c <= 'Z') {
            c = (unsigned char)(c - 'A' + 'a');
        }
        if (n < NAME_WORD_MAX)
            out[n++] = (char)c;
    }
    *at = (size_t)((const char *)p - s);
    return n;
}
