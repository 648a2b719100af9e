/* fuzz_byte_size.c — libFuzzer target for the sizes an operator types
 * (src/base/byte_size.c, `transitd import --memory-budget`).
 *
 * Why it exists: the parser reads operator text with hand-written overflow
 * checks. Besides crashes and UB it checks what must hold: an accepted size
 * is between 1 and 2^62, and the text starts with a digit and has no byte
 * outside digits, '.', the suffix letters and 'B'.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transit/byte_size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    uint64_t v = 0;
    if (byte_size_parse(s, &v) == 0) {
        if (v < 1 || v > ((uint64_t)1 << 62) || s[0] < '0' || s[0] > '9') abort();
        if (s[strspn(s, "0123456789.kKmMgGtTiBb")] != '\0') abort();
    }
    free(s);
    return 0;
}
