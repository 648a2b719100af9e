"""`transitd serve` over real HTTP: every endpoint against docs/openapi.json,
the problem+json errors, HEAD/OPTIONS/405 with the exact Allow header,
ETag/304, gzip, keep-alive, percent-decoded ids, size limits and /metrics.

The server runs once for the module against the demo feed (bench/gtfs_gen.py
--scale demo, seed 1: Berlin-like ids such as de:11000:900100001, service
2026-10-01..2027-03-31, Europe/Berlin), so nothing here needs ../shared.
"""
import gzip
import http.client
import shutil
import socket
import urllib.parse

import pytest
import requests

import schema_check
from http_server import Server, demo_feed, import_feed, TMP

DOC = schema_check.load_openapi()
STOP = "de:11000:900100001"            # a station with two platforms
PLATFORM = "de:11000:900100001::1"
ROUTE = "10000_1"
TRIP = "1000001"
WHEN = "2026-11-23T08:00"              # a Monday inside the service period
LAT, LON = "52.5271", "13.2343"
ALLOW = "GET, HEAD, OPTIONS"

# (request path, OpenAPI path) for every dataset endpoint
ENDPOINTS = [
    (f"/v1/stops/nearby?lat={LAT}&lon={LON}&radius=800&limit=5", "/v1/stops/nearby"),
    ("/v1/stops?q=grab&limit=3", "/v1/stops"),
    (f"/v1/stops/{STOP}", "/v1/stops/{id}"),
    (f"/v1/stops/{STOP}/departures?time={WHEN}&limit=5", "/v1/stops/{id}/departures"),
    (f"/v1/stops/{STOP}/arrivals?time={WHEN}&limit=5", "/v1/stops/{id}/arrivals"),
    (f"/v1/departures?lat={LAT}&lon={LON}&time={WHEN}&limit=5", "/v1/departures"),
    ("/v1/routes", "/v1/routes"),
    (f"/v1/routes/{ROUTE}", "/v1/routes/{id}"),
    (f"/v1/trips/{TRIP}", "/v1/trips/{id}"),
    ("/v1/shapes/shp_10000_1_0", "/v1/shapes/{id}"),
    ("/v1/agencies", "/v1/agencies"),
    ("/v1/feed", "/v1/feed"),
    ("/v1/alerts", "/v1/alerts"),
    ("/v1/vehicles?bbox=13,52,14,53", "/v1/vehicles"),
]
# paths whose every verb is tested in test_alerts_api.py (they need an alert to exist)
ALERT_ITEM = ["/v1/alerts/{id}"]
OPERATIONAL = ["/healthz", "/readyz", "/metrics", "/openapi.json"]
PAGES = ["/", "/docs", "/assets/{id}"]   # tested in test_pages.py
REALTIME = ["/gtfs-rt/trip-updates.pb", "/gtfs-rt/alerts.pb",   # tested in test_realtime.py
            "/gtfs-rt/vehicle-positions.pb"]                   # and test_realtime_vehicles.py
SNAPSHOT = ["/v1/dataset", "/v1/dataset/{version}/{file}"]       # tested in test_replica.py


@pytest.fixture(scope="module")
def server():
    data = TMP / "http-endpoints-data"
    shutil.rmtree(data, ignore_errors=True)
    import_feed(demo_feed(1), data)
    with Server(data) as s:
        yield s


def get(server, path, **kw):
    return requests.get(server.url(path), timeout=10, **kw)


def assert_problem(r, status):
    assert r.status_code == status, r.text
    assert r.headers["Content-Type"] == "application/problem+json; charset=utf-8"
    body = r.json()
    errors = schema_check.validate(body, schema_check.schema("Problem"), DOC)
    assert not errors, errors
    assert body["status"] == status
    assert body["detail"]
    return body


@pytest.mark.parametrize("path,api_path", ENDPOINTS, ids=[e[1] for e in ENDPOINTS])
def test_endpoint_matches_openapi(server, path, api_path):
    r = get(server, path)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    # boards also answer text/event-stream to those who ask: they vary on Accept
    assert r.headers["Vary"] == ("Accept-Encoding, Accept" if api_path.endswith("departures")
                                 else "Accept-Encoding")
    assert r.headers["ETag"].startswith('W/"')
    errors = schema_check.validate(r.json(), schema_check.response_schema(DOC, api_path), DOC)
    assert not errors, "\n".join(errors[:20])


def test_endpoint_values(server):
    assert get(server, f"/v1/stops/{STOP}").json()["stop"]["children"] == [
        PLATFORM, "de:11000:900100001::2"]
    deps = get(server, f"/v1/stops/{STOP}/departures?time={WHEN}&limit=2").json()["departures"]
    assert [d["departure"] for d in deps] == ["2026-11-23T08:00:00+01:00"] * 2 or \
        all(d["departure"] >= "2026-11-23T08:00:00+01:00" for d in deps)
    assert get(server, f"/v1/routes/{ROUTE}").json()["route"]["short_name"] == "U1"
    assert get(server, f"/v1/trips/{TRIP}").json()["trip"]["stop_times"][0]["stop_id"] == PLATFORM


@pytest.mark.parametrize("path", OPERATIONAL)
def test_operational_endpoints(server, path):
    r = get(server, path)
    assert r.status_code == 200
    assert r.headers["Cache-Control"] == "no-store" or path == "/openapi.json"
    if path == "/metrics":
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    else:
        assert r.headers["Content-Type"] == "application/json; charset=utf-8"
        assert isinstance(r.json(), dict)


def test_health_ready_and_openapi_bodies(server):
    assert get(server, "/healthz").json() == {"status": "ok"}
    feed = get(server, "/v1/feed").json()
    ready = get(server, "/readyz").json()
    version = feed["feed"]["version"]
    assert {k: ready[k] for k in ("status", "dataset_version", "active_version", "stale")} == \
        {"status": "ready", "dataset_version": version, "active_version": version, "stale": False}
    assert ready["feed_validity"] == feed["feed_validity"]
    assert get(server, "/openapi.json").json() == DOC


def test_every_documented_path_is_served(server):
    served = ({api for _, api in ENDPOINTS} | set(OPERATIONAL) | set(ALERT_ITEM) | set(PAGES)
              | set(REALTIME) | set(SNAPSHOT))
    assert served == set(DOC["paths"])


def test_ids_are_percent_decoded(server):
    encoded = urllib.parse.quote(STOP, safe="")
    assert "%3A" in encoded
    r = get(server, f"/v1/stops/{encoded}")
    assert r.status_code == 200 and r.json()["stop"]["id"] == STOP
    body = assert_problem(get(server, "/v1/stops/no%20such%20st%C3%B6p%2Fx"), 404)
    assert "no such stöp/x" in body["detail"]
    assert body["instance"] == "/v1/stops/no such stöp/x"


def test_bad_and_unknown_parameters_are_400(server):
    body = assert_problem(get(server, "/v1/stops/nearby?lat=95&lon=1"), 400)
    assert "lat" in body["detail"]
    body = assert_problem(get(server, f"/v1/stops/nearby?lat={LAT}&lon={LON}&bogus=1"), 400)
    assert "bogus" in body["detail"]
    raw = raw_exchange(server.port, b"GET /v1/stops/%zz HTTP/1.1\r\nHost: x\r\n"
                                    b"Connection: close\r\n\r\n")
    assert status_of(raw) == 400 and b"malformed percent-encoding" in raw
    many = "&".join(f"p{i}=1" for i in range(40))
    assert "more than" in assert_problem(get(server, f"/v1/feed?{many}"), 400)["detail"]


def test_unknown_path_and_id_are_404(server):
    for path in ["/nope", "/v1", "/v1/stops/", "/v1/stops/a/b/c/d", "/v2/feed"]:
        assert_problem(get(server, path), 404)
    body = assert_problem(get(server, "/v1/trips/no-such-trip"), 404)
    assert "no-such-trip" in body["detail"]


@pytest.mark.parametrize("path", [p for p, _ in ENDPOINTS[:3]] + OPERATIONAL)
def test_head_is_get_without_body(server, path):
    g = get(server, path, headers={"Accept-Encoding": "identity"})
    h = requests.head(server.url(path), timeout=10, headers={"Accept-Encoding": "identity"})
    assert h.status_code == 200
    assert h.content == b""
    for name in ["Content-Type", "Content-Length", "ETag", "Cache-Control"]:
        assert h.headers.get(name) == g.headers.get(name), name


@pytest.mark.parametrize("path", ["/v1/feed", f"/v1/stops/{STOP}", "/healthz", "/metrics"])
def test_options_lists_allowed_verbs(server, path):
    r = requests.options(server.url(path), timeout=10)
    assert r.status_code == 204
    assert r.headers["Allow"] == ALLOW
    assert r.content == b""


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "TRACE", "BREW"])
def test_other_verbs_are_405_with_allow(server, method):
    r = requests.request(method, server.url("/v1/routes"), data=b"{}" if method != "TRACE" else None,
                         timeout=10)
    body = assert_problem(r, 405)
    assert r.headers["Allow"] == ALLOW
    assert method in body["detail"]


def test_etag_and_304(server):
    path = f"/v1/stops/{STOP}"
    r = get(server, path)
    etag = r.headers["ETag"]
    assert r.headers["Cache-Control"] == "max-age=86400"
    version = get(server, "/v1/feed").json()["feed"]["version"]
    assert etag.startswith(f'W/"{version}-')
    # same request, parameters in another order → same ETag
    a = get(server, f"/v1/stops/nearby?lat={LAT}&lon={LON}").headers["ETag"]
    b = get(server, f"/v1/stops/nearby?lon={LON}&lat={LAT}").headers["ETag"]
    assert a == b
    assert get(server, f"/v1/stops/nearby?lat={LAT}&lon={LON}&limit=3").headers["ETag"] != a
    for inm in [etag, etag[2:], f'W/"other", {etag}', "*"]:
        nm = get(server, path, headers={"If-None-Match": inm})
        assert nm.status_code == 304, inm
        assert nm.content == b""
        assert nm.headers["ETag"] == etag
        assert nm.headers["Cache-Control"] == "max-age=86400"
    assert get(server, path, headers={"If-None-Match": 'W/"stale-1"'}).status_code == 200


def test_if_none_match_star_checks_the_request_first(server):
    # * matches any current representation, so it answers 304 only where the
    # request would have been a 200 (RFC 9110 §13.2.1): a 400 or 404 stays one
    star = {"If-None-Match": "*"}
    assert_problem(get(server, "/v1/stops?x=1", headers=star), 400)
    assert_problem(get(server, "/v1/stops/nearby?lat=52.5", headers=star), 400)
    assert_problem(get(server, f"/v1/stops/{STOP}/departures?time=2026-02-30T08:00", headers=star), 400)
    assert_problem(get(server, "/gtfs-rt/alerts.pb?format=xml", headers=star), 400)
    assert_problem(get(server, "/v1/stops/no-such-stop", headers=star), 404)
    for path in (f"/v1/stops/{STOP}", "/v1/stops?q=Graben", "/gtfs-rt/alerts.pb?format=json"):
        r = get(server, path, headers={"If-None-Match": 'W/"other" , *'})
        assert r.status_code == 304 and r.content == b"", path
        assert r.headers["ETag"] == get(server, path).headers["ETag"]


def test_coordinates_take_json_numbers(server):
    # clients print small and large numbers with an exponent (Python: 1e-05)
    for lat, lon in (("5.25e1", "1.3e1"), ("52.5", "-1.175494351e-38"), ("5250E-2", "13")):
        r = get(server, f"/v1/stops/nearby?lat={lat}&lon={lon}")
        assert r.status_code == 200, (lat, lon, r.text)
    for lon in ("1e", "1e+", "2e2", "1e99999", "1.e5", "e5"):
        assert_problem(get(server, f"/v1/stops/nearby?lat=52.5&lon={lon}"), 400)


def test_departures_cache_and_clock_etag(server):
    r = get(server, f"/v1/stops/{STOP}/departures?time={WHEN}")
    assert r.headers["Cache-Control"] == "max-age=30"
    nm = get(server, f"/v1/stops/{STOP}/departures?time={WHEN}",
             headers={"If-None-Match": r.headers["ETag"]})
    assert nm.status_code == 304 and nm.headers["Cache-Control"] == "max-age=30"
    # without `time` the answer depends on the clock: the ETag differs from any fixed time
    assert get(server, f"/v1/stops/{STOP}/departures").headers["ETag"] != r.headers["ETag"]


def test_gzip_only_when_accepted_and_large(server):
    path = "/v1/routes"
    plain = get(server, path, headers={"Accept-Encoding": "identity"})
    assert "Content-Encoding" not in plain.headers
    assert len(plain.content) > 1024
    assert plain.headers["Vary"] == "Accept-Encoding"
    # raw bytes, so the check sees the wire encoding, not requests' decoding
    z = requests.get(server.url(path), headers={"Accept-Encoding": "gzip"}, timeout=10,
                     stream=True)
    raw = z.raw.read(decode_content=False)
    assert z.headers["Content-Encoding"] == "gzip"
    assert z.headers["Vary"] == "Accept-Encoding"
    assert int(z.headers["Content-Length"]) == len(raw) < len(plain.content)
    assert gzip.decompress(raw) == plain.content
    assert get(server, path, headers={"Accept-Encoding": "gzip;q=0"}).headers.get(
        "Content-Encoding") is None
    small = get(server, "/v1/feed", headers={"Accept-Encoding": "gzip"})
    assert "Content-Encoding" not in small.headers        # under 1 KB: not worth it
    assert small.headers["Vary"] == "Accept-Encoding"


def test_keep_alive_reuses_one_connection(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    sockets = set()
    for path in ["/healthz", "/v1/feed", "/nope", "/v1/routes", "/metrics"] * 4:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        assert r.status in (200, 404)
        assert (r.getheader("Connection") or "").lower() != "close"
        assert not r.will_close
        sockets.add(id(conn.sock))
    conn.request("POST", "/v1/feed", body=b"x" * 100, headers={"Content-Type": "text/plain"})
    r = conn.getresponse()
    r.read()
    assert r.status == 405 and not r.will_close
    sockets.add(id(conn.sock))
    assert len(sockets) == 1
    conn.close()


def raw_exchange(port, data):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    finally:
        s.close()
    return out


def status_of(raw):
    return int(raw.split(b" ", 2)[1])


def test_uri_too_long_is_414(server):
    r = get(server, "/v1/stops?q=" + "a" * 9000)
    body = assert_problem(r, 414)
    assert "8192" in body["detail"]
    # beyond libmicrohttpd's own buffer it answers 414 itself
    raw = raw_exchange(server.port, b"GET /v1/stops?q=" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status_of(raw) == 414


def test_longest_target_with_headers_is_served(server):
    # the connection's memory (16 KB) holds the longest target served plus
    # several KB of headers; one byte more of target is our 414
    target = b"/v1/stops?q="
    target += b"a" * (8192 - len(target))
    raw = raw_exchange(server.port, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * 6000 +
                       b"\r\nConnection: close\r\n\r\n")
    assert status_of(raw) == 200
    assert raw.split(b"\r\n\r\n", 1)[1].startswith(b'{"stops":[')
    raw = raw_exchange(server.port, b"GET " + target + b"a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status_of(raw) == 414
    assert b"longer than 8192 bytes" in raw


def test_headers_too_large_is_431(server):
    raw = raw_exchange(server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 40000 +
                       b"\r\n\r\n")
    assert status_of(raw) == 431


def test_body_too_large_is_413(server):
    r = requests.post(server.url("/v1/feed"), data=b"x" * (64 * 1024 + 1), timeout=10)
    body = assert_problem(r, 413)
    assert "65536" in body["detail"]
    assert r.headers["Connection"] == "close"

    def chunks():
        for _ in range(3):
            yield b"y" * 40000
    r = requests.post(server.url("/v1/feed"), data=chunks(), timeout=10)   # chunked
    assert_problem(r, 413)
    # at the cap it is read, then refused for the verb
    assert_problem(requests.post(server.url("/v1/feed"), data=b"x" * 65536, timeout=10), 405)


def test_metrics_count_requests(server):
    before = get(server, "/metrics").text
    for _ in range(3):
        get(server, "/v1/agencies")
    get(server, "/no/such/thing")
    text = get(server, "/metrics").text

    def count(t, line_prefix):
        for line in t.splitlines():
            if line.startswith(line_prefix + " "):
                return float(line.split()[-1])
        return 0.0
    key = 'transitd_http_requests_total{route="/v1/agencies",status="200"}'
    assert count(text, key) == count(before, key) + 3
    unmatched = 'transitd_http_requests_total{route="unmatched",status="404"}'
    assert count(text, unmatched) >= count(before, unmatched) + 1
    version = get(server, "/v1/feed").json()["feed"]["version"]
    assert f'transitd_dataset_info{{version="{version}"}} 1' in text
    assert 'transitd_http_request_duration_seconds_bucket{route="/v1/agencies",le="+Inf"}' in text
    assert "# TYPE transitd_http_request_duration_seconds histogram" in text
    assert 'transitd_dataset_reloads_total{result="ok"} 0' in text


def test_access_log_line(server):
    get(server, "/v1/feed?x=log-marker")
    line = server.wait_for_log(r"x=log-marker")
    # TIME METHOD TARGET STATUS BYTES MICROSECONDS
    parts = line.split(" ")
    assert parts[1] == "GET" and parts[2] == "/v1/feed?x=log-marker"
    assert parts[3] == "400" and int(parts[4]) > 0 and int(parts[5]) >= 0
    assert parts[0].endswith("Z") and "T" in parts[0]
