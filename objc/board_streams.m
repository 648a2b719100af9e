/* board_streams.m — pushed boards: the streams, their groups, the notifier
 * thread and the libmicrohttpd content reader; see board_streams.h.
 *
 * Everything a stream shares with the notifier (what it has to send, whether
 * its connection is suspended, the groups) is under one mutex, the hub's.
 * The content reader suspends its connection with that mutex held and the
 * notifier resumes with it held, so a resume never comes before the suspend
 * it answers. The notifier computes boards without it: a group it is
 * computing is pinned (refs) so that its last stream leaving does not free
 * it under the computation.
 */
#define _GNU_SOURCE   /* memmem, strcasestr (glibc; macOS has both) */
#import "board_streams.h"
#import "TDResource.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "transit/translations.h"

#define GROUP_BUCKETS 1024
#define READ_BLOCK 4096                 /* bytes libmicrohttpd asks for at a time */
#define EVENT_STREAM_TYPE "text/event-stream; charset=utf-8"
/* The first bytes of every stream: how long an EventSource waits before it
 * reconnects after the connection drops (a 503 past --max-streams says 5 s
 * too, in Retry-After). */
#define STREAM_PREAMBLE "retry: 5000\n\n"
#define KEEPALIVE_COMMENT ": keep-alive\n\n"

/* One event's bytes, shared by every stream of a group (refs under the hub
 * lock). */
typedef struct stream_event {
    unsigned refs;
    size_t len;
    char text[];
} stream_event;

typedef struct board_group board_group;
typedef struct board_stream board_stream;

struct board_stream {
    board_streams *hub;
    board_group *group;          /* NULL until linked (and after a refusal) */
    struct MHD_Connection *connection;
    board_stream *prev, *next;   /* in the group */
    stream_event *pending;       /* the newest event not begun yet, or NULL */
    stream_event *sending;       /* the event being sent, from `offset` */
    size_t offset;
    uint64_t rows;               /* hash of the rows the client has or is being sent */
    bool preamble_sent;
    bool keepalive_due;
    bool suspended;              /* by the content reader, waiting for the notifier */
    bool ending;                 /* end after what is pending (a problem, or the server stops) */
};

/* Streams asking the same thing: the route, the id and the sorted parameters
 * (`key`, which `params` point into). */
struct board_group {
    board_group *next_in_bucket;
    uint64_t key_hash;
    size_t key_len;
    char *key;
    td_route *route;
    const char *id;              /* into key, NULL for none */
    api_param params[TD_MAX_PARAMS];
    int nparams;
    const char *language;        /* into key: the names' language tag, "" for the feed's own */
    const char *accept_language; /* into key: the Accept-Language sent (the alert texts' languages
                                    are ranked by it at each recomputation), "" for none */
    char *path;                  /* the decoded path (a problem's instance) */
    board_stream *streams;
    unsigned nstreams;
    unsigned refs;               /* pinned by the notifier while it computes */
};

struct board_streams {
    TDServer *server;
    unsigned max_streams, keepalive_s;
    pthread_mutex_t lock;
    pthread_cond_t wake;         /* the notifier's (CLOCK_MONOTONIC) */
    pthread_cond_t gone;         /* a stream left (board_streams_end_all waits on it) */
    pthread_t notifier;
    bool notifier_running;
    bool stopping;
    uint64_t changes;            /* serving_on_change calls */
    board_group *buckets[GROUP_BUCKETS];
    unsigned open, groups;
    uint64_t opened, refused, events_sent, superseded, computed;
};

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int64_t monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

/* ------------------------------------------------------------ rows and events */

/* The span of the board's rows in a departures body: the array after the
 * first "departures" or "arrivals" key (a key, not text inside a string:
 * quotes inside strings are escaped). The whole body when there is none. */
static void rows_span(const char *body, size_t len, const char **start, size_t *span)
{
    *start = body;
    *span = len;
    static const char *const keys[] = {"\"departures\":[", "\"arrivals\":["};
    for (size_t k = 0; k < 2; k++) {
        size_t klen = strlen(keys[k]);
        const char *p = body, *end = body + len;
        while (p + klen <= end) {
            const char *hit = memmem(p, (size_t)(end - p), keys[k], klen);
            if (!hit)
                break;
            if (hit > body && hit[-1] == '\\') {
                p = hit + 1;
                continue;
            }
            const char *open = hit + klen - 1;
            int depth = 0;
            bool in_string = false;
            for (const char *q = open; q < end; q++) {
                char c = *q;
                if (in_string) {
                    if (c == '\\')
                        q++;
                    else if (c == '"')
                        in_string = false;
                } else if (c == '"') {
                    in_string = true;
                } else if (c == '[' || c == '{') {
                    depth++;
                } else if ((c == ']' || c == '}') && --depth == 0) {
                    *start = open;
                    *span = (size_t)(q - open) + 1;
                    return;
                }
            }
            return;   /* unbalanced: the whole body */
        }
    }
}

static uint64_t rows_hash(const char *body, size_t len)
{
    const char *start;
    size_t span;
    rows_span(body, len, &start, &span);
    uint64_t h = fnv1a(14695981039346656037ull, start, span);
    return h ? h : 1;   /* 0 means "no rows yet" */
}

static void format_id(uint64_t rows, char out[17])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++)
        out[i] = hex[(rows >> (60 - 4 * i)) & 15];
    out[16] = '\0';
}

/* "event: NAME\n[id: ID\n]data: BODY\n\n", a newline inside the body
 * continuing on another data: line (our JSON has none, but the format
 * allows for them). refs 1; NULL when out of memory. */
static stream_event *event_new(const char *name, const char *id, const char *body, size_t len)
{
    size_t newlines = 0;
    for (const char *p = memchr(body, '\n', len); p; p = memchr(p + 1, '\n', len - (size_t)(p + 1 - body)))
        newlines++;
    size_t cap = 64 + strlen(name) + (id ? strlen(id) : 0) + len + newlines * 6 + 1;
    stream_event *e = malloc(sizeof *e + cap);
    if (!e)
        return NULL;
    e->refs = 1;
    int n = snprintf(e->text, cap, "event: %s\n%s%s%sdata: ", name, id ? "id: " : "", id ? id : "",
                     id ? "\n" : "");
    size_t o = n > 0 ? (size_t)n : 0;
    for (size_t i = 0; i < len; i++) {
        if (body[i] == '\n') {
            memcpy(e->text + o, "\ndata: ", 7);
            o += 7;
        } else {
            e->text[o++] = body[i];
        }
    }
    memcpy(e->text + o, "\n\n", 2);
    e->len = o + 2;
    return e;
}

static void event_release(stream_event *e)
{
    if (e && --e->refs == 0)
        free(e);
}

/* ------------------------------------------------------------ groups (hub lock held) */

static board_group *find_group(board_streams *h, uint64_t key_hash, const char *key, size_t key_len)
{
    for (board_group *g = h->buckets[key_hash % GROUP_BUCKETS]; g; g = g->next_in_bucket)
        if (g->key_hash == key_hash && g->key_len == key_len && memcmp(g->key, key, key_len) == 0)
            return g;
    return NULL;
}

static void free_group_if_idle(board_streams *h, board_group *g)
{
    if (g->nstreams || g->refs)
        return;
    board_group **link = &h->buckets[g->key_hash % GROUP_BUCKETS];
    while (*link && *link != g)
        link = &(*link)->next_in_bucket;
    if (*link)
        *link = g->next_in_bucket;
    h->groups--;
    free(g->key);
    free(g->path);
    free(g);
}

/* The group's key: the route (its index), the id, the parameters sorted
 * by name then value, and the names' language tag, each ending in NUL. Written into buf (cap bytes);
 * returns the length, 0 when it does not fit. */
static size_t group_key(TDServer *server, TDRequest *req, td_route *route, char *buf, size_t cap)
{
    int order[TD_MAX_PARAMS];
    td_request_param_order(req, order);
    size_t o = 0;
    int n = snprintf(buf, cap, "%d%c%s%c", (int)(route - server->routes), 0,
                     req->resourceId ? "\1" : "", 0);
    if (n < 0 || (size_t)n >= cap)
        return 0;
    o = (size_t)n;
    if (req->resourceId) {
        size_t idlen = strlen(req->resourceId) + 1;
        if (o + idlen > cap)
            return 0;
        memcpy(buf + o, req->resourceId, idlen);
        o += idlen;
    }
    for (int i = 0; i < req->nparams; i++) {
        const api_param *p = &req->params[order[i]];
        size_t kl = strlen(p->key) + 1, vl = strlen(p->value) + 1;
        if (o + kl + vl > cap)
            return 0;
        memcpy(buf + o, p->key, kl);
        o += kl;
        memcpy(buf + o, p->value, vl);
        o += vl;
    }
    /* the names' language (its boards differ from the feed's own) */
    const char *language = req->language > 0 && req->contentLanguage ? req->contentLanguage : "";
    size_t ll = strlen(language) + 1;
    if (o + ll > cap)
        return 0;
    memcpy(buf + o, language, ll);
    o += ll;
    /* the Accept-Language itself: alerts written later may have texts in
     * languages the names do not (up to 255 bytes; past that, as cut) */
    const char *header = req->connection ? MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                                       MHD_HTTP_HEADER_ACCEPT_LANGUAGE)
                                         : NULL;
    size_t hl = header ? strnlen(header, 255) : 0;
    if (o + hl + 1 > cap)
        return 0;
    memcpy(buf + o, header ? header : "", hl);
    o += hl;
    buf[o++] = '\0';
    return o;
}

/* A new group for the key (copied); its id and parameters point into the
 * copy. NULL when out of memory. */
static board_group *group_new(board_streams *h, td_route *route, const char *key, size_t key_len,
                              uint64_t key_hash, int nparams, bool has_id, const char *path)
{
    board_group *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->key = malloc(key_len);
    g->path = strdup(path);
    if (!g->key || !g->path) {
        free(g->key);
        free(g->path);
        free(g);
        return NULL;
    }
    memcpy(g->key, key, key_len);
    g->key_len = key_len;
    g->key_hash = key_hash;
    g->route = route;
    const char *p = g->key;
    p += strlen(p) + 1;            /* the route index */
    p += strlen(p) + 1;            /* the id marker */
    if (has_id) {
        g->id = p;
        p += strlen(p) + 1;
    }
    for (int i = 0; i < nparams; i++) {
        g->params[i].key = p;
        p += strlen(p) + 1;
        g->params[i].value = p;
        p += strlen(p) + 1;
    }
    g->nparams = nparams;
    g->language = p;
    p += strlen(p) + 1;
    g->accept_language = p;
    board_group **bucket = &h->buckets[key_hash % GROUP_BUCKETS];
    g->next_in_bucket = *bucket;
    *bucket = g;
    h->groups++;
    return g;
}

/* ------------------------------------------------------------ libmicrohttpd */

static size_t copy_out(char *buf, size_t max, const char *text, size_t len)
{
    size_t n = len < max ? len : max;
    memcpy(buf, text, n);
    return n;
}

/* The content reader: the preamble, then events as they come, keep-alive
 * comments between them; with nothing to send, the connection is suspended
 * until the notifier resumes it. */
static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    board_stream *st = cls;
    board_streams *h = st->hub;
    ssize_t n;
    pthread_mutex_lock(&h->lock);
    if (!st->preamble_sent) {
        st->preamble_sent = true;
        n = (ssize_t)copy_out(buf, max, STREAM_PREAMBLE, sizeof STREAM_PREAMBLE - 1);
    } else {
        if (!st->sending && st->pending) {
            st->sending = st->pending;
            st->pending = NULL;
            st->offset = 0;
        }
        if (st->sending) {
            n = (ssize_t)copy_out(buf, max, st->sending->text + st->offset, st->sending->len - st->offset);
            st->offset += (size_t)n;
            if (st->offset == st->sending->len) {
                event_release(st->sending);
                st->sending = NULL;
                h->events_sent++;
            }
        } else if (st->keepalive_due) {
            st->keepalive_due = false;
            n = (ssize_t)copy_out(buf, max, KEEPALIVE_COMMENT, sizeof KEEPALIVE_COMMENT - 1);
        } else if (st->ending) {
            n = MHD_CONTENT_READER_END_OF_STREAM;
        } else {
            st->suspended = true;
            MHD_suspend_connection(st->connection);
            n = 0;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return n;
}

static void resume_locked(board_stream *st)
{
    if (st->suspended) {
        st->suspended = false;
        MHD_resume_connection(st->connection);
    }
}

/* The response is gone (the request ended, or it was never queued). */
static void free_stream(void *cls)
{
    board_stream *st = cls;
    board_streams *h = st->hub;
    pthread_mutex_lock(&h->lock);
    board_group *g = st->group;
    if (g) {
        if (st->prev)
            st->prev->next = st->next;
        else
            g->streams = st->next;
        if (st->next)
            st->next->prev = st->prev;
        g->nstreams--;
        h->open--;
        free_group_if_idle(h, g);
        pthread_cond_broadcast(&h->gone);
    }
    event_release(st->pending);
    event_release(st->sending);
    pthread_mutex_unlock(&h->lock);
    free(st);
}

/* ------------------------------------------------------------ opening */

bool board_streams_wanted(TDRequest *req)
{
    const char *accept = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    return accept && strcasestr(accept, "text/event-stream") != NULL;
}

void board_streams_open(board_streams *h, TDRequest *req, td_route *route)
{
    const char *body = req->out->buf;
    size_t len = req->out->len;
    uint64_t rows = rows_hash(body, len);
    char id[17];
    format_id(rows, id);
    const char *last = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, "Last-Event-ID");
    bool client_has_it = last && strcmp(last, id) == 0;
    char key[TD_MAX_ANSWER_KEY];
    size_t key_len = group_key(h->server, req, route, key, sizeof key);
    if (key_len == 0) {
        td_request_problem(req, 400, NULL, "the query is too long to be pushed (at most %d bytes of "
                                           "parameters); ask without Accept: text/event-stream",
                           TD_MAX_ANSWER_KEY);
        return;
    }
    uint64_t key_hash = fnv1a(14695981039346656037ull, key, key_len);
    board_stream *st = calloc(1, sizeof *st);
    stream_event *first = client_has_it ? NULL : event_new("board", id, body, len);
    struct MHD_Response *r =
        st && (first || client_has_it)
            ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, READ_BLOCK, read_stream, st, free_stream)
            : NULL;
    if (!r) {
        free(st);
        event_release(first);
        td_request_problem(req, 500, NULL, "out of memory opening the event stream");
        return;
    }
    st->hub = h;
    st->connection = req->connection;
    st->rows = rows;
    st->pending = first;
    pthread_mutex_lock(&h->lock);
    bool full = h->stopping || h->open >= h->max_streams;
    board_group *g = full ? NULL : find_group(h, key_hash, key, key_len);
    if (!full && !g)
        g = group_new(h, route, key, key_len, key_hash, req->nparams, req->resourceId != NULL, req->path);
    if (g) {
        st->group = g;
        st->next = g->streams;
        if (g->streams)
            g->streams->prev = st;
        g->streams = st;
        g->nstreams++;
        h->open++;
        h->opened++;
    } else {
        h->refused += full;
    }
    bool stopping = h->stopping;
    unsigned max = h->max_streams;
    pthread_mutex_unlock(&h->lock);
    if (!g) {
        MHD_destroy_response(r);   /* frees st (not linked) and the event */
        if (stopping)
            td_request_problem(req, 503, NULL, "the server is stopping");
        else if (full)
            td_request_problem(req, 503, NULL, "%u event streams are open, the most this server keeps "
                                               "(--max-streams); try again later or poll", max);
        else
            td_request_problem(req, 500, NULL, "out of memory opening the event stream");
        return;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, EVENT_STREAM_TYPE);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, TD_HEADER_NOSNIFF, "nosniff");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");   /* nginx: pass events on at once */
    MHD_add_response_header(r, MHD_HTTP_HEADER_VARY,
                            req->translations || req->alertLanguageSet ? "Accept, Accept-Language" : "Accept");
    if (req->contentLanguage)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_LANGUAGE, req->contentLanguage);
    req->ownedResponse = r;
    req->cacheSeconds = -1;
}

/* ------------------------------------------------------------ the notifier */

static void on_serving_change(void *ctx)
{
    board_streams *h = ctx;
    pthread_mutex_lock(&h->lock);
    h->changes++;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
}

/* The group's language in the dataset being served (which may have other
 * translations than the one the stream opened on: then the feed's own). */
static void take_language(TDRequest *req, const char *tag)
{
    req->translations = NULL;
    req->language = 0;
    req->contentLanguage = NULL;
    if (!tag[0] || !req->dataset)
        return;
    char why[256];
    const dataset_translations *t = dataset_translations_get(req->dataset, why, sizeof why);
    const char *const *tags;
    size_t n = t ? translations_languages(t, &tags) : 0;
    for (size_t i = 1; i < n; i++)
        if (strcasecmp(tags[i], tag) == 0) {
            req->translations = t;
            req->language = (int)i;
            req->contentLanguage = tags[i];
            return;
        }
}

/* Sends -get: to the group's resource as a request for its query would, on
 * the notifier's own TDRequest. The answer is in req (status, out). */
static void compute_board(board_streams *h, TDRequest *req, board_group *g)
{
    td_request_reset_response(req);
    req->server = h->server;
    req->connection = NULL;
    req->verb = TD_GET;
    req->method = "GET";
    req->target = g->path;
    req->path = g->path;
    req->resourceId = g->id;
    req->resourceSubId = NULL;
    memcpy(req->params, g->params, sizeof(api_param) * (size_t)g->nparams);
    req->nparams = g->nparams;
    req->body = NULL;
    req->bodyLength = 0;
    serving_view v;
    serving_acquire(h->server->state, &v);
    req->dataset = v.ds;
    req->alerts = v.alerts;
    req->realtime = v.realtime;
    req->now = (int64_t)time(NULL) / 60 * 60;
    take_language(req, g->language);
    req->alertLanguageSet = false;
    if (req->alerts && alert_view_multilingual(req->alerts)) {
        const char *const *tags;
        uint32_t ntags = alert_view_languages(req->alerts, &tags);
        td_request_rank_alert_languages(req, g->accept_language, tags, ntags);
    }
    if (!req->dataset) {
        td_request_problem(req, 503, NULL, "no dataset is loaded");
    } else {
        typedef void (*get_fn)(id, SEL, TDRequest *);
        ((get_fn)g->route->verb_imp[TD_GET])(g->route->resource, @selector(get:), req);
    }
    if (req->status >= 400 && !req->problemWritten) {
        json_reset(req->out);
        api_problem_write(&req->problem, g->path, req->out);
    }
    serving_view_release(&v);
    req->dataset = NULL;
    req->alerts = NULL;
    req->realtime = NULL;
    req->translations = NULL;
    req->language = 0;
    req->contentLanguage = NULL;
    req->alertLanguageSet = false;
}

/* The answer just computed for g, to its streams whose rows differ (hub
 * lock held). A problem ends them. */
static void deliver(board_streams *h, TDRequest *req, board_group *g)
{
    bool problem = req->status != 200;
    uint64_t rows = problem ? 0 : rows_hash(req->out->buf, req->out->len);
    stream_event *e = NULL;
    for (board_stream *st = g->streams; st; st = st->next) {
        if (st->ending || (!problem && st->rows == rows))
            continue;
        if (!e) {
            char id[17];
            format_id(rows, id);
            e = problem ? event_new("problem", NULL, req->out->buf, req->out->len)
                        : event_new("board", id, req->out->buf, req->out->len);
            if (!e)
                return;   /* out of memory: the next change tries again */
        }
        if (st->pending) {
            event_release(st->pending);   /* the client had not begun it: it gets the newer one */
            h->superseded++;
        }
        e->refs++;
        st->pending = e;
        st->rows = rows;
        st->ending = problem;
        resume_locked(st);
    }
    event_release(e);
}

static void keepalive_all(board_streams *h)
{
    for (unsigned b = 0; b < GROUP_BUCKETS; b++)
        for (board_group *g = h->buckets[b]; g; g = g->next_in_bucket)
            for (board_stream *st = g->streams; st; st = st->next) {
                st->keepalive_due = true;
                resume_locked(st);
            }
}

/* Every group recomputed once; called and returns with the hub lock held
 * (released while a board is computed). */
static void recompute_all(board_streams *h, TDRequest *req)
{
    unsigned n = h->groups, k = 0;
    if (n == 0)
        return;
    board_group **pinned = malloc(sizeof *pinned * n);
    if (!pinned)
        return;
    for (unsigned b = 0; b < GROUP_BUCKETS; b++)
        for (board_group *g = h->buckets[b]; g && k < n; g = g->next_in_bucket) {
            g->refs++;
            pinned[k++] = g;
        }
    for (unsigned i = 0; i < k; i++) {
        board_group *g = pinned[i];
        if (g->nstreams && !h->stopping) {
            pthread_mutex_unlock(&h->lock);
            compute_board(h, req, g);
            pthread_mutex_lock(&h->lock);
            h->computed++;
            if (!h->stopping)
                deliver(h, req, g);
        }
        g->refs--;
        free_group_if_idle(h, g);
    }
    free(pinned);
}

static void *notify_loop(void *arg)
{
    board_streams *h = arg;
    TDRequest *req = [[TDRequest alloc] initWithServer:h->server];
    pthread_mutex_lock(&h->lock);
    uint64_t seen = h->changes;
    int64_t minute = (int64_t)time(NULL) / 60;
    int64_t next_keepalive = monotonic_s() + h->keepalive_s;
    while (!h->stopping) {
        int64_t wall = (int64_t)time(NULL);
        int64_t to_minute = (wall / 60 + 1) * 60 - wall;
        int64_t to_keepalive = next_keepalive - monotonic_s();
        int64_t wait_s = to_minute < to_keepalive ? to_minute : to_keepalive;
        if (wait_s < 0)
            wait_s = 0;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += wait_s;
        while (!h->stopping && h->changes == seen &&
               pthread_cond_timedwait(&h->wake, &h->lock, &until) != ETIMEDOUT)
            ;
        if (h->stopping)
            break;
        int64_t now_minute = (int64_t)time(NULL) / 60;
        bool recompute = h->changes != seen || now_minute != minute;
        seen = h->changes;
        minute = now_minute;
        if (monotonic_s() >= next_keepalive) {
            next_keepalive = monotonic_s() + h->keepalive_s;
            keepalive_all(h);
        }
        if (recompute && req)
            recompute_all(h, req);
    }
    pthread_mutex_unlock(&h->lock);
    [req release];
    return NULL;
}

/* ------------------------------------------------------------ start, stop */

board_streams *board_streams_start(TDServer *server, unsigned max_streams, unsigned keepalive_s, char *err,
                                   size_t errlen)
{
    board_streams *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->server = server;
    h->max_streams = max_streams;
    h->keepalive_s = keepalive_s ? keepalive_s : 1;
    pthread_mutex_init(&h->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&h->wake, &attr);
    pthread_cond_init(&h->gone, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&h->notifier, NULL, notify_loop, h) != 0) {
        snprintf(err, errlen, "cannot start the event-stream notifier thread");
        board_streams_free(h);
        return NULL;
    }
    h->notifier_running = true;
    serving_on_change(server->state, on_serving_change, h);
    return h;
}

void board_streams_end_all(board_streams *h, unsigned max_wait_ms)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    pthread_cond_signal(&h->wake);
    for (unsigned b = 0; b < GROUP_BUCKETS; b++)
        for (board_group *g = h->buckets[b]; g; g = g->next_in_bucket)
            for (board_stream *st = g->streams; st; st = st->next) {
                st->ending = true;
                resume_locked(st);
            }
    pthread_mutex_unlock(&h->lock);
    if (h->notifier_running) {
        pthread_join(h->notifier, NULL);
        h->notifier_running = false;
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += max_wait_ms / 1000;
    until.tv_nsec += (long)(max_wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&h->lock);
    while (h->open > 0 && pthread_cond_timedwait(&h->gone, &h->lock, &until) != ETIMEDOUT)
        ;
    /* a stream still open (its client reads nothing) must not stay
     * suspended: libmicrohttpd refuses to stop with suspended connections */
    for (unsigned b = 0; b < GROUP_BUCKETS; b++)
        for (board_group *g = h->buckets[b]; g; g = g->next_in_bucket)
            for (board_stream *st = g->streams; st; st = st->next)
                resume_locked(st);
    pthread_mutex_unlock(&h->lock);
}

void board_streams_free(board_streams *h)
{
    if (!h)
        return;
    if (h->notifier_running)
        board_streams_end_all(h, 0);
    serving_on_change(h->server->state, NULL, NULL);
    /* the daemon has stopped: every stream's response was destroyed, and
     * with it every group */
    pthread_cond_destroy(&h->wake);
    pthread_cond_destroy(&h->gone);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

size_t board_streams_render_metrics(board_streams *h, char *out, size_t cap)
{
    pthread_mutex_lock(&h->lock);
    int n = snprintf(out, cap,
                     "# HELP transitd_streams_open Pushed boards (text/event-stream) open now.\n"
                     "# TYPE transitd_streams_open gauge\n"
                     "transitd_streams_open %u\n"
                     "# HELP transitd_streams_max The most pushed boards open at once (--max-streams).\n"
                     "# TYPE transitd_streams_max gauge\n"
                     "transitd_streams_max %u\n"
                     "# HELP transitd_stream_boards Distinct boards the open streams watch.\n"
                     "# TYPE transitd_stream_boards gauge\n"
                     "transitd_stream_boards %u\n"
                     "# HELP transitd_streams_opened_total Pushed boards opened.\n"
                     "# TYPE transitd_streams_opened_total counter\n"
                     "transitd_streams_opened_total %llu\n"
                     "# HELP transitd_streams_refused_total Pushed boards refused with 503 (--max-streams).\n"
                     "# TYPE transitd_streams_refused_total counter\n"
                     "transitd_streams_refused_total %llu\n"
                     "# HELP transitd_stream_events_total Board events sent whole.\n"
                     "# TYPE transitd_stream_events_total counter\n"
                     "transitd_stream_events_total %llu\n"
                     "# HELP transitd_stream_events_dropped_total Board events replaced by a newer one before "
                     "a slow client began reading them.\n"
                     "# TYPE transitd_stream_events_dropped_total counter\n"
                     "transitd_stream_events_dropped_total %llu\n"
                     "# HELP transitd_stream_boards_computed_total Boards recomputed by the notifier.\n"
                     "# TYPE transitd_stream_boards_computed_total counter\n"
                     "transitd_stream_boards_computed_total %llu\n",
                     h->open, h->max_streams, h->groups, (unsigned long long)h->opened,
                     (unsigned long long)h->refused, (unsigned long long)h->events_sent,
                     (unsigned long long)h->superseded, (unsigned long long)h->computed);
    pthread_mutex_unlock(&h->lock);
    return n > 0 ? (size_t)n : 0;
}
