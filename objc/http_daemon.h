/* http_daemon.h — the libmicrohttpd side of the server: socket, daemon
 * flags, the C callbacks, and an orderly stop.
 *
 * Why it exists: everything MHD-specific apart from building responses is
 * here, including the one platform seam (epoll + turbo on Linux, poll
 * elsewhere), so TDServer stays about HTTP semantics.
 */
#import "TDServer.h"

typedef struct td_daemon td_daemon;

/* Raises the soft open-file limit so that config.max_connections sockets
 * fit beside the server's own files; when even the hard limit is too low,
 * lowers max_connections and says so on stderr. Call before
 * td_daemon_start. */
void td_daemon_fit_open_files(td_config *cfg);
/* Binds config.bind:config.port itself (so a taken port gives a precise
 * error), then starts MHD with a thread pool of config.threads. NULL with a
 * message in err on failure. */
td_daemon *td_daemon_start(TDServer *server, char *err, size_t errlen);
/* The port actually bound (useful with --port 0). */
int td_daemon_port(const td_daemon *d);
/* The address actually bound, numeric ("127.0.0.1", "::1"). */
const char *td_daemon_address(const td_daemon *d);
/* Stops accepting, lets requests already received finish (at most
 * max_wait_ms), then stops the threads and frees d. */
void td_daemon_stop(td_daemon *d, unsigned max_wait_ms);
