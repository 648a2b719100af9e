/* hello_mhd.c — the baseline the HTTP benchmarks divide by.
 *
 * Why it exists: a transitd req/s figure only means something next to what
 * libmicrohttpd itself can do on the same machine with the same wrk settings.
 * This is the smallest honest libmicrohttpd server: the same daemon flags as
 * transitd (epoll internal thread + turbo on Linux, a thread pool of one
 * thread per core), one small JSON body for every path, keep-alive intact.
 *
 * The response is queued on the handler's SECOND call for a request. MHD
 * 0.9.75 answers `Connection: close` when a response is queued on the first
 * call (it has not yet seen whether a body follows), which would make every
 * request pay a new TCP connection and measure connect(), not HTTP.
 *
 * Usage: hello_mhd --port P [--bind ADDR] [--threads N]
 * Runs until SIGINT or SIGTERM; prints one line "listening on ADDR:P" once
 * the socket is bound.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char HELLO_BODY[] = "{\"hello\":\"world\"}\n";

/* The marker stored in *con_cls after the first call for a request. */
static int first_call_seen;

static enum MHD_Result answer_hello(void *shared_response, struct MHD_Connection *connection,
                                    const char *url, const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **con_cls)
{
    (void)url;
    (void)method;
    (void)version;
    (void)upload_data;
    if (*con_cls == NULL) {
        *con_cls = &first_call_seen;
        return MHD_YES;
    }
    *upload_data_size = 0;   /* ignore any request body */
    return MHD_queue_response(connection, MHD_HTTP_OK, (struct MHD_Response *)shared_response);
}

static void print_usage(FILE *to)
{
    fprintf(to, "usage: hello_mhd --port P [--bind ADDR] [--threads N]\n"
                "  a minimal libmicrohttpd server answering every GET with a small JSON body;\n"
                "  the baseline for bench/run_bench.py\n");
}

static long number_option(const char *name, const char *value, long min, long max)
{
    char *end = NULL;
    errno = 0;
    long v = value ? strtol(value, &end, 10) : 0;
    if (!value || errno || end == value || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "hello_mhd: %s must be an integer in [%ld, %ld], got '%s'\n", name, min,
                max, value ? value : "");
        print_usage(stderr);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    long port = -1;
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    const char *bind_addr = "127.0.0.1";
    if (threads < 1)
        threads = 1;
    for (int i = 1; i < argc; i++) {
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--help") == 0) {
            print_usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--port") == 0) {
            port = number_option("--port", next, 1, 65535);
            i++;
        } else if (strcmp(argv[i], "--threads") == 0) {
            threads = number_option("--threads", next, 1, 1024);
            i++;
        } else if (strcmp(argv[i], "--bind") == 0 && next) {
            bind_addr = next;
            i++;
        } else {
            fprintf(stderr, "hello_mhd: unknown or incomplete option '%s'\n", argv[i]);
            print_usage(stderr);
            return 2;
        }
    }
    if (port < 0) {
        fprintf(stderr, "hello_mhd: --port is required\n");
        print_usage(stderr);
        return 2;
    }

    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, bind_addr, &addr.sin_addr) != 1) {
        fprintf(stderr, "hello_mhd: --bind must be an IPv4 address, got '%s'\n", bind_addr);
        return 2;
    }

    /* Block the stop signals before MHD starts its threads, so they inherit
     * the mask and only sigwait() below receives them. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

    struct MHD_Response *response = MHD_create_response_from_buffer(
        sizeof HELLO_BODY - 1, (void *)HELLO_BODY, MHD_RESPMEM_PERSISTENT);
    if (!response || MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                                             "application/json") != MHD_YES) {
        fprintf(stderr, "hello_mhd: cannot create the response\n");
        return 1;
    }

#ifdef __linux__
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO;
#else
    unsigned int flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_TURBO;
#endif
    struct MHD_Daemon *daemon = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, answer_hello, response,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)4096,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
        MHD_OPTION_END);
    if (!daemon) {
        fprintf(stderr, "hello_mhd: cannot listen on %s:%ld (in use, or no permission)\n",
                bind_addr, port);
        MHD_destroy_response(response);
        return 1;
    }
    printf("listening on %s:%ld\n", bind_addr, port);
    fflush(stdout);

    int received = 0;
    sigwait(&stop_signals, &received);
    MHD_stop_daemon(daemon);
    MHD_destroy_response(response);
    return 0;
}
