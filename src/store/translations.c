/* translations.c — reads a dataset's translations (schedule.sqlite's
 * table translations) into one array per language and field.
 *
 * Why it exists: see include/transit/translations.h. Rows by field_value are
 * applied first, to every record whose text is that value (one hash look-up per
 * record), then rows by record_id, which override them, as the GTFS reference
 * says. Done once per dataset, as a dataset extension; a dataset without the
 * table costs one query.
 */
#include "transit/translations.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sqlite3.h>

#include "base/name_words.h"
#include "base/strmap.h"
#include "store/sqlite_uri.h"

#define TAG_MAX 36

/* One word of a translated stop name: its folded bytes in stop_word_text. */
typedef struct name_word {
    uint32_t off, stop;
    uint16_t len;
} name_word;

struct dataset_translations {
    const char *tags[TRANSLATION_LANGUAGES_MAX + 1];
    char tag_text[TRANSLATION_LANGUAGES_MAX + 1][TAG_MAX];
    size_t ntags;
    uint32_t records[TRANSLATED_FIELD_COUNT];
    /* [language][field]: records[field] texts (NULL: not translated), or NULL */
    const char **text[TRANSLATION_LANGUAGES_MAX + 1][TRANSLATED_FIELD_COUNT];
    char **owned;                 /* every translation's text */
    size_t nowned, owned_cap;
    /* [language]: a trip_headsign's text → its translation (translation_of_text):
     * owned[value], or, with HEADSIGN_BY_TRIP set, text[language][headsign][value's trip] */
    strmap headsign_by_text[TRANSLATION_LANGUAGES_MAX + 1];
    bool has_headsign_map[TRANSLATION_LANGUAGES_MAX + 1];
    /* [language]: the words of the translated stop names, folded (fold_word) and
     * sorted, for translations_find_stops */
    name_word *stop_words[TRANSLATION_LANGUAGES_MAX + 1];
    uint32_t nstop_words[TRANSLATION_LANGUAGES_MAX + 1];
    char *stop_word_text[TRANSLATION_LANGUAGES_MAX + 1];
};

#define HEADSIGN_BY_TRIP 0x80000000u

static const char *const FIELD_NAMES[TRANSLATED_FIELD_COUNT][2] = {
    [TRANSLATED_AGENCY_NAME] = {"agency", "agency_name"},
    [TRANSLATED_STOP_NAME] = {"stops", "stop_name"},
    [TRANSLATED_ROUTE_SHORT_NAME] = {"routes", "route_short_name"},
    [TRANSLATED_ROUTE_LONG_NAME] = {"routes", "route_long_name"},
    [TRANSLATED_TRIP_HEADSIGN] = {"trips", "trip_headsign"},
};

static void release_translations(void *derived)
{
    dataset_translations *t = derived;
    if (!t)
        return;
    for (size_t l = 0; l <= TRANSLATION_LANGUAGES_MAX; l++)
        for (int f = 0; f < TRANSLATED_FIELD_COUNT; f++)
            free(t->text[l][f]);
    for (size_t i = 0; i < t->nowned; i++)
        free(t->owned[i]);
    free(t->owned);
    for (size_t l = 0; l <= TRANSLATION_LANGUAGES_MAX; l++) {
        if (t->has_headsign_map[l])
            strmap_free(&t->headsign_by_text[l]);
        free(t->stop_words[l]);
        free(t->stop_word_text[l]);
    }
    free(t);
}

static int field_of(const char *table, const char *field)
{
    for (int f = 0; f < TRANSLATED_FIELD_COUNT; f++)
        if (strcmp(table, FIELD_NAMES[f][0]) == 0 && strcmp(field, FIELD_NAMES[f][1]) == 0)
            return f;
    return -1;
}

/* The language's index, added when new and there is room; -1 for the feed's
 * own language (nothing to translate), a tag too long, or no room. */
static int language_of(dataset_translations *t, const char *tag)
{
    for (size_t l = 0; l < t->ntags; l++)
        if (strcasecmp(t->tags[l], tag) == 0)
            return l == 0 ? -1 : (int)l;
    if (t->ntags > TRANSLATION_LANGUAGES_MAX || strlen(tag) >= TAG_MAX)
        return -1;
    snprintf(t->tag_text[t->ntags], TAG_MAX, "%s", tag);
    t->tags[t->ntags] = t->tag_text[t->ntags];
    return (int)t->ntags++;
}

/* The record's text in the feed, for the rows by field_value. */
static const char *record_text(const dataset *ds, int field, uint32_t i)
{
    switch (field) {
    case TRANSLATED_AGENCY_NAME: {
        agency_info a;
        dataset_agency(ds, i, &a);
        return a.name;
    }
    case TRANSLATED_STOP_NAME: {
        stop_info s;
        dataset_stop(ds, i, &s);
        return s.name;
    }
    case TRANSLATED_ROUTE_SHORT_NAME:
    case TRANSLATED_ROUTE_LONG_NAME: {
        route_info r;
        dataset_route(ds, i, &r);
        return field == TRANSLATED_ROUTE_SHORT_NAME ? r.short_name : r.long_name;
    }
    default: {
        trip_info tr;
        dataset_trip(ds, i, &tr);
        return tr.headsign;
    }
    }
}

static uint32_t record_index(const dataset *ds, const dataset_translations *t, int field, const char *id)
{
    size_t len = strlen(id);
    switch (field) {
    case TRANSLATED_AGENCY_NAME:
        for (uint32_t i = 0; i < t->records[field]; i++) {
            agency_info a;
            dataset_agency(ds, i, &a);
            if (strcmp(a.id, id) == 0)
                return i;
        }
        return QUERY_NONE;
    case TRANSLATED_STOP_NAME:
        return dataset_find_stop(ds, id, len);
    case TRANSLATED_ROUTE_SHORT_NAME:
    case TRANSLATED_ROUTE_LONG_NAME:
        return dataset_find_route(ds, id, len);
    default:
        return dataset_find_trip(ds, id, len);
    }
}

/* A copy of the text kept with the translations; NULL when out of memory. */
static const char *keep(dataset_translations *t, const char *text)
{
    if (t->nowned == t->owned_cap) {
        size_t cap = t->owned_cap ? 2 * t->owned_cap : 64;
        char **owned = realloc(t->owned, cap * sizeof *owned);
        if (!owned)
            return NULL;
        t->owned = owned;
        t->owned_cap = cap;
    }
    char *copy = strdup(text);
    if (copy)
        t->owned[t->nowned++] = copy;
    return copy;
}

static const char **texts_of(dataset_translations *t, int language, int field)
{
    if (!t->text[language][field])
        t->text[language][field] = calloc(t->records[field] ? t->records[field] : 1, sizeof(const char *));
    return t->text[language][field];
}

static const char *column(sqlite3_stmt *s, int i)
{
    const unsigned char *v = sqlite3_column_text(s, i);
    return v ? (const char *)v : "";
}

/* Rows by field_value: a map per language and field from the value to the
 * translation, then every record looked up in it. 0, or -1 (out of memory). */
static int apply_by_value(const dataset *ds, dataset_translations *t, sqlite3_stmt *s)
{
    strmap maps[TRANSLATION_LANGUAGES_MAX + 1][TRANSLATED_FIELD_COUNT];
    bool used[TRANSLATION_LANGUAGES_MAX + 1][TRANSLATED_FIELD_COUNT] = {{false}};
    int rc = 0;
    while (rc == 0 && sqlite3_step(s) == SQLITE_ROW) {
        int field = field_of(column(s, 1), column(s, 2));
        int language = field < 0 ? -1 : language_of(t, column(s, 0));
        if (language < 0)
            continue;
        if (!used[language][field]) {
            if (strmap_init(&maps[language][field], 64) != 0) {
                rc = -1;
                break;
            }
            used[language][field] = true;
        }
        const char *value = column(s, 4);
        const char *text = keep(t, column(s, 5));
        int inserted;
        if (!text || strmap_put(&maps[language][field], value, strlen(value), (uint32_t)(t->nowned - 1),
                                &inserted) == UINT32_MAX)
            rc = -1;
    }
    for (size_t l = 0; l < t->ntags; l++)
        for (int f = 0; f < TRANSLATED_FIELD_COUNT; f++) {
            if (!used[l][f])
                continue;
            const char **texts = rc == 0 ? texts_of(t, (int)l, f) : NULL;
            if (rc == 0 && !texts)
                rc = -1;
            for (uint32_t i = 0; rc == 0 && i < t->records[f]; i++) {
                const char *own = record_text(ds, f, i);
                uint32_t k = own && *own ? strmap_get(&maps[l][f], own, strlen(own)) : UINT32_MAX;
                if (k != UINT32_MAX)
                    texts[i] = t->owned[k];
            }
            if (rc == 0 && f == TRANSLATED_TRIP_HEADSIGN) {   /* kept for translation_of_text */
                t->headsign_by_text[l] = maps[l][f];
                t->has_headsign_map[l] = true;
            } else {
                strmap_free(&maps[l][f]);
            }
        }
    return rc;
}

/* Rows by record_id, over what the rows by value said. 0, or -1. */
static int apply_by_record(const dataset *ds, dataset_translations *t, sqlite3_stmt *s)
{
    while (sqlite3_step(s) == SQLITE_ROW) {
        int field = field_of(column(s, 1), column(s, 2));
        int language = field < 0 ? -1 : language_of(t, column(s, 0));
        if (language < 0)
            continue;
        uint32_t i = record_index(ds, t, field, column(s, 3));
        if (i == QUERY_NONE || i >= t->records[field])
            continue;
        const char **texts = texts_of(t, language, field);
        const char *text = texts ? keep(t, column(s, 5)) : NULL;
        if (!text)
            return -1;
        texts[i] = text;
    }
    return 0;
}

/* feed_info.feed_lang, else the first agency's agency_lang ("mul" names no one language). */
static void feed_language(const dataset *ds, sqlite3 *db, char out[TAG_MAX])
{
    out[0] = '\0';
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT feed_lang FROM feed_info LIMIT 1", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        snprintf(out, TAG_MAX, "%s", column(s, 0));
    sqlite3_finalize(s);
    if (!out[0] && dataset_agency_count(ds) > 0) {
        agency_info a;
        dataset_agency(ds, 0, &a);
        snprintf(out, TAG_MAX, "%s", a.lang ? a.lang : "");
    }
    if (strcasecmp(out, "mul") == 0)
        out[0] = '\0';
}

/* Completes each language's headsign map with the texts that only rows by
 * record_id translate: a text gets the translation of its first trip that
 * has one (rows by field_value, put first, keep theirs). 0, or -1. */
static int map_headsigns(const dataset *ds, dataset_translations *t)
{
    for (size_t l = 1; l < t->ntags; l++) {
        const char **texts = t->text[l][TRANSLATED_TRIP_HEADSIGN];
        if (!texts)
            continue;
        if (!t->has_headsign_map[l]) {
            if (strmap_init(&t->headsign_by_text[l], 64) != 0)
                return -1;
            t->has_headsign_map[l] = true;
        }
        for (uint32_t i = 0; i < t->records[TRANSLATED_TRIP_HEADSIGN]; i++) {
            const char *own = texts[i] ? record_text(ds, TRANSLATED_TRIP_HEADSIGN, i) : NULL;
            int inserted;
            if (own && *own &&
                strmap_put(&t->headsign_by_text[l], own, strlen(own), HEADSIGN_BY_TRIP | i, &inserted) == UINT32_MAX)
                return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ words of the stop names
 * Cut and folded by base/name_words.h, as the feed names' search (SQLite FTS5
 * unicode61, remove_diacritics) would: "fosse" finds "Fossé". */

#define WORDS_MAX_QUERY 8

static const dataset_translations *sorting;   /* qsort's context: derive runs under the extension lock */
static int sorting_language;

static int compare_words(const void *a, const void *b)
{
    const name_word *x = a, *y = b;
    const char *text = sorting->stop_word_text[sorting_language];
    int c = memcmp(text + x->off, text + y->off, x->len < y->len ? x->len : y->len);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->stop < y->stop ? -1 : x->stop > y->stop;
}

/* Each language's sorted words of its translated stop names. 0, or -1. */
static int index_stop_words(dataset_translations *t)
{
    static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;
    for (size_t l = 1; l < t->ntags; l++) {
        const char **names = t->text[l][TRANSLATED_STOP_NAME];
        if (!names)
            continue;
        size_t nwords = 0, bytes = 0;
        for (uint32_t i = 0; i < t->records[TRANSLATED_STOP_NAME]; i++) {
            char w[NAME_WORD_MAX];
            size_t at = 0, n;
            while (names[i] && (n = name_word_next(names[i], &at, w)) > 0)
                nwords++, bytes += n;
        }
        if (nwords == 0 || nwords > UINT32_MAX || bytes > UINT32_MAX)
            continue;
        name_word *words = malloc(nwords * sizeof *words);
        char *text = malloc(bytes);
        if (!words || !text) {
            free(words);
            free(text);
            return -1;
        }
        size_t k = 0, o = 0;
        for (uint32_t i = 0; i < t->records[TRANSLATED_STOP_NAME]; i++) {
            char w[NAME_WORD_MAX];
            size_t at = 0, n;
            while (names[i] && (n = name_word_next(names[i], &at, w)) > 0) {
                memcpy(text + o, w, n);
                words[k++] = (name_word){(uint32_t)o, i, (uint16_t)n};
                o += n;
            }
        }
        t->stop_words[l] = words;
        t->nstop_words[l] = (uint32_t)nwords;
        t->stop_word_text[l] = text;
        pthread_mutex_lock(&sort_lock);
        sorting = t;
        sorting_language = (int)l;
        qsort(words, nwords, sizeof *words, compare_words);
        pthread_mutex_unlock(&sort_lock);
    }
    return 0;
}

/* The first word of language l at or after `prefix` (n bytes) in sort order. */
static uint32_t words_lower_bound(const dataset_translations *t, size_t l, const char *prefix, size_t n)
{
    const char *text = t->stop_word_text[l];
    uint32_t lo = 0, hi = t->nstop_words[l];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const name_word *w = &t->stop_words[l][mid];
        int c = memcmp(text + w->off, prefix, w->len < n ? w->len : n);
        if (c < 0 || (c == 0 && w->len < n))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool word_has_prefix(const dataset_translations *t, size_t l, uint32_t i, const char *prefix, size_t n)
{
    const name_word *w = &t->stop_words[l][i];
    return w->len >= n && memcmp(t->stop_word_text[l] + w->off, prefix, n) == 0;
}

/* Whether every word of the query has a word of `name` it begins. */
static bool name_matches(const char *name, char query[][NAME_WORD_MAX], const size_t *qlen, size_t nq)
{
    for (size_t q = 0; q < nq; q++) {
        char w[NAME_WORD_MAX];
        size_t at = 0, n;
        bool found = false;
        while (!found && (n = name_word_next(name, &at, w)) > 0)
            found = n >= qlen[q] && memcmp(w, query[q], qlen[q]) == 0;
        if (!found)
            return false;
    }
    return true;
}

uint32_t translations_find_stops(const dataset_translations *t, int language, const char *query, uint32_t *out,
                                 uint32_t max, bool *more)
{
    *more = false;
    if (!t || language < 1 || (size_t)language >= t->ntags || !t->stop_words[language] || !query)
        return 0;
    size_t l = (size_t)language;
    char words[WORDS_MAX_QUERY][NAME_WORD_MAX];
    size_t lens[WORDS_MAX_QUERY], nq = 0, at = 0, n;
    while (nq < WORDS_MAX_QUERY && (n = name_word_next(query, &at, words[nq])) > 0)
        lens[nq++] = n;
    if (nq == 0)
        return 0;
    /* the candidates: the words the query's rarest word begins */
    uint32_t first = 0, end = 0;
    for (size_t q = 0; q < nq; q++) {
        uint32_t f = words_lower_bound(t, l, words[q], lens[q]), e = f;
        while (e < t->nstop_words[l] && word_has_prefix(t, l, e, words[q], lens[q]))
            e++;
        if (q == 0 || e - f < end - first)
            first = f, end = e;
    }
    const char **names = t->text[l][TRANSLATED_STOP_NAME];
    uint32_t count = 0;
    for (uint32_t i = first; i < end; i++) {
        uint32_t stop = t->stop_words[l][i].stop;
        bool seen = false;
        for (uint32_t k = 0; k < count && !seen; k++)
            seen = out[k] == stop;
        if (seen || !name_matches(names[stop], words, lens, nq))
            continue;
        if (count == max) {
            *more = true;
            break;
        }
        out[count++] = stop;
    }
    return count;
}

static void *derive_translations(const dataset *ds, char *err, size_t errlen)
{
    dataset_translations *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "translations: out of memory");
        return NULL;
    }
    t->tags[0] = t->tag_text[0];
    t->ntags = 1;
    char uri[8192];
    sqlite3 *db = NULL;
    if (store_sqlite_uri(uri, sizeof uri, dataset_dir(ds), "schedule.sqlite") != 0 ||
        sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK) {
        snprintf(err, errlen, "%s/schedule.sqlite: cannot open for its translations: %s", dataset_dir(ds),
                 db ? sqlite3_errmsg(db) : "path too long");
        sqlite3_close(db);
        release_translations(t);
        return NULL;
    }
    sqlite3_stmt *exists = NULL;
    bool has_table = sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name='translations'",
                                        -1, &exists, NULL) == SQLITE_OK &&
                     sqlite3_step(exists) == SQLITE_ROW;
    sqlite3_finalize(exists);
    if (!has_table) {
        sqlite3_close(db);
        return t;   /* no translations: one language, the feed's, taken as unknown */
    }
    feed_language(ds, db, t->tag_text[0]);
    dataset_counts c;
    dataset_get_counts(ds, &c);
    t->records[TRANSLATED_AGENCY_NAME] = dataset_agency_count(ds);
    t->records[TRANSLATED_STOP_NAME] = c.stops;
    t->records[TRANSLATED_ROUTE_SHORT_NAME] = t->records[TRANSLATED_ROUTE_LONG_NAME] = c.routes;
    t->records[TRANSLATED_TRIP_HEADSIGN] = c.trips;
    static const char ROWS_SQL[] =
        "SELECT language, table_name, field_name, record_id, field_value, translation FROM translations"
        " WHERE (record_id IS NULL) = ?1 ORDER BY rowid";
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, ROWS_SQL, -1, &s, NULL) == SQLITE_OK ? 0 : -1;
    if (rc == 0) {
        sqlite3_bind_int(s, 1, 1);
        rc = apply_by_value(ds, t, s);
    }
    if (rc == 0) {
        sqlite3_reset(s);
        sqlite3_bind_int(s, 1, 0);
        rc = apply_by_record(ds, t, s);
    }
    if (rc == 0)
        rc = map_headsigns(ds, t);
    if (rc == 0)
        rc = index_stop_words(t);
    if (rc != 0)
        snprintf(err, errlen, "%s/schedule.sqlite: translations: %s", dataset_dir(ds),
                 s ? "out of memory" : sqlite3_errmsg(db));
    sqlite3_finalize(s);
    sqlite3_close(db);
    if (rc != 0) {
        release_translations(t);
        return NULL;
    }
    return t;
}

static const dataset_extension translations_extension = {
    "translations", derive_translations, release_translations, NULL, NULL, NULL,
};

const dataset_translations *dataset_translations_get(dataset *ds, char *err, size_t errlen)
{
    return dataset_extension_get(ds, &translations_extension, err, errlen);
}

size_t translations_languages(const dataset_translations *t, const char *const **tags)
{
    *tags = t->tags;
    return t->ntags;
}

const char *translation_of(const dataset_translations *t, int language, translated_field field,
                           uint32_t index)
{
    if (language < 1 || (size_t)language >= t->ntags || field >= TRANSLATED_FIELD_COUNT ||
        index >= t->records[field] || !t->text[language][field])
        return NULL;
    return t->text[language][field][index];
}

const char *translation_of_text(const dataset_translations *t, int language, translated_field field,
                                const char *text)
{
    if (!t || language < 1 || (size_t)language >= t->ntags || field != TRANSLATED_TRIP_HEADSIGN || !text ||
        !*text || !t->has_headsign_map[language])
        return NULL;
    uint32_t v = strmap_get(&t->headsign_by_text[language], text, strlen(text));
    if (v == UINT32_MAX)
        return NULL;
    if (v & HEADSIGN_BY_TRIP)
        return t->text[language][TRANSLATED_TRIP_HEADSIGN][v & ~HEADSIGN_BY_TRIP];
    return t->owned[v];
}
