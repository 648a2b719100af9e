/* http_daemon.m — libmicrohttpd glue: the listening socket, the daemon and
 * its callbacks, per-connection state and the per-thread TDRequest.
 *
 * Why it exists: see http_daemon.h. Counters shared between threads use the
 * __atomic builtins (clang and gcc alike): on GNUstep the Objective-C compile
 * sees gcc's <stdatomic.h>, whose macros clang rejects on _Atomic objects.
 *
 * Request flow through MHD 0.9.75:
 *  - the URI-log callback sees the raw request-target first (before MHD
 *    percent-decodes it in place) and copies it into the connection state,
 *    which becomes the request's *con_cls;
 *  - the access handler's first call only looks at the headers once:
 *    Content-Length (a body over --max-body is refused at once with 413)
 *    and Host (an HTTP/1.1 request needs exactly one: 400 on the final
 *    call); it returns without a response, because a response queued on the
 *    first call makes MHD 0.9.75 close the connection (no keep-alive);
 *  - body chunks are kept up to the cap; the final call (no more upload
 *    data) hands the request to the TDServer through a cached IMP;
 *  - every connection is in the request_deadline.h registry from its start
 *    to its close: a request must arrive whole in time however slowly its
 *    bytes trickle.
 */
#import "http_daemon.h"
#import "request_deadline.h"
#import "write_queue.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef int (*answer_fn)(id, SEL, TDRequest *, td_conn *);

/* Each connection's memory pool, which holds the request as it is read
 * (request line and headers) and the response header. libmicrohttpd
 * zeroes the whole pool after every request on a kept-alive connection, so
 * its size is paid per request: the default 32 KB memset also pushed most
 * of the query's working set out of a 48 KB L1. 16 KB holds the longest
 * request target served (TD_MAX_TARGET, 8192 bytes) with about 7 KB of
 * headers; larger requests get 414 or 431. */
#define TD_CONNECTION_MEMORY (16 * 1024)

struct td_daemon {
    struct MHD_Daemon *mhd;
    TDServer *server;
    answer_fn answer;
    SEL answer_sel;
    size_t max_body;
    td_deadlines *deadlines;
    write_queue *writes;         /* with --tokens: the live store's writes (write_queue.h) */
    int listen_fd;
    int port;
    char address[64];
    int in_flight;               /* requests whose request line has arrived (__atomic) */
    int stopping;                /* td_daemon_stop began: no new connection (__atomic) */
    int64_t log_second;          /* libmicrohttpd messages: the second counted (__atomic) */
    unsigned log_count, log_dropped;   /* in it, and not shown (__atomic) */
};

/* libmicrohttpd's own messages, at most this many a second: clients hanging
 * up or closed by their deadline (a slow-client flood) must not flood the
 * log. */
#define MHD_MESSAGES_PER_SECOND 5

/* ------------------------------------------------------------ per thread */

static pthread_key_t request_key;
static pthread_once_t request_key_once = PTHREAD_ONCE_INIT;
static __thread TDRequest *thread_request;

static void release_thread_request(void *request)
{
    [(TDRequest *)request release];
}

static void make_request_key(void)
{
    pthread_key_create(&request_key, release_thread_request);
}

static TDRequest *current_request(td_daemon *d)
{
    TDRequest *req = thread_request;
    if (req)
        return req;
    req = [[TDRequest alloc] initWithServer:d->server];
    if (!req)
        return nil;
    thread_request = req;
    pthread_setspecific(request_key, req);   /* released when the thread exits */
    return req;
}

static uint64_t monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static td_verb verb_of(const char *m)
{
    switch (m[0]) {
    case 'G': if (strcmp(m, "GET") == 0) return TD_GET; break;
    case 'H': if (strcmp(m, "HEAD") == 0) return TD_HEAD; break;
    case 'P':
        if (strcmp(m, "POST") == 0) return TD_POST;
        if (strcmp(m, "PUT") == 0) return TD_PUT;
        if (strcmp(m, "PATCH") == 0) return TD_PATCH;
        break;
    case 'D': if (strcmp(m, "DELETE") == 0) return TD_DELETE; break;
    case 'O': if (strcmp(m, "OPTIONS") == 0) return TD_OPTIONS; break;
    default: break;
    }
    return TD_VERB_OTHER;
}

/* ------------------------------------------------------------ callbacks */

static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    td_daemon *d = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        td_conn *conn = malloc(sizeof *conn);
        const union MHD_ConnectionInfo *fd_info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (conn && !fd_info) {
            free(conn);   /* cannot be guarded: refused (the handler closes it) */
            conn = NULL;
        }
        if (conn) {
            conn->started = conn->target_too_long = conn->body_too_large = false;
            conn->bad_host = false;
            conn->body = NULL;
            conn->body_len = conn->body_cap = 0;
            conn->target_len = 0;
            conn->target[0] = '\0';
            conn->tls.server = NULL;
            conn->deferred = false;
            conn->deferred_response = NULL;
            if (d->server->tls) {
                const union MHD_ConnectionInfo *tls_info =
                    MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
                if (tls_info && tls_info->tls_session)
                    tls_connection_start(&conn->tls, d->server->tls,
                                         (gnutls_session_t)tls_info->tls_session);
                /* GnuTLS sends the handshake's flights as several small
                 * writes straight to the socket, past libmicrohttpd's
                 * corking: with Nagle's algorithm each write after the first
                 * waited for the client's delayed ACK (measured: 112 new
                 * connections/s on one connection, 9 ms each; nginx 517) */
                int one = 1;
                setsockopt(fd_info->connect_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            }
            td_deadlines_add(d->deadlines, conn, fd_info->connect_fd);
        }
        *socket_context = conn;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        td_conn *conn = *socket_context;
        if (conn) {
            td_deadlines_remove(d->deadlines, conn);   /* before MHD closes the socket */
            tls_connection_closed(&conn->tls);
            if (conn->deferred_response)   /* the client left before its write's answer was sent */
                MHD_destroy_response(conn->deferred_response);
            free(conn->body);
            free(conn);
        }
        *socket_context = NULL;
    }
}

/* Called with the raw request-target before MHD decodes it; the return value
 * becomes *con_cls for this request. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *connection)
{
    td_daemon *d = cls;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    td_conn *conn = info ? (td_conn *)info->socket_context : NULL;
    if (!conn)
        return NULL;
    __atomic_fetch_add(&d->in_flight, 1, __ATOMIC_RELAXED);
    conn->started_us = monotonic_us();
    conn->started = false;
    conn->body_too_large = false;
    conn->body_len = 0;
    size_t len = strlen(uri);
    conn->target_too_long = len > TD_MAX_TARGET;
    if (conn->target_too_long)
        len = 200;   /* enough for the access log */
    memcpy(conn->target, uri, len);
    conn->target[len] = '\0';
    conn->target_len = len;
    return conn;
}

static void on_request_done(void *cls, struct MHD_Connection *connection, void **con_cls,
                            enum MHD_RequestTerminationCode toe)
{
    (void)connection;
    (void)toe;
    td_daemon *d = cls;
    if (*con_cls) {
        td_conn *conn = *con_cls;
        if (conn->deferred_response) {   /* ended before the resumed handler queued it */
            MHD_destroy_response(conn->deferred_response);
            conn->deferred_response = NULL;
        }
        conn->deferred = false;
        __atomic_fetch_sub(&d->in_flight, 1, __ATOMIC_RELAXED);
        td_deadline_await_next(*con_cls);   /* kept alive: the next request's deadline */
    }
    *con_cls = NULL;
}

static enum MHD_Result hand_to_server(td_daemon *d, struct MHD_Connection *connection,
                                      const char *method, td_conn *conn)
{
    if (conn->deferred) {
        /* resumed: the write queue's thread made the answer (write_queue.h) */
        conn->deferred = false;
        struct MHD_Response *r = conn->deferred_response;
        conn->deferred_response = NULL;
        if (!r)
            return MHD_NO;
        enum MHD_Result queued = MHD_queue_response(connection, conn->deferred_status, r);
        MHD_destroy_response(r);
        return queued;
    }
    td_deadline_request_complete(conn);
    TDRequest *req = current_request(d);
    if (!req)
        return MHD_NO;
    req->connection = connection;
    req->method = method;
    req->verb = verb_of(method);
    return d->answer(d->server, d->answer_sel, req, conn) == MHD_YES ? MHD_YES : MHD_NO;
}

/* write_queue's answer: the server's answer to a write whose connection is
 * suspended, made with this thread's own TDRequest and left in conn. */
static void answer_write(void *ctx, struct MHD_Connection *connection, const char *method, td_conn *conn)
{
    td_daemon *d = ctx;
    TDRequest *req = current_request(d);
    if (!req)
        return;   /* no answer: the connection is closed when resumed */
    req->connection = connection;
    req->method = method;
    req->verb = verb_of(method);
    req->answeringFor = conn;
    if (d->answer(d->server, d->answer_sel, req, conn) != MHD_YES && conn->deferred_response) {
        MHD_destroy_response(conn->deferred_response);
        conn->deferred_response = NULL;
    }
    req->answeringFor = NULL;
}

static bool content_length_over(const char *value, size_t cap)
{
    unsigned long long n = 0;
    for (const char *p = value; *p >= '0' && *p <= '9'; p++) {
        n = n * 10 + (unsigned long long)(*p - '0');
        if (n > cap)
            return true;
    }
    return false;
}

/* What the first handler call needs of the headers, in one pass. */
typedef struct head_facts {
    const char *content_length;
    int hosts;
} head_facts;

static enum MHD_Result note_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    head_facts *h = cls;
    if ((key[0] | 0x20) == 'h' && strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
        h->hosts++;
    else if ((key[0] | 0x20) == 'c' && !h->content_length &&
             strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        h->content_length = value;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)url;
    td_daemon *d = cls;
    td_conn *conn = *con_cls;
    if (!conn)
        return MHD_NO;
    if (!conn->started) {
        conn->started = true;
        head_facts head = {NULL, 0};
        MHD_get_connection_values(connection, MHD_HEADER_KIND, note_header, &head);
        /* RFC 9112 §3.2: exactly one Host in HTTP/1.1, at most one before */
        conn->bad_host = head.hosts > 1 ||
                         (head.hosts == 0 && strcmp(version, MHD_HTTP_VERSION_1_1) == 0);
        const char *cl = head.content_length;
        if (cl && content_length_over(cl, d->max_body)) {
            /* answered now, before the body: MHD then closes the connection */
            conn->body_too_large = true;
            return hand_to_server(d, connection, method, conn);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (conn->body_too_large)
            return MHD_YES;
        if (conn->body_len + n > d->max_body) {
            conn->body_too_large = true;   /* chunked body over the cap: 413 at the end */
            return MHD_YES;
        }
        if (conn->body_len + n + 1 > conn->body_cap) {
            size_t cap = conn->body_cap ? conn->body_cap : 1024;
            while (cap < conn->body_len + n + 1)
                cap *= 2;
            char *grown = realloc(conn->body, cap);
            if (!grown)
                return MHD_NO;
            conn->body = grown;
            conn->body_cap = cap;
        }
        memcpy(conn->body + conn->body_len, upload_data, n);
        conn->body_len += n;
        conn->body[conn->body_len] = '\0';
        return MHD_YES;
    }
    return hand_to_server(d, connection, method, conn);
}

static void log_mhd_message(void *cls, const char *fmt, va_list ap)
{
    td_daemon *d = cls;
    int64_t now = (int64_t)time(NULL);
    int64_t counted = __atomic_load_n(&d->log_second, __ATOMIC_RELAXED);
    if (now != counted && __atomic_compare_exchange_n(&d->log_second, &counted, now, false,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        __atomic_store_n(&d->log_count, 0, __ATOMIC_RELAXED);
        unsigned dropped = __atomic_exchange_n(&d->log_dropped, 0, __ATOMIC_RELAXED);
        if (dropped)
            fprintf(stderr, "transitd: %u more libmicrohttpd message(s) not shown\n", dropped);
    }
    if (__atomic_add_fetch(&d->log_count, 1, __ATOMIC_RELAXED) > MHD_MESSAGES_PER_SECOND) {
        __atomic_add_fetch(&d->log_dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    char text[512];
    vsnprintf(text, sizeof text, fmt, ap);
    size_t n = strlen(text);
    fprintf(stderr, "transitd: libmicrohttpd: %s%s", text, n && text[n - 1] == '\n' ? "" : "\n");
}

/* ------------------------------------------------------------ socket */

static int open_listener(td_daemon *d, const char *bind_addr, int port, char *err, size_t errlen)
{
    char port_text[16];
    snprintf(port_text, sizeof port_text, "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(bind_addr, port_text, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve --bind address '%s': %s", bind_addr,
                 gai_strerror(rc));
        return -1;
    }
    int fd = -1, saved = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "cannot listen on %s port %d: %s", bind_addr, port,
                 strerror(saved));
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            d->port = ntohs(a->sin6_port);
            inet_ntop(AF_INET6, &a->sin6_addr, d->address, sizeof d->address);
        } else {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            d->port = ntohs(a->sin_port);
            inet_ntop(AF_INET, &a->sin_addr, d->address, sizeof d->address);
        }
    }
    return fd;
}

/* The platform seam: epoll with opportunistic I/O where there is epoll, for
 * plain HTTP. HTTPS uses poll everywhere: with epoll, libmicrohttpd 0.9.75
 * spins while a TLS handshake waits for the client (recvfrom EAGAIN, then
 * epoll_wait with a zero timeout, again and again; strace shows it), so a
 * client that opens a connection and sends nothing holds a core until its
 * deadline, and every handshake costs more CPU. Measured on loopback, new
 * connections with one request each, 2 threads: epoll 3,544 µs of server CPU
 * per connection with one client and 764 with 32; poll 404 and 272 (nginx
 * with OpenSSL: about 350). */
/* MHD's accept policy: every connection until td_daemon_stop begins, none
 * after (accepted and closed at once). This, not MHD_quiesce_daemon, is how
 * a stop refuses new clients: with epoll and a thread pool, quiescing races
 * the workers' own removal of the listening socket from their epoll sets,
 * and libmicrohttpd 0.9.75 aborts the process when it loses
 * ("Failed to remove listen FD from epoll set"). */
static enum MHD_Result accept_until_stopping(void *cls, const struct sockaddr *addr,
                                             socklen_t addrlen)
{
    (void)addr;
    (void)addrlen;
    const td_daemon *d = cls;
    return __atomic_load_n(&d->stopping, __ATOMIC_RELAXED) ? MHD_NO : MHD_YES;
}

/* MHD_ALLOW_SUSPEND_RESUME where pushed boards may be open (--max-streams
 * above 0): a stream (board_streams.h) with nothing to send suspends its
 * connection, which then costs no pool thread and no wake-up until the
 * notifier resumes it; and where writes are enabled (--tokens): a write
 * waits suspended for the write queue's thread (write_queue.h). Without
 * either the flag is left off: it adds a check for resumed connections to
 * every turn of libmicrohttpd's loop. */
static unsigned daemon_flags(bool tls, bool suspends)
{
    unsigned suspend = suspends ? MHD_ALLOW_SUSPEND_RESUME : 0;
    if (tls)   /* see below: poll, on every platform */
        return MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_USE_TLS | suspend;
#if defined(__linux__)
    return MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO | MHD_USE_ITC | MHD_USE_ERROR_LOG | suspend;
#else
    return MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG | suspend;
#endif
}

td_daemon *td_daemon_start(TDServer *server, char *err, size_t errlen)
{
    pthread_once(&request_key_once, make_request_key);
    const td_config *cfg = &server->config;
    td_daemon *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->server = server;
    d->answer_sel = @selector(answer:connectionState:);
    d->answer = (answer_fn)[server methodForSelector:d->answer_sel];
    d->max_body = cfg->max_body;
    d->listen_fd = open_listener(d, cfg->bind, cfg->port, err, errlen);
    if (d->listen_fd < 0) {
        free(d);
        return NULL;
    }
    d->deadlines = td_deadlines_start(cfg->header_timeout_s, cfg->timeout_s, err, errlen);
    if (!d->deadlines) {
        close(d->listen_fd);
        free(d);
        return NULL;
    }
    if (cfg->tokens_path && !(d->writes = write_queue_start(answer_write, d, err, errlen))) {
        close(d->listen_fd);
        td_deadlines_free(d->deadlines);
        free(d);
        return NULL;
    }
    bool tls = server->tls != NULL;
    if (tls && MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK) != MHD_YES) {
        snprintf(err, errlen, "this libmicrohttpd was built without TLS certificate callbacks "
                              "(GnuTLS 3); --tls-cert cannot be served");
        close(d->listen_fd);
        td_deadlines_free(d->deadlines);
        write_queue_free(d->writes);
        free(d);
        return NULL;
    }
    struct MHD_OptionItem options[16] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)log_mhd_message, d},   /* first, as MHD asks */
        {MHD_OPTION_LISTEN_SOCKET, d->listen_fd, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)cfg->max_connections, NULL},
        /* over the cap a connection is accepted and closed at once; 0: no cap */
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)cfg->max_connections_per_ip, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)cfg->timeout_s, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, TD_CONNECTION_MEMORY, NULL},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, d},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_request_line, d},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_request_done, d},
    };
    int nopt = 9;
    if (tls) {
        /* the certificate of the moment, asked for at every handshake, and
         * what may be negotiated (tls_server.h) */
        options[nopt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
                                                  (void *)tls_server_retrieve_certificate};
        options[nopt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                                  (void *)TLS_SERVER_PRIORITIES};
    }
    if (cfg->threads > 1)
        options[nopt++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, cfg->threads, NULL};
    options[nopt] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    d->mhd = MHD_start_daemon(daemon_flags(tls, cfg->max_streams > 0 || d->writes), 0, accept_until_stopping, d,
                              on_request, d,
                              MHD_OPTION_ARRAY,
                              options, MHD_OPTION_END);
    if (!d->mhd) {
        snprintf(err, errlen, "libmicrohttpd could not start on %s port %d", d->address, d->port);
        close(d->listen_fd);
        td_deadlines_free(d->deadlines);
        write_queue_free(d->writes);
        free(d);
        return NULL;
    }
    server->writes = d->writes;
    return d;
}

int td_daemon_port(const td_daemon *d)
{
    return d->port;
}

const char *td_daemon_address(const td_daemon *d)
{
    return d->address;
}

void td_daemon_stop(td_daemon *d, unsigned max_wait_ms)
{
    __atomic_store_n(&d->stopping, 1, __ATOMIC_RELAXED);   /* new connections are closed */
    uint64_t deadline = monotonic_us() + (uint64_t)max_wait_ms * 1000u;
    while (__atomic_load_n(&d->in_flight, __ATOMIC_RELAXED) > 0 && monotonic_us() < deadline) {
        struct timespec pause = {0, 5 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    td_deadlines_stop_sweeping(d->deadlines);
    /* the writes queued are answered and their connections resumed while
     * libmicrohttpd still runs; a write arriving after is answered where
     * it arrives */
    write_queue_stop(d->writes);
    MHD_stop_daemon(d->mhd);
    d->server->writes = NULL;
    write_queue_free(d->writes);
    td_deadlines_free(d->deadlines);   /* every connection has left it */
    free(d);
}

/* Descriptors the server needs beside its connections: stdio, the listening
 * socket, per thread an epoll set and a wake-up pipe, SQLite files (schedule
 * connections, shapes, live data), OpenAPI and data directory reads. */
static rlim_t own_descriptors(const td_config *cfg)
{
    return 64 + 8 * (rlim_t)cfg->threads;
}

void td_daemon_fit_open_files(td_config *cfg)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t reserve = own_descriptors(cfg);
    rlim_t want = (rlim_t)cfg->max_connections + reserve;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rlim_t target = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
        struct rlimit raised = {target, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
            rl.rlim_cur = target;
        } else {
#if defined(OPEN_MAX)
            /* macOS refuses more than OPEN_MAX whatever the hard limit says */
            raised.rlim_cur = target < OPEN_MAX ? target : OPEN_MAX;
            if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
                rl.rlim_cur = raised.rlim_cur;
#endif
        }
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        unsigned fit = rl.rlim_cur > reserve + 16 ? (unsigned)(rl.rlim_cur - reserve) : 16;
        fprintf(stderr, "transitd serve: warning: the open-file limit (%llu) leaves room for %u "
                        "connections, not %u; serving at most %u (raise `ulimit -n` or "
                        "LimitNOFILE)\n",
                (unsigned long long)rl.rlim_cur, fit, cfg->max_connections, fit);
        cfg->max_connections = fit;
    }
}
