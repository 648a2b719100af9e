/* csv_parallel.c — csv_parse_parallel: one whole buffer read by several
 * threads (see csv.h).
 *
 * Why it exists: stop_times.txt is most of an import's input, and one core
 * reads it at about 1 GB/s; split at record boundaries, it is read on every
 * core. The split must be exact, which is the hard part: each slice's quote
 * parity is computed in parallel (64 bytes at a time), checked against the
 * parser's own quote rules, and where it cannot be trusted the quotes of that
 * slice are walked exactly; then one clone of the streaming parser (csv.c)
 * per part runs on its own thread.
 */
#include "base/csv_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Physical line ends in [s, e): LF, CRLF, lone CR. A CR as the last byte
 * counts as a line end (the record's own terminator never lies in the range).
 * Written so that the compiler vectorizes it: it runs over whole slices in
 * csv_parse_parallel. */
static uint64_t count_line_ends(const char *s, const char *e)
{
    const uint8_t *u = (const uint8_t *)s;
    size_t len = (size_t)(e - s);
    if (!len)
        return 0;
    uint64_t n = 0;
    for (size_t i = 0; i + 1 < len;) {
        size_t stop = len - 1 - i > 255 ? i + 255 : len - 1;
        uint8_t block = 0;   /* byte-wide, so 16 or 32 lanes per vector */
        for (; i < stop; i++)
            block += (uint8_t)((u[i] == '\n') | ((u[i] == '\r') & (u[i + 1] != '\n')));
        n += block;
    }
    return n + (u[len - 1] == '\n' || u[len - 1] == '\r');
}

/* Where records start. The exact rule, the quote walk: a quote outside a
 * quoted field opens one when it is the field's first non-blank byte and is
 * a literal byte otherwise; inside, a doubled quote is a literal and a single
 * one closes. This is what parse_record does, so a boundary found this way is
 * one the parser agrees with (for valid input; a syntax error is reported by
 * the parser of the part that holds it). */

static bool opens_field(const char *b, size_t q)
{
    while (q > 0 && csv_is_blank(b[q - 1]))
        q--;
    return q == 0 || b[q - 1] == ',' || b[q - 1] == '\n' || b[q - 1] == '\r';
}

/* Processes the quote at q in state *in. Returns where the next event may start. */
static size_t quote_step(const char *b, size_t len, size_t q, bool *in)
{
    if (!*in) {
        *in = opens_field(b, q);
        return q + 1;
    }
    if (q + 1 < len && b[q + 1] == '"')
        return q + 2;
    *in = false;
    return q + 1;
}

/* Bit i set when p[i] is a quote. */
static uint64_t quote_mask(const char *p, size_t n)
{
    uint64_t m = 0;
#if defined(__SSE2__)
    if (n == 64) {
        const __m128i q = _mm_set1_epi8('"');
        for (int i = 0; i < 4; i++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
            m |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, q)) << (16 * i);
        }
        return m;
    }
#endif
    for (size_t i = 0; i < n; i++)
        m |= (uint64_t)(p[i] == '"') << i;
    return m;
}

/* The exact quote state at `to`, walking the quotes of [from, to) from
 * state `in`. Sequential; used for a slice whose parity cannot be trusted. */
static bool quote_walk(const char *b, size_t len, size_t from, size_t to, bool in)
{
    size_t pos = from;
    const char *hit;
    while (pos < to && (hit = memchr(b + pos, '"', to - pos)) != NULL)
        pos = quote_step(b, len, (size_t)(hit - b), &in);
    return in;
}

static inline uint64_t prefix_xor(uint64_t x)
{
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

/* Bit i set when p[i] is ',', '\n' or '\r' (a field starts after it). */
static uint64_t sep_mask(const char *p, size_t n)
{
    uint64_t m = 0;
#if defined(__SSE2__)
    if (n == 64) {
        const __m128i comma = _mm_set1_epi8(','), lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
        for (int i = 0; i < 4; i++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
            __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, comma), _mm_cmpeq_epi8(v, lf)),
                                       _mm_cmpeq_epi8(v, cr));
            m |= (uint64_t)(uint16_t)_mm_movemask_epi8(hit) << (16 * i);
        }
        return m;
    }
#endif
    for (size_t i = 0; i < n; i++)
        m |= (uint64_t)csv_is_delim[(uint8_t)p[i]] << i;
    return m;
}

/* Whether every quote in `m` (bits relative to `at`) opens a field. */
static bool all_open_fields(const char *b, size_t at, uint64_t m)
{
    for (; m; m &= m - 1)
        if (!opens_field(b, at + (size_t)__builtin_ctzll(m)))
            return false;
    return true;
}

/* Quote parity of [from, to), 64 bytes at a time (prefix XOR of the quote
 * bits gives "inside quotes" at every byte). Parity is the parser's state
 * exactly when every quote that parity takes for an opening one really opens
 * a field; a literal quote inside an unquoted field breaks that. So for each
 * starting state the scan also says whether its openers all sit at a field's
 * start (`clean`); if not, the caller walks that slice exactly. */
static void parity_scan(const char *b, size_t from, size_t to, bool *odd_out, bool clean[2])
{
    bool odd = false;
    clean[0] = clean[1] = true;
    size_t at = from;
    while (at < to) {
        size_t n = to - at < 64 ? to - at : 64;
        uint64_t q = quote_mask(b + at, n);
        if (!q) {
            at += n;
            const char *hit = at < to ? memchr(b + at, '"', to - at) : NULL;
            if (!hit)
                break;
            at = (size_t)(hit - b);
            continue;
        }
        uint64_t starts = sep_mask(b + at, n) << 1 | (uint64_t)(at == 0 || csv_is_delim[(uint8_t)b[at - 1]]);
        uint64_t inside = prefix_xor(q) ^ (odd ? ~0ull : 0);   /* after each byte, from state 0 */
        uint64_t before = inside ^ q;                          /* before each quote */
        if (clean[0] && (q & ~before & ~starts))
            clean[0] = all_open_fields(b, at, q & ~before & ~starts);
        if (clean[1] && (q & before & ~starts))
            clean[1] = all_open_fields(b, at, q & before & ~starts);
        odd = (inside >> (n - 1)) & 1;
        at += n;
    }
    *odd_out = odd;
}

/* The first record boundary at or after t, given the quote state at t. */
static size_t next_boundary(const char *b, size_t len, size_t t, bool in)
{
    size_t pos = t;
    for (;;) {
        if (in) {
            const char *hit = memchr(b + pos, '"', len - pos);
            if (!hit)
                return len;
            pos = quote_step(b, len, (size_t)(hit - b), &in);
            continue;
        }
        size_t e = pos;
        while (e < len && b[e] != '\n' && b[e] != '\r' && b[e] != '"')
            e++;
        if (e == len)
            return len;
        if (b[e] == '"') {
            pos = quote_step(b, len, e, &in);
            continue;
        }
        if (b[e] == '\r' && e + 1 < len && b[e + 1] == '\n')
            e++;
        return e + 1;
    }
}

#define PARALLEL_MAX_PARTS 64
#define PARALLEL_MIN_PART (256u << 10)   /* smaller parts are not worth a thread */
#define PART_FEED (4u << 20)             /* a part is fed in pieces, to notice an abort */

typedef struct part_job {
    /* phase 1 */
    const char *buf;
    size_t len, from, to;   /* slice */
    bool odd, clean[2];
    uint64_t line_ends;
    /* phase 2 */
    csv_parser *parser;
    size_t start, stop;     /* part */
    int index, last;
    atomic_int *abort_before;   /* parts with an index above this stop */
    int rc;
} part_job;

static void *phase1(void *arg)
{
    part_job *j = arg;
    parity_scan(j->buf, j->from, j->to, &j->odd, j->clean);
    j->line_ends = count_line_ends(j->buf + j->from, j->buf + j->to);
    /* count_line_ends took a CR at the slice's end as a line end; undo it if
     * a LF follows in the next slice (that LF was counted there). */
    if (j->to > j->from && j->to < j->len && j->buf[j->to - 1] == '\r' && j->buf[j->to] == '\n')
        j->line_ends--;
    return NULL;
}

static void *phase2(void *arg)
{
    part_job *j = arg;
    csv_parser *p = j->parser;
    int rc = 0;
    for (size_t at = j->start; at < j->stop && !rc;) {
        if (atomic_load_explicit(j->abort_before, memory_order_relaxed) < j->index) {
            j->rc = 0;
            return NULL;
        }
        size_t n = j->stop - at < PART_FEED ? j->stop - at : PART_FEED;
        rc = csv_feed_data(p, j->buf + at, n);
        at += n;
    }
    if (!rc && j->last)
        rc = csv_finish(p);
    else if (!rc && p->carry_len)   /* cannot happen when the split is right */
        rc = csv_set_error(p, CSV_ERR_SYNTAX, p->line, 0,
                           "record crosses a parallel split point");
    if (rc) {
        int cur = atomic_load(j->abort_before);
        while (j->index < cur && !atomic_compare_exchange_weak(j->abort_before, &cur, j->index))
            ;
    }
    j->rc = rc;
    return NULL;
}

static void run_jobs(void *(*fn)(void *), part_job *jobs, int n)
{
    pthread_t tid[PARALLEL_MAX_PARTS];
    bool started[PARALLEL_MAX_PARTS] = { false };
    for (int i = 1; i < n; i++)
        started[i] = pthread_create(&tid[i], NULL, fn, &jobs[i]) == 0;
    fn(&jobs[0]);
    for (int i = 1; i < n; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            fn(&jobs[i]);
    }
}


/* The header and any blank lines before it, read on hp; *body is where the
 * rows start. */
static int read_header(csv_parser *hp, const char *buf, size_t len, size_t *body)
{
    size_t at = 0;
    if (len >= 3 && memcmp(buf, csv_bom, 3) == 0)
        at = 3;
    hp->bom_pos = 3;
    hp->bytes = len;
    while (!hp->header_seen && at < len) {
        size_t used;
        int rc = csv_process_record(hp, buf + at, buf + len, true, &used);
        if (rc)
            return rc;
        at += used;
    }
    *body = at;
    return 0;
}

/* How many parts a body of blen bytes is split into: nthreads, but no part
 * under PARALLEL_MIN_PART. */
static int part_count(int nthreads, size_t blen)
{
    int nparts = nthreads < 1 ? 1 : nthreads;
    if (nparts > PARALLEL_MAX_PARTS)
        nparts = PARALLEL_MAX_PARTS;
    if ((size_t)nparts > blen / PARALLEL_MIN_PART)
        nparts = (int)(blen / PARALLEL_MIN_PART);
    return nparts < 1 ? 1 : nparts;
}

/* Phase 1, in parallel: slices of equal size (a slice never starts right
 * after a quote, so no doubled quote straddles two); each slice's quote
 * parity, whether parity can be trusted from either starting state, and
 * its line ends. */
static void scan_slices(part_job *jobs, int nparts, const char *buf, size_t len, size_t body)
{
    const size_t blen = len - body;
    size_t cut[PARALLEL_MAX_PARTS + 1];
    cut[0] = body;
    for (int i = 1; i < nparts; i++) {
        size_t t = body + blen / (size_t)nparts * (size_t)i;
        while (t < len && buf[t - 1] == '"')
            t++;
        cut[i] = t < cut[i - 1] ? cut[i - 1] : t;
    }
    cut[nparts] = len;
    for (int i = 0; i < nparts; i++) {
        jobs[i].buf = buf;
        jobs[i].len = len;
        jobs[i].from = cut[i];
        jobs[i].to = cut[i + 1];
    }
    run_jobs(phase1, jobs, nparts);
}

/* Sequential and short: the true quote state at each slice's start, the
 * first record boundary after it (start[i], with start[nparts] = len), and
 * the physical line that record starts on. */
static void find_part_starts(const part_job *jobs, int nparts, uint64_t first_line,
                             size_t start[PARALLEL_MAX_PARTS + 1],
                             uint64_t line[PARALLEL_MAX_PARTS])
{
    const char *buf = jobs[0].buf;
    const size_t len = jobs[0].len;
    bool in = false;
    uint64_t line_at_cut = first_line;
    start[0] = jobs[0].from;
    line[0] = first_line;
    for (int i = 1; i < nparts; i++) {
        const part_job *prev = &jobs[i - 1];
        in = prev->clean[in] ? in ^ prev->odd : quote_walk(buf, len, prev->from, prev->to, in);
        line_at_cut += prev->line_ends;
        start[i] = next_boundary(buf, len, jobs[i].from, in);
        line[i] = line_at_cut + count_line_ends(buf + jobs[i].from, buf + start[i]);
    }
    start[nparts] = len;
}

/* Frees the parser clones of jobs [1, n); their colmap is the header
 * parser's. */
static void close_clones(part_job *jobs, int n)
{
    for (int i = 1; i < n; i++) {
        jobs[i].parser->colmap = NULL;
        csv_close(jobs[i].parser);
    }
}

/* Phase 2, in parallel: one parser clone per part, each with the header
 * parser's state and its own carry and esc buffers. Returns 0 or the first
 * failing part's code (in file order), with *err filled. */
static int parse_parts(csv_parser *hp, part_job *jobs, int nparts, void **ctxs, csv_error *err)
{
    size_t start[PARALLEL_MAX_PARTS + 1];
    uint64_t line[PARALLEL_MAX_PARTS];
    find_part_starts(jobs, nparts, hp->line, start, line);
    const size_t len = jobs[0].len;
    atomic_int abort_before = PARALLEL_MAX_PARTS;
    for (int i = 0; i < nparts; i++) {
        csv_parser *p = hp;
        if (i > 0) {
            p = malloc(sizeof *p);
            if (!p) {
                close_clones(jobs, i);
                int rc = csv_set_error(hp, CSV_ERR_NOMEM, 0, 0, "out of memory");
                *err = hp->err;
                return rc;
            }
            *p = *hp;
            p->carry = p->esc = NULL;
            p->carry_cap = p->esc_cap = 0;
            p->ctx = ctxs[i];
        }
        p->line = line[i];
        jobs[i].parser = p;
        jobs[i].start = start[i];
        jobs[i].stop = start[i + 1];
        jobs[i].index = i;
        jobs[i].last = start[i + 1] == len;   /* an unclosed quote runs to the end */
        jobs[i].abort_before = &abort_before;
    }
    run_jobs(phase2, jobs, nparts);
    int rc = 0;
    for (int i = 0; i < nparts && !rc; i++) {
        if (jobs[i].rc) {
            rc = jobs[i].rc;
            *err = jobs[i].parser->err;
        }
    }
    close_clones(jobs, nparts);
    return rc;
}

int csv_parse_parallel(const char *filename, const char *buf, size_t len, const char *const *keys,
                       int nkeys, csv_part_row_fn row_fn, void **ctxs, int nthreads,
                       int *has_column, csv_error *err)
{
    csv_error spare;
    if (!err)
        err = &spare;
    csv_parser *hp = csv_open(filename, keys, nkeys, row_fn, ctxs[0]);
    if (!hp) {
        memset(err, 0, sizeof *err);
        snprintf(err->file, sizeof err->file, "%s", filename ? filename : "");
        snprintf(err->message, sizeof err->message, "out of memory");
        return CSV_ERR_NOMEM;
    }
    if (len == 0)
        buf = "";
    size_t body = 0;
    int nparts = 1;
    int rc = read_header(hp, buf, len, &body);
    if (!rc)
        nparts = part_count(nthreads, len - body);
    if (!rc && nparts == 1) {
        rc = csv_feed_data(hp, buf + body, len - body);
        if (!rc)
            rc = csv_finish(hp);
    } else if (!rc) {
        part_job jobs[PARALLEL_MAX_PARTS];
        memset(jobs, 0, sizeof jobs);
        scan_slices(jobs, nparts, buf, len, body);
        rc = parse_parts(hp, jobs, nparts, ctxs, err);
    }
    if (rc && nparts == 1)
        *err = hp->err;
    if (has_column)
        for (int k = 0; k < nkeys; k++)
            has_column[k] = hp->has_col[k];
    csv_close(hp);
    return rc ? rc : nparts;
}
