/* serving.h — what a server, or `transitd query`, is serving: the active
 * dataset, the alerts shown with it and the realtime overlay on it, and how
 * each is replaced.
 *
 * Why it exists: this state used to live in the HTTP object, so the CLI
 * rebuilt alerts its own way and could not show realtime at all. Here it is
 * plain C that both use: a request takes a consistent snapshot (dataset,
 * alert view resolved against it, overlay) with serving_acquire, and the
 * writers — a reload, an alert write, a realtime poll — swap in new parts.
 * Each part is reference counted, so a swap never waits for a request and a
 * request never sees a part freed under it.
 *
 * Threads: serving_acquire and the other acquire calls are lock-free but for
 * a spinlock held for three pointer loads. Replacing a dataset, publishing
 * alerts and building an overlay are serialised among themselves.
 */
#ifndef TRANSIT_SERVING_H
#define TRANSIT_SERVING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transit/alert_view.h"
#include "transit/datadir.h"
#include "transit/live_store.h"
#include "transit/query.h"
#include "transit/rt_ingest.h"
#include "transit/rt_overlay.h"

typedef struct serving serving;

/* State for serving data directory `data_dir` (kept by pointer), with no
 * dataset yet. NULL when out of memory. */
serving *serving_new(const char *data_dir);
/* Frees it (stop the follower's and the poller's threads first). */
void serving_free(serving *s);
const char *serving_data_dir(const serving *s);

/* ------------------------------------------------------------ snapshots */

/* One request's view: each part retained for the caller, NULL when absent
 * (no dataset yet; no alert view; no realtime source). The alert view and
 * the overlay were resolved against `ds` unless a swap is in progress, which
 * their own dataset pointers tell (rows then show neither). */
typedef struct serving_view {
    dataset *ds;
    alert_view *alerts;
    rt_overlay *realtime;
} serving_view;
void serving_acquire(serving *s, serving_view *out);
void serving_view_release(serving_view *v);
/* One part alone, retained for the caller, or NULL. */
dataset *serving_acquire_dataset(serving *s);
alert_view *serving_acquire_alerts(serving *s);

/* ------------------------------------------------------------ the dataset */

/* Opens the data directory's active version and installs it. Logs either
 * way; on failure keeps what it served and fills err. */
bool serving_reload(serving *s, char *err, size_t errlen);
/* Installs ds (taking over the caller's reference): derives what the API
 * keeps per dataset, resolves the alerts against it, rebuilds the realtime
 * overlay on it. The previous dataset goes when its last request ends. */
void serving_install_dataset(serving *s, dataset *ds);
/* Calls fn(ctx, ok) after every reload (a server counts them for /metrics). */
void serving_on_reload(serving *s, void (*fn)(void *ctx, bool ok), void *ctx);
/* Calls fn(ctx) after every swap of what is served: a dataset installed, an
 * alert view published, a realtime overlay swapped in (pushed boards wake on
 * it). Called on the swapping thread with no lock held; fn must be quick.
 * Set before the threads that swap start. */
void serving_on_change(serving *s, void (*fn)(void *ctx), void *ctx);

/* ------------------------------------------------------------ alerts */

/* Opens DATA/live.sqlite and shows its alerts. False with err when it cannot
 * be opened (alerts then answer 404 and writes 503). */
bool serving_open_live(serving *s, char *err, size_t errlen);
/* The live store, or NULL when it could not be opened. */
live_store *serving_live(serving *s);
/* Shows every alert of the store again (another process wrote). */
bool serving_reload_alerts(serving *s);
/* Alert writers hold this around their store write and their publish, so
 * that views are published in the order of the writes. */
void serving_lock_alert_writes(serving *s);
void serving_unlock_alert_writes(serving *s);
/* Stores alert `a` (checked, and its references checked against the served
 * dataset) under condition c, and shows it; call with the write lock held.
 * The store's answer (live_store_put); err says why it failed. An alert
 * stored but not shown for want of memory shows after the next reload. */
live_result serving_put_alert(serving *s, alert *a, const live_condition *c, int64_t now, char *err,
                              size_t errlen);
/* Deletes alert `id` under condition c and stops showing it; call with the
 * write lock held. The store's answer (live_store_delete). */
live_result serving_delete_alert(serving *s, const char *id, const live_condition *c, char *err,
                                 size_t errlen);

/* A replica's alerts, as its primary shows them: the stored ones (`stored`,
 * not taken over) and the realtime feed's ("rt:" ids; `rt`, taken over, freed
 * with rt_alerts_free), under the primary's generation. From then on the
 * realtime source's own alerts are not shown: a replica's realtime source is
 * its primary's trip updates, and its alerts come from here. False when out
 * of memory (the previous ones stay). */
bool serving_mirror_alerts(serving *s, alert *const *stored, uint32_t n, alert **rt, uint32_t nrt,
                           int64_t generation);

/* ------------------------------------------------------------ realtime */

/* Takes GTFS-Realtime from `source` (a file or an http(s) URL) with fetches
 * timing out after timeout_s. False with err when out of memory. */
bool serving_set_realtime_source(serving *s, const char *source, unsigned timeout_s, char *err,
                                 size_t errlen);
/* Takes GTFS-Realtime from every source of `list` (rt_ingest.h: each with
 * its headers, merged, a source whose last good poll is older than
 * max_age_s seconds left out; 0: never). False with err when out of memory. */
bool serving_set_realtime_sources(serving *s, const rt_source_list *list, unsigned timeout_s,
                                  unsigned max_age_s, char *err, size_t errlen);
/* The realtime sources, or NULL without any. */
rt_ingest *serving_realtime(serving *s);
/* Polls every source once; when the merged feed changed, shows its alerts
 * and builds and swaps in a new overlay. err says which sources failed and
 * why ("" when none did; see rt_ingest_poll). */
rt_poll_result serving_poll_realtime(serving *s, int64_t now, char *err, size_t errlen);
/* Builds the overlay of the source's last good feed on the current dataset
 * and swaps it in (done by polls and dataset swaps). */
void serving_rebuild_realtime(serving *s);

/* ------------------------------------------------------------ following
 * An import activates a new version by renaming DATA/current; a server
 * follows it: every interval it compares DATA/current's timetable.bin with
 * the file the served dataset maps (device and inode, so a version rebuilt
 * in place counts too) and switches when they differ. A version that fails
 * to open is retried only when `current` changes, on SIGHUP, or after
 * SERVING_FOLLOW_RETRY_SECONDS. After a switch it removes the versions
 * pruning retired while they were served (datadir_collect_retired). */

#define SERVING_FOLLOW_RETRY_SECONDS 30

/* What /readyz reports about the active version. */
typedef struct serving_version_state {
    bool has_active;            /* DATA/current names a version */
    char active[DATADIR_VERSION_LEN + 1];
    bool stale;                 /* the served dataset is not the active version's file */
    bool switching;             /* stale, but following is on and no attempt has failed yet */
    char problem[400];          /* when stale and not switching: why */
} serving_version_state;

typedef struct serving_follower serving_follower;
/* Checks every interval_s seconds (0: on SIGHUP only). */
serving_follower *serving_follower_new(serving *s, unsigned interval_s);
void serving_follower_free(serving_follower *f);
/* How long the caller may sleep before the next check (milliseconds; -1:
 * until a signal). */
int serving_follower_wait_ms(const serving_follower *f);
/* One check, from one thread: on its timer (sighup false), or for SIGHUP,
 * which re-opens the data directory unless the served dataset already is
 * the active version's file. */
void serving_follower_check(serving_follower *f, bool sighup);
/* Thread-safe: compares `served` (may be NULL) with DATA/current now. */
void serving_follower_state(serving_follower *f, const dataset *served, serving_version_state *out);

/* ------------------------------------------------------------ polling
 * Fetching a URL can take seconds and must never hold up requests or the
 * main thread's signals: the poller fetches and decodes on its own thread,
 * and after each good poll swaps in new alerts and a new overlay; a failed
 * poll is logged once per reason and counted, and leaves the last good data
 * in place. */

typedef struct serving_poller serving_poller;
/* Polls the realtime sources at once, then every interval_s seconds. NULL
 * when there is no source or the thread cannot start. */
serving_poller *serving_poller_start(serving *s, unsigned interval_s);
/* Wakes the thread, waits for it (a fetch in progress ends within its
 * timeout) and frees the poller. */
void serving_poller_stop(serving_poller *p);

#endif
