/* cli_query_batch.h — reading one line of `transitd query batch` input.
 *
 * Why it exists: the batch input is JSON, read with jansson, whose names
 * (json_str, json_null_value) collide with the response writer's; so the reading
 * lives in its own file and hands cli_query.c plain key/value strings.
 */
#ifndef TRANSIT_CLI_QUERY_BATCH_H
#define TRANSIT_CLI_QUERY_BATCH_H

#include <stddef.h>

#define BATCH_MAX_FIELDS 16
#define BATCH_NUMBER_LEN 64

typedef struct batch_field {
    const char *key, *value;   /* owned by the parsed document or `numbers` */
} batch_field;

typedef struct batch_line {
    void *doc;                 /* the parsed document (jansson), or NULL */
    const char *op;            /* the "op" member, or NULL when absent */
    int nfields;               /* the other members, in input order */
    batch_field fields[BATCH_MAX_FIELDS];
    char numbers[BATCH_MAX_FIELDS][BATCH_NUMBER_LEN];
    char error[256];           /* why the line cannot be used */
} batch_line;

/* Parses one input line (without its newline). Returns 0, or -1 with
 * b->error set: empty line, invalid JSON, not an object, a duplicate key, a
 * non-string "op", a member that is not a string or a number, too many
 * members. Always call batch_line_release afterwards. */
int batch_line_parse(batch_line *b, const char *line, size_t len);
void batch_line_release(batch_line *b);

#endif
