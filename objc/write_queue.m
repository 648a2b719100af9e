/* write_queue.m — see write_queue.h. A mutex, a condition and a FIFO list:
 * writes are a few a second to a few hundred, never the hot path. */
#include "write_queue.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct write_job {
    struct write_job *next;
    struct MHD_Connection *connection;
    const char *method;          /* libmicrohttpd's, valid while the request lasts */
    td_conn *conn;
} write_job;

struct write_queue {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    write_job *head, *tail;
    bool stopping;
    bool joined;                 /* stop has run */
    write_queue_answer_fn answer;
    void *ctx;
    pthread_t thread;
};

static void *run(void *arg)
{
    write_queue *q = arg;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (!q->head && !q->stopping)
            pthread_cond_wait(&q->wake, &q->lock);
        write_job *job = q->head;
        if (!job)
            break;   /* stopping, and nothing left */
        q->head = job->next;
        if (!q->head)
            q->tail = NULL;
        pthread_mutex_unlock(&q->lock);
        q->answer(q->ctx, job->connection, job->method, job->conn);
        MHD_resume_connection(job->connection);
        free(job);
        pthread_mutex_lock(&q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

write_queue *write_queue_start(write_queue_answer_fn answer, void *ctx, char *err, size_t errlen)
{
    write_queue *q = calloc(1, sizeof *q);
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    q->answer = answer;
    q->ctx = ctx;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->wake, NULL);
    if (pthread_create(&q->thread, NULL, run, q) != 0) {
        snprintf(err, errlen, "cannot start the write thread");
        pthread_cond_destroy(&q->wake);
        pthread_mutex_destroy(&q->lock);
        free(q);
        return NULL;
    }
    return q;
}

bool write_queue_submit(write_queue *q, struct MHD_Connection *connection, const char *method, td_conn *conn)
{
    write_job *job = malloc(sizeof *job);
    if (!job)
        return false;
    *job = (write_job){NULL, connection, method, conn};
    pthread_mutex_lock(&q->lock);
    if (q->stopping) {
        pthread_mutex_unlock(&q->lock);
        free(job);
        return false;
    }
    /* suspended before the thread can see it, so its resume comes after */
    MHD_suspend_connection(connection);
    if (q->tail)
        q->tail->next = job;
    else
        q->head = job;
    q->tail = job;
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
    return true;
}

void write_queue_stop(write_queue *q)
{
    if (!q || q->joined)
        return;
    pthread_mutex_lock(&q->lock);
    q->stopping = true;
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->thread, NULL);
    q->joined = true;
}

void write_queue_free(write_queue *q)
{
    if (!q)
        return;
    write_queue_stop(q);
    pthread_cond_destroy(&q->wake);
    pthread_mutex_destroy(&q->lock);
    free(q);
}
