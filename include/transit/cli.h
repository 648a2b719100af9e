/* cli.h — the subcommands of the one binary, build/transitd.
 *
 * Why it exists: src/cli/main.c dispatches `transitd <subcommand>`; each
 * subcommand lives with its own concern (import in C, serve in the
 * Objective-C layer, query in C). Conventions for all of them: `--help`
 * prints usage to stdout and exits 0; a usage error prints a message and the
 * usage to stderr and exits 2; a runtime error prints a message to stderr and
 * exits 1. Options also come from the environment where documented
 * (TRANSITD_DATA, TRANSITD_PORT, TRANSITD_BIND).
 */
#ifndef TRANSIT_CLI_H
#define TRANSIT_CLI_H

#include <stdio.h>

#define CLI_OK 0
#define CLI_RUNTIME_ERROR 1
#define CLI_USAGE_ERROR 2
#define CLI_REFUSED 3   /* import: the new version was built but not activated */

int cli_import_main(int argc, char **argv);   /* src/cli/cli_import.c */
int cli_query_main(int argc, char **argv);    /* src/cli/cli_query.c */
int serve_main(int argc, char **argv);        /* objc/serve_main.m */
int cli_token_main(int argc, char **argv);    /* src/cli/cli_token.c */
int cli_health_main(int argc, char **argv);   /* src/cli/cli_health.c */

/* The data directory: --data, else $TRANSITD_DATA, else "./data". */
const char *cli_default_data_dir(void);

/* A usage error: "transitd COMMAND: " and the message (fmt with one %s), a
 * blank line, then the command's usage, on stderr. Returns CLI_USAGE_ERROR. */
int cli_usage_error(const char *command, void (*print_usage)(FILE *out), const char *fmt,
                    const char *arg);

#endif
