"""`serve --gtfs-rt`: GTFS-Realtime trip updates from a file or an http URL,
polled every --rt-interval seconds, show on departure rows (scheduled,
predicted, delay_s, realtime, canceled); a truncated feed, garbage or an
HTTP error keeps the last good data and is counted in /metrics; a server
without --gtfs-rt answers exactly as before.

The protobuf fixtures are encoded by hand (gtfs_rt_wire.py, a few lines of
the wire format), so the test needs no protobuf package.
"""
import datetime
import http.server
import shutil
import threading
import time
import zipfile

import pytest
import requests

import schema_check
from http_server import Server, TMP, import_feed
from test_alerts_api import make_token
from test_cli_query import TINY_FEED
from gtfs_rt_wire import added_trip, alert_entity, feed, trip_update

DOC = schema_check.load_openapi()
MONDAY = "2026-11-02T08:00:00-05:00"


GOOD = feed(trip_update("e1", "T1", "20261102", [(2, 120)]),
            trip_update("e2", "T2", "20261102", relationship=3))


# ------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def tiny_data():
    base = TMP / "realtime-tiny"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    zip_path = base / "tiny.zip"
    with zipfile.ZipFile(zip_path, "w") as z:
        for name, text in TINY_FEED.items():
            z.writestr(name, text)
    data = base / "data"
    import_feed(zip_path, data)
    return base


def departures(server, stop, time_=MONDAY, window=60):
    r = requests.get(server.url(f"/v1/stops/{stop}/departures"),
                     params={"time": time_, "window": window}, timeout=10)
    assert r.status_code == 200, r.text
    body = r.json()
    schema_check.assert_matches(body, "StopDeparturesResponse", DOC)
    return body["departures"]


def metric(server, line_start):
    text = requests.get(server.url("/metrics"), timeout=10).text
    for line in text.splitlines():
        if line.startswith(line_start + " "):
            return float(line.split()[-1])
    return None


def wait_for(predicate, timeout=8):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def t1_row(server):
    rows = [d for d in departures(server, "S2") if d["trip_id"] == "T1"]
    assert len(rows) == 1
    return rows[0]


# ------------------------------------------------------------ tests

def test_file_source_predictions_and_last_good(tiny_data):
    rt = tiny_data / "rt.pb"
    rt.write_bytes(GOOD)
    with Server(tiny_data / "data", "--gtfs-rt", str(rt), "--rt-interval", "1") as s:
        assert wait_for(lambda: t1_row(s)["realtime"])
        row = t1_row(s)
        assert row["departure"] == "2026-11-02T08:11:00-05:00"
        assert row["scheduled"] == row["departure"]
        assert row["predicted"] == "2026-11-02T08:13:00-05:00"
        assert row["delay_s"] == 120
        assert row["canceled"] is False
        # T2 (25:30 on Monday's service) is canceled
        late = departures(s, "S2", "2026-11-03T01:00:00-05:00")
        t2 = [d for d in late if d["trip_id"] == "T2"]
        assert t2 and t2[0]["canceled"] is True and t2[0]["realtime"] is True
        assert t2[0]["predicted"] is None and t2[0]["delay_s"] is None
        # T1 before its first update: realtime, no prediction
        p1 = departures(s, "P1")
        assert p1 and p1[0]["realtime"] is True and p1[0]["predicted"] is None
        # a trip without an update (T3, Saturday): realtime false, the members still there
        sat = departures(s, "S3", "2026-11-07T08:30:00-05:00")
        assert sat and sat[0]["trip_id"] == "T3"
        assert sat[0]["realtime"] is False and sat[0]["predicted"] is None
        assert metric(s, 'transitd_rt_trip_updates{outcome="matched"}') == 2

        # truncated, then garbage: counted, the last good data stays
        rt.write_bytes(GOOD[:-5])
        assert wait_for(lambda: (metric(s, 'transitd_rt_poll_failures_total{stage="decode"}')
                                 or 0) >= 1)
        rt.write_bytes(b"\xff\xff\xff\xff not protobuf")
        assert wait_for(lambda: (metric(s, 'transitd_rt_poll_failures_total{stage="decode"}')
                                 or 0) >= 2)
        assert t1_row(s)["delay_s"] == 120
        rt.unlink()
        assert wait_for(lambda: (metric(s, 'transitd_rt_poll_failures_total{stage="fetch"}')
                                 or 0) >= 1)
        assert t1_row(s)["delay_s"] == 120
        s.wait_for_log(r"realtime: .*keeping the last good feed")

        # a new good feed replaces it; the ETag follows
        etag = requests.get(s.url("/v1/stops/S2/departures"),
                            params={"time": MONDAY, "window": 60}, timeout=10).headers["ETag"]
        rt.write_bytes(feed(trip_update("e1", "T1", "20261102", [(2, 300)])))
        assert wait_for(lambda: t1_row(s)["delay_s"] == 300)
        etag2 = requests.get(s.url("/v1/stops/S2/departures"),
                             params={"time": MONDAY, "window": 60}, timeout=10).headers["ETag"]
        assert etag2 != etag
        # polls that find the same bytes change nothing, the ETag included
        polls = metric(s, "transitd_rt_polls_total")
        assert wait_for(lambda: metric(s, "transitd_rt_polls_total") >= polls + 2)
        assert requests.get(s.url("/v1/stops/S2/departures"),
                            params={"time": MONDAY, "window": 60},
                            timeout=10).headers["ETag"] == etag2


class FeedHandler(http.server.BaseHTTPRequestHandler):
    body = GOOD
    status = 200

    def do_GET(self):
        self.send_response(self.status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def test_url_source_and_http_errors(tiny_data):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FeedHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/trip-updates.pb"
    try:
        with Server(tiny_data / "data", "--gtfs-rt", url, "--rt-interval", "1") as s:
            assert wait_for(lambda: t1_row(s)["delay_s"] == 120)
            FeedHandler.status = 503
            assert wait_for(lambda: (metric(s, 'transitd_rt_poll_failures_total{stage="fetch"}')
                                     or 0) >= 1)
            s.wait_for_log(r"realtime: HTTP 503 from")
            assert t1_row(s)["delay_s"] == 120
    finally:
        FeedHandler.status = 200
        httpd.shutdown()
        httpd.server_close()


def test_feed_alerts_merge_with_the_api_alerts(tiny_data):
    rt = tiny_data / "rt-alerts.pb"
    rt.write_bytes(feed(trip_update("e1", "T1", "20261102", [(2, 60)]),
                        alert_entity("a1", "S2", "Detour at the café")))
    tokens = tiny_data / "tokens"
    tokens.unlink(missing_ok=True)
    token = make_token(tokens)
    auth = {"Authorization": f"Bearer {token}"}
    with Server(tiny_data / "data", "--gtfs-rt", str(rt), "--rt-interval", "1",
                "--tokens", str(tokens)) as s:
        def listed():
            r = requests.get(s.url("/v1/alerts"), timeout=10)
            return [a["id"] for a in r.json()["alerts"]] if r.status_code == 200 else []
        assert wait_for(lambda: listed() == ["rt:a1"])
        one = requests.get(s.url("/v1/alerts/rt:a1"), timeout=10)
        assert one.status_code == 200, one.text
        schema_check.assert_matches(one.json(), "Alert", DOC)
        assert one.json()["effect"] == "DETOUR"
        assert one.headers["ETag"] == '"1793000000"'
        row = t1_row(s)
        assert row["alerts"] == ["rt:a1"] and row["delay_s"] == 60
        # the API may not write the feed's ids
        r = requests.put(s.url("/v1/alerts/rt:a1"), json={}, headers=auth, timeout=10)
        assert r.status_code == 403 and "read-only" in r.json()["detail"]
        # the next feed without the alert takes it away
        rt.write_bytes(feed(trip_update("e1", "T1", "20261102", [(2, 60)]), timestamp=1793000100))
        assert wait_for(lambda: listed() == [])
        assert metric(s, 'transitd_rt_alerts{outcome="shown"}') == 0


def test_export_feeds_replicas(tiny_data):
    """A primary's /gtfs-rt/*.pb feed replicas through their own --gtfs-rt."""
    rt = tiny_data / "rt-primary.pb"
    rt.write_bytes(feed(trip_update("e1", "T1", "20261102", [(2, 90)]),
                        trip_update("e2", "T2", "20261102", relationship=3),
                        alert_entity("a1", "S2", "Detour")))
    tokens = tiny_data / "tokens-export"
    tokens.unlink(missing_ok=True)
    auth = {"Authorization": f"Bearer {make_token(tokens)}"}
    with Server(tiny_data / "data", "--gtfs-rt", str(rt), "--rt-interval", "1",
                "--tokens", str(tokens)) as primary:
        assert wait_for(lambda: t1_row(primary)["delay_s"] == 90)
        r = requests.put(primary.url("/v1/alerts/ops-1"), headers=auth, timeout=10, json={
            "informed_entity": [{"route_id": "R1"}],
            "header_text": {"translation": [{"text": "Works", "language": "en"}]}})
        assert r.status_code in (200, 201), r.text

        tu = requests.get(primary.url("/gtfs-rt/trip-updates.pb"), timeout=10)
        assert tu.status_code == 200
        assert tu.headers["Content-Type"] == "application/x-protobuf"
        as_json = requests.get(primary.url("/gtfs-rt/trip-updates.pb"),
                               params={"format": "json"}, timeout=10).json()
        assert as_json["header"]["gtfs_realtime_version"] == "2.0"
        assert [e["id"] for e in as_json["entity"]] == ["e1", "e2"]
        assert "alert" not in str(as_json)
        assert as_json["entity"][1]["trip_update"]["trip"]["schedule_relationship"] == "CANCELED"
        alerts = requests.get(primary.url("/gtfs-rt/alerts.pb"), params={"format": "json"},
                              timeout=10).json()
        assert sorted(e["id"] for e in alerts["entity"]) == ["a1", "ops-1"]
        assert requests.get(primary.url("/gtfs-rt/alerts.pb"), params={"format": "xml"},
                            timeout=10).status_code == 400

        with Server(tiny_data / "data", "--gtfs-rt", primary.url("/gtfs-rt/trip-updates.pb"),
                    "--rt-interval", "1") as replica:
            assert wait_for(lambda: t1_row(replica)["delay_s"] == 90)
            assert t1_row(replica)["predicted"] == t1_row(primary)["predicted"]
        with Server(tiny_data / "data", "--gtfs-rt", primary.url("/gtfs-rt/alerts.pb"),
                    "--rt-interval", "1") as replica:
            def ids():
                return [a["id"] for a in requests.get(replica.url("/v1/alerts"),
                                                      timeout=10).json()["alerts"]]
            # (this replica shares the primary's data directory, so its live store
            # holds ops-1 too)
            assert wait_for(lambda: ids() == ["ops-1", "rt:a1", "rt:ops-1"])
        assert requests.delete(primary.url("/v1/alerts/ops-1"), headers=auth,
                               timeout=10).status_code == 204


def monday_at(hh, mm):
    """Unix time of Monday 2026-11-02 hh:mm in the feed's zone (EST)."""
    est = datetime.timezone(datetime.timedelta(hours=-5))
    return int(datetime.datetime(2026, 11, 2, hh, mm, tzinfo=est).timestamp())


def test_added_trip_shows_where_it_stops(tiny_data):
    """An ADDED trip (not in the timetable) departs from each stop its update
    gives a time for, among the scheduled rows, at a station's platforms and
    near a point, under route alerts; the export carries it to replicas."""
    rt = tiny_data / "rt-added.pb"
    rt.write_bytes(feed(
        trip_update("e1", "T1", "20261102", [(2, 120)]),
        added_trip("x9", "X9", "R1", "20261102",
                   [("P1", monday_at(8, 5)), ("S2", monday_at(8, 15)), ("S3", monday_at(8, 25))]),
        added_trip("x10", "X10", "NO-SUCH-ROUTE", "20261102",
                   [("P1", monday_at(8, 6)), ("S2", monday_at(8, 16))])))
    tokens = tiny_data / "tokens-added"
    tokens.unlink(missing_ok=True)
    auth = {"Authorization": f"Bearer {make_token(tokens)}"}
    with Server(tiny_data / "data", "--gtfs-rt", str(rt), "--rt-interval", "1",
                "--tokens", str(tokens)) as s:
        assert wait_for(lambda: any(d["trip_id"] == "X9" for d in departures(s, "S2")))
        rows = departures(s, "S2")
        assert [d["trip_id"] for d in rows] == ["T1", "X9"]      # 08:13 predicted, 08:15
        x9 = rows[1]
        assert x9["departure"] == x9["predicted"] == "2026-11-02T08:15:00-05:00"
        assert x9["scheduled"] is None and x9["delay_s"] is None
        assert x9["realtime"] is True and x9["canceled"] is False and x9["added"] is True
        assert x9["route_id"] == "R1" and x9["route_short_name"] == "1"
        assert x9["route_long_name"] == "Main Line" and x9["headsign"] is None
        assert x9["service_date"] == "2026-11-02" and x9["departure_secs"] == 8 * 3600 + 15 * 60
        assert x9["stop_sequence"] == 2
        assert "added" not in rows[0]
        # the station yields its platform's rows, the added one in time order
        sta = departures(s, "STA")
        assert [(d["trip_id"], d["stop_id"]) for d in sta] == [("T1", "P1"), ("X9", "P1")]
        # no departure where a trip ends (S3 ends X9, and T1); none outside the window
        assert departures(s, "S3") == []
        assert departures(s, "S2", "2026-11-02T08:16:00-05:00") == []
        # near S2: both stops' rows with their distances, by instant
        r = requests.get(s.url("/v1/departures"), timeout=10, params={
            "lat": 40.001, "lon": -74.0, "radius": 200, "time": MONDAY, "window": 30})
        assert r.status_code == 200, r.text
        schema_check.assert_matches(r.json(), "DeparturesResponse", DOC)
        near = [(d["trip_id"], d["stop_id"], d["distance_m"]) for d in r.json()["departures"]]
        assert near == [("T1", "P1", 111), ("X9", "P1", 111), ("T1", "S2", 0), ("X9", "S2", 0)]
        # limit counts the added rows
        r = requests.get(s.url("/v1/stops/STA/departures"), timeout=10,
                         params={"time": MONDAY, "window": 60, "limit": 1})
        assert [d["trip_id"] for d in r.json()["departures"]] == ["T1"]
        assert r.json()["truncated"] is True
        # an alert on its route marks its rows
        put = requests.put(s.url("/v1/alerts/works"), headers=auth, timeout=10, json={
            "informed_entity": [{"route_id": "R1"}],
            "header_text": {"translation": [{"text": "Works", "language": "en"}]}})
        assert put.status_code == 201, put.text
        assert wait_for(lambda: departures(s, "S2")[1].get("alerts") == ["works"])
        assert metric(s, 'transitd_rt_trip_updates{outcome="added"}') == 1
        assert metric(s, 'transitd_rt_trip_updates{outcome="added_no_route"}') == 1

        # the export carries the added trip, and a replica shows it the same
        as_json = requests.get(s.url("/gtfs-rt/trip-updates.pb"), params={"format": "json"},
                               timeout=10).json()
        x9_entity = [e for e in as_json["entity"] if e["id"] == "x9"][0]
        assert x9_entity["trip_update"]["trip"]["schedule_relationship"] == "ADDED"
        with Server(tiny_data / "data", "--gtfs-rt", s.url("/gtfs-rt/trip-updates.pb"),
                    "--rt-interval", "1") as replica:
            assert wait_for(lambda: [d["trip_id"] for d in departures(replica, "S2")]
                            == ["T1", "X9"])
            got = departures(replica, "S2")[1]
            assert {k: v for k, v in got.items() if k != "alerts"} == \
                {k: v for k, v in x9.items() if k != "alerts"}
        assert requests.delete(s.url("/v1/alerts/works"), headers=auth,
                               timeout=10).status_code == 204


def test_without_realtime_rows_are_unchanged(tiny_data):
    with Server(tiny_data / "data") as s:
        row = t1_row(s)
        for key in ("scheduled", "predicted", "delay_s", "realtime", "canceled"):
            assert key not in row
        assert metric(s, "transitd_rt_polls_total") is None
        # the export answers an empty feed
        empty = requests.get(s.url("/gtfs-rt/trip-updates.pb"), params={"format": "json"},
                             timeout=10).json()
        assert "entity" not in empty and empty["header"]["incrementality"] == "FULL_DATASET"


def test_bad_interval_is_a_usage_error(tiny_data):
    import subprocess
    from conftest import transitd_bin
    p = subprocess.run([transitd_bin(), "serve", "--data", str(tiny_data / "data"),
                        "--gtfs-rt", "x.pb", "--rt-interval", "0"],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 2
    assert "--rt-interval must be 1..3600" in p.stderr


def test_query_gtfs_rt_answers_as_the_server(tiny_data):
    """`transitd query --gtfs-rt FILE` serves through the same serving state
    as `serve --gtfs-rt FILE`: the same realtime rows (predictions,
    cancellations, an ADDED trip), the same feed alerts, byte for byte."""
    import json
    import subprocess
    from test_cli_query import run_query
    rt = tiny_data / "rt-query.pb"
    rt.write_bytes(feed(
        trip_update("e1", "T1", "20261102", [(2, 120)]),
        trip_update("e2", "T2", "20261102", relationship=3),
        added_trip("x9", "X9", "R1", "20261102", [("P1", monday_at(8, 5)), ("S2", monday_at(8, 15)),
                                                  ("S3", monday_at(8, 25))]),
        alert_entity("a1", "S2", "Lift out of order")))
    questions = [
        ("/v1/stops/S2/departures", {"time": MONDAY, "window": 60},
         ["stop-departures", "--stop", "S2", "--time", MONDAY, "--window", "60"]),
        ("/v1/stops/STA/departures", {"time": MONDAY, "window": 60},
         ["stop-departures", "--stop", "STA", "--time", MONDAY, "--window", "60"]),
        ("/v1/stops/S2/departures", {"time": "2026-11-03T01:00:00-05:00", "window": 60},
         ["stop-departures", "--stop", "S2", "--time", "2026-11-03T01:00:00-05:00", "--window", "60"]),
        ("/v1/departures", {"lat": 40.001, "lon": -74.0, "radius": 200, "time": MONDAY, "window": 30},
         ["departures", "--lat", "40.001", "--lon", "-74.0", "--radius", "200", "--time", MONDAY,
          "--window", "30"]),
        ("/v1/stops/S2", {}, ["stop", "S2"]),
    ]
    with Server(tiny_data / "data", "--gtfs-rt", str(rt), "--rt-interval", "1") as s:
        assert wait_for(lambda: any(d["trip_id"] == "X9" for d in departures(s, "S2")))
        compared_rows = 0
        for path, params, args in questions:
            r = requests.get(s.url(path), params=params, timeout=10)
            assert r.status_code == 200, r.text
            p = run_query(tiny_data / "data", "--gtfs-rt", rt, *args)
            assert p.returncode == 0, p.stderr
            assert json.loads(p.stdout) == r.json(), (path, params)
            compared_rows += len(r.json().get("departures", []))
        # the option also goes after the subcommand, and in batch
        p = run_query(tiny_data / "data", *questions[0][2], "--gtfs-rt", rt)
        assert p.returncode == 0 and json.loads(p.stdout) == requests.get(
            s.url(questions[0][0]), params=questions[0][1], timeout=10).json()
    assert compared_rows >= 6
    # what the comparison rests on: the rows do carry realtime
    body = json.loads(run_query(tiny_data / "data", "--gtfs-rt", rt, *questions[0][2]).stdout)
    assert [d["trip_id"] for d in body["departures"]] == ["T1", "X9"]
    assert body["departures"][0]["delay_s"] == 120 and body["departures"][1]["added"] is True
    assert [a["id"] for a in body["alerts"]] == ["rt:a1"]
    # without --gtfs-rt the rows have no realtime members
    plain = json.loads(run_query(tiny_data / "data", *questions[0][2]).stdout)
    assert "realtime" not in plain["departures"][0]
    # a source that cannot be read is a runtime error naming it
    p = run_query(tiny_data / "data", "--gtfs-rt", tiny_data / "missing.pb", *questions[0][2])
    assert p.returncode == 1 and "realtime:" in p.stderr and "missing.pb" in p.stderr
    p = run_query(tiny_data / "data", "stop", "S2", "--gtfs-rt")
    assert p.returncode == 2 and "option '--gtfs-rt' needs a value" in p.stderr
    p = subprocess.run([str(a) for a in (run_query.__globals__["transitd_bin"](), "query", "--data",
                                         tiny_data / "data", "--gtfs-rt")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "needs a value" in p.stderr
