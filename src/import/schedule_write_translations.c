/* schedule_write_translations.c — translations.txt in schedule.sqlite.
 *
 * Why it exists: a feed may give its names in other languages (GTFS
 * translations.txt: table_name, field_name, language, translation, and the
 * record it translates, by record_id [+ record_sub_id] or by field_value). The
 * rows the server can use are kept in the table translations; a feed without the
 * file has no table, and its datasets read exactly as before. A row that breaks
 * the reference's rules is counted in the diag at translations.txt:line, naming
 * the field, and skipped.
 */
#include <stdbool.h>
#include <string.h>

#include "import/schedule_write_internal.h"

static const char TRANSLATIONS_SCHEMA[] =
    "CREATE TABLE translations(table_name TEXT NOT NULL, field_name TEXT NOT NULL,"
    " language TEXT NOT NULL, translation TEXT NOT NULL, record_id TEXT, record_sub_id TEXT,"
    " field_value TEXT);";

enum { K_TABLE, K_FIELD, K_LANGUAGE, K_TRANSLATION, K_RECORD_ID, K_RECORD_SUB_ID, K_FIELD_VALUE,
       TRANSLATION_KEY_COUNT };

static const char *const TRANSLATION_KEYS[] = {
    "table_name", "field_name", "language", "translation", "record_id", "record_sub_id", "field_value"};

/* The tables whose text fields the server answers with (the others of the
 * reference, such as levels or attributions, it never shows). */
static const char *const TRANSLATED_FIELDS[][2] = {
    {"agency", "agency_name"},      {"stops", "stop_name"},
    {"routes", "route_short_name"}, {"routes", "route_long_name"},
    {"trips", "trip_headsign"},     {"stop_times", "stop_headsign"},
};
enum { TRANSLATED_FIELD_COUNT = sizeof TRANSLATED_FIELDS / sizeof *TRANSLATED_FIELDS };

static bool field_is(const csv_field *f, const char *word)
{
    return f->len == strlen(word) && memcmp(f->ptr, word, f->len) == 0;
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* An IETF BCP 47 tag's shape: 1*8ALPHA *("-" 1*8alphanum). */
static bool is_language_tag(const csv_field *f)
{
    size_t subtag = 0;
    bool first = true;
    for (size_t i = 0; i < f->len; i++) {
        char c = f->ptr[i];
        if (c == '-') {
            if (subtag == 0)
                return false;
            subtag = 0;
            first = false;
        } else if (!(is_alpha(c) || (!first && c >= '0' && c <= '9')) || ++subtag > 8) {
            return false;
        }
    }
    return subtag > 0;
}

static int translation_row(schedule_writer *w, const csv_field *f)
{
    for (int k = K_TABLE; k <= K_TRANSLATION; k++)
        if (!schedule_need_value(w, &f[k], TRANSLATION_KEYS[k]))
            return ROW_CONTINUE;
    bool known = false;
    for (int i = 0; i < TRANSLATED_FIELD_COUNT && !known; i++)
        known = field_is(&f[K_TABLE], TRANSLATED_FIELDS[i][0]) &&
                field_is(&f[K_FIELD], TRANSLATED_FIELDS[i][1]);
    if (!known)
        return schedule_skip_row(w, DIAG_BAD_VALUE,
                                 "table_name '%.*s' with field_name '%.*s' is not translated here",
                                 SHOWN(&f[K_TABLE]), SHOWN(&f[K_FIELD]));
    if (!is_language_tag(&f[K_LANGUAGE]))
        return schedule_skip_row(w, DIAG_BAD_VALUE, "language '%.*s' is not a language tag",
                                 SHOWN(&f[K_LANGUAGE]));
    bool by_record = f[K_RECORD_ID].len > 0, by_value = f[K_FIELD_VALUE].len > 0;
    if (by_record == by_value)
        return schedule_skip_row(w, by_record ? DIAG_BAD_VALUE : DIAG_MISSING_VALUE,
                                 by_record ? "record_id and field_value are both given (one is)"
                                           : "record_id or field_value is required");
    if (by_record && field_is(&f[K_TABLE], "stop_times") && f[K_RECORD_SUB_ID].len == 0)
        return schedule_skip_row(w, DIAG_MISSING_VALUE,
                                 "empty record_sub_id (the stop_sequence of a stop_times record_id)");
    sqlite3_stmt *s = w->insert;
    for (int k = 0; k < TRANSLATION_KEY_COUNT; k++)
        bind_opt_text(s, k + 1, &f[k]);
    return schedule_step_insert(w, s) < 0 ? ROW_STOP : ROW_CONTINUE;
}

static const file_spec translations_spec = {
    "translations.txt", TRANSLATION_KEYS, TRANSLATION_KEY_COUNT, 0xF,
    "INSERT INTO translations VALUES (?1,?2,?3,?4,?5,?6,?7)", translation_row};

int schedule_write_translations(schedule_writer *w, int (*exec)(schedule_writer *, const char *),
                                int (*read)(schedule_writer *, const file_spec *, uint64_t *))
{
    if (!feed_has(w->feed, translations_spec.name))
        return 0;
    uint64_t rows;
    if (exec(w, TRANSLATIONS_SCHEMA) != 0 || read(w, &translations_spec, &rows) != 0)
        return -1;
    return exec(w, "CREATE INDEX translations_by_language ON translations(language);");
}
