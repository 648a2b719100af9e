/* tt_limits.h — the counts timetable.bin can hold, checked before they are
 * narrowed.
 *
 * Why it exists: the builder counts rows in size_t but the format stores
 * indices and counts as uint32_t, with UINT32_MAX (TT_NONE) meaning "none".
 * A feed with more rows than that would wrap silently into wrong indices;
 * every count is checked here first, and the import fails with a message
 * naming the file and the count instead.
 */
#ifndef TRANSIT_TT_LIMITS_H
#define TRANSIT_TT_LIMITS_H

#include <stddef.h>
#include <stdint.h>

/* The largest count (and so index + 1) a uint32_t field may hold: TT_NONE
 * is reserved. */
#define TT_MAX_COUNT ((size_t)UINT32_MAX - 1)

/* 0 when n <= max; else -1 with "<where>: <n> <what> exceed the timetable
 * format's limit of <max>" in err. `max` is TT_MAX_COUNT outside tests. */
int tt_check_count(size_t n, size_t max, const char *where, const char *what, char *err,
                   size_t errlen);

#endif
