/* serve_main.m — `transitd serve`: options, start-up, signals, shutdown.
 *
 * Why it exists: the lifecycle of the HTTP server. Start-up fails fast
 * (exit 1, one clear line) when the dataset is missing or damaged or the
 * port cannot be bound. Signals only write a byte to a self-pipe; the main
 * thread reads it and does the work: SIGHUP re-opens the data directory and
 * swaps the dataset in (requests in flight finish on the old mapping, which
 * goes away with its last reference; a failed reload keeps the old one).
 * Between signals the main thread wakes every --follow-interval seconds to
 * follow DATA/current by itself (serving.h);
 * SIGTERM/SIGINT stop accepting, let requests already received finish, and
 * exit 0 within 5 seconds. With --wait-for-data a server started before the
 * first import (a fresh systemd unit or container) looks for it every second
 * instead of exiting, and loads it as soon as an import activates it.
 */
#import <Foundation/Foundation.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "transit/cli.h"
#include "transit/rt_fetch.h"
#import "TDServer.h"
#import "board_streams.h"
#import "http_daemon.h"
#include "transit/serving.h"
#include "transit/serving.h"

#define DRAIN_MS 4000
#define LIVE_POLL_MS 1000   /* how often the main thread looks at live.sqlite */

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
/* LeakSanitizer: the GNU Objective-C runtime allocates its class, method and
 * selector tables once and keeps them until exit (frames inside libobjc.so);
 * they are not leaks of ours. */
const char *__lsan_default_suppressions(void);
__attribute__((used)) const char *__lsan_default_suppressions(void)
{
    return "leak:libobjc.so\n";
}
#endif
#endif

static int signal_pipe[2] = {-1, -1};

static void on_signal(int signo)
{
    int saved = errno;
    unsigned char b = (unsigned char)signo;
    ssize_t w = write(signal_pipe[1], &b, 1);
    (void)w;
    errno = saved;
}

static void print_usage(FILE *out)
{
    fputs("usage: transitd serve [--data DIR] [--port N] [--bind ADDR] [--threads N] [options]\n"
          "\n"
          "Serves the active dataset of the data directory over HTTP (the v1 JSON API,\n"
          "/healthz, /readyz, /metrics, /openapi.json, and pages for people: / and /docs).\n"
          "\n"
          "options:\n"
          "  --data DIR            data directory (default: $TRANSITD_DATA, else ./data)\n"
          "  --port N              TCP port, 0 for any free one (default: $TRANSITD_PORT, else 8080)\n"
          "  --bind ADDR           address to listen on (default: $TRANSITD_BIND, else 127.0.0.1)\n"
          "  --threads N           server threads (default: online cores)\n"
          "  --max-connections N   concurrent connections (default 10000, lowered to fit\n"
          "                        the open-file limit); beyond it new connections wait in\n"
          "                        the kernel's accept queue until one closes\n"
          "  --max-connections-per-ip N\n"
          "                        concurrent connections from one client address, 0 for\n"
          "                        no cap (default 512); beyond it a connection is closed\n"
          "                        at once. Behind a proxy every client shares its address\n"
          "  --header-timeout S    seconds a client has to send a whole request (line,\n"
          "                        headers, body) after connecting, or after the previous\n"
          "                        response plus --timeout on a kept-alive connection;\n"
          "                        sending slowly does not extend it (default 10)\n"
          "  --timeout S           idle seconds before a connection is closed (default 15)\n"
          "  --follow-interval S   how often to check DATA/current and switch to a newly\n"
          "                        activated version by itself; 0: only on SIGHUP (a server\n"
          "                        still waiting for data takes the first import) (default 1)\n"
          "  --max-body BYTES      largest request body accepted, else 413 (default 65536)\n"
          "  --openapi FILE        the OpenAPI document to serve (default: $TRANSITD_OPENAPI,\n"
          "                        else docs/openapi.json beside the binary or in .)\n"
          "  --tokens FILE         bearer tokens (hashed, see `transitd token new`) that may\n"
          "                        POST, PUT, PATCH and DELETE /v1/alerts; without it,\n"
          "                        writes answer 403 (default: $TRANSITD_TOKENS)\n"
          "  --pages DIR           the web pages to serve at / and /docs (default: $TRANSITD_PAGES,\n"
          "                        else share/transitd/www beside the binary, or www/ in a build)\n"
          "  --cors-origin ORIGIN  let browser apps from ORIGIN (https://app.example.org[:port])\n"
          "                        call the API; repeatable, or * for any origin (default:\n"
          "                        $TRANSITD_CORS_ORIGIN, comma-separated; none)\n"
          "  --gtfs-rt SOURCE      GTFS-Realtime trip updates (and alerts): a file, or an\n"
          "                        http(s) URL fetched with libcurl (conditional GETs);\n"
          "                        departure rows gain scheduled, predicted, delay_s,\n"
          "                        realtime and canceled. Repeatable (up to 16): the feeds\n"
          "                        are merged, the newest feed timestamp winning per trip.\n"
          "                        A failed fetch or decode keeps that source's last good\n"
          "                        feed (counted per source in /metrics and /readyz)\n"
          "  --gtfs-rt-header 'NAME: VALUE'\n"
          "                        a request header (an API key) for the --gtfs-rt given\n"
          "                        just before it; repeatable; never logged or shown\n"
          "  --gtfs-rt-feed NAME   the --gtfs-rt just before it sends the ids of feed NAME\n"
          "                        of a merged dataset (`transitd import a.zip b.zip`):\n"
          "                        NAME:id is used where the merge namespaced id\n"
          "  --rt-interval S       seconds between polls of --gtfs-rt, 1..3600 (default 15)\n"
          "  --rt-max-age S        a source with no good poll for S seconds leaves the merge\n"
          "                        until it answers again, and a vehicle position older\n"
          "                        than S seconds is not shown; 0: never (default 600)\n"
          "  --wait-for-data       start without a dataset: /readyz and /v1 answer 503 until\n"
          "                        an import activates one (or SIGHUP finds one)\n"
          "  --compressed-cache-mb N\n"
          "                        megabytes of gzip and br bodies kept for requests that\n"
          "                        come again, 0 for none (default 32; hits and misses in\n"
          "                        /metrics)\n"
          "  --tls-cert FILE       serve HTTPS (TLS 1.3 and 1.2, forward-secret AEAD suites\n"
          "                        only) with this PEM certificate chain; SIGHUP re-reads it\n"
          "                        (default: $TRANSITD_TLS_CERT; `transitd cert new` makes one)\n"
          "  --tls-key FILE        the certificate's PEM private key, unencrypted\n"
          "                        (default: $TRANSITD_TLS_KEY)\n"
          "  --replica-of URL      be a replica of the server (or `transitd export` mirror)\n"
          "                        at URL: take its dataset (GET URL/v1/dataset, files\n"
          "                        verified by SHA-256, transfers resumed), answer writes\n"
          "                        with 307 to URL, open no live store (default:\n"
          "                        $TRANSITD_REPLICA_OF; none: this server is a primary)\n"
          "  --replica-interval S  seconds between polls of the primary's manifest, 1..3600\n"
          "                        (default 2)\n"
          "  --max-streams N       pushed boards open at once: GET /v1/stops/{id}/departures\n"
          "                        or /v1/departures with Accept: text/event-stream (an\n"
          "                        event when the rows change); beyond it 503 (default\n"
          "                        5000, at most --max-connections; 0 refuses every one)\n"
          "  --stream-keepalive S  a comment on every idle event stream each S seconds,\n"
          "                        1..3600 (default 15)\n"
          "  --quiet               no access log\n"
          "  --help                this help\n"
          "\n"
          "Access log (stderr, one line per request):\n"
          "  TIME METHOD TARGET STATUS BODY_BYTES MICROSECONDS\n"
          "Alerts live in DATA/live.sqlite; writes by other processes show within a second.\n"
          "Signals: SIGHUP reloads the data directory's active version, the tokens file and\n"
          "the TLS certificate (a file that fails to load keeps the previous one);\n"
          "SIGTERM or SIGINT stop gracefully.\n"
          "/readyz answers 503 while the served version is not the active one and the\n"
          "server will not switch by itself (the active one fails to open, or\n"
          "--follow-interval 0 and no SIGHUP yet).\n",
          out);
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("transitd serve: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    print_usage(stderr);
    return CLI_USAGE_ERROR;
}

/* An origin as browsers send it: http(s)://host[:port], nothing after. */
static bool valid_origin(const char *o)
{
    const char *host = strncmp(o, "https://", 8) == 0 ? o + 8
                       : strncmp(o, "http://", 7) == 0 ? o + 7
                                                        : NULL;
    if (!host || !*host || strlen(o) > 200)
        return false;
    for (const char *p = host; *p; p++)
        if (*p == '/' || *p == '?' || *p == '#' || *p == '@' || (unsigned char)*p <= ' ')
            return false;
    return true;
}

/* Adds one --cors-origin (or one item of $TRANSITD_CORS_ORIGIN); NULL when it
 * is accepted, else what is wrong with it. */
static const char *add_cors_origin(td_config *cfg, const char *origin)
{
    if (cfg->ncors_origins == TD_MAX_CORS_ORIGINS)
        return "at most 16 CORS origins, got '%s' too";
    bool any = strcmp(origin, "*") == 0;
    if (!any && !valid_origin(origin))
        return "--cors-origin must be * or http(s)://host[:port] with no path, got '%s'";
    if (cfg->ncors_origins && (any || strcmp(cfg->cors_origins[0], "*") == 0))
        return "--cors-origin * allows every origin and cannot be combined with others ('%s')";
    cfg->cors_origins[cfg->ncors_origins++] = origin;
    return NULL;
}

/* $TRANSITD_CORS_ORIGIN: origins separated by commas or spaces. */
static const char *cors_origins_from_env(td_config *cfg, const char **bad)
{
    static char list[4096];
    const char *env = getenv("TRANSITD_CORS_ORIGIN");
    if (!env || !*env)
        return NULL;
    snprintf(list, sizeof list, "%s", env);
    for (char *save = NULL, *item = strtok_r(list, ", ", &save); item;
         item = strtok_r(NULL, ", ", &save)) {
        const char *why = add_cors_origin(cfg, item);
        if (why) {
            *bad = item;
            return why;
        }
    }
    return NULL;
}

static bool parse_number(const char *text, long long min, long long max, long long *out)
{
    if (!text || !*text)
        return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* A clock for the follower's interval that wall-clock steps do not move. */
static int64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- options */

#define GO_ON (-1)   /* the options are read: start the server */

enum {
    OPT_DATA = CLI_OPT_LONG_ONLY, OPT_PORT, OPT_BIND, OPT_THREADS, OPT_MAX_CONNECTIONS,
    OPT_MAX_CONNECTIONS_PER_IP, OPT_HEADER_TIMEOUT, OPT_TIMEOUT, OPT_FOLLOW_INTERVAL,
    OPT_MAX_BODY, OPT_OPENAPI, OPT_TOKENS, OPT_PAGES, OPT_CORS_ORIGIN, OPT_GTFS_RT,
    OPT_RT_INTERVAL, OPT_WAIT_FOR_DATA, OPT_QUIET, OPT_COMPRESSED_CACHE_MB, OPT_TLS_CERT,
    OPT_TLS_KEY, OPT_REPLICA_OF, OPT_REPLICA_INTERVAL, OPT_GTFS_RT_HEADER, OPT_GTFS_RT_FEED, OPT_RT_MAX_AGE,
    OPT_MAX_STREAMS, OPT_STREAM_KEEPALIVE,
};

static const struct option serve_options[] = {
    {"data", required_argument, NULL, OPT_DATA},
    {"port", required_argument, NULL, OPT_PORT},
    {"bind", required_argument, NULL, OPT_BIND},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
    {"max-connections-per-ip", required_argument, NULL, OPT_MAX_CONNECTIONS_PER_IP},
    {"header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"follow-interval", required_argument, NULL, OPT_FOLLOW_INTERVAL},
    {"max-body", required_argument, NULL, OPT_MAX_BODY},
    {"openapi", required_argument, NULL, OPT_OPENAPI},
    {"tokens", required_argument, NULL, OPT_TOKENS},
    {"pages", required_argument, NULL, OPT_PAGES},
    {"cors-origin", required_argument, NULL, OPT_CORS_ORIGIN},
    {"gtfs-rt", required_argument, NULL, OPT_GTFS_RT},
    {"gtfs-rt-header", required_argument, NULL, OPT_GTFS_RT_HEADER},
    {"gtfs-rt-feed", required_argument, NULL, OPT_GTFS_RT_FEED},
    {"rt-interval", required_argument, NULL, OPT_RT_INTERVAL},
    {"rt-max-age", required_argument, NULL, OPT_RT_MAX_AGE},
    {"wait-for-data", no_argument, NULL, OPT_WAIT_FOR_DATA},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"compressed-cache-mb", required_argument, NULL, OPT_COMPRESSED_CACHE_MB},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},
    {"replica-of", required_argument, NULL, OPT_REPLICA_OF},
    {"replica-interval", required_argument, NULL, OPT_REPLICA_INTERVAL},
    {"max-streams", required_argument, NULL, OPT_MAX_STREAMS},
    {"stream-keepalive", required_argument, NULL, OPT_STREAM_KEEPALIVE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The numeric options: the range accepted and what a value outside it says. */
typedef struct number_option {
    int opt;
    long long min, max;
    const char *error;
} number_option;

static const number_option number_options[] = {
    {OPT_PORT, 0, 65535, "--port must be a port number 0..65535, got '%s'"},
    {OPT_THREADS, 1, 1024, "--threads must be 1..1024, got '%s'"},
    {OPT_MAX_CONNECTIONS, 1, 1000000, "--max-connections must be 1..1000000, got '%s'"},
    {OPT_MAX_CONNECTIONS_PER_IP, 0, 1000000,
     "--max-connections-per-ip must be 0..1000000, got '%s'"},
    {OPT_HEADER_TIMEOUT, 1, 3600, "--header-timeout must be 1..3600 seconds, got '%s'"},
    {OPT_TIMEOUT, 1, 86400, "--timeout must be 1..86400 seconds, got '%s'"},
    {OPT_FOLLOW_INTERVAL, 0, 3600, "--follow-interval must be 0..3600 seconds, got '%s'"},
    {OPT_MAX_BODY, 0, 1LL << 30, "--max-body must be 0..1073741824 bytes, got '%s'"},
    {OPT_RT_INTERVAL, 1, 3600, "--rt-interval must be 1..3600 seconds, got '%s'"},
    {OPT_RT_MAX_AGE, 0, 86400, "--rt-max-age must be 0..86400 seconds, got '%s'"},
    {OPT_COMPRESSED_CACHE_MB, 0, 65536, "--compressed-cache-mb must be 0..65536, got '%s'"},
    {OPT_REPLICA_INTERVAL, 1, 3600, "--replica-interval must be 1..3600 seconds, got '%s'"},
    {OPT_MAX_STREAMS, 0, 1000000, "--max-streams must be 0..1000000, got '%s'"},
    {OPT_STREAM_KEEPALIVE, 1, 3600, "--stream-keepalive must be 1..3600 seconds, got '%s'"},
};

static const number_option *find_number_option(int opt)
{
    for (size_t i = 0; i < sizeof number_options / sizeof *number_options; i++)
        if (number_options[i].opt == opt)
            return &number_options[i];
    return NULL;
}

/* A numeric option's value, already within its range, into cfg. */
static void set_number(td_config *cfg, int opt, long long v)
{
    switch (opt) {
    case OPT_PORT: cfg->port = (int)v; break;
    case OPT_THREADS: cfg->threads = (int)v; break;
    case OPT_MAX_CONNECTIONS: cfg->max_connections = (unsigned)v; break;
    case OPT_MAX_CONNECTIONS_PER_IP: cfg->max_connections_per_ip = (unsigned)v; break;
    case OPT_HEADER_TIMEOUT: cfg->header_timeout_s = (unsigned)v; break;
    case OPT_TIMEOUT: cfg->timeout_s = (unsigned)v; break;
    case OPT_FOLLOW_INTERVAL: cfg->follow_interval_s = (unsigned)v; break;
    case OPT_MAX_BODY: cfg->max_body = (size_t)v; break;
    case OPT_RT_INTERVAL: cfg->rt_interval_s = (unsigned)v; break;
    case OPT_MAX_STREAMS: cfg->max_streams = (unsigned)v; break;
    case OPT_STREAM_KEEPALIVE: cfg->stream_keepalive_s = (unsigned)v; break;
    case OPT_RT_MAX_AGE: cfg->rt_max_age_s = (unsigned)v; break;
    case OPT_COMPRESSED_CACHE_MB: cfg->compressed_cache_mb = (unsigned)v; break;
    case OPT_REPLICA_INTERVAL: cfg->replica_interval_s = (unsigned)v; break;
    default: break;
    }
}

/* Where an option whose value is a non-empty text goes, or NULL. */
static const char **text_option(td_config *cfg, int opt)
{
    switch (opt) {
    case OPT_DATA: return &cfg->data_dir;
    case OPT_BIND: return &cfg->bind;
    case OPT_OPENAPI: return &cfg->openapi_path;
    case OPT_TOKENS: return &cfg->tokens_path;
    case OPT_PAGES: return &cfg->pages_dir;
    case OPT_TLS_CERT: return &cfg->tls_cert;
    case OPT_TLS_KEY: return &cfg->tls_key;
    case OPT_REPLICA_OF: return &cfg->replica_of;
    default: return NULL;
    }
}

static const char *env_or_null(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* The defaults, then what the environment sets. GO_ON, or the exit status
 * of a usage error. */
static int config_from_environment(td_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->data_dir = cli_default_data_dir();
    cfg->bind = env_or_null("TRANSITD_BIND") ? env_or_null("TRANSITD_BIND") : "127.0.0.1";
    cfg->openapi_path = env_or_null("TRANSITD_OPENAPI");
    cfg->tokens_path = env_or_null("TRANSITD_TOKENS");
    cfg->port = 8080;
    cfg->rt_interval_s = 15;
    cfg->max_streams = 5000;
    cfg->stream_keepalive_s = 15;
    cfg->rt_max_age_s = 600;
    cfg->compressed_cache_mb = 32;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->threads = cores > 0 ? (int)(cores > 1024 ? 1024 : cores) : 1;
    cfg->max_connections = 10000;
    cfg->max_connections_per_ip = 512;
    cfg->timeout_s = 15;
    cfg->header_timeout_s = 10;
    cfg->follow_interval_s = 1;
    cfg->max_body = 64 * 1024;
    cfg->pages_dir = env_or_null("TRANSITD_PAGES");
    cfg->tls_cert = env_or_null("TRANSITD_TLS_CERT");
    cfg->tls_key = env_or_null("TRANSITD_TLS_KEY");
    cfg->replica_of = env_or_null("TRANSITD_REPLICA_OF");
    cfg->replica_interval_s = 2;
    const char *bad_origin = NULL;
    const char *why = cors_origins_from_env(cfg, &bad_origin);
    if (why)
        return usage_error(why, bad_origin);
    const char *env_port = env_or_null("TRANSITD_PORT");
    long long v;
    if (env_port) {
        if (!parse_number(env_port, 0, 65535, &v))
            return usage_error("TRANSITD_PORT must be a port number 0..65535, got '%s'", env_port);
        cfg->port = (int)v;
    }
    return GO_ON;
}

/* The command line over the environment's settings. GO_ON, or the exit
 * status (--help, a usage error). */
static int config_from_options(td_config *cfg, int argc, char **argv)
{
    bool cors_from_env = cfg->ncors_origins > 0;
    cli_opts opts;
    cli_opts_begin(&opts, argc, argv, "h", serve_options);
    for (int c; (c = cli_opts_next(&opts)) != -1;) {
        const char *arg = opts.arg;
        const char **text = text_option(cfg, c);
        const number_option *number = find_number_option(c);
        long long v;
        if (c == 'h') {
            print_usage(stdout);
            return CLI_OK;
        } else if (c == OPT_QUIET) {
            cfg->quiet = true;
        } else if (c == OPT_WAIT_FOR_DATA) {
            cfg->wait_for_data = true;
        } else if (text) {
            if (!arg || !*arg)
                return usage_error("%s needs a value", opts.name);
            *text = arg;
        } else if (c == OPT_GTFS_RT || c == OPT_GTFS_RT_HEADER || c == OPT_GTFS_RT_FEED) {
            char why[300];
            if (!(c == OPT_GTFS_RT        ? rt_source_list_add(&cfg->gtfs_rt, arg, why, sizeof why)
                  : c == OPT_GTFS_RT_FEED ? rt_source_list_set_feed(&cfg->gtfs_rt, arg, why, sizeof why)
                                          : rt_source_list_add_header(&cfg->gtfs_rt, arg ? arg : "", why, sizeof why)))
                return usage_error("%s", why);
        } else if (c == OPT_CORS_ORIGIN) {
            if (!arg || !*arg)
                return usage_error("%s needs a value", opts.name);
            if (cors_from_env) {   /* the command line replaces the environment's list */
                cfg->ncors_origins = 0;
                cors_from_env = false;
            }
            const char *why = add_cors_origin(cfg, arg);
            if (why)
                return usage_error(why, arg);
        } else if (number) {
            if (!parse_number(arg, number->min, number->max, &v))
                return usage_error(number->error, arg ? arg : "");
            set_number(cfg, c, v);
        } else {   /* an unknown option, or an argument serve does not take */
            return usage_error("unknown option '%s'", c == CLI_OPT_ARG ? arg : opts.typed);
        }
    }
    if (cfg->replica_of && strncmp(cfg->replica_of, "http://", 7) != 0 &&
        strncmp(cfg->replica_of, "https://", 8) != 0)
        return usage_error("--replica-of must be an http:// or https:// URL, got '%s'", cfg->replica_of);
    if (cfg->replica_of)
        cfg->wait_for_data = true;   /* the first version comes from the primary */
    if (!cfg->tls_cert != !cfg->tls_key)
        return usage_error("%s: HTTPS needs both --tls-cert and --tls-key (or $TRANSITD_TLS_CERT "
                           "and $TRANSITD_TLS_KEY)", cfg->tls_cert ? "no --tls-key" : "no --tls-cert");
    return GO_ON;
}

/* ---------------------------------------------------------------- the server's life */

/* The dataset (none yet is fine with --wait-for-data), the server around it,
 * its pages, tokens, live store and realtime source. nil after saying why. */
static TDServer *open_server(td_config *cfg, bool *live_ok, char *live_err, size_t live_cap)
{
    char err[1024];
    td_daemon_fit_open_files(cfg);
    if (cfg->max_streams > cfg->max_connections)   /* a stream is a connection */
        cfg->max_streams = cfg->max_connections;
    dataset *ds = dataset_open(cfg->data_dir, err, sizeof err);
    if (!ds && !cfg->wait_for_data) {
        fprintf(stderr, "transitd serve: cannot open the dataset in %s: %s\n", cfg->data_dir, err);
        return nil;
    }
    if (!ds && cfg->replica_of)
        fprintf(stderr, "transitd serve: no dataset yet in %s; waiting for the first one from "
                        "%s\n", cfg->data_dir, cfg->replica_of);
    else if (!ds)
        fprintf(stderr, "transitd serve: no dataset yet (%s); waiting for an import into %s "
                        "(checked every second) or SIGHUP\n", err, cfg->data_dir);

    TDServer *server = nil;
    @autoreleasepool {
        server = [[TDServer alloc] initWithConfig:cfg error:err length:sizeof err];
    }
    if (!server) {
        fprintf(stderr, "transitd serve: %s\n", err);
        if (ds)
            dataset_release(ds);
        return nil;
    }
    if (cfg->tls_cert) {
        server->tls = tls_server_new(cfg->tls_cert, cfg->tls_key, err, sizeof err);
        if (!server->tls) {
            fprintf(stderr, "transitd serve: %s\n", err);
            [server release];
            if (ds)
                dataset_release(ds);
            return nil;
        }
    }
    td_server_load_openapi(server);
    td_server_load_pages(server);
    if (ds) {
        if (dataset_derived_belongs_in_files(ds))
            dataset_keep_derived_in_files(ds);   /* a large one: only what queries touch stays resident */
        serving_install_dataset(server->state, ds);
    }
    if (!td_server_load_tokens(server, err, sizeof err)) {
        fprintf(stderr, "transitd serve: %s\n", err);
        [server release];
        return nil;
    }
    if (cfg->replica_of) {   /* a replica writes nothing; its live state is the primary's */
        *live_ok = true;
        char rep_err[512];
        server->replica = replica_start(server->state, cfg->data_dir, cfg->replica_of, cfg->replica_interval_s,
                                        rep_err, sizeof rep_err);
        if (!server->replica) {
            fprintf(stderr, "transitd serve: %s\n", rep_err);
            [server release];
            return nil;
        }
    } else {
        *live_ok = serving_open_live(server->state, live_err, live_cap);
    }
    if (cfg->gtfs_rt.count) {
        rt_fetch_global_init();
        char rt_err[256];
        if (!serving_set_realtime_sources(server->state, &cfg->gtfs_rt,
                                          cfg->rt_interval_s < 30 ? 30 : cfg->rt_interval_s, cfg->rt_max_age_s,
                                          rt_err, sizeof rt_err)) {
            fprintf(stderr, "transitd serve: %s\n", rt_err);
            [server release];
            rt_fetch_global_cleanup();
            return nil;
        }
        /* an empty overlay until the first good poll: rows say realtime false */
        serving_rebuild_realtime(server->state);
    }
    return server;
}

/* The self-pipe the signal handler writes to, the daemon and the realtime
 * poller, then the handlers. NULL with the reason in err. */
static td_daemon *start_daemon(TDServer *server, const td_config *cfg, serving_poller **poller,
                               char *err, size_t cap)
{
    if (pipe(signal_pipe) != 0) {
        snprintf(err, cap, "pipe: %s", strerror(errno));
        return NULL;
    }
    for (int i = 0; i < 2; i++)
        fcntl(signal_pipe[i], F_SETFD, FD_CLOEXEC);
    fcntl(signal_pipe[1], F_SETFL, fcntl(signal_pipe[1], F_GETFL) | O_NONBLOCK);
    signal(SIGPIPE, SIG_IGN);

    /* The server threads inherit a mask without the signals we handle, so
     * only this thread runs on_signal. */
    sigset_t handled, previous;
    sigemptyset(&handled);
    sigaddset(&handled, SIGHUP);
    sigaddset(&handled, SIGTERM);
    sigaddset(&handled, SIGINT);
    pthread_sigmask(SIG_BLOCK, &handled, &previous);
    server->streams = board_streams_start(server, cfg->max_streams, cfg->stream_keepalive_s, err, cap);
    td_daemon *daemon = server->streams ? td_daemon_start(server, err, cap) : NULL;
    *poller = NULL;
    if (daemon && serving_realtime(server->state) && !(*poller = serving_poller_start(server->state, cfg->rt_interval_s))) {
        fprintf(stderr, "transitd serve: cannot start the realtime poller\n");
        td_daemon_stop(daemon, 0);
        daemon = NULL;
        snprintf(err, cap, "cannot start the realtime poller");
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    return daemon;
}

/* The start-up line (address, threads, dataset, alerts) and its warnings. */
static void announce(TDServer *server, td_daemon *daemon, const td_config *cfg, bool live_ok,
                     const char *live_err)
{
    dataset *shown = serving_acquire_dataset(server->state);
    const char *addr = td_daemon_address(daemon);
    bool v6 = strchr(addr, ':') != NULL;
    alert_view *alerts = serving_acquire_alerts(server->state);
    fprintf(stderr, "transitd serve: listening on %s://%s%s%s:%d/ (%d threads), dataset %s, "
                    "%u alerts (writes %s)\n",
            server->tls ? "https" : "http", v6 ? "[" : "", addr, v6 ? "]" : "",
            td_daemon_port(daemon), cfg->threads,
            shown ? dataset_version(shown) : "(none)", alerts ? alert_view_count(alerts) : 0,
            cfg->replica_of ? "go to the primary" : cfg->tokens_path ? "need a bearer token"
                                                                       : "disabled: no --tokens");
    if (alerts)
        alert_view_release(alerts);
    if (!live_ok)
        fprintf(stderr, "transitd serve: warning: no live store, alerts are empty and read-only: "
                        "%s\n", live_err);
    if (cfg->replica_of)
        fprintf(stderr, "transitd serve: a replica of %s (its manifest polled every %u s; writes "
                        "answer 307 there)\n", cfg->replica_of, cfg->replica_interval_s);
    if (server->tls) {
        char fingerprint[96];
        tls_server_fingerprint(server->tls, fingerprint);
        int64_t left = tls_server_not_after(server->tls) - (int64_t)time(NULL);
        fprintf(stderr, "transitd serve: TLS certificate %s, SHA-256 %s, %s %lld days\n",
                cfg->tls_cert, fingerprint, left < 0 ? "EXPIRED for" : "expires in",
                (long long)((left < 0 ? -left : left) / 86400));
    }
    if (shown) {
        if (dataset_pin_problem(shown))
            fprintf(stderr, "transitd serve: warning: %s; an import may prune version %s while "
                            "it is served\n", dataset_pin_problem(shown), dataset_version(shown));
        dataset_release(shown);
    }
}

/* The main thread until SIGTERM or SIGINT: SIGHUP's reload, and between
 * signals the follower, alerts written elsewhere and the live checkpoint.
 * Returns the exit status. */
static int signal_loop(TDServer *server, serving_follower *follower)
{
    char err[1024];
    int64_t next_follow_ms = 0;
    for (;;) {
        struct pollfd pfd = {signal_pipe[0], POLLIN, 0};
        /* the main thread wakes at least once a second: alerts another
         * process (transitd or sqlite3) wrote, the live checkpoint, and the
         * follower's check of DATA/current when its interval has passed */
        int wait = serving_follower_wait_ms(follower);
        if (wait < 0 || wait > LIVE_POLL_MS)
            wait = LIVE_POLL_MS;
        int n = poll(&pfd, 1, wait);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0) {
            int64_t now_ms = monotonic_ms();
            if (now_ms >= next_follow_ms) {
                serving_follower_check(follower, false);
                int every = serving_follower_wait_ms(follower);
                next_follow_ms = now_ms + (every < 0 ? LIVE_POLL_MS : every);
            }
            if (serving_live(server->state) && live_store_changed_elsewhere(serving_live(server->state)))
                serving_reload_alerts(server->state);
            if (serving_live(server->state))
                live_store_checkpoint(serving_live(server->state));   /* the fsyncs, off the server threads */
            continue;
        }
        if (n < 0) {
            fprintf(stderr, "transitd serve: poll: %s\n", strerror(errno));
            return CLI_RUNTIME_ERROR;
        }
        unsigned char signo = 0;
        if (read(signal_pipe[0], &signo, 1) != 1)
            continue;
        if (signo == SIGHUP) {
            serving_follower_check(follower, true);
            if (!td_server_load_tokens(server, err, sizeof err))
                fprintf(stderr, "transitd: tokens not reloaded, the previous ones stay: %s\n", err);
            if (server->tls) {
                char fingerprint[96];
                if (tls_server_reload(server->tls, err, sizeof err)) {
                    tls_server_fingerprint(server->tls, fingerprint);
                    fprintf(stderr, "transitd serve: TLS certificate reloaded, SHA-256 %s\n",
                            fingerprint);
                } else {
                    fprintf(stderr, "transitd serve: TLS certificate not reloaded, the previous "
                                    "one stays: %s\n", err);
                }
            }
            continue;
        }
        fprintf(stderr, "transitd serve: %s received, finishing requests in flight\n",
                signo == SIGINT ? "SIGINT" : "SIGTERM");
        return CLI_OK;
    }
}

/* Requests already received finish (DRAIN_MS at most), then everything
 * start-up made goes, in reverse. */
static void shut_down(TDServer *server, const td_config *cfg, td_daemon *daemon,
                      serving_poller *poller, serving_follower *follower)
{
    __atomic_store_n(&server->draining, 1, __ATOMIC_RELAXED);
    serving_poller_stop(poller);
    board_streams_end_all(server->streams, DRAIN_MS);   /* before the daemon: none left suspended */
    td_daemon_stop(daemon, DRAIN_MS);
    board_streams_free(server->streams);
    server->streams = NULL;
    server->follower = NULL;
    serving_follower_free(follower);
    [server release];
    api_dataset_delta_forget_all();
    if (cfg->gtfs_rt.count)
        rt_fetch_global_cleanup();
    signal(SIGHUP, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    close(signal_pipe[0]);
    close(signal_pipe[1]);
    signal_pipe[0] = signal_pipe[1] = -1;
    fprintf(stderr, "transitd serve: stopped\n");
}

/* Start-up, the signal loop, shutdown. Returns the exit status. */
static int run_server(td_config *cfg)
{
    bool live_ok = false;
    char live_err[512] = "", err[1024];
    TDServer *server = open_server(cfg, &live_ok, live_err, sizeof live_err);
    if (!server)
        return CLI_RUNTIME_ERROR;
    serving_poller *poller = NULL;
    td_daemon *daemon = start_daemon(server, cfg, &poller, err, sizeof err);
    serving_follower *follower = daemon ? serving_follower_new(server->state, cfg->follow_interval_s) : NULL;
    if (!follower) {   /* the daemon did not start (err says why), or no memory */
        fprintf(stderr, "transitd serve: %s\n", daemon ? "out of memory" : err);
        serving_poller_stop(poller);
        board_streams_end_all(server->streams, 0);
        if (daemon)
            td_daemon_stop(daemon, 0);
        board_streams_free(server->streams);
        server->streams = NULL;
        [server release];
        if (cfg->gtfs_rt.count)
            rt_fetch_global_cleanup();
        return CLI_RUNTIME_ERROR;
    }
    server->follower = follower;
    announce(server, daemon, cfg, live_ok, live_err);
    int exit_code = signal_loop(server, follower);
    shut_down(server, cfg, daemon, poller, follower);
    return exit_code;
}

int serve_main(int argc, char **argv)
{
    td_config cfg;
    int rc = config_from_environment(&cfg);
    if (rc == GO_ON)
        rc = config_from_options(&cfg, argc, argv);
    return rc == GO_ON ? run_server(&cfg) : rc;
}
