/* cli_fetch.c — `transitd fetch URL --data DIR`: the phone's update flow,
 * runnable on Linux.
 *
 * Why it exists: an iPhone app updates its offline snapshot with the client
 * library's update calls (transit/client.h) and URLSession; this command is
 * that same flow with libcurl as the network, so it can be tested, scripted
 * and watched here. It reads the manifest (the phone profile unless --full),
 * then does each step the library asks for (a zstd patch against the held
 * version, a whole file gzip-compressed on the wire, or the rest of one
 * with Range), retrying a cut transfer a bounded number of times, and
 * commits. `transitd query --data DIR ...` then answers offline.
 *
 * Exit status: 0 the directory holds the offered version; 1 it could not be
 * brought there (the message says why; what was staged is kept for the next
 * run to resume); 2 a usage error.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transit/cli.h"
#include "transit/client.h"
#include "transit/version.h"

#define MANIFEST_MAX (1u << 20)
#define STEP_ATTEMPTS 4        /* a cut transfer is resumed this many times */

static void print_usage(FILE *out)
{
    fputs("usage: transitd fetch [--data DIR] [--full] [--shapes] [--cacert FILE] [--quiet] URL\n"
          "\n"
          "Brings the data directory to the version the server at URL offers, as a phone\n"
          "does (the client library's update): files the directory already holds are kept,\n"
          "changed ones come as zstd patches against the held version (?from=), new ones\n"
          "whole (gzip on the wire), a cut transfer resumes where it stopped, and nothing\n"
          "is activated until every file matches the manifest's SHA-256. Then\n"
          "`transitd query --data DIR ...` answers offline.\n"
          "\n"
          "options:\n"
          "  --data DIR   the snapshot directory (default: $TRANSITD_DATA, else ./data)\n"
          "  --full       every file of the version (default: the phone profile, without\n"
          "               shapes.sqlite)\n"
          "  --shapes     the phone profile with shapes.sqlite\n"
          "  --cacert F   trust the certificate(s) in F for an https:// URL (a server's\n"
          "               self-signed one, `transitd cert new`); else the system's\n"
          "  --quiet      no progress on stderr\n"
          "\n"
          "exit status: 0 up to date; 1 failed (staged files are kept and resumed next\n"
          "time); 2 usage error\n",
          out);
}

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("fetch", print_usage, fmt, arg);
}

typedef struct manifest_buf {
    char *data;
    size_t len, cap;
    bool too_big;
} manifest_buf;

static size_t on_manifest(char *p, size_t size, size_t n, void *cls)
{
    manifest_buf *b = cls;
    size_t len = size * n;
    if (b->len + len + 1 > MANIFEST_MAX) {
        b->too_big = true;
        return 0;
    }
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + len + 1)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown)
            return 0;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len] = '\0';
    return len;
}

typedef struct step_sink {
    transit_update *u;
    uint64_t wire_bytes;          /* the bodies as they came (compressed) */
    transit_error err;
    bool failed;
    bool quiet;
    const transit_step *step;
    double last_report;
} step_sink;

/* --cacert: what an https:// server's certificate is checked against */
static const char *g_cacert;

static void set_common(CURL *c)
{
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "transitd-fetch/" TRANSITD_VERSION);
    if (g_cacert)
        curl_easy_setopt(c, CURLOPT_CAINFO, g_cacert);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t on_step_bytes(char *p, size_t size, size_t n, void *cls)
{
    step_sink *s = cls;
    size_t len = size * n;
    if (transit_update_write(s->u, p, len, &s->err) != 0) {
        s->failed = true;
        return 0;
    }
    return len;
}

static int on_progress(void *cls, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)ultotal;
    (void)ulnow;
    step_sink *s = cls;
    double t = now_s();
    if (s->quiet || t - s->last_report < 0.5)
        return 0;
    s->last_report = t;
    if (dltotal > 0)
        fprintf(stderr, "  %s: %lld of %lld bytes (%.0f %%)\n", s->step->file, (long long)dlnow,
                (long long)dltotal, 100.0 * (double)dlnow / (double)dltotal);
    else
        fprintf(stderr, "  %s: %lld bytes\n", s->step->file, (long long)dlnow);
    return 0;
}

/* GETs base+path into the update's current step; the HTTP status (0 when no
 * response came, with why). */
static long get_step(const char *base, const transit_step *step, step_sink *sink, char *why, size_t cap)
{
    char url[4096], range[64], if_range[100];
    snprintf(url, sizeof url, "%s%s", base, step->path);
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(why, cap, "libcurl cannot start");
        return 0;
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    set_common(c);
    /* a transfer slower than 1 KB/s for 30 s is cut, and resumed by the next attempt */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
    if (step->kind == TRANSIT_STEP_FILE && step->resume_from > 0) {
        snprintf(range, sizeof range, "%llu-", (unsigned long long)step->resume_from);
        curl_easy_setopt(c, CURLOPT_RANGE, range);
        snprintf(if_range, sizeof if_range, "If-Range: \"%s\"", step->sha256);
        headers = curl_slist_append(headers, if_range);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    } else if (step->kind == TRANSIT_STEP_FILE) {
        curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "gzip");   /* the stores compress to ~28 % */
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_step_bytes);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, sink);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_off_t wire = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (curl_easy_getinfo(c, CURLINFO_SIZE_DOWNLOAD_T, &wire) == CURLE_OK && wire > 0)
        sink->wire_bytes += (uint64_t)wire;
    if (rc != CURLE_OK) {
        snprintf(why, cap, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
        /* a cut body still ends the step: the library keeps what arrived */
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);
    return status;
}

static int fetch(const char *base, const char *data_dir, const char *profile, bool quiet)
{
    char url[4096], why[CURL_ERROR_SIZE + 64] = "";
    snprintf(url, sizeof url, "%s/v1/dataset%s", base, profile);
    manifest_buf mb = {NULL, 0, 0, false};
    CURL *c = curl_easy_init();
    long status = 0;
    CURLcode rc = CURLE_FAILED_INIT;
    if (c) {
        char errbuf[CURL_ERROR_SIZE] = "";
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        set_common(c);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
        curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_manifest);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &mb);
        rc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        snprintf(why, sizeof why, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
        curl_easy_cleanup(c);
    }
    if (rc != CURLE_OK || status != 200) {
        fprintf(stderr, "transitd fetch: cannot read %s: %s\n", url,
                rc != CURLE_OK ? (mb.too_big ? "the manifest is over 1 MB" : why) : "");
        if (rc == CURLE_OK)
            fprintf(stderr, "transitd fetch: the server answered %ld\n", status);
        free(mb.data);
        return CLI_RUNTIME_ERROR;
    }
    transit_error err;
    transit_update *u = transit_update_begin(data_dir, mb.data, mb.len, &err);
    free(mb.data);
    if (!u) {
        fprintf(stderr, "transitd fetch: %s\n", err.message);
        return CLI_RUNTIME_ERROR;
    }
    double t0 = now_s();
    int result = CLI_OK, failures = 0;
    uint64_t wire_bytes = 0;
    transit_step step;
    while (transit_update_next(u, &step) == 1) {
        if (!quiet)
            fprintf(stderr, "transitd fetch: %s %s%s\n", step.file,
                    step.kind == TRANSIT_STEP_DELTA ? "as a patch against the held version" : "whole",
                    step.resume_from ? " (resuming)" : "");
        step_sink sink = {.u = u, .quiet = quiet, .step = &step, .last_report = now_s()};
        why[0] = '\0';
        long st = get_step(base, &step, &sink, why, sizeof why);
        wire_bytes += sink.wire_bytes;
        if (sink.failed) {
            fprintf(stderr, "transitd fetch: %s\n", sink.err.message);
            result = CLI_RUNTIME_ERROR;
            break;
        }
        if (transit_update_end(u, (int)st, &err) != 0) {
            fprintf(stderr, "transitd fetch: %s%s%s\n", err.message, why[0] ? ": " : "", why);
            if (++failures >= STEP_ATTEMPTS) {
                result = CLI_RUNTIME_ERROR;
                break;
            }
        } else if (step.kind == TRANSIT_STEP_DELTA && !quiet) {
            transit_update_stats s;
            transit_update_get_stats(u, &s);
            if (s.deltas_failed)
                fprintf(stderr, "transitd fetch: the patch for %s was not usable; fetching it whole\n",
                        step.file);
        }
    }
    if (result == CLI_OK && transit_update_commit(u, &err) != 0) {
        fprintf(stderr, "transitd fetch: %s\n", err.message);
        result = CLI_RUNTIME_ERROR;
    }
    transit_update_stats s;
    transit_update_get_stats(u, &s);
    if (result == CLI_OK) {
        printf("%s\n", transit_update_version(u));
        if (!quiet)
            fprintf(stderr, "transitd fetch: version %s in %s: %llu bytes on the wire (%llu decoded) in "
                            "%.2f s; %u whole, %u patched, %u kept, %u patches refused\n",
                    transit_update_version(u), data_dir, (unsigned long long)wire_bytes,
                    (unsigned long long)s.bytes_received, now_s() - t0, s.files_fetched,
                    s.deltas_applied, s.files_kept, s.deltas_failed);
    }
    transit_update_free(u);
    return result;
}

int cli_fetch_main(int argc, char **argv)
{
    const char *data_dir = cli_default_data_dir(), *url = NULL;
    bool full = false, shapes = false, quiet = false;
    enum { OPT_DATA = CLI_OPT_LONG_ONLY, OPT_FULL, OPT_SHAPES, OPT_QUIET, OPT_CACERT };
    static const struct option longopts[] = {
        {"data", required_argument, NULL, OPT_DATA},
        {"cacert", required_argument, NULL, OPT_CACERT},
        {"full", no_argument, NULL, OPT_FULL},
        {"shapes", no_argument, NULL, OPT_SHAPES},
        {"quiet", no_argument, NULL, OPT_QUIET},
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
        } else if (c == OPT_CACERT) {
            if (!arg || !*arg)
                return usage_error("%s needs a value", opts.name);
            g_cacert = arg;
        } else if (c == OPT_FULL) {
            full = true;
        } else if (c == OPT_SHAPES) {
            shapes = true;
        } else if (c == OPT_QUIET) {
            quiet = true;
        } else if (c == CLI_OPT_ARG && !url) {
            url = arg;
        } else {
            return usage_error("unknown option or extra argument '%s'",
                               c == CLI_OPT_ARG ? arg : opts.typed);
        }
    }
    if (!url)
        return usage_error("%s", "the server's URL is required (http://HOST:PORT)");
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
        return usage_error("URL must start with http:// or https://, got '%s'", url);
    if (full && shapes)
        return usage_error("%s", "--full already has the shapes; give one of --full and --shapes");
    char base[2048];
    snprintf(base, sizeof base, "%s", url);
    size_t n = strlen(base);
    while (n > 0 && base[n - 1] == '/')
        base[--n] = '\0';
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "transitd fetch: libcurl cannot start\n");
        return CLI_RUNTIME_ERROR;
    }
    int rc = fetch(base, data_dir, full ? "" : shapes ? "?profile=phone&include=shapes" : "?profile=phone",
                   quiet);
    curl_global_cleanup();
    return rc;
}
