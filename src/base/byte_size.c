/* byte_size.c — parsing sizes an operator types (see byte_size.h). */
#include "transit/byte_size.h"

#include <stddef.h>

int byte_size_parse(const char *s, uint64_t *out)
{
    if (!s) return -1;
    const uint64_t max = (uint64_t)1 << 62;
    uint64_t whole = 0, frac_num = 0, frac_den = 1;
    size_t i = 0;
    if (s[i] < '0' || s[i] > '9') return -1;
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (whole > (max - d) / 10) return -1;
        whole = whole * 10 + d;
    }
    if (s[i] == '.') {
        i++;
        if (s[i] < '0' || s[i] > '9') return -1;
        for (; s[i] >= '0' && s[i] <= '9'; i++) {
            if (frac_den < 1000000000) { /* nine digits are plenty; the rest cannot change whole bytes of 2^62 */
                frac_num = frac_num * 10 + (uint64_t)(s[i] - '0');
                frac_den *= 10;
            }
        }
    }
    unsigned shift = 0;
    switch (s[i]) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    default: break;
    }
    if (shift) {
        i++;
        if (s[i] == 'i' && (s[i + 1] == 'B' || s[i + 1] == 'b')) i += 2;
        else if (s[i] == 'B' || s[i] == 'b') i++;
    } else if (s[i] == 'B' || s[i] == 'b') {
        i++;
    }
    if (s[i] != '\0') return -1;
    if (whole > (max >> shift)) return -1;
    uint64_t v = whole << shift;
    /* frac_num / frac_den of 2^shift, rounded down: frac_num < frac_den <= 1e9 < 2^30, shift <= 40 */
    uint64_t unit = (uint64_t)1 << shift;
    uint64_t part = (unit / frac_den) * frac_num + ((unit % frac_den) * frac_num) / frac_den;
    if (v > max - part) return -1;
    v += part;
    if (v < 1 || v > max) return -1;
    *out = v;
    return 0;
}
