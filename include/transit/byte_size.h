/* byte_size.h — sizes an operator types ("1.5G", "800M", "4096").
 *
 * Why it exists: `transitd import --memory-budget SIZE` takes one, and the
 * same rule (binary multiples, a clear refusal of anything else) should hold
 * wherever a size is typed.
 */
#ifndef TRANSIT_BYTE_SIZE_H
#define TRANSIT_BYTE_SIZE_H

#include <stdint.h>

/* Digits with an optional fraction, then optionally K, M, G or T (powers of
 * 1024, either case), optionally followed by "B" or "iB"; a bare number, or
 * one with "B", is bytes. The result is rounded down to whole bytes and must
 * be at least 1 and at most 2^62. 0, or -1 for anything else. */
int byte_size_parse(const char *s, uint64_t *out);

#endif
