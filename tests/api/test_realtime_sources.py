"""Several GTFS-Realtime sources (issue #26): `--gtfs-rt` repeatable, each
with its own `--gtfs-rt-header` (forwarded to that source only, checked on
the sources' side, never shown in logs, /metrics or /readyz), conditional
GETs (a 304 keeps the source's last good feed), the merge (the newest feed
timestamp wins per trip; alerts from every source), one failing source not
hiding the other's updates, a stale source leaving the merge after
--rt-max-age, per-source metrics and /readyz state, the merged feed
exported to replicas, and `transitd query` reading several sources once.

Every source is a Python http.server on 127.0.0.1; every feed is built with
the protobuf package (gtfs_rt_pb.py), not by the project's code.
"""
import http.server
import re
import threading

import pytest
import requests

import schema_check
from gtfs_rt_pb import add_trip_update, new_feed, pb2
from http_server import Server
from test_cli_query import run_query
from test_realtime import MONDAY, departures, tiny_data, wait_for  # noqa: F401 (a fixture)

DOC = schema_check.load_openapi()
QUERY_KEY = "qs-key-7f3a9c"       # in source A's query string
HEADER_KEY = "hdr-key-51be0d"     # source A's X-Api-Key header


def trip_feed(timestamp, *updates):
    """updates: (entity_id, trip_id, delay at stop 2) or (entity_id, trip_id, None) for a cancellation."""
    m = new_feed(timestamp)
    for entity_id, trip_id, delay in updates:
        add_trip_update(m, entity_id, trip_id, "20261102", canceled=delay is None,
                        stops=() if delay is None else [(2, {"departure_delay": delay})])
    return m


def add_alert(message, entity_id, stop_id, text):
    e = message.entity.add()
    e.id = entity_id
    e.alert.informed_entity.add().stop_id = stop_id
    e.alert.effect = pb2().Alert.DETOUR
    t = e.alert.header_text.translation.add()
    t.text, t.language = text, "en"
    return message


class Source:
    """One feed on 127.0.0.1: serves `body` with an ETag, answers 304 to a
    matching If-None-Match, or `status` when it is not 200; records the
    request headers it saw."""

    def __init__(self):
        self.body, self.etag, self.status = b"", '"0"', 200
        self.seen, self.not_modified = [], 0
        self.lock = threading.Lock()
        source = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with source.lock:
                    source.seen.append(dict(self.headers))
                    body, etag, status = source.body, source.etag, source.status
                    fresh = status == 200 and self.headers.get("If-None-Match") == etag
                    if fresh:
                        source.not_modified += 1
                if fresh:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return
                self.send_response(status)
                if status == 200:
                    self.send_header("ETag", etag)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(body) if status == 200 else 0))
                self.end_headers()
                if status == 200:
                    self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def serve(self, message, etag):
        with self.lock:
            self.body, self.etag, self.status = message.SerializeToString(), etag, 200

    def fail(self, status):
        with self.lock:
            self.status = status

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def sources():
    a, b = Source(), Source()
    yield a, b
    a.close()
    b.close()


def row(server, trip_id, time_=MONDAY):
    rows = [d for d in departures(server, "S2", time_) if d["trip_id"] == trip_id]
    assert len(rows) == 1
    return rows[0]


def metric(text, name, source):
    m = re.search(rf'^{re.escape(name)}{{source="{re.escape(source)}"(,[^}}]*)?}} (\S+)$', text, re.M)
    return float(m.group(2)) if m else None


def ready_sources(server):
    r = requests.get(server.url("/readyz"), timeout=10)
    assert r.status_code == 200, r.text
    schema_check.assert_matches(r.json(), "ReadyResponse", DOC)
    return {s["source"]: s for s in r.json()["realtime_sources"]}


def test_two_sources_merge_with_their_own_headers(tiny_data, sources):  # noqa: F811
    a, b = sources
    # A: the agency's trip updates behind a key; B: another feed with its alerts
    a.serve(trip_feed(1793000000, ("a-t1", "T1", 120)), '"a1"')
    b.serve(add_alert(trip_feed(1793000500, ("b-t1", "T1", 300)), "b-a1", "S2", "Lift out"), '"b1"')
    url_a = a.url(f"/tu.pb?key={QUERY_KEY}")
    label_a, label_b = a.url("/tu.pb"), b.url("/feed.pb")
    with Server(tiny_data / "data", "--gtfs-rt", url_a, "--gtfs-rt-header", f"X-Api-Key: {HEADER_KEY}",
                "--gtfs-rt", label_b, "--rt-interval", "1", "--rt-max-age", "4") as s:
        # B's feed is newer: its update of T1 wins; B's alert shows
        assert wait_for(lambda: row(s, "T1")["delay_s"] == 300)
        alerts = requests.get(s.url("/v1/alerts"), timeout=10).json()["alerts"]
        assert [x["id"] for x in alerts] == ["rt:b-a1"]

        # the header goes to A only
        assert all(h.get("X-Api-Key") == HEADER_KEY for h in a.seen)
        assert all("X-Api-Key" not in h for h in b.seen)
        # conditional GETs: A's unchanged feed answers 304, counted per source
        assert wait_for(lambda: a.not_modified >= 2)
        assert any(h.get("If-None-Match") == '"a1"' for h in a.seen)
        text = requests.get(s.url("/metrics"), timeout=10).text
        assert metric(text, "transitd_rt_source_not_modified_total", label_a) >= 1
        assert metric(text, "transitd_rt_source_entities", label_a) == 1
        assert metric(text, "transitd_rt_source_entities", label_b) == 2
        assert metric(text, "transitd_rt_source_merged", label_b) == 1
        state = ready_sources(s)
        assert list(state) == [label_a, label_b]
        assert state[label_a]["merged"] and state[label_a]["entities"] == 1
        assert state[label_a]["age_s"] <= 3 and "last_error" not in state[label_a]

        # the primary's export is the merge: B's T1 (newest), nothing of A's for T1
        exported = requests.get(s.url("/gtfs-rt/trip-updates.pb"), params={"format": "json"},
                                timeout=10).json()
        assert [e["id"] for e in exported["entity"]] == ["b-t1"]

        # B fails: its last good feed stays, and A's new updates still show
        b.fail(503)
        a.serve(trip_feed(1793000100, ("a-t1", "T1", 120), ("a-t2", "T2", None)), '"a2"')
        assert wait_for(lambda: row(s, "T2", "2026-11-03T01:00:00-05:00")["canceled"])
        assert row(s, "T1")["delay_s"] == 300
        assert wait_for(lambda: "HTTP 503" in ready_sources(s)[label_b].get("last_error", ""))
        assert metric(requests.get(s.url("/metrics"), timeout=10).text,
                      "transitd_rt_source_poll_failures_total", label_b) >= 1

        # past --rt-max-age B leaves the merge: A's T1 shows, A's updates stay
        assert wait_for(lambda: not ready_sources(s)[label_b]["merged"], timeout=12)
        assert wait_for(lambda: row(s, "T1")["delay_s"] == 120)
        assert row(s, "T2", "2026-11-03T01:00:00-05:00")["canceled"]
        assert requests.get(s.url("/v1/alerts"), timeout=10).json()["alerts"] == []

        # B answers again: back in the merge
        b.fail(200)
        assert wait_for(lambda: row(s, "T1")["delay_s"] == 300)

        # no key anywhere the server shows
        shown = (requests.get(s.url("/metrics"), timeout=10).text
                 + requests.get(s.url("/readyz"), timeout=10).text + s.log())
        assert QUERY_KEY not in shown and HEADER_KEY not in shown
        assert label_a in shown


def test_replica_mirrors_the_merged_feed(tiny_data, sources):  # noqa: F811
    a, b = sources
    a.serve(trip_feed(1793000000, ("a-t1", "T1", 60)), '"a"')
    b.serve(trip_feed(1793000000, ("b-t2", "T2", None)), '"b"')
    with Server(tiny_data / "data", "--gtfs-rt", a.url("/a.pb"), "--gtfs-rt", b.url("/b.pb"),
                "--rt-interval", "1") as primary:
        assert wait_for(lambda: row(primary, "T1")["delay_s"] == 60)
        with Server(tiny_data / "data", "--gtfs-rt", primary.url("/gtfs-rt/trip-updates.pb"),
                    "--rt-interval", "1") as replica:
            assert wait_for(lambda: row(replica, "T1")["delay_s"] == 60)
            assert row(replica, "T2", "2026-11-03T01:00:00-05:00")["canceled"]


def test_query_reads_every_source_once(tiny_data, sources):  # noqa: F811
    a, b = sources
    a.serve(trip_feed(1793000000, ("a-t1", "T1", 60)), '"a"')
    b.serve(trip_feed(1793000900, ("b-t1", "T1", 240)), '"b"')
    args = ["stop-departures", "--stop", "S2", "--time", MONDAY, "--window", "60"]
    p = run_query(tiny_data / "data", "--gtfs-rt", a.url("/a.pb?key=" + QUERY_KEY),
                  "--gtfs-rt-header", f"X-Api-Key: {HEADER_KEY}", "--gtfs-rt", b.url("/b.pb"), *args)
    assert p.returncode == 0, p.stderr
    import json
    t1 = [d for d in json.loads(p.stdout)["departures"] if d["trip_id"] == "T1"]
    assert t1[0]["delay_s"] == 240
    assert a.seen[-1].get("X-Api-Key") == HEADER_KEY and "X-Api-Key" not in b.seen[-1]
    # one failing source fails a query (it has no last good feed), naming the source only
    b.fail(500)
    p = run_query(tiny_data / "data", "--gtfs-rt", a.url("/a.pb?key=" + QUERY_KEY),
                  "--gtfs-rt-header", f"X-Api-Key: {HEADER_KEY}", "--gtfs-rt", b.url("/b.pb"), *args)
    assert p.returncode != 0 and f"HTTP 500 from {b.url('/b.pb')}" in p.stderr
    assert QUERY_KEY not in p.stderr and HEADER_KEY not in p.stderr


def test_a_hanging_source_does_not_delay_the_others(tiny_data, sources):  # noqa: F811
    """A source that accepts the connection and never answers holds its own
    fetch until the timeout (30 s here); the other source's feed is fetched
    beside it, so its update shows within seconds, not after that timeout
    (it did when the sources were fetched one after the other)."""
    import socket
    import time
    a, _ = sources
    silent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)                     # the kernel accepts; nobody reads or answers
    hanging = f"http://127.0.0.1:{silent.getsockname()[1]}/tu.pb"
    try:
        with Server(tiny_data / "data", "--gtfs-rt", hanging, "--gtfs-rt", a.url("/a.pb"),
                    "--rt-interval", "1") as s:
            t0 = time.monotonic()
            a.serve(trip_feed(1793000000, ("a-t1", "T1", 180)), '"a1"')
            assert wait_for(lambda: row(s, "T1")["delay_s"] == 180, timeout=20)
            assert time.monotonic() - t0 < 25, "the good source waited for the hanging one's timeout"
            a.serve(trip_feed(1793000100, ("a-t1", "T1", 240)), '"a2"')
            assert wait_for(lambda: row(s, "T1")["delay_s"] == 240, timeout=20)
            assert ready_sources(s)[a.url("/a.pb")]["merged"]
    finally:
        silent.close()


@pytest.mark.parametrize("args,message", [
    (["--gtfs-rt-header", "X-Api-Key: k", "--gtfs-rt", "f.pb"], "give that first"),
    (["--gtfs-rt", "f.pb", "--gtfs-rt-header", "no-colon-zqhidden"], "NAME: VALUE"),
    (["--gtfs-rt", "f.pb", "--gtfs-rt-header", "X-Key:"], "has no value"),
    (["--gtfs-rt", "f.pb", "--rt-max-age", "-1"], "--rt-max-age must be"),
])
def test_bad_source_options_are_usage_errors(tiny_data, args, message):  # noqa: F811
    import subprocess
    from conftest import transitd_bin
    p = subprocess.run([transitd_bin(), "serve", "--data", str(tiny_data / "data"), "--port", "0", *args],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert "zqhidden" not in p.stderr
    if "--rt-max-age" not in args:
        q = run_query(tiny_data / "data", *args, "stop", "S2")
        assert q.returncode == 2 and message in q.stderr, q.stderr
