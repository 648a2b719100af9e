/* test_stores.c — the SQLite stores: schedule.sqlite (writer and reader),
 * shapes.sqlite and live.sqlite.
 *
 * Why it exists: the stores are the reference data every non-hot-path answer
 * comes from. These tests write a tiny feed with known good and bad rows and
 * check what lands in each table and in the diag, the stop-name search
 * (diacritics, prefixes, hostile input), fatal errors for missing files and
 * columns, live.sqlite's idempotence, and the real feeds' row counts plus the
 * size and build time of NYC bus Brooklyn (the size budget feed).
 */
#include "test_support.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include "transit/diag.h"
#include "transit/feed.h"
#include "transit/live_store.h"
#include "transit/store_write.h"
#include "transit/stores.h"

/* ------------------------------------------------------------ helpers */

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static void remove_file(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
}

static bool file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Runs a single-value integer query against a database file. */
static int64_t query_int(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

/* A single-value text query; copies into out. */
static void query_text(const char *db_path, const char *sql, char *out, size_t cap)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    const unsigned char *v = sqlite3_column_text(s, 0);
    snprintf(out, cap, "%s", v ? (const char *)v : "(null)");
    sqlite3_finalize(s);
    sqlite3_close(db);
}

static bool diag_has_example(const diag *d, const char *needle)
{
    for (int i = 0; i < d->nexamples && i < DIAG_EXAMPLES; i++)
        if (strstr(d->examples[i], needle))
            return true;
    return false;
}

static void print_diag(const diag *d)
{
    for (int i = 0; i < d->nexamples && i < DIAG_EXAMPLES; i++)
        fprintf(stderr, "  diag: %s\n", d->examples[i]);
}

/* ------------------------------------------------------------ the tiny feed */

static const char AGENCY_TXT[] =
    "agency_id,agency_name,agency_url,agency_timezone\n"
    "A1,Test Transit,http://example.com,Europe/Berlin\n";

static const char ROUTES_TXT[] =
    "route_id,agency_id,route_short_name,route_long_name,route_type\n"
    "R1,A1,1,Main Line,3\n"
    "R2,A1,2,\"Second, Line\",3\n"
    "R3,ZZ,3,Unknown agency,3\n"            /* line 4: unknown agency (counted, kept) */
    "R4,A1,4,Bad type,x\n";                 /* line 5: bad route_type */

static const char CALENDAR_TXT[] =
    "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date\n"
    "WK,1,1,1,1,1,0,0,20240101,20241231\n"
    "SA,0,0,0,0,0,1,0,20240101,20241231\n"
    "BAD,1,1,1,1,1,0,0,20241301,20241231\n";  /* line 4: bad date */

static const char CALENDAR_DATES_TXT[] =
    "service_id,date,exception_type\n"
    "WK,20240704,2\n"
    "HOL,20241225,1\n"
    "HOL,20241226,3\n";                     /* line 4: exception_type out of range */

static const char TRIPS_TXT[] =
    "route_id,service_id,trip_id,trip_headsign,direction_id,shape_id\n"
    "R1,WK,T1,Hauptbahnhof,0,S1\n"
    "R1,WK,T2,Hauptbahnhof,1,S1\n"
    "R2,HOL,T3,Süd,0,\n"
    "R9,WK,T4,X,0,\n"                       /* line 5: unknown route */
    "R1,NOPE,T5,X,0,\n"                     /* line 6: unknown service */
    "R1,WK,T1,dup,0,\n"                     /* line 7: duplicate trip_id */
    "R1,SA,T0,,2,\n";                       /* line 8: bad direction_id (counted, kept) */

static const char STOPS_TXT[] =
    "stop_id,stop_code,stop_name,stop_desc,stop_lat,stop_lon,location_type,parent_station,"
    "wheelchair_boarding,platform_code\n"
    "S1,100,Berlin Süd,South station,52.45,13.38,1,,1,\n"
    "S1a,101,Berlin Süd Gleis 1,, 52.451 , 13.381,0,S1,2,1\n"
    "TS,200,Times Sq-42 St,,40.75529,-73.987495,,,,\n"
    "N1,,,,,,3,S1,,\n"                      /* a generic node: no name, no position */
    "S1,999,Duplicate,,1,1,0,,,\n"          /* line 6: duplicate stop_id */
    "BADC,,Bad coord,,95,13,0,,,\n"         /* line 7: latitude out of range */
    "TIM,,Timber Lane,,1,1,0,,,\n"
    "X1,,\"Quoted, \"\"name\"\"\",,1.5,2.5,0,,,\n"
    "NONAME,,,,1,1,0,,,\n"                  /* line 10: no name (counted, kept) */
    "WB,,Wheel,,1,1,0,,7,\n";               /* line 11: bad wheelchair_boarding (kept) */

static const char FREQUENCIES_TXT[] =
    "trip_id,start_time,end_time,headway_secs\n"
    "T3,06:00:00,25:00:00,600\n"
    "T99,06:00:00,07:00:00,600\n";          /* line 3: unknown trip */

static const char TRANSFERS_TXT[] =
    "from_stop_id,to_stop_id,transfer_type,min_transfer_time\n"
    "S1a,TS,2,180\n"
    "S1a,NOPE,0,\n";                        /* line 3: unknown stop */

static const char FEED_INFO_TXT[] =
    "feed_publisher_name,feed_publisher_url,feed_lang,feed_start_date,feed_end_date,feed_version\n"
    "Test Pub,http://pub.example,de,20240101,20241231,v42\n";

static const char SHAPES_TXT[] =
    "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence,shape_dist_traveled\n"
    "S2,1.5,1,2,\n"
    "S1,1,1,2,10.5\n"
    "S1,1,1,1,0\n"
    "S2,1,1.5,1,\n"
    "S1,1,1,1,\n"                           /* line 6: duplicate (S1, 1) */
    "S1,100,1,3,\n";                        /* line 7: bad coordinate */

static void write_tiny_feed(const char *dir)
{
    write_text(dir, "agency.txt", AGENCY_TXT);
    write_text(dir, "routes.txt", ROUTES_TXT);
    write_text(dir, "calendar.txt", CALENDAR_TXT);
    write_text(dir, "calendar_dates.txt", CALENDAR_DATES_TXT);
    write_text(dir, "trips.txt", TRIPS_TXT);
    write_text(dir, "stops.txt", STOPS_TXT);
    write_text(dir, "frequencies.txt", FREQUENCIES_TXT);
    write_text(dir, "transfers.txt", TRANSFERS_TXT);
    write_text(dir, "feed_info.txt", FEED_INFO_TXT);
    write_text(dir, "shapes.txt", SHAPES_TXT);
}

/* Writes schedule.sqlite of the feed in `feed_dir` into `out_dir`; returns
 * schedule_store_write's result, with the message in err. */
static int write_schedule(const char *feed_dir, const char *out_dir, diag *d, store_stats *st,
                          char *err, size_t errlen)
{
    char ferr[256], path[1024];
    feed_t *feed = feed_open(feed_dir, ferr, sizeof ferr);
    if (!feed)
        fail_msg("feed_open: %s", ferr);
    snprintf(path, sizeof path, "%s/schedule.sqlite", out_dir);
    int rc = schedule_store_write(feed, path, d, st, err, errlen);
    feed_close(feed);
    return rc;
}

typedef struct tiny_fixture {
    char feed_dir[512], out_dir[512], db_path[1100];
    diag d;
    store_stats st;
} tiny_fixture;

static int tiny_setup(void **state)
{
    tiny_fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    test_tmpdir(fx->feed_dir, sizeof fx->feed_dir, "stores-feed");
    test_tmpdir(fx->out_dir, sizeof fx->out_dir, "stores-out");
    write_tiny_feed(fx->feed_dir);
    diag_init(&fx->d);
    char err[512] = "";
    int rc = write_schedule(fx->feed_dir, fx->out_dir, &fx->d, &fx->st, err, sizeof err);
    if (rc != 0)
        fail_msg("schedule_store_write: %s", err);
    snprintf(fx->db_path, sizeof fx->db_path, "%s/schedule.sqlite", fx->out_dir);
    *state = fx;
    return 0;
}

static int tiny_teardown(void **state)
{
    tiny_fixture *fx = *state;
    diag_destroy(&fx->d);
    free(fx);
    return 0;
}

/* ------------------------------------------------------------ schedule.sqlite */

static void test_tiny_row_counts(void **state)
{
    tiny_fixture *fx = *state;
    const char *db = fx->db_path;
    assert_int_equal(query_int(db, "SELECT count(*) FROM agency"), 1);
    assert_int_equal(query_int(db, "SELECT count(*) FROM routes"), 3);
    assert_int_equal(query_int(db, "SELECT count(*) FROM calendar"), 2);
    assert_int_equal(query_int(db, "SELECT count(*) FROM calendar_dates"), 2);
    assert_int_equal(query_int(db, "SELECT count(*) FROM trips"), 4);
    assert_int_equal(query_int(db, "SELECT count(*) FROM stops"), 8);
    assert_int_equal(query_int(db, "SELECT count(*) FROM frequencies"), 1);
    assert_int_equal(query_int(db, "SELECT count(*) FROM transfers"), 1);
    assert_int_equal(query_int(db, "SELECT count(*) FROM feed_info"), 1);
    /* rows read, header excluded, bad ones included */
    assert_int_equal(fx->st.routes, 4);
    assert_int_equal(fx->st.trips, 7);
    assert_int_equal(fx->st.stops, 10);
    assert_int_equal(fx->st.calendar_dates, 3);
    assert_true(fx->st.bytes > 0);
    struct stat sb;
    assert_int_equal(stat(db, &sb), 0);
    assert_int_equal((uint64_t)sb.st_size, fx->st.bytes);
    assert_int_equal(query_int(db, "PRAGMA user_version"), 5);   /* 5: services in their one trip's row */
    /* WK runs T1 and T2 (the second T1 is refused): a services row; SA and
     * HOL run one trip each, which holds the service_id and its day set */
    assert_int_equal(query_int(db, "SELECT count(*) FROM services"), 1);
    assert_int_equal(query_int(db, "SELECT count(*) FROM trip_rows WHERE day_set IS NOT NULL"), 2);
    assert_int_equal(query_int(db, "SELECT count(*) FROM trips WHERE service_id = 'WK'"), 2);
    assert_int_equal(query_int(db, "SELECT count(*) FROM trips WHERE trip_id = 'T0' AND service_id = 'SA'"), 1);
    assert_int_equal(query_int(db, "SELECT count(*) FROM trips WHERE trip_id = 'T3' AND service_id = 'HOL'"), 1);
    assert_int_equal(query_int(db, "SELECT count(*) FROM trip_rows WHERE typeof(service) = 'text'"), 2);
}

static void test_tiny_values(void **state)
{
    tiny_fixture *fx = *state;
    const char *db = fx->db_path;
    char text[256];
    /* dates as YYYY-MM-DD, times as seconds, GTFS column names through the view */
    query_text(db, "SELECT start_date || '/' || end_date FROM calendar WHERE service_id='WK'",
               text, sizeof text);
    assert_string_equal(text, "2024-01-01/2024-12-31");
    query_text(db, "SELECT date FROM calendar_dates WHERE service_id='HOL'", text, sizeof text);
    assert_string_equal(text, "2024-12-25");
    assert_int_equal(query_int(db, "SELECT end_time FROM frequencies WHERE trip_id='T3'"),
                     25 * 3600);
    query_text(db,
               "SELECT route_id || '|' || service_id || '|' || trip_headsign || '|' || "
               "direction_id || '|' || shape_id FROM trips WHERE trip_id='T2'",
               text, sizeof text);
    assert_string_equal(text, "R1|WK|Hauptbahnhof|1|S1");
    /* the first of the duplicate trip_id rows is kept */
    query_text(db, "SELECT trip_headsign FROM trips WHERE trip_id='T1'", text, sizeof text);
    assert_string_equal(text, "Hauptbahnhof");
    query_text(db, "SELECT quote(shape_id) FROM trips WHERE trip_id='T3'", text, sizeof text);
    assert_string_equal(text, "NULL");
    query_text(db, "SELECT quote(direction_id) FROM trips WHERE trip_id='T0'", text, sizeof text);
    assert_string_equal(text, "NULL");
    /* repeated strings are stored once */
    assert_int_equal(query_int(db, "SELECT count(*) FROM strings WHERE value='Hauptbahnhof'"), 1);
    query_text(db, "SELECT route_long_name FROM routes WHERE route_id='R2'", text, sizeof text);
    assert_string_equal(text, "Second, Line");
    query_text(db, "SELECT stop_name FROM stops WHERE stop_id='X1'", text, sizeof text);
    assert_string_equal(text, "Quoted, \"name\"");
    /* trimmed coordinates; empty location_type is 0; the first duplicate stop is kept */
    assert_int_equal(query_int(db, "SELECT stop_lat = 52.451 FROM stops WHERE stop_id='S1a'"), 1);
    assert_int_equal(query_int(db, "SELECT location_type FROM stops WHERE stop_id='TS'"), 0);
    query_text(db, "SELECT stop_code FROM stops WHERE stop_id='S1'", text, sizeof text);
    assert_string_equal(text, "100");
    /* the generic node went in without name and position */
    assert_int_equal(query_int(db, "SELECT stop_name IS NULL AND stop_lat IS NULL FROM stops "
                                   "WHERE stop_id='N1'"),
                     1);
    assert_int_equal(
        query_int(db, "SELECT count(*) FROM stops WHERE parent_station='S1'"), 2);
    assert_int_equal(query_int(db, "SELECT count(*) FROM sqlite_master WHERE type='index' AND "
                                   "sql LIKE '%stops(parent_station)%'"),
                     1);
}

static void test_tiny_diag(void **state)
{
    tiny_fixture *fx = *state;
    const diag *d = &fx->d;
    print_diag(d);
    assert_int_equal(d->count[DIAG_DUPLICATE_ID], 2);      /* stop S1, trip T1 */
    assert_int_equal(d->count[DIAG_BAD_DATE], 1);
    assert_int_equal(d->count[DIAG_UNKNOWN_AGENCY], 1);
    assert_int_equal(d->count[DIAG_UNKNOWN_ROUTE], 1);
    assert_int_equal(d->count[DIAG_UNKNOWN_SERVICE], 1);
    assert_int_equal(d->count[DIAG_UNKNOWN_TRIP], 1);
    assert_int_equal(d->count[DIAG_UNKNOWN_STOP], 1);
    assert_int_equal(d->count[DIAG_BAD_COORDINATE], 1);
    assert_int_equal(d->count[DIAG_BAD_NUMBER], 0);
    /* route_type, exception_type, direction_id, wheelchair_boarding */
    assert_int_equal(d->count[DIAG_BAD_VALUE], 4);
    assert_int_equal(d->count[DIAG_MISSING_VALUE], 1);     /* NONAME */
    assert_true(diag_has_example(d, "calendar.txt:4"));
    assert_true(diag_has_example(d, "trips.txt:7"));
}

/* With few problems every one is kept as an example with its file:line. */
static void test_diag_examples(void **state)
{
    (void)state;
    char dir[512], out[512], err[512] = "";
    test_tmpdir(dir, sizeof dir, "stores-ex");
    test_tmpdir(out, sizeof out, "stores-ex-out");
    write_tiny_feed(dir);
    write_text(dir, "routes.txt", "route_id,route_type\nR1,3\nR2,3\n");
    write_text(dir, "trips.txt", "route_id,service_id,trip_id\nR1,WK,T1\nR2,HOL,T3\n");
    write_text(dir, "calendar_dates.txt", "service_id,date,exception_type\nHOL,20241225,1\n");
    write_text(dir, "stops.txt", "stop_id,stop_name,stop_lat,stop_lon\n"
                                 "A,Alpha,1,1\nB,Beta,2,2\nA,Again,3,3\n");
    write_text(dir, "frequencies.txt", "trip_id,start_time,end_time,headway_secs\n");
    write_text(dir, "transfers.txt", "from_stop_id,to_stop_id,transfer_type\nA,B,0\n");
    diag d;
    diag_init(&d);
    if (write_schedule(dir, out, &d, NULL, err, sizeof err) != 0)
        fail_msg("%s", err);
    print_diag(&d);
    assert_int_equal(diag_total(&d), 2);
    assert_int_equal(d.count[DIAG_DUPLICATE_ID], 1);
    assert_int_equal(d.count[DIAG_BAD_DATE], 1);
    assert_true(diag_has_example(&d, "stops.txt:4"));
    assert_true(diag_has_example(&d, "calendar.txt:4"));
    diag_destroy(&d);
}

/* More than 32 matches: no bm25 over all of them, the shortest names come
 * first (stops are numbered by name length); a narrow query is ranked. */
static void test_search_broad_prefix(void **state)
{
    (void)state;
    char feed_dir[512], out_dir[512], err[512] = "";
    test_tmpdir(feed_dir, sizeof feed_dir, "stores-broad-feed");
    test_tmpdir(out_dir, sizeof out_dir, "stores-broad-out");
    write_tiny_feed(feed_dir);
    char stops[8192];
    int off = snprintf(stops, sizeof stops, "stop_id,stop_name,stop_lat,stop_lon\n");
    for (int i = 40; i >= 1; i--)
        off += snprintf(stops + off, sizeof stops - (size_t)off, "M%d,Market Street Gate %d,52.5,13.4\n", i, i);
    off += snprintf(stops + off, sizeof stops - (size_t)off, "MK,Market,52.5,13.4\nMS,Market Street,52.5,13.4\n");
    write_text(feed_dir, "stops.txt", stops);
    write_text(feed_dir, "trips.txt", "route_id,service_id,trip_id\n");
    diag d;
    diag_init(&d);
    store_stats st;
    if (write_schedule(feed_dir, out_dir, &d, &st, err, sizeof err) != 0)
        fail_msg("schedule_store_write: %s", err);
    schedule_db *db = schedule_open(out_dir, err, sizeof err);
    if (!db)
        fail_msg("schedule_open: %s", err);
    stop_id_buf ids[4];
    bool truncated;
    assert_int_equal(schedule_stop_search(db, "mar", 3, ids, &truncated, err, sizeof err), 3);
    assert_true(truncated);
    assert_string_equal(ids[0].id, "MK");    /* "Market" */
    assert_string_equal(ids[1].id, "MS");    /* "Market Street" */
    assert_string_equal(ids[2].id, "M1");    /* "Market Street Gate 1": shortest, then by name */
    assert_int_equal(schedule_stop_search(db, "market gate 37", 3, ids, &truncated, err, sizeof err), 1);
    assert_string_equal(ids[0].id, "M37");
    assert_false(truncated);
    schedule_close(db);
    diag_destroy(&d);
}

/* trips.txt in trip_id order (the writer then skips its sort) and the same
 * trips in reverse give the same trips, in trip_id order; the stops come out
 * numbered shortest name first, then by name and id, whatever their order in
 * stops.txt (copied once in that order from the rows read). */
static void test_trip_order_and_stop_numbering(void **state)
{
    (void)state;
    char feed_dir[2][512], out_dir[2][512], err[512] = "";
    char trips[2][16384];
    int off[2];
    for (int v = 0; v < 2; v++) {
        test_tmpdir(feed_dir[v], sizeof feed_dir[v], v ? "stores-order-rev" : "stores-order-fwd");
        test_tmpdir(out_dir[v], sizeof out_dir[v], v ? "stores-order-rev-out" : "stores-order-fwd-out");
        write_tiny_feed(feed_dir[v]);
        off[v] = snprintf(trips[v], sizeof trips[v], "route_id,service_id,trip_id,trip_headsign,direction_id\n");
    }
    for (int i = 0; i < 200; i++) {   /* T000..T199: the first file in order, the second reversed */
        off[0] += snprintf(trips[0] + off[0], sizeof trips[0] - (size_t)off[0], "R%d,WK,T%03d,Head %d,%d\n",
                           1 + i % 2, i, i % 7, i % 2);
        int j = 199 - i;
        off[1] += snprintf(trips[1] + off[1], sizeof trips[1] - (size_t)off[1], "R%d,WK,T%03d,Head %d,%d\n",
                           1 + j % 2, j, j % 7, j % 2);
    }
    static const char stops_fwd[] = "stop_id,stop_name,stop_lat,stop_lon\n"
                                    "B,Bb,1,1\nA,Bb,1,1\nC,A,1,1\nD,,1,1\nE,Zzz,1,1\nF,Aaaa,1,1\n";
    static const char stops_rev[] = "stop_id,stop_name,stop_lat,stop_lon\n"
                                    "F,Aaaa,1,1\nE,Zzz,1,1\nD,,1,1\nC,A,1,1\nA,Bb,1,1\nB,Bb,1,1\n";
    char listed[2][16384];
    for (int v = 0; v < 2; v++) {
        write_text(feed_dir[v], "trips.txt", trips[v]);
        write_text(feed_dir[v], "stops.txt", v ? stops_rev : stops_fwd);
        write_text(feed_dir[v], "frequencies.txt", "trip_id,start_time,end_time,headway_secs\n");
        diag d;
        diag_init(&d);
        store_stats st;
        if (write_schedule(feed_dir[v], out_dir[v], &d, &st, err, sizeof err) != 0)
            fail_msg("schedule_store_write: %s", err);
        diag_destroy(&d);
        char path[1100], order[256];
        snprintf(path, sizeof path, "%s/schedule.sqlite", out_dir[v]);
        assert_int_equal(query_int(path, "SELECT count(*) FROM trip_rows"), 200);
        query_text(path, "SELECT group_concat(stop_id, ' ') FROM (SELECT stop_id FROM stops ORDER BY rowid)", order,
                   sizeof order);
        assert_string_equal(order, "D C A B E F");   /* no name, "A", "Bb" by id, "Zzz", "Aaaa" */
        query_text(path,
                   "SELECT group_concat(trip_id || '/' || route_id || '/' || trip_headsign || '/' || direction_id, ' ')"
                   " FROM (SELECT * FROM trips ORDER BY trip_id)",
                   listed[v], sizeof listed[v]);
    }
    assert_non_null(strstr(listed[0], "T000/R1/Head 0/0 T001/R2/Head 1/1 T002/"));
    assert_string_equal(listed[0], listed[1]);
}

static void test_tiny_reader(void **state)
{
    tiny_fixture *fx = *state;
    char err[256] = "";
    schedule_db *db = schedule_open(fx->out_dir, err, sizeof err);
    if (!db)
        fail_msg("schedule_open: %s", err);

    feed_meta meta;
    assert_int_equal(schedule_feed_meta(db, &meta), 0);
    assert_string_equal(meta.publisher_name, "Test Pub");
    assert_string_equal(meta.lang, "de");
    assert_string_equal(meta.version, "v42");
    assert_int_equal(meta.start_date, 19723);   /* 2024-01-01 */
    assert_int_equal(meta.end_date, 19723 + 365);
    schedule_close(db);
}

static void test_search(void **state)
{
    tiny_fixture *fx = *state;
    char err[256] = "";
    schedule_db *db = schedule_open(fx->out_dir, err, sizeof err);
    if (!db)
        fail_msg("schedule_open: %s", err);
    stop_id_buf ids[8];
    bool truncated = true;

    /* diacritics- and case-insensitive; the shorter, better match first */
    assert_int_equal(schedule_stop_search(db, "sud", 8, ids, &truncated, err, sizeof err), 2);
    assert_false(truncated);
    assert_string_equal(ids[0].id, "S1");
    assert_string_equal(ids[1].id, "S1a");
    assert_int_equal(schedule_stop_search(db, "BERLIN SÜD gl", 8, ids, &truncated, err,
                                          sizeof err),
                     1);
    assert_string_equal(ids[0].id, "S1a");

    /* prefix matching on every term */
    assert_int_equal(schedule_stop_search(db, "Tim", 8, ids, &truncated, err, sizeof err), 2);
    assert_string_equal(ids[0].id, "TIM");     /* bm25: the shorter name ranks first */
    assert_string_equal(ids[1].id, "TS");
    assert_int_equal(schedule_stop_search(db, "TIMES sq", 8, ids, &truncated, err, sizeof err),
                     1);
    assert_string_equal(ids[0].id, "TS");
    assert_int_equal(schedule_stop_search(db, "42", 8, ids, &truncated, err, sizeof err), 1);

    /* limit and truncation */
    assert_int_equal(schedule_stop_search(db, "berlin", 1, ids, &truncated, err, sizeof err), 1);
    assert_true(truncated);
    assert_int_equal(schedule_stop_search(db, "berlin", 2, ids, &truncated, err, sizeof err), 2);
    assert_false(truncated);
    assert_int_equal(schedule_stop_search(db, "zzz", 8, ids, &truncated, err, sizeof err), 0);

    /* hostile input never errors */
    static const char *const hostile[] = {
        "\"", "\"\"", "AND(", "AND", "OR", "NOT", "NEAR(", "*", "^", "-", ":", "(", ")",
        "{stop_name}: x", "stop_name:Tim", "\"Tim\" OR \"x", "Tim*", "Times — Sq", "—", "'",
        "\xff\xfe", "\xe2\x82", "Tim\x01", "", "   ", "a\"b AND( c*", "NEAR(Tim Sq, 2)",
        "\\", "%", "_"};
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        int n = schedule_stop_search(db, hostile[i], 8, ids, &truncated, err, sizeof err);
        if (n < 0)
            fail_msg("search '%s' failed: %s", hostile[i], err);
    }
    /* punctuation between words is a separator, not an empty term */
    assert_int_equal(schedule_stop_search(db, "Times — Sq", 8, ids, &truncated, err, sizeof err),
                     1);
    assert_int_equal(schedule_stop_search(db, "\"Tim\" OR \"x", 8, ids, &truncated, err,
                                          sizeof err),
                     0);   /* OR is a word here, and nothing matches "x*" and "or*" */
    assert_int_equal(schedule_stop_search(db, "stop_name:Tim", 8, ids, &truncated, err,
                                          sizeof err),
                     0);
    /* a very long input */
    char big[6000];
    for (size_t i = 0; i < sizeof big - 1; i++)
        big[i] = (i % 7 == 6) ? ' ' : 'a' + (char)(i % 26);
    big[sizeof big - 1] = '\0';
    assert_true(schedule_stop_search(db, big, 8, ids, &truncated, err, sizeof err) >= 0);
    schedule_close(db);
}

static void test_schedule_open_errors(void **state)
{
    (void)state;
    char dir[512], err[256] = "";
    test_tmpdir(dir, sizeof dir, "stores-open");
    assert_null(schedule_open(dir, err, sizeof err));
    assert_non_null(strstr(err, "schedule.sqlite"));
    write_text(dir, "schedule.sqlite", "this is not a database, just text that is long enough");
    err[0] = '\0';
    assert_null(schedule_open(dir, err, sizeof err));
    assert_non_null(strstr(err, "schedule.sqlite"));
}

static void test_refuses_existing_path(void **state)
{
    tiny_fixture *fx = *state;
    diag d;
    diag_init(&d);
    char err[256] = "";
    assert_int_equal(write_schedule(fx->feed_dir, fx->out_dir, &d, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "exists"));
    diag_destroy(&d);
    /* the existing file was not touched */
    assert_int_equal(query_int(fx->db_path, "SELECT count(*) FROM trips"), 4);
}

/* A feed that fails must leave no file behind and name the culprit. */
static void expect_fatal(const char *feed_dir, const char *needle1, const char *needle2)
{
    char out[512], path[1100], err[512] = "";
    test_tmpdir(out, sizeof out, "stores-fatal");
    diag d;
    diag_init(&d);
    assert_int_equal(write_schedule(feed_dir, out, &d, NULL, err, sizeof err), -1);
    diag_destroy(&d);
    fprintf(stderr, "  expected error: %s\n", err);
    assert_non_null(strstr(err, needle1));
    if (needle2)
        assert_non_null(strstr(err, needle2));
    snprintf(path, sizeof path, "%s/schedule.sqlite", out);
    assert_false(file_exists(path));
}

static void test_missing_required_file(void **state)
{
    (void)state;
    char dir[512];
    test_tmpdir(dir, sizeof dir, "stores-nofile");
    write_tiny_feed(dir);
    remove_file(dir, "routes.txt");
    expect_fatal(dir, "routes.txt", "missing");

    write_tiny_feed(dir);
    remove_file(dir, "calendar.txt");
    remove_file(dir, "calendar_dates.txt");
    expect_fatal(dir, "calendar.txt", "calendar_dates.txt");

    /* either calendar file alone is enough */
    write_tiny_feed(dir);
    remove_file(dir, "calendar.txt");
    char out[512], err[512] = "";
    test_tmpdir(out, sizeof out, "stores-nocal");
    diag d;
    diag_init(&d);
    if (write_schedule(dir, out, &d, NULL, err, sizeof err) != 0)
        fail_msg("without calendar.txt: %s", err);
    diag_destroy(&d);
}

static void test_missing_required_column(void **state)
{
    (void)state;
    char dir[512];
    test_tmpdir(dir, sizeof dir, "stores-nocol");
    write_tiny_feed(dir);
    write_text(dir, "trips.txt", "route_id,trip_id\nR1,T1\n");
    expect_fatal(dir, "trips.txt", "service_id");

    write_tiny_feed(dir);
    write_text(dir, "stops.txt", "stop_name,stop_lat,stop_lon\nA,1,1\n");
    expect_fatal(dir, "stops.txt", "stop_id");

    /* a header-only file still needs its required columns */
    write_tiny_feed(dir);
    write_text(dir, "calendar.txt", "service_id,monday,start_date,end_date\n");
    expect_fatal(dir, "calendar.txt", "tuesday");

    write_tiny_feed(dir);
    write_text(dir, "agency.txt", "agency_name,agency_url\nX,http://x\n");
    expect_fatal(dir, "agency.txt", "agency_timezone");
}

static void test_header_only_calendar(void **state)
{
    (void)state;
    char dir[512], out[512], path[1100], err[512] = "";
    test_tmpdir(dir, sizeof dir, "stores-hdr");
    test_tmpdir(out, sizeof out, "stores-hdr-out");
    write_tiny_feed(dir);
    write_text(dir, "calendar.txt", "service_id,monday,tuesday,wednesday,thursday,friday,"
                                    "saturday,sunday,start_date,end_date\r\n");
    diag d;
    diag_init(&d);
    if (write_schedule(dir, out, &d, NULL, err, sizeof err) != 0)
        fail_msg("%s", err);
    snprintf(path, sizeof path, "%s/schedule.sqlite", out);
    assert_int_equal(query_int(path, "SELECT count(*) FROM calendar"), 0);
    /* the view gives back the exceptions that change a day: WK's removal of
     * 2024-07-04 removes nothing without its calendar row */
    assert_int_equal(query_int(path, "SELECT count(*) FROM calendar_dates"), 1);
    /* WK and HOL are known from calendar_dates alone; HOL runs T3 only, so
     * T3's row holds it */
    assert_int_equal(query_int(path, "SELECT count(*) FROM services"), 1);
    assert_int_equal(query_int(path, "SELECT count(*) FROM trip_rows WHERE day_set IS NOT NULL"), 1);
    assert_int_equal(query_int(path, "SELECT count(*) FROM trips"), 3);
    assert_int_equal(d.count[DIAG_UNKNOWN_SERVICE], 2);   /* T5 (NOPE), T0 (SA) */
    diag_destroy(&d);
}

/* A day-by-day feed: every trip its own service, its dates in
 * calendar_dates.txt only. The trip rows hold the service ids and day sets;
 * `services` keeps only the services no trip has to itself (here "SHARED",
 * run by two trips, and "IDLE", by none), and the views give the ids and the
 * rows back. "2" is a service_id that looks like the id of a services row:
 * the trips view must not take it for one. */
static void test_day_by_day_services(void **state)
{
    (void)state;
    char dir[512], out[512], path[1100], err[512] = "", text[256];
    test_tmpdir(dir, sizeof dir, "stores-daily");
    test_tmpdir(out, sizeof out, "stores-daily-out");
    write_tiny_feed(dir);
    remove_file(dir, "calendar.txt");
    remove_file(dir, "frequencies.txt");
    write_text(dir, "calendar_dates.txt", "service_id,date,exception_type\n"
                                          "D1,20240102,1\nD1,20240103,1\n"
                                          "2,20240103,1\n"
                                          "SHARED,20240104,1\n"
                                          "IDLE,20240105,1\nIDLE,20240106,1\n");
    write_text(dir, "trips.txt", "route_id,service_id,trip_id,trip_headsign,direction_id,shape_id\n"
                                 "R1,D1,T1,A,0,S1\n"
                                 "R1,2,T2,B,1,S1\n"
                                 "R2,SHARED,T3,C,0,\n"
                                 "R2,SHARED,T4,C,1,\n");
    diag d;
    diag_init(&d);
    if (write_schedule(dir, out, &d, NULL, err, sizeof err) != 0)
        fail_msg("%s", err);
    snprintf(path, sizeof path, "%s/schedule.sqlite", out);
    assert_int_equal(query_int(path, "SELECT count(*) FROM services"), 2);
    assert_int_equal(query_int(path, "SELECT count(*) FROM services WHERE service_id IN ('SHARED', 'IDLE')"), 2);
    assert_int_equal(query_int(path, "SELECT count(*) FROM trip_rows WHERE day_set IS NOT NULL"), 2);
    query_text(path, "SELECT group_concat(trip_id || ':' || service_id, ' ') FROM"
                     " (SELECT trip_id, service_id FROM trips ORDER BY trip_id)", text, sizeof text);
    assert_string_equal(text, "T1:D1 T2:2 T3:SHARED T4:SHARED");
    query_text(path, "SELECT quote(service_id) FROM trips WHERE trip_id = 'T2'", text, sizeof text);
    assert_string_equal(text, "'2'");
    /* the feed's rows back, no more, no fewer */
    query_text(path, "SELECT group_concat(service_id || '@' || date || '=' || exception_type, ' ') FROM"
                     " (SELECT * FROM calendar_dates ORDER BY service_id, date)", text, sizeof text);
    assert_string_equal(text, "2@2024-01-03=1 D1@2024-01-02=1 D1@2024-01-03=1 IDLE@2024-01-05=1 "
                              "IDLE@2024-01-06=1 SHARED@2024-01-04=1");
    query_text(path, "SELECT group_concat(date, ' ') FROM calendar_dates WHERE service_id = 'D1'", text,
               sizeof text);
    assert_string_equal(text, "2024-01-02 2024-01-03");
    assert_int_equal(d.count[DIAG_UNKNOWN_SERVICE], 0);
    diag_destroy(&d);
}

/* trips.txt is read twice, its rows written as read (schedule_write_trips.c):
 * straight into trip_rows when its trip_ids rise, else through a sorted
 * scratch table. Either way the rows are those of the file sorted by
 * trip_id, the first of a repeated trip_id kept: here T1 is given twice
 * with D1, which D1's count must not keep (T1 then holds D1 itself), and
 * T2 a second time with D3, D3's only trip (D3 then runs none: a services
 * row). */
static const char REPEATS_CALENDAR_DATES[] = "service_id,date,exception_type\n"
                                             "D1,20240102,1\nD2,20240103,1\nD3,20240104,1\n"
                                             "SHARED,20240105,1\n";
static const char *const REPEATS_ROWS[] = {"R1,D1,T1,A,0,S1\n", "R1,D1,T1,dup,1,\n", "R2,D2,T2,B,0,\n",
                                           "R2,D3,T2,dup,1,\n", "R1,SHARED,T4,C,0,S1\n",
                                           "R1,SHARED,T5,C,1,S1\n"};

/* The store of the feed with trips.txt's rows in the order `order` gives
 * (indexes into REPEATS_ROWS): its trips, services and problems as text. */
static void trips_in_order_of(const int order[6], const char *tag, char *out, size_t outlen)
{
    char dir[512], dest[512], path[1100], err[512] = "", trips[2048] = "route_id,service_id,trip_id,"
                                                                  "trip_headsign,direction_id,shape_id\n";
    char name[64];
    snprintf(name, sizeof name, "stores-repeats-%s", tag);
    test_tmpdir(dir, sizeof dir, name);
    snprintf(name, sizeof name, "stores-repeats-%s-out", tag);
    test_tmpdir(dest, sizeof dest, name);
    write_tiny_feed(dir);
    remove_file(dir, "calendar.txt");
    remove_file(dir, "frequencies.txt");
    write_text(dir, "calendar_dates.txt", REPEATS_CALENDAR_DATES);
    for (int i = 0; i < 6; i++)
        strcat(trips, REPEATS_ROWS[order[i]]);
    write_text(dir, "trips.txt", trips);
    diag d;
    diag_init(&d);
    if (write_schedule(dir, dest, &d, NULL, err, sizeof err) != 0)
        fail_msg("%s: %s", tag, err);
    snprintf(path, sizeof path, "%s/schedule.sqlite", dest);
    char rows[1024], services[256];
    query_text(path, "SELECT group_concat(trip_id || ':' || service_id || ':' || trip_headsign || ':' ||"
                     " coalesce(shape_id, '-') || ':' || typeof(r.service) || ':' || (r.day_set IS NOT NULL), ' ')"
                     " FROM (SELECT * FROM trips ORDER BY trip_id) t JOIN trip_rows r USING (trip_id)",
               rows, sizeof rows);
    query_text(path, "SELECT group_concat(service_id, ' ') FROM (SELECT service_id FROM services ORDER BY service_id)",
               services, sizeof services);
    snprintf(out, outlen, "%s | %s | duplicates %llu", rows, services,
             (unsigned long long)d.count[DIAG_DUPLICATE_ID]);
    diag_destroy(&d);
}

static void test_trips_written_as_read(void **state)
{
    (void)state;
    static const int in_key_order[6] = {0, 1, 2, 3, 4, 5};
    static const int shuffled[6] = {5, 2, 0, 4, 3, 1};   /* each repeat still after its first */
    static const int reversed_ids[6] = {4, 5, 2, 3, 0, 1};
    char sorted[2048], staged[2048], reversed[2048];
    trips_in_order_of(in_key_order, "sorted", sorted, sizeof sorted);
    assert_string_equal(sorted, "T1:D1:A:S1:text:1 T2:D2:B:-:text:1 T4:SHARED:C:S1:integer:0 "
                                "T5:SHARED:C:S1:integer:0 | D3 SHARED | duplicates 3");   /* and stops.txt's S1 */
    trips_in_order_of(shuffled, "shuffled", staged, sizeof staged);
    assert_string_equal(staged, sorted);
    trips_in_order_of(reversed_ids, "reversed", reversed, sizeof reversed);
    assert_string_equal(reversed, sorted);
    /* the same through SQLite's sort on disk (a national feed's path) */
    uint64_t in_memory_max = schedule_trips_sorted_in_memory_max;
    schedule_trips_sorted_in_memory_max = 0;
    trips_in_order_of(shuffled, "shuffled-on-disk", staged, sizeof staged);
    assert_string_equal(staged, sorted);
    trips_in_order_of(reversed_ids, "reversed-on-disk", reversed, sizeof reversed);
    schedule_trips_sorted_in_memory_max = in_memory_max;
    assert_string_equal(reversed, sorted);
}

/* ------------------------------------------------------------ shapes.sqlite */

static void test_shapes(void **state)
{
    tiny_fixture *fx = *state;
    char path[1100], err[256] = "", ferr[256];
    snprintf(path, sizeof path, "%s/shapes.sqlite", fx->out_dir);
    feed_t *feed = feed_open(fx->feed_dir, ferr, sizeof ferr);
    assert_non_null(feed);
    diag d;
    diag_init(&d);
    store_stats st;
    if (shapes_store_write(feed, path, &d, &st, err, sizeof err) != 0)
        fail_msg("shapes_store_write: %s", err);
    assert_int_equal(st.shapes, 6);
    assert_int_equal(query_int(path, "SELECT count(*) FROM shapes"), 4);
    assert_int_equal(d.count[DIAG_DUPLICATE_ID], 1);
    assert_int_equal(d.count[DIAG_BAD_COORDINATE], 1);
    assert_true(diag_has_example(&d, "shapes.txt:6"));
    /* the first (S1, 1) row is the one kept */
    assert_int_equal(query_int(path, "SELECT shape_dist_traveled = 0 FROM shapes "
                                     "WHERE shape_id='S1' AND shape_pt_sequence=1"),
                     1);
    assert_int_equal(query_int(path, "SELECT shape_dist_traveled IS NULL FROM shapes "
                                     "WHERE shape_id='S2' AND shape_pt_sequence=2"),
                     1);
    /* a second write to the same path is refused */
    assert_int_equal(shapes_store_write(feed, path, &d, &st, err, sizeof err), -1);
    diag_destroy(&d);
    feed_close(feed);
}

static void test_shapes_absent(void **state)
{
    (void)state;
    char dir[512], path[1100], err[256] = "", ferr[256];
    test_tmpdir(dir, sizeof dir, "stores-noshapes");
    write_tiny_feed(dir);
    remove_file(dir, "shapes.txt");
    feed_t *feed = feed_open(dir, ferr, sizeof ferr);
    assert_non_null(feed);
    snprintf(path, sizeof path, "%s/shapes.sqlite", dir);
    diag d;
    diag_init(&d);
    store_stats st;
    if (shapes_store_write(feed, path, &d, &st, err, sizeof err) != 0)
        fail_msg("shapes_store_write: %s", err);
    assert_int_equal(query_int(path, "SELECT count(*) FROM shapes"), 0);
    assert_int_equal(st.shapes, 0);
    feed_close(feed);

    /* a shapes.txt without shape_pt_sequence is an error naming the column */
    write_text(dir, "shapes.txt", "shape_id,shape_pt_lat,shape_pt_lon\nA,1,1\n");
    feed = feed_open(dir, ferr, sizeof ferr);
    assert_non_null(feed);
    snprintf(path, sizeof path, "%s/shapes2.sqlite", dir);
    assert_int_equal(shapes_store_write(feed, path, &d, &st, err, sizeof err), -1);
    assert_non_null(strstr(err, "shapes.txt"));
    assert_non_null(strstr(err, "shape_pt_sequence"));
    assert_false(file_exists(path));
    feed_close(feed);
    diag_destroy(&d);
}

/* ------------------------------------------------------------ live.sqlite */

static void exec_on(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

static void test_live_store(void **state)
{
    (void)state;
    char dir[512], path[1100], err[256] = "", text[64];
    test_tmpdir(dir, sizeof dir, "stores-live");
    snprintf(path, sizeof path, "%s/live.sqlite", dir);
    if (live_store_ensure(dir, err, sizeof err) != 0)
        fail_msg("live_store_ensure: %s", err);
    query_text(path, "PRAGMA journal_mode", text, sizeof text);
    assert_string_equal(text, "wal");
    assert_int_equal(query_int(path, "PRAGMA user_version"), 2);
    assert_int_equal(query_int(path, "SELECT count(*) FROM schema_version"), 2);

    exec_on(path, "INSERT INTO alerts(id, cause, effect, header_text, active_from, active_until,"
                  " created_at, updated_at) VALUES ('a1', 'STRIKE', 'NO_SERVICE', 'Strike',"
                  " 100, 200, 1, 1);"
                  "INSERT INTO alert_entities(alert_id, route_id) VALUES ('a1', 'R1');");
    /* idempotent: a second call keeps the rows */
    if (live_store_ensure(dir, err, sizeof err) != 0)
        fail_msg("live_store_ensure (again): %s", err);
    assert_int_equal(query_int(path, "SELECT count(*) FROM alerts"), 1);
    assert_int_equal(query_int(path, "SELECT count(*) FROM alert_entities WHERE route_id='R1'"),
                     1);
    assert_int_equal(query_int(path, "SELECT count(*) FROM schema_version"), 2);

    /* a newer schema is left alone with a clear error */
    exec_on(path, "PRAGMA user_version=99;");
    err[0] = '\0';
    assert_int_equal(live_store_ensure(dir, err, sizeof err), -1);
    fprintf(stderr, "  expected error: %s\n", err);
    assert_non_null(strstr(err, "99"));
    assert_non_null(strstr(err, "newer"));
    assert_int_equal(query_int(path, "SELECT count(*) FROM alerts"), 1);

    /* a file that is not a database is an error, not a crash, and is kept */
    char dir2[512];
    test_tmpdir(dir2, sizeof dir2, "stores-live-bad");
    write_text(dir2, "live.sqlite", "garbage garbage garbage garbage garbage garbage garbage!");
    err[0] = '\0';
    assert_int_equal(live_store_ensure(dir2, err, sizeof err), -1);
    assert_non_null(strstr(err, "live.sqlite"));

    err[0] = '\0';
    assert_int_equal(live_store_ensure("/nonexistent/transitd", err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/transitd"));
}

/* ------------------------------------------------------------ real feeds */

typedef struct real_build {
    char out_dir[512], db_path[1100];
    store_stats st;
    diag d;
} real_build;

static void build_real(const char *zip_name, real_build *rb, bool with_shapes)
{
    char feed_path[512], err[512] = "";
    shared_feed_path(zip_name, feed_path, sizeof feed_path);
    test_tmpdir(rb->out_dir, sizeof rb->out_dir, "stores-real");
    diag_init(&rb->d);
    feed_t *feed = feed_open(feed_path, err, sizeof err);
    if (!feed)
        fail_msg("feed_open: %s", err);
    snprintf(rb->db_path, sizeof rb->db_path, "%s/schedule.sqlite", rb->out_dir);
    if (schedule_store_write(feed, rb->db_path, &rb->d, &rb->st, err, sizeof err) != 0)
        fail_msg("%s: %s", zip_name, err);
    fprintf(stderr, "  %s: schedule.sqlite %llu bytes in %.3f s (diag %llu)\n", zip_name,
            (unsigned long long)rb->st.bytes, rb->st.seconds,
            (unsigned long long)diag_total(&rb->d));
    print_diag(&rb->d);
    if (with_shapes) {
        char path[1100];
        store_stats sst;
        snprintf(path, sizeof path, "%s/shapes.sqlite", rb->out_dir);
        if (shapes_store_write(feed, path, &rb->d, &sst, err, sizeof err) != 0)
            fail_msg("%s shapes: %s", zip_name, err);
        fprintf(stderr, "  %s: shapes.sqlite %llu points, %llu bytes in %.3f s\n", zip_name,
                (unsigned long long)sst.shapes, (unsigned long long)sst.bytes, sst.seconds);
        assert_int_equal(query_int(path, "SELECT count(*) FROM shapes"), (int64_t)sst.shapes);
    }
    feed_close(feed);
}

/* Searches `text` in a built schedule.sqlite and asserts at least `min_hits`
 * results, among them stop `want`. */
static void assert_search_finds(const char *out_dir, const char *text, int min_hits, const char *want)
{
    char err[256];
    schedule_db *db = schedule_open(out_dir, err, sizeof err);
    if (!db)
        fail_msg("schedule_open: %s", err);
    stop_id_buf ids[20];
    bool truncated;
    int n = schedule_stop_search(db, text, 20, ids, &truncated, err, sizeof err);
    assert_true(n >= min_hits);
    bool found = false;
    for (int i = 0; i < n; i++)
        found |= strcmp(ids[i].id, want) == 0;
    assert_true(found);
    schedule_close(db);
}

static void test_real_bari(void **state)
{
    (void)state;
    real_build rb;
    build_real("amtab_bari_2026.zip", &rb, false);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM calendar"), 0);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM calendar_dates"), 1147);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM stops"), 1119);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM trips"), 6723);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM transfers"), 0);
    assert_int_equal(rb.d.count[DIAG_DUPLICATE_ID], 0);
    char err[256];
    schedule_db *db = schedule_open(rb.out_dir, err, sizeof err);
    assert_non_null(db);
    feed_meta meta;
    assert_int_equal(schedule_feed_meta(db, &meta), 0);
    assert_int_equal(meta.end_date, 20818);   /* 2026-12-31 */
    schedule_close(db);
    assert_search_finds(rb.out_dir, "bari centrale", 1, "09369C00");
    diag_destroy(&rb.d);
}

static void test_real_nyc_subway(void **state)
{
    (void)state;
    real_build rb;
    build_real("nyct_subway_2026.zip", &rb, false);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM stops"), 1488);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM stops WHERE location_type=1"),
                     496);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM stops WHERE parent_station='127'"),
                     2);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM transfers"), 613);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM routes"), 29);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM trips"), 20621);
    assert_search_finds(rb.out_dir, "TIMES sq", 3, "127");   /* the station and its two platforms */
    diag_destroy(&rb.d);
}

static void test_real_brooklyn(void **state)
{
    (void)state;
    real_build rb;
    build_real("nyct_bus_brooklyn_2026.zip", &rb, true);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM trips"), 58357);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM stops"), 4575);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM routes"), 307);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM calendar"), 36);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM calendar_dates"), 728);
    assert_int_equal(diag_total(&rb.d), 0);
    /* the size budget: timetable.bin (~7 MB) + schedule.sqlite <= 10% of ~159 MB */
    assert_true(rb.st.bytes < 5u * 1000 * 1000);   /* measured: 3,940,352 */
    printf("Brooklyn schedule.sqlite: %llu bytes, built in %.3f s\n",
           (unsigned long long)rb.st.bytes, rb.st.seconds);
    diag_destroy(&rb.d);
}

static void test_real_exo_shapes(void **state)
{
    (void)state;
    real_build rb;
    build_real("exo_laurentides_2025.zip", &rb, true);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM trips"), 12882);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM stops"), 2507);
    char path[1100];
    snprintf(path, sizeof path, "%s/shapes.sqlite", rb.out_dir);
    assert_int_equal(query_int(path, "SELECT count(*) FROM shapes"), 139927);
    diag_destroy(&rb.d);
}

static void test_real_abidjan_frequencies(void **state)
{
    (void)state;
    real_build rb;
    build_real("abidjan_osm_frequencies_2021.zip", &rb, false);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM frequencies"), 624);
    assert_int_equal(query_int(rb.db_path, "SELECT count(*) FROM agency"), 18);
    char err[256];
    schedule_db *db = schedule_open(rb.out_dir, err, sizeof err);
    assert_non_null(db);
    feed_meta meta;
    assert_int_equal(schedule_feed_meta(db, &meta), 0);
    assert_string_equal(meta.publisher_name, "Jungle Bus");
    schedule_close(db);
    diag_destroy(&rb.d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tiny_row_counts, tiny_setup, tiny_teardown),
        cmocka_unit_test_setup_teardown(test_tiny_values, tiny_setup, tiny_teardown),
        cmocka_unit_test_setup_teardown(test_tiny_diag, tiny_setup, tiny_teardown),
        cmocka_unit_test_setup_teardown(test_tiny_reader, tiny_setup, tiny_teardown),
        cmocka_unit_test_setup_teardown(test_search, tiny_setup, tiny_teardown),
        cmocka_unit_test(test_search_broad_prefix),
        cmocka_unit_test(test_trip_order_and_stop_numbering),
        cmocka_unit_test_setup_teardown(test_refuses_existing_path, tiny_setup, tiny_teardown),
        cmocka_unit_test_setup_teardown(test_shapes, tiny_setup, tiny_teardown),
        cmocka_unit_test(test_diag_examples),
        cmocka_unit_test(test_schedule_open_errors),
        cmocka_unit_test(test_missing_required_file),
        cmocka_unit_test(test_missing_required_column),
        cmocka_unit_test(test_header_only_calendar),
        cmocka_unit_test(test_day_by_day_services),
        cmocka_unit_test(test_trips_written_as_read),
        cmocka_unit_test(test_shapes_absent),
        cmocka_unit_test(test_live_store),
        cmocka_unit_test(test_real_bari),
        cmocka_unit_test(test_real_nyc_subway),
        cmocka_unit_test(test_real_brooklyn),
        cmocka_unit_test(test_real_exo_shapes),
        cmocka_unit_test(test_real_abidjan_frequencies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
