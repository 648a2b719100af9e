"""Pushed boards (issue #26): GET /v1/stops/{id}/departures and
/v1/departures with Accept: text/event-stream keep the connection and send
the board as an SSE event first, then again only when its rows change.

Read over a raw loopback socket (chunked transfer decoded here), against a
server polling a GTFS-Realtime file every second; the feeds are built by the
protobuf package (gtfs_rt_pb.py), not by the project's decoder. The feed is
test_realtime_predicted's: trips K0800..K1000 leave A every ten minutes.
"""
import json
import os
import re
import shutil
import socket
import time
import zipfile

import pytest
import requests

from gtfs_rt_pb import add_trip_update, new_feed
from http_server import Server, TMP, import_feed
from test_realtime_predicted import DAY, FEED, NINE, instant

BOARD = "/v1/stops/A/departures?time=2026-11-02T09:00:00-05:00&window=60"
NEARBY = "/v1/departures?lat=40.0&lon=-74.0&radius=50&time=2026-11-02T09:00:00-05:00&window=60"


def feed(delay_k0900=0, extra_trip=None):
    """A TripUpdates feed: K0900 late by delay_k0900 seconds (it then moves on
    the 09:00 board), and optionally a trip outside that board's window."""
    m = new_feed(timestamp=instant("2026-11-02T08:00:00-05:00"))
    add_trip_update(m, "u1", "K0900", DAY, [(1, {"departure_delay": delay_k0900})])
    if extra_trip:
        add_trip_update(m, "u2", extra_trip, DAY, [(1, {"departure_delay": 60})])
    return m.SerializeToString()


def publish(path, data):
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@pytest.fixture(scope="module")
def data():
    base = TMP / "board-streams"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    with zipfile.ZipFile(base / "feed.zip", "w") as z:
        for name, text in FEED.items():
            z.writestr(name, text)
    import_feed(base / "feed.zip", base / "data")
    return base


@pytest.fixture
def server(data):
    publish(data / "rt.pb", feed())
    s = Server(data / "data", "--gtfs-rt", str(data / "rt.pb"), "--rt-interval", "1",
               "--stream-keepalive", "1", "--max-streams", "3", "--quiet")
    s.start()
    deadline = time.monotonic() + 10   # the first poll's overlay is in
    while time.monotonic() < deadline and '"realtime":true' not in requests.get(s.url(BOARD), timeout=10).text:
        time.sleep(0.05)
    yield s
    if s.proc.poll() is None:
        rc, _ = s.stop()
        s.assert_clean_exit(rc)


class EventStream:
    """One SSE request on a raw socket; chunked transfer decoded by hand."""

    def __init__(self, port, target, headers=()):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        lines = [f"GET {target} HTTP/1.1", "Host: 127.0.0.1", "Accept: text/event-stream", *headers]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.raw = b""
        self.text = ""
        self.ended = False
        while b"\r\n\r\n" not in self.raw:
            self._recv(10)
        head, self.raw = self.raw.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        if self.status != 200:
            n = int(self.headers.get("content-length", "0"))
            while len(self.raw) < n:
                self._recv(10)
            self.body = self.raw[:n]

    def _recv(self, timeout):
        self.sock.settimeout(timeout)
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError
        self.raw += chunk

    def _decode(self):
        while True:
            if b"\r\n" not in self.raw:
                return
            size_line, rest = self.raw.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                self.ended = True
                self.raw = b""
                return
            if len(rest) < size + 2:
                return
            self.text += rest[:size].decode()
            self.raw = rest[size + 2:]

    def next_event(self, timeout=10):
        """The next event (comments and retry: skipped) as a dict, or None
        when none comes within timeout or the stream ended."""
        deadline = time.monotonic() + timeout
        while True:
            self._decode()
            while "\n\n" in self.text:
                block, self.text = self.text.split("\n\n", 1)
                fields = {}
                for line in block.split("\n"):
                    if line.startswith(":") or not line:
                        continue
                    k, _, v = line.partition(":")
                    v = v[1:] if v.startswith(" ") else v
                    fields[k] = fields[k] + "\n" + v if k in fields and k == "data" else v
                if "event" in fields or "data" in fields:
                    return fields
            left = deadline - time.monotonic()
            if self.ended or left <= 0:
                return None
            try:
                self._recv(left)
            except (socket.timeout, TimeoutError):
                return None
            except EOFError:
                self.ended = True
                return None

    def close(self):
        self.sock.close()


def metric(s, name):
    text = requests.get(s.url("/metrics"), timeout=10).text
    m = re.search(rf"^{name} (\d+)$", text, re.M)
    return int(m.group(1)) if m else None


def wait_metric(s, name, pred, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = metric(s, name)
        if v is not None and pred(v):
            return v
        time.sleep(0.05)
    raise AssertionError(f"{name} = {metric(s, name)}")


def test_first_event_is_the_plain_body_then_one_event_per_change_of_rows(server, data):
    st = EventStream(server.port, BOARD)
    assert st.status == 200
    assert st.headers["content-type"].startswith("text/event-stream")
    assert st.headers["cache-control"] == "no-store"
    first = st.next_event()
    plain = requests.get(server.url(BOARD), timeout=10)
    assert first["event"] == "board" and re.fullmatch(r"[0-9a-f]{16}", first["id"])
    assert first["data"] == plain.text and "\n" not in plain.text
    assert [d["trip_id"] for d in json.loads(first["data"])["departures"]][:2] == ["K0900", "K0910"]

    # a feed that changes the rows: K0900 now leaves 09:15, after K0910
    computed = metric(server, "transitd_stream_boards_computed_total")
    publish(data / "rt.pb", feed(delay_k0900=900))
    changed = st.next_event()
    assert changed["event"] == "board" and changed["id"] != first["id"]
    assert [d["trip_id"] for d in json.loads(changed["data"])["departures"]][:3] == ["K0910", "K0900", "K0920"]
    assert changed["data"] == requests.get(server.url(BOARD), timeout=10).text
    wait_metric(server, "transitd_stream_boards_computed_total", lambda v: v > computed)
    assert st.next_event(timeout=1.5) is None      # exactly one

    # a feed that changes nothing on this board (a trip of 08:00, outside the window)
    computed = metric(server, "transitd_stream_boards_computed_total")
    publish(data / "rt.pb", feed(delay_k0900=900, extra_trip="K0800"))
    wait_metric(server, "transitd_stream_boards_computed_total", lambda v: v > computed)
    assert st.next_event(timeout=1.5) is None
    assert metric(server, "transitd_stream_events_total") >= 2
    st.close()


def test_plain_gets_of_streamable_boards_vary_on_accept(server):
    """The same URL answers JSON or a stream by Accept, so a cache must keep
    them apart: Vary names Accept beside Accept-Encoding on the plain GET, and
    once on the stream; a route that never streams does not vary on it."""
    for path in (BOARD, NEARBY):
        plain = requests.get(server.url(path), headers={"Accept-Encoding": "gzip"}, timeout=10)
        assert plain.status_code == 200
        assert [v.strip() for v in plain.headers["Vary"].split(",")] == ["Accept-Encoding", "Accept"], path
    st = EventStream(server.port, BOARD)
    assert st.headers["vary"] == "Accept"
    st.close()
    other = requests.get(server.url("/v1/stops/A"), timeout=10)
    assert "accept" not in [v.strip().lower() for v in other.headers.get("Vary", "").split(",")]


def test_nearby_departures_stream_too(server):
    st = EventStream(server.port, NEARBY)
    first = st.next_event()
    assert first["event"] == "board"
    assert first["data"] == requests.get(server.url(NEARBY), timeout=10).text
    st.close()


def test_last_event_id_of_the_current_rows_is_not_resent(server, data):
    st = EventStream(server.port, BOARD)
    first = st.next_event()
    st.close()
    again = EventStream(server.port, BOARD, [f"Last-Event-ID: {first['id']}"])
    assert again.status == 200
    assert again.next_event(timeout=1.5) is None   # keep-alives only
    publish(data / "rt.pb", feed(delay_k0900=600))
    changed = again.next_event()
    assert changed["event"] == "board" and changed["id"] != first["id"]
    again.close()
    stale = EventStream(server.port, BOARD, ["Last-Event-ID: 0000000000000000"])
    assert stale.next_event()["id"] == changed["id"]
    stale.close()


def test_bad_parameters_are_answered_as_the_plain_get_would(server):
    st = EventStream(server.port, "/v1/stops/A/departures?window=x")
    plain = requests.get(server.url("/v1/stops/A/departures?window=x"), timeout=10)
    assert st.status == plain.status_code == 400
    assert json.loads(st.body) == plain.json()
    st.close()
    st = EventStream(server.port, "/v1/stops/NOPE/departures")
    assert st.status == 404
    st.close()


def test_past_max_streams_503_and_a_disconnect_frees_the_slot(server):
    streams = [EventStream(server.port, BOARD) for _ in range(3)]
    for st in streams:
        assert st.next_event()["event"] == "board"
    assert metric(server, "transitd_streams_open") == 3
    over = EventStream(server.port, BOARD)
    assert over.status == 503
    assert over.headers["retry-after"] == "5"
    assert over.headers["content-type"].startswith("application/problem+json")
    assert "--max-streams" in json.loads(over.body)["detail"]
    over.close()
    assert metric(server, "transitd_streams_refused_total") == 1
    # a client that goes away: noticed at the next keep-alive (1 s here)
    streams[0].sock.shutdown(socket.SHUT_RDWR)
    streams[0].close()
    wait_metric(server, "transitd_streams_open", lambda v: v == 2)
    fresh = EventStream(server.port, BOARD)
    assert fresh.status == 200 and fresh.next_event()["event"] == "board"
    for st in streams[1:] + [fresh]:
        st.close()
    wait_metric(server, "transitd_streams_open", lambda v: v == 0)


def test_shutdown_with_open_streams_is_clean_and_quick(server):
    streams = [EventStream(server.port, BOARD), EventStream(server.port, NEARBY)]
    for st in streams:
        assert st.next_event()["event"] == "board"
    rc, took = server.stop()
    server.assert_clean_exit(rc)
    assert took < 4
    for st in streams:
        assert st.next_event(timeout=2) is None and st.ended   # the last chunk came
        st.close()


def test_max_streams_0_refuses_every_stream_and_the_plain_get_stays(data):
    publish(data / "rt.pb", feed())
    with Server(data / "data", "--max-streams", "0", "--quiet") as s:
        st = EventStream(s.port, BOARD)
        assert st.status == 503 and st.headers["retry-after"] == "5"
        st.close()
        plain = requests.get(s.url(BOARD), headers={"Accept": "application/json"}, timeout=10)
        assert plain.status_code == 200 and plain.json()["departures"]
        assert "Accept" in [v.strip() for v in plain.headers["Vary"].split(",")]
