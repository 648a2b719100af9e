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
#include "transit/rt_fetch.h"
#include "transit/rt_source_list.h"
#include "transit/serving.h"
#include "cli/cli_query_batch.h"

#define MAX_OPTIONS 10

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
    {"nearby", api_stops_nearby, "/v1/stops/nearby", {"lat", "lon", "radius", "limit", "cursor"},
     {"lat", "lon"}, NULL, NULL, "stops near a point (GET /v1/stops/nearby)"},
    {"departures", api_departures, "/v1/departures",
     {"lat", "lon", "radius", "time", "window", "limit", "kind", "realtime", "wheelchair", "cursor"},
     {"lat", "lon"}, NULL, NULL, "departures from the stops near a point (GET /v1/departures)"},
    {"stop-departures", api_stop_departures, "/v1/stops/%s/departures",
     {"time", "window", "limit", "kind", "realtime", "wheelchair", "cursor"}, {"stop"}, "stop", NULL,
     "departures from one stop or station (GET /v1/stops/{id}/departures)"},
    {"stop-arrivals", api_stop_arrivals, "/v1/stops/%s/arrivals",
     {"time", "window", "limit", "realtime", "wheelchair", "cursor"}, {"stop"}, "stop", NULL,
     "arrivals at one stop or station (GET /v1/stops/{id}/arrivals)"},
    {"search", api_stops_search, "/v1/stops", {"limit", "cursor"}, {NULL}, NULL, "TEXT",
     "stops by name (GET /v1/stops?q=TEXT)"},
    {"trip", api_trip, "/v1/trips/%s", {"date", "include"}, {NULL}, NULL, "ID",
     "a trip and its stop times (GET /v1/trips/{id})"},
    {"shape", api_shape, "/v1/shapes/%s", {NULL}, {NULL}, NULL, "ID",
     "one shape as an encoded polyline (GET /v1/shapes/{id})"},
    {"stop", api_stop, "/v1/stops/%s", {NULL}, {NULL}, NULL, "ID",
     "one stop with its children and routes (GET /v1/stops/{id})"},
    {"routes", api_routes, "/v1/routes", {"limit", "cursor"}, {NULL}, NULL, NULL,
     "all routes (GET /v1/routes)"},
    {"route", api_route, "/v1/routes/%s", {NULL}, {NULL}, NULL, "ID",
     "one route (GET /v1/routes/{id})"},
    {"agencies", api_agencies, "/v1/agencies", {"limit", "cursor"}, {NULL}, NULL, NULL,
     "all agencies (GET /v1/agencies)"},
    {"feed", api_feed, "/v1/feed", {NULL}, {NULL}, NULL, NULL,
     "the imported feed (GET /v1/feed)"},
    {"alerts", api_alerts, "/v1/alerts",
     {"stop_id", "route_id", "trip_id", "agency_id", "active_at", "limit", "after"}, {NULL}, NULL,
     NULL, "service alerts in DATA/live.sqlite (GET /v1/alerts)"},
    {"alert", api_alert, "/v1/alerts/%s", {NULL}, {NULL}, NULL, "ID",
     "one service alert (GET /v1/alerts/{id})"},
    {"vehicles", api_vehicles, "/v1/vehicles", {"bbox", "route", "limit", "after"}, {NULL}, NULL, NULL,
     "vehicle positions of the --gtfs-rt sources (GET /v1/vehicles)"},
};
#define NSUBCOMMANDS (sizeof subcommands / sizeof subcommands[0])

static const char *option_help(const char *name)
{
    if (strcmp(name, "lat") == 0) return "--lat DEG        latitude, -90..90";
    if (strcmp(name, "lon") == 0) return "--lon DEG        longitude, -180..180";
    if (strcmp(name, "radius") == 0) return "--radius M       search radius in metres, 1..5000 (default 500)";
    if (strcmp(name, "limit") == 0) return "--limit N        at most N results (a page), 1..500; routes, agencies 1..10000";
    if (strcmp(name, "window") == 0) return "--window MIN     minutes after --time, 1..1440 (default 60)";
    if (strcmp(name, "time") == 0)
        return "--time T         2026-11-21T18:15:00-05:00, ...Z, or local 2026-11-21T18:15 in the "
               "feed timezone (default now)";
    if (strcmp(name, "date") == 0) return "--date YYYY-MM-DD  also give absolute times on that service date";
    if (strcmp(name, "include") == 0) return "--include shape  also give the trip's shape (an encoded polyline)";
    if (strcmp(name, "stop") == 0) return "--stop ID        the stop or station id";
    if (strcmp(name, "kind") == 0)
        return "--kind K         departures (default), arrivals, or both (each call once: its departure,\n"
               "                   else its arrival)";
    if (strcmp(name, "realtime") == 0)
        return "--realtime M     with --gtfs-rt: predicted (default: rows chosen and ordered by predicted\n"
               "                   time) or scheduled (by scheduled time, predictions added)";
    if (strcmp(name, "wheelchair") == 0)
        return "--wheelchair 1   only the rows a wheelchair can take (the trip's wheelchair_accessible\n"
               "                   and the stop's wheelchair_boarding are 1, a platform taking its station's)";
    if (strcmp(name, "active_at") == 0) return "--active_at T    only alerts active at T (now or a date-time)";
    if (strcmp(name, "after") == 0) return "--after ID       only alerts (vehicles) whose id sorts after ID (paging)";
    if (strcmp(name, "bbox") == 0) return "--bbox B         only vehicles in minLon,minLat,maxLon,maxLat";
    if (strcmp(name, "route") == 0) return "--route ID       only vehicles of this route";
    if (strcmp(name, "cursor") == 0)
        return "--cursor C       the page after the one whose `next` link holds cursor=C (give the\n"
               "                   link's other parameters too)";
    return name;
}

static void print_query_usage(FILE *f)
{
    fprintf(f, "usage: transitd query [--data DIR] [--gtfs-rt SRC [--gtfs-rt-header H]...]... SUBCOMMAND [OPTIONS]\n\n"
               "Answers one v1 API question from an imported dataset and prints the JSON the\n"
               "HTTP server would send.\n\nsubcommands:\n");
    for (size_t i = 0; i < NSUBCOMMANDS; i++)
        fprintf(f, "  %-16s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "  %-16s %s\n", "batch", "answer JSON lines from stdin, one JSON line each");
    fprintf(f, "\noptions:\n"
               "  --data DIR       data directory (default: $TRANSITD_DATA, else ./data)\n"
               "  --gtfs-rt SRC    show GTFS-Realtime from SRC (a file or an http(s) URL, read\n"
               "                   once), as `transitd serve --gtfs-rt` does; repeatable: the\n"
               "                   feeds are merged as the server merges them\n"
               "  --gtfs-rt-header 'NAME: VALUE'\n"
               "                   a request header (an API key) for the --gtfs-rt just before\n"
               "                   it; repeatable; never printed\n"
               "  --gtfs-rt-feed NAME\n"
               "                   the --gtfs-rt just before it sends the ids of feed NAME of a\n"
               "                   merged dataset (`transitd import a.zip b.zip`): NAME:id is\n"
               "                   used where the merge namespaced id\n"
               "  --help           this text; `transitd query SUBCOMMAND --help` for each\n\n"
               "exit status: 0 answered; 1 answered with a 4xx problem (JSON on stdout) or the\n"
               "dataset cannot be opened; 2 usage error\n");
}

static void print_subcommand_usage(FILE *f, const subcommand *sc)
{
    fprintf(f, "usage: transitd query [--data DIR] [--gtfs-rt SRC] %s", sc->name);
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
    fprintf(f, "  --data DIR       data directory (default: $TRANSITD_DATA, else ./data)\n"
               "  --gtfs-rt SRC    show GTFS-Realtime from SRC (file or URL), as the server does;\n"
               "                   repeatable, each followed by its --gtfs-rt-header 'NAME: VALUE'\n"
               "                   and --gtfs-rt-feed NAME (its ids' feed of a merged dataset)\n");
}

static void print_batch_usage(FILE *f)
{
    fprintf(f,
            "usage: transitd query [--data DIR] [--gtfs-rt SRC] batch < LINES\n\n"
            "Reads one JSON object per line on stdin and writes one JSON line per input line:\n"
            "the endpoint's body, or {\"error\":{\"status\":400,\"detail\":\"...\"}}.\n"
            "  {\"op\":\"stop-departures\",\"stop\":\"127N\",\"time\":\"...\",\"window\":60,\"limit\":500}\n"
            "  {\"op\":\"departures\",\"lat\":..,\"lon\":..,\"radius\":..,\"time\":..,\"window\":..,\"limit\":..}\n"
            "  (both also take \"kind\"), {\"op\":\"stop-arrivals\",\"stop\":\"127N\",...}\n"
            "  {\"op\":\"nearby\",\"lat\":..,\"lon\":..}  {\"op\":\"search\",\"q\":\"pier\"}\n"
            "  {\"op\":\"trip\",\"trip\":\"ID\",\"date\":\"YYYY-MM-DD\"}  {\"op\":\"stop\",\"stop\":\"ID\"}\n"
            "  also \"routes\", {\"op\":\"route\",\"route\":\"ID\"}, {\"op\":\"shape\",\"shape\":\"ID\"},\n"
            "  \"agencies\", \"feed\".\n"
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

/* What one invocation serves — the serving state the server uses, so the
 * answers are the server's byte for byte — and its reusable per-thread
 * state. */
typedef struct query_session {
    serving *state;
    serving_view view;     /* the dataset, its alerts and realtime overlay */
    bool realtime;         /* --gtfs-rt: rt_fetch's global state is set up */
    api_thread *thread;
    json_writer out;
} query_session;

/* Where the session's answers come from besides the data directory. */
typedef struct query_sources {
    const char *data_dir;
    rt_source_list gtfs_rt;   /* GTFS-Realtime files or URLs with their headers, read once */
} query_sources;

static void session_close(query_session *s)
{
    serving_view_release(&s->view);
    serving_free(s->state);
    if (s->realtime)
        rt_fetch_global_cleanup();
    api_thread_free(s->thread);
    json_free(&s->out);
}

/* Realtime from src->gtfs_rt, fetched and decoded once: the overlay and the
 * feed's alerts, as a server shows them after a good poll. */
static int session_read_realtime(query_session *s, const rt_source_list *sources)
{
    char err[1024] = "";
    rt_fetch_global_init();
    s->realtime = true;
    /* every source must answer: a query has no last good feed to fall back on;
     * 600 s is serve's default --rt-max-age, so that the vehicles left out as
     * stale are those a server leaves out (its one poll is never stale) */
    if (!serving_set_realtime_sources(s->state, sources, 30, 600, err, sizeof err) ||
        (serving_poll_realtime(s->state, (int64_t)time(NULL), err, sizeof err), err[0])) {
        fprintf(stderr, "transitd query: realtime: %s\n", err);
        return -1;
    }
    return 0;
}

static int session_open(query_session *s, const query_sources *src)
{
    char err[512] = "";
    memset(s, 0, sizeof *s);
    json_init(&s->out);
    dataset *ds = NULL;
    if (!(s->state = serving_new(src->data_dir)) || !(s->thread = api_thread_new())) {
        fprintf(stderr, "transitd query: out of memory\n");
        goto fail;
    }
    if (!(ds = dataset_open(src->data_dir, err, sizeof err))) {
        fprintf(stderr, "transitd query: cannot open the dataset in '%s': %s\n", src->data_dir, err);
        goto fail;
    }
    serving_install_dataset(s->state, ds);
    /* the alerts of DATA/live.sqlite when it exists (a query never creates it) */
    char path[4200];
    snprintf(path, sizeof path, "%s/live.sqlite", src->data_dir);
    if (access(path, F_OK) == 0 && !serving_open_live(s->state, err, sizeof err))
        fprintf(stderr, "transitd query: warning: alerts not shown: %s\n", err);
    if (src->gtfs_rt.count && session_read_realtime(s, &src->gtfs_rt) != 0)
        goto fail;
    serving_acquire(s->state, &s->view);
    return 0;
fail:
    session_close(s);
    return -1;
}

/* Runs one endpoint; on 200 s->out holds the body, else *prob the problem. */
static int session_call(query_session *s, const subcommand *sc, const api_request *req,
                        api_problem *prob)
{
    int cache_seconds = 0;
    memset(prob, 0, sizeof *prob);
    json_reset(&s->out);
    int status = sc->endpoint(s->thread, s->view.ds, req, &s->out, prob, &cache_seconds);
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

/* The options every form of `query` takes, besides its own. */
enum { OPT_DATA = CLI_OPT_LONG_ONLY, OPT_GTFS_RT, OPT_GTFS_RT_HEADER, OPT_GTFS_RT_FEED, OPT_ID, OPT_PARAM };
#define IS_REALTIME_OPTION(c) ((c) == OPT_GTFS_RT || (c) == OPT_GTFS_RT_HEADER || (c) == OPT_GTFS_RT_FEED)

/* A --gtfs-rt, --gtfs-rt-header or --gtfs-rt-feed into src
 * (rt_source_list.h: the last two go with the --gtfs-rt before them).
 * CLI_OK or the usage error. */
static int take_realtime_option(query_sources *src, int c, const char *arg, const subcommand *sc)
{
    char why[300];
    bool ok = c == OPT_GTFS_RT        ? rt_source_list_add(&src->gtfs_rt, arg, why, sizeof why)
              : c == OPT_GTFS_RT_FEED ? rt_source_list_set_feed(&src->gtfs_rt, arg, why, sizeof why)
                                      : rt_source_list_add_header(&src->gtfs_rt, arg ? arg : "", why, sizeof why);
    return ok ? CLI_OK : usage_error(why, sc);
}

static int subcommand_error(const subcommand *sc, const char *fmt, const char *arg)
{
    char msg[300];
    snprintf(msg, sizeof msg, fmt, sc->name, arg);
    return usage_error(msg, sc);
}

/* The subcommand's long options: help, data, gtfs-rt, its id option, then
 * its parameters (val OPT_PARAM + k for sc->options[k]). */
static void subcommand_options(const subcommand *sc, struct option *out)
{
    int n = 0;
    out[n++] = (struct option){"help", no_argument, NULL, 'h'};
    out[n++] = (struct option){"data", required_argument, NULL, OPT_DATA};
    out[n++] = (struct option){"gtfs-rt", required_argument, NULL, OPT_GTFS_RT};
    out[n++] = (struct option){"gtfs-rt-header", required_argument, NULL, OPT_GTFS_RT_HEADER};
    out[n++] = (struct option){"gtfs-rt-feed", required_argument, NULL, OPT_GTFS_RT_FEED};
    if (sc->id_option)
        out[n++] = (struct option){sc->id_option, required_argument, NULL, OPT_ID};
    for (int k = 0; k < MAX_OPTIONS && sc->options[k]; k++)
        out[n++] = (struct option){sc->options[k], required_argument, NULL, OPT_PARAM + k};
    out[n] = (struct option){NULL, 0, NULL, 0};
}

/* The parameters of one question as the command line gave them. */
typedef struct question {
    api_param params[MAX_OPTIONS + 1];
    int nparams;
    const char *id, *text;
} question;

/* After the options: the id, the text and the required options are there. */
static int check_question(const subcommand *sc, question *q)
{
    if (sc->id_option && !q->id)
        return subcommand_error(sc, "%s: missing --%s", sc->id_option);
    if (sc->positional && !(q->id || q->text))
        return subcommand_error(sc, "%s: missing %s", sc->positional);
    for (int j = 0; j < 3 && sc->required[j]; j++) {
        if (sc->id_option && strcmp(sc->required[j], sc->id_option) == 0)
            continue;
        bool given = false;
        for (int k = 0; k < q->nparams; k++)
            given |= strcmp(q->params[k].key, sc->required[j]) == 0;
        if (!given)
            return subcommand_error(sc, "%s: missing --%s", sc->required[j]);
    }
    if (q->text)
        q->params[q->nparams++] = (api_param){"q", q->text};
    return CLI_OK;
}

/* A positional argument: the id or the text, where the subcommand takes one. */
static int take_positional(const subcommand *sc, question *q, const char *arg)
{
    bool takes_id = sc->positional && strcmp(sc->positional, "ID") == 0;
    bool takes_text = sc->positional && strcmp(sc->positional, "TEXT") == 0;
    if ((!takes_id && !takes_text) || (takes_id && q->id) || (takes_text && q->text))
        return subcommand_error(sc, "%s: unexpected argument '%.200s'", arg);
    if (takes_id)
        q->id = arg;
    else
        q->text = arg;
    return CLI_OK;
}

/* Reads `query SUBCOMMAND ...` (argv[0] the subcommand) into q and src.
 * CLI_OK, CLI_USAGE_ERROR, or -1 when --help was answered. */
static int read_question(const subcommand *sc, int argc, char **argv, question *q, query_sources *src)
{
    struct option longopts[MAX_OPTIONS + 7];
    subcommand_options(sc, longopts);
    cli_opts o;
    cli_opts_begin(&o, argc, argv, "h", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        if (c == 'h') {
            print_subcommand_usage(stdout, sc);
            return -1;
        }
        if (c == CLI_OPT_UNKNOWN) {
            char typed[104];
            snprintf(typed, sizeof typed, "%.*s", (int)strcspn(o.typed, "="), o.typed);
            return subcommand_error(sc, "%s: unknown option '%s'", typed);
        }
        if (c == CLI_OPT_ARG) {
            if (take_positional(sc, q, o.arg) != CLI_OK)
                return CLI_USAGE_ERROR;
            continue;
        }
        if (!o.arg)
            return subcommand_error(sc, "%s: option '%s' needs a value", o.name);
        const char *option = c >= OPT_PARAM ? sc->options[c - OPT_PARAM] : NULL;
        bool repeated = c == OPT_ID && q->id;
        for (int k = 0; option && k < q->nparams; k++)
            repeated |= q->params[k].key == option;
        if (repeated)
            return subcommand_error(sc, "%s: option '%s' given twice", o.name);
        if (c == OPT_DATA)
            src->data_dir = o.arg;
        else if IS_REALTIME_OPTION(c) {
            if (take_realtime_option(src, c, o.arg, sc) != CLI_OK)
                return CLI_USAGE_ERROR;
        }
        else if (c == OPT_ID)
            q->id = o.arg;
        else
            q->params[q->nparams++] = (api_param){option, o.arg};
    }
    return check_question(sc, q);
}

/* Answers q, the JSON on stdout. */
static int answer_question(const subcommand *sc, const question *q, const query_sources *src)
{
    query_session s;
    if (session_open(&s, src) != 0)
        return CLI_RUNTIME_ERROR;
    api_request req = {.params = q->params, .nparams = q->nparams, .id = q->id, .now = (int64_t)time(NULL),
                       .alerts = s.view.alerts, .realtime = s.view.realtime};
    api_problem prob;
    int status = session_call(&s, sc, &req, &prob);
    int rc = CLI_OK;
    if (status == 200) {
        write_line(&s.out);
    } else if (status < 500) {
        char instance[600];
        snprintf(instance, sizeof instance, sc->path, q->id ? q->id : "");
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

static int run_subcommand(const subcommand *sc, int argc, char **argv, query_sources src)
{
    question q = {0};
    int rc = read_question(sc, argc, argv, &q, &src);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    return answer_question(sc, &q, &src);
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
                       .alerts = s->view.alerts, .realtime = s->view.realtime};
    api_problem prob;
    int status = session_call(s, sc, &req, &prob);
    if (status != 200)
        batch_error(&s->out, status, prob.detail);
    batch_line_release(&line);
}

static int run_batch(int argc, char **argv, query_sources src)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"data", required_argument, NULL, OPT_DATA},
        {"gtfs-rt", required_argument, NULL, OPT_GTFS_RT},
        {"gtfs-rt-header", required_argument, NULL, OPT_GTFS_RT_HEADER},
        {"gtfs-rt-feed", required_argument, NULL, OPT_GTFS_RT_FEED},
        {NULL, 0, NULL, 0},
    };
    cli_opts o;
    cli_opts_begin(&o, argc, argv, "h", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        if (c == 'h') {
            print_batch_usage(stdout);
            return CLI_OK;
        }
        if (c == OPT_DATA && o.arg) {
            src.data_dir = o.arg;
            continue;
        }
        if (IS_REALTIME_OPTION(c) && o.arg) {
            if (take_realtime_option(&src, c, o.arg, NULL) != CLI_OK)
                return CLI_USAGE_ERROR;
            continue;
        }
        fprintf(stderr, "transitd query: batch: unexpected argument '%s'\n", o.typed ? o.typed : o.arg);
        print_batch_usage(stderr);
        return CLI_USAGE_ERROR;
    }
    query_session s;
    if (session_open(&s, &src) != 0)
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
    /* argv[0] is "query" (or the program name): the options before the
     * subcommand; getopt stops at the subcommand ('+'), which reads the rest */
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"data", required_argument, NULL, OPT_DATA},
        {"gtfs-rt", required_argument, NULL, OPT_GTFS_RT},
        {"gtfs-rt-header", required_argument, NULL, OPT_GTFS_RT_HEADER},
        {"gtfs-rt-feed", required_argument, NULL, OPT_GTFS_RT_FEED},
        {NULL, 0, NULL, 0},
    };
    query_sources src = {0};
    cli_opts reset;
    cli_opts_begin(&reset, argc, argv, "", longopts);
    for (int c; (c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1;) {
        char msg[160];
        if (c == 'h') {
            print_query_usage(stdout);
            return CLI_OK;
        } else if (c == OPT_DATA) {
            src.data_dir = optarg;
        } else if IS_REALTIME_OPTION(c) {
            if (take_realtime_option(&src, c, optarg, NULL) != CLI_OK)
                return CLI_USAGE_ERROR;
        } else if (c == ':') {
            snprintf(msg, sizeof msg, "option '%.100s' needs a value", argv[optind - 1]);
            return usage_error(msg, NULL);
        } else {
            snprintf(msg, sizeof msg, "unknown option '%.100s'", argv[optind - 1]);
            return usage_error(msg, NULL);
        }
    }
    int i = optind;
    if (i >= argc)
        return usage_error("missing SUBCOMMAND", NULL);
    if (!src.data_dir)
        src.data_dir = cli_default_data_dir();
    const char *name = argv[i];
    if (strcmp(name, "batch") == 0)
        return run_batch(argc - i, argv + i, src);
    const subcommand *sc = find_subcommand(name);
    if (!sc) {
        char msg[160];
        snprintf(msg, sizeof msg, "unknown subcommand '%.100s'", name);
        return usage_error(msg, NULL);
    }
    return run_subcommand(sc, argc - i, argv + i, src);
}
