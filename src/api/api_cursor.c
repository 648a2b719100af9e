/* api_cursor.c — the `cursor` of a departures board's pages and its `next` link.
 *
 * Why it exists: a board is cut at `limit`; a client pages through the rest
 * with the `next` link of each answer. The cursor in that link names the last
 * row shown by value — its instant and the strings the board orders by after
 * it (stop_id, route_short_name, trip_id) — not by position, so the next page
 * continues after that row even when a new dataset was swapped in between
 * (rows before it are never shown twice, rows after it never skipped). It
 * also counts the rows earlier pages showed at that instant, to ask the engine
 * for enough rows to step over them. The link repeats the request's other
 * parameters, `time` pinned to the instant the first page resolved; the
 * cursor is bound to them (a hash) and checked by a checksum, so a cursor
 * that was edited or sent with other parameters is a 400 naming `cursor`.
 * The cursor is opaque to clients: its layout may change with any release.
 *
 * Layout (then base64url without padding): version 1, binding (8 bytes),
 * instant (8), skip (2), then stop_id, route_short_name and trip_id each as a
 * length byte and the bytes, then a checksum (8) of all before it. Little
 * endian throughout.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "api/api_internal.h"
#include "transit/rfc3339.h"

#define CURSOR_VERSION 1
#define CURSOR_FIXED (1 + 8 + 8 + 2)
#define CURSOR_MAX_BYTES (CURSOR_FIXED + 3 * (1 + API_CURSOR_ID_MAX) + 8)

/* A hash of bytes, eight at a time (the next links are written on every cut
 * board, so this runs on the hot path): each word is folded in with a
 * multiply and a rotation; the caller finishes with mix(). */
static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h = h << 31 | h >> 33;
        p += 8;
        len -= 8;
    }
    uint64_t tail = len;
    for (size_t i = 0; i < len; i++)
        tail |= (uint64_t)p[i] << (8 * (i + 1));
    h = (h ^ tail) * 1099511628211ull;
    return h ^ (h >> 29);
}

#define FNV_OFFSET 14695981039346656037ull

/* A hash of the finished 64 bits, so neighbouring inputs do not give
 * neighbouring checksums (splitmix64's finaliser). */
static uint64_t mix(uint64_t h)
{
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

uint64_t api_board_binding(const char *endpoint, const char *id, query_kind kind, board_order order,
                           bool wheelchair, double lat, double lon, long radius, int64_t from, long window_minutes)
{
    uint64_t h = fnv1a(FNV_OFFSET, endpoint, strlen(endpoint) + 1);
    h = id ? fnv1a(h, id, strlen(id) + 1) : fnv1a(h, "", 1);
    int64_t numbers[4] = {(int64_t)kind | (int64_t)order << 8 | (int64_t)wheelchair << 16, (int64_t)radius, from,
                          (int64_t)window_minutes};
    h = fnv1a(h, numbers, sizeof numbers);
    h = fnv1a(h, &lat, sizeof lat);
    h = fnv1a(h, &lon, sizeof lon);
    return mix(h);
}

/* ------------------------------------------------------------ row keys */

/* The strings row i is ordered by after its instant (as rt_merge.c and the
 * engine's ranks order them). */
static void row_strings(const dataset *ds, const board *b, uint32_t i, const char **stop_id,
                        const char **route_short_name, const char **trip_id)
{
    const departure *d = &b->deps[i];
    stop_info s;
    route_info r;
    dataset_stop(ds, d->stop, &s);
    *stop_id = s.id;
    const rt_added_trip *added = b->rows ? b->rows[i].added : NULL;
    if (added) {
        dataset_route(ds, added->route, &r);
        *trip_id = added->trip_id;
    } else {
        trip_info t;
        dataset_trip(ds, d->trip, &t);
        dataset_route(ds, t.route, &r);
        *trip_id = t.id;
    }
    *route_short_name = r.short_name ? r.short_name : "";
}

/* The instant row i is ordered by: its scheduled one, or by prediction the
 * predicted one where the overlay predicts the row within a day
 * (board_predicted.h's rule). */
static int64_t row_instant(const board *b, uint32_t i, bool by_prediction)
{
    int64_t at = b->deps[i].instant;
    if (by_prediction) {
        rt_departure rt = board_row_rt(b, i);
        if (rt.has_prediction && !rt.canceled && rt.delay_s <= RT_OVERLAY_SLACK_MAX &&
            rt.delay_s >= -RT_OVERLAY_SLACK_MAX)
            at += rt.delay_s;
    }
    return at;
}

/* Whether row i comes at or before the cursor's row. */
static bool row_shown(const dataset *ds, const board *b, uint32_t i, bool by_prediction,
                      const board_page_key *after)
{
    int64_t at = row_instant(b, i, by_prediction);
    if (at != after->instant)
        return at < after->instant;
    const char *stop_id, *rsn, *trip_id;
    row_strings(ds, b, i, &stop_id, &rsn, &trip_id);
    int c = strcmp(stop_id, after->stop_id);
    if (!c)
        c = strcmp(rsn, after->route_short_name);
    if (!c)
        c = strcmp(trip_id, after->trip_id);
    return c <= 0;
}

uint32_t api_board_rows_shown(const dataset *ds, const board *b, bool by_prediction, const board_page_key *after)
{
    uint32_t k = 0;
    while (k < b->count && row_shown(ds, b, k, by_prediction, after))
        k++;
    return k;
}

bool api_board_key_after(const dataset *ds, const board *b, bool by_prediction, const board_page_key *previous,
                         board_page_key *out)
{
    if (b->count == 0)
        return false;
    uint32_t last = b->count - 1;
    const char *stop_id, *rsn, *trip_id;
    row_strings(ds, b, last, &stop_id, &rsn, &trip_id);
    size_t ls = strlen(stop_id), lr = strlen(rsn), lt = strlen(trip_id);
    if (ls > API_CURSOR_ID_MAX || lr > API_CURSOR_ID_MAX || lt > API_CURSOR_ID_MAX)
        return false;
    out->instant = row_instant(b, last, by_prediction);
    uint32_t same = 0;
    for (uint32_t i = b->count; i > 0 && row_instant(b, i - 1, by_prediction) == out->instant; i--)
        same++;
    if (previous && previous->instant == out->instant)
        same += previous->skip;
    out->skip = same > UINT16_MAX ? UINT16_MAX : same;
    memcpy(out->stop_id, stop_id, ls + 1);
    memcpy(out->route_short_name, rsn, lr + 1);
    memcpy(out->trip_id, trip_id, lt + 1);
    return true;
}

/* ------------------------------------------------------------ encoding */

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Two base64url characters for each 12 bits, so that a group of three bytes
 * is two look-ups and two stores (a cursor is encoded for every cut board). */
static char b64url_pairs[4096][2];
static pthread_once_t b64url_pairs_once = PTHREAD_ONCE_INIT;
static atomic_bool b64url_pairs_ready;

static void make_b64url_pairs(void)
{
    for (int v = 0; v < 4096; v++) {
        b64url_pairs[v][0] = b64url[v >> 6];
        b64url_pairs[v][1] = b64url[v & 63];
    }
    atomic_store_explicit(&b64url_pairs_ready, true, memory_order_release);
}

static size_t base64url_encode(const unsigned char *in, size_t n, char *out)
{
    if (!atomic_load_explicit(&b64url_pairs_ready, memory_order_acquire))
        pthread_once(&b64url_pairs_once, make_b64url_pairs);
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {   /* whole groups, no branch per byte */
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        memcpy(out + o, b64url_pairs[v >> 12], 2);
        memcpy(out + o + 2, b64url_pairs[v & 4095], 2);
        o += 4;
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = b64url[v >> 18];
        out[o++] = b64url[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = b64url[(v >> 6) & 63];
    }
    out[o] = '\0';
    return o;
}

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

/* Decodes into out (cap bytes); the length, or -1 when s is not base64url. */
static long base64url_decode(const char *s, unsigned char *out, size_t cap)
{
    size_t len = strlen(s), o = 0;
    if (len % 4 == 1)
        return -1;
    for (size_t i = 0; i < len; i += 4) {
        uint32_t v = 0;
        size_t chunk = len - i < 4 ? len - i : 4;
        for (size_t j = 0; j < 4; j++) {
            int x = j < chunk ? b64_value(s[i + j]) : 0;
            if (x < 0)
                return -1;
            v = v << 6 | (uint32_t)x;
        }
        size_t bytes = chunk - 1;
        if (o + bytes > cap)
            return -1;
        for (size_t j = 0; j < bytes; j++)
            out[o++] = (unsigned char)(v >> (16 - 8 * j));
    }
    return (long)o;
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static size_t put_text(unsigned char *p, const char *s)
{
    size_t n = strlen(s);
    p[0] = (unsigned char)n;
    memcpy(p + 1, s, n);
    return n + 1;
}

static size_t cursor_encode(uint64_t binding, const board_page_key *k, char *out)
{
    unsigned char raw[CURSOR_MAX_BYTES];
    size_t n = 0;
    raw[n++] = CURSOR_VERSION;
    put_u64(raw + n, binding);
    n += 8;
    put_u64(raw + n, (uint64_t)k->instant);
    n += 8;
    raw[n++] = (unsigned char)(k->skip & 0xff);
    raw[n++] = (unsigned char)(k->skip >> 8);
    n += put_text(raw + n, k->stop_id);
    n += put_text(raw + n, k->route_short_name);
    n += put_text(raw + n, k->trip_id);
    put_u64(raw + n, mix(fnv1a(FNV_OFFSET, raw, n)));
    n += 8;
    return base64url_encode(raw, n, out);
}

static bool get_text(const unsigned char *raw, size_t len, size_t *at, char *out)
{
    if (*at >= len)
        return false;
    size_t n = raw[*at];
    if (*at + 1 + n > len || memchr(raw + *at + 1, '\0', n))
        return false;
    memcpy(out, raw + *at + 1, n);
    out[n] = '\0';
    *at += 1 + n;
    return true;
}

int api_get_board_cursor(const api_request *req, uint64_t binding, int64_t from, int64_t end,
                         board_page_key *after, bool *given, api_problem *prob)
{
    const char *v = api_param_value(req, "cursor");
    *given = v != NULL;
    if (!v)
        return 0;
    unsigned char raw[CURSOR_MAX_BYTES];
    long len = strlen(v) <= (CURSOR_MAX_BYTES * 4 + 2) / 3 ? base64url_decode(v, raw, sizeof raw) : -1;
    size_t at = CURSOR_FIXED;
    if (len < CURSOR_FIXED + 3 + 8 || raw[0] != CURSOR_VERSION ||
        get_u64(raw + len - 8) != mix(fnv1a(FNV_OFFSET, raw, (size_t)len - 8)))
        return api_fail(prob, 400, "cursor", "cursor is not one this server wrote: follow the next link "
                                             "of the previous page as it is");
    size_t body = (size_t)len - 8;
    if (!get_text(raw, body, &at, after->stop_id) || !get_text(raw, body, &at, after->route_short_name) ||
        !get_text(raw, body, &at, after->trip_id) || at != body)
        return api_fail(prob, 400, "cursor", "cursor is not one this server wrote: follow the next link "
                                             "of the previous page as it is");
    after->instant = (int64_t)get_u64(raw + 9);
    after->skip = (uint32_t)raw[17] | (uint32_t)raw[18] << 8;
    if (get_u64(raw + 1) != binding)
        return api_fail(prob, 400, "cursor", "cursor belongs to a board with other parameters: keep time, "
                                             "window, kind and the place of the next link as they are");
    if (after->instant < from || after->instant >= end)
        return api_fail(prob, 400, "cursor", "cursor lies outside the board's window");
    return 0;
}

/* ------------------------------------------------------------ the next link
 *
 * Written on every cut board, so on the hot path: one pass into a fixed
 * buffer, percent-encoding by table, the cursor (base64url) copied as it is.
 * A link that would not fit (an absurdly long id or coordinate) is null. */

typedef struct link_buf {
    char *p, *end;
    bool full;
} link_buf;

/* RFC 3986 unreserved characters: copied; every other byte is %XX. */
static const unsigned char unreserved[256] = {
    ['-'] = 1, ['.'] = 1, ['_'] = 1, ['~'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1,
    ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1,
    ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1,
    ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1,
    ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

static void put_bytes(link_buf *b, const char *s, size_t n)
{
    if ((size_t)(b->end - b->p) <= n) {
        b->full = true;
        return;
    }
    memcpy(b->p, s, n);
    b->p += n;
}

static void put_encoded_n(link_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    if ((size_t)(b->end - b->p) <= 3 * n) {   /* room for the worst case, checked once */
        b->full = true;
        return;
    }
    char *p = b->p;
    for (const unsigned char *c = (const unsigned char *)s, *end = c + n; c < end; c++) {
        if (unreserved[*c]) {
            *p++ = (char)*c;
        } else {
            p[0] = '%';
            p[1] = hex[*c >> 4];
            p[2] = hex[*c & 15];
            p += 3;
        }
    }
    b->p = p;
}

static void put_encoded(link_buf *b, const char *s)
{
    put_encoded_n(b, s, strlen(s));
}

/* "&key=" (or the first "key=" after the '?') and the value, encoded; the
 * room checked once for the worst case. */
static void put_param(link_buf *b, const char *key, const char *value, bool encode)
{
    size_t kl = strlen(key), vl = strlen(value);
    if ((size_t)(b->end - b->p) <= 2 + kl + (encode ? 3 : 1) * vl) {
        b->full = true;
        return;
    }
    char *p = b->p;
    if (p[-1] != '?')
        *p++ = '&';
    for (size_t i = 0; i < kl; i++)   /* a parameter's name: a few bytes */
        p[i] = key[i];
    p += kl;
    *p++ = '=';
    b->p = p;
    if (encode) {
        put_encoded_n(b, value, vl);
    } else {
        memcpy(p, value, vl);
        b->p = p + vl;
    }
}

/* v (>= 0) in decimal; text holds 21 bytes. */
static const char *decimal(long v, char text[21])
{
    char *p = text + 20;
    *p = '\0';
    unsigned long u = v < 0 ? 0 : (unsigned long)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    return p;
}

/* The path and the kept parameters as the request gave them, then "?" or
 * "&" for what follows. */
#define KEPT_MAX 16

static void put_head(link_buf *b, const api_request *req, const board_link *link)
{
    put_bytes(b, link->path_head, strlen(link->path_head));
    if (link->id)
        put_encoded(b, link->id);
    put_bytes(b, link->path_tail, strlen(link->path_tail));
    put_bytes(b, "?", 1);
    /* the kept parameters' values in one pass over the request's (as
     * api_param_value finds them: the first of a name), written in kept's order */
    const char *values[KEPT_MAX] = {NULL};
    size_t nkept = 0;
    while (nkept < KEPT_MAX && link->kept[nkept])
        nkept++;
    for (int i = 0; i < req->nparams; i++) {
        const char *key = req->params[i].key;
        if (!key)
            continue;
        for (size_t k = 0; k < nkept; k++)
            if (!values[k] && key[0] == link->kept[k][0] && strcmp(key, link->kept[k]) == 0) {
                values[k] = req->params[i].value ? req->params[i].value : "";
                break;
            }
    }
    for (size_t k = 0; k < nkept; k++)
        if (values[k])
            put_param(b, link->kept[k], values[k], true);
}

/* `from` as the link's time value: RFC 3339 in UTC, percent-encoded
 * ("2026-11-23T12%3A00%3A00Z") into text (25 bytes). Boards are asked about
 * today: each thread keeps the date part of the last day it wrote. */
static const char *link_time(int64_t from, char text[25])
{
    /* two days: a local day spans two UTC dates */
    static _Thread_local int64_t days[2] = {INT64_MIN, INT64_MIN};
    static _Thread_local char dates[2][11];   /* YYYY-MM-DDT */
    int64_t day = from >= 0 ? from / 86400 : -((-from + 86399) / 86400);
    int slot = (int)(day & 1);
    if (day != days[slot]) {
        char plain[21];
        rfc3339_format_utc(day * 86400, plain);
        memcpy(dates[slot], plain, 11);
        days[slot] = day;
    }
    const char *date = dates[slot];
    uint32_t sod = (uint32_t)(from - day * 86400);
    char *p = text;
    memcpy(p, date, 11);
    p = json_put_2digits(p + 11, sod / 3600);
    p = JSON_PUT_LITERAL(p, "%3A");
    p = json_put_2digits(p, sod / 60 % 60);
    p = JSON_PUT_LITERAL(p, "%3A");
    p = json_put_2digits(p, sod % 60);
    p[0] = 'Z';
    p[1] = '\0';
    return text;
}

static void write_link(json_writer *w, char *url, const link_buf *b)
{
    if (b->full) {
        json_kv_null(w, "next");   /* a path or parameter too long to repeat */
        return;
    }
    json_key(w, "next");
    json_string_plain(w, url, (size_t)(b->p - url));   /* percent-encoded: nothing to escape */
}

void api_write_board_next(json_writer *w, const api_request *req, const board_link *link, int64_t from,
                          long window_minutes, long limit, uint64_t binding, const board_page_key *last)
{
    char url[API_NEXT_LINK_MAX];
    link_buf b = {url, url + sizeof url, false};
    put_head(&b, req, link);
    char text[32];
    put_param(&b, "time", link_time(from, text), false);   /* encoded already */
    put_param(&b, "window", decimal(window_minutes, text), false);
    put_param(&b, "limit", decimal(limit, text), false);
    char cursor[(CURSOR_MAX_BYTES * 4 + 2) / 3 + 1];
    cursor_encode(binding, last, cursor);
    put_param(&b, "cursor", cursor, false);   /* base64url: unreserved only */
    write_link(w, url, &b);
}

/* ------------------------------------------------------------ list pages
 *
 * A list (stops near a point, a stop search, routes, agencies) pages by
 * position: its order is the dataset's, so a cursor is good only for the
 * dataset it was written with, and answers 410 Gone after a swap. Layout:
 * version 2, the parameters' hash (8), the dataset version's hash (8), the
 * offset (4), a checksum (8).
 */
#define LIST_CURSOR_VERSION 2
#define LIST_CURSOR_BYTES (1 + 8 + 8 + 4 + 8)

/* The request's parameters but cursor and limit, in any order. */
static uint64_t list_params_hash(const char *endpoint, const char *id, const api_request *req)
{
    uint64_t h = fnv1a(FNV_OFFSET, endpoint, strlen(endpoint) + 1);
    h = id ? fnv1a(h, id, strlen(id) + 1) : h;
    uint64_t pairs = 0;
    for (int i = 0; i < req->nparams; i++) {
        const api_param *p = &req->params[i];
        if (strcmp(p->key, "cursor") == 0 || strcmp(p->key, "limit") == 0)
            continue;
        uint64_t x = fnv1a(FNV_OFFSET, p->key, strlen(p->key) + 1);
        pairs += mix(fnv1a(x, p->value, strlen(p->value)));
    }
    return mix(fnv1a(h, &pairs, sizeof pairs));
}

static uint64_t dataset_hash(const dataset *ds)
{
    const char *v = dataset_version(ds);
    return mix(fnv1a(FNV_OFFSET, v, strlen(v)));
}

int api_get_list_cursor(const api_request *req, const dataset *ds, const char *endpoint, uint32_t *offset,
                        api_problem *prob)
{
    *offset = 0;
    const char *v = api_param_value(req, "cursor");
    if (!v)
        return 0;
    unsigned char raw[LIST_CURSOR_BYTES];
    long len = strlen(v) <= (LIST_CURSOR_BYTES * 4 + 2) / 3 ? base64url_decode(v, raw, sizeof raw) : -1;
    if (len != LIST_CURSOR_BYTES || raw[0] != LIST_CURSOR_VERSION ||
        get_u64(raw + len - 8) != mix(fnv1a(FNV_OFFSET, raw, (size_t)len - 8)))
        return api_fail(prob, 400, "cursor", "cursor is not one this server wrote: follow the next link "
                                             "of the previous page as it is");
    if (get_u64(raw + 1) != list_params_hash(endpoint, req->id, req))
        return api_fail(prob, 400, "cursor", "cursor belongs to a list with other parameters: keep those "
                                             "of the next link as they are");
    if (get_u64(raw + 9) != dataset_hash(ds))
        return api_fail(prob, 410, "cursor", "the list's dataset was replaced since this cursor was "
                                             "written: start again without cursor");
    *offset = (uint32_t)raw[17] | (uint32_t)raw[18] << 8 | (uint32_t)raw[19] << 16 | (uint32_t)raw[20] << 24;
    return 0;
}

void api_write_list_next(json_writer *w, const api_request *req, const dataset *ds, const board_link *link,
                         const char *endpoint, long limit, uint32_t offset)
{
    unsigned char raw[LIST_CURSOR_BYTES];
    raw[0] = LIST_CURSOR_VERSION;
    put_u64(raw + 1, list_params_hash(endpoint, req->id, req));
    put_u64(raw + 9, dataset_hash(ds));
    for (int i = 0; i < 4; i++)
        raw[17 + i] = (unsigned char)(offset >> (8 * i));
    put_u64(raw + 21, mix(fnv1a(FNV_OFFSET, raw, 21)));
    char cursor[(LIST_CURSOR_BYTES * 4 + 2) / 3 + 1];
    base64url_encode(raw, sizeof raw, cursor);
    char url[API_NEXT_LINK_MAX], text[32];
    link_buf b = {url, url + sizeof url, false};
    put_head(&b, req, link);
    put_param(&b, "limit", decimal(limit, text), false);
    put_param(&b, "cursor", cursor, false);
    write_link(w, url, &b);
}

void api_write_next_after(json_writer *w, const api_request *req, const board_link *link, long limit,
                          const char *after)
{
    char url[API_NEXT_LINK_MAX], text[32];
    link_buf b = {url, url + sizeof url, false};
    put_head(&b, req, link);
    put_param(&b, "limit", decimal(limit, text), false);
    put_param(&b, "after", after, true);
    write_link(w, url, &b);
}
