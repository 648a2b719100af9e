/* rt_stop_pack.h — a trip update's stop_time_updates packed into bytes.
 *
 * Why it exists: a 64 MB TripUpdates feed has 2.3 million
 * stop_time_updates; at full width (rt_stop_update, 56 bytes) they were 122
 * MB, held beside the overlay built from them (issue #26: a first apply
 * peaked at 5x the feed). The poller's decode (rt_feed_decode_packed)
 * keeps each update's as a run of variable-length records, about 18 bytes
 * each here, and whoever reads them unpacks one trip update at a time
 * (rt_trip_update_stops). A record: a byte of flags (has stop_sequence,
 * the relationship, which of stop_id, assigned_stop_id, arrival,
 * departure and occupancy follow), the two ids as the feed's string
 * pointers (8 bytes each, unaligned), stop_sequence as a varint, the
 * occupancy byte, and each event as a byte of flags and its delay,
 * time and uncertainty as zigzag varints (each only when given).
 */
#ifndef LIVE_RT_STOP_PACK_H
#define LIVE_RT_STOP_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "transit/rt_feed.h"

/* Bytes rt_stop_pack writes for these n updates. */
size_t rt_stop_pack_size(const rt_stop_update *stops, uint32_t n);
/* Writes them to out (rt_stop_pack_size bytes). */
void rt_stop_pack(const rt_stop_update *stops, uint32_t n, uint8_t *out);
/* Reads n records back into out (zeroed first), as they were packed. */
void rt_stop_unpack(const uint8_t *in, uint32_t n, rt_stop_update *out);

#endif
