/* site.c — loading the web pages, and the landing page's tiny template.
 *
 * Why it exists: see include/transit/site.h. The template language is only
 * {{name}} with HTML escaping: the pages need a few values per request (the
 * dataset version, the feed's dates, an example stop) and nothing more, so no
 * general template engine is worth its weight here.
 */
#include "transit/site.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "transit/share_dir.h"

static bool plain_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= SITE_NAME_MAX || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == '_';
        if (!ok)
            return false;
    }
    return true;
}

const char *site_content_type(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".json", "application/json; charset=utf-8"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=utf-8"},
    };
    const char *dot = strrchr(name, '.');
    if (dot)
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcmp(dot, types[i].ext) == 0)
                return types[i].type;
    return "application/octet-stream";
}

/* Reads path (a regular file of at most SITE_MAX_FILE_BYTES) into f. */
static bool read_file(const char *path, site_file *f, char *err, size_t errlen)
{
    FILE *in = fopen(path, "rb");
    if (!in) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fileno(in), &st) != 0 || st.st_size > SITE_MAX_FILE_BYTES) {
        snprintf(err, errlen, "%s: larger than %d bytes", path, SITE_MAX_FILE_BYTES);
        fclose(in);
        return false;
    }
    size_t size = (size_t)st.st_size;
    f->bytes = malloc(size + 1);
    if (!f->bytes) {
        snprintf(err, errlen, "%s: out of memory", path);
        fclose(in);
        return false;
    }
    size_t got = fread(f->bytes, 1, size, in);
    fclose(in);
    if (got != size) {
        snprintf(err, errlen, "%s: short read (%zu of %zu bytes)", path, got, size);
        free(f->bytes);
        f->bytes = NULL;
        return false;
    }
    f->bytes[size] = '\0';
    f->len = size;
    return true;
}

site *site_load(const char *dir, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return NULL;
    }
    site *s = calloc(1, sizeof *s);
    if (!s) {
        closedir(d);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    bool ok = true;
    struct dirent *e;
    while (ok && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[SHARE_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (!plain_name(e->d_name)) {
            snprintf(err, errlen, "%s: the name must be letters, digits, '.', '-' or '_' "
                                  "(at most %d bytes)", path, SITE_NAME_MAX - 1);
            ok = false;
        } else if (s->nfiles == SITE_MAX_FILES) {
            snprintf(err, errlen, "%s: more than %d files", dir, SITE_MAX_FILES);
            ok = false;
        } else {
            site_file *f = &s->files[s->nfiles];
            snprintf(f->name, sizeof f->name, "%s", e->d_name);
            f->content_type = site_content_type(f->name);
            ok = read_file(path, f, err, errlen);
            if (ok)
                s->nfiles++;
        }
    }
    closedir(d);
    if (!ok) {
        site_free(s);
        return NULL;
    }
    return s;
}

void site_free(site *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nfiles; i++)
        free(s->files[i].bytes);
    free(s);
}

const site_file *site_find(const site *s, const char *name)
{
    if (!s || !name)
        return NULL;
    for (int i = 0; i < s->nfiles; i++)
        if (strcmp(s->files[i].name, name) == 0)
            return &s->files[i];
    return NULL;
}

site *site_locate(const char *dir, char *looked, size_t looked_cap)
{
    char candidates[SHARE_MAX_CANDIDATES][SHARE_PATH_MAX];
    int n = 0;
    if (dir)
        snprintf(candidates[n++], SHARE_PATH_MAX, "%s", dir);
    else
        n = share_candidates("www", "www", candidates, SHARE_MAX_CANDIDATES);
    size_t used = 0;
    if (looked_cap)
        looked[0] = '\0';
    for (int i = 0; i < n; i++) {
        char err[512];
        site *s = site_load(candidates[i], err, sizeof err);
        if (s && site_find(s, "index.html"))
            return s;
        if (s) {
            snprintf(err, sizeof err, "%s: no index.html", candidates[i]);
            site_free(s);
        }
        if (used < looked_cap) {
            int w = snprintf(looked + used, looked_cap - used, "%s%s", used ? "; " : "", err);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------ template */

typedef struct out_text {
    char *buf;
    size_t cap, len;
} out_text;

static void put(out_text *o, const char *s, size_t n)
{
    if (o->len < o->cap) {
        size_t room = o->cap - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void put_escaped(out_text *o, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': put(o, "&amp;", 5); break;
        case '<': put(o, "&lt;", 4); break;
        case '>': put(o, "&gt;", 4); break;
        case '"': put(o, "&quot;", 6); break;
        case '\'': put(o, "&#39;", 5); break;
        default: put(o, s, 1); break;
        }
    }
}

size_t site_render(const char *tmpl, size_t len, const site_var *vars, int nvars, char *out,
                   size_t cap)
{
    out_text o = {out, cap, 0};
    size_t i = 0;
    while (i < len) {
        const char *open = len - i >= 2 ? memchr(tmpl + i, '{', len - i) : NULL;
        size_t at = open ? (size_t)(open - tmpl) : len;
        put(&o, tmpl + i, at - i);
        i = at;
        if (i >= len)
            break;
        const site_var *found = NULL;
        size_t end = i;
        if (i + 1 < len && tmpl[i + 1] == '{') {
            const char *close = NULL;
            for (size_t k = i + 2; k + 1 < len && !close; k++)
                if (tmpl[k] == '}' && tmpl[k + 1] == '}')
                    close = tmpl + k;
            if (close) {
                size_t name_len = (size_t)(close - (tmpl + i + 2));
                for (int v = 0; v < nvars && !found; v++)
                    if (strlen(vars[v].name) == name_len &&
                        memcmp(vars[v].name, tmpl + i + 2, name_len) == 0)
                        found = &vars[v];
                end = (size_t)(close - tmpl) + 2;
            }
        }
        if (found) {
            put_escaped(&o, found->value ? found->value : "");
            i = end;
        } else {
            put(&o, tmpl + i, 1);
            i++;
        }
    }
    if (cap)
        out[o.len < cap ? o.len : cap - 1] = '\0';
    return o.len;
}

bool site_url_encode(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        size_t need = plain ? 1 : 3;
        if (o + need + 1 > cap)
            return false;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (o + 1 > cap)
        return false;
    out[o] = '\0';
    return true;
}
