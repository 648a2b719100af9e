/* test_metrics.c — the /metrics counters: exact counts from many threads at
 * once, histogram buckets cumulative, the Prometheus text as expected, and
 * the feed-expiry gauge. */
#include "test_support.h"

#include <pthread.h>
#include "transit/metrics.h"

static const char *const labels[] = {"/healthz", "/v1/stops/{id}"};

static void *hammer(void *arg)
{
    metrics *m = arg;
    for (int i = 0; i < 100000; i++)
        metrics_observe(m, i % 2, i % 10 == 0 ? 404 : 200, (uint64_t)(i % 300));
    return NULL;
}

static void test_concurrent_counts(void **state)
{
    (void)state;
    metrics *m = metrics_new(2, labels);
    assert_non_null(m);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hammer, m), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    /* per thread: 50000 on route 0 of which i%10==0 → 10000 are 404 */
    assert_int_equal(metrics_request_count(m, 0, 404), 4 * 10000);
    assert_int_equal(metrics_request_count(m, 0, 200), 4 * 40000);
    assert_int_equal(metrics_request_count(m, 1, 200), 4 * 50000);
    assert_int_equal(metrics_request_count(m, 1, 404), 0);
    metrics_free(m);
}

static void test_render(void **state)
{
    (void)state;
    metrics *m = metrics_new(2, labels);
    metrics_observe(m, 0, 200, 40);        /* le 0.00005 */
    metrics_observe(m, 0, 200, 700);       /* le 0.001 */
    metrics_observe(m, 7, 404, 10);        /* unmatched */
    metrics_observe(m, 1, 42, 10);         /* odd status → 599 */
    metrics_reload(m, true);
    metrics_reload(m, false);
    metrics_reload(m, false);
    char small[16];
    size_t need = metrics_render(m, "abcdef012345", small, sizeof small);
    assert_true(need > sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
    char *text = malloc(need + 1);
    assert_int_equal(metrics_render(m, "abcdef012345", text, need + 1), need);
    assert_non_null(strstr(text, "transitd_http_requests_total{route=\"/healthz\",status=\"200\"} 2\n"));
    assert_non_null(strstr(text, "transitd_http_requests_total{route=\"unmatched\",status=\"404\"} 1\n"));
    assert_non_null(strstr(text, "transitd_http_requests_total{route=\"/v1/stops/{id}\",status=\"599\"} 1\n"));
    assert_non_null(strstr(text, "transitd_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"5e-05\"} 1\n"));
    assert_non_null(strstr(text, "transitd_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.0005\"} 1\n"));
    assert_non_null(strstr(text, "transitd_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.001\"} 2\n"));
    assert_non_null(strstr(text, "transitd_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"+Inf\"} 2\n"));
    assert_non_null(strstr(text, "transitd_http_request_duration_seconds_sum{route=\"/healthz\"} 0.000740\n"));
    assert_non_null(strstr(text, "transitd_http_request_duration_seconds_count{route=\"/healthz\"} 2\n"));
    assert_non_null(strstr(text, "# TYPE transitd_http_request_duration_seconds histogram\n"));
    assert_non_null(strstr(text, "transitd_dataset_info{version=\"abcdef012345\"} 1\n"));
    assert_non_null(strstr(text, "transitd_dataset_reloads_total{result=\"ok\"} 1\n"));
    assert_non_null(strstr(text, "transitd_dataset_reloads_total{result=\"failed\"} 2\n"));
    free(text);
    char buf[8192];
    metrics_render(m, NULL, buf, sizeof buf);
    assert_null(strstr(buf, "transitd_dataset_info{"));
    assert_null(metrics_new(METRICS_MAX_ROUTES + 1, labels));
    metrics_free(m);
}

/* transitd_feed_days_until_expiry: absent until set, absent without a
 * dataset, negative once the feed has expired. */
static void test_feed_days_gauge(void **state)
{
    (void)state;
    metrics *m = metrics_new(2, labels);
    char buf[8192];
    metrics_render(m, "abcdef012345", buf, sizeof buf);
    assert_null(strstr(buf, "transitd_feed_days_until_expiry"));
    metrics_set_feed_days_until_expiry(m, 126);
    metrics_render(m, "abcdef012345", buf, sizeof buf);
    assert_non_null(strstr(buf, "# TYPE transitd_feed_days_until_expiry gauge\n"
                                "transitd_feed_days_until_expiry 126\n"));
    metrics_set_feed_days_until_expiry(m, -3);
    metrics_render(m, "abcdef012345", buf, sizeof buf);
    assert_non_null(strstr(buf, "\ntransitd_feed_days_until_expiry -3\n"));
    metrics_render(m, NULL, buf, sizeof buf);
    assert_null(strstr(buf, "transitd_feed_days_until_expiry"));
    metrics_set_feed_days_until_expiry(m, METRICS_NO_FEED);
    metrics_render(m, "abcdef012345", buf, sizeof buf);
    assert_null(strstr(buf, "transitd_feed_days_until_expiry"));
    metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_counts),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_feed_days_gauge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
