/* cli_options.c — the one place the subcommands meet getopt_long.
 *
 * Why it exists: getopt keeps its state in globals that must be reset before
 * a subcommand reads its own argv (glibc: optind = 0; BSD and macOS:
 * optind = 1 and optreset = 1), its messages are not the project's, and it
 * accepts abbreviated long options the subcommands never did. cli.h's
 * cli_opts hides all three. getopt_long runs in its "return in order" mode
 * (optstring starting with '-'): positional arguments come back as they are
 * met, so `import FEED --data DIR` works without permuting argv (and with
 * POSIXLY_CORRECT set), and the first mistake on the line is the one
 * reported, as it was when each subcommand walked argv itself.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "transit/cli.h"

#if defined(__APPLE__) || defined(__FreeBSD__)
extern int optreset;   /* BSD getopt: declared by <unistd.h> only in some modes */
#endif

void cli_opts_begin(cli_opts *o, int argc, char **argv, const char *shortopts,
                    const struct option *longopts)
{
    memset(o, 0, sizeof *o);
    o->argc = argc;
    o->argv = argv;
    o->longopts = longopts;
    /* '-': non-options are returned in order as 1; ':': a missing value is
     * told apart from an unknown option */
    snprintf(o->optstring, sizeof o->optstring, "-:%s", shortopts);
    opterr = 0;
#if defined(__APPLE__) || defined(__FreeBSD__)
    optind = 1;
    optreset = 1;
#else
    optind = 0;   /* glibc: a full re-initialisation, argv[0] skipped */
#endif
}

/* The long option named exactly by "--NAME" or "--NAME=VALUE", or NULL. */
static const struct option *long_option(const struct option *longopts, const char *token)
{
    const char *name = token + 2;
    size_t len = strcspn(name, "=");
    for (const struct option *p = longopts; p->name; p++)
        if (strlen(p->name) == len && strncmp(p->name, name, len) == 0)
            return p;
    return NULL;
}

/* What getopt_long's answer c means, for the option at argv[at]. */
static int classify(cli_opts *o, int c, int at)
{
    const char *token = o->argv[at];
    bool failed = c == '?' || c == ':';
    if (strncmp(token, "--", 2) != 0) {   /* a short option, maybe one of a group (-qh) */
        o->short_typed[0] = '-';
        o->short_typed[1] = (char)(failed ? optopt : c);
        o->short_typed[2] = '\0';
        o->typed = o->short_typed;
        if (c == '?')
            return CLI_OPT_UNKNOWN;
        o->name = o->short_typed;
        o->arg = optarg;
        return c == ':' ? optopt : c;   /* ':': its value is missing, o->arg is NULL */
    }
    o->typed = token;
    const struct option *lo = long_option(o->longopts, token);
    if (!lo)
        return CLI_OPT_UNKNOWN;   /* unknown, ambiguous, or an abbreviation */
    bool has_value = strchr(token, '=') != NULL;
    if (!failed && c == lo->val)
        o->arg = optarg;
    else if (failed && lo->has_arg == required_argument && !has_value)
        o->arg = NULL;            /* the last word, its value missing */
    else
        return CLI_OPT_UNKNOWN;   /* a value given to a flag: --json=1 */
    snprintf(o->name_buf, sizeof o->name_buf, "--%s", lo->name);
    o->name = o->name_buf;
    return lo->val;
}

int cli_opts_next(cli_opts *o)
{
    o->arg = NULL;
    o->typed = NULL;
    o->name = NULL;
    if (!o->options_done) {
        /* the element getopt_long reads next: in order, nothing is skipped
         * (optind 0 means glibc has yet to start, at argv[1]) */
        int at = optind > 0 ? optind : 1;
        optarg = NULL;
        int c = getopt_long(o->argc, o->argv, o->optstring, o->longopts, NULL);
        if (c == 1) {
            o->arg = optarg;
            return CLI_OPT_ARG;
        }
        if (c != -1)
            return classify(o, c, at);
        o->options_done = true;
        o->rest = optind;   /* after "--", else argc */
    }
    if (o->rest < o->argc) {
        o->arg = o->argv[o->rest++];
        return CLI_OPT_ARG;
    }
    return -1;
}
