/* bench_rt_large.c — the memory and time of taking in one large GTFS-Realtime
 * TripUpdates feed, in process, the way a server does (`make
 * bench-realtime-large` runs it on a 64 MB feed of 200,000 entities).
 *
 * Why it exists: issue #26 bounds the peak extra memory of decoding and
 * applying a 64 MB feed by 3x its size. A server's RSS mixes that with its
 * connections and caches, so this measures it alone: it opens the dataset,
 * takes in the feed once to warm the dataset's pages and gives the heap
 * back (malloc_trim), then for each measured round resets the high-water
 * mark (/proc/self/clear_refs) and runs the server's own path: rt_ingest
 * polls the file (rt_fetch reads it, rt_feed decodes it) and builds the
 * overlay (rt_ingest_overlay: the overlay and the vehicles). Round 1 starts
 * with no feed (the first apply); round 2 and on swap FEED_B and FEED over
 * the previous one while its overlay stays published, as every poll of a
 * replaced file does. It reports per round the time of the poll (fetch and
 * decode) and of the build, the VmRSS after the poll (the decoded feed; the
 * bytes are freed by then) and after the build (the feed and its overlay;
 * for a swap, the previous overlay is released by then), and VmHWM minus
 * the VmRSS before the round, in
 * MB and as a ratio to the feed's size, as a table and as JSON lines
 * {"bench":"rt_large",...} for bench/realtime_large.py.
 *
 * Usage: bench_rt_large DATA_DIR FEED.pb [FEED_B.pb] [--rounds N] [--now UNIX]
 *   DATA_DIR is the dataset folder (DATA/current); --now sets the overlay's
 *   clock (default: the time of the run).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "transit/query.h"
#include "transit/rt_ingest.h"
#include "transit/rt_overlay.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* A field of /proc/self/status in kB (VmRSS, VmHWM), or -1 off Linux. */
static long status_kb(const char *name)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    size_t n = strlen(name);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, name, n) == 0 && line[n] == ':') {
            kb = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

/* Resets VmHWM to the current RSS (Linux 4.0 and later); false when it cannot. */
static bool reset_high_water(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

static void give_back_heap(void)
{
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

typedef struct round_result {
    double poll_ms, build_ms;
    long rss_before_kb, hwm_kb;
    long polled_kb;            /* VmRSS after the poll: the decoded feed (the bytes are freed) */
    long applied_kb;           /* VmRSS after the build: the feed and its overlay */
    uint32_t matched;
} round_result;

/* One poll of `in` (whose source file is `feed`) and one overlay build;
 * `published` is the overlay in use before (released after the build, as
 * the server's swap does) and gets the new one. false: said on stderr. */
static bool take_in(rt_ingest *in, dataset *ds, int64_t now, rt_overlay **published, round_result *r)
{
    char err[512];
    double t0 = now_ms();
    rt_poll_result pr = rt_ingest_poll(in, now, err, sizeof err);
    double t1 = now_ms();
    if (pr != RT_POLL_NEW) {
        fprintf(stderr, "bench_rt_large: the poll took in no new feed: %s\n", err[0] ? err : "(the same bytes)");
        return false;
    }
    r->polled_kb = status_kb("VmRSS");
    rt_overlay *o = rt_ingest_overlay(in, ds, now);
    double t2 = now_ms();
    if (!o) {
        fprintf(stderr, "bench_rt_large: out of memory building the overlay\n");
        return false;
    }
    if (*published) rt_overlay_release(*published);
    *published = o;
    give_back_heap();
    r->applied_kb = status_kb("VmRSS");
    r->poll_ms = t1 - t0;
    r->build_ms = t2 - t1;
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[1], "--help") == 0) {
        fprintf(stderr, "usage: bench_rt_large DATA_DIR FEED.pb [FEED_B.pb] [--rounds N] [--now UNIX]\n");
        return argc < 3 ? 2 : 0;
    }
    const char *feeds[2] = {argv[2], argv[2]};
    int rounds = 3;
    int64_t now = (int64_t)time(NULL);
    int i = 3;
    if (i < argc && strncmp(argv[i], "--", 2) != 0) feeds[1] = argv[i++];
    for (; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--rounds") == 0) rounds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--now") == 0) now = strtoll(argv[i + 1], NULL, 10);
        else {
            fprintf(stderr, "bench_rt_large: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (rounds < 1 || rounds > 100) rounds = 3;
    /* the staging symlink points at absolute paths */
    static char absolute[2][4096];
    for (int k = 0; k < 2; k++) {
        if (!realpath(feeds[k], absolute[k])) {
            fprintf(stderr, "bench_rt_large: %s: cannot resolve it\n", feeds[k]);
            return 1;
        }
        feeds[k] = absolute[k];
    }
    struct stat st;
    if (stat(feeds[0], &st) != 0 || st.st_size <= 0) {
        fprintf(stderr, "bench_rt_large: %s: cannot read its size\n", feeds[0]);
        return 1;
    }
    double feed_mb = (double)st.st_size / 1048576.0;
    char err[512];
    dataset *ds = dataset_open(argv[1], err, sizeof err);
    if (!ds) {
        fprintf(stderr, "bench_rt_large: %s: %s\n", argv[1], err);
        return 1;
    }
    /* a staging path the rounds point the source at: FEED, then FEED_B, ... */
    char stage[4096];
    snprintf(stage, sizeof stage, "%s.bench-rt-large", feeds[0]);
    int rc = 1;
    rt_overlay *published = NULL;
    rt_ingest *in = NULL;
    round_result warm = {0};
    /* warm-up: the dataset's pages the overlay build touches come in once */
    remove(stage);
    if (symlink(feeds[0], stage) != 0 || !(in = rt_ingest_new(stage, 30)) ||
        !take_in(in, ds, now, &published, &warm)) {
        fprintf(stderr, "bench_rt_large: the warm-up failed\n");
        goto done;
    }
    rt_overlay_release(published);
    published = NULL;
    rt_ingest_free(in);
    in = NULL;
    give_back_heap();
    printf("%-6s %-26s %9s %9s %11s %11s %10s %12s\n", "round", "what", "poll ms", "build ms", "polled +MB",
           "applied +MB", "peak +MB", "x feed size");
    for (int k = 0; k < rounds; k++) {
        round_result r = {0};
        if (k == 0) {
            remove(stage);
            if (symlink(feeds[0], stage) != 0 || !(in = rt_ingest_new(stage, 30))) goto done;
        } else {
            remove(stage);
            if (symlink(feeds[k % 2], stage) != 0) goto done;
        }
        give_back_heap();
        r.rss_before_kb = status_kb("VmRSS");
        if (!reset_high_water()) {
            fprintf(stderr, "bench_rt_large: cannot reset VmHWM (/proc/self/clear_refs)\n");
            goto done;
        }
        if (!take_in(in, ds, now, &published, &r)) goto done;
        r.hwm_kb = status_kb("VmHWM");
        double extra_mb = (double)(r.hwm_kb - r.rss_before_kb) / 1024.0;
        const char *what = k == 0 ? "first apply (no feed before)" : "swap (previous one published)";
        double polled_mb = (double)(r.polled_kb - r.rss_before_kb) / 1024.0;
        double applied_mb = (double)(r.applied_kb - r.rss_before_kb) / 1024.0;
        printf("%-6d %-26.26s %9.1f %9.1f %11.1f %11.1f %10.1f %12.2f\n", k + 1, what, r.poll_ms, r.build_ms,
               polled_mb, applied_mb, extra_mb, extra_mb / feed_mb);
        printf("{\"bench\":\"rt_large\",\"round\":%d,\"kind\":\"%s\",\"feed_bytes\":%lld,\"poll_ms\":%.1f,"
               "\"build_ms\":%.1f,\"rss_before_kb\":%ld,\"polled_kb\":%ld,\"applied_kb\":%ld,\"hwm_kb\":%ld,\"extra_mb\":%.1f,"
               "\"ratio\":%.3f}\n",
               k + 1, k == 0 ? "first" : "swap", (long long)st.st_size, r.poll_ms, r.build_ms, r.rss_before_kb,
               r.polled_kb, r.applied_kb, r.hwm_kb, extra_mb, extra_mb / feed_mb);
        fflush(stdout);
    }
    rc = 0;
done:
    remove(stage);
    if (published) rt_overlay_release(published);
    rt_ingest_free(in);
    dataset_release(ds);
    return rc;
}
