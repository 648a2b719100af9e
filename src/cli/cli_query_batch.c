/* cli_query_batch.c — reading one line of `transitd query batch` input.
 *
 * Why it exists: see cli_query_batch.h. A member's value becomes the text a
 * query string would carry: strings as they are, integers in decimal, reals
 * as the shortest decimal that reads back as the same double, so a batch line
 * and the equivalent URL get the same validation and the same answer.
 */
#include "cli/cli_query_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static int scalar_text(json_t *v, char *buf, size_t buflen, const char **out)
{
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return 0;
    }
    if (json_is_integer(v)) {
        snprintf(buf, buflen, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        *out = buf;
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        for (int precision = 15; precision <= 17; precision++) {
            snprintf(buf, buflen, "%.*g", precision, d);
            if (strtod(buf, NULL) == d)
                break;
        }
        if (strchr(buf, 'e') || strchr(buf, 'E'))
            snprintf(buf, buflen, "%.20f", d);   /* the API reads plain decimals only */
        *out = buf;
        return 0;
    }
    return -1;
}

int batch_line_parse(batch_line *b, const char *line, size_t len)
{
    memset(b, 0, sizeof *b);
    size_t start = 0;
    while (start < len && (line[start] == ' ' || line[start] == '\t' || line[start] == '\r'))
        start++;
    if (start == len) {
        snprintf(b->error, sizeof b->error, "empty line: expected a JSON object");
        return -1;
    }
    json_error_t jerr;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        snprintf(b->error, sizeof b->error, "invalid JSON at column %d: %s", jerr.column,
                 jerr.text);
        return -1;
    }
    b->doc = root;
    if (!json_is_object(root)) {
        snprintf(b->error, sizeof b->error, "expected a JSON object");
        return -1;
    }
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value) {
        if (strcmp(key, "op") == 0) {
            if (!json_is_string(value)) {
                snprintf(b->error, sizeof b->error, "op must be a string");
                return -1;
            }
            b->op = json_string_value(value);
            continue;
        }
        if (b->nfields == BATCH_MAX_FIELDS) {
            snprintf(b->error, sizeof b->error, "too many members (at most %d)",
                     BATCH_MAX_FIELDS);
            return -1;
        }
        const char *text;
        if (scalar_text(value, b->numbers[b->nfields], BATCH_NUMBER_LEN, &text) != 0) {
            snprintf(b->error, sizeof b->error, "parameter '%.100s' must be a string or a number",
                     key);
            return -1;
        }
        b->fields[b->nfields].key = key;
        b->fields[b->nfields].value = text;
        b->nfields++;
    }
    return 0;
}

void batch_line_release(batch_line *b)
{
    json_decref((json_t *)b->doc);
    b->doc = NULL;
}
