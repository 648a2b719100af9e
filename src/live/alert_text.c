/* alert_text.c — writes an alert with each text's translation chosen for a
 * request's languages; see alert_text.h.
 *
 * Why it exists apart from alert.c: alert.c checks and renders with jansson
 * once per write; this runs per response (boards, the alerts list), links no
 * JSON parser (the phone's library has it too) and only copies the pieces
 * alert.c rendered.
 */
#include "transit/alert_text.h"

#include <string.h>
#include <strings.h>

static uint32_t find_language(const alert_text *t, const char *tag)
{
    for (uint32_t i = 0; i < t->count; i++)
        if (t->items[i].language && strcasecmp(t->items[i].language, tag) == 0)
            return i;
    return UINT32_MAX;
}

uint32_t alert_text_choose(const alert_text *t, const alert_language *lang)
{
    if (t->count == 1)
        return 0;
    uint32_t i = UINT32_MAX;
    for (uint32_t r = 0; lang && r < lang->nranked && i == UINT32_MAX; r++)
        i = find_language(t, lang->ranked[r]);
    if (i == UINT32_MAX && lang && lang->fallback && lang->fallback[0])
        i = find_language(t, lang->fallback);
    for (uint32_t k = 0; i == UINT32_MAX && k < t->count; k++)
        if (!t->items[k].language)
            i = k;
    return i == UINT32_MAX ? 0 : i;
}

bool alert_multilingual(const alert *a)
{
    for (int f = 0; f < ALERT_TEXT_FIELDS; f++)
        if (a->texts[f].count > 1)
            return true;
    return false;
}

static void note_written(alert_language *lang, const char *tag)
{
    if (!tag) {
        lang->written_untagged = true;
        return;
    }
    for (uint32_t k = 0; k < lang->nwritten; k++)
        if (strcasecmp(lang->written[k], tag) == 0)
            return;
    if (lang->nwritten < ALERT_LANGUAGES_WRITTEN)
        lang->written[lang->nwritten++] = tag;
}

static const char *const TEXT_KEYS[ALERT_TEXT_FIELDS] = {",\"header_text\":", ",\"description_text\":", ",\"url\":"};

void alert_write(json_writer *w, const alert *a, alert_language *lang)
{
    uint32_t chosen[ALERT_TEXT_FIELDS];
    size_t need = a->head_len + 2;
    for (int f = 0; f < ALERT_TEXT_FIELDS; f++) {
        const alert_text *t = &a->texts[f];
        need += strlen(TEXT_KEYS[f]) + 4;
        if (!t->count)
            continue;
        chosen[f] = alert_text_choose(t, lang);
        const alert_translation *tr = &t->items[chosen[f]];
        need += 48 + tr->text_json_len + (tr->language ? strlen(tr->language) : 0) + t->translations_json_len;
    }
    char *p = json_raw_begin(w, need);
    if (!p)
        return;
    p = json_put_bytes(p, a->head, a->head_len);
    for (int f = 0; f < ALERT_TEXT_FIELDS; f++) {
        const alert_text *t = &a->texts[f];
        p = json_put_bytes(p, TEXT_KEYS[f], strlen(TEXT_KEYS[f]));
        if (!t->count) {
            p = json_put_bytes(p, "null", 4);
            continue;
        }
        const alert_translation *tr = &t->items[chosen[f]];
        p = json_put_bytes(p, "{\"text\":", 8);
        p = json_put_bytes(p, tr->text_json, tr->text_json_len);
        if (tr->language) {   /* a tag is [A-Za-z0-9-] (alert.c): no escaping */
            p = json_put_bytes(p, ",\"language\":\"", 13);
            p = json_put_bytes(p, tr->language, strlen(tr->language));
            *p++ = '"';
        }
        p = json_put_bytes(p, ",\"translation\":", 15);
        p = json_put_bytes(p, t->translations_json, t->translations_json_len);
        *p++ = '}';
        if (lang)
            note_written(lang, tr->language);
    }
    *p++ = '}';
    json_raw_end(w, p);
}
