/* cli_query.c — `transitd query`: the v1 API from the command line.
 *
 * Why it exists: scripts, oracle tests and people at a terminal need the same
 * answers the HTTP server gives without running it. Each subcommand turns its
 * options into an api_request and calls the very api_* endpoint the server
 * calls, so the JSON on stdout is byte-identical to the HTTP body. `batch`
 * answers many questions, one JSON line each, against one opened dataset.
 *
 * Exit codes: 0 answered; 1 the query was answered with a 4xx problem (the
 * problem JSON is on stdout) or the dataset is missing or damaged (message on
 * stderr); 2 a usage error (unknown or missing option, message and usage on
 * stderr).
 */
#include "transit/cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "transit/api.h"
#include "transit/live_store.h"
#include "cli/cli_query_batch.h"

#define MAX_OPTIONS 8

/* One subcommand: which endpoint it calls and how its arguments map. */
typedef struct subcommand {
    const char *name;
    api_endpoint_fn endpoint;
    const char *path;            /* the HTTP path, "%s" standing for the id */
    const char *options[MAX_OPTIONS];  /* --NAME VALUE → parameter NAME */
    const char *required[3];     /* options that must be given */
    const char *id_option;       /* an option giving the id instead of a positional */
    const char *positional;      /* "ID" (the id), "TEXT" (parameter q), or NULL */
    const char *summary;
} subcommand;

static const subcommand subcommands[] = {
    {"nearby", api_stops_nearby, "/v1/stops/nearby", {"lat", "lon", "radius", "limit"},
     {"lat", "lon"}, NULL, NULL, "stops near a point (GET /v1/stops/nearby)"},
    {"departures", api_departures, "/v1/departures",
     {"lat", "lon", "radius", "time", "window", "limit"}, {"lat", "lon"}, NULL, NULL,
     "departures from the stops near a point (GET /v1/departures)"},
    {"stop-departures", api_stop_departures, "/v1/stops/%s/departures",
     {"time", "window", "limit"}, {"stop"}, "stop", NULL,
     "departures from one stop or station (GET /v1/stops/{id}/departures)"},
    {"search", api_stops_search, "/v1/stops", {"limit"}, {NULL}, NULL, "TEXT",
     "stops by name (GET /v1/stops?q=TEXT)"},
    {"trip", api_trip, "/v1/trips/%s", {"date"}, {NULL}, NULL, "ID",
     "a trip and its stop times (GET /v1/trips/{id})"},
    {"stop", api_stop, "/v1/stops/%s", {NULL}, {NULL}, NULL, "ID",
     "one stop with its children and routes (GET /v1/stops/{id})"},
    {"routes", api_routes, "/v1/routes", {NULL}, {NULL}, NULL, NULL,
     "all routes (GET /v1/routes)"},
    {"route", api_route, "/v1/routes/%s", {NULL}, {NULL}, NULL, "ID",
     "one route (GET /v1/routes/{id})"},
    {"agencies", api_agencies, "/v1/agencies", {NULL}, {NULL}, NULL, NULL,
     "all agencies (GET /v1/agencies)"},
    {"feed", api_feed, "/v1/feed", {NULL}, {NULL}, NULL, NULL,
     "the imported feed (GET /v1/feed)"},
    {"alerts", api_alerts, "/v1/alerts",
     {"stop_id", "route_id", "trip_id", "agency_id", "active_at", "limit", "after"}, {NULL}, NULL,
     NULL, "service alerts in DATA/live.sqlite (GET /v1/alerts)"},
    {"alert", api_alert, "/v1/alerts/%s", {NULL}, {NULL}, NULL, "ID",
     "one service alert (GET /v1/alerts/{id})"},
};
#define NSUBCOMMANDS (sizeof subcommands / sizeof subcommands[0])

static const char *option_help(const char *name)
{
    if (strcmp(name, "lat") == 0) return "--lat DEG        latitude, -90..90";
    if (strcmp(name, "lon") == 0) return "--lon DEG        longitude, -180..180";
    if (strcmp(name, "radius") == 0) return "--radius M       search radius in metres, 1..5000 (default 500)";
    if (strcmp(name, "limit") == 0) return "--limit N        at most N results, 1..500";
    if (strcmp(name, "window") == 0) return "--window MIN     minutes after --time, 1..1440 (default 60)";
    if (strcmp(name, "time") == 0)
        return "--time T         2026-11-21T18:15:00-05:00, ...Z, or local 2026-11-21T18:15 in the "
               "feed timezone (default now)";
    if (strcmp(name, "date") == 0) return "--date YYYY-MM-DD  also give absolute times on that service date";
    if (strcmp(name, "stop") == 0) return "--stop ID        the stop or station id";
    if (strcmp(name, "active_at") == 0) return "--active_at T    only alerts active at T (now or a date-time)";
    if (strcmp(name, "after") == 0) return "--after ID       only alerts whose id sorts after ID (paging)";
    return name;
}

static void print_query_usage(FILE *f)
{
    fprintf(f, "usage: transitd query [--data DIR] SUBCOMMAND [OPTIONS]\n\n"
               "Answers one v1 API question from an imported dataset and prints the JSON the\n"
               "HTTP server would send.\n\nsubcommands:\n");
    for (size_t i = 0; i < NSUBCOMMANDS; i++)
        fprintf(f, "  %-16s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "  %-16s %s\n", "batch", "answer JSON lines from stdin, one JSON line each");
    fprintf(f, "\noptions:\n"
               "  --data DIR       data directory (default: $TRANSITD_DATA, else ./data)\n"
               "  --help           this text; `transitd query SUBCOMMAND --help` for each\n\n"
               "exit status: 0 answered; 1 answered with a 4xx problem (JSON on stdout) or the\n"
               "dataset cannot be opened; 2 usage error\n");
}

static void print_subcommand_usage(FILE *f, const subcommand *sc)
{
    fprintf(f, "usage: transitd query [--data DIR] %s", sc->name);
    if (sc->positional)
        fprintf(f, " %s", sc->positional);
    if (sc->id_option)
        fprintf(f, " --%s ID", sc->id_option);
    for (int i = 0; i < MAX_OPTIONS && sc->options[i]; i++) {
        bool required = false;
        for (int j = 0; j < 3 && sc->required[j]; j++)
            if (strcmp(sc->required[j], sc->options[i]) == 0)
                required = true;
        fprintf(f, required ? " --%s VALUE" : " [--%s VALUE]", sc->options[i]);
    }
    fprintf(f, "\n\n%s\n", sc->summary);
    if (sc->id_option || sc->options[0])
        fprintf(f, "\noptions:\n");
    if (sc->id_option)
        fprintf(f, "  %s\n", option_help(sc->id_option));
    for (int i = 0; i < MAX_OPTIONS && sc->options[i]; i++)
        fprintf(f, "  %s\n", option_help(sc->options[i]));
    fprintf(f, "  --data DIR       data directory (default: $TRANSITD_DATA, else ./data)\n");
}

static void print_batch_usage(FILE *f)
{
    fprintf(f,
            "usage: transitd query [--data DIR] batch < LINES\n\n"
            "Reads one JSON object per line on stdin and writes one JSON line per input line:\n"
            "the endpoint's body, or {\"error\":{\"status\":400,\"detail\":\"...\"}}.\n"
            "  {\"op\":\"stop-departures\",\"stop\":\"127N\",\"time\":\"...\",\"window\":60,\"limit\":500}\n"
            "  {\"op\":\"departures\",\"lat\":..,\"lon\":..,\"radius\":..,\"time\":..,\"window\":..,\"limit\":..}\n"
            "  {\"op\":\"nearby\",\"lat\":..,\"lon\":..}  {\"op\":\"search\",\"q\":\"pier\"}\n"
            "  {\"op\":\"trip\",\"trip\":\"ID\",\"date\":\"YYYY-MM-DD\"}  {\"op\":\"stop\",\"stop\":\"ID\"}\n"
            "  also \"routes\", {\"op\":\"route\",\"route\":\"ID\"}, \"agencies\", \"feed\".\n"
            "The dataset is opened once for the whole batch.\n");
}

static int usage_error(const char *what, const subcommand *sc)
{
    fprintf(stderr, "transitd query: %s\n", what);
    if (sc)
        print_subcommand_usage(stderr, sc);
    else
        print_query_usage(stderr);
    return CLI_USAGE_ERROR;
}

static const subcommand *find_subcommand(const char *name)
{
    for (size_t i = 0; i < NSUBCOMMANDS; i++)
        if (strcmp(subcommands[i].name, name) == 0)
            return &subcommands[i];
    return NULL;
}

/* The dataset, its alerts and the reusable per-thread state of one invocation. */
typedef struct query_session {
    dataset *ds;
    alert_view *alerts;    /* DATA/live.sqlite's, as the server shows them; NULL when none */
    api_thread *thread;
    json_writer out;
} query_session;

static void warn_alerts(void *ctx, const char *message)
{
    (void)ctx;
    fprintf(stderr, "transitd query: warning: %s\n", message);
}

/* The alerts of DATA/live.sqlite, when it exists (a query never creates it),
 * so the answers are the server's byte for byte. */
static void session_load_alerts(query_session *s, const char *data_dir)
{
    char path[4200], err[512] = "";
    snprintf(path, sizeof path, "%s/live.sqlite", data_dir);
    if (access(path, F_OK) != 0)
        return;
    live_store *ls = live_store_open(data_dir, err, sizeof err);
    alert **list = NULL;
    uint32_t n = 0;
    int64_t generation = 0;
    if (!ls || live_store_load(ls, &list, &n, &generation, warn_alerts, NULL, err, sizeof err) != 0)
        fprintf(stderr, "transitd query: warning: alerts not shown: %s\n", err);
    else if (!(s->alerts = alert_view_new(list, n, s->ds, generation)))
        fprintf(stderr, "transitd query: warning: alerts not shown: out of memory\n");
    live_alerts_free(list, n);
    live_store_close(ls);
}

static int session_open(query_session *s, const char *data_dir)
{
    char err[512] = "";
    memset(s, 0, sizeof *s);
    json_init(&s->out);
    s->ds = dataset_open(data_dir, err, sizeof err);
    if (!s->ds) {
        fprintf(stderr, "transitd query: cannot open the dataset in '%s': %s\n", data_dir, err);
        return -1;
    }
    s->thread = api_thread_new();
    if (!s->thread) {
        fprintf(stderr, "transitd query: out of memory\n");
        dataset_close(s->ds);
        s->ds = NULL;
        return -1;
    }
    session_load_alerts(s, data_dir);
    return 0;
}

static void session_close(query_session *s)
{
    if (s->alerts)
        alert_view_release(s->alerts);
    api_thread_free(s->thread);
    if (s->ds)
        dataset_close(s->ds);
    json_free(&s->out);
}

/* Runs one endpoint; on 200 s->out holds the body, else *prob the problem. */
static int session_call(query_session *s, const subcommand *sc, const api_request *req,
                        api_problem *prob)
{
    int cache_seconds = 0;
    memset(prob, 0, sizeof *prob);
    json_reset(&s->out);
    int status = sc->endpoint(s->thread, s->ds, req, &s->out, prob, &cache_seconds);
    if (status != 200)
        json_reset(&s->out);
    return status;
}

static void write_line(const json_writer *w)
{
    fwrite(w->buf ? w->buf : "", 1, w->len, stdout);
    fputc('\n', stdout);
}

/* ------------------------------------------------------------ one question */

static int run_subcommand(const subcommand *sc, int argc, char **argv, const char *data_dir)
{
    api_param params[MAX_OPTIONS];
    int nparams = 0;
    const char *id = NULL, *text = NULL;

    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_subcommand_usage(stdout, sc);
            return CLI_OK;
        }
        if (strcmp(arg, "--") == 0 || strncmp(arg, "--", 2) != 0) {
            if (strcmp(arg, "--") == 0) {
                if (i + 1 >= argc)
                    continue;
                arg = argv[++i];
            }
            bool takes_id = sc->positional && strcmp(sc->positional, "ID") == 0;
            bool takes_text = sc->positional && strcmp(sc->positional, "TEXT") == 0;
            if ((!takes_id && !takes_text) || (takes_id && id) || (takes_text && text)) {
                char msg[300];
                snprintf(msg, sizeof msg, "%s: unexpected argument '%.200s'", sc->name, arg);
                return usage_error(msg, sc);
            }
            if (takes_id)
                id = arg;
            else
                text = arg;
            continue;
        }
        /* --name VALUE or --name=VALUE */
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
        const char *option = NULL;   /* the static spelling of the option */
        if (name_len == 4 && strncmp(name, "data", 4) == 0)
            option = "data";
        else if (sc->id_option && strlen(sc->id_option) == name_len &&
                 strncmp(name, sc->id_option, name_len) == 0)
            option = sc->id_option;
        for (int k = 0; k < MAX_OPTIONS && sc->options[k] && !option; k++)
            if (strlen(sc->options[k]) == name_len && strncmp(name, sc->options[k], name_len) == 0)
                option = sc->options[k];
        if (!option) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s: unknown option '--%.*s'", sc->name,
                     (int)(name_len > 100 ? 100 : name_len), name);
            return usage_error(msg, sc);
        }
        const char *value;
        if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            char msg[160];
            snprintf(msg, sizeof msg, "%s: option '--%s' needs a value", sc->name, option);
            return usage_error(msg, sc);
        }
        if (strcmp(option, "data") == 0) {
            data_dir = value;
            continue;
        }
        bool repeated = option == sc->id_option && id;
        for (int k = 0; k < nparams; k++)
            repeated |= params[k].key == option;
        if (repeated) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s: option '--%s' given twice", sc->name, option);
            return usage_error(msg, sc);
        }
        if (option == sc->id_option) {
            id = value;
            continue;
        }
        params[nparams].key = option;
        params[nparams].value = value;
        nparams++;
    }

    if (sc->id_option && !id) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: missing --%s", sc->name, sc->id_option);
        return usage_error(msg, sc);
    }
    if (sc->positional && !(id || text)) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: missing %s", sc->name, sc->positional);
        return usage_error(msg, sc);
    }
    for (int j = 0; j < 3 && sc->required[j]; j++) {
        if (sc->id_option && strcmp(sc->required[j], sc->id_option) == 0)
            continue;
        bool given = false;
        for (int k = 0; k < nparams; k++)
            given |= strcmp(params[k].key, sc->required[j]) == 0;
        if (!given) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s: missing --%s", sc->name, sc->required[j]);
            return usage_error(msg, sc);
        }
    }
    if (text) {
        params[nparams].key = "q";
        params[nparams].value = text;
        nparams++;
    }

    query_session s;
    if (session_open(&s, data_dir) != 0)
        return CLI_RUNTIME_ERROR;
    api_request req = {.params = params, .nparams = nparams, .id = id, .now = (int64_t)time(NULL),
                       .alerts = s.alerts};
    api_problem prob;
    int status = session_call(&s, sc, &req, &prob);
    int rc = CLI_OK;
    if (status == 200) {
        write_line(&s.out);
    } else if (status < 500) {
        char instance[600];
        snprintf(instance, sizeof instance, sc->path, id ? id : "");
        api_problem_write(&prob, instance, &s.out);
        write_line(&s.out);
        rc = CLI_RUNTIME_ERROR;
    } else {
        fprintf(stderr, "transitd query: %s\n", prob.detail);
        rc = CLI_RUNTIME_ERROR;
    }
    session_close(&s);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "transitd query: cannot write the answer to stdout\n");
        rc = CLI_RUNTIME_ERROR;
    }
    return rc;
}

/* ------------------------------------------------------------ batch */

/* The member naming the id for an op that takes one ("stop", "trip", "route"). */
static const char *batch_id_key(const subcommand *sc)
{
    if (sc->id_option)
        return sc->id_option;
    if (sc->positional && strcmp(sc->positional, "ID") == 0)
        return sc->name;
    return NULL;
}

static void batch_error(json_writer *w, int status, const char *detail)
{
    json_reset(w);
    json_object_begin(w);
    json_key(w, "error");
    json_object_begin(w);
    json_kv_int(w, "status", status);
    json_kv_string(w, "detail", detail);
    json_object_end(w);
    json_object_end(w);
}

/* Answers one input line into s->out: the body or an error object. */
static void batch_answer(query_session *s, const char *text, size_t len)
{
    batch_line line;
    char detail[300];
    if (batch_line_parse(&line, text, len) != 0) {
        batch_error(&s->out, 400, line.error);
        batch_line_release(&line);
        return;
    }
    const subcommand *sc = line.op ? find_subcommand(line.op) : NULL;
    if (!sc) {
        if (line.op)
            snprintf(detail, sizeof detail, "unknown op '%.200s'", line.op);
        else
            snprintf(detail, sizeof detail, "missing required parameter 'op'");
        batch_error(&s->out, 400, detail);
        batch_line_release(&line);
        return;
    }
    const char *id_key = batch_id_key(sc);
    const char *id = NULL;
    api_param params[BATCH_MAX_FIELDS];
    int nparams = 0;
    for (int i = 0; i < line.nfields; i++) {
        if (id_key && strcmp(line.fields[i].key, id_key) == 0) {
            id = line.fields[i].value;
            continue;
        }
        params[nparams].key = line.fields[i].key;
        params[nparams].value = line.fields[i].value;
        nparams++;
    }
    if (id_key && !id) {
        snprintf(detail, sizeof detail, "missing required parameter '%s'", id_key);
        batch_error(&s->out, 400, detail);
        batch_line_release(&line);
        return;
    }
    api_request req = {.params = params, .nparams = nparams, .id = id, .now = (int64_t)time(NULL),
                       .alerts = s->alerts};
    api_problem prob;
    int status = session_call(s, sc, &req, &prob);
    if (status != 200)
        batch_error(&s->out, status, prob.detail);
    batch_line_release(&line);
}

static int run_batch(int argc, char **argv, const char *data_dir)
{
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_batch_usage(stdout);
            return CLI_OK;
        }
        if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
            data_dir = argv[++i];
        } else if (strncmp(argv[i], "--data=", 7) == 0) {
            data_dir = argv[i] + 7;
        } else {
            fprintf(stderr, "transitd query: batch: unexpected argument '%s'\n", argv[i]);
            print_batch_usage(stderr);
            return CLI_USAGE_ERROR;
        }
    }
    query_session s;
    if (session_open(&s, data_dir) != 0)
        return CLI_RUNTIME_ERROR;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = CLI_OK;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        size_t len = (size_t)n;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        batch_answer(&s, line, len);
        write_line(&s.out);
        if (fflush(stdout) != 0) {
            fprintf(stderr, "transitd query: batch: cannot write to stdout\n");
            rc = CLI_RUNTIME_ERROR;
            break;
        }
    }
    free(line);
    session_close(&s);
    return rc;
}

/* ------------------------------------------------------------ entry */

int cli_query_main(int argc, char **argv)
{
    /* argv[0] is "query" (or the program name): options start at 1. */
    const char *data_dir = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_query_usage(stdout);
            return CLI_OK;
        }
        if (strcmp(arg, "--data") == 0) {
            if (i + 1 >= argc)
                return usage_error("option '--data' needs a value", NULL);
            data_dir = argv[++i];
        } else if (strncmp(arg, "--data=", 7) == 0) {
            data_dir = arg + 7;
        } else if (arg[0] == '-') {
            char msg[160];
            snprintf(msg, sizeof msg, "unknown option '%.100s'", arg);
            return usage_error(msg, NULL);
        } else {
            break;
        }
    }
    if (i >= argc)
        return usage_error("missing SUBCOMMAND", NULL);
    if (!data_dir)
        data_dir = cli_default_data_dir();
    const char *name = argv[i];
    if (strcmp(name, "batch") == 0)
        return run_batch(argc - i - 1, argv + i + 1, data_dir);
    const subcommand *sc = find_subcommand(name);
    if (!sc) {
        char msg[160];
        snprintf(msg, sizeof msg, "unknown subcommand '%.100s'", name);
        return usage_error(msg, NULL);
    }
    return run_subcommand(sc, argc - i - 1, argv + i + 1, data_dir);
}
