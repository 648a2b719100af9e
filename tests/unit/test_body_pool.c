/* test_body_pool.c — response body buffers circulate between a JSON writer
 * and the pool without a copy, the pool keeps only what its limits allow,
 * and buffers given back from many threads at once are neither lost nor
 * shared. */
#include "test_support.h"

#include <pthread.h>
#include "transit/body_pool.h"
#include "transit/json_writer.h"

static void test_writer_hands_its_buffer_over(void **state)
{
    (void)state;
    body_pool *pool = body_pool_new(4, 1 << 20);
    assert_non_null(pool);
    json_writer w;
    json_init(&w);
    json_str(&w, "first body");
    const char *written = w.buf;

    body_buffer *b = body_pool_take(pool);
    assert_non_null(b);
    assert_null(b->buf);   /* a fresh pool has nothing idle */
    json_swap_buffer(&w, &b->buf, &b->cap);
    assert_ptr_equal(b->buf, written);   /* the very bytes, not a copy */
    assert_string_equal(b->buf, "\"first body\"");
    assert_true(b->cap >= 13);
    assert_int_equal(w.len, 0);
    assert_null(w.buf);   /* it took the empty buffer it was given */

    json_str(&w, "second");   /* the writer grows a buffer of its own again */
    assert_string_equal(w.buf, "\"second\"");
    assert_ptr_not_equal(w.buf, b->buf);

    body_pool_give(b);
    assert_int_equal(body_pool_idle(pool), 1);
    body_buffer *again = body_pool_take(pool);
    assert_ptr_equal(again, b);                 /* recycled, buffer and all */
    assert_ptr_equal(again->buf, written);
    assert_int_equal(body_pool_idle(pool), 0);

    /* the writer's next body goes out in the recycled buffer, and the
     * writer continues on the old one: the two swap, nothing is allocated */
    char *second = w.buf;
    json_swap_buffer(&w, &again->buf, &again->cap);
    assert_ptr_equal(again->buf, second);
    assert_ptr_equal(w.buf, written);
    assert_int_equal(w.len, 0);
    assert_string_equal(w.buf, "");
    body_pool_give(again);
    json_free(&w);
    body_pool_free(pool);
}

static void test_limits_on_what_is_kept(void **state)
{
    (void)state;
    body_pool *pool = body_pool_new(2, 1000);
    body_buffer *b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = body_pool_take(pool);
        b[i]->cap = i == 0 ? 5000 : 100;   /* b[0] is over the size limit */
        b[i]->buf = malloc(b[i]->cap);
    }
    body_pool_give(b[0]);
    assert_int_equal(body_pool_idle(pool), 1);   /* kept, without its big buffer */
    body_buffer *t = body_pool_take(pool);
    assert_ptr_equal(t, b[0]);
    assert_null(t->buf);
    assert_int_equal(t->cap, 0);
    body_pool_give(t);
    for (int i = 1; i < 4; i++)
        body_pool_give(b[i]);
    assert_int_equal(body_pool_idle(pool), 2);   /* at most max_idle; the rest freed */
    body_pool_free(pool);   /* LeakSanitizer checks the idle ones are freed */
}

#define GIVERS 4
#define ROUNDS 5000

static void *take_fill_give(void *arg)
{
    body_pool *pool = arg;
    for (int i = 0; i < ROUNDS; i++) {
        body_buffer *b = body_pool_take(pool);
        if (!b->buf) {
            b->buf = malloc(64);
            b->cap = 64;
        }
        /* if two threads held the same buffer, one would see the other's mark */
        snprintf(b->buf, b->cap, "%p-%d", (void *)&i, i);
        char expect[64];
        snprintf(expect, sizeof expect, "%p-%d", (void *)&i, i);
        if (strcmp(b->buf, expect) != 0)
            return (void *)1;
        body_pool_give(b);
    }
    return NULL;
}

static void test_threads_take_and_give_at_once(void **state)
{
    (void)state;
    body_pool *pool = body_pool_new(8, 1 << 20);
    pthread_t t[GIVERS];
    for (int i = 0; i < GIVERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, take_fill_give, pool), 0);
    for (int i = 0; i < GIVERS; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        assert_null(rc);
    }
    assert_true(body_pool_idle(pool) >= 1 && body_pool_idle(pool) <= GIVERS);
    body_pool_free(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_hands_its_buffer_over),
        cmocka_unit_test(test_limits_on_what_is_kept),
        cmocka_unit_test(test_threads_take_and_give_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
