/* test_alerts.c — service alerts below HTTP: checking a body and its
 * canonical JSON, merge patches, the live store's writes and preconditions,
 * the upgrade of a schema-v1 live.sqlite, matching alerts to departure rows
 * and stop details, the alerts list, and the bearer tokens that guard writes.
 *
 * Why it exists: alerts are the one thing clients write, and a mistake costs
 * a lost alert, a refused good one, or an alert shown on the wrong bus. The
 * API tests (tests/api) see alerts through HTTP; here every refusal's status
 * and JSON pointer, every precondition and every selector is checked, the
 * selectors on a feed small enough that each expected departure row is
 * written out in full.
 */
#include "test_support.h"
#include "test_timetable_fixture.h"

#include <jansson.h>
#include <sqlite3.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

#include "transit/alert.h"
#include "transit/alert_view.h"
#include "transit/api.h"
#include "transit/auth.h"
#include "transit/diag.h"
#include "transit/json_writer.h"
#include "transit/alert_text.h"
#include "transit/live_store.h"
#include "transit/query.h"
#include "transit/sha256.h"

/* 2026-11-02 is a Monday; New York is on EST (UTC-5) from 2026-11-01. */
#define MON_0800 ((int64_t)1793624400)   /* 2026-11-02T08:00:00-05:00 = 13:00Z */
#define MON_DAYS 20759                   /* 2026-11-02 in days since 1970-01-01 */

/* The smallest valid members, to build bodies around. */
#define ENT_R1 "\"informed_entity\":[{\"route_id\":\"R1\"}]"
#define HDR_HI "\"header_text\":{\"translation\":[{\"text\":\"Hi\"}]}"

static void remove_dir(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* ================================================================ parsing */

static alert *parse_ok(const char *body, const char *id)
{
    alert_error err = {0};
    alert *a = alert_parse(body, strlen(body), id, true, &err);
    if (!a)
        fail_msg("refused (%d %s: %s): %s", err.status, err.pointer, err.detail, body);
    return a;
}

/* A minimal body is completed with every default, in the canonical order;
 * periods sent with an offset or as Unix seconds come back in UTC "Z". */
static void test_parse_minimal_body_gives_canonical_content(void **state)
{
    (void)state;
    alert *a = parse_ok("{" HDR_HI "," ENT_R1 "}", "min");
    assert_string_equal(a->content,
                        "{\"active_period\":[],\"informed_entity\":[{\"route_id\":\"R1\"}],"
                        "\"cause\":\"UNKNOWN_CAUSE\",\"effect\":\"UNKNOWN_EFFECT\","
                        "\"severity_level\":\"UNKNOWN_SEVERITY\","
                        "\"header_text\":{\"translation\":[{\"text\":\"Hi\"}]},"
                        "\"description_text\":null,\"url\":null}");
    assert_int_equal(a->content_len, strlen(a->content));
    assert_string_equal(a->id, "min");
    assert_int_equal(a->nperiods, 0);
    assert_int_equal(a->nentities, 1);
    assert_string_equal(a->entities[0].route_id, "R1");
    assert_null(a->entities[0].stop_id);
    assert_int_equal(a->entities[0].route_type, -1);
    assert_int_equal(a->entities[0].direction_id, -1);
    assert_int_equal(a->entities[0].start_date, ALERT_NONE_DATE);
    assert_null(a->json);   /* not stamped yet */
    assert_true(alert_active_at(a, 0));   /* no period: always */
    alert_release(a);

    /* members in any order, times with offsets and as Unix seconds */
    a = parse_ok("{\"url\":{\"translation\":[{\"text\":\"https://example.com/a\"}]},"
                 "\"description_text\":{\"translation\":[{\"text\":\"All day\"}]},"
                 "\"header_text\":{\"translation\":[{\"language\":\"en\",\"text\":\"Strike\"},"
                 "{\"text\":\"Gr\xc3\xa8ve\",\"language\":\"fr\"}]},"
                 "\"severity_level\":\"SEVERE\",\"effect\":\"NO_SERVICE\",\"cause\":\"STRIKE\","
                 "\"informed_entity\":[{\"trip\":{\"start_date\":\"20261102\",\"trip_id\":\"T9\"},"
                 "\"direction_id\":1,\"route_id\":\"R1\"},"
                 "{\"stop_id\":\"S1\",\"route_type\":3,\"agency_id\":\"A1\"}],"
                 "\"active_period\":[{\"end\":1793628000,\"start\":\"2026-11-02T08:00:00-05:00\"},"
                 "{\"start\":1793700000},{\"end\":\"2026-11-03T00:00:00+05:30\"}]}",
                 "full");
    assert_string_equal(a->content,
                        "{\"active_period\":[{\"start\":\"2026-11-02T13:00:00Z\","
                        "\"end\":\"2026-11-02T14:00:00Z\"},{\"start\":\"2026-11-03T10:00:00Z\"},"
                        "{\"end\":\"2026-11-02T18:30:00Z\"}],"
                        "\"informed_entity\":[{\"route_id\":\"R1\",\"direction_id\":1,"
                        "\"trip\":{\"trip_id\":\"T9\",\"start_date\":\"20261102\"}},"
                        "{\"agency_id\":\"A1\",\"route_type\":3,\"stop_id\":\"S1\"}],"
                        "\"cause\":\"STRIKE\",\"effect\":\"NO_SERVICE\",\"severity_level\":\"SEVERE\","
                        "\"header_text\":{\"translation\":[{\"text\":\"Strike\",\"language\":\"en\"},"
                        "{\"text\":\"Gr\xc3\xa8ve\",\"language\":\"fr\"}]},"
                        "\"description_text\":{\"translation\":[{\"text\":\"All day\"}]},"
                        "\"url\":{\"translation\":[{\"text\":\"https://example.com/a\"}]}}");
    assert_int_equal(a->nperiods, 3);
    assert_int_equal(a->periods[0].start, MON_0800);
    assert_int_equal(a->periods[0].end, MON_0800 + 3600);
    assert_int_equal(a->periods[1].start, 1793700000);
    assert_true(a->periods[1].end == INT64_MAX);
    assert_true(a->periods[2].start == INT64_MIN);
    assert_int_equal(a->periods[2].end, MON_0800 + 5 * 3600 + 1800);
    assert_int_equal(a->nentities, 2);
    assert_string_equal(a->entities[0].route_id, "R1");
    assert_string_equal(a->entities[0].trip_id, "T9");
    assert_int_equal(a->entities[0].direction_id, 1);
    assert_int_equal(a->entities[0].start_date, MON_DAYS);
    assert_null(a->entities[0].agency_id);
    assert_string_equal(a->entities[1].agency_id, "A1");
    assert_string_equal(a->entities[1].stop_id, "S1");
    assert_int_equal(a->entities[1].route_type, 3);
    assert_null(a->entities[1].trip_id);
    /* start inclusive, end exclusive, any period will do */
    assert_true(alert_active_at(a, MON_0800 + 5 * 3600 + 1800 - 1));   /* third period */
    assert_false(alert_active_at(a, MON_0800 + 5 * 3600 + 1800));      /* its end */
    assert_true(alert_active_at(a, MON_0800));
    assert_true(alert_active_at(a, 1793700000));
    assert_false(alert_active_at(a, 1793700000 - 1));
    assert_true(alert_current_or_future(a, 1793700000 + 1000000));

    /* the representation: id, revision, times, then the content's members, each
     * text with the translation chosen when no language is asked for (the first:
     * none is untagged) */
    assert_int_equal(alert_stamp(a, 7, 100, 200), 0);
    char want[4096];
    const char *texts = strstr(a->content, ",\"header_text\"");
    assert_non_null(texts);
    snprintf(want, sizeof want,
             "{\"id\":\"full\",\"revision\":7,\"created_at\":\"1970-01-01T00:01:40Z\","
             "\"updated_at\":\"1970-01-01T00:03:20Z\",%.*s"
             ",\"header_text\":{\"text\":\"Strike\",\"language\":\"en\",\"translation\":"
             "[{\"text\":\"Strike\",\"language\":\"en\"},{\"text\":\"Gr\xc3\xa8ve\",\"language\":\"fr\"}]},"
             "\"description_text\":{\"text\":\"All day\",\"translation\":[{\"text\":\"All day\"}]},"
             "\"url\":{\"text\":\"https://example.com/a\",\"translation\":[{\"text\":\"https://example.com/a\"}]}}",
             (int)(texts - a->content - 1), a->content + 1);
    assert_string_equal(a->json, want);
    assert_int_equal(a->json_len, strlen(want));
    assert_int_equal(a->revision, 7);
    assert_int_equal(a->created_at, 100);
    assert_int_equal(a->updated_at, 200);
    alert_release(a);
}

typedef struct refusal {
    const char *body;
    const char *id;          /* the path's id (NULL: a POST, allow_id false) */
    int status;
    const char *pointer;
} refusal;

static void expect_refused(const char *body, size_t len, const char *id, bool allow_id, int status,
                           const char *pointer)
{
    alert_error err = {0};
    alert *a = alert_parse(body, len, id, allow_id, &err);
    if (a) {
        alert_release(a);
        fail_msg("accepted: %.300s", body);
    }
    if (err.status != status || strcmp(err.pointer, pointer) != 0)
        fail_msg("%.300s\n  gave %d '%s' (%s), expected %d '%s'", body, err.status, err.pointer,
                 err.detail, status, pointer);
    if (!err.detail[0])
        fail_msg("%.300s: no detail", body);
}

/* Each bad body is refused with the status and the JSON pointer of the
 * member at fault: 400 when it is not a JSON object, 422 for a member. */
static void test_parse_refusals_name_status_and_pointer(void **state)
{
    (void)state;
    static const refusal cases[] = {
        {"{", "x", 400, ""},
        {"{\"cause\":\"STRIKE\",\"cause\":\"STRIKE\"," ENT_R1 "," HDR_HI "}", "x", 400, ""},
        {"[{" ENT_R1 "," HDR_HI "}]", "x", 400, ""},
        {"\"an alert\"", "x", 400, ""},
        {"{" ENT_R1 "," HDR_HI ",\"colour\":\"red\"}", "x", 422, "/colour"},
        {"{\"informed_entity\":[{\"stop_idx\":\"S1\"}]," HDR_HI "}", "x", 422,
         "/informed_entity/0/stop_idx"},
        {"{\"informed_entity\":[{\"trip\":{\"trip_id\":\"T\",\"date\":\"20261102\"}}]," HDR_HI "}",
         "x", 422, "/informed_entity/0/trip/date"},
        /* wrong types */
        {"{" ENT_R1 "," HDR_HI ",\"cause\":5}", "x", 422, "/cause"},
        {"{\"informed_entity\":{\"route_id\":\"R1\"}," HDR_HI "}", "x", 422, "/informed_entity"},
        {"{\"informed_entity\":[{\"route_id\":7}]," HDR_HI "}", "x", 422,
         "/informed_entity/0/route_id"},
        {"{\"informed_entity\":[\"R1\"]," HDR_HI "}", "x", 422, "/informed_entity/0"},
        {"{\"informed_entity\":[{\"route_id\":\"R1\",\"direction_id\":\"1\"}]," HDR_HI "}", "x",
         422, "/informed_entity/0/direction_id"},
        {"{\"informed_entity\":[{\"route_type\":2000}]," HDR_HI "}", "x", 422,
         "/informed_entity/0/route_type"},
        {"{" ENT_R1 ",\"header_text\":\"Hi\"}", "x", 422, "/header_text"},
        {"{" ENT_R1 "," HDR_HI ",\"active_period\":{\"start\":1}}", "x", 422, "/active_period"},
        {"{" ENT_R1 "," HDR_HI ",\"active_period\":[{\"start\":true}]}", "x", 422,
         "/active_period/0/start"},
        {"{" ENT_R1 "," HDR_HI ",\"active_period\":[{\"start\":-1}]}", "x", 422,
         "/active_period/0/start"},
        {"{" ENT_R1 "," HDR_HI ",\"active_period\":[{\"start\":\"2026-11-02T08:00:00\"}]}", "x",
         422, "/active_period/0/start"},
        {"{" ENT_R1 "," HDR_HI ",\"active_period\":[{\"begin\":1}]}", "x", 422,
         "/active_period/0/begin"},
        /* enums */
        {"{" ENT_R1 "," HDR_HI ",\"effect\":\"BROKEN\"}", "x", 422, "/effect"},
        {"{" ENT_R1 "," HDR_HI ",\"effect\":\"no_service\"}", "x", 422, "/effect"},
        {"{" ENT_R1 "," HDR_HI ",\"severity_level\":\"CRITICAL\"}", "x", 422, "/severity_level"},
        /* periods */
        {"{" ENT_R1 "," HDR_HI ",\"active_period\":[{\"start\":200,\"end\":200}]}", "x", 422,
         "/active_period/0"},
        {"{" ENT_R1 "," HDR_HI ",\"active_period\":[{\"start\":1},{\"start\":300,\"end\":200}]}",
         "x", 422, "/active_period/1"},
        {"{" ENT_R1 "," HDR_HI ",\"active_period\":[{\"start\":\"2026-11-02T08:00:00-05:00\","
         "\"end\":\"2026-11-02T13:00:00Z\"}]}",
         "x", 422, "/active_period/0"},
        {"{" ENT_R1 "," HDR_HI ",\"active_period\":[{}]}", "x", 422, "/active_period/0"},
        {"{" ENT_R1 "," HDR_HI ",\"active_period\":[{\"start\":null,\"end\":null}]}", "x", 422,
         "/active_period/0"},
        /* entities */
        {"{\"informed_entity\":[{}]," HDR_HI "}", "x", 422, "/informed_entity/0"},
        {"{\"informed_entity\":[{\"route_id\":\"R1\"},{\"route_id\":null}]," HDR_HI "}", "x", 422,
         "/informed_entity/1"},
        {"{\"informed_entity\":[{\"stop_id\":\"S1\",\"direction_id\":0}]," HDR_HI "}", "x", 422,
         "/informed_entity/0"},
        {"{\"informed_entity\":[{\"direction_id\":1}]," HDR_HI "}", "x", 422,
         "/informed_entity/0"},
        {"{\"informed_entity\":[{\"route_id\":\"R1\",\"direction_id\":2}]," HDR_HI "}", "x", 422,
         "/informed_entity/0/direction_id"},
        {"{\"informed_entity\":[{\"trip\":{\"trip_id\":\"T\",\"start_date\":\"20261302\"}}],"
         HDR_HI "}", "x", 422, "/informed_entity/0/trip/start_date"},
        {"{\"informed_entity\":[{\"trip\":{\"trip_id\":\"T\",\"start_date\":\"2026-11-02\"}}],"
         HDR_HI "}", "x", 422, "/informed_entity/0/trip/start_date"},
        {"{\"informed_entity\":[{\"trip\":{\"start_date\":\"20261102\"}}]," HDR_HI "}", "x", 422,
         "/informed_entity/0/trip"},
        {"{\"informed_entity\":[{\"stop_id\":\"\"}]," HDR_HI "}", "x", 422,
         "/informed_entity/0/stop_id"},
        {"{" HDR_HI "}", "x", 422, "/informed_entity"},
        {"{\"informed_entity\":null," HDR_HI "}", "x", 422, "/informed_entity"},
        {"{\"informed_entity\":[]," HDR_HI "}", "x", 422, "/informed_entity"},
        /* texts */
        {"{" ENT_R1 "}", "x", 422, "/header_text"},
        {"{" ENT_R1 ",\"header_text\":null}", "x", 422, "/header_text"},
        {"{" ENT_R1 ",\"header_text\":{\"translation\":[]}}", "x", 422, "/header_text/translation"},
        {"{" ENT_R1 ",\"header_text\":{\"translation\":[{\"language\":\"en\"}]}}", "x", 422,
         "/header_text/translation/0/text"},
        {"{" ENT_R1 ",\"header_text\":{\"translation\":[{\"text\":\"\"}]}}", "x", 422,
         "/header_text/translation/0/text"},
        {"{" ENT_R1 "," HDR_HI ",\"url\":{\"translation\":[{\"text\":\"ftp://example.com\"}]}}", "x",
         422, "/url/translation/0/text"},
        {"{" ENT_R1 "," HDR_HI ",\"url\":{\"translation\":[{\"text\":\"example.com\"}]}}", "x", 422,
         "/url/translation/0/text"},
        {"{" ENT_R1 ",\"header_text\":{\"translation\":[{\"text\":\"a\",\"language\":\"en\"},"
         "{\"text\":\"b\",\"language\":\"en\"}]}}",
         "x", 422, "/header_text/translation/1"},
        {"{" ENT_R1 ",\"header_text\":{\"translation\":[{\"text\":\"a\"},{\"text\":\"b\"}]}}", "x",
         422, "/header_text/translation/1"},
        {"{" ENT_R1 ",\"header_text\":{\"translation\":[{\"text\":\"a\",\"language\":\"en_US\"}]}}",
         "x", 422, "/header_text/translation/0/language"},
        /* text and language are read-only: they must name one of the translations */
        {"{" ENT_R1 "," HDR_HI ",\"description_text\":{\"text\":\"a\",\"translation\":[{\"text\":\"b\"}]}}",
         "x", 422, "/description_text/text"},
        {"{" ENT_R1 "," HDR_HI ",\"description_text\":{\"text\":\"b\",\"language\":\"en\","
         "\"translation\":[{\"text\":\"b\"}]}}", "x", 422, "/description_text/text"},
        {"{" ENT_R1 "," HDR_HI ",\"description_text\":{\"text\":\"a\"}}", "x", 422,
         "/description_text/translation"},
        /* ids: a POST names none, a PUT names the path's */
        {"{\"id\":\"x\"," ENT_R1 "," HDR_HI "}", NULL, 422, "/id"},
        {"{\"id\":\"other\"," ENT_R1 "," HDR_HI "}", "x", 422, "/id"},
        {"{\"id\":7," ENT_R1 "," HDR_HI "}", "x", 422, "/id"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const refusal *c = &cases[i];
        expect_refused(c->body, strlen(c->body), c->id ? c->id : "al-post", c->id != NULL,
                       c->status, c->pointer);
    }
    expect_refused("", 0, "x", true, 400, "");
    expect_refused("{}", 0, "x", true, 400, "");   /* the length rules, not the NUL */

    /* a text of ALERT_TEXT_MAX bytes is the longest accepted */
    char *body = malloc(ALERT_TEXT_MAX + 256);
    assert_non_null(body);
    for (int extra = 0; extra <= 1; extra++) {
        int n = snprintf(body, 256, "{" ENT_R1 ",\"header_text\":{\"translation\":[{\"text\":\"");
        memset(body + n, 'x', ALERT_TEXT_MAX + extra);
        snprintf(body + n + ALERT_TEXT_MAX + extra, 16, "\"}]}}");
        if (extra) {
            expect_refused(body, strlen(body), "x", true, 422, "/header_text/translation/0/text");
        } else {
            alert *a = parse_ok(body, "x");
            alert_release(a);
        }
    }
    free(body);

    /* a PUT body may repeat the path's id */
    alert *a = parse_ok("{\"id\":\"x\"," ENT_R1 "," HDR_HI "}", "x");
    assert_string_equal(a->id, "x");
    alert_release(a);
}

/* A body read back from GET (with revision, created_at, updated_at) may be
 * PUT again: those members are accepted and change nothing. */
static void test_parse_ignores_read_only_members(void **state)
{
    (void)state;
    alert *plain = parse_ok("{" ENT_R1 "," HDR_HI "}", "x");
    alert *with = parse_ok("{\"revision\":99,\"created_at\":\"2026-01-01T00:00:00Z\","
                           "\"updated_at\":\"whenever\",\"id\":\"x\"," ENT_R1 "," HDR_HI "}",
                           "x");
    assert_string_equal(with->content, plain->content);
    assert_int_equal(with->revision, 0);
    assert_int_equal(with->created_at, 0);
    assert_int_equal(with->updated_at, 0);
    alert_release(plain);
    alert_release(with);
}

/* Each text answers the one translation chosen for the request's ranked
 * languages (alert_text.h), then the feed's, the untagged one, the first; the
 * translation array is the stored one, and a GET body with text and language
 * parses back to the same content. */
static void test_texts_in_the_request_language(void **state)
{
    (void)state;
    alert *a = parse_ok("{" ENT_R1 ",\"header_text\":{\"translation\":[{\"text\":\"Works\",\"language\":\"en\"},"
                        "{\"text\":\"Bauarbeiten\",\"language\":\"de\"},{\"text\":\"Travaux\",\"language\":\"fr\"}]},"
                        "\"description_text\":{\"translation\":[{\"text\":\"Avis\",\"language\":\"fr\"},"
                        "{\"text\":\"Notice\"}]}}",
                        "x");
    assert_int_equal(alert_stamp(a, 1, 0, 0), 0);
    assert_true(alert_multilingual(a));
    const alert_text *head = &a->texts[0], *desc = &a->texts[1];
    assert_int_equal(head->count, 3);
    assert_int_equal(a->texts[2].count, 0);   /* url: null */
    alert_language fr = {.ranked = {"FR"}, .nranked = 1};
    alert_language it_then_de = {.ranked = {"it", "de"}, .nranked = 2};
    alert_language none_feed_de = {.fallback = "de"};
    alert_language none_feed_it = {.fallback = "it"};
    assert_int_equal(alert_text_choose(head, &fr), 2);
    assert_int_equal(alert_text_choose(head, &it_then_de), 1);
    assert_int_equal(alert_text_choose(head, &none_feed_de), 1);
    assert_int_equal(alert_text_choose(head, &none_feed_it), 0);   /* no untagged one: the first */
    assert_int_equal(alert_text_choose(desc, &none_feed_it), 1);   /* the untagged one */
    assert_int_equal(alert_text_choose(desc, NULL), 1);
    assert_int_equal(alert_text_choose(desc, &fr), 0);
    json_writer w;
    json_init(&w);
    alert_write(&w, a, &fr);
    assert_non_null(strstr(w.buf, "\"header_text\":{\"text\":\"Travaux\",\"language\":\"fr\",\"translation\":[{\"text\":\"Works\""));
    assert_non_null(strstr(w.buf, "\"description_text\":{\"text\":\"Avis\",\"language\":\"fr\",\"translation\":"));
    assert_non_null(strstr(w.buf, "\"url\":null}"));
    assert_int_equal(fr.nwritten, 1);
    assert_string_equal(fr.written[0], "fr");
    /* the body read back parses to the same content */
    char *body = strdup(w.buf);
    alert *back = parse_ok(body, "x");
    assert_string_equal(back->content, a->content);
    free(body);
    json_free(&w);
    alert_release(back);
    alert_release(a);
}

static void test_alert_ids(void **state)
{
    (void)state;
    char id[ALERT_ID_MAX + 2];
    assert_false(alert_id_valid(""));
    memset(id, 'a', sizeof id);
    id[ALERT_ID_MAX] = '\0';
    assert_true(alert_id_valid(id));   /* 64 bytes */
    id[ALERT_ID_MAX] = 'a';
    id[ALERT_ID_MAX + 1] = '\0';
    assert_false(alert_id_valid(id));  /* 65 */
    assert_true(alert_id_valid("A-z_0.9~:"));
    assert_true(alert_id_valid("x"));
    const char *bad[] = {"a/b", "a b", " a", "a\t", "a?b", "a%20", "a\"b", "\xc3\xa9", "a#b", "a,b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (alert_id_valid(bad[i]))
            fail_msg("'%s' accepted as an alert id", bad[i]);

    enum { N = 64 };
    char ids[N][ALERT_ID_MAX + 1];
    for (int i = 0; i < N; i++) {
        alert_new_id(ids[i]);
        assert_true(alert_id_valid(ids[i]));
        assert_int_equal(strncmp(ids[i], "al-", 3), 0);
        assert_int_equal(strlen(ids[i]), 23);
        for (int k = 3; k < 23; k++)
            assert_non_null(strchr("0123456789abcdef", ids[i][k]));
        for (int j = 0; j < i; j++)
            if (strcmp(ids[i], ids[j]) == 0)
                fail_msg("alert_new_id repeated %s", ids[i]);
    }
}

/* ================================================================ merge patch */

#define MERGE_BASE                                                                      \
    "{\"active_period\":[],\"informed_entity\":[{\"route_id\":\"R1\"}],"                \
    "\"cause\":\"STRIKE\",\"effect\":\"%s\",\"severity_level\":\"UNKNOWN_SEVERITY\","    \
    "\"header_text\":{\"translation\":[{\"text\":\"Hi\"}]},\"description_text\":%s,\"url\":null}"

static void expect_patch_refused(const alert *old, const char *patch, int status,
                                 const char *pointer)
{
    alert_error err = {0};
    alert *a = alert_merge_patch(old, patch, strlen(patch), &err);
    if (a) {
        alert_release(a);
        fail_msg("patch accepted: %s", patch);
    }
    if (err.status != status || strcmp(err.pointer, pointer) != 0)
        fail_msg("patch %s gave %d '%s' (%s), expected %d '%s'", patch, err.status, err.pointer,
                 err.detail, status, pointer);
}

static alert *patched(const alert *old, const char *patch)
{
    alert_error err = {0};
    alert *a = alert_merge_patch(old, patch, strlen(patch), &err);
    if (!a)
        fail_msg("patch %s refused: %d %s %s", patch, err.status, err.pointer, err.detail);
    assert_string_equal(a->id, old->id);
    return a;
}

static void test_merge_patch(void **state)
{
    (void)state;
    char want[1024];
    alert *old = parse_ok("{" ENT_R1 "," HDR_HI ",\"cause\":\"STRIKE\","
                          "\"description_text\":{\"translation\":[{\"text\":\"More\"}]}}",
                          "m1");
    snprintf(want, sizeof want, MERGE_BASE, "UNKNOWN_EFFECT",
             "{\"translation\":[{\"text\":\"More\"}]}");
    assert_string_equal(old->content, want);
    char *before = strdup(old->content);
    assert_non_null(before);

    /* one member changes, the rest stays */
    alert *a = patched(old, "{\"effect\":\"DETOUR\"}");
    snprintf(want, sizeof want, MERGE_BASE, "DETOUR", "{\"translation\":[{\"text\":\"More\"}]}");
    assert_string_equal(a->content, want);
    alert_release(a);

    /* null removes an optional member */
    a = patched(old, "{\"description_text\":null}");
    snprintf(want, sizeof want, MERGE_BASE, "UNKNOWN_EFFECT", "null");
    assert_string_equal(a->content, want);
    alert_release(a);

    /* an array is replaced whole */
    a = patched(old, "{\"informed_entity\":[{\"stop_id\":\"S9\"},{\"agency_id\":\"A1\"}]}");
    assert_int_equal(a->nentities, 2);
    assert_string_equal(a->entities[0].stop_id, "S9");
    assert_null(a->entities[0].route_id);
    assert_string_equal(a->entities[1].agency_id, "A1");
    alert_release(a);

    /* the same id may be repeated; read-only members are ignored, null or not */
    a = patched(old, "{\"id\":\"m1\",\"cause\":\"WEATHER\"}");
    assert_non_null(strstr(a->content, "\"cause\":\"WEATHER\""));
    alert_release(a);
    a = patched(old, "{\"revision\":99,\"created_at\":null,\"updated_at\":\"x\"}");
    assert_string_equal(a->content, before);
    alert_release(a);
    a = patched(old, "{}");
    assert_string_equal(a->content, before);
    alert_release(a);

    /* results that do not check, and patches that are not objects */
    expect_patch_refused(old, "{\"informed_entity\":null}", 422, "/informed_entity");
    expect_patch_refused(old, "{\"header_text\":null}", 422, "/header_text");
    expect_patch_refused(old, "{\"id\":\"m2\"}", 422, "/id");
    expect_patch_refused(old, "{\"id\":null}", 422, "/id");
    expect_patch_refused(old, "{\"colour\":\"red\"}", 422, "/colour");
    expect_patch_refused(old, "{\"effect\":\"BROKEN\"}", 422, "/effect");
    expect_patch_refused(old, "{\"informed_entity\":[{\"route_id\":\"R1\",\"route_idx\":1}]}", 422,
                         "/informed_entity/0/route_idx");
    expect_patch_refused(old, "[1]", 400, "");
    expect_patch_refused(old, "{", 400, "");
    expect_patch_refused(old, "", 400, "");

    /* the original is untouched by all of it */
    assert_string_equal(old->content, before);
    assert_int_equal(old->nentities, 1);
    assert_string_equal(old->entities[0].route_id, "R1");
    free(before);
    alert_release(old);
}

/* ================================================================ live store */

static alert *stored_alert(const char *id, const char *cause)
{
    char body[512];
    snprintf(body, sizeof body, "{" ENT_R1 "," HDR_HI ",\"cause\":\"%s\"}", cause);
    return parse_ok(body, id);
}

typedef struct loaded {
    alert **alerts;
    uint32_t count;
    int64_t generation;
    char warnings[2048];
    int nwarnings;
} loaded;

static void collect_warning(void *ctx, const char *message)
{
    loaded *l = ctx;
    l->nwarnings++;
    size_t n = strlen(l->warnings);
    snprintf(l->warnings + n, sizeof l->warnings - n, "%s\n", message);
}

static void load(live_store *ls, loaded *l)
{
    char err[512] = "";
    memset(l, 0, sizeof *l);
    if (live_store_load(ls, &l->alerts, &l->count, &l->generation, collect_warning, l, err,
                        sizeof err) != 0)
        fail_msg("live_store_load: %s", err);
}

/* "id:revision,..." of what was loaded. */
static void loaded_ids(const loaded *l, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < l->count && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%s:%lld", i ? "," : "", l->alerts[i]->id,
                              (long long)l->alerts[i]->revision);
}

static json_t *parse_json(const char *text, size_t len)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        fail_msg("not JSON (%s): %.300s", jerr.text, text);
    return root;
}

/* A live store in a fresh temporary folder (its path in `dir`); `path` gets
 * the folder's FILE (live.sqlite, or its WAL). */
static live_store *fresh_store(char *dir, size_t dir_cap, const char *name, char *path, size_t path_cap,
                               const char *file)
{
    char err[512] = "";
    test_tmpdir(dir, dir_cap, name);
    snprintf(path, path_cap, "%s/%s", dir, file);
    live_store *ls = live_store_open(dir, err, sizeof err);
    if (!ls)
        fail_msg("live_store_open: %s", err);
    return ls;
}

static void put_expect(live_store *ls, alert *a, const live_condition *c, int64_t now,
                       live_result want)
{
    char err[512] = "";
    live_result got = live_store_put(ls, a, c, now, err, sizeof err);
    if (got != want)
        fail_msg("put %s gave %d, expected %d (%s)", a->id, got, want, err);
}

static int64_t query_int64(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* What a load gives back for an alert `written` by a put: the same id,
 * content, revision and creation time. (updated_at: see
 * test_live_store_reload_keeps_updated_at_of_a_replace.) */
static void expect_same_stored(const alert *loaded_alert, const alert *written)
{
    assert_string_equal(loaded_alert->id, written->id);
    assert_string_equal(loaded_alert->content, written->content);
    assert_int_equal(loaded_alert->revision, written->revision);
    assert_int_equal(loaded_alert->created_at, written->created_at);
}

/* Creates, replaces and deletes under every kind of precondition; a refused
 * write changes nothing and takes no revision; reopening gives back exactly
 * what is stored; another connection's commit is noticed once. */
static void test_live_store_writes_and_preconditions(void **state)
{
    (void)state;
    char dir[600], path[700], err[512] = "", ids[256];
    live_store *ls = fresh_store(dir, sizeof dir, "alerts-live", path, sizeof path, "live.sqlite");
    assert_false(live_store_changed_elsewhere(ls));
    const live_condition none = {0};

    /* create */
    alert *x1 = stored_alert("x1", "STRIKE");
    put_expect(ls, x1, &none, 1000, LIVE_CREATED);
    assert_int_equal(x1->revision, 1);
    assert_int_equal(x1->created_at, 1000);
    assert_int_equal(x1->updated_at, 1000);
    assert_non_null(x1->json);
    json_t *rep = parse_json(x1->json, x1->json_len);
    assert_string_equal(json_string_value(json_object_get(rep, "id")), "x1");
    assert_int_equal(json_integer_value(json_object_get(rep, "revision")), 1);
    assert_string_equal(json_string_value(json_object_get(rep, "created_at")), "1970-01-01T00:16:40Z");
    assert_string_equal(json_string_value(json_object_get(rep, "updated_at")), "1970-01-01T00:16:40Z");
    assert_string_equal(json_string_value(json_object_get(rep, "cause")), "STRIKE");
    assert_int_equal(json_object_size(rep), 12);   /* 4 stamped + 8 content members */
    json_decref(rep);
    assert_false(live_store_changed_elsewhere(ls));   /* its own writes do not count */

    /* replace: a new revision, the creation time kept */
    alert *x1b = stored_alert("x1", "WEATHER");
    put_expect(ls, x1b, &none, 2000, LIVE_REPLACED);
    assert_int_equal(x1b->revision, 2);
    assert_int_equal(x1b->created_at, 1000);
    assert_int_equal(x1b->updated_at, 2000);

    /* If-Match with the old revision: refused, nothing changes */
    alert *x1c = stored_alert("x1", "ACCIDENT");
    live_condition stale = {.if_match = true, .nrevisions = 1, .revisions = {1}};
    put_expect(ls, x1c, &stale, 3000, LIVE_PRECONDITION_FAILED);
    assert_null(x1c->json);
    assert_int_equal(x1c->revision, 0);
    loaded l;
    load(ls, &l);
    assert_int_equal(l.count, 1);
    expect_same_stored(l.alerts[0], x1b);
    assert_int_equal(l.generation, 2);
    live_alerts_free(l.alerts, l.count);

    /* If-Match listing the current revision among others */
    live_condition tags = {.if_match = true, .nrevisions = 2, .revisions = {7, 2}};
    put_expect(ls, x1c, &tags, 3000, LIVE_REPLACED);
    assert_int_equal(x1c->revision, 3);   /* the refusal took no revision */
    assert_int_equal(x1c->created_at, 1000);

    /* If-Match: * needs the alert to exist; If-None-Match: * needs it not to */
    alert *x2 = stored_alert("x2", "STRIKE");
    live_condition any = {.if_match = true, .if_match_any = true};
    put_expect(ls, x2, &any, 4000, LIVE_PRECONDITION_FAILED);
    live_condition create_only = {.if_none_match_any = true};
    alert *x1d = stored_alert("x1", "HOLIDAY");
    put_expect(ls, x1d, &create_only, 4000, LIVE_PRECONDITION_FAILED);
    put_expect(ls, x2, &create_only, 4000, LIVE_CREATED);
    assert_int_equal(x2->revision, 4);
    put_expect(ls, x1d, &any, 4500, LIVE_REPLACED);
    assert_int_equal(x1d->revision, 5);

    /* a PATCH read revision 4 of x1 but x1 is at 5 now */
    alert *x1e = stored_alert("x1", "POLICE_ACTIVITY");
    live_condition read4 = {.expect_revision = 4};
    put_expect(ls, x1e, &read4, 5000, LIVE_PRECONDITION_FAILED);
    live_condition read5 = {.expect_revision = 5};
    put_expect(ls, x1e, &read5, 5000, LIVE_REPLACED);
    assert_int_equal(x1e->revision, 6);

    alert *a0 = stored_alert("a0", "OTHER_CAUSE");
    put_expect(ls, a0, &none, 6000, LIVE_CREATED);
    assert_int_equal(a0->revision, 7);

    /* delete */
    int64_t generation = -1;
    assert_int_equal(live_store_delete(ls, "nope", &none, &generation, err, sizeof err),
                     LIVE_NOT_FOUND);
    assert_int_equal(generation, -1);
    live_condition x2_stale = {.if_match = true, .nrevisions = 1, .revisions = {3}};
    assert_int_equal(live_store_delete(ls, "x2", &x2_stale, &generation, err, sizeof err),
                     LIVE_PRECONDITION_FAILED);
    /* no alert: 404 whatever the preconditions (RFC 9110 §13.2.1) */
    assert_int_equal(live_store_delete(ls, "nope", &any, &generation, err, sizeof err),
                     LIVE_NOT_FOUND);
    live_condition x2_now = {.if_match = true, .nrevisions = 1, .revisions = {4}};
    assert_int_equal(live_store_delete(ls, "x2", &x2_now, &generation, err, sizeof err),
                     LIVE_DELETED);
    assert_int_equal(generation, 8);
    assert_int_equal(live_store_delete(ls, "x2", &none, &generation, err, sizeof err),
                     LIVE_NOT_FOUND);
    assert_false(live_store_changed_elsewhere(ls));

    load(ls, &l);
    loaded_ids(&l, ids, sizeof ids);
    assert_string_equal(ids, "a0:7,x1:6");
    assert_int_equal(l.generation, 8);
    expect_same_stored(l.alerts[0], a0);
    expect_same_stored(l.alerts[1], x1e);
    assert_int_equal(l.alerts[1]->created_at, 1000);
    assert_int_equal(l.nwarnings, 0);
    live_alerts_free(l.alerts, l.count);

    /* close and reopen: the same alerts, and the generation goes on */
    live_store_close(ls);
    ls = live_store_open(dir, err, sizeof err);
    if (!ls)
        fail_msg("live_store_open (again): %s", err);
    load(ls, &l);
    loaded_ids(&l, ids, sizeof ids);
    assert_string_equal(ids, "a0:7,x1:6");
    assert_int_equal(l.generation, 8);
    expect_same_stored(l.alerts[0], a0);
    expect_same_stored(l.alerts[1], x1e);
    assert_int_equal(l.alerts[1]->nentities, 1);
    assert_string_equal(l.alerts[1]->entities[0].route_id, "R1");
    live_alerts_free(l.alerts, l.count);
    alert *b1 = stored_alert("b1", "STRIKE");
    put_expect(ls, b1, &none, 7000, LIVE_CREATED);
    assert_int_equal(b1->revision, 9);
    assert_false(live_store_changed_elsewhere(ls));

    /* another connection's commit is seen once */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    char *msg = NULL;
    if (sqlite3_exec(db, "INSERT INTO live_meta(key, value) VALUES ('elsewhere', 1)", NULL, NULL,
                     &msg) != SQLITE_OK)
        fail_msg("second connection: %s", msg);
    assert_true(live_store_changed_elsewhere(ls));
    assert_false(live_store_changed_elsewhere(ls));
    /* and another live_store (another server process) writing an alert */
    live_store *other = live_store_open(dir, err, sizeof err);
    if (!other)
        fail_msg("live_store_open (second): %s", err);
    alert *c1 = stored_alert("c1", "STRIKE");
    put_expect(other, c1, &none, 8000, LIVE_CREATED);
    assert_int_equal(c1->revision, 10);
    assert_true(live_store_changed_elsewhere(ls));
    assert_false(live_store_changed_elsewhere(ls));
    assert_false(live_store_changed_elsewhere(other));
    load(ls, &l);
    loaded_ids(&l, ids, sizeof ids);
    assert_string_equal(ids, "a0:7,b1:9,c1:10,x1:6");
    assert_int_equal(l.generation, 10);
    live_alerts_free(l.alerts, l.count);
    /* the v1 columns are kept filled for people reading the file */
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT cause, header_text, revision FROM alerts "
                                        "WHERE id = 'x1'",
                                        -1, &s, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "POLICE_ACTIVITY");
    assert_string_equal((const char *)sqlite3_column_text(s, 1), "Hi");
    assert_int_equal(sqlite3_column_int64(s, 2), 6);
    sqlite3_finalize(s);
    sqlite3_close(db);

    live_store_close(other);
    live_store_close(ls);
    alert *all[] = {x1, x1b, x1c, x1d, x1e, x2, a0, b1, c1};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        alert_release(all[i]);
    remove_dir(dir);
}

/* A replaced alert's updated_at is the time of the replace, in the
 * response of the put and after a reload (a restart, or another process
 * loading the store) alike: the representation does not change by being
 * read back. */
static void test_live_store_reload_keeps_updated_at_of_a_replace(void **state)
{
    (void)state;
    char dir[600], path[700], err[512] = "";
    live_store *ls = fresh_store(dir, sizeof dir, "alerts-updated", path, sizeof path, "live.sqlite");
    const live_condition none = {0};
    alert *first = stored_alert("u1", "STRIKE"), *second = stored_alert("u1", "WEATHER");
    put_expect(ls, first, &none, 1000, LIVE_CREATED);
    put_expect(ls, second, &none, 2000, LIVE_REPLACED);
    assert_int_equal(second->created_at, 1000);
    assert_int_equal(second->updated_at, 2000);
    live_store_close(ls);

    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    int64_t created = query_int64(db, "SELECT created_at FROM alerts WHERE id = 'u1'");
    int64_t updated = query_int64(db, "SELECT updated_at FROM alerts WHERE id = 'u1'");
    sqlite3_close(db);
    ls = live_store_open(dir, err, sizeof err);
    if (!ls)
        fail_msg("live_store_open (again): %s", err);
    loaded l;
    load(ls, &l);
    assert_int_equal(l.count, 1);
    int64_t reloaded = l.alerts[0]->updated_at;
    bool same_json = strcmp(l.alerts[0]->json, second->json) == 0;
    live_alerts_free(l.alerts, l.count);
    live_store_close(ls);
    alert_release(first);
    alert_release(second);
    remove_dir(dir);
    assert_int_equal(created, 1000);
    if (updated != 2000 || reloaded != 2000 || !same_json)
        fail_msg("after a replace at 2000: alerts.updated_at is %lld, a reload gives updated_at "
                 "%lld (expected 2000 for both)",
                 (long long)updated, (long long)reloaded);
}

typedef struct steady_writer {
    live_store *ls;
    volatile int stop;   /* set by the test thread; read once a write */
    int writes, failures;
} steady_writer;

static void *write_steadily(void *arg)
{
    steady_writer *w = arg;
    const live_condition none = {0};
    char id[16], err[256];
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        snprintf(id, sizeof id, "s%d", w->writes % 40);
        alert *a = stored_alert(id, "STRIKE");
        live_result r = live_store_put(w->ls, a, &none, 1000 + w->writes, err, sizeof err);
        if (r != LIVE_CREATED && r != LIVE_REPLACED)
            w->failures++;
        alert_release(a);
        __atomic_store_n(&w->writes, w->writes + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* The WAL header's checkpoint sequence number (big-endian, at byte 12):
 * SQLite adds one each time the WAL starts over from its beginning. */
static uint32_t wal_restarts(const char *wal)
{
    unsigned char h[16] = {0};
    FILE *f = fopen(wal, "rb");
    if (f) {
        if (fread(h, 1, sizeof h, f) != sizeof h)
            memset(h, 0, sizeof h);
        fclose(f);
    }
    return (uint32_t)h[12] << 24 | (uint32_t)h[13] << 16 | (uint32_t)h[14] << 8 | h[15];
}

/* Under writes that never pause, each checkpoint still catches up with the
 * WAL, so it starts over instead of growing with every write (it grew to
 * 1.1 GB in 5 s of PUTs when every checkpoint ran while writers appended and
 * so never caught up). */
static void test_live_store_wal_starts_over_under_steady_writes(void **state)
{
    (void)state;
    char dir[600], wal[720];
    live_store *ls = fresh_store(dir, sizeof dir, "alerts-wal-restart", wal, sizeof wal, "live.sqlite-wal");
    steady_writer w = {.ls = ls};
    pthread_t writer;
    assert_int_equal(pthread_create(&writer, NULL, write_steadily, &w), 0);
    nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    uint32_t first = wal_restarts(wal);
    enum { CHECKPOINTS = 30 };
    for (int i = 0; i < CHECKPOINTS; i++) {
        nanosleep(&(struct timespec){.tv_nsec = 5 * 1000 * 1000}, NULL);
        assert_true(live_store_checkpoint(ls) >= 0);
        /* the writer must have written after this checkpoint before the next
         * one, whatever the scheduler did: wait (1 ms steps, 2 s at most) for
         * two more writes, the first of which may have begun before it */
        int seen = __atomic_load_n(&w.writes, __ATOMIC_ACQUIRE);
        for (int waited = 0; waited < 2000 && __atomic_load_n(&w.writes, __ATOMIC_ACQUIRE) < seen + 2; waited++)
            nanosleep(&(struct timespec){.tv_nsec = 1000 * 1000}, NULL);
    }
    nanosleep(&(struct timespec){.tv_nsec = 5 * 1000 * 1000}, NULL);
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    pthread_join(writer, NULL);
    uint32_t last = wal_restarts(wal);
    assert_int_equal(w.failures, 0);
    /* each checkpoint caught up, and the write after it started the WAL over
     * (half leaves room for a writer the scheduler kept off the CPU between
     * two checkpoints; without the catching up it was 4 of 30) */
    if (last - first < CHECKPOINTS / 2)
        fail_msg("the WAL started over %u times in %d checkpoints under %d writes",
                 last - first, CHECKPOINTS, w.writes);
    struct stat st;
    assert_int_equal(stat(wal, &st), 0);
    live_store_close(ls);
    remove_dir(dir);
}

/* Writes leave their pages in the WAL (no checkpoint, hence no fsync, on
 * a server thread); live_store_checkpoint moves them into the database file,
 * and what it moved reads back the same. */
static void test_live_store_checkpoints_apart_from_writes(void **state)
{
    (void)state;
    char dir[600], path[700], err[512] = "";
    live_store *ls = fresh_store(dir, sizeof dir, "alerts-ckpt", path, sizeof path, "live.sqlite");
    const live_condition none = {0};
    char id[16];
    for (int i = 0; i < 300; i++) {   /* more pages than SQLite's default autocheckpoint (1000) */
        snprintf(id, sizeof id, "c%d", i % 40);
        alert *a = stored_alert(id, "STRIKE");
        put_expect(ls, a, &none, 1000 + i, i < 40 ? LIVE_CREATED : LIVE_REPLACED);
        alert_release(a);
    }
    struct stat before;
    char wal[720];
    snprintf(wal, sizeof wal, "%s-wal", path);
    assert_int_equal(stat(wal, &before), 0);
    assert_true(before.st_size > 1000 * 4096);   /* nothing was checkpointed along the way */
    int copied = live_store_checkpoint(ls);
    if (copied <= 1000)
        fail_msg("checkpoint copied %d frames", copied);
    assert_int_equal(live_store_checkpoint(ls), copied);   /* all of the WAL is in, still */
    live_store_close(ls);
    ls = live_store_open(dir, err, sizeof err);
    if (!ls)
        fail_msg("live_store_open (again): %s", err);
    loaded l;
    load(ls, &l);
    assert_int_equal(l.count, 40);
    live_alerts_free(l.alerts, l.count);
    live_store_close(ls);
    remove_dir(dir);
}

/* ================================================================ schema v1 */

/* live.sqlite as a schema-v1 build left it (the tables of LIVE_SCHEMA_V1). */
static const char V1_FILE[] =
    "CREATE TABLE schema_version(version INTEGER NOT NULL PRIMARY KEY,"
    " applied_at INTEGER NOT NULL);"
    "CREATE TABLE alerts(id TEXT NOT NULL PRIMARY KEY, cause TEXT, effect TEXT, header_text TEXT,"
    " description_text TEXT, url TEXT, active_from INTEGER, active_until INTEGER,"
    " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);"
    "CREATE INDEX alerts_active_until ON alerts(active_until);"
    "CREATE TABLE alert_entities(alert_id TEXT NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,"
    " agency_id TEXT, route_id TEXT, stop_id TEXT, trip_id TEXT);"
    "CREATE INDEX alert_entities_alert ON alert_entities(alert_id);"
    "CREATE INDEX alert_entities_route ON alert_entities(route_id) WHERE route_id IS NOT NULL;"
    "CREATE INDEX alert_entities_stop ON alert_entities(stop_id) WHERE stop_id IS NOT NULL;"
    "CREATE INDEX alert_entities_trip ON alert_entities(trip_id) WHERE trip_id IS NOT NULL;"
    "CREATE INDEX alert_entities_agency ON alert_entities(agency_id) WHERE agency_id IS NOT NULL;"
    "INSERT INTO schema_version VALUES (1, 5);"
    "PRAGMA user_version=1;"
    "INSERT INTO alerts(id, cause, effect, header_text, description_text, url, active_from,"
    " active_until, created_at, updated_at)"
    " VALUES ('a1', 'STRIKE', NULL, 'Strike', NULL, NULL, 100, 200, 50, 60);"
    "INSERT INTO alert_entities(alert_id, route_id) VALUES ('a1', 'R1');"
    /* no header text: it does not check under v2 */
    "INSERT INTO alerts(id, cause, effect, header_text, description_text, url, active_from,"
    " active_until, created_at, updated_at)"
    " VALUES ('bad', 'STRIKE', 'NO_SERVICE', NULL, NULL, NULL, NULL, NULL, 1, 1);"
    "INSERT INTO alert_entities(alert_id, stop_id) VALUES ('bad', 'S1');";

/* A schema-v1 file is upgraded in place: its alert comes back with its
 * cause, text, period and entity; a row that does not check under v2 is
 * skipped with a warning and left in the file. */
static void test_live_store_upgrades_schema_v1(void **state)
{
    (void)state;
    char dir[600], path[700], err[512] = "";
    test_tmpdir(dir, sizeof dir, "alerts-v1");
    snprintf(path, sizeof path, "%s/live.sqlite", dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, V1_FILE, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("v1 file: %s", msg);
    assert_int_equal(query_int64(db, "PRAGMA user_version"), 1);
    sqlite3_close(db);

    live_store *ls = live_store_open(dir, err, sizeof err);
    if (!ls)
        fail_msg("live_store_open: %s", err);
    loaded l;
    load(ls, &l);
    assert_int_equal(l.count, 1);
    const alert *a = l.alerts[0];
    assert_string_equal(a->id, "a1");
    assert_string_equal(a->content,
                        "{\"active_period\":[{\"start\":\"1970-01-01T00:01:40Z\","
                        "\"end\":\"1970-01-01T00:03:20Z\"}],"
                        "\"informed_entity\":[{\"route_id\":\"R1\"}],"
                        "\"cause\":\"STRIKE\",\"effect\":\"UNKNOWN_EFFECT\","
                        "\"severity_level\":\"UNKNOWN_SEVERITY\","
                        "\"header_text\":{\"translation\":[{\"text\":\"Strike\"}]},"
                        "\"description_text\":null,\"url\":null}");
    assert_int_equal(a->nperiods, 1);
    assert_int_equal(a->periods[0].start, 100);
    assert_int_equal(a->periods[0].end, 200);
    assert_int_equal(a->nentities, 1);
    assert_string_equal(a->entities[0].route_id, "R1");
    assert_null(a->entities[0].stop_id);
    assert_null(a->entities[0].trip_id);
    assert_null(a->entities[0].agency_id);
    assert_int_equal(a->created_at, 50);
    assert_int_equal(a->updated_at, 60);
    assert_true(a->revision >= 1);
    assert_true(l.generation >= a->revision);
    int64_t generation = l.generation;
    assert_int_equal(l.nwarnings, 1);
    assert_non_null(strstr(l.warnings, path));
    assert_non_null(strstr(l.warnings, "'bad'"));
    assert_non_null(strstr(l.warnings, "/header_text"));
    live_alerts_free(l.alerts, l.count);

    /* writes go on from the carried-over generation */
    alert *n = stored_alert("n1", "STRIKE");
    put_expect(ls, n, &(live_condition){0}, 9000, LIVE_CREATED);
    assert_int_equal(n->revision, generation + 1);
    alert_release(n);
    live_store_close(ls);

    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(query_int64(db, "PRAGMA user_version"), 2);
    assert_int_equal(query_int64(db, "SELECT count(*) FROM schema_version"), 2);
    assert_int_equal(query_int64(db, "SELECT count(*) FROM alerts WHERE id = 'bad'"), 1);
    assert_int_equal(query_int64(db, "SELECT count(*) FROM alert_entities WHERE alert_id = 'bad'"),
                     1);
    assert_int_equal(query_int64(db, "SELECT count(*) FROM alert_periods WHERE alert_id = 'a1'"
                                     " AND start = 100 AND end = 200"),
                     1);
    sqlite3_close(db);

    /* opened again: nothing is upgraded twice, the bad row is still reported */
    ls = live_store_open(dir, err, sizeof err);
    if (!ls)
        fail_msg("live_store_open (again): %s", err);
    load(ls, &l);
    assert_int_equal(l.count, 2);
    assert_int_equal(l.nwarnings, 1);
    live_alerts_free(l.alerts, l.count);
    live_store_close(ls);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(query_int64(db, "SELECT count(*) FROM schema_version"), 2);
    sqlite3_close(db);
    remove_dir(dir);
}

/* ================================================================ matching */

/* A station STA with platforms P1 and P2, a stop S2 a few metres away, END
 * far away. R1 (bus, agency A1) runs T1A in direction 0 and T1B in direction
 * 1; R2 (tram, agency A2) runs T2. Weekdays only. Departures on a weekday
 * from 07:55 for an hour, in order:
 *   08:00 P1 T1A   08:05 S2 T1A   08:10 P2 T1B
 *   08:15 S2 T1B   08:20 P1 T2    08:25 S2 T2 */
static char g_feed[600];
static dataset *g_ds;
static api_thread *g_thread;
static json_writer g_out;
static api_problem g_prob;

static void write_feed(const char *dir)
{
    test_write_file(dir, "agency.txt",
                    "agency_id,agency_name,agency_url,agency_timezone\n"
                    "A1,Bus Co,http://example.com,America/New_York\n"
                    "A2,Tram Co,http://example.org,America/New_York\n");
    test_write_file(dir, "calendar.txt",
                    "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
                    "start_date,end_date\n"
                    "WK,1,1,1,1,1,0,0,20261001,20261231\n");
    test_write_file(dir, "stops.txt",
                    "stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station\n"
                    "STA,Central,41.0000,-73.0000,1,\n"
                    "P1,Central 1,41.0001,-73.0000,0,STA\n"
                    "P2,Central 2,41.0000,-73.0001,0,STA\n"
                    "S2,Corner,41.0003,-73.0000,0,\n"
                    "END,Depot,41.1000,-73.0000,0,\n");
    test_write_file(dir, "routes.txt",
                    "route_id,agency_id,route_short_name,route_long_name,route_type\n"
                    "R1,A1,1,Bus One,3\n"
                    "R2,A2,2,Tram Two,0\n");
    test_write_file(dir, "trips.txt",
                    "route_id,service_id,trip_id,direction_id\n"
                    "R1,WK,T1A,0\n"
                    "R1,WK,T1B,1\n"
                    "R2,WK,T2,0\n");
    test_write_file(dir, "stop_times.txt",
                    "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                    "T1A,08:00:00,08:00:00,P1,1\n"
                    "T1A,08:05:00,08:05:00,S2,2\n"
                    "T1A,08:30:00,08:30:00,END,3\n"
                    "T1B,08:10:00,08:10:00,P2,1\n"
                    "T1B,08:15:00,08:15:00,S2,2\n"
                    "T1B,08:40:00,08:40:00,END,3\n"
                    "T2,08:20:00,08:20:00,P1,1\n"
                    "T2,08:25:00,08:25:00,S2,2\n"
                    "T2,08:50:00,08:50:00,END,3\n");
}

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_feed, sizeof g_feed, "alerts-feed");
    write_feed(g_feed);
    diag d;
    diag_init(&d);
    timetable_stats st;
    g_ds = test_build_timetable(g_feed, &d, &st);
    diag_destroy(&d);
    g_thread = api_thread_new();
    json_init(&g_out);
    return g_ds && g_thread ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    json_free(&g_out);
    api_thread_free(g_thread);
    dataset_close(g_ds);
    /* the feed, and the directories of tests that failed before removing theirs */
    const char *base = getenv("TRANSITD_TEST_TMP");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'/alerts-*-%ld", base ? base : "/tmp/transitd-test",
             (long)getpid());
    return system(cmd) == 0 ? 0 : -1;
}

typedef struct alert_spec {
    const char *id;
    const char *entities;    /* the informed_entity array */
    const char *periods;     /* the active_period array, or NULL */
} alert_spec;

static alert *spec_alert(const alert_spec *s)
{
    char body[2048];
    snprintf(body, sizeof body, "{\"informed_entity\":%s,\"header_text\":{\"translation\":"
             "[{\"text\":\"About %s\"}]}%s%s}",
             s->entities, s->id, s->periods ? ",\"active_period\":" : "",
             s->periods ? s->periods : "");
    alert *a = parse_ok(body, s->id);
    assert_int_equal(alert_stamp(a, 1, MON_0800, MON_0800), 0);
    return a;
}

/* A view of the alerts specs[0..n) (given in id order) for ds. */
static alert_view *view_of(const alert_spec *specs, size_t n, dataset *ds, int64_t generation)
{
    alert *list[32];
    assert_true(n <= 32);
    for (size_t i = 0; i < n; i++) {
        if (i)
            assert_true(strcmp(specs[i - 1].id, specs[i].id) < 0);
        list[i] = spec_alert(&specs[i]);
    }
    alert_view *v = alert_view_new(list, (uint32_t)n, ds, generation);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        alert_release(list[i]);
    return v;
}

/* Calls an endpoint; the body is in g_out, a problem in g_prob. */
static int call(api_endpoint_fn fn, dataset *ds, const alert_view *v, const char *id, int64_t now,
                const api_param *params, int nparams)
{
    api_request req = {.params = params, .nparams = nparams, .id = id, .now = now, .alerts = v};
    json_reset(&g_out);
    memset(&g_prob, 0, sizeof g_prob);
    int cache = -1;
    return fn(g_thread, ds, &req, &g_out, &g_prob, &cache);
}

static json_t *call_json(api_endpoint_fn fn, dataset *ds, const alert_view *v, const char *id,
                         int64_t now, const api_param *params, int nparams)
{
    int status = call(fn, ds, v, id, now, params, nparams);
    if (status != 200)
        fail_msg("status %d: %s %s", status, g_prob.param, g_prob.detail);
    return parse_json(g_out.buf, g_out.len);
}

/* The departures of station STA (its platforms) from 07:55 local on `day`. */
static json_t *station_departures(const alert_view *v, const char *day, const char *stop)
{
    char time[40];
    snprintf(time, sizeof time, "%sT07:55:00-05:00", day);
    const api_param params[] = {{"time", time}, {"window", "60"}};
    return call_json(api_stop_departures, g_ds, v, stop, MON_0800, params, 2);
}

/* The departures near STA (P1, P2, S2) from 07:55 local on `day`. */
static json_t *nearby_departures_on(const alert_view *v, const char *day)
{
    char time[40];
    snprintf(time, sizeof time, "%sT07:55:00-05:00", day);
    const api_param params[] = {{"lat", "41.0"}, {"lon", "-73.0"}, {"radius", "100"},
                                {"time", time},  {"window", "60"}};
    return call_json(api_departures, g_ds, v, NULL, MON_0800, params, 5);
}

#define MON "2026-11-02"
#define TUE "2026-11-03"

/* "stop trip[:alert,...] | ..." of a departures response's rows: a row
 * with an "alerts" member gets ':' and its ids, even when there are none. */
static void rows_of(const json_t *root, char *out, size_t cap)
{
    const json_t *rows = json_object_get(root, "departures");
    assert_true(json_is_array(rows));
    size_t o = 0, i;
    const json_t *row;
    out[0] = '\0';
    json_array_foreach(rows, i, row) {
        o += (size_t)snprintf(out + o, cap - o, "%s%s %s", i ? " | " : "",
                              json_string_value(json_object_get(row, "stop_id")),
                              json_string_value(json_object_get(row, "trip_id")));
        const json_t *ids = json_object_get(row, "alerts");
        if (!ids)
            continue;
        assert_true(json_is_array(ids));
        o += (size_t)snprintf(out + o, cap - o, ":");
        size_t k;
        const json_t *id;
        json_array_foreach(ids, k, id)
            o += (size_t)snprintf(out + o, cap - o, "%s%s", k ? "," : "", json_string_value(id));
        assert_true(o < cap);
    }
}

/* The ids of a response's top-level "alerts" list, joined by ','; each
 * element must be the alert's whole representation as the view holds it. */
static void listed_of(const json_t *root, const alert_view *v, char *out, size_t cap)
{
    const json_t *list = json_object_get(root, "alerts");
    assert_true(json_is_array(list));
    size_t o = 0, i;
    const json_t *item;
    out[0] = '\0';
    json_array_foreach(list, i, item) {
        const char *id = json_string_value(json_object_get(item, "id"));
        assert_non_null(id);
        o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "," : "", id);
        long at = alert_view_find(v, id);
        if (at < 0)
            fail_msg("listed alert %s is not in the view", id);
        const alert *a = alert_view_at(v, (uint32_t)at);
        json_t *want = parse_json(a->json, a->json_len);
        if (!json_equal((json_t *)item, want))
            fail_msg("listed alert %s differs from its representation", id);
        json_decref(want);
        assert_true(o < cap);
    }
}

/* Checks a departures response's rows and list. */
static void expect_departures(json_t *root, const alert_view *v, const char *rows,
                              const char *listed)
{
    char got[1024];
    rows_of(root, got, sizeof got);
    assert_string_equal(got, rows);
    listed_of(root, v, got, sizeof got);
    assert_string_equal(got, listed);
    json_decref(root);
}

/* An alert on a station shows on its platforms' rows and once in the list;
 * one on a platform only on that platform's rows. */
static void test_stop_alert_shows_on_its_platforms_rows(void **state)
{
    (void)state;
    const alert_spec specs[] = {
        {"a-p1", "[{\"stop_id\":\"P1\"}]", NULL},
        {"a-sta", "[{\"stop_id\":\"STA\"}]", NULL},
    };
    alert_view *v = view_of(specs, 2, g_ds, 1);
    expect_departures(station_departures(v, MON, "STA"), v,
                      "P1 T1A:a-p1,a-sta | P2 T1B:a-sta | P1 T2:a-p1,a-sta", "a-p1,a-sta");
    expect_departures(station_departures(v, MON, "P2"), v, "P2 T1B:a-sta", "a-sta");
    expect_departures(station_departures(v, MON, "S2"), v, "S2 T1A | S2 T1B | S2 T2", "");
    expect_departures(nearby_departures_on(v, MON), v,
                      "P1 T1A:a-p1,a-sta | S2 T1A | P2 T1B:a-sta | S2 T1B | P1 T2:a-p1,a-sta | S2 T2",
                      "a-p1,a-sta");
    /* without a view: no row has an "alerts" member, the list is empty */
    expect_departures(nearby_departures_on(NULL, MON), v,
                      "P1 T1A | S2 T1A | P2 T1B | S2 T1B | P1 T2 | S2 T2", "");
    alert_view_release(v);
}

static void test_route_alert_only_on_its_routes_rows(void **state)
{
    (void)state;
    const alert_spec specs[] = {{"r2", "[{\"route_id\":\"R2\"}]", NULL}};
    alert_view *v = view_of(specs, 1, g_ds, 1);
    expect_departures(nearby_departures_on(v, MON), v,
                      "P1 T1A | S2 T1A | P2 T1B | S2 T1B | P1 T2:r2 | S2 T2:r2", "r2");
    expect_departures(station_departures(v, MON, "P2"), v, "P2 T1B", "");
    alert_view_release(v);
}

/* A trip alert with a start_date is about that day's run only; without one,
 * about every run. */
static void test_trip_alert_with_start_date_only_on_that_days_run(void **state)
{
    (void)state;
    const alert_spec specs[] = {
        {"t-any", "[{\"trip\":{\"trip_id\":\"T1B\"}}]", NULL},
        {"t-mon", "[{\"trip\":{\"trip_id\":\"T1A\",\"start_date\":\"20261102\"}}]", NULL},
    };
    alert_view *v = view_of(specs, 2, g_ds, 1);
    expect_departures(nearby_departures_on(v, MON), v,
                      "P1 T1A:t-mon | S2 T1A:t-mon | P2 T1B:t-any | S2 T1B:t-any | P1 T2 | S2 T2",
                      "t-any,t-mon");
    expect_departures(nearby_departures_on(v, TUE), v,
                      "P1 T1A | S2 T1A | P2 T1B:t-any | S2 T1B:t-any | P1 T2 | S2 T2", "t-any");
    alert_view_release(v);
}

static void test_route_direction_alert_only_on_that_direction(void **state)
{
    (void)state;
    const alert_spec specs[] = {
        {"dir0", "[{\"route_id\":\"R1\",\"direction_id\":0}]", NULL},
        {"dir1", "[{\"route_id\":\"R1\",\"direction_id\":1}]", NULL},
        {"r2-dir1", "[{\"route_id\":\"R2\",\"direction_id\":1}]", NULL},
        {"t1b-dir0", "[{\"trip\":{\"trip_id\":\"T1B\"},\"direction_id\":0}]", NULL},
    };
    alert_view *v = view_of(specs, 4, g_ds, 1);
    expect_departures(nearby_departures_on(v, MON), v,
                      "P1 T1A:dir0 | S2 T1A:dir0 | P2 T1B:dir1 | S2 T1B:dir1 | P1 T2 | S2 T2",
                      "dir0,dir1");
    alert_view_release(v);
}

/* Agency and route type alerts, alone and with other selectors (all must
 * match: a route of another agency, a stop of another route type). */
static void test_agency_and_route_type_alerts(void **state)
{
    (void)state;
    const alert_spec specs[] = {
        {"a1-r2", "[{\"agency_id\":\"A1\",\"route_id\":\"R2\"}]", NULL},
        {"ag2", "[{\"agency_id\":\"A2\"}]", NULL},
        {"bus", "[{\"route_type\":3}]", NULL},
        {"ferry", "[{\"route_type\":4}]", NULL},
        {"tram-s2", "[{\"route_type\":0,\"stop_id\":\"S2\"}]", NULL},
    };
    alert_view *v = view_of(specs, 5, g_ds, 1);
    expect_departures(nearby_departures_on(v, MON), v,
                      "P1 T1A:bus | S2 T1A:bus | P2 T1B:bus | S2 T1B:bus | P1 T2:ag2 | "
                      "S2 T2:ag2,tram-s2",
                      "ag2,bus,tram-s2");
    alert_view_release(v);
}

/* A row shows an alert only when one of its periods holds the row's
 * instant: start included, end excluded. */
static void test_alert_outside_its_period_is_not_on_the_row(void **state)
{
    (void)state;
    const alert_spec specs[] = {
        /* S2 from 08:05 to 08:15, and from 08:25 to 08:30 */
        {"p-early", "[{\"stop_id\":\"S2\"}]",
         "[{\"start\":\"2026-11-02T08:05:00-05:00\",\"end\":\"2026-11-02T08:15:00-05:00\"},"
         "{\"start\":\"2026-11-02T13:25:00Z\",\"end\":\"2026-11-02T13:30:00Z\"}]"},
        /* R1 from 08:10 on */
        {"p-later", "[{\"route_id\":\"R1\"}]", "[{\"start\":\"2026-11-02T08:10:00-05:00\"}]"},
        /* the tram, only before Monday */
        {"p-past", "[{\"route_id\":\"R2\"}]", "[{\"end\":\"2026-11-02T00:00:00-05:00\"}]"},
    };
    alert_view *v = view_of(specs, 3, g_ds, 1);
    expect_departures(nearby_departures_on(v, MON), v,
                      "P1 T1A | S2 T1A:p-early | P2 T1B:p-later | S2 T1B:p-later | P1 T2 | "
                      "S2 T2:p-early",
                      "p-early,p-later");
    alert_view_release(v);
}

/* A stop's detail lists the alerts active now about the stop, its station
 * or platforms, and the routes serving it (their agencies and types), but
 * not alerts about single trips. */
static void test_stop_detail_shows_stop_and_route_alerts_not_trip_alerts(void **state)
{
    (void)state;
    const alert_spec specs[] = {
        {"ag1", "[{\"agency_id\":\"A1\"}]", NULL},
        {"p1", "[{\"stop_id\":\"P1\"}]", NULL},
        {"r1-later", "[{\"route_id\":\"R1\"}]", "[{\"start\":\"2026-11-02T09:00:00-05:00\"}]"},
        {"r2", "[{\"route_id\":\"R2\"}]", NULL},
        {"s2", "[{\"stop_id\":\"S2\"}]", NULL},
        {"sta", "[{\"stop_id\":\"STA\"}]", NULL},
        {"tram", "[{\"route_type\":0}]", NULL},
        {"trip", "[{\"trip\":{\"trip_id\":\"T1A\"}}]", NULL},
    };
    alert_view *v = view_of(specs, 8, g_ds, 1);
    char got[256];
    struct { const char *stop, *listed; } cases[] = {
        {"STA", "ag1,p1,r2,sta,tram"},   /* routes R1 and R2 serve its platforms */
        {"P1", "ag1,p1,r2,sta,tram"},
        {"P2", "ag1,sta"},                /* only R1 serves P2 */
        {"S2", "ag1,r2,s2,tram"},
        {"END", "ag1,r2,tram"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *root = call_json(api_stop, g_ds, v, cases[i].stop, MON_0800, NULL, 0);
        listed_of(root, v, got, sizeof got);
        if (strcmp(got, cases[i].listed) != 0)
            fail_msg("stop %s lists '%s', expected '%s'", cases[i].stop, got, cases[i].listed);
        json_decref(root);
    }
    /* at 09:00 the later route alert is active too */
    json_t *root = call_json(api_stop, g_ds, v, "P2", MON_0800 + 3600, NULL, 0);
    listed_of(root, v, got, sizeof got);
    assert_string_equal(got, "ag1,r1-later,sta");
    json_decref(root);
    /* without alerts the member is an empty list */
    root = call_json(api_stop, g_ds, NULL, "STA", MON_0800, NULL, 0);
    assert_true(json_is_array(json_object_get(root, "alerts")));
    assert_int_equal(json_array_size(json_object_get(root, "alerts")), 0);
    json_decref(root);
    alert_view_release(v);
}

static void expect_reference_refused(const char *entities, const char *pointer, const char *id)
{
    const alert_spec spec = {"ref", entities, NULL};
    alert *a = spec_alert(&spec);
    alert_error err = {0};
    assert_int_equal(alert_check_references(a, g_ds, &err), -1);
    assert_int_equal(err.status, 422);
    assert_string_equal(err.pointer, pointer);
    if (!strstr(err.detail, id))
        fail_msg("'%s' does not name '%s'", err.detail, id);
    alert_release(a);
}

static void test_check_references_names_the_unknown_id(void **state)
{
    (void)state;
    const alert_spec known = {
        "ok",
        "[{\"stop_id\":\"STA\"},{\"route_id\":\"R2\",\"agency_id\":\"A2\"},"
        "{\"trip\":{\"trip_id\":\"T1A\",\"start_date\":\"20300101\"}},{\"route_type\":7}]",
        NULL};
    alert *a = spec_alert(&known);
    alert_error err = {0};
    assert_int_equal(alert_check_references(a, g_ds, &err), 0);
    alert_release(a);
    expect_reference_refused("[{\"stop_id\":\"NOPE\"}]", "/informed_entity/0/stop_id", "NOPE");
    expect_reference_refused("[{\"stop_id\":\"P1\"},{\"route_id\":\"R9\"}]",
                             "/informed_entity/1/route_id", "R9");
    expect_reference_refused("[{\"route_id\":\"R1\"},{\"stop_id\":\"P1\"},"
                             "{\"trip\":{\"trip_id\":\"TX\"}}]",
                             "/informed_entity/2/trip/trip_id", "TX");
    expect_reference_refused("[{\"agency_id\":\"A9\"}]", "/informed_entity/0/agency_id", "A9");
    expect_reference_refused("[{\"route_id\":\"R1\",\"agency_id\":\"A9\"}]",
                             "/informed_entity/0/agency_id", "A9");
}

/* An alert naming ids this dataset lacks is kept and listed, and touches
 * no row; an entity of it that does resolve still counts. */
static void test_alert_on_unknown_ids_is_listed_but_matches_nothing(void **state)
{
    (void)state;
    const alert_spec specs[] = {
        {"ghost", "[{\"stop_id\":\"GHOST\"}]", NULL},
        {"mixed", "[{\"stop_id\":\"GHOST\"},{\"route_id\":\"R2\"}]", NULL},
        {"r2-a9", "[{\"route_id\":\"R2\",\"agency_id\":\"A9\"}]", NULL},
        {"trip-x", "[{\"trip\":{\"trip_id\":\"TX\"}}]", NULL},
    };
    alert_view *v = view_of(specs, 4, g_ds, 1);
    expect_departures(nearby_departures_on(v, MON), v,
                      "P1 T1A | S2 T1A | P2 T1B | S2 T1B | P1 T2:mixed | S2 T2:mixed", "mixed");
    char got[256];
    json_t *root = call_json(api_alerts, g_ds, v, NULL, MON_0800, NULL, 0);
    listed_of(root, v, got, sizeof got);
    assert_string_equal(got, "ghost,mixed,r2-a9,trip-x");
    json_decref(root);
    const api_param by_stop[] = {{"stop_id", "GHOST"}};
    root = call_json(api_alerts, g_ds, v, NULL, MON_0800, by_stop, 1);
    listed_of(root, v, got, sizeof got);
    assert_string_equal(got, "ghost,mixed");
    json_decref(root);
    root = call_json(api_stop, g_ds, v, "STA", MON_0800, NULL, 0);
    listed_of(root, v, got, sizeof got);
    assert_string_equal(got, "mixed");
    json_decref(root);
    alert_view_release(v);
}

/* GET /v1/alerts with the given parameters: the ids listed, then
 * "truncated", then next_after when there is one. */
static void expect_list(const alert_view *v, const api_param *params, int nparams,
                        const char *want)
{
    json_t *root = call_json(api_alerts, g_ds, v, NULL, MON_0800, params, nparams);
    char got[512];
    listed_of(root, v, got, sizeof got);
    size_t o = strlen(got);
    const json_t *truncated = json_object_get(root, "truncated");
    assert_true(json_is_boolean(truncated));
    o += (size_t)snprintf(got + o, sizeof got - o, " truncated=%s",
                          json_is_true(truncated) ? "true" : "false");
    const json_t *next = json_object_get(root, "next_after");
    if (next)
        snprintf(got + o, sizeof got - o, " next_after=%s", json_string_value(next));
    if (strcmp(got, want) != 0)
        fail_msg("%s=%s...: got '%s', expected '%s'", nparams ? params[0].key : "",
                 nparams ? params[0].value : "", got, want);
    json_decref(root);
}

static void test_alert_list_filters_and_pages(void **state)
{
    (void)state;
    const alert_spec specs[] = {
        {"f-a", "[{\"stop_id\":\"STA\"}]",
         "[{\"start\":\"2026-11-02T08:00:00-05:00\",\"end\":\"2026-11-02T09:00:00-05:00\"}]"},
        {"f-b", "[{\"route_id\":\"R2\"}]", NULL},
        {"f-c", "[{\"route_id\":\"R2\"},{\"stop_id\":\"S2\"}]",
         "[{\"start\":\"2026-11-03T00:00:00-05:00\"}]"},
        {"f-d", "[{\"trip\":{\"trip_id\":\"T1A\"},\"route_id\":\"R1\"}]", NULL},
        {"f-e", "[{\"agency_id\":\"A2\",\"stop_id\":\"P1\"}]", NULL},
    };
    alert_view *v = view_of(specs, 5, g_ds, 1);
    expect_list(v, NULL, 0, "f-a,f-b,f-c,f-d,f-e truncated=false");
    expect_list(v, (const api_param[]){{"stop_id", "STA"}}, 1, "f-a truncated=false");
    expect_list(v, (const api_param[]){{"stop_id", "P1"}}, 1, "f-e truncated=false");
    expect_list(v, (const api_param[]){{"route_id", "R2"}}, 1, "f-b,f-c truncated=false");
    expect_list(v, (const api_param[]){{"trip_id", "T1A"}}, 1, "f-d truncated=false");
    expect_list(v, (const api_param[]){{"agency_id", "A2"}}, 1, "f-e truncated=false");
    expect_list(v, (const api_param[]){{"route_id", "R1"}, {"trip_id", "T1A"}}, 2,
                "f-d truncated=false");
    expect_list(v, (const api_param[]){{"route_id", "R9"}}, 1, " truncated=false");
    expect_list(v, (const api_param[]){{"active_at", "2026-11-02T08:30:00-05:00"}}, 1,
                "f-a,f-b,f-d,f-e truncated=false");
    expect_list(v, (const api_param[]){{"active_at", "2026-11-02T14:00:00Z"}}, 1,
                "f-b,f-d,f-e truncated=false");   /* 09:00 local: f-a has ended */
    expect_list(v, (const api_param[]){{"active_at", "2026-11-03T08:00"}}, 1,
                "f-b,f-c,f-d,f-e truncated=false");   /* local time, read in the feed's zone */
    expect_list(v, (const api_param[]){{"active_at", "now"}}, 1,
                "f-a,f-b,f-d,f-e truncated=false");   /* req.now is Monday 08:00 */
    expect_list(v, (const api_param[]){{"route_id", "R2"}, {"active_at", "now"}}, 2,
                "f-b truncated=false");
    /* pages */
    expect_list(v, (const api_param[]){{"limit", "2"}}, 1, "f-a,f-b truncated=true next_after=f-b");
    expect_list(v, (const api_param[]){{"limit", "2"}, {"after", "f-b"}}, 2,
                "f-c,f-d truncated=true next_after=f-d");
    expect_list(v, (const api_param[]){{"limit", "2"}, {"after", "f-d"}}, 2, "f-e truncated=false");
    expect_list(v, (const api_param[]){{"limit", "1"}, {"after", "f-c"}}, 2,
                "f-d truncated=true next_after=f-d");
    expect_list(v, (const api_param[]){{"limit", "1"}, {"after", "f-d"}}, 2, "f-e truncated=false");
    expect_list(v, (const api_param[]){{"after", "f-bb"}}, 1, "f-c,f-d,f-e truncated=false");
    expect_list(v, (const api_param[]){{"after", "f-e"}}, 1, " truncated=false");
    expect_list(v, (const api_param[]){{"route_id", "R2"}, {"limit", "1"}}, 2,
                "f-b truncated=true next_after=f-b");
    expect_list(v, (const api_param[]){{"route_id", "R2"}, {"limit", "1"}, {"after", "f-b"}}, 3,
                "f-c truncated=false");
    /* bad parameters */
    const api_param bad_limit[] = {{"limit", "0"}};
    assert_int_equal(call(api_alerts, g_ds, v, NULL, MON_0800, bad_limit, 1), 400);
    assert_string_equal(g_prob.param, "limit");
    const api_param bad_time[] = {{"active_at", "tomorrow"}};
    assert_int_equal(call(api_alerts, g_ds, v, NULL, MON_0800, bad_time, 1), 400);
    assert_string_equal(g_prob.param, "active_at");
    const api_param local_time[] = {{"active_at", "2026-11-03T08:00"}};
    assert_int_equal(call(api_alerts, NULL, v, NULL, MON_0800, local_time, 1), 400);   /* no zone */
    assert_string_equal(g_prob.param, "active_at");
    const api_param unknown[] = {{"stop", "STA"}};
    assert_int_equal(call(api_alerts, g_ds, v, NULL, MON_0800, unknown, 1), 400);
    assert_string_equal(g_prob.param, "stop");
    /* no alerts at all */
    json_t *root = call_json(api_alerts, g_ds, NULL, NULL, MON_0800, NULL, 0);
    assert_int_equal(json_array_size(json_object_get(root, "alerts")), 0);
    json_decref(root);
    alert_view_release(v);
}

static void test_alert_by_id_and_404(void **state)
{
    (void)state;
    const alert_spec specs[] = {
        {"f-a", "[{\"stop_id\":\"STA\"}]", NULL},
        {"f-b", "[{\"route_id\":\"R2\"}]", NULL},
    };
    alert_view *v = view_of(specs, 2, g_ds, 1);
    assert_int_equal(call(api_alert, g_ds, v, "f-b", MON_0800, NULL, 0), 200);
    const alert *b = alert_view_at(v, 1);
    assert_int_equal(g_out.len, b->json_len);
    assert_memory_equal(g_out.buf, b->json, b->json_len);
    assert_int_equal(call(api_alert, g_ds, v, "f-c", MON_0800, NULL, 0), 404);
    assert_string_equal(g_prob.param, "alert_id");
    assert_non_null(strstr(g_prob.detail, "f-c"));
    assert_int_equal(call(api_alert, g_ds, v, "f", MON_0800, NULL, 0), 404);
    assert_int_equal(call(api_alert, g_ds, NULL, "f-a", MON_0800, NULL, 0), 404);
    assert_int_equal(call(api_alert, NULL, v, "f-a", MON_0800, NULL, 0), 200);
    alert_view_release(v);
}

/* "id,id,..." of a view. */
static void view_ids(const alert_view *v, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < alert_view_count(v) && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "," : "", alert_view_at(v, i)->id);
}

/* A write makes a new view from the old one: ids stay in order, the old
 * view is unchanged, the generation is the one given; a rebase keeps the
 * alerts and generation for another dataset, and a view resolved against
 * another dataset marks no rows. */
static void test_view_with_without_rebase(void **state)
{
    (void)state;
    char ids[256];
    const alert_spec specs[] = {
        {"b", "[{\"stop_id\":\"STA\"}]", NULL},
        {"d", "[{\"route_id\":\"R2\"}]", NULL},
    };
    alert_view *v = view_of(specs, 2, g_ds, 5);
    assert_int_equal(alert_view_generation(v), 5);
    assert_ptr_equal(alert_view_dataset(v), g_ds);

    const alert_spec more[] = {{"c", "[{\"route_id\":\"R1\"}]", NULL},
                               {"a", "[{\"trip\":{\"trip_id\":\"T2\"}}]", NULL},
                               {"e", "[{\"stop_id\":\"S2\"}]", NULL},
                               {"d", "[{\"route_id\":\"R1\"}]", NULL}};
    alert *c = spec_alert(&more[0]), *a = spec_alert(&more[1]), *e = spec_alert(&more[2]),
          *d2 = spec_alert(&more[3]);
    alert_view *v2 = alert_view_with(v, c, g_ds, 6);
    view_ids(v2, ids, sizeof ids);
    assert_string_equal(ids, "b,c,d");
    assert_int_equal(alert_view_generation(v2), 6);
    alert_view *v3 = alert_view_with(v2, a, g_ds, 7);
    alert_view *v4 = alert_view_with(v3, e, g_ds, 8);
    view_ids(v4, ids, sizeof ids);
    assert_string_equal(ids, "a,b,c,d,e");
    assert_int_equal(alert_view_find(v4, "a"), 0);
    assert_int_equal(alert_view_find(v4, "e"), 4);
    assert_int_equal(alert_view_find(v4, "bb"), -1);
    /* replacing d: same place, the new alert */
    alert_view *v5 = alert_view_with(v4, d2, g_ds, 9);
    view_ids(v5, ids, sizeof ids);
    assert_string_equal(ids, "a,b,c,d,e");
    assert_ptr_equal(alert_view_at(v5, 3), d2);
    assert_ptr_not_equal(alert_view_at(v4, 3), d2);
    /* the old views are unchanged */
    view_ids(v, ids, sizeof ids);
    assert_string_equal(ids, "b,d");
    assert_int_equal(alert_view_generation(v), 5);
    view_ids(v3, ids, sizeof ids);
    assert_string_equal(ids, "a,b,c,d");

    /* the replaced alert is what rows show now: d is about R1 */
    expect_departures(station_departures(v5, MON, "S2"), v5, "S2 T1A:c,d,e | S2 T1B:c,d,e | S2 T2:a,e",
                      "a,c,d,e");

    alert_view *v6 = alert_view_without(v5, "c", g_ds, 10);
    view_ids(v6, ids, sizeof ids);
    assert_string_equal(ids, "a,b,d,e");
    assert_int_equal(alert_view_generation(v6), 10);
    alert_view *v7 = alert_view_without(v6, "missing", g_ds, 11);
    view_ids(v7, ids, sizeof ids);
    assert_string_equal(ids, "a,b,d,e");
    assert_int_equal(alert_view_generation(v7), 11);
    alert_view *v8 = alert_view_without(v7, "a", g_ds, 12);
    alert_view *v9 = alert_view_without(v8, "e", g_ds, 13);
    view_ids(v9, ids, sizeof ids);
    assert_string_equal(ids, "b,d");

    /* from nothing */
    alert_view *first = alert_view_with(NULL, c, g_ds, 1);
    view_ids(first, ids, sizeof ids);
    assert_string_equal(ids, "c");
    alert_view *empty = alert_view_without(first, "c", g_ds, 2);
    assert_int_equal(alert_view_count(empty), 0);
    expect_departures(station_departures(empty, MON, "S2"), empty, "S2 T1A | S2 T1B | S2 T2", "");

    /* rebase onto the same feed opened again: another dataset */
    char err[512];
    dataset *other = dataset_open(g_feed, err, sizeof err);
    if (!other)
        fail_msg("dataset_open: %s", err);
    /* v5 resolved for g_ds shows nothing on the other dataset's rows */
    const api_param params[] = {{"time", MON "T07:55:00-05:00"}, {"window", "60"}};
    json_t *root = call_json(api_stop_departures, other, v5, "S2", MON_0800, params, 2);
    expect_departures(root, v5, "S2 T1A | S2 T1B | S2 T2", "");
    alert_view *rebased = alert_view_rebase(v5, other);
    view_ids(rebased, ids, sizeof ids);
    assert_string_equal(ids, "a,b,c,d,e");
    assert_int_equal(alert_view_generation(rebased), 9);
    assert_ptr_equal(alert_view_dataset(rebased), other);
    root = call_json(api_stop_departures, other, rebased, "S2", MON_0800, params, 2);
    expect_departures(root, rebased, "S2 T1A:c,d,e | S2 T1B:c,d,e | S2 T2:a,e", "a,c,d,e");
    /* a view without a dataset lists alerts and marks no rows */
    alert_view *bare = alert_view_rebase(v5, NULL);
    assert_null(alert_view_dataset(bare));
    assert_int_equal(alert_view_generation(bare), 9);
    root = call_json(api_alerts, NULL, bare, NULL, MON_0800, NULL, 0);
    listed_of(root, bare, ids, sizeof ids);
    assert_string_equal(ids, "a,b,c,d,e");
    json_decref(root);
    expect_departures(station_departures(bare, MON, "S2"), bare, "S2 T1A | S2 T1B | S2 T2", "");
    /* the views hold their dataset: release the opener's reference first */
    dataset_close(other);
    root = call_json(api_stop_departures, (dataset *)alert_view_dataset(rebased), rebased, "S2",
                     MON_0800, params, 2);
    expect_departures(root, rebased, "S2 T1A:c,d,e | S2 T1B:c,d,e | S2 T2:a,e", "a,c,d,e");

    alert_view *views[] = {v, v2, v3, v4, v5, v6, v7, v8, v9, first, empty, rebased, bare};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
        alert_view_release(views[i]);
    alert_release(a);
    alert_release(c);
    alert_release(e);
    alert_release(d2);
}

/* ================================================================ auth */

static void write_tokens(const char *dir, const char *text, char *path, size_t cap)
{
    test_write_file(dir, "tokens", text);
    snprintf(path, cap, "%s/tokens", dir);
}

static void expect_tokens_refused(const char *dir, const char *text, int line, const char *why)
{
    char path[700], err[512] = "", want[760];
    write_tokens(dir, text, path, sizeof path);
    auth_tokens *t = auth_tokens_load(path, err, sizeof err);
    if (t) {
        auth_tokens_free(t);
        fail_msg("tokens file accepted: %s", text);
    }
    if (line > 0)
        snprintf(want, sizeof want, "%s:%d: ", path, line);
    else
        snprintf(want, sizeof want, "%s: ", path);
    if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, why))
        fail_msg("'%s' should start with '%s' and say '%s'", err, want, why);
}

/* Tokens are stored as SHA-256 hashes; only the exact token passes. */
static void test_auth_tokens(void **state)
{
    (void)state;
    char dir[600], path[700], err[512] = "";
    test_tmpdir(dir, sizeof dir, "alerts-auth");
    char token[AUTH_TOKEN_LEN + 1], token2[AUTH_TOKEN_LEN + 1], line[256], line2[256];
    assert_int_equal(auth_token_new("ops desk", token, line, sizeof line), 0);
    assert_int_equal(auth_token_new(NULL, token2, line2, sizeof line2), 0);
    assert_int_equal(strlen(token), AUTH_TOKEN_LEN);
    assert_int_equal(strncmp(token, "td_", 3), 0);
    for (int i = 3; i < AUTH_TOKEN_LEN; i++)
        assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                               token[i]));
    assert_string_not_equal(token, token2);
    uint8_t digest[32];
    char hex[65], want[256];
    sha256(token, AUTH_TOKEN_LEN, digest);
    sha256_hex(digest, hex);
    snprintf(want, sizeof want, "sha256:%s ops desk\n", hex);
    assert_string_equal(line, want);
    assert_null(strstr(line, token));   /* the line gives the token away nowhere */
    sha256(token2, AUTH_TOKEN_LEN, digest);
    sha256_hex(digest, hex);
    snprintf(want, sizeof want, "sha256:%s\n", hex);
    assert_string_equal(line2, want);

    char text[1024];
    snprintf(text, sizeof text, "# operators\n\n%s   %s", line, line2);
    write_tokens(dir, text, path, sizeof path);
    auth_tokens *t = auth_tokens_load(path, err, sizeof err);
    if (!t)
        fail_msg("auth_tokens_load: %s", err);
    assert_int_equal(auth_tokens_count(t), 2);
    const char *name = NULL;
    assert_true(auth_tokens_check(t, token, strlen(token), &name));
    assert_string_equal(name, "ops desk");
    assert_true(auth_tokens_check(t, token2, strlen(token2), &name));
    assert_string_equal(name, "");
    assert_true(auth_tokens_check(t, token, strlen(token), NULL));
    name = NULL;
    assert_false(auth_tokens_check(t, "td_wrong", 8, &name));
    assert_null(name);
    char near[AUTH_TOKEN_LEN + 1];
    memcpy(near, token, sizeof near);
    near[AUTH_TOKEN_LEN - 1] = near[AUTH_TOKEN_LEN - 1] == 'A' ? 'B' : 'A';
    assert_false(auth_tokens_check(t, near, AUTH_TOKEN_LEN, &name));
    assert_false(auth_tokens_check(t, token, AUTH_TOKEN_LEN - 1, &name));   /* a prefix */
    assert_false(auth_tokens_check(t, "", 0, &name));
    assert_null(name);
    auth_tokens_free(t);

    /* an empty token never passes, even when its hash is listed */
    write_tokens(dir,
                 "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 empty\n",
                 path, sizeof path);
    t = auth_tokens_load(path, err, sizeof err);
    if (!t)
        fail_msg("auth_tokens_load: %s", err);
    assert_false(auth_tokens_check(t, "", 0, &name));
    auth_tokens_free(t);

    /* bad files name the file and line */
    char raw[512];
    snprintf(raw, sizeof raw, "# operators\n%s\n", token);
    expect_tokens_refused(dir, raw, 2, "not a hashed token");
    expect_tokens_refused(dir, "sha256:abcd ops\n", 1, "64 hex digits");
    snprintf(raw, sizeof raw, "%ssha256:%.64s0 x\n", line2, line2 + 7);   /* 65 digits on line 2 */
    expect_tokens_refused(dir, raw, 2, "64 hex digits");
    expect_tokens_refused(dir, "# nobody yet\n\n", 0, "no token");
    expect_tokens_refused(dir, "", 0, "no token");
    snprintf(path, sizeof path, "%s/missing", dir);
    assert_null(auth_tokens_load(path, err, sizeof err));
    assert_non_null(strstr(err, path));
    remove_dir(dir);
}

static void test_auth_bearer_header(void **state)
{
    (void)state;
    const char *token = NULL;
    size_t len = 0;
    assert_int_equal(auth_bearer_token("Bearer x", &token, &len), 1);
    assert_int_equal(len, 1);
    assert_memory_equal(token, "x", 1);
    assert_int_equal(auth_bearer_token("bearer   x  ", &token, &len), 1);
    assert_int_equal(len, 1);
    assert_memory_equal(token, "x", 1);
    assert_int_equal(auth_bearer_token("BEARER\ttd_abc", &token, &len), 1);
    assert_int_equal(len, 6);
    assert_memory_equal(token, "td_abc", 6);
    assert_int_equal(auth_bearer_token("Basic x", &token, &len), -1);
    assert_int_equal(auth_bearer_token("Bearer", &token, &len), -1);
    assert_int_equal(auth_bearer_token("Bearer   ", &token, &len), -1);
    assert_int_equal(auth_bearer_token("Bearerx", &token, &len), -1);
    assert_int_equal(auth_bearer_token("", &token, &len), -1);
    assert_int_equal(auth_bearer_token(NULL, &token, &len), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_minimal_body_gives_canonical_content),
        cmocka_unit_test(test_parse_refusals_name_status_and_pointer),
        cmocka_unit_test(test_parse_ignores_read_only_members),
        cmocka_unit_test(test_texts_in_the_request_language),
        cmocka_unit_test(test_alert_ids),
        cmocka_unit_test(test_merge_patch),
        cmocka_unit_test(test_live_store_writes_and_preconditions),
        cmocka_unit_test(test_live_store_reload_keeps_updated_at_of_a_replace),
        cmocka_unit_test(test_live_store_checkpoints_apart_from_writes),
        cmocka_unit_test(test_live_store_wal_starts_over_under_steady_writes),
        cmocka_unit_test(test_live_store_upgrades_schema_v1),
        cmocka_unit_test(test_stop_alert_shows_on_its_platforms_rows),
        cmocka_unit_test(test_route_alert_only_on_its_routes_rows),
        cmocka_unit_test(test_trip_alert_with_start_date_only_on_that_days_run),
        cmocka_unit_test(test_route_direction_alert_only_on_that_direction),
        cmocka_unit_test(test_agency_and_route_type_alerts),
        cmocka_unit_test(test_alert_outside_its_period_is_not_on_the_row),
        cmocka_unit_test(test_stop_detail_shows_stop_and_route_alerts_not_trip_alerts),
        cmocka_unit_test(test_check_references_names_the_unknown_id),
        cmocka_unit_test(test_alert_on_unknown_ids_is_listed_but_matches_nothing),
        cmocka_unit_test(test_alert_list_filters_and_pages),
        cmocka_unit_test(test_alert_by_id_and_404),
        cmocka_unit_test(test_view_with_without_rebase),
        cmocka_unit_test(test_auth_tokens),
        cmocka_unit_test(test_auth_bearer_header),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
