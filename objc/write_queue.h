/* write_queue.h — the live store's writes answered on a thread of their own.
 *
 * Why it exists: an alert write commits with synchronous=FULL (every commit
 * fsynced before the 2xx, docs/sqlite-stores.md), which takes from a few
 * hundred microseconds to milliseconds on a shared disk. Run on a
 * libmicrohttpd pool thread, that wait stalls every read the thread would
 * have answered meanwhile: with 1 % writes in the iPhone mix, reads lost
 * about a tenth of their rate (make bench-alerts). So a write's connection
 * is suspended by the pool thread that received it (it goes on answering
 * reads), and this queue's thread answers the write, holding the response
 * in the connection until libmicrohttpd, the connection resumed, asks the
 * access handler again (http_daemon.m queues it then). Writes stay in the
 * order they arrived; one thread runs them, as the alert-write lock did.
 */
#ifndef TD_WRITE_QUEUE_H
#define TD_WRITE_QUEUE_H

#include <stdbool.h>

#include <microhttpd.h>

typedef struct td_conn td_conn;
typedef struct write_queue write_queue;

/* Answers one queued write: builds its response into conn (td_conn's
 * deferred_* members). Runs on the queue's thread. */
typedef void (*write_queue_answer_fn)(void *ctx, struct MHD_Connection *connection, const char *method,
                                      td_conn *conn);

/* Starts the thread; NULL (err set) when it cannot. */
write_queue *write_queue_start(write_queue_answer_fn answer, void *ctx, char *err, size_t errlen);

/* Called from the access handler: suspends the connection and queues its
 * write; after answer() the queue resumes it. false when out of memory
 * (nothing suspended or queued: the caller answers at once). */
bool write_queue_submit(write_queue *q, struct MHD_Connection *connection, const char *method, td_conn *conn);

/* Answers what is queued and stops the thread; later submits return false
 * (their writes are answered where they arrive). Call before libmicrohttpd
 * stops: each answer resumes its connection. */
void write_queue_stop(write_queue *q);

/* After libmicrohttpd stopped (no access handler can submit any more). */
void write_queue_free(write_queue *q);

#endif
