"""Content codings over real HTTP (issue #23): gzip and br round trips on every
endpoint, Accept-Encoding negotiation (RFC 9110 §12.5.3: weights, refusals, "*",
identity), Vary: Accept-Encoding, one weak ETag for every coding with 304 for
each, and the compressed-body cache: hits counted in /metrics, never a body made
for other content (another dataset), and the same answers with the cache off.

Runs against the demo feed (bench/gtfs_gen.py --scale demo, seed 1), so it needs
nothing from ../shared. Bodies are read raw (decode_content=False), so the checks
see the bytes on the wire, not what requests decoded.
"""
import gzip
import http.client
import re
import shutil
import time

import brotli
import pytest
import requests

from http_server import Server, demo_feed, import_feed, TMP

STOP = "de:11000:900100001"
WHEN = "2026-11-23T08:00"
LAT, LON = "52.5271", "13.2343"
URLSESSION = "gzip, deflate, br"        # what an iPhone app sends on every request
MIN_BYTES = 1024                         # bodies up to this size are sent as they are

# every GET endpoint; parameters chosen so that most answers exceed MIN_BYTES
PATHS = [
    f"/v1/stops/nearby?lat={LAT}&lon={LON}&radius=2000&limit=50",
    "/v1/stops?q=a&limit=50",
    f"/v1/stops/{STOP}",
    f"/v1/stops/{STOP}/departures?time={WHEN}&limit=50",
    f"/v1/departures?lat={LAT}&lon={LON}&time={WHEN}&limit=50",
    "/v1/routes",
    "/v1/routes/10000_1",
    "/v1/trips/1000001",
    "/v1/agencies",
    "/v1/feed",
    "/v1/alerts",
    "/healthz",
    "/readyz",
    "/metrics",
    "/openapi.json",
    "/",
    "/docs",
    "/gtfs-rt/trip-updates.pb",
    "/gtfs-rt/alerts.pb",
]
# those whose answer on the demo feed is over MIN_BYTES: they must arrive compressed
LARGE = {PATHS[0], PATHS[1], PATHS[3], PATHS[4], "/v1/routes", "/v1/trips/1000001", "/metrics",
         "/openapi.json", "/", "/docs"}
DEPARTURES = PATHS[4]


def vary_for(path):
    """Vary on a plain GET: the coding, and Accept where the same URL also
    answers a pushed board (text/event-stream) to those who ask."""
    boards = path.startswith("/v1/departures?") or re.match(r"/v1/stops/[^/?]+/departures", path)
    return "Accept-Encoding, Accept" if boards else "Accept-Encoding"


@pytest.fixture(scope="module")
def data():
    d = TMP / "http-compression-data"
    shutil.rmtree(d, ignore_errors=True)
    import_feed(demo_feed(1), d)
    return d


@pytest.fixture(scope="module")
def server(data):
    with Server(data) as s:
        yield s


def fetch(server, path, accept_encoding, method="GET", **headers):
    """(response, raw body bytes) with exactly this Accept-Encoding (None: none)."""
    h = {"Accept-Encoding": accept_encoding, **headers}
    r = requests.request(method, server.url(path), headers=h, timeout=10, stream=True)
    return r, r.raw.read(decode_content=False)


def decode(coding, raw):
    return gzip.decompress(raw) if coding == "gzip" else brotli.decompress(raw)


def metric(server, name):
    text = requests.get(server.url("/metrics"), headers={"Accept-Encoding": "identity"},
                        timeout=10).text
    m = re.search(rf"^{name} (\d+)$", text, re.M)
    assert m, f"{name} not in /metrics"
    return int(m.group(1))


@pytest.mark.parametrize("path", PATHS)
def test_gzip_and_br_round_trip(server, path):
    plain, plain_raw = fetch(server, path, "identity")
    assert plain.status_code == 200, plain_raw[:300]
    assert "Content-Encoding" not in plain.headers
    assert plain.headers["Vary"] == vary_for(path)
    if path in LARGE:
        assert len(plain_raw) > MIN_BYTES, "the parameters no longer make a large answer"
    for coding in ("gzip", "br"):
        r, raw = fetch(server, path, coding)
        assert r.status_code == 200
        assert r.headers["Vary"] == vary_for(path)
        assert r.headers["Content-Type"] == plain.headers["Content-Type"]
        if len(plain_raw) <= MIN_BYTES:
            assert "Content-Encoding" not in r.headers
            assert raw == plain_raw
            continue
        assert r.headers["Content-Encoding"] == coding
        assert int(r.headers["Content-Length"]) == len(raw) < len(plain_raw)
        body = decode(coding, raw)
        if path == "/metrics":   # its counters move between two requests
            assert body.startswith(b"# HELP ") and b"transitd_compressed_cache_hits_total" in body
        else:
            assert body == plain_raw


def test_departures_shrink_to_a_small_share(server):
    _, plain = fetch(server, DEPARTURES, "identity")
    for coding in ("gzip", "br"):
        _, raw = fetch(server, DEPARTURES, coding)
        assert len(raw) <= 0.25 * len(plain), (coding, len(raw), len(plain))


@pytest.mark.parametrize("accept,expected", [
    (URLSESSION, "br"),
    ("gzip, deflate, br, zstd", "br"),
    ("gzip", "gzip"),
    ("x-gzip", "gzip"),
    ("BR", "br"),
    ("br;q=0, gzip", "gzip"),
    ("br;q=0.5, gzip;q=0.8", "gzip"),
    ("gzip;q=0.5, br;q=0.8", "br"),
    ("*", "br"),
    ("*, br;q=0", "gzip"),
    ("identity", None),
    ("gzip;q=0", None),
    ("br;q=0, gzip;q=0", None),
    ("*;q=0", None),
    ("identity;q=1, gzip;q=0.5", None),
    ("deflate", None),
    ("", None),
    ("gzip;q=2", None),          # a malformed weight: the element is ignored
    (None, None),                # no Accept-Encoding at all
])
def test_negotiation(server, accept, expected):
    r, raw = fetch(server, DEPARTURES, accept)
    assert r.status_code == 200
    assert r.headers.get("Content-Encoding") == expected
    assert r.headers["Vary"] == vary_for(DEPARTURES)
    _, plain = fetch(server, DEPARTURES, "identity")
    assert (decode(expected, raw) if expected else raw) == plain


def test_no_header_at_all_is_identity(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.putrequest("GET", DEPARTURES, skip_accept_encoding=True)
    conn.endheaders()
    r = conn.getresponse()
    body = r.read()
    conn.close()
    assert r.status == 200 and r.getheader("Content-Encoding") is None
    assert body.startswith(b"{")


def test_one_weak_etag_for_every_coding_and_304_for_each(server):
    tags = {}
    for coding in ("identity", "gzip", "br"):
        r, _ = fetch(server, DEPARTURES, coding)
        tags[coding] = r.headers["ETag"]
    # weak (W/): the codings of one JSON text are semantically equivalent (RFC 9110 §8.8.1)
    assert tags["identity"].startswith('W/"')
    assert tags["identity"] == tags["gzip"] == tags["br"]
    for coding in ("identity", "gzip", "br"):
        r, raw = fetch(server, DEPARTURES, coding, **{"If-None-Match": tags[coding]})
        assert r.status_code == 304 and raw == b""
        assert r.headers["ETag"] == tags[coding]
        assert r.headers["Vary"] == vary_for(DEPARTURES)
        assert "Content-Encoding" not in r.headers
    # a tag of another answer does not match, whatever the coding
    other, _ = fetch(server, "/v1/routes", "br")
    r, raw = fetch(server, DEPARTURES, "br", **{"If-None-Match": other.headers["ETag"]})
    assert r.status_code == 200 and r.headers["Content-Encoding"] == "br" and raw


def test_head_has_the_coding_of_get(server):
    get, raw = fetch(server, "/v1/routes", "br")
    head, head_raw = fetch(server, "/v1/routes", "br", method="HEAD")
    assert head.status_code == 200 and head_raw == b""
    assert head.headers["Content-Encoding"] == "br"
    assert head.headers["Content-Length"] == get.headers["Content-Length"] == str(len(raw))


def test_repeated_requests_hit_the_cache(server):
    path = f"/v1/stops/{STOP}/departures?time={WHEN}&limit=40"   # asked by no other test
    hits = metric(server, "transitd_compressed_cache_hits_total")
    misses = metric(server, "transitd_compressed_cache_misses_total")
    bodies = [fetch(server, path, "br")[1] for _ in range(4)]
    assert len(set(bodies)) == 1
    assert metric(server, "transitd_compressed_cache_misses_total") - misses == 1
    assert metric(server, "transitd_compressed_cache_hits_total") - hits == 3
    # another coding of the same answer is another entry
    _, z = fetch(server, path, "gzip")
    assert metric(server, "transitd_compressed_cache_misses_total") - misses == 2
    _, plain = fetch(server, path, "identity")
    assert gzip.decompress(z) == brotli.decompress(bodies[0]) == plain
    assert metric(server, "transitd_compressed_cache_entries") >= 2
    assert 0 < metric(server, "transitd_compressed_cache_bytes") <= \
        metric(server, "transitd_compressed_cache_max_bytes") == 32 << 20


def test_cache_never_serves_another_datasets_answer(tmp_path):
    """The same request before and after a new dataset: the answer the cache held
    for the first must not come back for the second."""
    d = tmp_path / "data"
    import_feed(demo_feed(1), d)
    with Server(d, "--follow-interval", "1") as s:
        before, raw_before = fetch(s, "/v1/routes", "br")
        assert before.headers["Content-Encoding"] == "br"
        assert fetch(s, "/v1/routes", "br")[1] == raw_before   # cached now
        import_feed(demo_feed(2), d)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            after, raw_after = fetch(s, "/v1/routes", "br")
            if after.headers["ETag"] != before.headers["ETag"]:
                break
            time.sleep(0.2)
        assert after.headers["ETag"] != before.headers["ETag"], "the new dataset was not taken"
        _, plain = fetch(s, "/v1/routes", "identity")
        assert brotli.decompress(raw_after) == plain
        assert brotli.decompress(raw_before) != plain


def test_same_answers_with_the_cache_off(data):
    with Server(data, "--compressed-cache-mb", "0") as s:
        _, plain = fetch(s, DEPARTURES, "identity")
        for _ in range(2):
            r, raw = fetch(s, DEPARTURES, "br")
            assert r.headers["Content-Encoding"] == "br" and brotli.decompress(raw) == plain
            r, raw = fetch(s, DEPARTURES, "gzip")
            assert r.headers["Content-Encoding"] == "gzip" and gzip.decompress(raw) == plain
        assert metric(s, "transitd_compressed_cache_hits_total") == 0
        assert metric(s, "transitd_compressed_cache_max_bytes") == 0
