/* test_strref_map.c — the map whose keys stay in the caller's string table
 * (src/base/strref_map.c): found by their bytes while the table moves,
 * prefixes told apart, values kept across growth. */
#include "test_support.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"
#include "base/strref_map.h"

/* A string table as the importer keeps one: "" at offset 0, each string
 * NUL-terminated, grown by realloc (so it moves). */
typedef struct table {
    char *bytes;
    size_t len, cap;
} table;

static uint32_t table_add(table *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->bytes = realloc(t->bytes, t->cap);
        assert_non_null(t->bytes);
    }
    uint32_t off = (uint32_t)t->len;
    memcpy(t->bytes + off, s, n + 1);
    t->len += n + 1;
    return off;
}

/* Interns s: its slot, added when new. */
static strref_slot *intern(strref_map *m, table *t, const char *s)
{
    size_t n = strlen(s);
    uint32_t h = strmap_hash(s, n);
    strref_slot *slot = strref_map_find(m, t->bytes, s, n, h);
    if (slot) return slot;
    uint32_t off = table_add(t, s);
    slot = strref_map_add(m, off, h, UINT32_MAX);
    assert_non_null(slot);
    return slot;
}

static const strref_slot *find(const strref_map *m, const table *t, const char *s, size_t n)
{
    return strref_map_find(m, t->bytes, s, n, strmap_hash(s, n));
}

static void test_many_keys_across_growth_and_a_moving_table(void **state)
{
    (void)state;
    table t = {0};
    table_add(&t, "");
    strref_map m;
    assert_int_equal(strref_map_init(&m, 4), 0);
    uint32_t first_slots = m.nslots;
    char key[32];
    enum { N = 100000 };
    for (uint32_t i = 0; i < N; i++) {
        snprintf(key, sizeof key, "trip:%u", i);
        strref_slot *s = intern(&m, &t, key);
        assert_int_equal(s->value, UINT32_MAX);
        s->value = i;
    }
    assert_int_equal(m.count, N);
    assert_true(m.nslots > first_slots);
    assert_true(m.count <= m.limit);                      /* never more than 3/4 full */
    assert_true(strref_map_bytes(&m) < (size_t)N * 24);   /* about 20 bytes a key, no copy of it */
    for (uint32_t i = 0; i < N; i++) {
        snprintf(key, sizeof key, "trip:%u", i);
        const strref_slot *s = find(&m, &t, key, strlen(key));
        assert_non_null(s);
        assert_int_equal(s->value, i);
        assert_string_equal(t.bytes + s->off, key);
    }
    /* interning again adds nothing */
    size_t len = t.len;
    assert_int_equal(intern(&m, &t, "trip:77")->value, 77);
    assert_int_equal(t.len, len);
    assert_int_equal(m.count, N);
    snprintf(key, sizeof key, "trip:%u", N);
    assert_null(find(&m, &t, key, strlen(key)));
    strref_map_free(&m);
    free(t.bytes);
}

/* "ab" is not "abc" nor "a", whichever is in the table; a key is its bytes,
 * not a prefix of a longer one. */
static void test_prefixes_are_other_keys(void **state)
{
    (void)state;
    table t = {0};
    table_add(&t, "");
    strref_map m;
    assert_int_equal(strref_map_init(&m, 0), 0);
    intern(&m, &t, "abc")->value = 3;
    assert_null(find(&m, &t, "ab", 2));
    assert_null(find(&m, &t, "abcd", 4));
    assert_null(find(&m, &t, "a", 1));
    intern(&m, &t, "ab")->value = 2;
    intern(&m, &t, "a")->value = 1;
    assert_int_equal(find(&m, &t, "ab", 2)->value, 2);
    assert_int_equal(find(&m, &t, "abc", 3)->value, 3);
    assert_int_equal(find(&m, &t, "a", 1)->value, 1);
    /* the bytes of a longer key, given with a shorter length */
    assert_int_equal(find(&m, &t, "abcdef", 2)->value, 2);
    assert_int_equal(m.count, 3);
    strref_map_free(&m);
    free(t.bytes);
}

/* Keys whose hashes collide still resolve by their bytes. */
static void test_equal_hashes_compare_bytes(void **state)
{
    (void)state;
    table t = {0};
    table_add(&t, "");
    strref_map m;
    assert_int_equal(strref_map_init(&m, 8), 0);
    uint32_t a = table_add(&t, "left"), b = table_add(&t, "right");
    assert_non_null(strref_map_add(&m, a, 42, 1));
    assert_non_null(strref_map_add(&m, b, 42, 2));
    assert_int_equal(strref_map_find(&m, t.bytes, "left", 4, 42)->value, 1);
    assert_int_equal(strref_map_find(&m, t.bytes, "right", 5, 42)->value, 2);
    assert_null(strref_map_find(&m, t.bytes, "other", 5, 42));
    assert_null(strref_map_find(&m, t.bytes, "left", 4, 43));
    strref_map_free(&m);
    free(t.bytes);
}

/* Offset 0 is an empty slot, never a key; a freed map finds nothing and
 * starts again on add. */
static void test_offset_zero_and_a_freed_map(void **state)
{
    (void)state;
    table t = {0};
    table_add(&t, "");
    uint32_t x = table_add(&t, "x");
    strref_map m;
    assert_int_equal(strref_map_init(&m, 1), 0);
    assert_null(strref_map_add(&m, 0, strmap_hash("", 0), 5));
    assert_int_equal(m.count, 0);
    strref_map_free(&m);
    assert_null(find(&m, &t, "x", 1));
    assert_non_null(strref_map_add(&m, x, strmap_hash("x", 1), 9));
    assert_int_equal(find(&m, &t, "x", 1)->value, 9);
    strref_map_free(&m);
    free(t.bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_keys_across_growth_and_a_moving_table),
        cmocka_unit_test(test_prefixes_are_other_keys),
        cmocka_unit_test(test_equal_hashes_compare_bytes),
        cmocka_unit_test(test_offset_zero_and_a_freed_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
