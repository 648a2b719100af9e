/* cli_export.c — `transitd export --data DIR OUT`: the active version as the
 * static files a server would serve at /v1/dataset.
 *
 * Why it exists: the dataset's distribution can ride on what users already
 * run (nginx, a CDN, an object store). OUT gets the same layout as a
 * primary's URLs: OUT/v1/dataset/VERSION/FILE (the files, verified against
 * their manifest after the copy) and OUT/v1/dataset/index.json (the
 * manifest, written last and renamed into place, so a mirror never offers a
 * manifest whose files are not all there). A replica's --replica-of works
 * against it as against a primary: nginx answers /v1/dataset with a
 * redirect to /v1/dataset/, whose index is index.json. Versions exported
 * before stay (a replica may be fetching one); --keep N prunes the oldest.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "transit/api.h"
#include "transit/cli.h"
#include "transit/datadir.h"
#include "transit/fd_io.h"
#include "transit/feed_validity.h"
#include "transit/json_writer.h"
#include "transit/query.h"
#include "transit/snapshot.h"

static void print_usage(FILE *out)
{
    fputs("usage: transitd export [--data DIR] [--keep N] OUT\n"
          "\n"
          "Writes the data directory's active version as static files that any web\n"
          "server can serve to replicas (`transitd serve --replica-of URL`):\n"
          "  OUT/v1/dataset/index.json          the manifest (GET /v1/dataset)\n"
          "  OUT/v1/dataset/VERSION/FILE        its files, checked against their SHA-256\n"
          "Serve OUT as the document root with `index index.json` (nginx's default index\n"
          "is index.html). The manifest is replaced last, atomically.\n"
          "\n"
          "options:\n"
          "  --data DIR   data directory (default: $TRANSITD_DATA, else ./data)\n"
          "  --keep N     versions kept in OUT, the new one included, 1..100 (default 2)\n",
          out);
}

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("export", print_usage, fmt, arg);
}

/* Copies src to dst (a hard link when both are on one file system: the
 * version's files are never written again). */
static int copy_file(const char *src, const char *dst, char *err, size_t cap)
{
    if (file_link_or_copy(src, dst) == 0)
        return 0;
    snprintf(err, cap, "cannot copy %s to %s: %s", src, dst, strerror(errno));
    return -1;
}

typedef struct exported {
    char name[16];
    time_t mtime;
} exported;

static int newest_first(const void *a, const void *b)
{
    const exported *x = a, *y = b;
    return x->mtime < y->mtime ? 1 : x->mtime > y->mtime ? -1 : strcmp(x->name, y->name);
}

/* Removes exported versions beyond the `keep` newest, never `current`. */
static int prune_exports(const char *root, const char *current, int keep)
{
    DIR *d = opendir(root);
    if (!d)
        return 0;
    exported list[256];
    int n = 0, removed = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < 256;) {
        if (!datadir_is_version_name(e->d_name) || strcmp(e->d_name, current) == 0)
            continue;
        char path[4200];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        snprintf(list[n].name, sizeof list[n].name, "%s", e->d_name);
        list[n++].mtime = st.st_mtime;
    }
    closedir(d);
    qsort(list, (size_t)n, sizeof list[0], newest_first);
    for (int i = keep - 1; i < n; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", root, list[i].name);
        if (datadir_remove_tree(path) == 0)
            removed++;
    }
    return removed;
}

int cli_export_main(int argc, char **argv)
{
    const char *data_dir = cli_default_data_dir(), *out = NULL;
    long keep = 2;
    enum { OPT_DATA = CLI_OPT_LONG_ONLY, OPT_KEEP };
    static const struct option longopts[] = {
        {"data", required_argument, NULL, OPT_DATA},
        {"keep", required_argument, NULL, OPT_KEEP},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cli_opts opts;
    cli_opts_begin(&opts, argc, argv, "h", longopts);
    for (int c; (c = cli_opts_next(&opts)) != -1;) {
        const char *arg = opts.arg;
        if (c == 'h') {
            print_usage(stdout);
            return CLI_OK;
        } else if (c == OPT_DATA) {
            if (!arg || !*arg)
                return usage_error("%s needs a value", opts.name);
            data_dir = arg;
        } else if (c == OPT_KEEP) {
            char *end = NULL;
            keep = arg ? strtol(arg, &end, 10) : 0;
            if (!arg || !*arg || *end || keep < 1 || keep > 100)
                return usage_error("--keep must be 1..100, got '%s'", arg ? arg : "");
        } else if (c == CLI_OPT_ARG && !out) {
            out = arg;
        } else {
            return usage_error("unknown option or extra argument '%s'",
                               c == CLI_OPT_ARG ? arg : opts.typed);
        }
    }
    if (!out)
        return usage_error("%s", "the output directory OUT is required");

    char err[1024];
    dataset *ds = dataset_open(data_dir, err, sizeof err);
    if (!ds) {
        fprintf(stderr, "transitd export: cannot open the dataset in %s: %s\n", data_dir, err);
        return CLI_RUNTIME_ERROR;
    }
    int status = CLI_RUNTIME_ERROR;
    json_writer w;
    json_init(&w);
    const snapshot_manifest *m = api_dataset_manifest(ds, err, sizeof err);
    char root[4096], dir[4200];
    snprintf(root, sizeof root, "%s/v1/dataset", out);
    snprintf(dir, sizeof dir, "%s/%s", root, m ? m->version : "");
    if (!m) {
        fprintf(stderr, "transitd export: %s\n", err);
    } else if (!cli_make_directories(dir)) {
        fprintf(stderr, "transitd export: cannot create %s: %s\n", dir, strerror(errno));
    } else {
        bool ok = true;
        for (uint32_t i = 0; i < m->nfiles && ok; i++) {
            char src[4200], dst[4300], hex[65];
            uint64_t size = 0;
            snprintf(src, sizeof src, "%s/%s", dataset_dir(ds), m->files[i].name);
            snprintf(dst, sizeof dst, "%s/%s", dir, m->files[i].name);
            ok = copy_file(src, dst, err, sizeof err) == 0 &&
                 snapshot_hash_file(dst, hex, &size, err, sizeof err) == 0;
            if (ok && (size != m->files[i].size || strcmp(hex, m->files[i].sha256) != 0)) {
                snprintf(err, sizeof err, "%s does not match its manifest after the copy", dst);
                ok = false;
            }
        }
        feed_validity validity;
        feed_validity_at(ds, (int64_t)time(NULL), &validity);
        api_dataset_manifest_write(&w, m, &validity);
        char index[4200];
        snprintf(index, sizeof index, "%s/index.json", root);
        if (ok && !w.oom && cli_write_file_atomically(index, w.buf, w.len, 0644, err, sizeof err)) {
            int pruned = prune_exports(root, m->version, (int)keep);
            uint64_t bytes = 0;
            for (uint32_t i = 0; i < m->nfiles; i++)
                bytes += m->files[i].size;
            printf("%s\n", m->version);
            fprintf(stderr, "transitd export: version %s, %u files, %llu bytes in %s%s\n",
                    m->version, m->nfiles, (unsigned long long)bytes, root,
                    pruned ? " (older exports pruned)" : "");
            status = CLI_OK;
        } else {
            fprintf(stderr, "transitd export: %s\n", w.oom ? "out of memory" : err);
        }
    }
    json_free(&w);
    dataset_release(ds);
    return status;
}
