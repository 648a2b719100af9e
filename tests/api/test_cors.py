"""CORS (`serve --cors-origin`): browser apps on other origins may call the
API. Checked header by header over HTTP (allowed and refused origins, "*",
preflights whose methods come from the route's Allow list, errors, 304s and
the prebuilt /healthz answer), the option's validation and environment
variable, and end to end in headless Chromium: a page served from another
origin fetches /v1/feed with If-None-Match and Authorization headers, which
forces a preflight, and reads the answer only when its origin is allowed.
"""
import http.server
import os
import shutil
import subprocess
import threading

import pytest
import requests

import browser
from conftest import transitd_bin
from http_server import Server, TMP, demo_feed, free_port, import_feed

APP = "http://app.example"
OTHER = "https://other.example:8443"
ALLOW = "GET, HEAD, OPTIONS"


@pytest.fixture(scope="module")
def data():
    d = TMP / "cors-data"
    shutil.rmtree(d, ignore_errors=True)   # a directory left by an older build may hold an older format
    import_feed(demo_feed(1), d)
    return d


@pytest.fixture(scope="module")
def server(data):
    with Server(data, "--cors-origin", APP, "--cors-origin", OTHER) as s:
        yield s


def vary(r):
    return [v.strip() for v in r.headers.get("Vary", "").split(",") if v.strip()]


def test_allowed_origin_gets_itself_back(server):
    for origin in (APP, OTHER):
        r = requests.get(server.url("/v1/feed"), headers={"Origin": origin}, timeout=10)
        assert r.status_code == 200
        assert r.headers["Access-Control-Allow-Origin"] == origin
        assert "ETag" in r.headers["Access-Control-Expose-Headers"]
        assert sorted(vary(r)) == ["Accept-Encoding", "Origin"]


def test_other_origins_and_plain_requests_get_no_grant(server):
    for headers in ({"Origin": "http://evil.example"}, {"Origin": APP + ":80"},
                    {"Origin": APP.upper()}, {}):
        r = requests.get(server.url("/v1/feed"), headers=headers, timeout=10)
        assert r.status_code == 200
        assert "Access-Control-Allow-Origin" not in r.headers, headers
        assert "Origin" in vary(r), "caches must keep one origin's answer from another"


def test_preflight_lists_the_routes_own_methods(server):
    for path in ["/v1/feed", "/v1/stops/de:11000:900100001", "/healthz", "/"]:
        r = requests.options(server.url(path), timeout=10, headers={
            "Origin": APP, "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization, if-none-match"})
        assert r.status_code == 204, path
        assert r.content == b""
        assert r.headers["Allow"] == ALLOW
        assert r.headers["Access-Control-Allow-Methods"] == r.headers["Allow"]
        assert r.headers["Access-Control-Allow-Origin"] == APP
        allowed = [h.strip() for h in r.headers["Access-Control-Allow-Headers"].split(",")]
        assert {"Authorization", "Content-Type", "If-Match", "If-None-Match"} <= set(allowed)
        assert int(r.headers["Access-Control-Max-Age"]) > 0


def test_refused_preflight_grants_nothing(server):
    r = requests.options(server.url("/v1/feed"), timeout=10, headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "GET"})
    assert r.status_code == 204 and r.headers["Allow"] == ALLOW
    for name in ["Access-Control-Allow-Origin", "Access-Control-Allow-Methods",
                 "Access-Control-Allow-Headers"]:
        assert name not in r.headers
    # an unknown path is a 404 without any method list
    r = requests.options(server.url("/v1/nope"), headers={"Origin": APP}, timeout=10)
    assert r.status_code == 404 and "Access-Control-Allow-Methods" not in r.headers
    assert r.headers["Access-Control-Allow-Origin"] == APP   # the app can read the problem


def test_errors_304_and_health_carry_the_grant(server):
    h = {"Origin": APP}
    bad = requests.get(server.url("/v1/stops/nearby?lat=95&lon=0"), headers=h, timeout=10)
    assert bad.status_code == 400 and bad.headers["Access-Control-Allow-Origin"] == APP
    etag = requests.get(server.url("/v1/routes"), headers=h, timeout=10).headers["ETag"]
    nm = requests.get(server.url("/v1/routes"), headers={**h, "If-None-Match": etag}, timeout=10)
    assert nm.status_code == 304 and nm.headers["Access-Control-Allow-Origin"] == APP
    health = requests.get(server.url("/healthz"), headers=h, timeout=10)
    assert health.json() == {"status": "ok"}
    assert health.headers["Access-Control-Allow-Origin"] == APP
    assert health.headers["Cache-Control"] == "no-store"
    # and the prebuilt /healthz answer still serves requests without an Origin
    assert requests.get(server.url("/healthz"), timeout=10).json() == {"status": "ok"}


def test_star_allows_every_origin(data):
    with Server(data, "--cors-origin", "*") as s:
        for headers in ({"Origin": "http://anything.example"}, {}):
            r = requests.get(s.url("/v1/agencies"), headers=headers, timeout=10)
            assert r.headers["Access-Control-Allow-Origin"] == "*"
            assert "Origin" not in vary(r)
        pre = requests.options(s.url("/v1/agencies"), timeout=10, headers={
            "Origin": "http://x.example", "Access-Control-Request-Method": "GET"})
        assert pre.headers["Access-Control-Allow-Methods"] == ALLOW


def test_without_the_option_there_is_no_cors(data):
    with Server(data) as s:
        r = requests.get(s.url("/v1/feed"), headers={"Origin": APP}, timeout=10)
        assert "Access-Control-Allow-Origin" not in r.headers
        assert r.headers["Vary"] == "Accept-Encoding"
        pre = requests.options(s.url("/v1/feed"), headers={
            "Origin": APP, "Access-Control-Request-Method": "GET"}, timeout=10)
        assert pre.status_code == 204 and "Access-Control-Allow-Methods" not in pre.headers


@pytest.mark.parametrize("args,message", [
    (["--cors-origin", "http://app.example/"], "no path"),
    (["--cors-origin", "ftp://app.example"], "http(s)://host[:port]"),
    (["--cors-origin", "app.example"], "http(s)://host[:port]"),
    (["--cors-origin", "*", "--cors-origin", APP], "cannot be combined"),
    (["--cors-origin", APP, "--cors-origin", "*"], "cannot be combined"),
    (["--cors-origin"], "needs a value"),
])
def test_bad_origins_are_usage_errors(args, message):
    p = subprocess.run([transitd_bin(), "serve", *args], capture_output=True, text=True,
                       timeout=10)
    assert p.returncode == 2
    assert message in p.stderr and "usage: transitd serve" in p.stderr


def test_environment_list_and_its_override(data):
    env = {"TRANSITD_CORS_ORIGIN": f"{APP}, {OTHER}"}
    with Server(data, env=env) as s:
        for origin in (APP, OTHER):
            r = requests.get(s.url("/healthz"), headers={"Origin": origin}, timeout=10)
            assert r.headers["Access-Control-Allow-Origin"] == origin
    with Server(data, "--cors-origin", "http://cli.example", env=env) as s:
        r = requests.get(s.url("/healthz"), headers={"Origin": APP}, timeout=10)
        assert "Access-Control-Allow-Origin" not in r.headers
        r = requests.get(s.url("/healthz"), headers={"Origin": "http://cli.example"}, timeout=10)
        assert r.headers["Access-Control-Allow-Origin"] == "http://cli.example"
    p = subprocess.run([transitd_bin(), "serve"], capture_output=True, text=True, timeout=10,
                       env=dict(os.environ, TRANSITD_CORS_ORIGIN="http://ok.example,nope"))
    assert p.returncode == 2 and "'nope'" in p.stderr


# ------------------------------------------------------------ in a browser

APP_PAGE = """<!DOCTYPE html><html><body><p id="out">pending</p><script>
fetch("%s/v1/feed", {headers: {"If-None-Match": "W/\\"nothing\\"",
                               "Authorization": "Bearer test-token"}})
  .then(function (r) { return r.json().then(function (j) {
    document.getElementById("out").textContent =
      "status " + r.status + " version " + j.feed.version + " etag " + (r.headers.get("ETag") ? "yes" : "no");
  }); })
  .catch(function (e) { document.getElementById("out").textContent = "blocked " + e.name; });
</script></body></html>"""


class AppSite:
    """A second origin: a tiny web server holding the app page."""

    def __init__(self, api_base):
        page = (APP_PAGE % api_base).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_browser_app_on_another_origin(data):
    browser.chromium()
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    app = AppSite(api)
    try:
        server = Server(data, "--cors-origin", app.origin)
        server.args[server.args.index("--port") + 1] = str(port)
        with server:
            version = requests.get(server.url("/v1/feed"), timeout=10).json()["feed"]["version"]
            dom = browser.dump_dom(app.origin + "/")
            assert f"status 200 version {version} etag yes" in dom, dom[-600:]
            # the browser asked first (preflight), then fetched
            log = server.log()
            assert "OPTIONS /v1/feed 204" in log and "GET /v1/feed 200" in log, log[-2000:]
        refusing = Server(data, "--cors-origin", "http://elsewhere.example")
        refusing.args[refusing.args.index("--port") + 1] = str(port)
        with refusing:
            dom = browser.dump_dom(app.origin + "/")
            assert "blocked TypeError" in dom, dom[-600:]
            assert "GET /v1/feed" not in refusing.log()   # the preflight failed: no request
    finally:
        app.close()
