"""Trip semantics of the current GTFS-Realtime spec (issue #26): NEW,
DUPLICATED, REPLACEMENT, DELETED beside CANCELED, and TripProperties, on
stop, station and nearby boards, arrivals and kind=both, in both realtime
modes, at /v1/trips/{id}, and in the export. Feeds are built with the
protobuf package from protoc's compilation of proto/gtfs-realtime.proto
(gtfs_rt_pb.py), not by transitd's encoder.

The timetable: trips K0800..K1000 (headsign "To B") leave A (a platform of
station STA) every ten minutes and arrive at B ten minutes later. The feed
(Monday 2026-11-02, America/New_York):
  - X1, NEW on route R, headsign "Extra to B", short name "X": A 09:07, B 09:17;
  - a DUPLICATED copy of K0900 as K0900-dup starting 09:33 (A 09:33, B 09:43
    plus a 60 s arrival delay: 09:44); K0900 itself still runs at 09:00;
  - K0920 DELETED (no row anywhere); K0930 CANCELED (rows, canceled);
  - K0940 REPLACED: leaves A 09:45 (delay 300 s) and reaches B 09:58 (a time);
  - two bad entities: a DUPLICATED without trip_properties, and an empty
    assigned_stop_id; they are skipped, counted, and the reason names them.
"""
import json
import time

import pytest
import requests

import schema_check
from gtfs_rt_pb import new_feed, pb2
from http_server import Server, import_files_with_realtime
from test_realtime_predicted import batch

DOC = schema_check.load_openapi()
DAY = "20261102"
NINE = "2026-11-02T09:00:00-05:00"


def hhmm(minutes):
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def trips():
    return [(f"K{h:02d}{m:02d}", h * 60 + m) for h in (8, 9) for m in range(0, 60, 10)] + [("K1000", 600)]


FEED = {
    "agency.txt": "agency_id,agency_name,agency_url,agency_timezone\n"
                  "A1,Trip Transit,https://example.com,America/New_York\n",
    "stops.txt": "stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station\n"
                 "STA,Station,40.0,-74.0,1,\n"
                 "A,Platform A,40.0,-74.0,0,STA\n"
                 "B,Stop B,40.001,-74.0,0,\n",
    "routes.txt": "route_id,agency_id,route_short_name,route_type\nR,A1,9,3\n",
    "trips.txt": "route_id,service_id,trip_id,trip_headsign\n" + "".join(f"R,WK,{t},To B\n" for t, _ in trips()),
    "stop_times.txt": "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n" + "".join(
        f"{t},{hhmm(m)},{hhmm(m)},A,1\n{t},{hhmm(m + 10)},{hhmm(m + 10)},B,2\n" for t, m in trips()),
    "calendar.txt": "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
                    "start_date,end_date\nWK,1,1,1,1,1,0,0,20261026,20261113\n",
}


def instant(text):
    import datetime
    return int(datetime.datetime.fromisoformat(text).timestamp())


def at(hh_mm):
    return instant(f"2026-11-02T{hh_mm}:00-05:00")


def trip_entity(m, entity_id, trip_id, relationship, start_date=DAY):
    g = pb2()
    e = m.entity.add()
    e.id = entity_id
    tu = e.trip_update
    if trip_id:
        tu.trip.trip_id = trip_id
    if start_date:
        tu.trip.start_date = start_date
    tu.trip.schedule_relationship = getattr(g.TripDescriptor, relationship)
    return tu


def updates():
    m = new_feed(timestamp=at("08:00"))
    tu = trip_entity(m, "new", "X1", "NEW")
    tu.trip.route_id = "R"
    tu.trip_properties.trip_headsign = "Extra to B"
    tu.trip_properties.trip_short_name = "X"
    u = tu.stop_time_update.add()
    u.stop_id = "A"
    u.departure.time = at("09:07")
    u = tu.stop_time_update.add()
    u.stop_id = "B"
    u.arrival.time = at("09:17")

    tu = trip_entity(m, "dup", "K0900", "DUPLICATED")
    tu.trip_properties.trip_id = "K0900-dup"
    tu.trip_properties.start_date = DAY
    tu.trip_properties.start_time = "09:33:00"
    u = tu.stop_time_update.add()
    u.stop_sequence = 2
    u.arrival.delay = 60

    trip_entity(m, "del", "K0920", "DELETED")
    trip_entity(m, "can", "K0930", "CANCELED")

    tu = trip_entity(m, "rep", "K0940", "REPLACEMENT")
    u = tu.stop_time_update.add()
    u.stop_sequence = 1
    u.departure.delay = 300
    u = tu.stop_time_update.add()
    u.stop_sequence = 2
    u.arrival.time = at("09:58")

    trip_entity(m, "bad-dup", "K0910", "DUPLICATED")   # no trip_properties
    tu = trip_entity(m, "bad-assigned", "K0950", "SCHEDULED")
    u = tu.stop_time_update.add()
    u.stop_sequence = 1
    u.departure.delay = 0
    u.stop_time_properties.assigned_stop_id = ""
    return m.SerializeToString()


@pytest.fixture(scope="module")
def feed():
    return import_files_with_realtime("realtime-trips", FEED, updates())


def board(base, time_, window=60, stop="A", op="stop-departures", **params):
    body = batch(base, [{"op": op, "stop": stop, "time": time_, "window": window, **params}])[0]
    key = "arrivals" if op == "stop-arrivals" else "departures"
    assert key in body, body
    schema_check.assert_matches(body, "StopArrivalsResponse" if key == "arrivals" else "StopDeparturesResponse",
                                DOC)
    return body


def ids(body, key="departures"):
    return [d["trip_id"] for d in body[key]]


EXPECTED_AT_A = ["K0900", "X1", "K0910", "K0930", "K0900-dup", "K0940", "K0950"]


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_board_shows_new_duplicated_replaced_and_hides_deleted(feed, mode):
    body = board(feed, NINE, realtime=mode)
    assert ids(body) == EXPECTED_AT_A
    rows = body["departures"]
    x1, k0930, dup, rep = rows[1], rows[3], rows[4], rows[5]
    assert x1["added"] is True and x1["trip_relationship"] == "NEW"
    assert x1["headsign"] == "Extra to B" and x1["departure"] == "2026-11-02T09:07:00-05:00"
    assert x1["predicted"] == x1["departure"] and x1["scheduled"] is None
    assert k0930["canceled"] is True and "added" not in k0930
    assert dup["trip_relationship"] == "DUPLICATED" and dup["headsign"] == "To B"
    assert dup["departure"] == "2026-11-02T09:33:00-05:00" and dup["stop_sequence"] == 1
    assert rep["trip_relationship"] == "REPLACEMENT" and rep["departure"] == "2026-11-02T09:45:00-05:00"
    # the original of the copy still runs, as scheduled
    assert rows[0]["departure"] == "2026-11-02T09:00:00-05:00" and "added" not in rows[0]


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_hidden_rows_take_no_place_under_the_limit(feed, mode):
    # 09:15-09:50: K0920 (deleted) and K0940 (replaced) are not rows at all
    body = board(feed, "2026-11-02T09:15:00-05:00", window=35, limit=2, realtime=mode)
    assert ids(body) == ["K0930", "K0900-dup"] and body["truncated"] is True
    body = board(feed, "2026-11-02T09:15:00-05:00", window=35, limit=3, realtime=mode)
    assert ids(body) == ["K0930", "K0900-dup", "K0940"] and body["truncated"] is False


def test_station_and_nearby_boards(feed):
    assert ids(board(feed, NINE, stop="STA")) == EXPECTED_AT_A
    for mode in ("predicted", "scheduled"):
        near = batch(feed, [{"op": "departures", "lat": 40.0, "lon": -74.0, "radius": 50, "time": NINE,
                             "window": 60, "realtime": mode}])[0]
        schema_check.assert_matches(near, "DeparturesResponse", DOC)
        assert ids(near) == EXPECTED_AT_A
        assert near["departures"][1]["trip_relationship"] == "NEW"


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_arrivals_and_both(feed, mode):
    t = "2026-11-02T09:40:00-05:00"
    arr = board(feed, t, window=20, stop="B", op="stop-arrivals", realtime=mode)
    # K0930 canceled at 09:40, the copy at 09:44 (09:43 + 60 s), the replacement at 09:58;
    # the replaced K0940's scheduled 09:50 is not shown
    assert ids(arr, "arrivals") == ["K0930", "K0900-dup", "K0940"]
    assert arr["arrivals"][1]["arrival"] == "2026-11-02T09:44:00-05:00"
    assert arr["arrivals"][2]["trip_relationship"] == "REPLACEMENT"
    both = board(feed, t, window=20, stop="B", kind="both", realtime=mode)
    assert ids(both) == ["K0930", "K0900-dup", "K0940"]


def trip(base, trip_id, **params):
    body = batch(base, [{"op": "trip", "trip": trip_id, **params}])[0]
    assert "trip" in body, body
    schema_check.assert_matches(body, "TripResponse", DOC)
    return body["trip"]


def test_realtime_only_trips_answer_at_trips(feed):
    x1 = trip(feed, "X1")
    assert x1["realtime_only"] is True and x1["trip_relationship"] == "NEW"
    assert x1["headsign"] == "Extra to B" and x1["trip_short_name"] == "X" and x1["service_id"] is None
    assert x1["service_date"] == "2026-11-02" and x1["route_id"] == "R"
    assert [(s["stop_id"], s["arrival"], s["departure"]) for s in x1["stop_times"]] == [
        ("A", None, "2026-11-02T09:07:00-05:00"), ("B", "2026-11-02T09:17:00-05:00", None)]
    dup = trip(feed, "K0900-dup", date="2026-11-02")
    assert dup["trip_relationship"] == "DUPLICATED" and dup["source_trip_id"] == "K0900"
    assert dup["runs_on_date"] is True
    assert [(s["stop_sequence"], s["departure_secs"], s["arrival_secs"]) for s in dup["stop_times"]] == [
        (1, 9 * 3600 + 33 * 60, None), (2, None, 9 * 3600 + 44 * 60)]
    # a timetable trip answers from the timetable; an unknown id is 404
    assert "realtime_only" not in trip(feed, "K0940")
    missing = batch(feed, [{"op": "trip", "trip": "X1", "date": "2026-11-03"},
                           {"op": "trip", "trip": "NOPE"}])
    assert [b["error"]["status"] for b in missing] == [404, 404]


def test_server_export_metrics_and_rejections(feed):
    g = pb2()
    with Server(feed / "data", "--gtfs-rt", str(feed / "rt.pb"), "--rt-interval", "30") as s:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            r = requests.get(s.url("/v1/stops/A/departures"), params={"time": NINE}, timeout=10)
            if [d["trip_id"] for d in r.json()["departures"]] == EXPECTED_AT_A:
                break
            time.sleep(0.1)
        assert [d["trip_id"] for d in r.json()["departures"]] == EXPECTED_AT_A
        r = requests.get(s.url("/v1/trips/X1"), timeout=10)
        assert r.status_code == 200 and r.json()["trip"]["realtime_only"] is True
        metrics = requests.get(s.url("/metrics"), timeout=10).text
        assert 'transitd_rt_entities{kind="rejected"} 2' in metrics
        assert 'transitd_rt_trip_updates{outcome="deleted"} 1' in metrics
        assert 'transitd_rt_trip_updates{outcome="duplicated"} 1' in metrics
        assert 'transitd_rt_trip_updates{outcome="replaced"} 1' in metrics
        assert 'transitd_rt_trip_updates{outcome="added"} 3' in metrics
        # the export carries the new kinds, TripProperties and all
        out = g.FeedMessage()
        out.ParseFromString(requests.get(s.url("/gtfs-rt/trip-updates.pb"), timeout=10).content)
        by_id = {e.id: e.trip_update for e in out.entity}
        assert set(by_id) == {"new", "dup", "del", "can", "rep"}
        assert by_id["new"].trip.schedule_relationship == g.TripDescriptor.NEW
        assert by_id["new"].trip_properties.trip_headsign == "Extra to B"
        assert by_id["dup"].trip_properties.trip_id == "K0900-dup"
        assert by_id["dup"].trip_properties.start_time == "09:33:00"
        assert by_id["del"].trip.schedule_relationship == g.TripDescriptor.DELETED
    # the reason names the first skipped entity and its field
    assert ('2 entities skipped; the first: entity "bad-dup": DUPLICATED trip without '
            'trip_properties.trip_id') in s.log()
