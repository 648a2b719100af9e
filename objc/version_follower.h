/* version_follower.h — `serve` follows the data directory's active version.
 *
 * Why it exists: an import activates a new version by renaming DATA/current;
 * a server that waited for SIGHUP kept mapping the old one, which the next
 * import's pruning then had to leave on disk. The follower runs on the main
 * thread: every --follow-interval seconds it compares DATA/current's
 * timetable.bin with the file the served dataset maps (device and inode, so a
 * version rebuilt in place counts too) and switches when they differ; a
 * version that fails to open is retried only when `current` changes, on
 * SIGHUP, or after FOLLOW_RETRY_SECONDS. After a switch it removes the
 * versions pruning retired while they were served (datadir_collect_retired).
 * /readyz asks it whether the served version is the active one.
 */
#import "TDServer.h"

#include <stdbool.h>
#include "transit/datadir.h"

typedef struct td_follower td_follower;

/* What /readyz reports about the active version. */
typedef struct td_version_state {
    bool has_active;            /* DATA/current names a version */
    char active[DATADIR_VERSION_LEN + 1];
    bool stale;                 /* the served dataset is not the active version's file */
    bool switching;             /* stale, but following is on and no attempt has failed yet */
    char problem[400];          /* when stale and not switching: why */
} td_version_state;

td_follower *td_follower_new(TDServer *server);
void td_follower_free(td_follower *f);
/* How long the main thread may sleep before the next td_follower_check
 * (milliseconds; -1: until a signal). */
int td_follower_wait_ms(const td_follower *f);
/* One check from the main thread: on its timer (sighup false), or for
 * SIGHUP, which re-opens the data directory unless the served dataset
 * already is the active version's file. */
void td_follower_check(td_follower *f, bool sighup);
/* Thread-safe: compares `served` (may be NULL) with DATA/current now. */
void td_follower_state(td_follower *f, const dataset *served, td_version_state *out);
