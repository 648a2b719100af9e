/* accept_language.h — which of a feed's languages to answer in, from Accept-Language.
 *
 * Why it exists: a client lists the languages it reads, with preferences, in one
 * header (RFC 9110 §12.5.4): "de-CH, de;q=0.9, en;q=0.5, *;q=0.1". A feed offers a
 * few languages (its own, from feed_info.feed_lang or agency_lang, and those of
 * translations.txt); the server must pick one by the "lookup" scheme of RFC 4647
 * §3.4, which always yields one tag or the default. Pure C, allocates nothing,
 * reads exactly `len` bytes.
 */
#ifndef TRANSIT_ACCEPT_LANGUAGE_H
#define TRANSIT_ACCEPT_LANGUAGE_H

#include <stddef.h>

/* At most this many ranges of one field value take part; later ones are ignored
 * (the loop over a hostile header stays bounded and allocation-free). */
#define ACCEPT_LANGUAGE_MAX_RANGES 32

/* The index in `available` (n language tags such as "de", "fr", "en") of the
 * language the field value prefers, or -1 for "the default" (the caller's feed
 * language):
 *
 * - Ranges are tried in order of weight (q, default 1), the header's order
 *   breaking ties; a range with q=0 is never used.
 * - Each range is looked up by RFC 4647 §3.4: the whole range, then with its last
 *   subtag removed (and a single-letter subtag left at the end removed with it),
 *   until a tag of `available` matches it exactly, case-insensitively: "de-CH-1996"
 *   tries "de-CH-1996", "de-CH", "de".
 * - "*" matches nothing of its own: it asks for the default, so it ends the lookup
 *   with -1 when its weight comes before any range that matches.
 * - An element that does not parse (a bad range such as "d_e" or a subtag longer
 *   than 8 characters, a weight outside qvalue's grammar such as "q=1.5", another
 *   parameter) is skipped; a value where nothing parses, an empty value and a NULL
 *   value (no header) all give -1. Never an error: a header that cannot be read is
 *   ignored. */
int accept_language_choose(const char *value, size_t len, const char *const *available, size_t n);

/* The order in which the lookup above would try the tags of `available`: the
 * indices of every tag it meets (each once), up to cap of them, ending where a
 * "*" range comes. For any subset S of `available`, the first index of `order`
 * in S is what accept_language_choose would pick among S alone (none: the
 * default), so one ranking serves many texts offered in different languages (an
 * alert's translations). Returns how many indices it wrote. */
size_t accept_language_rank(const char *value, size_t len, const char *const *available, size_t n, int *order,
                            size_t cap);

#endif
