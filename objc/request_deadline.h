/* request_deadline.h — a deadline for receiving a whole request that
 * trickling bytes does not extend.
 *
 * Why it exists: libmicrohttpd's connection timeout restarts with every byte
 * received, so a client sending one header byte per second kept a connection
 * (and one of --max-connections) forever, and a thousand of them locked every
 * other client out. Here every connection is in a registry; a request must be
 * complete (request line, headers and body) within --header-timeout seconds
 * of the connection opening, or, on a kept-alive connection, within
 * --timeout + --header-timeout seconds of the previous response. A sweeper
 * thread looks four times a second and shuts down the socket of a connection
 * past its deadline; libmicrohttpd then sees the end of the stream and
 * closes it as it closes any other (the registry leaves a connection before
 * libmicrohttpd closes its socket, so a socket number is never reused under
 * the sweeper's hands).
 *
 * Per request this costs two relaxed stores (td_deadline_request_complete,
 * td_deadline_await_next); the clock is read by the sweeper only.
 */
#import "TDServer.h"

typedef struct td_deadlines td_deadlines;

/* Starts the sweeper. NULL with err when the thread cannot start. */
td_deadlines *td_deadlines_start(unsigned header_timeout_s, unsigned idle_timeout_s, char *err,
                                 size_t errlen);
/* Stops and joins the sweeper; the registry stays usable (connections
 * closing during the daemon's stop still leave it). */
void td_deadlines_stop_sweeping(td_deadlines *dl);
/* Frees the registry, once libmicrohttpd has closed every connection. */
void td_deadlines_free(td_deadlines *dl);

/* A connection opened (its first request's deadline starts now) and closed. */
void td_deadlines_add(td_deadlines *dl, td_conn *conn, int fd);
void td_deadlines_remove(td_deadlines *dl, td_conn *conn);
/* Connections the sweeper closed so far. */
uint64_t td_deadlines_closed(const td_deadlines *dl);

/* The request has arrived whole: no deadline while it is answered. */
static inline void td_deadline_request_complete(td_conn *conn)
{
    __atomic_store_n(&conn->deadline_us, 0, __ATOMIC_RELAXED);
}

/* The deadline_us value meaning "the sweeper sets the next request's
 * deadline when it next looks": the response is done and the connection is
 * kept alive. */
#define TD_DEADLINE_AWAIT_NEXT 1u

static inline void td_deadline_await_next(td_conn *conn)
{
    __atomic_store_n(&conn->deadline_us, (uint64_t)TD_DEADLINE_AWAIT_NEXT, __ATOMIC_RELAXED);
}
