/* auth.c — loading hashed bearer tokens and checking a presented one.
 *
 * Why it exists: see auth.h. The comparison ORs the differences of the whole
 * digest with every stored one, so the time taken does not depend on where a
 * guess first differs or which entry it matched.
 */
#include "transit/auth.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <sys/random.h>   /* getentropy */
#endif

#include "transit/sha256.h"

typedef struct auth_entry {
    uint8_t digest[32];
    char name[AUTH_NAME_MAX + 1];
} auth_entry;

struct auth_tokens {
    auth_entry *entries;
    size_t count;
};

static int hex_nibble(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Parses one line into e; 1 for an entry, 0 for blank or comment, -1 bad. */
static int parse_line(char *line, auth_entry *e, const char **why)
{
    char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = strlen(p);
    while (n && (p[n - 1] == '\n' || p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
        p[--n] = '\0';
    if (!*p || *p == '#')
        return 0;
    if (strncmp(p, "sha256:", 7) != 0) {
        *why = "not a hashed token: each line is 'sha256:<64 hex digits> [name]' "
               "(make one with `transitd token new --tokens FILE`)";
        return -1;
    }
    p += 7;
    for (int i = 0; i < 32; i++) {
        int hi = hex_nibble(p[2 * i]), lo = hi < 0 ? -1 : hex_nibble(p[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            *why = "the hash must be 64 hex digits";
            return -1;
        }
        e->digest[i] = (uint8_t)(hi << 4 | lo);
    }
    p += 64;
    if (*p && *p != ' ' && *p != '\t') {
        *why = "the hash must be 64 hex digits";
        return -1;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (strlen(p) > AUTH_NAME_MAX) {
        *why = "the name is longer than 64 bytes";
        return -1;
    }
    snprintf(e->name, sizeof e->name, "%s", p);
    return 1;
}

auth_tokens *auth_tokens_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read the tokens file: %s", path, strerror(errno));
        return NULL;
    }
    auth_tokens *t = calloc(1, sizeof *t);
    size_t cap = 0;
    char line[512];
    int lineno = 0;
    bool ok = t != NULL;
    if (!ok)
        snprintf(err, errlen, "out of memory");
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, errlen, "%s:%d: the line is longer than %zu bytes", path, lineno,
                     sizeof line - 2);
            ok = false;
            break;
        }
        auth_entry e;
        const char *why = NULL;
        int rc = parse_line(line, &e, &why);
        if (rc < 0) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
            ok = false;
        } else if (rc > 0) {
            if (t->count == cap) {
                cap = cap ? cap * 2 : 8;
                auth_entry *grown = realloc(t->entries, cap * sizeof *grown);
                if (!grown) {
                    snprintf(err, errlen, "out of memory");
                    ok = false;
                    break;
                }
                t->entries = grown;
            }
            t->entries[t->count++] = e;
        }
    }
    if (ok && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        ok = false;
    }
    if (ok && t->count == 0) {
        snprintf(err, errlen, "%s: no token in the file (make one with `transitd token new "
                              "--tokens %s`)", path, path);
        ok = false;
    }
    fclose(f);
    if (!ok) {
        auth_tokens_free(t);
        return NULL;
    }
    return t;
}

void auth_tokens_free(auth_tokens *t)
{
    if (!t)
        return;
    free(t->entries);
    free(t);
}

size_t auth_tokens_count(const auth_tokens *t)
{
    return t ? t->count : 0;
}

bool auth_tokens_check(const auth_tokens *t, const char *token, size_t len, const char **name)
{
    uint8_t digest[32];
    sha256(token, len, digest);
    size_t match = SIZE_MAX;
    for (size_t i = 0; i < t->count; i++) {
        unsigned diff = 0;
        for (int k = 0; k < 32; k++)
            diff |= (unsigned)(digest[k] ^ t->entries[i].digest[k]);
        /* branch-free select of the first matching entry */
        size_t is_match = (size_t)0 - (size_t)(diff == 0);
        size_t unset = (size_t)0 - (size_t)(match == SIZE_MAX);
        match = (match & ~(is_match & unset)) | (i & is_match & unset);
    }
    if (match == SIZE_MAX || len == 0)
        return false;
    if (name)
        *name = t->entries[match].name;
    return true;
}

int auth_bearer_token(const char *header, const char **token, size_t *len)
{
    if (!header)
        return 0;
    const char *p = header;
    while (*p == ' ')
        p++;
    if (strncasecmp(p, "Bearer", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
        return -1;
    p += 7;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = strlen(p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (n == 0)
        return -1;
    *token = p;
    *len = n;
    return 1;
}

int auth_token_new(const char *name, char token[AUTH_TOKEN_LEN + 1], char *line, size_t linecap)
{
    static const char b64url[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    uint8_t r[33];   /* 256 bits, padded to whole 6-bit digits */
    if (getentropy(r, 32) != 0)
        return -1;
    r[32] = 0;
    memcpy(token, "td_", 3);
    for (int i = 0; i < 43; i++) {
        int bit = i * 6, byte = bit / 8, shift = bit % 8;
        unsigned v = (unsigned)r[byte] << 8 | r[byte + 1];
        token[3 + i] = b64url[(v >> (10 - shift)) & 63];
    }
    token[AUTH_TOKEN_LEN] = '\0';
    uint8_t digest[32];
    char hex[65];
    sha256(token, AUTH_TOKEN_LEN, digest);
    sha256_hex(digest, hex);
    snprintf(line, linecap, "sha256:%s%s%s\n", hex, name && *name ? " " : "", name ? name : "");
    return 0;
}
