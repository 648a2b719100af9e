/* site.h — the web pages transitd serves beside its JSON API.
 *
 * Why it exists: a person who opens the server in a browser should find out
 * what it is, which dataset it serves and whether that feed is still valid,
 * and read the API reference, all without anything fetched from elsewhere.
 * The pages are files of the repository (www/), installed into
 * PREFIX/share/transitd/www, and read once at start-up like the OpenAPI
 * document: a site is the files of one directory held in memory. The landing
 * page is a template whose {{name}} placeholders are filled per request.
 */
#ifndef TRANSIT_SITE_H
#define TRANSIT_SITE_H

#include <stdbool.h>
#include <stddef.h>

#define SITE_MAX_FILES 32
#define SITE_MAX_FILE_BYTES (1024 * 1024)
#define SITE_NAME_MAX 64

typedef struct site_file {
    char name[SITE_NAME_MAX];    /* "index.html": letters, digits, '.', '-', '_' */
    char *bytes;                 /* NUL-terminated (len bytes before it) */
    size_t len;
    const char *content_type;    /* from the extension, e.g. "text/css; charset=utf-8" */
} site_file;

typedef struct site {
    int nfiles;
    site_file files[SITE_MAX_FILES];
    char dir[1024];              /* where the files were read */
} site;

/* Reads every regular file of `dir` (not its subdirectories; names starting
 * with '.' are skipped). NULL with a message naming the directory or the file
 * when the directory cannot be read, a name is not plain, a file is larger
 * than SITE_MAX_FILE_BYTES or there are more than SITE_MAX_FILES. */
site *site_load(const char *dir, char *err, size_t errlen);
void site_free(site *s);
const site_file *site_find(const site *s, const char *name);

/* Finds and loads the pages: `dir` when given, else the first of the shipped
 * places (share_dir.h) holding an index.html. NULL when none works; `looked`
 * then says where it looked and why. */
site *site_locate(const char *dir, char *looked, size_t looked_cap);

/* The Content-Type for a file name, by extension (application/octet-stream
 * for an unknown one). */
const char *site_content_type(const char *name);

typedef struct site_var {
    const char *name;
    const char *value;
} site_var;

/* Renders a template: every {{name}} of a known variable becomes its value,
 * HTML-escaped (& < > " '); other text, unknown placeholders included, is
 * copied as it is. Like snprintf: writes at most cap - 1 bytes and a NUL, and
 * returns the length the whole output needs (call again with a larger buffer
 * when the result is >= cap). */
size_t site_render(const char *tmpl, size_t len, const site_var *vars, int nvars, char *out,
                   size_t cap);

/* Percent-encodes s for a URL path segment or query value: every byte but
 * the RFC 3986 unreserved ones (A-Z a-z 0-9 - . _ ~) becomes %XX. False when
 * the result does not fit in cap bytes with its NUL. */
bool site_url_encode(const char *s, char *out, size_t cap);

#endif
