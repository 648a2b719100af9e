/* timetable_write_internal.h — what the pieces of the timetable.bin writer
 * share. Private to src/store.
 *
 * Why it exists: laying out timetable.bin is three concerns over one model:
 * folding trips into patterns, profiles and run groups (timetable_trips.c),
 * the per-stop indexes and the calendar and time sections
 * (timetable_index.c), and putting the sections in order into the file
 * (timetable_write.c). tt_out is what they fill, section by section.
 */
#ifndef TRANSIT_TIMETABLE_WRITE_INTERNAL_H
#define TRANSIT_TIMETABLE_WRITE_INTERNAL_H

#include "import/tt_builder.h"

/* Everything the layout produces, section by section. */
typedef struct tt_out {
    tt_meta meta;
    tt_stop *stops;
    uint32_t *stop_by_id, *children, *stop_routes, *grid_cells, *grid_stops;
    size_t nchildren, nstop_routes, ngrid_cells, ngrid_stops;
    tt_route *routes;
    uint32_t *route_by_id;
    uint32_t *trip_by_id;         /* (the trips are made from the builder's as they are written) */
    uint32_t *service_days;      /* per service: its day set (not written; trips hold it) */
    uint64_t *day_sets;          /* meta.ndaysets * meta.service_words */
    TB_VEC(tt_pattern) patterns;
    TB_VEC(tt_pattern_stop) pattern_stops;
    TB_VEC(uint32_t) profiles;
    TB_VEC(tt_group) groups;
    TB_VEC(tt_run) runs;
    tt_visit *visits;
    size_t nvisits;
    int64_t *daybase;
    size_t ndaybase;
    TB_VEC(tt_tz_transition) tz;
} tt_out;

/* One run before grouping: a trip's departure from its first stop (a
 * frequency-based trip has one per headway), with what groups and orders it. */
typedef struct run_tmp {
    uint32_t pattern, days, start, trip, trip_rank, dep_profile, route_rank, chain;
} run_tmp;

/* Sets "out of memory while building the timetable" in b->err; returns -1. */
int tt_fail_oom(tt_builder *b);

/* timetable_trips.c (after tt_build_services, whose day sets the runs are
 * grouped by). Sorts and checks each trip's stop times, interpolates
 * the untimed ones, and folds the trips into o's patterns and time profiles;
 * marks each usable trip valid and returns its runs (malloc'ed) in
 * *runs_out. Sets o->meta.max_secs and stop_times. 0 or -1 (b->err). */
int tt_build_trips(tt_builder *b, tt_out *o, const uint32_t *trip_rank, const uint32_t *route_rank,
                   run_tmp **runs_out, size_t *nruns_out);
/* Sorts the runs and chains them into o's groups, each group's departures
 * in order at every stop; fills o->runs and o->groups. 0 or -1. */
int tt_build_groups(tt_builder *b, tt_out *o, run_tmp *runs, size_t nruns);

/* timetable_index.c: the sections derived from stops, patterns and
 * calendars, each 0 or -1 (b->err). Per stop: its visits (group and
 * position, where it can be boarded), the routes serving it, its children
 * in id order, the spatial grid. tt_build_services, first of all: the
 * services' shared day sets (traffic_days.c). tt_build_time: the day bases
 * and UTC offset transitions (needing first_day and max_secs). */
int tt_build_visits(tt_builder *b, tt_out *o);
int tt_build_stop_routes(tt_builder *b, tt_out *o);
int tt_build_children(tt_builder *b, tt_out *o);
int tt_build_grid(tt_builder *b, tt_out *o);
int tt_build_services(tt_builder *b, tt_out *o);
int tt_build_time(tt_builder *b, tt_out *o);

#endif
