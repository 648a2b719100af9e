/* translations.h — a dataset's names in other languages (GTFS translations.txt).
 *
 * Why it exists: a feed may name its stops, routes, agencies and headsigns in
 * several languages; a request's Accept-Language (accept_language.h) picks one.
 * The import keeps translations.txt in schedule.sqlite (table translations); this
 * reads it once per dataset into one array per language and field, indexed like
 * the dataset's records, so that a translated response costs one load per name.
 * A dataset without translations has none of this: zero languages, and the
 * responses take the path they always took.
 */
#ifndef TRANSIT_TRANSLATIONS_H
#define TRANSIT_TRANSLATIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transit/query.h"

typedef enum translated_field {
    TRANSLATED_AGENCY_NAME,        /* by agency index */
    TRANSLATED_STOP_NAME,          /* by stop index */
    TRANSLATED_ROUTE_SHORT_NAME,   /* by route index */
    TRANSLATED_ROUTE_LONG_NAME,    /* by route index */
    TRANSLATED_TRIP_HEADSIGN,      /* by trip index */
    TRANSLATED_FIELD_COUNT
} translated_field;

/* Languages beyond the feed's own that one dataset answers in; further ones in
 * translations.txt are left out (the count of per-language texts stays bounded). */
#define TRANSLATION_LANGUAGES_MAX 8

typedef struct dataset_translations dataset_translations;

/* The dataset's translations, read from its schedule.sqlite on the first call
 * (a dataset extension; the server asks when it installs a dataset) and kept
 * with it. A dataset without the table, or with no usable row, has zero
 * languages. NULL with err when schedule.sqlite cannot be read. */
const dataset_translations *dataset_translations_get(dataset *ds, char *err, size_t errlen);

/* The languages to choose from, for accept_language_choose: tags[0] is the
 * feed's own (feed_info.feed_lang, else the first agency's agency_lang; "" when
 * neither names one), tags[1..] those of the translations. Returns how many
 * (1 when the dataset has no translations). */
size_t translations_languages(const dataset_translations *t, const char *const **tags);

/* The translation of `field` of record `index` in language `language` (an index
 * of translations_languages' tags, at least 1), or NULL when there is none (the
 * caller writes the feed's text). Rows by record_id win over rows by field_value. */
const char *translation_of(const dataset_translations *t, int language, translated_field field,
                           uint32_t index);

/* The translation of a text rather than a record: for TRANSLATED_TRIP_HEADSIGN
 * (the only field it knows), the headsign's translation by field_value, else
 * that of the first trip with this headsign that rows by record_id translate;
 * NULL when there is none (or t is NULL, language < 1). For texts no one trip
 * stands for: a stop's list of headsigns, a realtime-added trip's headsign.
 * One hash look-up. */
const char *translation_of_text(const dataset_translations *t, int language, translated_field field,
                                const char *text);

/* The stops whose name in `language` has, for every word of `query`, a word
 * beginning with it (letters and digits; ASCII case and Latin-1 accents folded,
 * as the feed names' search does): their indices into out (at most max, each
 * once, in the order of the words they matched by), *more when there are more.
 * 0 when the language translates no stop name. The words are indexed when the
 * translations are read. */
uint32_t translations_find_stops(const dataset_translations *t, int language, const char *query, uint32_t *out,
                                 uint32_t max, bool *more);

/* `text` in `language` when t and language >= 1 say so, else `text` itself. */
static inline const char *translated(const dataset_translations *t, int language, translated_field field,
                                     uint32_t index, const char *text)
{
    if (!t || language < 1)
        return text;
    const char *other = translation_of(t, language, field, index);
    return other ? other : text;
}

/* `text` (no record of its own) in `language`, as translation_of_text says, else `text`. */
static inline const char *translated_text(const dataset_translations *t, int language, translated_field field,
                                          const char *text)
{
    if (!t || language < 1)
        return text;
    const char *other = translation_of_text(t, language, field, text);
    return other ? other : text;
}

#endif
