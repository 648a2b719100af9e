/* board_streams.h — pushed boards: departures sent over text/event-stream
 * whenever their rows change.
 *
 * Why it exists: a departures board on a screen polled every few seconds
 * costs a request each time and still shows a change late. A GET of a route
 * whose resource says +pushesBoards, with Accept: text/event-stream, keeps
 * its connection: the first event is the very body the plain GET answers,
 * and a new one follows when the rows change. The rule:
 *  - what is served changed (a realtime overlay swapped in, a dataset
 *    installed, an alert written: serving_on_change), or the minute turned
 *    (the window of a board without `time` moves): one notifier thread
 *    recomputes each distinct board once — streams asking the same thing
 *    (route, id, parameters sorted) share one group — by sending -get: to
 *    the route's resource, as a request would;
 *  - a stream gets an event only when the board's rows (the "departures"
 *    array) differ from the last rows it got: at most one event per change
 *    of what is served, none when a change leaves the rows as they were;
 *  - an event's id is a hash of its rows, so a client reconnecting with
 *    Last-Event-ID of the rows it has gets no resend of them;
 *  - a comment every keep-alive interval, so that proxies keep the
 *    connection and a client that went away is noticed (a write fails);
 *  - a board that stops answering 200 (its stop gone from a new dataset)
 *    gets one `event: problem` with the problem+json, and the stream ends.
 *
 * libmicrohttpd: the body is a callback response of unknown length
 * (chunked). With nothing to send the callback suspends its connection
 * (MHD_ALLOW_SUSPEND_RESUME) and returns 0, so an idle stream costs neither
 * a pool thread nor a wake-up; the notifier resumes the connections it gave
 * an event or a keep-alive. Streams count against --max-connections too.
 */
#import "TDServer.h"

/* Starts the notifier (and hooks it to the server's serving state). At most
 * max_streams streams at once; a keep-alive comment every keepalive_s
 * seconds. NULL with err when the thread cannot start. */
board_streams *board_streams_start(TDServer *server, unsigned max_streams, unsigned keepalive_s, char *err,
                                   size_t errlen);
/* Whether the request asks for text/event-stream (its Accept header). */
bool board_streams_wanted(TDRequest *req);
/* The request was answered 200 by route's resource (its body in req->out):
 * turns it into a stream (req->ownedResponse), or into a 503 problem when
 * max_streams are open or the server is stopping. */
void board_streams_open(board_streams *h, TDRequest *req, td_route *route);
/* Ends every stream (each closes after what it is sending) and waits for
 * them, at most max_wait_ms; stops the notifier. Call before the daemon
 * stops: libmicrohttpd must not be stopped with suspended connections. */
void board_streams_end_all(board_streams *h, unsigned max_wait_ms);
/* Frees the hub, after the daemon stopped (which closes any stream left). */
void board_streams_free(board_streams *h);
/* Prometheus text: streams open, opened, refused, events sent, events
 * superseded before a slow client took them, boards recomputed. Returns the
 * length it needs (writes what fits in cap). */
size_t board_streams_render_metrics(board_streams *h, char *out, size_t cap);
