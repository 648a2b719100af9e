/* fuzz_name_words.c — libFuzzer target for the words of a name (src/base/name_words.c),
 * which cuts every stop search's text (the `q` a client sends) and the translated
 * stop names it is matched against.
 *
 * Why it exists: besides crashes, UB and reads past the text's NUL, the target
 * checks what must hold for any input: the loop over the words ends (each word
 * moves past at least one byte), a word is 1..NAME_WORD_MAX bytes, holds no
 * separator and no capital ASCII letter, and cutting the words of a text once
 * more, joined by spaces, gives the same words (folding is idempotent).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/name_words.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    char *joined = malloc(size * 2 + 2);
    size_t joined_len = 0, at = 0, n, words = 0;
    char w[NAME_WORD_MAX];
    while ((n = name_word_next(s, &at, w)) > 0) {
        if (n > NAME_WORD_MAX || at > size || ++words > size)
            abort();
        for (size_t i = 0; i < n; i++)
            if (w[i] == '\0' || w[i] == ' ' || (w[i] >= 'A' && w[i] <= 'Z'))
                abort();
        if (n < NAME_WORD_MAX) {   /* a cut word is not whole: not compared again */
            memcpy(joined + joined_len, w, n);
            joined_len += n;
            joined[joined_len++] = ' ';
        }
    }
    joined[joined_len] = '\0';
    /* the folded words, cut again, are themselves */
    size_t at2 = 0, k = 0;
    char w2[NAME_WORD_MAX];
    while ((n = name_word_next(joined, &at2, w2)) > 0) {
        size_t start = k;
        while (joined[k] != ' ')
            k++;
        if (n != k - start || memcmp(w2, joined + start, n) != 0)
            abort();
        k++;
    }
    if (k != joined_len)
        abort();
    free(joined);
    free(s);
    return 0;
}
