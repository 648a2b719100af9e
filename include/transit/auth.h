/* auth.h — bearer tokens for the write verbs, kept hashed at rest.
 *
 * Why it exists: anyone may read a timetable; only operators may write
 * alerts. `serve --tokens FILE` names a file of SHA-256 hashes, one token a
 * line ("sha256:<64 hex> [name]"; # comments), so the file gives nothing away
 * when read. A presented token is hashed and compared with every stored hash
 * in constant time: no early exit that would time how much of it matched.
 * `transitd token new` makes a token and appends its hash.
 */
#ifndef TRANSIT_AUTH_H
#define TRANSIT_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define AUTH_NAME_MAX 64

typedef struct auth_tokens auth_tokens;

/* Reads FILE; NULL with err naming the file and line of a bad entry. A file
 * with no token is an error too (it could authorise nobody). */
auth_tokens *auth_tokens_load(const char *path, char *err, size_t errlen);
void auth_tokens_free(auth_tokens *t);
size_t auth_tokens_count(const auth_tokens *t);

/* Whether `token` (len bytes) is one of t's; *name (may be NULL) gets the
 * matching entry's name ("" when it has none). Takes the same time whichever
 * entry matches, or none. */
bool auth_tokens_check(const auth_tokens *t, const char *token, size_t len, const char **name);

/* The token of an "Authorization: Bearer <token>" header value: 1 and
 * the token and its length, 0 when the header is absent, -1 when it is not
 * Bearer. */
int auth_bearer_token(const char *header, const char **token, size_t *len);

/* A new random token ("td_" and 43 base64url characters, 256 bits) into out,
 * and the line to store for it into line. Returns 0, or -1 when the system
 * has no entropy to give. */
#define AUTH_TOKEN_LEN 46
int auth_token_new(const char *name, char token[AUTH_TOKEN_LEN + 1], char *line, size_t linecap);

#endif
