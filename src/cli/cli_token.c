/* cli_token.c — `transitd token`: makes the bearer tokens that authorise
 * writes.
 *
 * Why it exists: the tokens file holds only hashes (auth.h), so the one
 * moment a token exists in the clear is when it is made: `token new` prints it
 * once on stdout and appends its hash line to the file (created with mode
 * 0600). `token hash` turns a token read from stdin into the line to store,
 * for tokens made elsewhere. A running server reads the file again on SIGHUP.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "transit/auth.h"
#include "transit/cli.h"
#include "transit/sha256.h"

static void print_usage(FILE *out)
{
    fputs("usage: transitd token new --tokens FILE [--name NAME]\n"
          "       transitd token hash [--name NAME] < TOKEN\n"
          "\n"
          "new   makes a random 256-bit bearer token, prints it (the only time it is\n"
          "      shown) and appends 'sha256:<hash> NAME' to FILE, created with mode 0600.\n"
          "      Give FILE to `transitd serve --tokens FILE` (SIGHUP re-reads it).\n"
          "hash  prints the line to store for a token read from stdin.\n"
          "\n"
          "Clients send the token as `Authorization: Bearer <token>` on POST, PUT, PATCH\n"
          "and DELETE.\n",
          out);
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "transitd token: %s%s\n", msg, arg ? arg : "");
    print_usage(stderr);
    return CLI_USAGE_ERROR;
}

static bool name_ok(const char *name)
{
    if (strlen(name) > AUTH_NAME_MAX)
        return false;
    for (const char *c = name; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f)
            return false;
    return true;
}

static int append_line(const char *path, const char *line)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "transitd token: %s: %s\n", path, strerror(errno));
        return CLI_RUNTIME_ERROR;
    }
    size_t n = strlen(line);
    bool ok = write(fd, line, n) == (ssize_t)n && fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0)
        ok = false;
    if (!ok) {
        fprintf(stderr, "transitd token: %s: %s\n", path, strerror(saved));
        return CLI_RUNTIME_ERROR;
    }
    return CLI_OK;
}

int cli_token_main(int argc, char **argv)
{
    enum { OPT_TOKENS = CLI_OPT_LONG_ONLY, OPT_NAME };
    static const struct option longopts[] = {
        {"tokens", required_argument, NULL, OPT_TOKENS},
        {"name", required_argument, NULL, OPT_NAME},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = NULL, *tokens = NULL, *name = "";
    cli_opts opts;
    cli_opts_begin(&opts, argc, argv, "h", longopts);
    for (int c; (c = cli_opts_next(&opts)) != -1;) {
        if (c == 'h') {
            print_usage(stdout);
            return CLI_OK;
        } else if (c == CLI_OPT_ARG && !cmd) {
            cmd = opts.arg;   /* new or hash, checked once the options are read */
        } else if (c == OPT_TOKENS && opts.arg && *opts.arg) {
            tokens = opts.arg;
        } else if (c == OPT_NAME && opts.arg) {
            if (!name_ok(opts.arg))
                return usage_error("--name must be at most 64 bytes without spaces: ", opts.arg);
            name = opts.arg;
        } else {
            return usage_error("unknown option or missing value: ",
                               c == CLI_OPT_ARG ? opts.arg : opts.typed);
        }
    }
    if (!cmd)
        return usage_error("which command? new or hash", NULL);
    if (strcmp(cmd, "new") == 0) {
        if (!tokens)
            return usage_error("new needs --tokens FILE", NULL);
        char token[AUTH_TOKEN_LEN + 1], line[256];
        if (auth_token_new(name, token, line, sizeof line) != 0) {
            fprintf(stderr, "transitd token: the system gave no random bytes\n");
            return CLI_RUNTIME_ERROR;
        }
        int rc = append_line(tokens, line);
        if (rc == CLI_OK)
            printf("%s\n", token);
        return rc;
    }
    if (strcmp(cmd, "hash") == 0) {
        char buf[1024];
        size_t n = fread(buf, 1, sizeof buf - 1, stdin);
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
            n--;
        if (n == 0 || n == sizeof buf - 1)
            return usage_error("hash reads one token (1 to 1022 bytes) from stdin", NULL);
        uint8_t digest[32];
        char hex[65];
        sha256(buf, n, digest);
        sha256_hex(digest, hex);
        printf("sha256:%s%s%s\n", hex, *name ? " " : "", name);
        return CLI_OK;
    }
    return usage_error("unknown command: ", cmd);
}
