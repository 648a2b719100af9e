/* rt_feed_namespace.h — a GTFS-Realtime feed's ids read in one feed's
 * namespace of a merged dataset.
 *
 * Why it exists: `transitd import a.zip b.zip` serves b's colliding ids as
 * "b:<id>" (feed_merge.h), but b's realtime source still sends "<id>". A
 * source given `--gtfs-rt-feed b` has each trip, route, stop and agency id
 * of its trip updates and alerts' informed entities rewritten to "b:<id>"
 * where the dataset has that id, and kept as sent otherwise (the merge kept
 * it: it did not collide).
 */
#ifndef TRANSIT_RT_FEED_NAMESPACE_H
#define TRANSIT_RT_FEED_NAMESPACE_H

#include <stdbool.h>

#include "transit/rt_feed.h"

typedef enum rt_id_kind { RT_ID_TRIP, RT_ID_ROUTE, RT_ID_STOP, RT_ID_AGENCY } rt_id_kind;

/* Whether the served dataset has `id` of `kind`. */
typedef bool (*rt_id_exists_fn)(void *ctx, rt_id_kind kind, const char *id);

/* Rewrites the feed's ids for feed `feed_name` (see above). Returns how many
 * ids were rewritten, or -1 when out of memory (the feed is then partly
 * rewritten: drop it). */
long rt_feed_namespace(rt_feed *feed, const char *feed_name, rt_id_exists_fn exists, void *ctx);

#endif
