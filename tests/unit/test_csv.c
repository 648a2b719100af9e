/* test_csv.c — the streaming CSV reader and its parallel form.
 *
 * Most tests compare a transcript: every delivered row written out as
 * "line|field|field...\n" (with "<absent>" and a leading '"' for quoted
 * fields). The same input must give the same transcript however it is cut
 * into chunks, and csv_parse_parallel must give it too.
 */
#include "test_support.h"

#include <stdbool.h>

#include "transit/csv.h"
#include "base/csv_internal.h"   /* the plain splitter's state, for one test */

/* ------------------------------------------------------------ transcripts */

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

typedef struct rec {
    sbuf out;
    int nkeys;
    int stop_after;   /* stop (return -100) after this many rows; 0 = never */
    int rows;
} rec;

static int record_row(void *ctx, const csv_field *f, uint64_t line)
{
    rec *r = ctx;
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)line);
    sb_puts(&r->out, num);
    for (int k = 0; k < r->nkeys; k++) {
        sb_puts(&r->out, "|");
        assert_non_null(f[k].ptr);
        if (f[k].flags & CSV_FIELD_ABSENT) {
            assert_int_equal(f[k].len, 0);
            sb_puts(&r->out, "<absent>");
        } else {
            if (f[k].flags & CSV_FIELD_QUOTED)
                sb_puts(&r->out, "\"");
            sb_put(&r->out, f[k].ptr, f[k].len);
        }
    }
    sb_puts(&r->out, "\n");
    r->rows++;
    if (r->stop_after && r->rows == r->stop_after)
        return -100;
    return 0;
}

/* Parses `in` cut into chunks of `chunk` bytes (0: one chunk). Returns the
 * transcript (caller frees) and the result code in *rc_out. */
static char *parse_chunked(const char *in, size_t len, const char *const *keys, int nkeys,
                           size_t chunk, int *rc_out, csv_error *err)
{
    rec r = { .nkeys = nkeys };
    sb_puts(&r.out, "");
    csv_parser *p = csv_open("t.txt", keys, nkeys, record_row, &r);
    assert_non_null(p);
    int rc = 0;
    if (chunk == 0)
        chunk = len ? len : 1;
    for (size_t at = 0; at < len && !rc; at += chunk) {
        /* a private copy per chunk, freed at once: views must not outlive it */
        size_t n = len - at < chunk ? len - at : chunk;
        char *c = malloc(n);
        memcpy(c, in + at, n);
        rc = csv_feed(p, c, n);
        free(c);
    }
    if (!rc)
        rc = csv_finish(p);
    if (err)
        *err = *csv_last_error(p);
    csv_close(p);
    *rc_out = rc;
    return r.out.p;
}

static char *parse_ok(const char *in, const char *const *keys, int nkeys)
{
    int rc;
    char *t = parse_chunked(in, strlen(in), keys, nkeys, 0, &rc, NULL);
    assert_int_equal(rc, 0);
    return t;
}

static void expect(const char *in, const char *const *keys, int nkeys, const char *want)
{
    char *t = parse_ok(in, keys, nkeys);
    assert_string_equal(t, want);
    /* and the same for every small chunk size */
    for (size_t chunk = 1; chunk <= 9; chunk++) {
        int rc;
        char *u = parse_chunked(in, strlen(in), keys, nkeys, chunk, &rc, NULL);
        assert_int_equal(rc, 0);
        assert_string_equal(u, want);
        free(u);
    }
    free(t);
}

/* ------------------------------------------------------------ syntax */

static const char *const K2[] = { "stop_id", "stop_name" };

static void test_header_order_and_absent(void **state)
{
    (void)state;
    const char *const keys[] = { "b", "missing", "a" };
    expect("a,b,c\n1,2,3\n4,5,6\n", keys, 3, "2|2|<absent>|1\n3|5|<absent>|4\n");

    rec r = { .nkeys = 3 };
    csv_parser *p = csv_open("t.txt", keys, 3, record_row, &r);
    assert_false(csv_header_seen(p));
    assert_int_equal(csv_feed(p, "c,a\n", 4), 0);
    assert_true(csv_header_seen(p));
    assert_false(csv_has_column(p, 0));
    assert_false(csv_has_column(p, 1));
    assert_true(csv_has_column(p, 2));
    assert_false(csv_has_column(p, 3));
    assert_int_equal(csv_finish(p), 0);
    assert_int_equal(csv_rows(p), 0);
    assert_int_equal(csv_bytes(p), 4);
    csv_close(p);
    free(r.out.p);
}

static void test_quotes(void **state)
{
    (void)state;
    expect("stop_id,stop_name\n"
           "1,\"Main St, North\"\n"
           "2,\"say \"\"hi\"\"\"\n"
           "\"3\",\"\"\n"
           "4,\"two\nlines\"\n"
           "5,\"\"\"\"\n"
           "6,x\n",
           K2, 2,
           "2|1|\"Main St, North\n"
           "3|2|\"say \"hi\"\n"
           "4|\"3|\"\n"
           "5|4|\"two\nlines\n"
           "7|5|\"\"\n"
           "8|6|x\n");
    /* several doubled-quote fields in one record keep their own bytes */
    const char *const keys[] = { "a", "b", "c" };
    expect("a,b,c\n\"x\"\"1\",\"y\"\"2\",\"z\"\"3\"\n", keys, 3,
           "2|\"x\"1|\"y\"2|\"z\"3\n");
}

static void test_line_ends(void **state)
{
    (void)state;
    expect("stop_id,stop_name\r\n1,a\r\n2,b\r\n", K2, 2, "2|1|a\n3|2|b\n");
    expect("stop_id,stop_name\r1,a\r2,b\r", K2, 2, "2|1|a\n3|2|b\n");
    expect("stop_id,stop_name\n1,a\r\n2,b\r3,c\n4,d", K2, 2, "2|1|a\n3|2|b\n4|3|c\n5|4|d\n");
    /* blank lines are skipped but counted */
    expect("\n\nstop_id,stop_name\n\n1,a\r\n\r\n  \n2,b\n\n", K2, 2, "5|1|a\n8|2|b\n");
    /* CRLF inside quotes is one physical line */
    expect("stop_id,stop_name\r\n1,\"x\r\ny\r\nz\"\r\n2,b\r\n", K2, 2, "2|1|\"x\r\ny\r\nz\n5|2|b\n");
    /* a lone CR inside quotes too */
    expect("stop_id,stop_name\n1,\"x\ry\"\n2,b\n", K2, 2, "2|1|\"x\ry\n4|2|b\n");
}

static void test_bom(void **state)
{
    (void)state;
    expect("\xEF\xBB\xBFstop_id,stop_name\n1,a\n", K2, 2, "2|1|a\n");
    expect("\xEF\xBB\xBF\"stop_id\",stop_name\n1,a\n", K2, 2, "2|1|a\n");
    /* a BOM-like prefix that is not a BOM stays data (here in a header name) */
    const char *const keys[] = { "\xEF\xBBx" };
    expect("\xEF\xBBx\n1\n", keys, 1, "2|1\n");
}

static void test_trim(void **state)
{
    (void)state;
    expect("  stop_id , stop_name\t\n 1 ,\t a b \n  \" q \" , 2\n", K2, 2,
           "2|1|a b\n3|\" q |2\n");
}

static void test_short_and_long_rows(void **state)
{
    (void)state;
    const char *const keys[] = { "a", "c" };
    /* the short record on line 2 is rejected, not padded; extra fields are ignored */
    expect("a,b,c\n1\n1,2,3,4,5\n,,\n", keys, 2, "3|1|3\n4||\n");
}

typedef struct rejects {
    int n;
    csv_error first[4];
} rejects;

static void on_reject(void *ctx, const csv_error *e)
{
    rejects *r = ctx;
    if (r->n < 4)
        r->first[r->n] = *e;
    r->n++;
}

/* Parses `in` in one chunk with a reject callback; returns the transcript. */
static char *parse_rejecting(const char *in, size_t len, const char *const *keys, int nkeys,
                             rejects *rj, uint64_t *rejected)
{
    rec r = { .nkeys = nkeys };
    sb_puts(&r.out, "");
    csv_parser *p = csv_open("stops.txt", keys, nkeys, record_row, &r);
    assert_non_null(p);
    csv_set_reject_fn(p, on_reject, rj);
    assert_int_equal(csv_feed(p, in, len), 0);
    assert_int_equal(csv_finish(p), 0);
    *rejected = csv_rejected_rows(p);
    csv_close(p);
    return r.out.p;
}

static void test_short_row_is_rejected_with_file_line_and_counts(void **state)
{
    (void)state;
    const char *const keys[] = { "stop_id", "stop_name" };
    const char in[] = "stop_id,stop_name,stop_lat,stop_lon\n"
                      "A,Alpha,1,2\n"
                      "B,Beta\n"                  /* line 3: 2 of 4 fields */
                      "\"C\nc\",Gamma,1\n"          /* lines 4-5: 3 of 4 */
                      "D,Delta,1,2";
    rejects rj = { 0 };
    uint64_t rejected;
    char *t = parse_rejecting(in, sizeof in - 1, keys, 2, &rj, &rejected);
    assert_string_equal(t, "2|A|Alpha\n6|D|Delta\n");   /* later lines keep their numbers */
    free(t);
    assert_int_equal(rejected, 2);
    assert_int_equal(rj.n, 2);
    assert_string_equal(rj.first[0].file, "stops.txt");
    assert_int_equal(rj.first[0].line, 3);
    assert_int_equal(rj.first[0].column, 2);
    assert_string_equal(rj.first[0].message, "row has 2 field(s), the header has 4; row skipped");
    assert_int_equal(rj.first[1].line, 4);
    assert_string_equal(rj.first[1].message, "row has 3 field(s), the header has 4; row skipped");
}

static void test_nul_byte_in_a_key_field_is_rejected(void **state)
{
    (void)state;
    const char *const keys[] = { "stop_id", "stop_name" };
    /* NUL inside a quoted and an unquoted key field, and in a column nobody reads */
    const char in[] = "stop_id,stop_name,stop_desc\n"
                      "A,Al\0pha,x\n"
                      "B,\"Be\0ta\",x\n"
                      "C,Gamma,de\0sc\n"
                      "D\0,Delta,x\n";
    rejects rj = { 0 };
    uint64_t rejected;
    char *t = parse_rejecting(in, sizeof in - 1, keys, 2, &rj, &rejected);
    assert_string_equal(t, "4|C|Gamma\n");
    free(t);
    assert_int_equal(rejected, 3);
    assert_int_equal(rj.first[0].line, 2);
    assert_int_equal(rj.first[0].column, 2);
    assert_string_equal(rj.first[0].message, "NUL byte in field 'stop_name'; row skipped");
    assert_int_equal(rj.first[1].line, 3);
    assert_int_equal(rj.first[2].line, 5);
    assert_int_equal(rj.first[2].column, 1);
    assert_string_equal(rj.first[2].message, "NUL byte in field 'stop_id'; row skipped");
}

static void test_duplicate_header(void **state)
{
    (void)state;
    const char *const keys[] = { "a" };
    expect("a,a\n1,2\n", keys, 1, "2|1\n");
}

static void test_literal_quote_in_unquoted_field(void **state)
{
    (void)state;
    expect("stop_id,stop_name\n1,12\" pipe\n2,a\"b\"c\n", K2, 2, "2|1|12\" pipe\n3|2|a\"b\"c\n");
}

static void test_empty_and_header_only(void **state)
{
    (void)state;
    char *t = parse_ok("", K2, 2);
    assert_string_equal(t, "");
    free(t);
    rec r = { .nkeys = 2 };
    csv_parser *p = csv_open("t.txt", K2, 2, record_row, &r);
    assert_int_equal(csv_finish(p), 0);
    assert_false(csv_header_seen(p));
    assert_false(csv_has_column(p, 0));
    csv_close(p);

    p = csv_open("t.txt", K2, 2, record_row, &r);
    assert_int_equal(csv_feed(p, "stop_id", 7), 0);
    assert_false(csv_header_seen(p));
    assert_int_equal(csv_finish(p), 0);
    assert_true(csv_header_seen(p));
    assert_true(csv_has_column(p, 0));
    assert_false(csv_has_column(p, 1));
    csv_close(p);
    free(r.out.p);
}

static void expect_error(const char *in, const char *const *keys, int nkeys, int code,
                         uint64_t line, uint32_t column, const char *msg_part)
{
    for (size_t chunk = 0; chunk <= 5; chunk++) {
        int rc;
        csv_error err;
        char *t = parse_chunked(in, strlen(in), keys, nkeys, chunk, &rc, &err);
        free(t);
        assert_int_equal(rc, code);
        assert_string_equal(err.file, "t.txt");
        assert_int_equal(err.line, line);
        assert_int_equal(err.column, column);
        if (!strstr(err.message, msg_part))
            fail_msg("message '%s' lacks '%s'", err.message, msg_part);
    }
}

static void test_syntax_errors(void **state)
{
    (void)state;
    expect_error("stop_id,stop_name\n1,a\n2,\"open\n3,c\n", K2, 2, CSV_ERR_SYNTAX, 3, 2,
                 "unterminated");
    expect_error("stop_id,stop_name\n1,a\n\"2\"x,b\n", K2, 2, CSV_ERR_SYNTAX, 3, 1,
                 "after a closing quote");
    /* the error's line is where its record starts, even a multi-line one */
    expect_error("stop_id,stop_name\n0,z\n1,\"a\nb\"c\n", K2, 2, CSV_ERR_SYNTAX, 3, 2, "'c'");
}

static void test_utf8(void **state)
{
    (void)state;
    /* valid multi-byte text passes */
    expect("stop_id,stop_name\n1,Gare Saint-J\xC3\xA9r\xC3\xB4me \xE2\x80\x94 \xF0\x9F\x9A\x8C\n", K2,
           2, "2|1|Gare Saint-J\xC3\xA9r\xC3\xB4me \xE2\x80\x94 \xF0\x9F\x9A\x8C\n");
    /* invalid bytes in a column nobody asked for are not looked at */
    const char *const keys[] = { "stop_id" };
    expect("stop_id,stop_name\n1,caf\xE9\n", keys, 1, "2|1\n");
    /* but in a key field they are an error naming line and column */
    expect_error("x,stop_name,stop_id\n1,ok,2\n1,caf\xE9,2\n", K2, 2, CSV_ERR_UTF8, 3, 2,
                 "stop_name");
    expect_error("stop_id,stop_name\n1,\"a\"\"\xC0\x80\"\n", K2, 2, CSV_ERR_UTF8, 2, 2, "UTF-8");
    /* overlong, surrogate, truncated, beyond U+10FFFF */
    const char *bad[] = { "\xC1\xBF", "\xE0\x80\x80", "\xED\xA0\x80", "\xE2\x82", "\xF4\x90\x80\x80",
                          "\xFF" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char in[64];
        snprintf(in, sizeof in, "stop_id,stop_name\n1,a%sb\n", bad[i]);
        expect_error(in, K2, 2, CSV_ERR_UTF8, 2, 2, "stop_name");
    }
}

static void test_callback_stop(void **state)
{
    (void)state;
    rec r = { .nkeys = 2, .stop_after = 2 };
    csv_parser *p = csv_open("t.txt", K2, 2, record_row, &r);
    const char *in = "stop_id,stop_name\n1,a\n2,b\n3,c\n";
    assert_int_equal(csv_feed(p, in, strlen(in)), -100);
    assert_int_equal(csv_feed(p, "4,d\n", 4), -100);   /* sticky */
    assert_int_equal(csv_finish(p), -100);
    assert_int_equal(csv_rows(p), 2);
    assert_int_equal(csv_last_error(p)->line, 3);
    assert_non_null(strstr(csv_last_error(p)->message, "callback"));
    csv_close(p);
    assert_string_equal(r.out.p, "2|1|a\n3|2|b\n");
    free(r.out.p);
}

/* A record straddling chunks is delivered once, whole, with the right line. */
static void test_long_record_across_chunks(void **state)
{
    (void)state;
    size_t n = 100000;
    char *big = malloc(n + 64);
    strcpy(big, "stop_id,stop_name\n1,\"");
    size_t at = strlen(big);
    for (size_t i = 0; i < n - 100; i++)
        big[at++] = (i % 1000 == 999) ? '\n' : (char)('a' + i % 26);
    strcpy(big + at, "\"\n2,b\n");
    int rc;
    char *whole = parse_chunked(big, strlen(big), K2, 2, 0, &rc, NULL);
    assert_int_equal(rc, 0);
    char *cut = parse_chunked(big, strlen(big), K2, 2, 4093, &rc, NULL);
    assert_int_equal(rc, 0);
    assert_string_equal(whole, cut);
    char want[32];
    snprintf(want, sizeof want, "\n%zu|2|b\n", 3 + (n - 100) / 1000);
    assert_non_null(strstr(whole, want));
    free(whole);
    free(cut);
    free(big);
}

/* A small input with every feature, cut in two at every byte position. */
static void test_every_split_position(void **state)
{
    (void)state;
    const char in[] = "\xEF\xBB\xBF trip_id ,\"stop_name\",x\r\n"
                      "\r\n"
                      "T1, \"a, \"\"b\"\"\" ,1\r\n"
                      "T2,\"two\r\nlines\",\"x\"\"\"\r"
                      "T3,  plain  ,12\" pipe\n"
                      "\"T4\",\"\",\n"
                      "T5,caf\xC3\xA9,\n"
                      "T6,\"\"\"\",\r\n"
                      "T7,last,";
    const char *const keys[] = { "stop_name", "trip_id" };
    size_t len = sizeof in - 1;
    int rc;
    char *want = parse_chunked(in, len, keys, 2, 0, &rc, NULL);
    assert_int_equal(rc, 0);
    assert_string_equal(want, "3|\"a, \"b\"|T1\n"
                              "4|\"two\r\nlines|T2\n"
                              "6|plain|T3\n"
                              "7|\"|\"T4\n"
                              "8|caf\xC3\xA9|T5\n"
                              "9|\"\"|T6\n"
                              "10|last|T7\n");
    for (size_t k = 0; k <= len; k++) {
        rec r = { .nkeys = 2 };
        sb_puts(&r.out, "");
        csv_parser *p = csv_open("t.txt", keys, 2, record_row, &r);
        char *a = malloc(k + 1), *b = malloc(len - k + 1);
        memcpy(a, in, k);
        memcpy(b, in + k, len - k);
        assert_int_equal(csv_feed(p, a, k), 0);
        memset(a, '#', k);   /* the parser must not keep pointers into a chunk */
        assert_int_equal(csv_feed(p, b, len - k), 0);
        assert_int_equal(csv_finish(p), 0);
        if (strcmp(r.out.p, want) != 0)
            fail_msg("split at %zu gives:\n%s", k, r.out.p);
        assert_int_equal(csv_bytes(p), len);
        assert_int_equal(csv_rows(p), 7);
        csv_close(p);
        free(a);
        free(b);
        free(r.out.p);
    }
    free(want);
}

/* ------------------------------------------------------------ a tricky corpus */

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

/* Writes ~`target` bytes of valid CSV with every feature: quotes, doubled
 * quotes, separators and line breaks in quotes, literal quotes in unquoted
 * fields, blank lines, CRLF/LF/CR, blanks around fields, short rows,
 * non-ASCII text. */
static char *tricky_corpus(size_t target, size_t *len_out)
{
    sbuf b = { 0 };
    sb_puts(&b, "\xEF\xBB\xBFtrip_id, stop_name ,\"arrival_time\",extra,stop_sequence\r\n");
    static const char *const ends[] = { "\n", "\r\n", "\r" };
    static const char *const names[] = {
        "Main St", "\"Main St, North\"", "\"say \"\"hi\"\"\"", "\"two\nlines\"", "12\" pipe",
        "  padded  ", "\"\"", "", "Gare J\xC3\xA9r\xC3\xB4me", "\"cr\r\nlf\"", "\"\"\"\"",
        "\" \"\" , \"\" \"", "a\"b", "\"x\ry\"",
    };
    unsigned n = 0;
    while (b.len < target) {
        char row[256];
        unsigned r = rnd();
        const char *end = ends[r % 3];
        if (r % 97 == 0) {
            sb_puts(&b, end);   /* a blank line */
            continue;
        }
        const char *name = names[(r >> 4) % (sizeof names / sizeof *names)];
        char id[32];
        snprintf(id, sizeof id, (r & 0x200) ? "%s\"T%u\"" : "%sT%u", (r & 0x100) ? " " : "", n);
        if (r % 53 == 0)
            snprintf(row, sizeof row, "%s,%s%s", id, name, end);   /* a short row */
        else
            snprintf(row, sizeof row, "%s,%s,%02u:%02u:00,\"e,%u\",%u%s", id, name, (r >> 10) % 30,
                     (r >> 15) % 60, r % 7, n % 50, end);
        sb_puts(&b, row);
        n++;
    }
    *len_out = b.len;
    return b.p;
}

static const char *const KT[] = { "stop_sequence", "trip_id", "stop_name", "arrival_time",
                                  "not_there" };

static void test_chunking_invariance(void **state)
{
    (void)state;
    size_t len;
    char *in = tricky_corpus(40000, &len);
    int rc;
    char *whole = parse_chunked(in, len, KT, 5, 0, &rc, NULL);
    assert_int_equal(rc, 0);
    assert_true(strlen(whole) > 20000);
    assert_non_null(strstr(whole, "|\"say \"hi\"|"));
    for (size_t chunk = 1; chunk < 70; chunk += (chunk < 10 ? 1 : 7)) {
        char *t = parse_chunked(in, len, KT, 5, chunk, &rc, NULL);
        assert_int_equal(rc, 0);
        if (strcmp(t, whole) != 0)
            fail_msg("chunk size %zu gives another transcript", chunk);
        free(t);
    }
    free(whole);
    free(in);
}

/* ------------------------------------------------------------ plain rows (csv_plain.c) */

static void record_reject(void *ctx, const csv_error *e)
{
    rec *r = ctx;
    char msg[256];
    snprintf(msg, sizeof msg, "reject %llu:%u %s\n", (unsigned long long)e->line, e->column, e->message);
    sb_puts(&r->out, msg);
}

/* The transcript (rows, rejects, the result and its error) of `in` cut into
 * chunks of `chunk` bytes, with or without the plain-row splitter. */
static char *transcript(const char *in, size_t len, const char *const *keys, int nkeys, size_t chunk,
                        bool plain, int stop_after)
{
    rec r = { .nkeys = nkeys, .stop_after = stop_after };
    sb_puts(&r.out, "");
    csv_parser *p = csv_open("calendar_dates.txt", keys, nkeys, record_row, &r);
    assert_non_null(p);
    csv_set_reject_fn(p, record_reject, &r);
    if (plain)
        csv_prefer_plain(p);
    int rc = 0;
    for (size_t at = 0; at < len && !rc; at += chunk) {
        size_t n = len - at < chunk ? len - at : chunk;
        char *c = malloc(n);
        memcpy(c, in + at, n);
        rc = csv_feed(p, c, n);
        free(c);
    }
    if (!rc)
        rc = csv_finish(p);
    const csv_error *e = csv_last_error(p);
    char end[512];
    snprintf(end, sizeof end, "rc %d rows %llu rejected %llu; %s:%llu:%u %s\n", rc,
             (unsigned long long)csv_rows(p), (unsigned long long)csv_rejected_rows(p), e->file,
             (unsigned long long)e->line, e->column, e->message);
    sb_puts(&r.out, end);
    csv_close(p);
    return r.out.p;
}

static const char *const CD_KEYS[] = { "service_id", "date", "exception_type", "absent" };

/* Every row the plain splitter takes or leaves gives what the full reader
 * gives: plain rows, then each kind it must leave (a quote, blanks, a tab,
 * UTF-8, a lone CR, CRLF, a blank line, a short row, an extra field, a NUL,
 * an empty field), at every chunk size from 1 byte; then invalid UTF-8 (an
 * error with its line and column) and a callback's stop. */
static void test_plain_rows_as_the_full_reader(void **state)
{
    (void)state;
    static const char body[] =
        "date,exception_type,service_id\n"
        "20260105,1,D1\n20260106,1,D1\n20260107,2,D1\n"
        "20260105,1,\"D,2\"\n"
        " 20260105 ,1,D3\n"
        "20260105,\t1,D4\n"
        "20260105,1,S\xC3\xBC" "d\n"
        "20260105,1,D5\r"
        "20260106,1,D5\r\n"
        "\n\r\n"
        "20260105,1\n"
        "20260105,1,D6,extra,more\n"
        "20260105,1,D\0007\n"
        "20260105,,D8\n"
        ",,\n"
        "20260105,1,a\"b\n"
        "20260109,1,D9";                       /* no final line end */
    size_t len = sizeof body - 1;
    char *want = transcript(body, len, CD_KEYS, 4, len, false, 0);
    assert_non_null(strstr(want, "rc 0 rows 14 rejected 2"));
    for (size_t chunk = 1; chunk <= len; chunk += chunk < 40 ? 1 : 13) {
        char *got = transcript(body, len, CD_KEYS, 4, chunk, true, 0);
        if (strcmp(got, want) != 0)
            fail_msg("chunk %zu:\n%s\nwanted:\n%s", chunk, got, want);
        free(got);
    }
    free(want);

    static const char bad[] = "service_id,date,exception_type\nD1,20260105,1\nD\xFF,20260105,1\nD2,20260105,1\n";
    want = transcript(bad, sizeof bad - 1, CD_KEYS, 3, sizeof bad - 1, false, 0);
    assert_non_null(strstr(want, "calendar_dates.txt:3:1 invalid UTF-8 in field 'service_id'"));
    char *got = transcript(bad, sizeof bad - 1, CD_KEYS, 3, 7, true, 0);
    assert_string_equal(got, want);
    free(got);
    free(want);

    static const char three[] = "service_id,date,exception_type\nA,1,1\nB,2,1\nC,3,1\n";
    want = transcript(three, sizeof three - 1, CD_KEYS, 3, sizeof three - 1, false, 2);
    assert_non_null(strstr(want, "rc -100 rows 2"));
    got = transcript(three, sizeof three - 1, CD_KEYS, 3, sizeof three - 1, true, 2);
    assert_string_equal(got, want);
    free(got);
    free(want);
}

/* stop_times.txt rows are long (about 70 bytes): the splitter takes them
 * sixteen bytes at a time. Each byte it must leave to the full reader (a
 * quote, a blank, a tab, a DEL, a byte above 0x7F, a lone CR, a NUL) and
 * each it takes (a comma, CRLF) is put at every place of a long row in turn,
 * so it falls at every lane of a block and on block edges; the transcripts
 * must be the full reader's, whole and cut in chunks. */
static void test_plain_long_rows_every_lane(void **state)
{
    (void)state;
    static const char *const ST_KEYS[] = { "trip_id", "stop_id", "stop_sequence", "arrival_time", "departure_time" };
    static const char header[] = "trip_id,arrival_time,departure_time,stop_id,stop_sequence,pickup_type\n";
    static const char row[] = "r000:1000001,04:30:00,04:30:00,r000:de:11000:900100001::1,1,0\n";
    static const char specials[] = { '"', ' ', '\t', 0x7F, (char)0xC3, '\r', '\0', ',' };
    size_t hl = sizeof header - 1, rl = sizeof row - 1;
    char *buf = malloc(hl + 4 * rl + 8);
    assert_non_null(buf);
    for (size_t k = 0; k < sizeof specials; k++) {
        for (size_t at = 0; at + 1 < rl; at++) {
            memcpy(buf, header, hl);
            size_t len = hl;
            for (int r = 0; r < 3; r++) {   /* a plain row, the changed one, a plain row */
                memcpy(buf + len, row, rl);
                if (r == 1) {
                    buf[len + at] = specials[k];
                    if (specials[k] == (char)0xC3)
                        buf[len + at + 1] = (char)0xBC;   /* valid UTF-8: u with umlaut */
                }
                len += rl;
            }
            if (k == 0 && at == 0) {   /* and CRLF line ends */
                memcpy(buf + len - 1, "\r\n", 2);
                len++;
            }
            char *want = transcript(buf, len, ST_KEYS, 5, len, false, 0);
            static const size_t chunks[] = { 1, 7, 16, 17, 64, 1 << 20 };
            for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
                char *got = transcript(buf, len, ST_KEYS, 5, chunks[c], true, 0);
                if (strcmp(got, want) != 0)
                    fail_msg("byte 0x%02x at %zu, chunk %zu:\n%s\nwanted:\n%s", (unsigned char)specials[k], at,
                             chunks[c], got, want);
                free(got);
            }
            free(want);
        }
    }
    free(buf);
}

/* A file of rows that are mostly not plain (a stop_headsign with blanks)
 * stops trying the splitter after a few hundred, and the plain rows after
 * them still give what the full reader gives. */
static void test_plain_given_up_on_mostly_other_rows(void **state)
{
    (void)state;
    static const char *const ST_KEYS[] = { "trip_id", "stop_id", "stop_headsign" };
    size_t cap = 2000 * 64, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    len += (size_t)snprintf(buf + len, cap - len, "trip_id,stop_id,stop_headsign\n");
    for (int i = 0; i < 1500; i++)   /* 1,000 rows with a blank, then 500 plain ones */
        len += (size_t)snprintf(buf + len, cap - len, i < 1000 ? "T%d,S%d,Via Roma %d\n" : "T%d,S%d,Head%d\n", i,
                                i % 37, i % 5);
    char *want = transcript(buf, len, ST_KEYS, 3, len, false, 0);
    assert_non_null(strstr(want, "rc 0 rows 1500 rejected 0"));
    char *got = transcript(buf, len, ST_KEYS, 3, 4096, true, 0);
    assert_string_equal(got, want);
    free(got);
    rec r = { .nkeys = 3 };
    sb_puts(&r.out, "");
    csv_parser *p = csv_open("stop_times.txt", ST_KEYS, 3, record_row, &r);
    assert_non_null(p);
    csv_prefer_plain(p);
    assert_int_equal(csv_feed(p, buf, len), 0);
    assert_int_equal(csv_finish(p), 0);
    assert_int_equal(csv_rows(p), 1500);
    assert_false(p->plain);   /* given up: the full reader took the plain rows too */
    assert_true(p->plain_misses > 256 && p->plain_misses < 400);
    csv_close(p);
    free(r.out.p);
    free(want);
    free(buf);
}

/* ------------------------------------------------------------ parallel */

typedef struct part_rec {
    rec r;
    uint64_t last_line;
    int out_of_order;
} part_rec;

static int part_row(void *ctx, const csv_field *f, uint64_t line)
{
    part_rec *pr = ctx;
    if (line <= pr->last_line)
        pr->out_of_order = 1;
    pr->last_line = line;
    return record_row(&pr->r, f, line);
}

static char *parse_parallel(const char *in, size_t len, const char *const *keys, int nkeys,
                            int nthreads, int *rc_out, csv_error *err, int *has)
{
    part_rec parts[16];
    void *ctxs[16];
    memset(parts, 0, sizeof parts);
    for (int i = 0; i < 16; i++) {
        parts[i].r.nkeys = nkeys;
        sb_puts(&parts[i].r.out, "");
        ctxs[i] = &parts[i];
    }
    int rc = csv_parse_parallel("t.txt", in, len, keys, nkeys, part_row, ctxs, nthreads, has, err);
    *rc_out = rc;
    sbuf all = { 0 };
    sb_puts(&all, "");
    for (int i = 0; i < 16; i++) {
        assert_false(parts[i].out_of_order);
        if (i >= nthreads)
            assert_int_equal(parts[i].r.rows, 0);
        sb_puts(&all, parts[i].r.out.p);
        free(parts[i].r.out.p);
    }
    return all.p;
}

static void test_parallel_matches_streaming(void **state)
{
    (void)state;
    size_t len;
    char *in = tricky_corpus(3u << 20, &len);
    int rc;
    char *want = parse_chunked(in, len, KT, 5, 1u << 20, &rc, NULL);
    assert_int_equal(rc, 0);
    for (int t = 1; t <= 12; t++) {
        int has[5];
        csv_error err;
        char *got = parse_parallel(in, len, KT, 5, t, &rc, &err, has);
        if (t <= 8)
            assert_int_equal(rc, t);
        else
            assert_true(rc >= 8 && rc <= t);
        assert_int_equal(has[0], 1);
        assert_int_equal(has[4], 0);
        if (strcmp(got, want) != 0)
            fail_msg("%d threads give another transcript", t);
        free(got);
    }
    /* every possible cut position near a slice boundary: shift the body by
     * prepending bytes to the header so slice starts land on every byte of a
     * tricky row */
    free(want);
    free(in);
    in = tricky_corpus(1400u << 10, &len);
    for (int shift = 0; shift < 48; shift++) {
        sbuf s = { 0 };
        sb_puts(&s, "pad");
        for (int i = 0; i < shift; i++)
            sb_puts(&s, "x");
        sb_puts(&s, ",");
        sb_put(&s, in + 3, len - 3);   /* drop the BOM */
        char *w = parse_chunked(s.p, s.len, KT, 5, 0, &rc, NULL);
        assert_int_equal(rc, 0);
        char *g = parse_parallel(s.p, s.len, KT, 5, 5, &rc, NULL, NULL);
        assert_int_equal(rc, 5);
        if (strcmp(g, w) != 0)
            fail_msg("shift %d: parallel differs from streaming", shift);
        free(w);
        free(g);
        free(s.p);
    }
    free(in);
}

/* Records made mostly of quoted line breaks, so the equal-size slices of
 * the parallel parser start inside quotes, next to a line break, next to a
 * doubled quote...: every offset of a record, by padding the header. */
static void test_parallel_cuts_inside_quotes(void **state)
{
    (void)state;
    static const char record[] = "R,\"\n\"\"\n,\r\n\"\"\"\"\n\",\"x\ny\"\r\n";
    const char *const keys[] = { "a", "b", "c" };
    for (int pad = 0; pad < (int)sizeof record; pad++) {
        sbuf s = { 0 };
        sb_puts(&s, "a,b,c");
        for (int i = 0; i < pad; i++)
            sb_puts(&s, ",p");
        sb_puts(&s, "\n");
        while (s.len < (1100u << 10))
            sb_puts(&s, record);
        int rc;
        char *want = parse_chunked(s.p, s.len, keys, 3, 0, &rc, NULL);
        assert_int_equal(rc, 0);
        for (int t = 1; t <= 4; t++) {
            char *got = parse_parallel(s.p, s.len, keys, 3, t, &rc, NULL, NULL);
            assert_int_equal(rc, t);
            if (strcmp(got, want) != 0)
                fail_msg("pad %d, %d threads: parallel differs from streaming", pad, t);
            free(got);
        }
        free(want);
        free(s.p);
    }
}

static void test_parallel_small_and_empty(void **state)
{
    (void)state;
    int rc, has[2];
    csv_error err;
    char *t = parse_parallel("", 0, K2, 2, 4, &rc, &err, has);
    assert_int_equal(rc, 1);
    assert_string_equal(t, "");
    assert_int_equal(has[0], 0);
    free(t);
    const char *in = "\xEF\xBB\xBFstop_name,stop_id\r\n\"a\",1\r\nb,2";
    t = parse_parallel(in, strlen(in), K2, 2, 4, &rc, &err, has);
    assert_int_equal(rc, 1);
    assert_string_equal(t, "2|1|\"a\n3|2|b\n");
    free(t);
}

/* Errors: the first one in file order, with the same line as streaming. */
static void test_parallel_errors(void **state)
{
    (void)state;
    size_t len;
    char *in = tricky_corpus(2u << 20, &len);
    /* an invalid byte in a key field at about 70% of the file */
    size_t at = len * 7 / 10;
    while (in[at] != '\n')
        at++;
    memcpy(in + at + 1, "T0,\xFF", 4);
    int rc;
    csv_error want, got;
    free(parse_chunked(in, len, KT, 5, 0, &rc, &want));
    assert_int_equal(rc, CSV_ERR_UTF8);
    for (int t = 2; t <= 8; t++) {
        free(parse_parallel(in, len, KT, 5, t, &rc, &got, NULL));
        assert_int_equal(rc, CSV_ERR_UTF8);
        assert_int_equal(got.line, want.line);
        assert_int_equal(got.column, want.column);
        assert_string_equal(got.message, want.message);
    }
    /* bytes after a closing quote, earlier in the file: that error wins */
    size_t at2 = len / 10;
    while (in[at2] != '\n')
        at2++;
    memcpy(in + at2 + 1, "\"x\"y", 4);
    free(parse_chunked(in, len, KT, 5, 0, &rc, &want));
    assert_int_equal(rc, CSV_ERR_SYNTAX);
    for (int t = 2; t <= 4; t++) {
        free(parse_parallel(in, len, KT, 5, t, &rc, &got, NULL));
        assert_int_equal(rc, CSV_ERR_SYNTAX);
        assert_int_equal(got.line, want.line);
        assert_string_equal(got.message, want.message);
    }
    free(in);

    /* a quote that never closes: the rest of the file is one unterminated field */
    sbuf b = { 0 };
    sb_puts(&b, "stop_id,stop_name\n");
    for (int i = 0; b.len < (2u << 20); i++) {
        char row[64];
        snprintf(row, sizeof row, "%d,%s\n", i, i == 5000 ? "\"open" : "name");
        sb_puts(&b, row);
    }
    free(parse_chunked(b.p, b.len, K2, 2, 0, &rc, &want));
    assert_int_equal(rc, CSV_ERR_SYNTAX);
    assert_int_equal(want.line, 5002);
    for (int t = 2; t <= 4; t++) {
        free(parse_parallel(b.p, b.len, K2, 2, t, &rc, &got, NULL));
        assert_int_equal(rc, CSV_ERR_SYNTAX);
        assert_int_equal(got.line, 5002);
        assert_string_equal(got.message, want.message);
    }
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_order_and_absent),
        cmocka_unit_test(test_quotes),
        cmocka_unit_test(test_line_ends),
        cmocka_unit_test(test_bom),
        cmocka_unit_test(test_trim),
        cmocka_unit_test(test_short_and_long_rows),
        cmocka_unit_test(test_short_row_is_rejected_with_file_line_and_counts),
        cmocka_unit_test(test_nul_byte_in_a_key_field_is_rejected),
        cmocka_unit_test(test_duplicate_header),
        cmocka_unit_test(test_literal_quote_in_unquoted_field),
        cmocka_unit_test(test_empty_and_header_only),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_callback_stop),
        cmocka_unit_test(test_long_record_across_chunks),
        cmocka_unit_test(test_every_split_position),
        cmocka_unit_test(test_chunking_invariance),
        cmocka_unit_test(test_plain_rows_as_the_full_reader),
        cmocka_unit_test(test_plain_long_rows_every_lane),
        cmocka_unit_test(test_plain_given_up_on_mostly_other_rows),
        cmocka_unit_test(test_parallel_matches_streaming),
        cmocka_unit_test(test_parallel_cuts_inside_quotes),
        cmocka_unit_test(test_parallel_small_and_empty),
        cmocka_unit_test(test_parallel_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
