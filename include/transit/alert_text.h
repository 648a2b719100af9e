/* alert_text.h — an alert's texts in the language a request reads.
 *
 * Why it exists: an alert's header_text, description_text and url are
 * GTFS-Realtime TranslatedStrings, each with any number of translations. A
 * client (an app's generated model, a phone's screen) wants one text per field,
 * the one in its reader's language, and the API still gives every translation to
 * those that want them all. Which one: the request's Accept-Language looked up
 * (RFC 4647, accept_language.h) among the languages of the alerts being shown,
 * ranked once per request (alert_language.ranked), then per text the first of
 * those ranked that it has; else the feed's language; else the translation
 * without a language; else the first. Each text is written as
 * {"text":<chosen>,"language":<its tag, when it has one>,"translation":[all]}.
 * Allocation-free: the pieces were rendered when the alert was made (alert.c).
 */
#ifndef TRANSIT_ALERT_TEXT_H
#define TRANSIT_ALERT_TEXT_H

#include <stdbool.h>
#include <stdint.h>

#include "transit/alert.h"
#include "transit/json_writer.h"

#define ALERT_LANGUAGES_RANKED 16   /* of the client's languages, at most this many count */
#define ALERT_LANGUAGES_WRITTEN 4   /* languages a response says it was written in */

/* The languages one request reads alerts in, and those its texts were
 * written in (for Content-Language). */
typedef struct alert_language {
    const char *ranked[ALERT_LANGUAGES_RANKED];   /* most preferred first; tags as the alerts give them */
    uint32_t nranked;
    const char *fallback;           /* the feed's language (feed_info.feed_lang, agency_lang), or NULL */
    /* filled while writing: the distinct tags of the chosen translations */
    const char *written[ALERT_LANGUAGES_WRITTEN];
    uint32_t nwritten;
    bool written_untagged;          /* a chosen translation had no language */
} alert_language;

/* The index of t's translation in `lang` (NULL: none asked, no feed language):
 * the first ranked language t has, else the fallback's, else the one without a
 * language, else the first. t->count must be at least 1. */
uint32_t alert_text_choose(const alert_text *t, const alert_language *lang);

/* Writes alert a's representation as a JSON value: a->json's members with each
 * text's translation chosen for lang (NULL as for alert_text_choose), and
 * notes the chosen languages in lang->written. */
void alert_write(json_writer *w, const alert *a, alert_language *lang);

/* Whether a has a text with more than one translation (its representation then
 * depends on the language asked for). */
bool alert_multilingual(const alert *a);

#endif
