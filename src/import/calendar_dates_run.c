/* calendar_dates_run.c — calendar_dates.txt's `id,YYYYMMDD,1` rows taken in
 * one pass (see calendar_dates_run.h).
 *
 * Why it exists: the day-by-day form of a feed has millions of such rows,
 * and the general splitter, the row callback's date parse and the service
 * compare cost about 600 instructions a row; these rows need a few dozen.
 */
#include "import/calendar_dates_run.h"

#include <stdbool.h>
#include <string.h>

#include "transit/gtfs.h"

void calendar_dates_run_init(calendar_dates_run *r, tb_calendar_date **rows, size_t *nrows, size_t *cap,
                             day_additions *adds, uint32_t (*service)(void *ctx, const char *id, size_t len),
                             void *ctx)
{
    memset(r, 0, sizeof *r);
    r->rows = rows;
    r->nrows = nrows;
    r->cap = cap;
    r->adds = adds;
    r->service = service;
    r->ctx = ctx;
    /* an empty slot holds a date that is right wherever it is found, so
     * that no input (eight NULs, say) can match an empty slot's bytes */
    uint64_t epoch;
    memcpy(&epoch, "19700101", sizeof epoch);
    for (size_t i = 0; i < CALENDAR_DATES_RUN_DATES; i++) {
        r->dates[i].text = epoch;
        r->dates[i].day = 0;
    }
}

/* A byte the full reader would hand on as it stands in an unquoted field:
 * printable ASCII but blank, quote and comma. */
static inline int id_byte(char c)
{
    return (unsigned char)(c - 0x21) <= 0x7e - 0x21 && c != '"' && c != ',';
}

/* The days of "YYYYMMDD" at s, from the table or parsed (and remembered);
 * -1 for a date gtfs_parse_date rejects. A date's slot is its month and
 * day (the digits' low bits), so the dates of one year never share one. */
static inline int run_date(calendar_dates_run *r, const char *s, int32_t *day)
{
    uint64_t text;
    memcpy(&text, s, sizeof text);
    unsigned slot = ((unsigned)(s[4] & 1) << 10 | (unsigned)(s[5] & 15) << 6 | (unsigned)(s[6] & 3) << 4 |
                     (unsigned)(s[7] & 15)) % CALENDAR_DATES_RUN_DATES;
    if (r->dates[slot].text == text) {   /* a date's bytes gtfs_parse_date took */
        *day = r->dates[slot].day;
        return 0;
    }
    if (gtfs_parse_date(s, 8, day) != 0)
        return -1;
    r->dates[slot].text = text;
    r->dates[slot].day = *day;
    return 0;
}

/* The row's service, compared in place in the next rows. */
static void remember_service(calendar_dates_run *r, const char *id, size_t len, uint32_t svc)
{
    r->prev_len = len < sizeof r->prev_id ? (uint32_t)len : 0;
    memcpy(r->prev_id, id, r->prev_len);
    r->prev_service = svc;
    unsigned char bytes[16] = {0}, mask[16] = {0};
    if (len && len < 16) {
        memcpy(bytes, id, len);
        bytes[len] = ',';
        memset(mask, 0xff, len + 1);
    }
    memcpy(r->prev_words, bytes, sizeof bytes);
    memcpy(r->prev_mask, mask, sizeof mask);
}

int calendar_dates_run_rows(void *ctx, const char *s, const char *end, uint64_t line, size_t *used, uint64_t *rows)
{
    (void)line;
    calendar_dates_run *r = ctx;
    const char *row = s;
    uint64_t taken = 0;
    int rc = 0;
    for (;;) {
        /* the service id: the previous row's, or scanned to its comma */
        const char *id_end;
        uint32_t len = r->prev_len;
        bool same;
        if (r->prev_mask[0] && end - row >= 16) {   /* an id of up to 15 bytes: two words compared */
            uint64_t w[2];
            memcpy(w, row, sizeof w);
            same = (((w[0] ^ r->prev_words[0]) & r->prev_mask[0]) | ((w[1] ^ r->prev_words[1]) & r->prev_mask[1])) == 0;
        } else {
            same = len && (size_t)(end - row) > len && row[len] == ',' && memcmp(row, r->prev_id, len) == 0;
        }
        if (same) {
            id_end = row + len;
        } else {
            id_end = row;
            while (id_end < end && id_byte(*id_end))
                id_end++;
            if (id_end == row || id_end == end || *id_end != ',')
                break;
        }
        /* ",YYYYMMDD,T" and LF or CRLF */
        const char *d = id_end + 1;
        if (end - d < 11 || d[8] != ',' || (d[9] != '1' && d[9] != '2'))
            break;
        const char *next;
        if (d[10] == '\n')
            next = d + 11;
        else if (d[10] == '\r' && end - d >= 12 && d[11] == '\n')
            next = d + 12;
        else
            break;
        int32_t day;
        if (run_date(r, d, &day) != 0)
            break;
        /* only a whole good row names its service: a row the callback
         * rejects must not add one */
        uint32_t svc = r->prev_service;
        if (!same) {
            size_t id_len = (size_t)(id_end - row);
            if ((svc = r->service(r->ctx, row, id_len)) == UINT32_MAX) {
                rc = -1;
                break;
            }
            remember_service(r, row, id_len, svc);
        }
        if (d[9] == '1' && r->adds) {
            if (day_additions_add(r->adds, svc, day) != 0) {
                rc = -1;
                break;
            }
        } else {
            if (*r->nrows == *r->cap &&
                tb_grow((void **)r->rows, r->cap, sizeof **r->rows, *r->nrows + 1) != 0) {
                rc = -1;
                break;
            }
            (*r->rows)[(*r->nrows)++] = (tb_calendar_date){svc, day, (uint8_t)(d[9] - '0')};
        }
        taken++;
        row = next;
    }
    *used = (size_t)(row - s);
    *rows = taken;
    return rc;
}
