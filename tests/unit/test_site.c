/* test_site.c — the web pages' loader and template (src/http/site.c): every
 * regular file of a directory read once, hidden files and subdirectories
 * left out, bad names refused naming the file; {{name}} filled HTML-escaped
 * with snprintf's contract; URL encoding of ids for links.
 */
#include "test_support.h"

#include <sys/stat.h>

#include "transit/site.h"

static void test_render_fills_and_escapes(void **state)
{
    (void)state;
    const char *tmpl = "<p>{{a}} and {{b}}, {{unknown}} {{a}}{</p>{{";
    site_var vars[] = {{"a", "x<y & \"z\" 'q'"}, {"b", ""}};
    char out[256];
    size_t n = site_render(tmpl, strlen(tmpl), vars, 2, out, sizeof out);
    const char *want = "<p>x&lt;y &amp; &quot;z&quot; &#39;q&#39; and , {{unknown}} "
                       "x&lt;y &amp; &quot;z&quot; &#39;q&#39;{</p>{{";
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
    /* like snprintf: cut and terminated, the full length returned */
    char small[8];
    assert_int_equal(site_render(tmpl, strlen(tmpl), vars, 2, small, sizeof small), n);
    assert_string_equal(small, "<p>x&lt");
    assert_int_equal(site_render(tmpl, strlen(tmpl), vars, 2, NULL, 0), n);
    /* a NULL value renders as nothing; the template's length bounds the scan */
    site_var none[] = {{"a", NULL}};
    assert_int_equal(site_render("{{a}}|{{a}}", 6, none, 1, out, sizeof out), 1);
    assert_string_equal(out, "|");
}

static void test_url_encode(void **state)
{
    (void)state;
    char out[64];
    assert_true(site_url_encode("de:11000:900100001::1", out, sizeof out));
    assert_string_equal(out, "de%3A11000%3A900100001%3A%3A1");
    assert_true(site_url_encode("a b/c?d&e#f~g.h_i-j", out, sizeof out));
    assert_string_equal(out, "a%20b%2Fc%3Fd%26e%23f~g.h_i-j");
    assert_true(site_url_encode("Stra\xc3\x9f" "e", out, sizeof out));
    assert_string_equal(out, "Stra%C3%9Fe");
    char small[6];
    assert_true(site_url_encode("abcde", small, sizeof small));
    assert_false(site_url_encode("abcdef", small, sizeof small));
    assert_true(site_url_encode("ab:", small, sizeof small));    /* "ab%3A" and its NUL */
    assert_string_equal(small, "ab%3A");
    assert_false(site_url_encode("abc:", small, sizeof small));
}

static void test_content_types(void **state)
{
    (void)state;
    assert_string_equal(site_content_type("index.html"), "text/html; charset=utf-8");
    assert_string_equal(site_content_type("style.css"), "text/css; charset=utf-8");
    assert_string_equal(site_content_type("docs.js"), "text/javascript; charset=utf-8");
    assert_string_equal(site_content_type("logo.svg"), "image/svg+xml");
    assert_string_equal(site_content_type("README"), "application/octet-stream");
    assert_string_equal(site_content_type("x.html.bak"), "application/octet-stream");
}

static void test_load_a_directory(void **state)
{
    (void)state;
    char dir[512], sub[600], err[512];
    test_tmpdir(dir, sizeof dir, "site-load");
    test_write_file(dir, "index.html", "<h1>{{x}}</h1>");
    test_write_file(dir, "style.css", "body{}");
    test_write_file(dir, ".hidden", "secret");
    snprintf(sub, sizeof sub, "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    test_write_file(sub, "deep.js", "x");
    site *s = site_load(dir, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(s->nfiles, 2);
    const site_file *f = site_find(s, "index.html");
    assert_non_null(f);
    assert_int_equal(f->len, 14);
    assert_string_equal(f->bytes, "<h1>{{x}}</h1>");
    assert_string_equal(f->content_type, "text/html; charset=utf-8");
    assert_non_null(site_find(s, "style.css"));
    assert_null(site_find(s, ".hidden"));
    assert_null(site_find(s, "deep.js"));
    assert_null(site_find(s, "sub"));
    assert_null(site_find(NULL, "index.html"));
    site_free(s);
    site_free(NULL);

    /* site_locate takes a given directory, and insists on an index.html */
    char looked[1024];
    s = site_locate(dir, looked, sizeof looked);
    assert_non_null(s);
    assert_string_equal(s->dir, dir);
    site_free(s);
    assert_null(site_locate(sub, looked, sizeof looked));
    assert_non_null(strstr(looked, "no index.html"));
    assert_non_null(strstr(looked, sub));
}

static void test_refuses_bad_directories(void **state)
{
    (void)state;
    char dir[512], err[512], looked[1024];
    test_tmpdir(dir, sizeof dir, "site-bad");
    test_write_file(dir, "index.html", "ok");
    test_write_file(dir, "bad name.css", "x");
    assert_null(site_load(dir, err, sizeof err));
    assert_non_null(strstr(err, "bad name.css"));
    assert_non_null(strstr(err, "the name must be"));

    char missing[600];
    snprintf(missing, sizeof missing, "%s/nope", dir);
    assert_null(site_load(missing, err, sizeof err));
    assert_non_null(strstr(err, missing));
    assert_null(site_locate(missing, looked, sizeof looked));
    assert_non_null(strstr(looked, missing));

    test_tmpdir(dir, sizeof dir, "site-many");
    for (int i = 0; i <= SITE_MAX_FILES; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%02d.txt", i);
        test_write_file(dir, name, "x");
    }
    assert_null(site_load(dir, err, sizeof err));
    assert_non_null(strstr(err, "more than 32 files"));

    test_tmpdir(dir, sizeof dir, "site-big");
    char path[600];
    snprintf(path, sizeof path, "%s/big.js", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fseek(f, SITE_MAX_FILE_BYTES, SEEK_SET), 0);
    fputc('x', f);
    fclose(f);
    assert_null(site_load(dir, err, sizeof err));
    assert_non_null(strstr(err, "big.js: larger than"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_fills_and_escapes),
        cmocka_unit_test(test_url_encode),
        cmocka_unit_test(test_content_types),
        cmocka_unit_test(test_load_a_directory),
        cmocka_unit_test(test_refuses_bad_directories),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
