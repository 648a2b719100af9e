/* fuzz_feed_merge.c — libFuzzer target for the merge of feeds
 * (src/import/feed_merge.c): its header reader, the id rewriting, the
 * merged CSV it writes and the mapping of messages back to the feeds.
 *
 * Why it exists: `transitd import a.zip b.zip` reads every row of every
 * feed through the merge before the import sees them. The input's first
 * byte picks a file of the second of two small feeds (both directories
 * under TMPDIR); the rest of the input replaces that file. The merge must
 * succeed or fail with a message; when it succeeds, every merged file it
 * wrote must parse as CSV, and any text mapped back through
 * feed_merge_explain must stay a bounded string. The input is also given to
 * feed_merge_explain as a message. Any crash, leak or UB is a finding.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transit/feed.h"
#include "transit/feed_merge.h"

static const char *const FILES[][2] = {
    {"agency.txt", "agency_id,agency_name,agency_url,agency_timezone\nag,A,http://a,UTC\n"},
    {"stops.txt", "stop_id,stop_name,stop_lat,stop_lon,parent_station,zone_id\nST,S,1,1,,z\nS1,S,1,1,ST,z\n"},
    {"routes.txt", "route_id,agency_id,route_type\nR1,ag,3\n"},
    {"trips.txt", "route_id,service_id,trip_id,shape_id\nR1,WK,T1,SH\n"},
    {"stop_times.txt", "trip_id,arrival_time,departure_time,stop_id,stop_sequence\nT1,08:00:00,08:00:00,S1,1\n"},
    {"calendar.txt", "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date\n"
                     "WK,1,1,1,1,1,0,0,20260101,20261231\n"},
    {"calendar_dates.txt", "service_id,date,exception_type\nWK,20260105,2\n"},
    {"shapes.txt", "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\nSH,1,1,1\n"},
    {"transfers.txt", "from_stop_id,to_stop_id,transfer_type,from_trip_id,to_trip_id\nS1,ST,0,T1,T1\n"},
    {"fare_rules.txt", "fare_id,route_id,origin_id\nF,R1,z\n"},
    {"feed_info.txt", "feed_publisher_name,feed_publisher_url,feed_lang,feed_version\nP,http://p,en,1\n"},
};
enum { NFILES = sizeof FILES / sizeof *FILES };

static char base[200];

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    fwrite(data, 1, len, f);
    fclose(f);
}

static void empty_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char path[512];
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
}

static int on_row(void *ctx, const csv_field *f, uint64_t line)
{
    (void)f;
    (void)line;
    ++*(uint64_t *)ctx;
    return 0;
}

static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s/fuzz-merge-%ld", tmp ? tmp : "/tmp", (long)getpid());
    mkdir(base, 0755);
    char dir[256];
    snprintf(dir, sizeof dir, "%s/a", base);
    mkdir(dir, 0755);
    for (int i = 0; i < NFILES; i++)
        write_file(dir, FILES[i][0], FILES[i][1], strlen(FILES[i][1]));
    snprintf(dir, sizeof dir, "%s/b", base);
    mkdir(dir, 0755);
    snprintf(dir, sizeof dir, "%s/out", base);
    mkdir(dir, 0755);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!base[0])
        setup();
    if (size == 0)
        return 0;
    char a[256], b[256], out[256];
    snprintf(a, sizeof a, "%s/a", base);
    snprintf(b, sizeof b, "%s/b", base);
    snprintf(out, sizeof out, "%s/out", base);
    int pick = data[0] % NFILES;
    for (int i = 0; i < NFILES; i++) {
        if (i == pick)
            write_file(b, FILES[i][0], data + 1, size - 1);
        else
            write_file(b, FILES[i][0], FILES[i][1], strlen(FILES[i][1]));
    }
    empty_dir(out);
    feed_merge_input in[2] = {{a, "a", NULL}, {b, "b", NULL}};
    char err[1024] = "";
    feed_merge *m = feed_merge_write(in, 2, out, err, sizeof err);
    if (!m) {
        if (!err[0])
            abort();   /* a failure always says why */
        return 0;
    }
    feed_t *merged = feed_open(out, err, sizeof err);
    if (!merged)
        abort();
    int n = 0;
    const char *const *names = feed_members(merged, &n);
    static const char *const keys[] = {"stop_id", "trip_id", "service_id"};
    for (int i = 0; i < n; i++) {
        uint64_t rows = 0;
        csv_error cerr;
        if (feed_parse_csv(merged, names[i], keys, 3, on_row, &rows, NULL, &cerr) != 0)
            abort();   /* what the merge writes is CSV */
        char msg[128], explained[1024];
        snprintf(msg, sizeof msg, "%s:%llu: x", names[i], (unsigned long long)(rows + 1));
        feed_merge_explain(m, msg, explained, sizeof explained);
    }
    feed_close(merged);
    char text[512], explained[1024];
    size_t len = size - 1 < sizeof text - 1 ? size - 1 : sizeof text - 1;
    memcpy(text, data + 1, len);
    text[len] = 0;
    feed_merge_explain(m, text, explained, sizeof explained);
    if (strlen(explained) >= sizeof explained)
        abort();
    feed_merge_free(m);
    return 0;
}
