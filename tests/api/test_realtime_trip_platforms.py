"""Platform changes on realtime-only trips, and the alerts of moved rows
(issue #26): StopTimeProperties.assigned_stop_id on NEW, DUPLICATED and
REPLACEMENT trips moves their rows to the assigned stop's boards (stop,
station, nearby at the assigned stop's distance, arrivals, kind=both; both
realtime modes; paging), each row keeping its scheduled stop_id and showing
`assigned_stop`; /v1/trips/{id} shows the assigned stops of a realtime-only
trip's calls; the export writes assigned_stop_id back; an unknown assigned
stop is counted and logged and the row stays where the feed scheduled it.
A moved row (of a timetable trip as of a realtime-only one) shows the
alerts of the stop it is served at, not those of the stop it left. Feeds
are built with the protobuf package (gtfs_rt_pb.py), not by transitd's
encoder.

The timetable: trips P0900..P0950 leave platform A1 of station STA every
ten minutes and arrive at B ten minutes later; A2 is STA's other platform
(22 m from A1), B2 a stop beside B. The feed (Monday 2026-11-02,
America/New_York):
  - N1, NEW on route R: A1 09:05 assigned to A2, B 09:15 assigned to B2;
  - N2, NEW: A1 09:25 assigned to "NOPE" (a stop the dataset lacks: skipped,
    counted, logged; the row stays at A1), B 09:35;
  - P0900-dup, a DUPLICATED copy of P0900 starting 09:33, its departure
    assigned to A2 (P0900 itself still leaves A1 at 09:00);
  - P0940 REPLACED: leaves A1 at 09:42 (a 120 s delay) assigned to A2,
    reaches B at 09:55;
  - P0910 (a timetable trip) assigned to A2 at A1;
  - alerts informing stop A1, stop A2, station STA and route R.
"""
import json
import time

import pytest
import requests

import schema_check
from gtfs_rt_pb import new_feed, pb2
from http_server import Server, import_files_with_realtime
from test_cli_query import run_query
from test_realtime_platforms import FEED, at, board, ids
from test_realtime_predicted import batch

DOC = schema_check.load_openapi()
DAY = "20261102"
NINE = "2026-11-02T09:00:00-05:00"
A2 = {"id": "A2", "name": "Platform A2", "platform_code": "2", "lat": 40.0002, "lon": -74}
B2 = {"id": "B2", "name": "Stop B2", "platform_code": None, "lat": 40.0022, "lon": -74}


def trip_entity(m, entity_id, trip_id, relationship="SCHEDULED"):
    g = pb2()
    e = m.entity.add()
    e.id = entity_id
    tu = e.trip_update
    tu.trip.trip_id = trip_id
    tu.trip.start_date = DAY
    tu.trip.schedule_relationship = getattr(g.TripDescriptor, relationship)
    return tu


def call(tu, stop_id=None, seq=None, departure=None, arrival=None, delay=None, assigned=None):
    u = tu.stop_time_update.add()
    if stop_id is not None:
        u.stop_id = stop_id
    if seq is not None:
        u.stop_sequence = seq
    if departure is not None:
        u.departure.time = departure
    if arrival is not None:
        u.arrival.time = arrival
    if delay is not None:
        u.departure.delay = delay
    if assigned is not None:
        u.stop_time_properties.assigned_stop_id = assigned
    return u


def alert(m, entity_id, **selector):
    e = m.entity.add()
    e.id = entity_id
    ie = e.alert.informed_entity.add()
    for key, value in selector.items():
        setattr(ie, key, value)
    t = e.alert.header_text.translation.add()
    t.text = f"Alert {entity_id}"
    t.language = "en"


def updates(assign=True):
    m = new_feed(timestamp=at("08:00"))
    tu = trip_entity(m, "new", "N1", "NEW")
    tu.trip.route_id = "R"
    call(tu, "A1", departure=at("09:05"), assigned="A2" if assign else None)
    call(tu, "B", arrival=at("09:15"), assigned="B2" if assign else None)
    tu = trip_entity(m, "new-unknown", "N2", "NEW")
    tu.trip.route_id = "R"
    call(tu, "A1", departure=at("09:25"), assigned="NOPE")
    call(tu, "B", arrival=at("09:35"))
    tu = trip_entity(m, "dup", "P0900", "DUPLICATED")
    tu.trip_properties.trip_id = "P0900-dup"
    tu.trip_properties.start_date = DAY
    tu.trip_properties.start_time = "09:33:00"
    call(tu, seq=1, delay=0, assigned="A2" if assign else None)
    tu = trip_entity(m, "rep", "P0940", "REPLACEMENT")
    call(tu, seq=1, delay=120, assigned="A2" if assign else None)
    call(tu, seq=2, arrival=at("09:55"))
    call(trip_entity(m, "moved", "P0910"), seq=1, delay=0, assigned="A2" if assign else None)
    alert(m, "at-A1", stop_id="A1")
    alert(m, "at-A2", stop_id="A2")
    alert(m, "at-STA", stop_id="STA")
    alert(m, "on-R", route_id="R")
    return m.SerializeToString()


@pytest.fixture(scope="module")
def feed():
    return import_files_with_realtime("realtime-trip-platforms", FEED, updates())


AT_A1 = ["P0900", "P0920", "N2", "P0930", "P0950"]
AT_A2 = ["N1", "P0910", "P0900-dup", "P0940"]
EVERY = ["P0900", "N1", "P0910", "P0920", "N2", "P0930", "P0900-dup", "P0940", "P0950"]


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_realtime_only_rows_appear_at_the_assigned_stop(feed, mode):
    assert ids(board(feed, "A1", realtime=mode)) == AT_A1
    rows = board(feed, "A2", realtime=mode)["departures"]
    assert ids({"departures": rows}) == AT_A2
    for row in rows:   # each keeps its scheduled stop and shows where it is served
        assert row["stop_id"] == "A1" and row["assigned_stop"] == A2, row
    n1, dup, rep = rows[0], rows[2], rows[3]
    assert n1["trip_relationship"] == "NEW" and n1["departure"] == "2026-11-02T09:05:00-05:00"
    assert dup["trip_relationship"] == "DUPLICATED" and dup["departure"] == "2026-11-02T09:33:00-05:00"
    assert rep["trip_relationship"] == "REPLACEMENT" and rep["departure"] == "2026-11-02T09:42:00-05:00"
    # the copy's platform change is the copy's only: the original still leaves A1, unmoved
    p0900 = board(feed, "A1", realtime=mode)["departures"][0]
    assert p0900["trip_id"] == "P0900" and "assigned_stop" not in p0900
    # the unknown assigned stop: N2 stays at A1, with no assigned_stop
    n2 = board(feed, "A1", realtime=mode)["departures"][2]
    assert n2["trip_id"] == "N2" and n2["stop_id"] == "A1" and "assigned_stop" not in n2


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_station_and_nearby_boards_show_each_row_once_where_served(feed, mode):
    assert ids(board(feed, "STA", realtime=mode)) == EVERY
    near = batch(feed, [{"op": "departures", "lat": 40.0, "lon": -74.0, "radius": 60, "time": NINE, "window": 60,
                         "realtime": mode}])[0]
    schema_check.assert_matches(near, "DeparturesResponse", DOC)
    assert ids(near) == EVERY
    by_trip = {d["trip_id"]: d for d in near["departures"]}
    for moved in AT_A2:   # found by the assigned stop's position
        assert by_trip[moved]["distance_m"] == 22 and by_trip[moved]["assigned_stop"]["id"] == "A2"
    assert by_trip["N2"]["distance_m"] == 0
    # a radius reaching A1 but not A2 leaves every moved row out
    near = batch(feed, [{"op": "departures", "lat": 40.0, "lon": -74.0, "radius": 10, "time": NINE, "window": 60,
                         "realtime": mode}])[0]
    assert ids(near) == AT_A1


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_limits_count_moved_realtime_only_rows_where_served(feed, mode):
    body = board(feed, "A2", limit=2, realtime=mode)
    assert ids(body) == ["N1", "P0910"] and body["truncated"] is True
    body = board(feed, "A1", limit=3, realtime=mode)
    assert ids(body) == ["P0900", "P0920", "N2"] and body["truncated"] is True


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_arrivals_and_both_follow_a_new_trips_assignment(feed, mode):
    arr = board(feed, "B2", op="stop-arrivals", realtime=mode)
    assert ids(arr, "arrivals") == ["N1"]
    row = arr["arrivals"][0]
    assert row["stop_id"] == "B" and row["assigned_stop"] == B2 and row["arrival"] == "2026-11-02T09:15:00-05:00"
    at_b = ids(board(feed, "B", op="stop-arrivals", realtime=mode), "arrivals")
    assert "N1" not in at_b and {"N2", "P0900-dup", "P0940"} <= set(at_b)
    both = board(feed, "B2", kind="both", realtime=mode)
    assert ids(both) == ["N1"] and both["departures"][0]["assigned_stop"] == B2


def trip(base, trip_id, **params):
    body = batch(base, [{"op": "trip", "trip": trip_id, **params}])[0]
    assert "trip" in body, body
    schema_check.assert_matches(body, "TripResponse", DOC)
    return body["trip"]


def test_trips_show_the_assigned_stops_of_realtime_only_calls(feed):
    n1 = trip(feed, "N1")
    assert [(s["stop_id"], s.get("assigned_stop")) for s in n1["stop_times"]] == [("A1", A2), ("B", B2)]
    dup = trip(feed, "P0900-dup", date="2026-11-02")
    assert [(s["stop_id"], s.get("assigned_stop")) for s in dup["stop_times"]] == [("A1", A2), ("B", None)]
    # the original of the copy keeps its stops
    assert all("assigned_stop" not in s for s in trip(feed, "P0900", date="2026-11-02")["stop_times"])
    n2 = trip(feed, "N2")
    assert all("assigned_stop" not in s for s in n2["stop_times"])
    # the day of a REPLACEMENT answers with the replacement's calls; another day, the timetable's
    rep = trip(feed, "P0940", date="2026-11-02")
    assert rep["realtime_only"] is True and rep["trip_relationship"] == "REPLACEMENT"
    assert [(s["stop_id"], s.get("assigned_stop"), s["departure"]) for s in rep["stop_times"]] == [
        ("A1", A2, "2026-11-02T09:42:00-05:00"), ("B", None, None)]
    other = trip(feed, "P0940", date="2026-11-03")
    assert "realtime_only" not in other and all("assigned_stop" not in s for s in other["stop_times"])


def alerts_of(body, key="departures"):
    return {d["trip_id"]: sorted(d.get("alerts", [])) for d in body[key]}


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_a_moved_row_shows_the_alerts_of_the_stop_it_is_served_at(feed, mode):
    """The vehicle calls at the assigned stop, and the row is on its board:
    the alerts about that stop apply; those about the stop it left do not
    (a closure of A1 says nothing of a call at A2). Alerts about the station
    of both, the route, the trip and the agency apply as before."""
    served_at_a2 = ["rt:at-A2", "rt:at-STA", "rt:on-R"]
    at_a1 = ["rt:at-A1", "rt:at-STA", "rt:on-R"]
    by_trip = alerts_of(board(feed, "A2", realtime=mode))
    assert by_trip == {t: served_at_a2 for t in AT_A2}   # timetable (P0910) and realtime-only rows alike
    by_trip = alerts_of(board(feed, "A1", realtime=mode))
    assert by_trip == {t: at_a1 for t in AT_A1}   # N2's unknown assignment leaves it at A1, with A1's alerts
    near = batch(feed, [{"op": "departures", "lat": 40.0, "lon": -74.0, "radius": 60, "time": NINE, "window": 60,
                         "realtime": mode}])[0]
    by_trip = alerts_of(near)
    assert all(by_trip[t] == served_at_a2 for t in AT_A2) and all(by_trip[t] == at_a1 for t in AT_A1)
    arr = board(feed, "B2", op="stop-arrivals", realtime=mode)
    assert alerts_of(arr, "arrivals") == {"N1": ["rt:on-R"]}


def test_without_the_assignments_the_rows_keep_their_stops_alerts(tmp_path, feed):
    """The other way: the same feed without platform changes shows every row
    at A1 with A1's alerts and none of A2's."""
    plain = tmp_path / "plain.pb"
    plain.write_bytes(updates(assign=False))
    p = run_query(feed / "data", "--gtfs-rt", str(plain), "batch",
                  stdin=json.dumps({"op": "stop-departures", "stop": "A1", "time": NINE, "window": 60}) + "\n")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["departures"]
    assert ids({"departures": rows}) == ["P0900", "N1", "P0910", "P0920", "N2", "P0930", "P0900-dup", "P0940",
                                         "P0950"]
    assert all(sorted(d["alerts"]) == ["rt:at-A1", "rt:at-STA", "rt:on-R"] for d in rows)
    assert all("assigned_stop" not in d for d in rows)


def test_server_pages_metrics_log_and_export(feed):
    g = pb2()
    with Server(feed / "data", "--gtfs-rt", str(feed / "rt.pb"), "--rt-interval", "30") as s:
        deadline = time.monotonic() + 10
        url = s.url("/v1/stops/A2/departures")
        while time.monotonic() < deadline:
            r = requests.get(url, params={"time": NINE, "limit": 2}, timeout=10)
            if [d["trip_id"] for d in r.json()["departures"]] == AT_A2[:2]:
                break
            time.sleep(0.1)
        page = r.json()
        assert [d["trip_id"] for d in page["departures"]] == AT_A2[:2] and page["next"]
        nxt = requests.get(s.url(page["next"]), timeout=10).json()
        assert [d["trip_id"] for d in nxt["departures"]] == AT_A2[2:] and nxt["next"] is None
        t = requests.get(s.url("/v1/trips/N1"), timeout=10).json()["trip"]
        assert t["stop_times"][0]["assigned_stop"] == A2
        metrics = requests.get(s.url("/metrics"), timeout=10).text
        # moved events: N1's departure and arrival, the copy's and the replacement's
        # departures, P0910's departure; one unknown stop (N2)
        assert 'transitd_rt_assigned_stops{outcome="moved"} 5' in metrics
        assert 'transitd_rt_assigned_stops{outcome="unknown_stop"} 1' in metrics
        out = g.FeedMessage()
        out.ParseFromString(requests.get(s.url("/gtfs-rt/trip-updates.pb"), timeout=10).content)
        by_id = {e.id: e.trip_update for e in out.entity}
        assert [u.stop_time_properties.assigned_stop_id for u in by_id["new"].stop_time_update] == ["A2", "B2"]
        assert by_id["new"].trip.schedule_relationship == g.TripDescriptor.NEW
        assert by_id["dup"].stop_time_update[0].stop_time_properties.assigned_stop_id == "A2"
        assert by_id["rep"].stop_time_update[0].stop_time_properties.assigned_stop_id == "A2"
        assert by_id["new-unknown"].stop_time_update[0].stop_time_properties.assigned_stop_id == "NOPE"
    assert ('1 stop_time_update parts skipped; the first: entity "new-unknown": stop_time_update 0: '
            'stop_time_properties.assigned_stop_id "NOPE" is not a stop of the dataset') in s.log()
