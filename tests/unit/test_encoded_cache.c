/* test_encoded_cache.c — the compressed-body cache: a hit only for the same key
 * bytes, coding and uncompressed body (length and CRC-32); replacement of what a
 * key held; eviction within the byte bound with second chances for entries found
 * since; entries that outlive their eviction while a caller holds them; the
 * counters /metrics shows; and many threads at once. */
#include "test_support.h"

#include <pthread.h>
#include "transit/encoded_cache.h"

static encoded_key key_of(const char *text, content_coding coding, const char *body)
{
    encoded_key k = {text, strlen(text), coding, strlen(body), encoded_cache_crc32(body, strlen(body))};
    return k;
}

static void test_hit_only_for_the_same_answer(void **state)
{
    (void)state;
    encoded_cache *c = encoded_cache_new(1 << 20);
    assert_non_null(c);
    const char *body = "{\"departures\":[1,2,3]}";
    /* keys are bytes, NULs included */
    static const char key1[] = "/v1/departures\0lat\0001", key2[] = "/v1/departures\0lat\0002";
    encoded_key k = key_of("", CODING_BR, body);
    k.bytes = key1;
    k.len = sizeof key1 - 1;
    const unsigned char *out;
    size_t out_len;
    assert_null(encoded_cache_find(c, &k, &out, &out_len));
    encoded_entry *put = encoded_cache_put(c, &k, "BR-BYTES", 8, &out);
    assert_non_null(put);
    assert_memory_equal(out, "BR-BYTES", 8);
    encoded_entry_release(put);

    encoded_entry *e = encoded_cache_find(c, &k, &out, &out_len);
    assert_non_null(e);
    assert_int_equal(out_len, 8);
    assert_memory_equal(out, "BR-BYTES", 8);
    encoded_entry_release(e);

    encoded_key other = k;
    other.coding = CODING_GZIP;   /* another coding */
    assert_null(encoded_cache_find(c, &other, &out, &out_len));
    other = k;
    other.bytes = key2;   /* another key, same length */
    assert_null(encoded_cache_find(c, &other, &out, &out_len));
    other = k;
    other.len--;   /* a prefix of the key */
    assert_null(encoded_cache_find(c, &other, &out, &out_len));
    other = k;
    other.plain_crc ^= 1;   /* the same key, other content: refused */
    assert_null(encoded_cache_find(c, &other, &out, &out_len));
    other = k;
    other.plain_len++;
    assert_null(encoded_cache_find(c, &other, &out, &out_len));

    encoded_cache_stats st;
    encoded_cache_stats_of(c, &st);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.misses, 6);
    assert_int_equal(st.stores, 1);
    assert_int_equal(st.entries, 1);
    assert_true(st.bytes > 8 + k.len);
    assert_int_equal(st.max_bytes, 1 << 20);
    encoded_cache_free(c);
}

static void test_put_replaces_what_the_key_held(void **state)
{
    (void)state;
    encoded_cache *c = encoded_cache_new(1 << 20);
    encoded_key k = key_of("/v1/stops/42", CODING_GZIP, "old body");
    const unsigned char *out;
    size_t out_len;
    encoded_entry_release(encoded_cache_put(c, &k, "OLD", 3, &out));
    encoded_key fresh = key_of("/v1/stops/42", CODING_GZIP, "new body, longer");
    assert_null(encoded_cache_find(c, &fresh, &out, &out_len));
    encoded_entry_release(encoded_cache_put(c, &fresh, "NEW", 3, &out));
    encoded_entry *e = encoded_cache_find(c, &fresh, &out, &out_len);
    assert_non_null(e);
    assert_memory_equal(out, "NEW", 3);
    encoded_entry_release(e);
    assert_null(encoded_cache_find(c, &k, &out, &out_len));
    encoded_cache_stats st;
    encoded_cache_stats_of(c, &st);
    assert_int_equal(st.entries, 1);
    encoded_cache_free(c);
}

static void test_bounded_in_bytes_with_second_chances(void **state)
{
    (void)state;
    const size_t bound = 256 * 1024;
    encoded_cache *c = encoded_cache_new(bound);
    static unsigned char blob[1500];
    memset(blob, 'z', sizeof blob);
    char key[32];
    const unsigned char *out;
    size_t out_len;
    /* "hot" is found after every store, so the CLOCK hand always spares it */
    encoded_key hot = key_of("hot", CODING_BR, "hot body");
    encoded_entry_release(encoded_cache_put(c, &hot, blob, sizeof blob, &out));
    for (int i = 0; i < 2000; i++) {
        snprintf(key, sizeof key, "key-%d", i);
        encoded_key k = key_of(key, CODING_BR, "body");
        encoded_entry_release(encoded_cache_put(c, &k, blob, sizeof blob, &out));
        encoded_entry *h = encoded_cache_find(c, &hot, &out, &out_len);
        assert_non_null(h);
        encoded_entry_release(h);
        encoded_cache_stats st;
        encoded_cache_stats_of(c, &st);
        assert_true(st.bytes <= bound);
    }
    encoded_cache_stats st;
    encoded_cache_stats_of(c, &st);
    assert_true(st.evictions > 1000);
    assert_true(st.entries < 2001);
    assert_int_equal(st.stores, 2001);
    /* the latest are there, the earliest are gone */
    encoded_key last = key_of("key-1999", CODING_BR, "body");
    encoded_entry *e = encoded_cache_find(c, &last, &out, &out_len);
    assert_non_null(e);
    encoded_entry_release(e);
    encoded_key first = key_of("key-0", CODING_BR, "body");
    assert_null(encoded_cache_find(c, &first, &out, &out_len));
    encoded_cache_free(c);
}

static void test_too_large_or_no_room(void **state)
{
    (void)state;
    encoded_cache *c = encoded_cache_new(64 * 1024);   /* 4 KB a shard: entries up to 512 bytes */
    static unsigned char big[2000];
    encoded_key k = key_of("big", CODING_GZIP, "b");
    const unsigned char *out;
    assert_null(encoded_cache_put(c, &k, big, sizeof big, &out));
    encoded_cache_free(c);
    encoded_cache *none = encoded_cache_new(0);
    assert_non_null(none);
    assert_null(encoded_cache_put(none, &k, "x", 1, &out));
    size_t out_len;
    assert_null(encoded_cache_find(none, &k, &out, &out_len));
    encoded_cache_free(none);
    encoded_cache_free(NULL);
}

static void test_held_entries_outlive_eviction_and_the_cache(void **state)
{
    (void)state;
    encoded_cache *c = encoded_cache_new(1 << 20);
    encoded_key k = key_of("/v1/routes", CODING_BR, "routes");
    const unsigned char *out;
    size_t out_len;
    encoded_entry_release(encoded_cache_put(c, &k, "FIRST", 5, &out));
    encoded_entry *held = encoded_cache_find(c, &k, &out, &out_len);
    assert_non_null(held);
    /* replaced while held: the holder's bytes stay as they were */
    encoded_key k2 = key_of("/v1/routes", CODING_BR, "routes, changed");
    const unsigned char *out2;
    encoded_entry *second = encoded_cache_put(c, &k2, "SECOND", 6, &out2);
    assert_non_null(second);
    assert_memory_equal(out, "FIRST", 5);
    encoded_cache_free(c);   /* freed with entries still held */
    assert_memory_equal(out, "FIRST", 5);
    assert_memory_equal(out2, "SECOND", 6);
    encoded_entry_release(held);
    encoded_entry_release(second);
    encoded_entry_release(NULL);
}

static void test_metrics_text(void **state)
{
    (void)state;
    encoded_cache *c = encoded_cache_new(1 << 20);
    encoded_key k = key_of("m", CODING_BR, "body");
    const unsigned char *out;
    size_t out_len;
    encoded_entry_release(encoded_cache_put(c, &k, "Z", 1, &out));
    encoded_entry_release(encoded_cache_find(c, &k, &out, &out_len));
    encoded_entry_release(encoded_cache_find(c, &k, &out, &out_len));
    char text[4096];
    size_t n = encoded_cache_render_metrics(c, text, sizeof text);
    assert_true(n > 0 && n < sizeof text);
    assert_non_null(strstr(text, "\ntransitd_compressed_cache_hits_total 2\n"));
    assert_non_null(strstr(text, "\ntransitd_compressed_cache_misses_total 0\n"));
    assert_non_null(strstr(text, "\ntransitd_compressed_cache_entries 1\n"));
    assert_non_null(strstr(text, "\ntransitd_compressed_cache_max_bytes 1048576\n"));
    char small[16];
    assert_int_equal(encoded_cache_render_metrics(c, small, sizeof small), n);   /* like snprintf */
    encoded_cache_free(c);
}

/* Threads storing and finding overlapping keys; every hit must hold the bytes
 * stored for that key. */
typedef struct worker {
    encoded_cache *cache;
    int id;
    int bad;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    char key[32], value[32];
    for (int i = 0; i < 20000; i++) {
        int n = (i * 7 + w->id) % 3000;
        snprintf(key, sizeof key, "answer-%d", n);
        snprintf(value, sizeof value, "compressed-%d", n);
        encoded_key k = {key, strlen(key), n % 2 ? CODING_BR : CODING_GZIP, (size_t)n, (uint32_t)n};
        const unsigned char *out;
        size_t out_len;
        encoded_entry *e = encoded_cache_find(w->cache, &k, &out, &out_len);
        if (!e)
            e = encoded_cache_put(w->cache, &k, value, strlen(value), &out);
        else if (out_len != strlen(value) || memcmp(out, value, out_len) != 0)
            w->bad++;
        encoded_entry_release(e);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    encoded_cache *c = encoded_cache_new(512 * 1024);   /* smaller than the keys: evicting too */
    pthread_t t[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){c, i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].bad, 0);
    }
    encoded_cache_stats st;
    encoded_cache_stats_of(c, &st);
    assert_int_equal(st.hits + st.misses, 80000);
    assert_true(st.hits > 0);
    assert_true(st.bytes <= 512 * 1024);
    encoded_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_only_for_the_same_answer),
        cmocka_unit_test(test_put_replaces_what_the_key_held),
        cmocka_unit_test(test_bounded_in_bytes_with_second_chances),
        cmocka_unit_test(test_too_large_or_no_room),
        cmocka_unit_test(test_held_entries_outlive_eviction_and_the_cache),
        cmocka_unit_test(test_metrics_text),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
