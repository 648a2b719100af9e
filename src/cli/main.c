/* main.c — the one binary: `transitd <subcommand> [options]`.
 *
 * Why it exists: import, serve and query ship as one executable so they can
 * never disagree about formats or versions. This file only dispatches; each
 * subcommand parses its own options (cli.h gives the conventions: --help
 * exits 0, usage errors exit 2, runtime errors exit 1). A subcommand gets
 * argv shifted by one, so its argv[0] is its own name.
 */
#include <jansson.h>
#include <microhttpd.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <zip.h>
#include <zlib.h>

#include "transit/cli.h"
#include "transit/version.h"

static void print_usage(FILE *out)
{
    fputs("usage: transitd <command> [options]\n"
          "\n"
          "commands:\n"
          "  import FEED   import a GTFS feed (.zip or directory) into the data directory\n"
          "                and make it the active version\n"
          "  serve         serve the active version over HTTP (the v1 JSON API)\n"
          "  query WHAT    answer a question from the active version on the command line\n"
          "  token new     make a bearer token for the write verbs (alerts)\n"
          "  health        ask a running server whether it is ready (exit 0 or 1)\n"
          "  cert new      make a self-signed certificate and key for HTTPS on a LAN\n"
          "  export        write the active version as static files for replicas\n"
          "  fetch URL     bring a snapshot directory to a server's version, as a phone does\n"
          "  version       print the version of transitd and of its libraries\n"
          "  help [CMD]    show this help, or a command's help\n"
          "\n"
          "Run `transitd <command> --help` for a command's options; an option's value\n"
          "follows it (--data DIR) or is joined with = (--data=DIR).\n"
          "The data directory is --data DIR, else $TRANSITD_DATA, else ./data.\n",
          out);
}

static int print_version(void)
{
    printf("transitd %s\n", TRANSITD_VERSION);
    printf("libmicrohttpd %s\n", MHD_get_version());
    printf("sqlite %s\n", sqlite3_libversion());
    printf("zlib %s\n", zlibVersion());
    printf("libzip %s\n", zip_libzip_version());
    printf("jansson %s\n", jansson_version_str());
    return CLI_OK;
}

typedef int (*command_fn)(int argc, char **argv);

static command_fn find_command(const char *name)
{
    if (strcmp(name, "import") == 0)
        return cli_import_main;
    if (strcmp(name, "serve") == 0)
        return serve_main;
    if (strcmp(name, "query") == 0)
        return cli_query_main;
    if (strcmp(name, "token") == 0)
        return cli_token_main;
    if (strcmp(name, "health") == 0)
        return cli_health_main;
    if (strcmp(name, "cert") == 0)
        return cli_cert_main;
    if (strcmp(name, "export") == 0)
        return cli_export_main;
    if (strcmp(name, "fetch") == 0)
        return cli_fetch_main;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return CLI_USAGE_ERROR;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc >= 3 && strcmp(cmd, "help") == 0) {
            command_fn fn = find_command(argv[2]);
            if (fn) {
                char *sub[] = {argv[2], "--help", NULL};
                return fn(2, sub);
            }
            if (strcmp(argv[2], "version") != 0 && strcmp(argv[2], "help") != 0) {
                fprintf(stderr, "transitd: unknown command '%s'\n\n", argv[2]);
                print_usage(stderr);
                return CLI_USAGE_ERROR;
            }
        }
        print_usage(stdout);
        return CLI_OK;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        if (argc > 2 && strcmp(argv[2], "--help") != 0 && strcmp(argv[2], "-h") != 0) {
            fprintf(stderr, "transitd version: unexpected argument '%s'\n\n", argv[2]);
            print_usage(stderr);
            return CLI_USAGE_ERROR;
        }
        if (argc > 2) {
            puts("usage: transitd version\n\nPrints the version of transitd and of its "
                 "libraries.");
            return CLI_OK;
        }
        return print_version();
    }
    command_fn fn = find_command(cmd);
    if (!fn) {
        fprintf(stderr, "transitd: unknown command '%s'\n\n", cmd);
        print_usage(stderr);
        return CLI_USAGE_ERROR;
    }
    return fn(argc - 1, argv + 1);
}
