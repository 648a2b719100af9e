/* cli.h — the subcommands of the one binary, build/transitd.
 *
 * Why it exists: src/cli/main.c dispatches `transitd <subcommand>`; each
 * subcommand lives with its own concern (import in C, serve in the
 * Objective-C layer, query in C). Conventions for all of them: `--help`
 * prints usage to stdout and exits 0; a usage error prints a message and the
 * usage to stderr and exits 2; a runtime error prints a message to stderr and
 * exits 1. Options also come from the environment where documented
 * (TRANSITD_DATA, TRANSITD_PORT, TRANSITD_BIND). An option's value follows
 * it as the next word or after '=' (--data DIR, --data=DIR); cli_opts below
 * reads them.
 */
#ifndef TRANSIT_CLI_H
#define TRANSIT_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#define CLI_OK 0
#define CLI_RUNTIME_ERROR 1
#define CLI_USAGE_ERROR 2
#define CLI_REFUSED 3   /* import: the new version was built but not activated */

int cli_import_main(int argc, char **argv);   /* src/cli/cli_import.c */
int cli_query_main(int argc, char **argv);    /* src/cli/cli_query.c */
int serve_main(int argc, char **argv);        /* objc/serve_main.m */
int cli_token_main(int argc, char **argv);    /* src/cli/cli_token.c */
int cli_health_main(int argc, char **argv);   /* src/cli/cli_health.c */
int cli_cert_main(int argc, char **argv);     /* src/cli/cli_cert.c */
int cli_export_main(int argc, char **argv);   /* src/cli/cli_export.c */
int cli_fetch_main(int argc, char **argv);    /* src/cli/cli_fetch.c */

/* The data directory: --data, else $TRANSITD_DATA, else "./data". */
const char *cli_default_data_dir(void);

/* A usage error: "transitd COMMAND: " and the message (fmt with one %s), a
 * blank line, then the command's usage, on stderr. Returns CLI_USAGE_ERROR. */
int cli_usage_error(const char *command, void (*print_usage)(FILE *out), const char *fmt,
                    const char *arg);

/* Reading a subcommand's options (src/cli/cli_options.c), with getopt_long
 * underneath: --opt VALUE and --opt=VALUE, the short options given, and the
 * items seen in the order typed, so a positional argument may come before,
 * between or after the options and the first mistake is the one reported.
 * A long option must be spelled in full: getopt_long's abbreviations
 * (--dat for --data) are unknown options here. Usage:
 *
 *     enum { OPT_DATA = CLI_OPT_LONG_ONLY, OPT_JSON };
 *     static const struct option longopts[] = {
 *         {"data", required_argument, NULL, OPT_DATA}, {"help", no_argument, NULL, 'h'},
 *         {NULL, 0, NULL, 0}};
 *     cli_opts opts;
 *     cli_opts_begin(&opts, argc, argv, "h", longopts);
 *     for (int c; (c = cli_opts_next(&opts)) != -1;)
 *         switch (c) { case OPT_DATA: ... opts.arg ...; case CLI_OPT_ARG: ... opts.arg ...;
 *                      case CLI_OPT_UNKNOWN: ... opts.typed ... }
 *
 * An option with a short form has that letter as its val (and in the short
 * options); a long-only one has a val from CLI_OPT_LONG_ONLY up; flag is
 * always NULL. argv[0] is the subcommand's own name. */
#define CLI_OPT_ARG 1             /* a positional argument, in opts.arg */
#define CLI_OPT_UNKNOWN '?'       /* an unknown option, or a value given to a flag: opts.typed */
#define CLI_OPT_LONG_ONLY 256     /* the first val of the long-only options */

typedef struct cli_opts {
    int argc;
    char **argv;
    const struct option *longopts;
    char optstring[32];   /* "-:" and the short options, for getopt_long */
    int rest;             /* after "--": the next argument, all positional */
    bool options_done;
    char short_typed[3];  /* "-x" */
    char name_buf[48];
    /* Set by each cli_opts_next: */
    const char *arg;      /* the option's value, NULL when it was missing (the
                             command line ended), or the positional argument */
    const char *typed;    /* the option as typed ("--data", "--data=x", "-q"),
                             for messages */
    const char *name;     /* a known option's name without a value ("--data",
                             "-q"); NULL for the others */
} cli_opts;

/* Starts reading argv[1..argc-1]: resets getopt (glibc and BSD/macOS have
 * different ways) and silences its messages (opterr = 0), so the
 * subcommand prints its own. shortopts: the letters of the short options,
 * none of which takes a value. */
void cli_opts_begin(cli_opts *o, int argc, char **argv, const char *shortopts,
                    const struct option *longopts);

/* The next item: an option's val (a value in o->arg; for an option that
 * needs one, NULL when the command line ended before it), CLI_OPT_ARG,
 * CLI_OPT_UNKNOWN, or -1 at the end. Everything after "--" is positional. */
int cli_opts_next(cli_opts *o);

/* src/cli/cli_files.c: mkdir -p (errno set on failure); and a file replaced
 * whole (temporary name, fsync, rename) or left as it was, with err. */
bool cli_make_directories(const char *path);
bool cli_write_file_atomically(const char *path, const void *data, size_t len, mode_t mode, char *err,
                               size_t cap);

#endif
