"""Platform changes, TripProperties of timetable trips, a trip's vehicle and
carriages (issue #26): StopTimeProperties.assigned_stop_id moves a row to
the assigned stop's boards (stop, station, nearby, arrivals, kind=both; both
realtime modes; limit, paging and wheelchair=1 counted where the row is
served), the row naming its scheduled stop and showing `assigned_stop`;
/v1/trips/{id} shows the assigned stops, the instance's TripProperties
(headsign, short name, shape with include=shape) and its vehicle; vehicles'
multi_carriage_details are shown and exported; pushed boards of both stops
follow a platform change. Feeds are built with the protobuf package
(gtfs_rt_pb.py), not by transitd's encoder.

The timetable: trips P0900..P0950 (headsign "To B", shape SH1, wheelchair
accessible) leave platform A1 of station STA every ten minutes and arrive at
B ten minutes later. A2 is STA's other platform, B2 a stop beside B. A1 has
wheelchair_boarding 2, A2 1. The feed (Monday 2026-11-02, America/New_York):
  - P0900: departure at A1 assigned to A2, arrival at B assigned to B2;
  - P0910: NO_DATA at A1 with assigned_stop_id A2 (the spec's way to assign
    a stop without predictions);
  - P0920: 600 s late at A1 and assigned to A2 (predicted 09:30 there);
  - P0930: assigned to "NOPE", a stop the dataset lacks (skipped, counted,
    logged by entity id and field; its delay still applies);
  - P0940: TripProperties headsign "Short to B", short name "S", shape SH2,
    and vehicle V1 with two carriages.
"""
import json
import os
import shutil
import time

import pytest
import requests

import schema_check
from gtfs_rt_pb import new_feed, pb2
from http_server import Server, import_files_with_realtime
from test_board_streams import EventStream, publish
from test_cli_query import run_query
from test_realtime_predicted import batch

DOC = schema_check.load_openapi()
DAY = "20261102"
NINE = "2026-11-02T09:00:00-05:00"
TRIPS = [(f"P09{m:02d}", 540 + m) for m in range(0, 60, 10)]


def hhmm(minutes):
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


FEED = {
    "agency.txt": "agency_id,agency_name,agency_url,agency_timezone\n"
                  "A1,Platform Transit,https://example.com,America/New_York\n",
    "stops.txt": "stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station,platform_code,"
                 "wheelchair_boarding\n"
                 "STA,Station,40.0,-74.0,1,,,1\n"
                 "A1,Platform A1,40.0,-74.0,0,STA,1,2\n"
                 "A2,Platform A2,40.0002,-74.0,0,STA,2,1\n"
                 "B,Stop B,40.002,-74.0,0,,,0\n"
                 "B2,Stop B2,40.0022,-74.0,0,,,0\n",
    "routes.txt": "route_id,agency_id,route_short_name,route_type\nR,A1,9,3\n",
    "trips.txt": "route_id,service_id,trip_id,trip_headsign,shape_id,wheelchair_accessible\n" +
                 "".join(f"R,WK,{t},To B,SH1,1\n" for t, _ in TRIPS),
    "stop_times.txt": "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n" + "".join(
        f"{t},{hhmm(m)},{hhmm(m)},A1,1\n{t},{hhmm(m + 10)},{hhmm(m + 10)},B,2\n" for t, m in TRIPS),
    "shapes.txt": "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\n"
                  "SH1,40.0,-74.0,1\nSH1,40.002,-74.0,2\n"
                  "SH2,40.0,-74.0,1\nSH2,40.001,-74.001,2\nSH2,40.002,-74.0,3\n",
    "calendar.txt": "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
                    "start_date,end_date\nWK,1,1,1,1,1,0,0,20261026,20261113\n",
}


def instant(text):
    import datetime
    return int(datetime.datetime.fromisoformat(text).timestamp())


def at(hh_mm):
    return instant(f"2026-11-02T{hh_mm}:00-05:00")


def trip_update(m, entity_id, trip_id):
    e = m.entity.add()
    e.id = entity_id
    e.trip_update.trip.trip_id = trip_id
    e.trip_update.trip.start_date = DAY
    return e.trip_update


def stop_update(tu, seq, delay=None, arrival_delay=None, assigned=None, no_data=False):
    g = pb2()
    u = tu.stop_time_update.add()
    u.stop_sequence = seq
    if delay is not None:
        u.departure.delay = delay
    if arrival_delay is not None:
        u.arrival.delay = arrival_delay
    if no_data:
        u.schedule_relationship = g.TripUpdate.StopTimeUpdate.NO_DATA
    if assigned is not None:
        u.stop_time_properties.assigned_stop_id = assigned
    return u


def updates(assign_p0900=True, vehicle_time=None):
    g = pb2()
    m = new_feed(timestamp=at("08:00"))
    tu = trip_update(m, "mv", "P0900")
    stop_update(tu, 1, delay=0, assigned="A2" if assign_p0900 else None)
    stop_update(tu, 2, arrival_delay=0, assigned="B2" if assign_p0900 else None)
    stop_update(trip_update(m, "nd", "P0910"), 1, no_data=True, assigned="A2")
    stop_update(trip_update(m, "late", "P0920"), 1, delay=600, assigned="A2")
    stop_update(trip_update(m, "unk", "P0930"), 1, delay=60, assigned="NOPE")
    tu = trip_update(m, "props", "P0940")
    tu.trip_properties.trip_headsign = "Short to B"
    tu.trip_properties.trip_short_name = "S"
    tu.trip_properties.shape_id = "SH2"
    stop_update(tu, 1, delay=0)
    e = m.entity.add()
    e.id = "veh"
    v = e.vehicle
    v.vehicle.id = "V1"
    v.trip.trip_id = "P0940"
    v.trip.start_date = DAY
    v.position.latitude, v.position.longitude = 40.0001, -74.0
    v.timestamp = int(time.time()) if vehicle_time is None else vehicle_time
    for seq, label, occ, pct in ((1, "front", "FULL", 98), (2, "rear", "MANY_SEATS_AVAILABLE", 20)):
        c = v.multi_carriage_details.add()
        c.id = f"C{seq}"
        c.label = label
        c.occupancy_status = getattr(g.VehiclePosition, occ)
        c.occupancy_percentage = pct
        c.carriage_sequence = seq
    return m.SerializeToString()


@pytest.fixture(scope="module")
def feed():
    return import_files_with_realtime("realtime-platforms", FEED, updates())


def board(base, stop, time_=NINE, window=60, op="stop-departures", **params):
    body = batch(base, [{"op": op, "stop": stop, "time": time_, "window": window, **params}])[0]
    key = "arrivals" if op == "stop-arrivals" else "departures"
    assert key in body, body
    schema_check.assert_matches(body, "StopArrivalsResponse" if key == "arrivals" else "StopDeparturesResponse",
                                DOC)
    return body


def ids(body, key="departures"):
    return [d["trip_id"] for d in body[key]]


A2 = {"id": "A2", "name": "Platform A2", "platform_code": "2", "lat": 40.0002, "lon": -74}


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_rows_leave_the_scheduled_stop_and_appear_at_the_assigned_one(feed, mode):
    assert ids(board(feed, "A1", realtime=mode)) == ["P0930", "P0940", "P0950"]
    moved = board(feed, "A2", realtime=mode)["departures"]
    assert [d["trip_id"] for d in moved] == ["P0900", "P0910", "P0920"]
    for row in moved:   # the scheduled stop stays the row's; the assigned one is shown
        assert row["stop_id"] == "A1" and row["assigned_stop"] == A2
    late = moved[2]
    assert late["scheduled"] == "2026-11-02T09:20:00-05:00"
    assert late["predicted"] == "2026-11-02T09:30:00-05:00" and late["delay_s"] == 600
    assert moved[1]["predicted"] is None and moved[1]["realtime"] is True   # NO_DATA: assigned, no prediction
    # chosen by predicted time at the assigned stop: 09:25-09:35 holds P0920 only by prediction
    window = board(feed, "A2", time_="2026-11-02T09:25:00-05:00", window=10, realtime=mode)
    assert ids(window) == (["P0920"] if mode == "predicted" else [])
    # rows at A1 that did not move carry no assigned_stop
    assert all("assigned_stop" not in d for d in board(feed, "A1", realtime=mode)["departures"])


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_station_and_nearby_boards_show_each_row_once(feed, mode):
    every = ["P0900", "P0910", "P0920", "P0930", "P0940", "P0950"]
    station = board(feed, "STA", realtime=mode)
    assert ids(station) == every
    near = batch(feed, [{"op": "departures", "lat": 40.0, "lon": -74.0, "radius": 60, "time": NINE, "window": 60,
                         "realtime": mode}])[0]
    schema_check.assert_matches(near, "DeparturesResponse", DOC)
    assert ids(near) == every
    by_trip = {d["trip_id"]: d for d in near["departures"]}
    assert by_trip["P0900"]["distance_m"] == 22 and by_trip["P0930"]["distance_m"] == 0
    assert by_trip["P0900"]["assigned_stop"]["id"] == "A2"
    # a radius reaching A1 but not A2 leaves the moved rows out
    near = batch(feed, [{"op": "departures", "lat": 40.0, "lon": -74.0, "radius": 10, "time": NINE, "window": 60,
                         "realtime": mode}])[0]
    assert ids(near) == ["P0930", "P0940", "P0950"]


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_limit_counts_rows_where_they_are_served(feed, mode):
    body = board(feed, "A1", limit=2, realtime=mode)
    assert ids(body) == ["P0930", "P0940"] and body["truncated"] is True
    body = board(feed, "A2", limit=2, realtime=mode)
    assert ids(body) == ["P0900", "P0910"] and body["truncated"] is True
    body = board(feed, "A2", limit=3, realtime=mode)
    assert ids(body) == ["P0900", "P0910", "P0920"] and body["truncated"] is False


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_wheelchair_uses_the_assigned_stops_accessibility(feed, mode):
    # A1 cannot take a wheelchair (2), A2 can (1): only the moved rows are accessible
    assert ids(board(feed, "A1", realtime=mode, wheelchair=1)) == []
    assert ids(board(feed, "A2", realtime=mode, wheelchair=1)) == ["P0900", "P0910", "P0920"]
    assert ids(board(feed, "STA", realtime=mode, wheelchair=1)) == ["P0900", "P0910", "P0920"]


@pytest.mark.parametrize("mode", ["predicted", "scheduled"])
def test_arrivals_and_both_follow_the_assignment(feed, mode):
    arr = board(feed, "B2", op="stop-arrivals", realtime=mode)
    assert ids(arr, "arrivals") == ["P0900"]
    assert arr["arrivals"][0]["stop_id"] == "B" and arr["arrivals"][0]["assigned_stop"]["id"] == "B2"
    assert ids(board(feed, "B", op="stop-arrivals", realtime=mode), "arrivals") == ["P0910", "P0920", "P0930",
                                                                                    "P0940"]
    both = board(feed, "B2", kind="both", realtime=mode)
    assert ids(both) == ["P0900"] and both["departures"][0]["arrival"] == "2026-11-02T09:10:00-05:00"


def trip(base, trip_id, **params):
    body = batch(base, [{"op": "trip", "trip": trip_id, **params}])[0]
    assert "trip" in body, body
    schema_check.assert_matches(body, "TripResponse", DOC)
    return body["trip"]


def test_trips_show_assigned_stops_and_trip_properties(feed):
    p0900 = trip(feed, "P0900", date="2026-11-02")
    assert [s.get("assigned_stop", {}).get("id") for s in p0900["stop_times"]] == ["A2", "B2"]
    assert p0900["stop_times"][0]["stop_id"] == "A1" and p0900["stop_times"][0]["assigned_stop"] == A2
    # another day's instance has no platform change
    assert all("assigned_stop" not in s for s in trip(feed, "P0900", date="2026-11-03")["stop_times"])
    p0940 = trip(feed, "P0940", date="2026-11-02", include="shape")
    assert p0940["headsign"] == "Short to B" and p0940["trip_short_name"] == "S"
    assert p0940["shape_id"] == "SH2" and p0940["shape"]["id"] == "SH2" and p0940["shape"]["points"] == 3
    other = trip(feed, "P0940", date="2026-11-03", include="shape")
    assert other["headsign"] == "To B" and other["shape_id"] == "SH1" and other["shape"]["id"] == "SH1"
    assert "trip_short_name" not in other
    # the rows of that instance only take the headsign
    rows = {d["trip_id"]: d for d in board(feed, "A1")["departures"]}
    assert rows["P0940"]["headsign"] == "Short to B" and rows["P0950"]["headsign"] == "To B"
    monday_next = board(feed, "A1", time_="2026-11-03T09:00:00-05:00")
    assert {d["trip_id"]: d["headsign"] for d in monday_next["departures"]}["P0940"] == "To B"


def test_server_pages_logs_metrics_vehicle_carriages_and_export(feed):
    g = pb2()
    with Server(feed / "data", "--gtfs-rt", str(feed / "rt.pb"), "--rt-interval", "30") as s:
        deadline = time.monotonic() + 10
        url = s.url("/v1/stops/A2/departures")
        while time.monotonic() < deadline:
            r = requests.get(url, params={"time": NINE, "limit": 2}, timeout=10)
            if [d["trip_id"] for d in r.json()["departures"]] == ["P0900", "P0910"]:
                break
            time.sleep(0.1)
        page = r.json()
        assert [d["trip_id"] for d in page["departures"]] == ["P0900", "P0910"] and page["next"]
        nxt = requests.get(s.url(page["next"]), timeout=10).json()
        assert [d["trip_id"] for d in nxt["departures"]] == ["P0920"] and nxt["next"] is None
        # the vehicle of the trip instance, with its carriages, as rows show it
        t = requests.get(s.url("/v1/trips/P0940"), params={"date": "2026-11-02"}, timeout=10)
        assert t.status_code == 200 and int(t.headers["Cache-Control"].split("=")[1]) <= 30
        schema_check.assert_matches(t.json(), "TripResponse", DOC)
        vehicle = t.json()["trip"]["vehicle"]
        row = {d["trip_id"]: d for d in requests.get(s.url("/v1/stops/A1/departures"), params={"time": NINE},
                                                     timeout=10).json()["departures"]}["P0940"]
        assert vehicle == row["vehicle"] and vehicle["id"] == "V1"
        assert vehicle["carriages"] == [
            {"id": "C1", "label": "front", "occupancy_status": "FULL", "occupancy_percentage": 98,
             "carriage_sequence": 1},
            {"id": "C2", "label": "rear", "occupancy_status": "MANY_SEATS_AVAILABLE", "occupancy_percentage": 20,
             "carriage_sequence": 2}]
        assert "vehicle" not in requests.get(s.url("/v1/trips/P0950"), params={"date": "2026-11-02"},
                                             timeout=10).json()["trip"]
        listed = requests.get(s.url("/v1/vehicles"), params={"bbox": "-74.1,39.9,-73.9,40.1"}, timeout=10).json()
        assert listed["vehicles"][0]["carriages"] == vehicle["carriages"]
        out = g.FeedMessage()
        out.ParseFromString(requests.get(s.url("/gtfs-rt/vehicle-positions.pb"), timeout=10).content)
        cars = out.entity[0].vehicle.multi_carriage_details
        assert [(c.id, c.label, c.occupancy_status, c.occupancy_percentage, c.carriage_sequence) for c in cars] == [
            ("C1", "front", g.VehiclePosition.FULL, 98, 1), ("C2", "rear", g.VehiclePosition.MANY_SEATS_AVAILABLE,
                                                             20, 2)]
        metrics = requests.get(s.url("/metrics"), timeout=10).text
        assert 'transitd_rt_assigned_stops{outcome="moved"} 4' in metrics
        assert 'transitd_rt_assigned_stops{outcome="unknown_stop"} 1' in metrics
        assert 'transitd_rt_trip_updates{outcome="trip_properties"} 1' in metrics
        # the export keeps the assignments
        tu = g.FeedMessage()
        tu.ParseFromString(requests.get(s.url("/gtfs-rt/trip-updates.pb"), timeout=10).content)
        by_id = {e.id: e.trip_update for e in tu.entity}
        assert by_id["mv"].stop_time_update[0].stop_time_properties.assigned_stop_id == "A2"
    assert ('1 stop_time_update parts skipped; the first: entity "unk": stop_time_update 0: '
            'stop_time_properties.assigned_stop_id "NOPE" is not a stop of the dataset') in s.log()
    # the rest of that update still applies: P0930 runs 60 s late at A1
    row = {d["trip_id"]: d for d in board(feed, "A1")["departures"]}["P0930"]
    assert row["delay_s"] == 60 and "assigned_stop" not in row


def test_pushed_boards_of_both_stops_follow_a_platform_change(feed):
    base = feed.parent / "realtime-platforms-push"
    shutil.rmtree(base, ignore_errors=True)
    shutil.copytree(feed, base, symlinks=True)
    publish(base / "rt.pb", updates())
    s = Server(base / "data", "--gtfs-rt", str(base / "rt.pb"), "--rt-interval", "1", "--stream-keepalive", "1",
               "--quiet")
    s.start()
    try:
        a1 = f"/v1/stops/A1/departures?time={NINE.replace('+', '%2B')}&window=60"
        a2 = f"/v1/stops/A2/departures?time={NINE.replace('+', '%2B')}&window=60"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and '"assigned_stop"' not in requests.get(s.url(a2), timeout=10).text:
            time.sleep(0.05)
        st1, st2 = EventStream(s.port, a1), EventStream(s.port, a2)
        first1, first2 = st1.next_event(), st2.next_event()
        assert [d["trip_id"] for d in json.loads(first1["data"])["departures"]][0] == "P0930"
        assert [d["trip_id"] for d in json.loads(first2["data"])["departures"]][0] == "P0900"
        publish(base / "rt.pb", updates(assign_p0900=False))   # P0900 back at A1
        ev1, ev2 = st1.next_event(), st2.next_event()
        assert ev1 and [d["trip_id"] for d in json.loads(ev1["data"])["departures"]][0] == "P0900"
        assert ev2 and [d["trip_id"] for d in json.loads(ev2["data"])["departures"]] == ["P0910", "P0920"]
        st1.close()
        st2.close()
    finally:
        rc, _ = s.stop()
        s.assert_clean_exit(rc)
    assert os.path.exists(base / "rt.pb")


def test_a_carriage_breaking_a_rule_skips_its_vehicle(feed):
    g = pb2()
    m = new_feed(timestamp=int(time.time()))
    for entity_id, seq in (("good", 1), ("bad", 0)):
        e = m.entity.add()
        e.id = entity_id
        e.vehicle.vehicle.id = entity_id.upper()
        e.vehicle.position.latitude, e.vehicle.position.longitude = 40.0, -74.0
        e.vehicle.timestamp = int(time.time())
        c = e.vehicle.multi_carriage_details.add()
        c.id = "C"
        c.occupancy_status = g.VehiclePosition.EMPTY
        c.carriage_sequence = seq   # 0: the first carriage is 1
    path = feed / "carriages.pb"
    path.write_bytes(m.SerializeToString())
    p = run_query(feed / "data", "--gtfs-rt", str(path), "vehicles")
    assert p.returncode == 0, p.stderr
    listed = json.loads(p.stdout)["vehicles"]
    assert [v["id"] for v in listed] == ["GOOD"]
    # no occupancy_percentage given: null, not the proto's default of -1
    assert listed[0]["carriages"] == [{"id": "C", "label": None, "occupancy_status": "EMPTY",
                                       "occupancy_percentage": None, "carriage_sequence": 1}]
    assert 'entity "bad": multi_carriage_details 0: carriage_sequence is 0' in p.stderr
