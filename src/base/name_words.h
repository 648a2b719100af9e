/* name_words.h — the words of a name, folded for matching a search.
 *
 * Why it exists: the stop search matches the names of a feed's translations
 * (store/translations.c) word by word, as SQLite FTS5's unicode61 tokenizer
 * with remove_diacritics matches the feed's own names: a search text and the
 * names it is matched against must be cut and folded alike. A word is a run of
 * letters and digits (ASCII, and every byte of a UTF-8 sequence); ASCII is
 * lower-cased and the letters of Latin-1 (U+00C0..U+00FF: é, ü, ß ...) lose
 * their accents. Pure C, allocation-free, reads only up to the NUL.
 */
#ifndef TRANSIT_NAME_WORDS_H
#define TRANSIT_NAME_WORDS_H

#include <stddef.h>

#define NAME_WORD_MAX 64   /* bytes of a folded word kept; the rest of a longer one is dropped */

/* The next word of the NUL-terminated s from *at: its folded bytes in out (at
 * most NAME_WORD_MAX) and their count, *at moved past it; 0 when no word is
 * left. */
size_t name_word_next(const char *s, size_t *at, char out[NAME_WORD_MAX]);

#endif
