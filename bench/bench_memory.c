/* bench_memory.c — what a served dataset weighs in memory, array by array
 * (`build/release/bench/bench_memory DATA_DIR`).
 *
 * Why it exists: issue #28 asks for a serving RSS of at most 1 GB at 160M
 * stop_times, and the server's RSS is the timetable's touched pages plus
 * everything derived from it when it is opened (visit summaries, the grid,
 * id hashes, each route's trips, the arrival index) and the departure rows'
 * texts. This opens a dataset as the server does (dataset_open,
 * dataset_keep_derived_in_files, the preparation serving_install_dataset
 * runs, then dataset_drop_pages),
 * prints each derived array's bytes and whether it lives in the heap or in a
 * kept file, and the process's RSS (anonymous and file-backed) and time
 * after each step, so that a change to any of them is measured, not
 * guessed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/departure_json.h"
#include "transit/network.h"
#include "store/dataset_internal.h"
#include "transit/translations.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* VmRSS, RssAnon and RssFile of this process, in MB. */
static void rss(const char *step, double seconds)
{
    FILE *f = fopen("/proc/self/status", "r");
    long rss_kb = -1, anon_kb = -1, file_kb = -1;
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        sscanf(line, "VmRSS: %ld", &rss_kb);
        sscanf(line, "RssAnon: %ld", &anon_kb);
        sscanf(line, "RssFile: %ld", &file_kb);
    }
    if (f)
        fclose(f);
    printf("%-34s %8.3f s   RSS %8.1f MB (anon %8.1f, file %8.1f)\n", step, seconds, rss_kb / 1024.0,
           anon_kb / 1024.0, file_kb / 1024.0);
}

static void array(const char *name, const void *p, uint64_t count, size_t elem, const dataset *ds)
{
    const char *where = "heap";
    const char *m = ds->derived_map;
    if (m && (const char *)p >= m && (const char *)p < m + ds->derived_map_size)
        where = "kept file";
    printf("  %-22s %12llu x %3zu B = %9.1f MB  %s\n", name, (unsigned long long)count, elem,
           (double)count * (double)elem / 1e6, p ? where : "absent");
}

int main(int argc, char **argv)
{
    if (argc != 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(stderr, "usage: bench_memory DATA_DIR\n");
        return argc == 2 ? 0 : 2;
    }
    char err[512];
    rss("start", 0);
    double t0 = now_s();
    dataset *ds = dataset_open(argv[1], err, sizeof err);
    if (!ds) {
        fprintf(stderr, "bench_memory: %s\n", err);
        return 1;
    }
    double t1 = now_s();
    rss("dataset_open", t1 - t0);
    dataset_keep_derived_in_files(ds);
    double t1b = now_s();
    rss("+ dataset_keep_derived_in_files", t1b - t1);
    t1 = t1b;
    if (departure_json_prepare(ds, err, sizeof err) != 0 || network_prepare(ds, err, sizeof err) != 0 ||
        !dataset_translations_get(ds, err, sizeof err)) {
        fprintf(stderr, "bench_memory: %s\n", err);
        dataset_release(ds);
        return 1;
    }
    double t2 = now_s();
    rss("+ the server's preparation", t2 - t1);
    dataset_drop_pages(ds);
    rss("+ dataset_drop_pages", now_s() - t2);
    const tt_meta *m = ds->meta;
    printf("timetable.bin %.1f MB: %u stops, %u routes, %u trips, %u runs, %llu visits, %u groups\n",
           (double)ds->size / 1e6, m->nstops, m->nroutes, m->ntrips, m->nruns, (unsigned long long)ds->nvisits,
           m->ngroups);
    for (uint32_t i = 0; i < ds->hdr->nsections; i++)
        printf("  section %2u %12.1f MB\n", ds->hdr->sections[i].id, (double)ds->hdr->sections[i].size / 1e6);
    printf("derived at open:\n");
    array("visit_hot", ds->visit_hot, ds->nvisits, sizeof(visit_hot), ds);
    array("arr_visit_hot", ds->arr_visit_hot, ds->narr_visits, sizeof(visit_hot), ds);
    array("event_runs", ds->event_runs, ds->nevent_runs, sizeof(tt_run), ds);
    array("grid_points", ds->grid_points, ds->ngrid_stops, sizeof(grid_point), ds);
    array("grid_visits", ds->grid_visits, ds->ngrid_stops, sizeof(grid_visits), ds);
    array("arr_grid", ds->arr_grid, ds->ngrid_stops, sizeof(arrival_range), ds);
    array("arr_stops", ds->arr_stops, m->nstops, sizeof(arrival_range), ds);
    array("stop id hash", ds->stop_ids.slots, (uint64_t)ds->stop_ids.mask + 1, sizeof(uint64_t), ds);
    array("route id hash", ds->route_ids.slots, (uint64_t)ds->route_ids.mask + 1, sizeof(uint64_t), ds);
    array("trip id hash", ds->trip_ids.slots, (uint64_t)ds->trip_ids.mask + 1, sizeof(uint64_t), ds);
    array("route_trip_first", ds->route_trip_first, (uint64_t)m->nroutes + 1, sizeof(uint32_t), ds);
    array("route_trips", ds->route_trips, m->ntrips, sizeof(uint32_t), ds);
    printf("extensions (departure rows' texts, groups' headsigns, translations):\n");
    for (int i = 0; i < DATASET_EXTENSIONS_MAX; i++) {
        const dataset_extension *ext = atomic_load(&ds->extension_kind[i]);
        if (ext && ds->extension_map[i])
            printf("  %-30s kept file, %.1f MB\n", ext->name, (double)ds->extension_map_size[i] / 1e6);
        else if (ext)
            printf("  %-30s heap\n", ext->name);
    }
    dataset_release(ds);
    return 0;
}
