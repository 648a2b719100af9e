"""The pages for people, over HTTP and in a real headless browser: the landing
page at / (what this is, the dataset version and whether its feed is in
effect, links, example queries that work), the API reference at /docs drawn
by our own script from /openapi.json (every documented operation appears in
the DOM), their assets, and what happens without pages or without a dataset.
Screenshots go to BUILD/pages-*.png and must be real, non-blank PNGs.
"""
import html.parser
import re
import shutil
import urllib.parse

import pytest
import requests

import browser
import schema_check
from conftest import BUILD, ROOT
from http_server import Server, TMP, demo_feed, import_feed

DOC = schema_check.load_openapi()
METHODS = {"get", "put", "post", "patch", "delete", "options", "head"}


@pytest.fixture(scope="module")
def server():
    data = TMP / "pages-data"
    shutil.rmtree(data, ignore_errors=True)
    import_feed(demo_feed(1), data)
    with Server(data) as s:
        yield s


class Links(html.parser.HTMLParser):
    """Collects hrefs and srcs, and elements with data-path/data-method."""

    def __init__(self):
        super().__init__()
        self.links, self.ops, self.params, self.ids = [], set(), {}, {}
        self.body = {}
        self._op = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("href", "src"):
            if a.get(key):
                self.links.append(a[key])
        if tag == "body":
            self.body = a
        if a.get("id"):
            self.ids[a["id"]] = a
        if "data-path" in a:
            self._op = (a["data-path"], a["data-method"])
            self.ops.add(self._op)
        if a.get("class") == "param" and self._op:
            self.params.setdefault(self._op, []).append(a["data-name"])


def parse(text):
    p = Links()
    p.feed(text)
    return p


def without_comments(text):
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


def documented_operations():
    return {(path, m.upper()) for path, item in DOC["paths"].items() for m in item if m in METHODS}


# ------------------------------------------------------------ over HTTP

def test_landing_page_says_what_is_served(server):
    r = requests.get(server.url("/"), timeout=10)
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert r.headers["Cache-Control"] == "max-age=60"
    page = without_comments(r.text)
    assert "{{" not in page and "}}" not in page, "an unfilled placeholder"
    feed = requests.get(server.url("/v1/feed"), timeout=10).json()
    validity = feed["feed_validity"]
    assert feed["feed"]["version"] in page
    assert f"{validity['start']} to {validity['end']}" in page
    assert f'<dd id="feed-days">{validity["days_until_expiry"]}</dd>' in page
    status = "expired" if validity["expired"] else \
        "not yet in effect" if validity["not_yet_valid"] else "in effect"
    assert f">{status}</p>" in page
    assert "GTFS" in page


def test_landing_links_and_examples_all_answer(server):
    page = requests.get(server.url("/"), timeout=10).text
    links = parse(page).links
    for needed in ["docs", "openapi.json", "metrics", "assets/style.css"]:
        assert needed in links, needed
    examples = [link for link in links if link.startswith("v1/")]
    assert len(examples) >= 5
    for link in set(links):
        assert not urllib.parse.urlsplit(link).netloc, f"{link} points to another host"
        r = requests.get(urllib.parse.urljoin(server.url("/"), link), timeout=10)
        assert r.status_code == 200, (link, r.text[:300])
    # the example departures really find departures around the example stop
    stop_link = next(link for link in examples if link.endswith("/departures"))
    body = requests.get(urllib.parse.urljoin(server.url("/"), stop_link), timeout=10).json()
    assert "stop" in body and "departures" in body


def test_docs_page_and_assets(server):
    r = requests.get(server.url("/docs"), timeout=10)
    assert r.status_code == 200 and r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert 'src="assets/docs.js"' in r.text
    js = requests.get(server.url("/assets/docs.js"), timeout=10)
    assert js.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert js.content == (ROOT / "www" / "docs.js").read_bytes()
    css = requests.get(server.url("/assets/style.css"), timeout=10)
    assert css.headers["Content-Type"] == "text/css; charset=utf-8"
    assert css.headers["Cache-Control"] == "max-age=3600"
    head = requests.head(server.url("/assets/style.css"), timeout=10,
                         headers={"Accept-Encoding": "identity"})
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["Content-Length"]) == len(css.content)
    for bad in ["/assets/index.html", "/assets/docs.html", "/assets/nope.js", "/assets/..%2Fx"]:
        r = requests.get(server.url(bad), timeout=10)
        assert r.status_code == 404, bad
        assert r.headers["Content-Type"] == "application/problem+json; charset=utf-8"


def test_pages_fetch_nothing_from_elsewhere():
    for path in (ROOT / "www").iterdir():
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"""(?:src|href)\s*=\s*["']([^"']+)""", text):
            assert not re.match(r"(?i)^(https?:)?//", m.group(1)), f"{path.name}: {m.group(1)}"
        assert not re.search(r"""(?i)fetch\(\s*["'](https?:)?//""", text), path.name
        assert "@import" not in text, path.name


def test_without_a_dataset_the_landing_page_says_so():
    data = TMP / "pages-empty"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    with Server(data, "--wait-for-data") as s:
        r = requests.get(s.url("/"), timeout=10)
        assert r.status_code == 200
        assert "No dataset is loaded yet" in r.text and ">no dataset</p>" in r.text


def test_without_pages_they_answer_404_and_say_where_it_looked(server):
    data = server.args[server.args.index("--data") + 1]
    with Server(data, "--pages", str(TMP / "no-such-pages")) as s:
        s.wait_for_log(r"warning: no web pages found .*no-such-pages")
        for path in ["/", "/docs", "/assets/style.css"]:
            r = requests.get(s.url(path), timeout=10)
            assert r.status_code == 404, path
        assert "no-such-pages" in requests.get(s.url("/"), timeout=10).json()["detail"]
        # the API is unaffected
        assert requests.get(s.url("/v1/feed"), timeout=10).status_code == 200


def test_pages_option_serves_another_directory(server, tmp_path):
    (tmp_path / "index.html").write_text("<p>custom {{dataset_version}}</p>")
    data = server.args[server.args.index("--data") + 1]
    with Server(data, "--pages", str(tmp_path)) as s:
        version = requests.get(s.url("/v1/feed"), timeout=10).json()["feed"]["version"]
        assert requests.get(s.url("/"), timeout=10).text == f"<p>custom {version}</p>"
        assert requests.get(s.url("/docs"), timeout=10).status_code == 404


# ------------------------------------------------------------ in a browser

def test_browser_shows_the_landing_page(server):
    dom = browser.dump_dom(server.url("/"))
    page = parse(dom)
    version = requests.get(server.url("/v1/feed"), timeout=10).json()["feed"]["version"]
    assert version in dom
    assert "feed-status" in page.ids and "examples" in page.ids
    shot = browser.screenshot(server.url("/"), BUILD / "pages-landing.png", 1280, 1000)
    width, height, colours, ink = browser.png_summary(shot)
    assert (width, height) == (1280, 1000)
    assert colours >= 20, f"{shot} has only {colours} colours: blank?"
    assert ink > 0.05, f"{shot} is {1 - ink:.0%} one colour: blank?"
    # the stylesheet was applied: the header band is dark, the page background light
    _, _, bpp, rows = browser.read_png(shot)
    header_px = rows[20][20 * bpp:20 * bpp + 3]
    page_px = rows[height - 5][5 * bpp:5 * bpp + 3]
    assert sum(header_px) < 250 < sum(page_px), (header_px, page_px)


def test_browser_draws_every_operation_of_the_api_reference(server):
    dom = browser.dump_dom(server.url("/docs"))
    page = parse(dom)
    assert page.body.get("data-rendered") == "true", "docs.js did not finish:\n" + dom[:2000]
    assert page.ops == documented_operations()
    # parameters come from the document, $refs resolved
    deps = page.params[("/v1/departures", "GET")]
    assert deps[:6] == ["lat", "lon", "radius", "time", "window", "limit"]
    for name in DOC["components"]["schemas"]:
        assert f"schema-{name}" in page.ids, name
    # every request the browser made stayed on this server
    requested = {line.split(" ")[2] for line in server.log().splitlines()
                 if re.match(r"^\d{4}-\d\d-\d\dT\S+ GET ", line)}
    assert {"/docs", "/assets/docs.js", "/assets/style.css", "/openapi.json"} <= requested
    shot = browser.screenshot(server.url("/docs"), BUILD / "pages-docs.png", 1280, 1600)
    width, height, colours, ink = browser.png_summary(shot)
    assert (width, height) == (1280, 1600) and colours >= 20 and ink > 0.05


def test_browser_reports_a_missing_document():
    # a server without an OpenAPI document: the page says so instead of staying blank
    data = TMP / "pages-no-openapi"
    shutil.rmtree(data, ignore_errors=True)
    import_feed(demo_feed(1), data)
    with Server(data, "--openapi", str(TMP / "no-such-openapi.json")) as s:
        dom = browser.dump_dom(s.url("/docs"))
        assert "Could not draw the reference: openapi.json answered 404" in dom
