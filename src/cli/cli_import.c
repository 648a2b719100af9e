/* cli_import.c — `transitd import FEED [FEED [--feed-id NAME]]... [--data DIR] [--json]
 * [--quiet] [--force] [--max-drop PCT] [--max-shrink PCT] [--memory-budget SIZE] [--progress]`.
 *
 * Why it exists: the import pipeline (import.h) returns numbers; this file is
 * what the user sees of them: a line per phase as it completes on a terminal,
 * then a summary table (rows per file, time per phase, store sizes, the bad
 * rows by kind with the first examples), or the same summary as one JSON
 * object with --json. It also owns what every subcommand shares: the
 * data-directory default and the usage-error format.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "transit/cli.h"
#include "cli/cli_import_merge.h"
#include "transit/feed_merge.h"
#include "transit/gtfs.h"
#include "transit/import.h"
#include "transit/json_writer.h"
#include "transit/byte_size.h"

const char *cli_default_data_dir(void)
{
    const char *env = getenv("TRANSITD_DATA");
    return (env && env[0]) ? env : "./data";
}

static void print_usage(FILE *out)
{
    fputs("usage: transitd import FEED [--data DIR] [--json] [--quiet] [--force]\n"
          "                      [--max-drop PCT] [--max-shrink PCT]\n"
          "                      [--memory-budget SIZE] [--progress]\n"
          "       transitd import FEED [--feed-id NAME] FEED [--feed-id NAME]... [options]\n"
          "\n"
          "Imports a GTFS feed into a new version of the data directory and makes it the\n"
          "active one. FEED is a .zip (the .txt files at the top or in one folder) or a\n"
          "directory of .txt files. The version is the first 12 hex digits of the feed's\n"
          "SHA-256; importing the active feed again does nothing. A failed or interrupted\n"
          "import leaves the previously active version active.\n"
          "\n"
          "Several FEEDs are merged into one dataset (docs/ARCHITECTURE.md, \"Many feeds\"):\n"
          "an id is kept unless an earlier FEED has the same id in the same table; then\n"
          "it becomes NAME:id, NAME being the feed's --feed-id (given after that FEED) or\n"
          "its file name without .zip. The feeds must share one agency_timezone.\n"
          "\n"
          "options:\n"
          "  --data DIR   data directory (default: $TRANSITD_DATA, else ./data)\n"
          "  --feed-id NAME  the name of the FEED before it in a merge (letters, digits,\n"
          "               '_', '-', '.')\n"
          "  --json       print the summary as one JSON object on stdout\n"
          "  --quiet      print nothing but errors\n"
          "  --force      rebuild even when this feed is already the active version, and\n"
          "               activate it even when the checks below refuse it\n"
          "  --max-drop PCT    refuse to activate when more than PCT % of the rows of\n"
          "               stops.txt, routes.txt, trips.txt or stop_times.txt were dropped\n"
          "               as bad rows (default 5; 100 turns the check off; a file that\n"
          "               dropped 10 rows or fewer is never refused)\n"
          "  --max-shrink PCT  refuse to activate when the stops, trips or stop times\n"
          "               fall by more than PCT % against the active version (default\n"
          "               50; 100 turns the check off)\n"
          "  --memory-budget SIZE  what the stop_times rows may hold in memory at\n"
          "               once (default 1.5G; K, M, G, T are powers of 1024). A feed\n"
          "               whose stop_times.txt is grouped by trip holds one trip's rows\n"
          "               at a time; one that is not holds its rows up to the budget,\n"
          "               then sorts them in runs on disk in DIR/versions (removed as\n"
          "               the import ends) and merges them\n"
          "  --progress   progress lines on stderr even when it is not a terminal\n"
          "               (on a terminal they are shown unless --quiet)\n"
          "  -h, --help   show this help\n"
          "\n"
          "A refused version is not kept; the active version stays as it was.\n"
          "\n"
          "exit status: 0 imported (or already active), 1 import failed, 2 usage error,\n"
          "3 built but refused by --max-drop or --max-shrink (nothing activated)\n",
          out);
}

int cli_usage_error(const char *command, void (*print_usage)(FILE *out), const char *fmt,
                    const char *arg)
{
    fprintf(stderr, "transitd %s: ", command);
    fprintf(stderr, fmt, arg);
    fputs("\n\n", stderr);
    print_usage(stderr);
    return CLI_USAGE_ERROR;
}

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("import", print_usage, fmt, arg);
}

/* A percentage 0..100 (decimals allowed). Returns 0 or -1. */
static int parse_pct(const char *s, double *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    double v = strtod(s, &end);
    if (*end != '\0' || !(v >= 0 && v <= 100))
        return -1;
    *out = v;
    return 0;
}

/* ---------------------------------------------------------------- formatting */

/* 2400187 → "2,400,187" */
static const char *thousands(uint64_t v, char *buf, size_t len)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

static double mb(uint64_t bytes)
{
    return (double)bytes / 1e6;
}

static uint64_t bytes_of(const import_result *r, import_file f)
{
    return r->file_bytes[f] > 0 ? (uint64_t)r->file_bytes[f] : 0;
}

/* Files each writer reads, for its throughput line. */
static const import_file TIMETABLE_FILES[] = {
    IMPORT_FILE_AGENCY,   IMPORT_FILE_STOPS,          IMPORT_FILE_ROUTES,
    IMPORT_FILE_TRIPS,    IMPORT_FILE_STOP_TIMES,     IMPORT_FILE_CALENDAR,
    IMPORT_FILE_CALENDAR_DATES, IMPORT_FILE_FREQUENCIES};
static const import_file SCHEDULE_FILES[] = {
    IMPORT_FILE_AGENCY,   IMPORT_FILE_STOPS,     IMPORT_FILE_ROUTES,
    IMPORT_FILE_TRIPS,    IMPORT_FILE_CALENDAR,  IMPORT_FILE_CALENDAR_DATES,
    IMPORT_FILE_FREQUENCIES, IMPORT_FILE_TRANSFERS, IMPORT_FILE_FEED_INFO};
static const import_file SHAPES_FILES[] = {IMPORT_FILE_SHAPES};

static void print_file_lines(FILE *out, const import_result *r, const import_file *files,
                             size_t n)
{
    char rows[32];
    for (size_t i = 0; i < n; i++) {
        if (r->file_bytes[files[i]] < 0)
            continue;
        fprintf(out, "  %-20s %12s rows %9.1f MB\n", import_file_name(files[i]),
                thousands(import_file_rows(r, files[i]), rows, sizeof rows),
                mb(bytes_of(r, files[i])));
    }
}

static uint64_t input_bytes(const import_result *r, const import_file *files, size_t n)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += bytes_of(r, files[i]);
    return total;
}

static void print_rate(FILE *out, uint64_t bytes, double seconds)
{
    if (seconds > 0)
        fprintf(out, "  read %.1f MB at %.0f MB/s\n", mb(bytes), mb(bytes) / seconds);
}

#define COUNT_OF(a) (sizeof(a) / sizeof *(a))

typedef struct cli_ctx {
    bool quiet;
    bool tty;      /* stderr is a terminal: the progress line is redrawn in place */
} cli_ctx;

/* The live line while the timetable reads a file: name, a bar, rows, MB/s.
 * Redrawn in place with \r; the finished state stays on its own line. */
static void on_progress(void *ctx, const char *file, uint64_t done, uint64_t total, uint64_t rows, double seconds,
                        bool finished)
{
    const cli_ctx *c = ctx;
    enum { BAR = 24 };
    char bar[BAR + 1], a[32];
    unsigned filled = total ? (unsigned)(done >= total ? BAR : done * BAR / total) : (finished ? BAR : 0);
    for (unsigned i = 0; i < BAR; i++) bar[i] = i < filled ? '#' : '.';
    bar[BAR] = 0;
    double rate = seconds > 0 ? (double)done / 1e6 / seconds : 0;
    if (!c->tty) {
        /* not a terminal (--progress): one line per file, when it is done */
        if (finished)
            fprintf(stderr, "%-20s %12s rows  %7.1f MB  %6.0f MB/s  %.0f rows/s\n", file, thousands(rows, a, sizeof a),
                    (double)done / 1e6, rate, seconds > 0 ? (double)rows / seconds : 0);
        fflush(stderr);
        return;
    }
    fprintf(stderr, "\r\033[K%-20s [%s] %3u%%  %12s rows  %7.1f MB  %6.0f MB/s%s", file, bar,
            total ? (unsigned)(done >= total ? 100 : done * 100 / total) : 100, thousands(rows, a, sizeof a),
            (double)done / 1e6, rate, finished ? "\n" : "");
    fflush(stderr);
}

/* The per-phase progress lines (stderr, on a terminal, without --quiet).
 * Phases end on three threads (hash, timetable, stores): a line first erases
 * a progress bar that may be half drawn; the bar is redrawn below it. */
static void on_phase(void *ctx, import_phase p, const import_result *r)
{
    const cli_ctx *c = ctx;
    FILE *out = stderr;
    double s = r->phase_seconds[p];
    if (c->tty)
        fputs("\r\033[K", out);
    switch (p) {
    case IMPORT_PHASE_HASH:
        fprintf(out, "feed hashed in %.2f s: version %s%s\n", s, r->version,
                r->previous[0] ? "" : " (no active version yet)");
        break;
    case IMPORT_PHASE_TIMETABLE: {
        const timetable_stats *t = &r->timetable;
        fprintf(out, "timetable.bin    %6.2f s (parse %.2f, build %.2f, write %.2f)  %.1f MB\n",
                s, t->parse_seconds, t->build_seconds, t->write_seconds, mb(t->bytes));
        print_file_lines(out, r, TIMETABLE_FILES, COUNT_OF(TIMETABLE_FILES));
        print_rate(out, input_bytes(r, TIMETABLE_FILES, COUNT_OF(TIMETABLE_FILES)),
                   t->parse_seconds > 0 ? t->parse_seconds : s);
        break;
    }
    case IMPORT_PHASE_SCHEDULE:
        fprintf(out, "schedule.sqlite  %6.2f s  %.1f MB\n", s, mb(r->schedule.bytes));
        print_file_lines(out, r, SCHEDULE_FILES, COUNT_OF(SCHEDULE_FILES));
        print_rate(out, input_bytes(r, SCHEDULE_FILES, COUNT_OF(SCHEDULE_FILES)), s);
        break;
    case IMPORT_PHASE_SHAPES:
        fprintf(out, "shapes.sqlite    %6.2f s  %.1f MB\n", s, mb(r->shapes.bytes));
        print_file_lines(out, r, SHAPES_FILES, COUNT_OF(SHAPES_FILES));
        print_rate(out, input_bytes(r, SHAPES_FILES, COUNT_OF(SHAPES_FILES)), s);
        break;
    case IMPORT_PHASE_LIVE:
        fprintf(out, "live.sqlite      %6.2f s  ready\n", s);
        break;
    case IMPORT_PHASE_VERIFY:
        fprintf(out, "verified         %6.2f s  (fsync, checksum, schedule opens)\n", s);
        break;
    case IMPORT_PHASE_ACTIVATE:
        fprintf(out, "activated        %6.2f s  current -> versions/%s\n", s, r->version);
        break;
    case IMPORT_PHASE_PRUNE:
        fprintf(out, "pruned           %6.2f s  %d old version(s), %d leftover(s)\n", s,
                r->pruned.versions_removed, r->pruned.leftovers_removed);
        break;
    default:
        break;
    }
    fflush(out);
}

static void on_lock_wait(void *ctx, const char *lock_path)
{
    const cli_ctx *c = ctx;
    if (!c->quiet)
        fprintf(stderr, "another import holds %s; waiting for it to finish\n", lock_path);
}

/* ---------------------------------------------------------------- summary */

static void print_problems(FILE *out, const import_result *r)
{
    const diag *d = &r->diag;
    uint64_t total = 0;
    for (int k = 0; k < DIAG_KIND_COUNT; k++)
        total += d->count[k];
    if (total == 0) {
        fputs("problems: none\n", out);
        return;
    }
    char n[32];
    fputs("problems (rows skipped or values ignored):\n", out);
    for (int k = 0; k < DIAG_KIND_COUNT; k++)
        if (d->count[k])
            fprintf(out, "  %-22s %12s\n", diag_kind_name((diag_kind)k),
                    thousands(d->count[k], n, sizeof n));
    if (d->nexamples > 0) {
        fprintf(out, "first %d example(s):\n", d->nexamples);
        for (int i = 0; i < d->nexamples && i < DIAG_EXAMPLES; i++)
            fprintf(out, "  %s\n", d->examples[i]);
    }
}

static void print_summary(FILE *out, const char *feed, const char *data_dir,
                          const import_result *r)
{
    char a[32], b[32], c[32], e[32];
    fprintf(out, "\nimported %s\n", feed);
    fprintf(out, "version %s is active in %s%s%s%s\n", r->version, data_dir,
            r->reused ? " (re-activated an already built version)" : "",
            r->previous[0] ? "; previous: " : "", r->previous[0] ? r->previous : "");

    bool any_rows = r->phase_done[IMPORT_PHASE_TIMETABLE] || r->phase_done[IMPORT_PHASE_SCHEDULE];
    if (any_rows) {
        fprintf(out, "\n%-20s %12s %10s\n", "file", "rows", "MB");
        for (int f = 0; f < IMPORT_FILE_COUNT; f++) {
            if (r->file_bytes[f] < 0)
                continue;
            fprintf(out, "%-20s %12s %10.1f\n", import_file_name((import_file)f),
                    thousands(import_file_rows(r, (import_file)f), a, sizeof a),
                    mb(bytes_of(r, (import_file)f)));
        }
    }

    fprintf(out, "\n%-20s %8s\n", "phase", "seconds");
    for (int p = 0; p < IMPORT_PHASE_COUNT; p++) {
        if (!r->phase_done[p])
            continue;
        fprintf(out, "%-20s %8.2f%s\n", import_phase_name((import_phase)p), r->phase_seconds[p],
                p == IMPORT_PHASE_SHAPES && r->shapes_reused
                    ? "  (shapes.txt unchanged: shapes.sqlite taken from the active version)"
                    : "");
        if (p == IMPORT_PHASE_TIMETABLE) {
            fprintf(out, "%-20s %8.2f\n", "  parse", r->timetable.parse_seconds);
            fprintf(out, "%-20s %8.2f\n", "  build", r->timetable.build_seconds);
            fprintf(out, "%-20s %8.2f\n", "  write", r->timetable.write_seconds);
        }
    }
    fprintf(out, "%-20s %8.2f  (the hash, the timetable and the SQLite stores run concurrently)\n",
            "total wall", r->seconds);

    fprintf(out, "\n%-20s %14s\n", "store", "bytes");
    fprintf(out, "%-20s %14s\n", "timetable.bin", thousands(r->timetable_bytes, a, sizeof a));
    fprintf(out, "%-20s %14s\n", "schedule.sqlite", thousands(r->schedule_bytes, a, sizeof a));
    fprintf(out, "%-20s %14s\n", "shapes.sqlite", thousands(r->shapes_bytes, a, sizeof a));
    fprintf(out, "%-20s %14s\n", "live.sqlite", thousands(r->live_bytes, a, sizeof a));

    if (r->have_counts) {
        const dataset_counts *k = &r->counts;
        char d1[11] = "", d2[11] = "";
        format_date(k->first_date, d1);
        format_date(k->last_date, d2);
        fprintf(out, "\ndataset: %s stops, %s routes, %s trips, %s stop times; service %s .. %s\n",
                thousands(k->stops, a, sizeof a), thousands(k->routes, b, sizeof b),
                thousands(k->trips, c, sizeof c), thousands(k->stop_times, e, sizeof e), d1, d2);
    }
    if (r->pruned.versions_removed || r->pruned.leftovers_removed)
        fprintf(out, "pruned %d old version(s) and %d leftover(s)\n", r->pruned.versions_removed,
                r->pruned.leftovers_removed);
    fputc('\n', out);
    print_problems(out, r);
}

/* The summary as one JSON object. Written with the project's json_writer,
 * not jansson: jansson's json_str/json_null_value would collide at link time
 * with json_writer.h's functions of the same names. */
static void json_summary(json_writer *w, const char *feed, const char *data_dir,
                         const import_result *r, const char *error)
{
    json_object_begin(w);
    if (r->version[0])
        json_kv_string(w, "version", r->version);
    else
        json_kv_null(w, "version");
    if (r->previous[0])
        json_kv_string(w, "previous", r->previous);
    else
        json_kv_null(w, "previous");
    json_kv_string(w, "feed", feed);
    json_kv_string(w, "data_dir", data_dir);
    json_kv_bool(w, "activated", r->activated);
    json_kv_bool(w, "refused", r->refused);
    json_kv_bool(w, "noop", r->noop);
    json_kv_bool(w, "reused", r->reused);
    json_key(w, "stores_reused");
    json_array_begin(w);
    if (r->shapes_reused)
        json_str(w, "shapes.sqlite");
    json_array_end(w);
    json_kv_double(w, "seconds", r->seconds, 4);
    if (error)
        json_kv_string(w, "error", error);

    json_key(w, "phases");
    json_object_begin(w);
    for (int p = 0; p < IMPORT_PHASE_COUNT; p++) {
        if (!r->phase_done[p])
            continue;
        json_kv_double(w, import_phase_name((import_phase)p), r->phase_seconds[p], 4);
        if (p == IMPORT_PHASE_TIMETABLE) {
            json_kv_double(w, "timetable_parse", r->timetable.parse_seconds, 4);
            json_kv_double(w, "timetable_build", r->timetable.build_seconds, 4);
            json_kv_double(w, "timetable_write", r->timetable.write_seconds, 4);
        }
    }
    json_object_end(w);

    bool any_rows = r->phase_done[IMPORT_PHASE_TIMETABLE] || r->phase_done[IMPORT_PHASE_SCHEDULE];
    json_key(w, "files");
    json_object_begin(w);
    for (int f = 0; f < IMPORT_FILE_COUNT; f++)
        if (any_rows && r->file_bytes[f] >= 0)
            json_kv_int(w, import_file_name((import_file)f),
                        (int64_t)import_file_rows(r, (import_file)f));
    json_object_end(w);
    json_key(w, "file_bytes");
    json_object_begin(w);
    for (int f = 0; f < IMPORT_FILE_COUNT; f++)
        if (r->file_bytes[f] >= 0)
            json_kv_int(w, import_file_name((import_file)f), r->file_bytes[f]);
    json_object_end(w);

    json_key(w, "stores");
    json_object_begin(w);
    json_kv_int(w, "timetable.bin", (int64_t)r->timetable_bytes);
    json_kv_int(w, "schedule.sqlite", (int64_t)r->schedule_bytes);
    json_kv_int(w, "shapes.sqlite", (int64_t)r->shapes_bytes);
    json_kv_int(w, "live.sqlite", (int64_t)r->live_bytes);
    json_object_end(w);

    json_key(w, "counts");
    json_object_begin(w);
    if (r->have_counts) {
        const dataset_counts *k = &r->counts;
        char d1[11], d2[11];
        format_date(k->first_date, d1);
        format_date(k->last_date, d2);
        json_kv_int(w, "stops", k->stops);
        json_kv_int(w, "routes", k->routes);
        json_kv_int(w, "trips", k->trips);
        json_kv_int(w, "stop_times", (int64_t)k->stop_times);
        json_kv_int(w, "agencies", k->agencies);
        json_kv_int(w, "services", k->services);
        json_kv_string(w, "first_date", d1);
        json_kv_string(w, "last_date", d2);
    }
    json_object_end(w);

    json_key(w, "problems");
    json_object_begin(w);
    for (int k = 0; k < DIAG_KIND_COUNT; k++)
        if (r->diag.count[k])
            json_kv_int(w, diag_kind_name((diag_kind)k), (int64_t)r->diag.count[k]);
    json_object_end(w);
    json_key(w, "examples");
    json_array_begin(w);
    for (int i = 0; i < r->diag.nexamples && i < DIAG_EXAMPLES; i++)
        json_str(w, r->diag.examples[i]);
    json_array_end(w);

    json_key(w, "pruned");
    json_object_begin(w);
    json_kv_int(w, "versions", r->pruned.versions_removed);
    json_kv_int(w, "leftovers", r->pruned.leftovers_removed);
    json_object_end(w);
    json_object_end(w);
}

static void print_json(const char *feed, const char *data_dir, const import_result *r,
                       const char *error)
{
    json_writer w;
    json_init(&w);
    json_summary(&w, feed, data_dir, r, error);
    if (!w.oom && w.buf) {
        fwrite(w.buf, 1, w.len, stdout);
        fputc('\n', stdout);
    } else {
        fputs("transitd import: out of memory writing the JSON summary\n", stderr);
    }
    json_free(&w);
    fflush(stdout);
}

/* ---------------------------------------------------------------- main */

/* What import_run gave (rc, err), told on stdout or stderr; the exit status. */
static int report_result(const char *feed, const char *data_dir, const import_result *r, int rc,
                         const char *err, bool json, bool quiet)
{
    if (rc != 0 && r->refused) {
        fprintf(stderr, "transitd import: refused: %s\n", err);
        if (json)
            print_json(feed, data_dir, r, err);
        else if (!quiet && diag_total(&r->diag) > 0)
            print_problems(stderr, r);
        return CLI_REFUSED;
    }
    if (rc != 0) {
        fprintf(stderr, "transitd import: error: %s\n", err[0] ? err : "import failed");
        if (!r->activated)
            fprintf(stderr, "transitd import: nothing was activated%s%s%s\n",
                    r->previous[0] ? "; version " : "", r->previous,
                    r->previous[0] ? " is still the active one" : "");
        if (json)
            print_json(feed, data_dir, r, err[0] ? err : "import failed");
        else if (!quiet && diag_total(&r->diag) > 0)
            print_problems(stderr, r);
        return CLI_RUNTIME_ERROR;
    }
    if (json)
        print_json(feed, data_dir, r, NULL);
    else if (r->noop) {
        if (!quiet)
            printf("feed already imported as version %s; nothing to do\n", r->version);
    } else if (!quiet)
        print_summary(stdout, feed, data_dir, r);
    if (json && r->noop && !quiet)
        fprintf(stderr, "feed already imported as version %s; nothing to do\n", r->version);
    return CLI_OK;
}

int cli_import_main(int argc, char **argv)
{
    enum { OPT_DATA = CLI_OPT_LONG_ONLY, OPT_JSON, OPT_FORCE, OPT_MAX_DROP, OPT_MAX_SHRINK, OPT_FEED_ID,
           OPT_MEMORY_BUDGET, OPT_PROGRESS };
    static const struct option longopts[] = {
        {"data", required_argument, NULL, OPT_DATA},
        {"json", no_argument, NULL, OPT_JSON},
        {"quiet", no_argument, NULL, 'q'},
        {"force", no_argument, NULL, OPT_FORCE},
        {"max-drop", required_argument, NULL, OPT_MAX_DROP},
        {"max-shrink", required_argument, NULL, OPT_MAX_SHRINK},
        {"feed-id", required_argument, NULL, OPT_FEED_ID},
        {"memory-budget", required_argument, NULL, OPT_MEMORY_BUDGET},
        {"progress", no_argument, NULL, OPT_PROGRESS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *feed = NULL, *data_dir = NULL;
    feed_merge_input feeds[FEED_MERGE_MAX_FEEDS];
    int nfeeds = 0;
    bool json = false, quiet = false, force = false;
    bool max_drop_set = false, max_shrink_set = false;
    double max_drop = 0, max_shrink = 0;
    uint64_t memory_budget = 0;
    bool progress_asked = false;
    cli_opts opts;
    cli_opts_begin(&opts, argc, argv, "hq", longopts);
    for (int c; (c = cli_opts_next(&opts)) != -1;) {
        switch (c) {
        case 'h':
            print_usage(stdout);
            return CLI_OK;
        case OPT_JSON:
            json = true;
            break;
        case 'q':
            quiet = true;
            break;
        case OPT_FORCE:
            force = true;
            break;
        case OPT_DATA:
            if (!opts.arg)
                return usage_error("--data needs a directory%s", "");
            data_dir = opts.arg;
            break;
        case OPT_MAX_DROP:
            if (parse_pct(opts.arg, &max_drop) != 0)
                return usage_error("%s needs a percentage from 0 to 100", opts.typed);
            max_drop_set = true;
            break;
        case OPT_MAX_SHRINK:
            if (parse_pct(opts.arg, &max_shrink) != 0)
                return usage_error("%s needs a percentage from 0 to 100", opts.typed);
            max_shrink_set = true;
            break;
        case OPT_MEMORY_BUDGET:
            if (byte_size_parse(opts.arg, &memory_budget) != 0)
                return usage_error("%s needs a size such as 1.5G, 800M or 1048576 (bytes)", opts.typed);
            break;
        case OPT_PROGRESS:
            progress_asked = true;
            break;
        case OPT_FEED_ID:
            if (!opts.arg || nfeeds == 0)
                return usage_error("%s NAME names the FEED before it", opts.typed);
            if (feeds[nfeeds - 1].name)
                return usage_error("a second --feed-id for %s", feeds[nfeeds - 1].path);
            feeds[nfeeds - 1].name = opts.arg;
            break;
        case CLI_OPT_ARG:
            if (nfeeds == FEED_MERGE_MAX_FEEDS)
                return usage_error("at most 64 FEEDs (got another: %s)", opts.arg);
            feeds[nfeeds++] = (feed_merge_input){.path = opts.arg, .name = NULL};
            feed = feeds[0].path;
            break;
        default:
            return usage_error("unknown option %s", opts.typed);
        }
    }
    if (!feed)
        return usage_error("missing FEED (a .zip or a directory of GTFS .txt files)%s", "");
    if (!data_dir)
        data_dir = cli_default_data_dir();
    if (data_dir[0] == '\0')
        return usage_error("--data must not be empty%s", "");
    if (nfeeds == 1 && feeds[0].name)
        return usage_error("--feed-id names a feed of a merge; one FEED is imported as it is%s", "");

    /* several feeds: merged into one directory, imported as one feed */
    char merged_dir[4096] = "", label[1024] = "", err[1024] = "", merged_sha[65] = "";
    feed_merge *merge = NULL;
    if (nfeeds > 1) {
        char shas[FEED_MERGE_MAX_FEEDS][65], active[DATADIR_VERSION_LEN + 1];
        bool same = cli_merge_is_active(feeds, nfeeds, shas, data_dir, active, err, sizeof err);
        if (err[0]) {
            fprintf(stderr, "transitd import: error: %s\ntransitd import: nothing was activated\n", err);
            return CLI_RUNTIME_ERROR;
        }
        if (same && !force) {   /* the same feeds, by name and SHA-256, in the same order */
            import_result r;
            import_result_init(&r);
            snprintf(r.version, sizeof r.version, "%s", active);
            r.noop = r.activated = true;
            for (int i = 0; i < nfeeds; i++)
                snprintf(label + strlen(label), sizeof label - strlen(label), "%s%s", i ? " + " : "",
                         feeds[i].path);
            int status = report_result(label, data_dir, &r, 0, "", json, quiet);
            import_result_destroy(&r);
            return status;
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (!(merge = cli_merge_feeds(feeds, nfeeds, data_dir, !force, merged_dir, sizeof merged_dir, err,
                                      sizeof err))) {
            fprintf(stderr, "transitd import: error: %s\ntransitd import: nothing was activated\n", err);
            return CLI_RUNTIME_ERROR;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        cli_merge_label(merge, label, sizeof label);
        if (!quiet && !json) {
            cli_merge_print(stderr, merge);
            fprintf(stderr, "merged %d feeds in %.2f s\n", nfeeds,
                    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
        }
        feed = merged_dir;
        feed_merge_sha256(merge, merged_sha);
    }

    /* progress goes to stderr, so it does not disturb --json on stdout */
    bool tty = isatty(STDERR_FILENO);
    bool progress = progress_asked || (!quiet && tty);
    cli_ctx ctx = {.quiet = quiet, .tty = tty};
    import_options o = {
        .feed_path = feed,
        .data_dir = data_dir,
        .sha256 = merge ? merged_sha : NULL,
        .force = force,
        .max_drop_set = max_drop_set,
        .max_drop_pct = max_drop,
        .max_shrink_set = max_shrink_set,
        .max_shrink_pct = max_shrink,
        .wait_for_lock = true,
        .memory_budget = memory_budget,
        .on_phase = progress ? on_phase : NULL,
        .on_progress = progress ? on_progress : NULL,
        .on_lock_wait = on_lock_wait,
        .ctx = &ctx,
    };
    import_result r;
    import_result_init(&r);
    int rc = import_run(&o, &r, err, sizeof err);
    if (merge) {
        cli_merge_explain(merge, &r, err, sizeof err);
        cli_merge_finish(data_dir, merged_dir, r.activated);
        feed_merge_free(merge);
        feed = label;
    } else if (rc == 0 && r.activated) {
        cli_merge_cache_drop(data_dir);   /* one feed is active now: the cache is of no version */
    }

    int status = report_result(feed, data_dir, &r, rc, err, json, quiet);
    import_result_destroy(&r);
    return status;
}
