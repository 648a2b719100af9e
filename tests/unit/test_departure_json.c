/* test_departure_json.c — the departure row writer against the generic one.
 *
 * Why it exists: src/api/departure_json.c writes Departure objects by copying
 * stop and route texts derived when the dataset is opened, with cached date
 * and offset texts. Its output must be byte for byte what the generic
 * json_writer calls give for the same departures. The feed here is built to
 * stress that: names that need escaping (quotes, backslashes, a tab, UTF-8),
 * empty headsigns (null), 75 distinct headsigns and 70-odd stops in one
 * response, rows after midnight (a second local date) and a DST change
 * inside the window, and trip ids the row writer keeps inline (plain, up to
 * 55 bytes) beside ones it must take from the string pool (56 bytes, a
 * quote, a backslash, UTF-8). Every check runs twice: on that feed, and on
 * the same feed with a 1,600-byte stop name, one byte in eight a quote, so
 * that a derived text is far longer than the rest. Boards of arrivals and of
 * both kinds (arrival rows say "arrival" and "arrival_secs", from texts of
 * their own, among departure rows) are held to the generic writer too. And
 * the first feed opened again as a server keeps it (the derived arrays and
 * texts in an unlinked file, dataset_keep_derived_in_files) answers byte for
 * byte as the plain open, before and after its pages are let go.
 */
#include "test_support.h"
#include "test_timetable_fixture.h"

#include <dirent.h>

#include "api/departure_json.h"
#include "store/dataset_internal.h"
#include "transit/api.h"
#include "transit/board.h"
#include "transit/diag.h"
#include "transit/feed.h"
#include "transit/gtfs.h"
#include "transit/json_writer.h"
#include "transit/query.h"
#include "transit/timetable.h"

#define NTRIPS 150
#define NWALK_STOPS 70   /* stops in one response */

static char g_dir[512], g_dir_long[512];
static dataset *g_ds, *g_ds_long;
static dataset *g_ds_kept;   /* g_dir opened again, its derived data kept in files */

/* Trip i's id: plain, plain and 55 bytes (the longest kept inline), 56
 * bytes, with a quote, with UTF-8, with a backslash. */
static void trip_id_for(int i, char *id, size_t cap)
{
    switch (i % 6) {
    case 0: snprintf(id, cap, "T%03d", i); break;
    case 1: snprintf(id, cap, "T%03d-%050d", i, i); break;
    case 2: snprintf(id, cap, "T%03d-%051d", i, i); break;
    case 3: snprintf(id, cap, "T\"%03d\"", i); break;
    case 4: snprintf(id, cap, "T\xc3\xbc%03d", i); break;
    default: snprintf(id, cap, "T\\%03d", i); break;
    }
}

/* s as a quoted CSV field. */
static void csv_quote(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    out[o++] = '"';
    for (; *s && o + 3 < cap; s++) {
        if (*s == '"') out[o++] = '"';
        out[o++] = *s;
    }
    out[o++] = '"';
    out[o] = '\0';
}

static void write_feed(const char *dir, bool long_string)
{
    test_write_file(dir, "agency.txt",
               "agency_id,agency_name,agency_url,agency_timezone\n"
               "A1,Test Transit,http://example.com,America/New_York\n");
    static char stops[NWALK_STOPS * 64 + 4096];
    char name[1601] = "Last", csv_name[2 * sizeof name + 2];
    if (long_string) {
        for (int i = 0; i < 1600; i++)
            name[i] = i % 8 == 7 ? '"' : 'd';
        name[1600] = '\0';
    }
    csv_quote(name, csv_name, sizeof csv_name);
    size_t o = (size_t)snprintf(stops, sizeof stops,
                                "stop_id,stop_name,stop_lat,stop_lon,stop_desc\n"
                                "\"Q\"\"1\",\"Quote \"\"Q\"\" \\ back\",40.7000,-74.0000,\n"
                                "S2,\"Stra\xc3\x9f" "e\t\xe2\x82\xac\",40.7005,-74.0000,\n"
                                "S3,%s,40.7010,-74.0000,\n", csv_name);
    for (int i = 0; i < NWALK_STOPS; i++)
        o += (size_t)snprintf(stops + o, sizeof stops - o, "P%02d,\"Walk \"\"%d\"\"\",%.4f,-74.0010,\n", i, i,
                              40.7000 + i * 0.00002);
    test_write_file(dir, "stops.txt", stops);
    test_write_file(dir, "routes.txt",
               "route_id,agency_id,route_short_name,route_long_name,route_type\n"
               "\"R\"\"1\",A1,1,\"Long \"\"one\"\"\",3\n"
               "R2,A1,2,,700\n");
    test_write_file(dir, "calendar.txt",
               "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date\n"
               "ALL,1,1,1,1,1,1,1,20261001,20261231\n");
    static char trips[NTRIPS * 160 + 128], times[(NTRIPS * 3 + NWALK_STOPS) * 160 + 128];
    size_t t = (size_t)snprintf(trips, sizeof trips, "route_id,service_id,trip_id,trip_headsign\n");
    size_t s = (size_t)snprintf(times, sizeof times,
                                "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n");
    for (int i = 0; i < NTRIPS; i++) {
        /* a third without headsign; the rest distinct, some needing escapes */
        char headsign[32] = "";
        if (i % 3 == 1) snprintf(headsign, sizeof headsign, "To %d", i);
        if (i % 3 == 2) snprintf(headsign, sizeof headsign, "\"\"Via\"\" %d", i);
        char id[80], csv_id[170];
        trip_id_for(i, id, sizeof id);
        csv_quote(id, csv_id, sizeof csv_id);
        t += (size_t)snprintf(trips + t, sizeof trips - t, "%s,ALL,%s,\"%s\"\n",
                              i % 2 ? "R2" : "\"R\"\"1\"", csv_id, headsign);
        int dep = 22 * 3600 + i * 97;   /* 22:00 onwards, past midnight */
        s += (size_t)snprintf(times + s, sizeof times - s,
                              "%s,%02d:%02d:%02d,%02d:%02d:%02d,\"Q\"\"1\",1\n",
                              csv_id, dep / 3600, dep / 60 % 60, dep % 60, dep / 3600, dep / 60 % 60, dep % 60);
        dep += 120;
        s += (size_t)snprintf(times + s, sizeof times - s, "%s,%02d:%02d:%02d,%02d:%02d:%02d,S2,2\n",
                              csv_id, dep / 3600, dep / 60 % 60, dep % 60, dep / 3600, dep / 60 % 60, dep % 60);
        dep += 120;
        s += (size_t)snprintf(times + s, sizeof times - s, "%s,%02d:%02d:%02d,%02d:%02d:%02d,S3,3\n",
                              csv_id, dep / 3600, dep / 60 % 60, dep % 60, dep / 3600, dep / 60 % 60, dep % 60);
    }
    /* one trip past every walk stop, its departures among the others' */
    t += (size_t)snprintf(trips + t, sizeof trips - t, "R2,ALL,TW,Walk\n");
    for (int i = 0; i < NWALK_STOPS; i++) {
        int dep = 22 * 3600 + 600 + i * 30;
        s += (size_t)snprintf(times + s, sizeof times - s, "TW,%02d:%02d:%02d,%02d:%02d:%02d,P%02d,%d\n",
                              dep / 3600, dep / 60 % 60, dep % 60, dep / 3600, dep / 60 % 60, dep % 60, i,
                              i + 1);
    }
    test_write_file(dir, "trips.txt", trips);
    test_write_file(dir, "stop_times.txt", times);
}

static dataset *build(char *dir, size_t dir_size, const char *name, bool long_string)
{
    test_tmpdir(dir, dir_size, name);
    write_feed(dir, long_string);
    return test_open_fixture(dir);
}

static int setup(void **state)
{
    (void)state;
    g_ds = build(g_dir, sizeof g_dir, "departure_json", false);
    g_ds_long = build(g_dir_long, sizeof g_dir_long, "departure_json_long", true);
    /* the long feed's S3 has the 1,600-byte name */
    stop_info st;
    dataset_stop(g_ds_long, dataset_find_stop(g_ds_long, "S3", 2), &st);
    assert_int_equal(strlen(st.name), 1600);
    char err[512];
    g_ds_kept = dataset_open(g_dir, err, sizeof err);
    if (!g_ds_kept)
        fail_msg("dataset_open: %s", err);
    dataset_keep_derived_in_files(g_ds_kept);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dataset_close(g_ds);
    dataset_close(g_ds_long);
    dataset_close(g_ds_kept);
    return 0;
}

/* Row i as the generic writer calls give it, one call per key and value;
 * with `said` (not NULL), the realtime members that word of the overlay
 * gives it. */
static void expected_row(const dataset *ds, json_writer *w, const departure *d, const rt_departure *said)
{
    stop_info st;
    trip_info tr;
    route_info rt;
    dataset_stop(ds, d->stop, &st);
    dataset_trip(ds, d->trip, &tr);
    dataset_route(ds, tr.route, &rt);
    char date[11], instant[26];
    json_object_begin(w);
    json_kv_string(w, "stop_id", st.id);
    json_kv_string(w, "trip_id", tr.id);
    json_kv_string(w, "route_id", rt.id);
    json_kv_string(w, "route_short_name", rt.short_name);
    json_kv_string(w, "route_long_name", rt.long_name);
    json_kv_int(w, "route_type", rt.type);
    json_key(w, "headsign");
    if (tr.headsign[0])
        json_str(w, tr.headsign);
    else
        json_null_value(w);
    json_kv_int(w, "wheelchair_accessible", tr.wheelchair_accessible);
    json_kv_int(w, "bikes_allowed", tr.bikes_allowed);
    format_date(d->service_date, date);
    json_kv_string(w, "service_date", date);
    rfc3339_format_instant(d->instant, d->utc_offset, instant);
    json_kv_string(w, d->arrival ? "arrival" : "departure", instant);
    json_kv_int(w, d->arrival ? "arrival_secs" : "departure_secs", d->secs);
    json_kv_int(w, "stop_sequence", d->stop_sequence);
    json_kv_string(w, "stop_name", st.name);
    json_kv_int(w, "distance_m", (int64_t)(d->distance_m + 0.5));
    if (said) {
        json_kv_string(w, "scheduled", instant);
        json_key(w, "predicted");
        if (said->realtime && said->has_prediction) {
            int64_t at = d->instant + said->delay_s;
            rfc3339_format_instant(at, dataset_utc_offset(ds, at), instant);
            json_str(w, instant);
            json_kv_int(w, "delay_s", said->delay_s);
        } else {
            json_null_value(w);
            json_kv_null(w, "delay_s");
        }
        json_kv_bool(w, "realtime", said->realtime);
        json_kv_bool(w, "canceled", said->realtime && said->canceled);
    }
    json_object_end(w);
}

/* The body as the generic writer calls give it. */
static void expected_body(const dataset *ds, json_writer *w, const departure *deps, uint32_t n, bool truncated,
                          const char *next, size_t next_len)
{
    json_object_begin(w);
    json_key(w, "departures");
    json_array_begin(w);
    for (uint32_t i = 0; i < n; i++)
        expected_row(ds, w, &deps[i], NULL);
    json_array_end(w);
    json_kv_bool(w, "truncated", truncated);
    json_key(w, "next");
    json_raw(w, next, next_len);
    json_key(w, "alerts");
    json_array_begin(w);
    json_array_end(w);
    json_object_end(w);
}

/* /v1/departures at `time` against the generic writer, for every limit
 * from a single row to all of them, and for each kind (no parameter: the
 * departures). */
static void check_kind_at(dataset *ds, const char *time, int64_t from, const char *kind_text, query_kind kind)
{
    static const char *const limits[] = {"1", "7", "64", "500"};
    for (size_t k = 0; k < sizeof limits / sizeof *limits; k++) {
        api_param params[] = {{"lat", "40.7005"}, {"lon", "-74.0000"}, {"radius", "500"},
                              {"time", time},     {"window", "600"},    {"limit", limits[k]},
                              {"kind", kind_text}};
        api_request req = {.params = params, .nparams = kind_text ? 7 : 6};
        api_thread *t = api_thread_new();
        json_writer got, want;
        json_init(&got);
        json_init(&want);
        api_problem prob;
        int cache = 0;
        assert_int_equal(api_departures(t, ds, &req, &got, &prob, &cache), 200);

        static departure deps[QUERY_LIMIT_MAX];
        uint32_t n = 0;
        bool truncated = false;
        query_error qe;
        query_scratch *s = query_scratch_new();
        assert_int_equal(nearby_events(ds, s, kind, 40.7005, -74.0, 500, from, 600 * 60,
                                       (uint32_t)atoi(limits[k]), deps, &n, &truncated, &qe),
                         QUERY_OK);
        assert_true(n > 0);
        uint32_t arrivals = 0;
        for (uint32_t i = 0; i < n; i++)
            arrivals += deps[i].arrival;
        assert_true(kind == QUERY_DEPARTURES ? arrivals == 0 : kind == QUERY_ARRIVALS ? arrivals == n : true);
        /* the next link (api_cursor.c, tested in tests/api/test_pagination.py):
         * null, or a link to this board's next page */
        const char *next = strstr(got.buf, ",\"next\":"), *end = next ? strstr(next, ",\"alerts\":") : NULL;
        assert_non_null(next);
        assert_non_null(end);
        next += strlen(",\"next\":");
        if (truncated)
            assert_true(strncmp(next, "\"/v1/departures?lat=40.7005&lon=-74.0000&radius=500&", 52) == 0);
        else
            assert_true(strncmp(next, "null,", 5) == 0);
        expected_body(ds, &want, deps, n, truncated, next, (size_t)(end - next));
        assert_int_equal(got.len, want.len);
        assert_string_equal(got.buf, want.buf);

        query_scratch_free(s);
        json_free(&got);
        json_free(&want);
        api_thread_free(t);
    }
}

static void check_departures_at(dataset *ds, const char *time, int64_t from)
{
    check_kind_at(ds, time, from, NULL, QUERY_DEPARTURES);
    check_kind_at(ds, time, from, "departures", QUERY_DEPARTURES);
    check_kind_at(ds, time, from, "arrivals", QUERY_ARRIVALS);
    check_kind_at(ds, time, from, "both", QUERY_BOTH);
}

static void test_rows_match_the_generic_writer(void **state)
{
    (void)state;
    /* 2026-11-20 21:30 EST = 02:30Z on the 21st: rows run past local midnight */
    int64_t from = (int64_t)days_from_civil(2026, 11, 21) * 86400 + 2 * 3600 + 1800;
    check_departures_at(g_ds, "2026-11-20T21:30:00", from);
    check_departures_at(g_ds_long, "2026-11-20T21:30:00", from);
    check_departures_at(g_ds_kept, "2026-11-20T21:30:00", from);
}

static void test_rows_across_a_dst_change(void **state)
{
    (void)state;
    /* 2026-10-31 21:30 EDT = 01:30Z on Nov 1; clocks fall back at 02:00 EDT */
    int64_t from = (int64_t)days_from_civil(2026, 11, 1) * 86400 + 1 * 3600 + 1800;
    check_departures_at(g_ds, "2026-10-31T21:30:00", from);
    check_departures_at(g_ds_long, "2026-10-31T21:30:00", from);
    check_departures_at(g_ds_kept, "2026-10-31T21:30:00", from);
}

static void test_escaped_texts_appear_on_their_rows(void **state)
{
    (void)state;
    api_param params[] = {{"lat", "40.7005"}, {"lon", "-74.0000"}, {"time", "2026-11-20T21:30:00"},
                          {"window", "600"}, {"limit", "500"}};
    api_request req = {.params = params, .nparams = 5};
    api_thread *t = api_thread_new();
    json_writer out;
    json_init(&out);
    api_problem prob;
    int cache = 0;
    assert_int_equal(api_departures(t, g_ds, &req, &out, &prob, &cache), 200);
    /* the derived stop and route texts appear on many rows, escaped */
    assert_non_null(strstr(out.buf, "\"stop_id\":\"Q\\\"1\""));
    assert_non_null(strstr(out.buf, "\"stop_name\":\"Quote \\\"Q\\\" \\\\ back\""));
    assert_non_null(strstr(out.buf, "\"stop_name\":\"Stra\xc3\x9f" "e\\u0009\xe2\x82\xac\""));
    assert_non_null(strstr(out.buf, "\"route_id\":\"R\\\"1\",\"route_short_name\":\"1\","
                                    "\"route_long_name\":\"Long \\\"one\\\"\",\"route_type\":3"));
    assert_non_null(strstr(out.buf, "\"route_long_name\":\"\",\"route_type\":700,\"headsign\":null"));
    assert_non_null(strstr(out.buf, "\"headsign\":\"\\\"Via\\\" 2\""));
    /* every walk stop's texts, in one response (the walk trip's last stop
     * has no departure) */
    for (int i = 0; i < NWALK_STOPS - 1; i++) {
        char row[96];
        snprintf(row, sizeof row, "{\"stop_id\":\"P%02d\",\"trip_id\":\"TW\"", i);
        assert_non_null(strstr(out.buf, row));
        snprintf(row, sizeof row, "\"stop_name\":\"Walk \\\"%d\\\"\",\"distance_m\":", i);
        assert_non_null(strstr(out.buf, row));
    }
    json_free(&out);
    api_thread_free(t);
}

/* What the overlay says of row i in the realtime test below: each case in
 * turn, predictions that move the row by seconds, across local midnight
 * either way, across the fall-back change and by more than a day. */
static rt_departure word_for(uint32_t i)
{
    static const int32_t delays[] = {0,     1,      59,     -1,    -61,     600,     3599,     3600,  7200,  -7200,
                                     86399, -86400, 90061,  -93784, 10,    -100,    9999,     -10000, 1234567, -1234567};
    uint32_t ndelays = sizeof delays / sizeof *delays;
    int32_t delay = delays[i % ndelays];
    switch (i / ndelays % 5) {
    case 0: return (rt_departure){0};   /* the overlay knows nothing of it */
    case 1: return (rt_departure){.realtime = true};   /* no prediction */
    case 2: return (rt_departure){.realtime = true, .canceled = true, .skipped = true};
    case 3: return (rt_departure){.realtime = true, .canceled = true, .has_prediction = true, .delay_s = delay};
    default: return (rt_departure){.realtime = true, .has_prediction = true, .delay_s = delay, .occupancy = 0};
    }
}

/* The rows' realtime members, against the generic writer: a board handing
 * each row's word of the overlay alone (board.rts), and the same words in
 * board_rows (the full join's board), write what the generic calls give,
 * for every row of departures, arrivals and both, past midnight and across
 * a DST change, in every case word_for gives (a row seen in each case more
 * than once, with a different delay). */
static void test_realtime_members_match_the_generic_writer(void **state)
{
    (void)state;
    static const int64_t starts[] = {2 * 3600 + 1800, 1 * 3600 + 1800};   /* past midnight, across DST */
    static const int32_t days[] = {20, 0};   /* Nov 21 and Nov 1, 2026 */
    static departure deps[QUERY_LIMIT_MAX];
    static rt_departure words[QUERY_LIMIT_MAX];
    static board_row rows[QUERY_LIMIT_MAX];
    static const query_kind kinds[] = {QUERY_DEPARTURES, QUERY_ARRIVALS, QUERY_BOTH};
    dataset *sets[] = {g_ds, g_ds_long};
    query_scratch *s = query_scratch_new();
    for (size_t set = 0; set < 2; set++)
        for (size_t at = 0; at < 2; at++)
            for (size_t k = 0; k < 3; k++)
                for (uint32_t shift = 0; shift < 80; shift += 7) {
                    int64_t from = (int64_t)(days_from_civil(2026, 11, 1) + days[at]) * 86400 + starts[at];
                    uint32_t n = 0;
                    bool truncated = false;
                    query_error qe;
                    assert_int_equal(nearby_events(sets[set], s, kinds[k], 40.7005, -74.0, 500, from, 600 * 60,
                                                   QUERY_LIMIT_MAX, deps, &n, &truncated, &qe),
                                     QUERY_OK);
                    assert_true(n > 100);
                    memset(rows, 0, sizeof rows);
                    for (uint32_t i = 0; i < n; i++)
                        rows[i].rt = words[i] = word_for(i + shift);
                    bool arrivals = kinds[k] != QUERY_DEPARTURES;
                    board by_words = {.deps = deps, .rts = words, .count = n, .arrivals = arrivals,
                                      .realtime = true};
                    board by_rows = {.deps = deps, .rows = rows, .count = n, .arrivals = arrivals,
                                     .realtime = true};
                    json_writer want, got_words, got_rows;
                    json_init(&want);
                    json_init(&got_words);
                    json_init(&got_rows);
                    json_array_begin(&want);
                    for (uint32_t i = 0; i < n; i++)
                        expected_row(sets[set], &want, &deps[i], &words[i]);
                    json_array_end(&want);
                    char err[160];
                    json_array_begin(&got_words);
                    assert_int_equal(
                        departure_json_write_items(&got_words, sets[set], &by_words, true, NULL, 0, err, sizeof err),
                        0);
                    json_array_end(&got_words);
                    json_array_begin(&got_rows);
                    assert_int_equal(
                        departure_json_write_items(&got_rows, sets[set], &by_rows, true, NULL, 0, err, sizeof err),
                        0);
                    json_array_end(&got_rows);
                    assert_string_equal(got_words.buf, want.buf);
                    assert_string_equal(got_rows.buf, want.buf);
                    json_free(&want);
                    json_free(&got_words);
                    json_free(&got_rows);
                }
    query_scratch_free(s);
}

/* The body of /v1/departures near the walk's stops for `kind`. */
static char *nearby_body(dataset *ds, const char *kind)
{
    api_param params[] = {{"lat", "40.7005"}, {"lon", "-74.0000"}, {"time", "2026-11-20T21:30:00"},
                          {"window", "600"}, {"limit", "500"}, {"kind", kind}};
    api_request req = {.params = params, .nparams = 6};
    api_thread *t = api_thread_new();
    json_writer out;
    json_init(&out);
    api_problem prob;
    int cache = 0;
    assert_int_equal(api_departures(t, ds, &req, &out, &prob, &cache), 200);
    char *body = strdup(out.buf);
    json_free(&out);
    api_thread_free(t);
    assert_non_null(body);
    return body;
}

/* Entries of dir (the version directory the fixture writes into). */
static int entries_of(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static void test_kept_in_files_answers_the_same(void **state)
{
    (void)state;
    /* the derived arrays and the rows' texts are a file's, and the file has
     * no name: nothing is left in the directory */
    assert_non_null(g_ds_kept->derived_map);
    assert_non_null(g_ds_kept->visit_hot);
    assert_true((const char *)g_ds_kept->visit_hot >= (const char *)g_ds_kept->derived_map &&
                (const char *)g_ds_kept->visit_hot <
                    (const char *)g_ds_kept->derived_map + g_ds_kept->derived_map_size);
    int before = entries_of(g_dir);
    char err[256];
    assert_int_equal(departure_json_prepare(g_ds_kept, err, sizeof err), 0);
    bool texts_mapped = false;
    for (int i = 0; i < DATASET_EXTENSIONS_MAX; i++)
        texts_mapped |= g_ds_kept->extension_map[i] != NULL;
    assert_true(texts_mapped);
    assert_int_equal(entries_of(g_dir), before);
    static const char *const kinds[] = {"departures", "arrivals", "both"};
    for (int round = 0; round < 2; round++) {
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
            char *plain = nearby_body(g_ds, kinds[k]), *kept = nearby_body(g_ds_kept, kinds[k]);
            assert_string_equal(plain, kept);
            free(plain);
            free(kept);
        }
        dataset_drop_pages(g_ds_kept);   /* and again once its pages are let go */
    }
    /* a second call changes nothing */
    void *map = g_ds_kept->derived_map;
    dataset_keep_derived_in_files(g_ds_kept);
    assert_ptr_equal(g_ds_kept->derived_map, map);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_match_the_generic_writer),
        cmocka_unit_test(test_rows_across_a_dst_change),
        cmocka_unit_test(test_escaped_texts_appear_on_their_rows),
        cmocka_unit_test(test_realtime_members_match_the_generic_writer),
        cmocka_unit_test(test_kept_in_files_answers_the_same),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
