/* dataset_internal.h — the opened dataset's typed views of timetable.bin,
 * shared by dataset.c (opening, look-ups) and query.c (the hot path).
 *
 * Why it exists: query.h keeps `dataset` opaque for callers; the two files
 * that implement it need the same struct and a few inline helpers.
 */
#ifndef TRANSIT_DATASET_INTERNAL_H
#define TRANSIT_DATASET_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "store/timetable_format.h"
#include "transit/query.h"

/* Derived when the dataset is opened, not stored in timetable.bin:
 * everything the window search needs of a visit and its group, beside the
 * visit so that a stop's visits read as one sequential stretch of memory
 * and no scattered tt_visit or tt_group record is touched.
 * - Most of a stop's visits belong to groups whose service does not run
 *   that day (four in five on NYC Brooklyn), and many lie wholly outside
 *   the window: `service`, `first_secs` and `last_secs` reject those first.
 * - `min_off`/`max_off` bound every run's offset at the visit's position,
 *   so the first run in a window is found by searching the runs' starts,
 *   which lie side by side, reading the time profiles of only the one or
 *   two runs in between.
 * 40 bytes a visit (1.6 MB for NYC Brooklyn). */
typedef struct visit_hot {
    uint32_t days;                    /* the group's day set */
    uint32_t first_secs, last_secs;   /* earliest and latest departure there, GTFS seconds */
    int32_t min_off, max_off;         /* of those departures from their runs' starts */
    uint32_t run_first, run_count;    /* the group's runs */
    uint32_t route_rank;              /* the group's */
    uint32_t pos;                     /* the visit's position in the pattern */
    uint32_t stop_sequence;           /* of the pattern at that position */
} visit_hot;

/* Derived when the dataset is opened: the coordinates of GRID_STOPS, in its
 * order, so that the stops of a grid cell are one sequential read instead
 * of one 80-byte tt_stop record each, with cos(lat) computed once instead
 * of in every distance. 32 bytes a stop. */
typedef struct grid_point {
    double lat, lon;
    double cos_lat;                   /* cos(lat * M_PI / 180), as haversine_m computes it */
    uint32_t stop;
    uint8_t location_type;
    uint8_t pad[3];
} grid_point;

/* Derived when the dataset is opened, beside grid_points and in the same
 * order: what a departures search reads of each nearby stop. The stops
 * found near a point lie close together in grid order, so these take a few
 * cache lines where the stops' 72-byte records, scattered over the stop
 * table, would take one or two lines each. 12 bytes a stop. */
typedef struct grid_visits {
    uint32_t visit_first, visit_count;
    uint32_t id_rank;
} grid_visits;

static inline grid_visits grid_visits_of(const tt_stop *sp)
{
    return (grid_visits){sp->visit_first, sp->visit_count, sp->id_rank};
}

/* Derived when the dataset is opened (dataset_arrivals.c): where a stop's
 * arrival visits lie in arr_visit_hot. The first `only` of them are calls
 * with no departure for riders (the trip's last stop, or pickup_type 1):
 * what a board of both kinds adds to the departures. 12 bytes a stop. */
typedef struct arrival_range {
    uint32_t first, count;
    uint32_t only;
} arrival_range;

/* Derived when the dataset is opened: an open-addressing hash of the ids of
 * one kind of record, so that finding a stop, route or trip by id reads one
 * slot and one string instead of the dozen scattered strings of a binary
 * search. A slot holds the id's 32-bit hash above the record index + 1
 * (0: empty); the table is a power of two at least twice the records. */
typedef struct id_hash {
    uint64_t *slots;
    uint32_t mask;
} id_hash;

/* Idle schedule.sqlite (and shapes.sqlite) connections a dataset keeps for
 * reuse (one per server thread, as a rule); more are closed when given back. */
#define DATASET_SCHEDULE_IDLE 64

struct dataset {
    const unsigned char *base;
    size_t size;
    _Atomic long refs;
    char dir[4096];
    char version[64];
    const tt_header *hdr;
    const tt_meta *meta;
    const char *strings;
    uint64_t nstrings;
    const tt_stop *stops;
    const uint32_t *stop_by_id, *children, *stop_routes, *grid_cells, *grid_stops;
    uint64_t nchildren, nstop_routes, ngrid_stops;
    const tt_route *routes;
    const uint32_t *route_by_id;
    const tt_agency *agencies;
    const tt_trip *trips;
    const uint32_t *trip_by_id;
    const uint64_t *day_sets;
    const tt_pattern *patterns;
    const tt_pattern_stop *pattern_stops;
    uint64_t npattern_stops;
    const int32_t *profiles;
    uint64_t nprofiles;
    const tt_group *groups;
    const tt_run *runs;
    const tt_visit *visits;
    uint64_t nvisits;
    const int64_t *daybase;
    const tt_tz_transition *tz;
    visit_hot *visit_hot;          /* nvisits, owned */
    grid_point *grid_points;       /* ngrid_stops, owned */
    grid_visits *grid_visits;      /* ngrid_stops, owned */
    id_hash stop_ids, route_ids, trip_ids;   /* owned */
    uint32_t *route_trip_first;    /* nroutes + 1, owned: route r's trips are */
    uint32_t *route_trips;         /* route_trips[route_trip_first[r] .. [r + 1]) (ntrips) */
    /* Arrival events, derived at open (dataset_arrivals.c) and searched as
     * departures are. event_runs holds a copy of RUNS, then the runs again in
     * arrival groups, each run's profile its trip's arrival profile: a
     * departure visit's run range reads the same in RUNS and here, and an
     * arrival visit's lies in the second half. */
    tt_run *event_runs;            /* nevent_runs (2 * nruns), owned */
    uint64_t nevent_runs;
    visit_hot *arr_visit_hot;      /* narr_visits, owned: contiguous per stop */
    uint64_t narr_visits;
    arrival_range *arr_stops;      /* nstops, owned */
    arrival_range *arr_grid;       /* ngrid_stops, owned: arr_stops in GRID_STOPS order */
    void *derived_map;             /* the arrays above mapped from VERSION/.derived
                                    * (dataset_cache.c) instead of owned, or NULL */
    size_t derived_map_size;
    char cache_path[4112];         /* VERSION/.derived */
    bool trusted;                  /* opened by dataset_open_trusted */
    bool extensions_to_files;      /* dataset_keep_derived_in_files was called */
    uint64_t file_dev, file_ino;   /* of the mapped timetable.bin */
    int pin_fd;                    /* shared lock on the version's .readers.lock, or -1 */
    char pin_problem[160];         /* why pin_fd is -1, or "" */
    atomic_flag pool_lock;         /* guards the idle connections below (dataset_pools.c) */
    int nschedule_idle, nshapes_idle;
    struct schedule_db *schedule_idle[DATASET_SCHEDULE_IDLE];
    struct shapes_db *shapes_idle[DATASET_SCHEDULE_IDLE];
    /* dataset_extension_get: which extension each slot holds (set once,
     * under extension_lock) and its data (published with release order
     * after it is derived, so a reader that sees it sees it whole) */
    pthread_mutex_t extension_lock;
    const dataset_extension *_Atomic extension_kind[DATASET_EXTENSIONS_MAX];
    void *_Atomic extension_data[DATASET_EXTENSIONS_MAX];
    void *extension_map[DATASET_EXTENSIONS_MAX];     /* VERSION/.<file> mapped for a view, or NULL */
    size_t extension_map_size[DATASET_EXTENSIONS_MAX];
};

/* The UTC offset at `instant`, and the span [*from, *until) it holds over. */
int32_t dataset_utc_offset_span(const dataset *ds, int64_t instant, int64_t *from, int64_t *until);
int dataset_validate_indices(dataset *ds, char *err, size_t errlen, const char *path);
/* Refuses (-1, err) indexes and runs not in the orders the engine relies
 * on (dataset_check.c). */
int dataset_check_orders(const dataset *ds, char *err, size_t errlen, const char *path);
/* The derived arrays from a VERSION/.derived file written for this very
 * timetable (dataset_cache.c): 0 and ds's derived fields pointing into its
 * mapping, or -1 (absent, stale, damaged) with nothing changed. */
int dataset_cache_load(dataset *ds, const char *path);
/* Writes the derived arrays to path (atomically); -1 when it cannot. */
int dataset_cache_save(dataset *ds, const char *path);
/* Moves the derived arrays from the heap into an unlinked file of the
 * version directory, mapped: 0, or -1 (not writable) with nothing changed. */
int dataset_cache_move(dataset *ds);
/* The same for an extension's data: the view over its kept bytes, with
 * `data` released, or `data` itself when it cannot be moved. */
void *dataset_cache_move_extension(dataset *ds, const dataset_extension *ext, int slot, void *data);
/* Advice for a mapping read at scattered places (the timetable, the kept
 * arrays): no read-ahead, and no huge mappings of the page cache's large
 * folios (Linux maps a 2 MB folio of a file written by write() whole, on
 * one touch, when the mapping is aligned to it), so a query's touch maps
 * the page it reads and not the 2 MB around it, which would count in the
 * resident set for nothing. Advice only: a failure changes nothing. */
/* Lets the page cache of fd's file go (after writing back what is dirty),
 * so that the pages queries fault in later are read one by one as small
 * pages: a file written whole by write() (or read ahead in bulk) sits in the
 * page cache as large folios, and Linux maps a large folio whole on a
 * touch, 2 MB of resident set for one read. Only pages no process maps are
 * let go; advice only. */
static inline void dataset_release_page_cache(int fd)
{
#ifdef POSIX_FADV_DONTNEED
    (void)fdatasync(fd);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
#else
    (void)fd;
#endif
}

static inline void dataset_advise_random(void *map, size_t size)
{
#ifdef MADV_RANDOM
    madvise(map, size, MADV_RANDOM);
#endif
#ifdef MADV_NOHUGEPAGE
    madvise(map, size, MADV_NOHUGEPAGE);
#endif
    (void)map;
    (void)size;
}
/* An extension's kept data (dataset_extension's file, save and view) for a
 * trusted dataset: its view over VERSION/.<file>, mapped into slot's
 * extension_map, or NULL (absent, stale, not fitting); and writing it. */
void *dataset_cache_load_extension(dataset *ds, const dataset_extension *ext, int slot);
void dataset_cache_save_extension(const dataset *ds, const dataset_extension *ext, const void *data);
/* Fills the arrival fields (event_runs .. arr_grid) from the mapped
 * timetable (dataset_arrivals.c); -1 with err when out of memory. The
 * caller frees them with the other derived arrays. */
int dataset_derive_arrivals(dataset *ds, char *err, size_t errlen);
/* Closes the idle connections of the pools (dataset_pools.c), as the
 * dataset is freed. */
void dataset_close_pools(dataset *ds);
/* The instant of "noon minus 12h" of a service day. */
int64_t dataset_day_base(const dataset *ds, int32_t day);

/* Whether day set `days` (a group's or a trip's) holds `day`. */
static inline bool dataset_days_active(const dataset *ds, uint32_t days, int32_t day)
{
    const tt_meta *m = ds->meta;
    int64_t d = (int64_t)day - m->first_day;
    if (d < 0 || d >= m->ndays) return false;
    return (ds->day_sets[(size_t)days * m->service_words + (size_t)(d / 64)] >> (d % 64)) & 1;
}

#endif
