/* stop_times_spill.h — the rows of a feed not grouped by trip, sorted by
 * trip in runs on disk when they pass the memory budget, and merged back
 * trip by trip.
 *
 * Why it exists: most feeds list stop_times.txt grouped by trip and are
 * folded trip by trip as they are read (trip_stream.h); the others must see
 * every row of a trip before folding it. Holding all rows costs 24 to 36
 * bytes each (3.7 GB at 154M rows); here, whenever the held rows reach the
 * budget, they are sorted by trip (stably: file order within a trip) and
 * appended as one run to a file next to the timetable being written (in the
 * data directory's staging area, unlinked as soon as it is opened, so it is
 * gone on success, failure or a crash). At the end a k-way merge of the
 * runs hands each trip's rows, in file order, to ts_fold_trip.
 */
#ifndef TRANSIT_STOP_TIMES_SPILL_H
#define TRANSIT_STOP_TIMES_SPILL_H

#include "import/trip_stream.h"

/* What one held row costs: the row, its distance when the feed has the
 * column, and its place in the order a run is sorted in. */
size_t sts_row_bytes(const tt_builder *b);

/* Sorts b->stop_times (and b->dists) by trip and appends them as a run to
 * the spill file (created on the first run, after a free-space check);
 * empties them. 0, or -1 with b->err naming stop_times.txt, the file and
 * the cause. */
int sts_spill_run(tt_builder *b);

/* Whether any run was spilled. */
bool sts_spilled(const tt_builder *b);

/* Spills what is held as the last run, then folds every trip from the
 * merged runs (ts_fold_trip). 0 or -1 (b->err). */
int sts_merge_fold(tt_builder *b, trip_stream *s);

/* Closes the spill file (its space is freed: it was unlinked at once). */
void sts_close(tt_builder *b);

#endif
