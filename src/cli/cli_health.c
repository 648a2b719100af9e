/* cli_health.c — `transitd health [--url URL] [--timeout S]`: is a running
 * server ready?
 *
 * Why it exists: container health checks (Dockerfile HEALTHCHECK, compose
 * healthcheck), launchd and systemd scripts need a probe that exits 0 or 1,
 * and the runtime image should not carry curl just for that. This is a
 * minimal HTTP/1.0 client: one GET, the status line read, the problem's
 * detail shown when the answer is not 200. https:// goes through a GnuTLS
 * client session (the library the server's TLS already links): the
 * certificate is verified against --cacert or the system's trust store and
 * the name in the URL (or --tls-name). With $TRANSITD_TLS_CERT set, as for
 * `serve`, the default URL is https and that certificate is the trust.
 */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "transit/cli.h"

#define DEFAULT_TIMEOUT_S 5
#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0   /* macOS: SO_NOSIGPIPE is set on the socket instead */
#endif
#define RESPONSE_MAX 4096

typedef struct health_url {
    bool https;
    char host[256];       /* without brackets */
    char port[8];
    char path[1024];
} health_url;

static void print_usage(FILE *out)
{
    fputs("usage: transitd health [--url URL] [--timeout S] [--cacert FILE] [--tls-name NAME]\n"
          "\n"
          "Asks a running `transitd serve` whether it is ready to answer queries: sends\n"
          "GET URL and exits 0 when the answer is 200, else 1 with the reason (connection\n"
          "refused, no answer in time, or the status and the problem's detail). Meant for\n"
          "container and load-balancer health checks, where no curl is needed.\n"
          "\n"
          "options:\n"
          "  --url URL     what to ask, http:// or https:// (default: http://127.0.0.1:PORT/readyz,\n"
          "                PORT from $TRANSITD_PORT, else 8080; the host is $TRANSITD_BIND\n"
          "                unless that is a wildcard address; https when $TRANSITD_TLS_CERT is\n"
          "                set). Use /healthz to ask only whether it is alive.\n"
          "  --timeout S   seconds for connecting and answering, 1..300 (default 5)\n"
          "  --cacert FILE https: the certificates to trust, PEM (default: $TRANSITD_TLS_CERT,\n"
          "                else the system's trust store). A self-signed server certificate\n"
          "                is its own trust\n"
          "  --tls-name NAME\n"
          "                https: the name the server's certificate must carry (default: the\n"
          "                URL's host; with $TRANSITD_TLS_CERT, that certificate's first name)\n"
          "  -h, --help    show this help\n"
          "\n"
          "exit status: 0 ready (200), 1 not ready or not answering, 2 usage error\n",
          out);
}

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("health", print_usage, fmt, arg);
}

/* http://host[:port][/path], host a name, IPv4 or [IPv6]. */
static bool parse_url(const char *url, health_url *u)
{
    memset(u, 0, sizeof *u);
    if (strncmp(url, "https://", 8) == 0)
        u->https = true;
    else if (strncmp(url, "http://", 7) != 0)
        return false;
    const char *p = url + (u->https ? 8 : 7), *host = p, *host_end;
    if (*p == '[') {
        host = p + 1;
        host_end = strchr(host, ']');
        if (!host_end)
            return false;
        p = host_end + 1;
    } else {
        while (*p && *p != ':' && *p != '/' && *p != '?' && *p != '#')
            p++;
        host_end = p;
    }
    size_t hlen = (size_t)(host_end - host);
    if (hlen == 0 || hlen >= sizeof u->host)
        return false;
    memcpy(u->host, host, hlen);
    snprintf(u->port, sizeof u->port, u->https ? "443" : "80");
    if (*p == ':') {
        const char *digits = ++p;
        long port = 0;
        while (*p >= '0' && *p <= '9' && port <= 65535)
            port = port * 10 + (*p++ - '0');
        if (p == digits || port < 1 || port > 65535)
            return false;
        snprintf(u->port, sizeof u->port, "%ld", port);
    }
    if (*p && *p != '/')
        return false;
    snprintf(u->path, sizeof u->path, "%s", *p ? p : "/");
    for (const char *c = u->path; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f)
            return false;
    return strlen(p) < sizeof u->path;
}

/* The default URL: /readyz on this machine at $TRANSITD_PORT. */
static void default_url(char *out, size_t cap)
{
    const char *port = getenv("TRANSITD_PORT");
    const char *bind = getenv("TRANSITD_BIND");
    if (!port || !*port)
        port = "8080";
    const char *host = "127.0.0.1";
    if (bind && *bind && strcmp(bind, "0.0.0.0") != 0 && strcmp(bind, "*") != 0)
        host = strcmp(bind, "::") == 0 ? "::1" : bind;
    bool v6 = strchr(host, ':') != NULL;
    const char *tls = getenv("TRANSITD_TLS_CERT");
    snprintf(out, cap, "%s://%s%s%s:%s/readyz", tls && *tls ? "https" : "http", v6 ? "[" : "",
             host, v6 ? "]" : "", port);
}

/* The first subjectAltName (DNS name or IP address) of the PEM certificate
 * at path, into out; false when there is none. */
static bool certificate_name(const char *path, char *out, size_t cap)
{
    gnutls_datum_t pem = {NULL, 0};
    gnutls_x509_crt_t crt = NULL;
    bool found = false;
    if (gnutls_load_file(path, &pem) >= 0 && gnutls_x509_crt_init(&crt) >= 0 &&
        gnutls_x509_crt_import(crt, &pem, GNUTLS_X509_FMT_PEM) >= 0) {
        unsigned char name[256];
        size_t len = sizeof name - 1;
        unsigned critical;
        int type = gnutls_x509_crt_get_subject_alt_name(crt, 0, name, &len, &critical);
        if (type == GNUTLS_SAN_DNSNAME) {
            name[len] = '\0';
            snprintf(out, cap, "%s", (char *)name);
            found = true;
        } else if (type == GNUTLS_SAN_IPADDRESS && (len == 4 || len == 16)) {
            found = inet_ntop(len == 4 ? AF_INET : AF_INET6, name, out, (socklen_t)cap) != NULL;
        }
    }
    if (crt)
        gnutls_x509_crt_deinit(crt);
    gnutls_free(pem.data);
    return found;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for `events` on fd until the deadline; false on timeout or error. */
static bool wait_for(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return false;
        struct pollfd pfd = {fd, events, 0};
        int n = poll(&pfd, 1, (int)left);
        if (n > 0)
            return true;
        if (n < 0 && errno != EINTR)
            return false;
    }
}

/* A connected non-blocking socket, or -1 with the reason in why. */
static int connect_to(const health_url *u, int64_t deadline, char *why, size_t cap)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc != 0) {
        snprintf(why, cap, "cannot resolve %s: %s", u->host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    snprintf(why, cap, "cannot connect to %s port %s", u->host, u->port);
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0)
            continue;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
#ifdef SO_NOSIGPIPE
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
        int err = 0;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            err = errno;
            if (err == EINPROGRESS) {
                socklen_t len = sizeof err;
                err = ETIMEDOUT;
                if (wait_for(fd, POLLOUT, deadline))
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            }
        }
        if (err) {
            snprintf(why, cap, "cannot connect to %s port %s: %s", u->host, u->port,
                     strerror(err));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

/* The "detail" of a problem+json body, or the body's first line, into out. */
static void answer_detail(const char *body, char *out, size_t cap)
{
    const char *d = strstr(body, "\"detail\":\"");
    size_t n = 0;
    if (d) {
        d += 10;
        while (d[n] && d[n] != '"' && n + 1 < cap)
            n++;
    } else {
        d = body;
        while (d[n] && d[n] != '\r' && d[n] != '\n' && n + 1 < cap)
            n++;
    }
    memcpy(out, d, n);
    out[n] = '\0';
}

/* The connection: the socket, and over it a GnuTLS session for https. */
typedef struct channel {
    int fd;
    gnutls_session_t tls;
    gnutls_certificate_credentials_t trust;
} channel;

static void channel_close(channel *ch)
{
    if (ch->tls) {
        gnutls_bye(ch->tls, GNUTLS_SHUT_WR);
        gnutls_deinit(ch->tls);
    }
    if (ch->trust)
        gnutls_certificate_free_credentials(ch->trust);
    if (ch->fd >= 0)
        close(ch->fd);
}

/* The TLS handshake, the certificate verified against cacert (or the
 * system's trust) and name. false with the reason in why. */
static bool channel_start_tls(channel *ch, const char *cacert, const char *name, int64_t deadline,
                              char *why, size_t cap)
{
    int rc = gnutls_certificate_allocate_credentials(&ch->trust);
    if (rc >= 0)
        rc = cacert ? gnutls_certificate_set_x509_trust_file(ch->trust, cacert, GNUTLS_X509_FMT_PEM)
                    : gnutls_certificate_set_x509_system_trust(ch->trust);
    if (rc <= 0) {
        snprintf(why, cap, "cannot read the trusted certificates%s%s: %s", cacert ? " in " : "",
                 cacert ? cacert : "", rc == 0 ? "none found" : gnutls_strerror(rc));
        return false;
    }
    bool ip = strchr(name, ':') || strspn(name, "0123456789.") == strlen(name);
    if ((rc = gnutls_init(&ch->tls, GNUTLS_CLIENT | GNUTLS_NONBLOCK)) < 0 ||
        (rc = gnutls_set_default_priority(ch->tls)) < 0 ||
        (rc = gnutls_credentials_set(ch->tls, GNUTLS_CRD_CERTIFICATE, ch->trust)) < 0 ||
        (!ip && (rc = gnutls_server_name_set(ch->tls, GNUTLS_NAME_DNS, name, strlen(name))) < 0)) {
        snprintf(why, cap, "TLS set-up failed: %s", gnutls_strerror(rc));
        return false;
    }
    gnutls_session_set_verify_cert(ch->tls, name, 0);
    gnutls_transport_set_int(ch->tls, ch->fd);
    do {
        rc = gnutls_handshake(ch->tls);
        if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED) {
            short ev = gnutls_record_get_direction(ch->tls) ? POLLOUT : POLLIN;
            if (!wait_for(ch->fd, ev, deadline)) {
                snprintf(why, cap, "no TLS handshake in time");
                return false;
            }
        }
    } while (rc < 0 && !gnutls_error_is_fatal(rc));
    if (rc < 0) {
        if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
            gnutls_datum_t text = {NULL, 0};
            unsigned status = gnutls_session_get_verify_cert_status(ch->tls);
            gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0);
            snprintf(why, cap, "the server's certificate is not trusted for %s: %s", name,
                     text.data ? (char *)text.data : "verification failed");
            gnutls_free(text.data);
        } else {
            snprintf(why, cap, "TLS handshake failed: %s", gnutls_strerror(rc));
        }
        return false;
    }
    return true;
}

/* Sends or receives like send(2)/recv(2): >0 bytes, 0 closed, -1 with errno
 * EAGAIN when it would block, else another error. */
static ssize_t channel_io(channel *ch, bool sending, void *buf, size_t len)
{
    if (!ch->tls)
        return sending ? send(ch->fd, buf, len, MSG_NOSIGNAL) : recv(ch->fd, buf, len, 0);
    ssize_t n = sending ? gnutls_record_send(ch->tls, buf, len) : gnutls_record_recv(ch->tls, buf, len);
    if (n >= 0)
        return n;
    if (n == GNUTLS_E_PREMATURE_TERMINATION)
        return 0;   /* the server closed without close_notify after its answer */
    errno = n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED ? EAGAIN : EIO;
    return -1;
}

/* Which way a blocked channel waits. */
static short channel_wait_events(const channel *ch, bool sending)
{
    if (ch->tls)
        return gnutls_record_get_direction(ch->tls) ? POLLOUT : POLLIN;
    return sending ? POLLOUT : POLLIN;
}

int cli_health_main(int argc, char **argv)
{
    char url_text[1400];
    default_url(url_text, sizeof url_text);
    const char *url = url_text;
    long timeout_s = DEFAULT_TIMEOUT_S;
    const char *env_cert = getenv("TRANSITD_TLS_CERT");
    const char *cacert = env_cert && *env_cert ? env_cert : NULL, *tls_name = NULL;
    enum { OPT_URL = CLI_OPT_LONG_ONLY, OPT_TIMEOUT, OPT_CACERT, OPT_TLS_NAME };
    static const struct option longopts[] = {
        {"url", required_argument, NULL, OPT_URL},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"cacert", required_argument, NULL, OPT_CACERT},
        {"tls-name", required_argument, NULL, OPT_TLS_NAME},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cli_opts opts;
    cli_opts_begin(&opts, argc, argv, "h", longopts);
    for (int c; (c = cli_opts_next(&opts)) != -1;) {
        const char *arg = opts.arg;
        if (c == 'h') {
            print_usage(stdout);
            return CLI_OK;
        } else if (c == OPT_URL) {
            if (!arg || !*arg)
                return usage_error("%s needs a value", opts.name);
            url = arg;
        } else if (c == OPT_CACERT || c == OPT_TLS_NAME) {
            if (!arg || !*arg)
                return usage_error("%s needs a value", opts.name);
            *(c == OPT_CACERT ? &cacert : &tls_name) = arg;
        } else if (c == OPT_TIMEOUT) {
            char *end = NULL;
            timeout_s = arg ? strtol(arg, &end, 10) : 0;
            if (!arg || !*arg || *end || timeout_s < 1 || timeout_s > 300)
                return usage_error("--timeout must be 1..300 seconds, got '%s'", arg ? arg : "");
        } else {   /* an unknown option, or an argument health does not take */
            return usage_error("unknown option '%s'", c == CLI_OPT_ARG ? arg : opts.typed);
        }
    }
    health_url u;
    if (!parse_url(url, &u))
        return usage_error("--url must be http(s)://host[:port][/path], got '%s'", url);
    /* with the server's own certificate as the trust, its own name by default */
    char env_name[256];
    if (!tls_name && u.https && cacert == env_cert && cacert &&
        certificate_name(cacert, env_name, sizeof env_name))
        tls_name = env_name;
    if (!tls_name)
        tls_name = u.host;

    int64_t deadline = now_ms() + timeout_s * 1000;
    char why[512];
    channel ch = {connect_to(&u, deadline, why, sizeof why), NULL, NULL};
    if (ch.fd < 0) {
        fprintf(stderr, "transitd health: %s: %s\n", url, why);
        return CLI_RUNTIME_ERROR;
    }
    if (u.https && !channel_start_tls(&ch, cacert, tls_name, deadline, why, sizeof why)) {
        fprintf(stderr, "transitd health: %s: %s\n", url, why);
        channel_close(&ch);
        return CLI_RUNTIME_ERROR;
    }
    bool v6 = strchr(u.host, ':') != NULL;
    char request[1600];
    int len = snprintf(request, sizeof request,
                       "GET %s HTTP/1.0\r\nHost: %s%s%s:%s\r\nUser-Agent: transitd-health\r\n"
                       "Accept: application/json\r\n\r\n",
                       u.path, v6 ? "[" : "", u.host, v6 ? "]" : "", u.port);
    size_t sent = 0;
    while (sent < (size_t)len) {
        ssize_t w = channel_io(&ch, true, request + sent, (size_t)len - sent);
        if (w > 0) {
            sent += (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EINTR) &&
                   wait_for(ch.fd, channel_wait_events(&ch, true), deadline)) {
            continue;
        } else {
            fprintf(stderr, "transitd health: %s: cannot send the request: %s\n", url,
                    w < 0 ? strerror(errno) : "connection closed");
            channel_close(&ch);
            return CLI_RUNTIME_ERROR;
        }
    }
    char answer[RESPONSE_MAX + 1];
    size_t got = 0;
    bool timed_out = false;
    while (got < RESPONSE_MAX) {
        ssize_t r = channel_io(&ch, false, answer + got, RESPONSE_MAX - got);
        if (r > 0) {
            got += (size_t)r;
        } else if (r == 0) {
            break;
        } else if ((errno == EAGAIN || errno == EINTR) &&
                   wait_for(ch.fd, channel_wait_events(&ch, false), deadline)) {
            continue;
        } else {
            timed_out = errno == EAGAIN;
            break;
        }
    }
    channel_close(&ch);
    answer[got] = '\0';
    int status = 0;
    if (sscanf(answer, "HTTP/1.%*1d %3d", &status) != 1) {
        fprintf(stderr, "transitd health: %s: %s\n", url,
                timed_out || got == 0 ? "no answer in time" : "the answer is not HTTP");
        return CLI_RUNTIME_ERROR;
    }
    const char *body = strstr(answer, "\r\n\r\n");
    char detail[300];
    answer_detail(body ? body + 4 : "", detail, sizeof detail);
    if (status != 200) {
        fprintf(stderr, "transitd health: %s answered %d%s%s\n", url, status,
                detail[0] ? ": " : "", detail);
        return CLI_RUNTIME_ERROR;
    }
    printf("%s: 200 ready\n", url);
    return CLI_OK;
}
