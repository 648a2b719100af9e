/* dataset_internal.h — the opened dataset's typed views of timetable.bin,
 * shared by dataset.c (opening, look-ups) and query.c (the hot path).
 *
 * Why it exists: query.h keeps `dataset` opaque for callers; the two files
 * that implement it need the same struct and a few inline helpers.
 */
#ifndef TRANSIT_DATASET_INTERNAL_H
#define TRANSIT_DATASET_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timetable_format.h"
#include "transit/query.h"

/* Derived when the dataset is opened, not stored in timetable.bin: over the
 * runs of a visit's group, the smallest and largest departure offset from
 * the run's start at the visit's position. They let query.c find a group's
 * first run in a window by searching the runs' starts, which lie side by
 * side, and read the scattered time profiles of only the one or two runs in
 * between. 8 bytes a visit (330 KB for NYC Brooklyn). */
typedef struct visit_bounds {
    int32_t min_off, max_off;
} visit_bounds;

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
    const tt_service *services;
    const uint64_t *service_bits;
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
    visit_bounds *visit_bounds;    /* nvisits, owned */
};

/* The UTC offset at `instant`, and the span [*from, *until) it holds over. */
int32_t dataset_utc_offset_span(const dataset *ds, int64_t instant, int64_t *from, int64_t *until);
int dataset_validate_indices(dataset *ds, char *err, size_t errlen, const char *path);
/* The instant of "noon minus 12h" of a service day. */
int64_t dataset_day_base(const dataset *ds, int32_t day);

static inline bool dataset_service_active(const dataset *ds, uint32_t service, int32_t day)
{
    const tt_meta *m = ds->meta;
    int64_t d = (int64_t)day - m->first_day;
    if (d < 0 || d >= m->ndays) return false;
    return (ds->service_bits[(size_t)service * m->service_words + (size_t)(d / 64)] >> (d % 64)) & 1;
}

#endif
