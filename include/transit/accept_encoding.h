/* accept_encoding.h — which content coding to answer with, from Accept-Encoding.
 *
 * Why it exists: a client lists the codings it takes, with preferences, in one
 * header (RFC 9110 §12.5.3): "gzip, deflate, br", "br;q=1.0, gzip;q=0.8, *;q=0.1",
 * "gzip;q=0" (a refusal), "identity" or "" (no coding at all). The server offers a
 * few codings and must pick the one the client prefers among them, the server's
 * own order breaking ties, and must never send one the client refused. Pure C,
 * used by the HTTP layer for every compressible response.
 */
#ifndef TRANSIT_ACCEPT_ENCODING_H
#define TRANSIT_ACCEPT_ENCODING_H

#include <stddef.h>

/* The codings the server can send. */
typedef enum content_coding {
    CODING_IDENTITY,   /* the body as it is */
    CODING_GZIP,
    CODING_BR,         /* Brotli, RFC 7932 */
    CODING_COUNT
} content_coding;

/* "identity", "gzip", "br": the token of Content-Encoding (and of Accept-Encoding). */
const char *content_coding_name(content_coding coding);

/* What one Accept-Encoding field value says of each coding the server offers: its
 * weight in thousandths (q=0.5 is 500), 0 when refused or not acceptable.
 *
 * - Tokens compare case-insensitively; "x-gzip" is gzip (RFC 9110 §8.4.1.3).
 * - A coding the field names takes that entry's weight (named twice: the lower
 *   one, so a refusal is never overridden); one it does not name takes the
 *   weight of "*" when "*" is there, else 0.
 * - identity is acceptable unless refused ("identity;q=0", or "*;q=0" without an
 *   entry for identity); when the field leaves it unnamed (and there is no "*"),
 *   it has the least positive weight, 1, so any coding the client names wins.
 * - An element that does not parse (a bad token, a weight outside qvalue's
 *   grammar such as "q=1.5" or "q=0.0001", a parameter other than q) is skipped
 *   as if absent; empty elements (",,") are allowed, as the list rule says.
 * - An empty value means identity only. */
typedef struct accept_encoding {
    int weight[CODING_COUNT];
} accept_encoding;

void accept_encoding_parse(const char *value, size_t len, accept_encoding *out);

/* The coding to answer with: of those in `offered` (in the server's order of
 * preference, n of them) and identity (always offered, last), the one with the
 * highest positive weight, the earlier one on a tie; identity when none has a
 * positive weight (RFC 9110 §12.5.3: send no coding rather than one the client
 * did not ask for). A NULL value (no
 * Accept-Encoding in the request) means identity: the server compresses only
 * for clients that say they decode. */
content_coding accept_encoding_choose(const char *value, size_t len, const content_coding *offered,
                                      size_t n);

#endif
