/* realtime_poller.h — the thread that polls `serve --gtfs-rt` every --rt-interval.
 *
 * Why it exists: fetching a URL can take seconds and must never hold up
 * requests or the main thread's signals. The poller fetches and decodes on
 * its own thread (rt_ingest.h), and after each good poll has the server
 * build and swap in a new overlay; a failed poll is logged and counted and
 * leaves the last good data in place.
 */
#import "TDServer.h"

typedef struct td_rt_poller td_rt_poller;

/* Starts polling server->realtime at once, then every interval_s seconds.
 * NULL when the thread cannot start. */
td_rt_poller *td_rt_poller_start(TDServer *server, unsigned interval_s);
/* Wakes the thread, waits for it (a fetch in progress ends within its
 * timeout) and frees the poller. */
void td_rt_poller_stop(td_rt_poller *p);
