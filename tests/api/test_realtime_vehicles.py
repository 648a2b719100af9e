"""Vehicle positions and occupancy (issue #26): VehiclePosition entities from
any `--gtfs-rt` source (mixed with trip updates and alerts), matched to trip
instances; `GET /v1/vehicles` by bbox or route (400 naming the parameter, a
bounded page with `next`, ETag/304); the vehicle and the occupancy on the
departure and arrival rows of a running trip (a stop_time_update's
departure_occupancy_status before the vehicle's); the newest position per
vehicle across sources; stale vehicles dropped after --rt-max-age; the export
at /gtfs-rt/vehicle-positions.pb decoded by Google's protobuf package; a
replica mirroring it; /metrics and /readyz counts.

Every feed is built with the protobuf package (gtfs_rt_pb.py), not by the
project's code.
"""
import time
import urllib.parse

import requests

import schema_check
from gtfs_rt_pb import add_trip_update, new_feed, pb2
from http_server import Server
from test_cli_query import run_query
from test_realtime import MONDAY, departures, metric, tiny_data, wait_for  # noqa: F401 (a fixture)

DOC = schema_check.load_openapi()


def add_vehicle(message, entity_id, vehicle_id=None, trip_id=None, start_date="20261102", lat=40.0005,
                lon=-74.0, timestamp=None, occupancy=None, percentage=None, stop_id=None, status=None,
                bearing=None, speed=None, label=None, route_id=None, plate=None):
    g = pb2()
    e = message.entity.add()
    e.id = entity_id
    v = e.vehicle
    if vehicle_id:
        v.vehicle.id = vehicle_id
    if label:
        v.vehicle.label = label
    if plate:
        v.vehicle.license_plate = plate
    if trip_id:
        v.trip.trip_id = trip_id
        if start_date:
            v.trip.start_date = start_date
    if route_id:
        v.trip.route_id = route_id
    if lat is not None:
        v.position.latitude, v.position.longitude = lat, lon
        if bearing is not None:
            v.position.bearing = bearing
        if speed is not None:
            v.position.speed = speed
    v.timestamp = int(time.time()) if timestamp is None else timestamp
    if occupancy:
        v.occupancy_status = getattr(g.VehiclePosition, occupancy)
    if percentage is not None:
        v.occupancy_percentage = percentage
    if stop_id:
        v.stop_id = stop_id
        v.current_status = getattr(g.VehiclePosition, status or "IN_TRANSIT_TO")
    return e


def mixed_feed(now):
    """Trip updates, vehicles and an alert in one feed: T1 (with FULL leaving
    S2) and its vehicle V1, T2's vehicle V2, a vehicle with no trip (V3, far
    away) and one an hour old (V4)."""
    g = pb2()
    m = new_feed(now)
    tu = add_trip_update(m, "tu-1", "T1", "20261102", stops=[(2, {"departure_delay": 60})])
    tu.trip_update.stop_time_update[0].departure_occupancy_status = g.VehiclePosition.FULL
    add_vehicle(m, "veh-1", "V1", "T1", lat=40.0005, lon=-74.0, bearing=12.5, speed=8.25, label="4021",
                occupancy="MANY_SEATS_AVAILABLE", percentage=35, stop_id="S2", status="IN_TRANSIT_TO",
                plate="NY 1234")
    add_vehicle(m, "veh-2", "V2", "T2", lat=40.009, lon=-74.0005, occupancy="STANDING_ROOM_ONLY")
    add_vehicle(m, "veh-3", "V3", lat=41.5, lon=-75.5)
    add_vehicle(m, "veh-4", "V4", "T1", start_date="20261103", timestamp=now - 3600)
    e = m.entity.add()
    e.id = "al-1"
    e.alert.informed_entity.add().stop_id = "S2"
    e.alert.header_text.translation.add().text = "Elevator out"
    return m


def vehicles(server, **params):
    r = requests.get(server.url("/v1/vehicles"), params=params, timeout=10)
    assert r.status_code == 200, r.text
    schema_check.assert_matches(r.json(), "VehiclesResponse", DOC)
    return r.json()


def problem(server, path, **params):
    r = requests.get(server.url(path), params=params, timeout=10)
    assert r.headers["Content-Type"].startswith("application/problem+json"), r.text
    return r.status_code, r.json()


def test_vehicles_rows_filters_and_export(tiny_data):  # noqa: F811
    now = int(time.time())
    rt = tiny_data / "rt-vehicles.pb"
    rt.write_bytes(mixed_feed(now).SerializeToString())
    with Server(tiny_data / "data", "--gtfs-rt", str(rt), "--rt-interval", "1") as s:
        assert wait_for(lambda: len(vehicles(s)["vehicles"]) == 3)
        body = vehicles(s)
        # by id; the hour-old V4 is stale (--rt-max-age 600 by default)
        assert [v["id"] for v in body["vehicles"]] == ["V1", "V2", "V3"]
        assert body["truncated"] is False and body["next"] is None
        v1 = body["vehicles"][0]
        assert v1["label"] == "4021" and v1["license_plate"] == "NY 1234"
        assert abs(v1["lat"] - 40.0005) < 1e-5 and abs(v1["lon"] + 74.0) < 1e-5
        assert v1["bearing"] == 12.5 and v1["speed_mps"] == 8.2 or v1["speed_mps"] == 8.3
        assert v1["stop_status"] == "IN_TRANSIT_TO" and v1["stop_id"] == "S2"
        assert v1["occupancy_status"] == "MANY_SEATS_AVAILABLE" and v1["occupancy_percentage"] == 35
        assert v1["route_id"] == "R1"   # the matched trip's route
        assert v1["trip"]["trip_id"] == "T1" and v1["trip"]["matched"] is True
        assert v1["trip"]["service_date"] == "2026-11-02"
        v3 = body["vehicles"][2]
        assert v3["trip"] is None and v3["route_id"] is None and v3["stop_status"] is None

        # filters: a box around the tiny feed, a route, both; paging by id
        near = "-74.01,39.99,-73.99,40.02"
        assert [v["id"] for v in vehicles(s, bbox=near)["vehicles"]] == ["V1", "V2"]
        assert [v["id"] for v in vehicles(s, route="R2")["vehicles"]] == ["V2"]
        assert [v["id"] for v in vehicles(s, route="R1", bbox=near)["vehicles"]] == ["V1"]
        assert [v["id"] for v in vehicles(s, bbox="170,-90,-170,90")["vehicles"]] == []   # across 180°
        page = vehicles(s, limit=2)
        assert [v["id"] for v in page["vehicles"]] == ["V1", "V2"] and page["truncated"] is True
        assert page["next_after"] == "V2"
        follow = requests.get(s.url(page["next"]), timeout=10).json()
        assert [v["id"] for v in follow["vehicles"]] == ["V3"] and follow["next"] is None

        # errors name the parameter
        for bad in ["1,2,3", "a,b,c,d", "-74,41,-73,40", "0,0,200,1", "nan,0,1,1", "1,2,3,4,5"]:
            status, p = problem(s, "/v1/vehicles", bbox=bad)
            assert status == 400 and p["detail"].startswith("bbox"), (bad, p)
        status, p = problem(s, "/v1/vehicles", route="NOPE")
        assert status == 404 and "route 'NOPE'" in p["detail"]
        status, p = problem(s, "/v1/vehicles", limit=0)
        assert status == 400 and "limit" in p["detail"]
        status, p = problem(s, "/v1/vehicles", color="red")
        assert status == 400 and "color" in p["detail"]

        # ETag and 304
        r = requests.get(s.url("/v1/vehicles"), params={"bbox": near}, timeout=10)
        again = requests.get(s.url("/v1/vehicles"), params={"bbox": near},
                             headers={"If-None-Match": r.headers["ETag"]}, timeout=10)
        assert again.status_code == 304

        # rows: T1 at S2 carries V1 and the update's occupancy (FULL) before the vehicle's
        rows = [d for d in departures(s, "S2") if d["trip_id"] == "T1"]
        assert rows[0]["vehicle"]["id"] == "V1" and rows[0]["occupancy_status"] == "FULL"
        assert rows[0]["vehicle"]["occupancy_status"] == "MANY_SEATS_AVAILABLE"
        # every member but carriages, which only a vehicle with multi_carriage_details has
        assert set(rows[0]["vehicle"]) == set(DOC["components"]["schemas"]["RowVehicle"]["properties"]) - {"carriages"}
        # at P1 (no stop_time_update there) the vehicle's occupancy
        p1 = [d for d in departures(s, "P1") if d["trip_id"] == "T1"]
        assert p1[0]["vehicle"]["id"] == "V1" and p1[0]["occupancy_status"] == "MANY_SEATS_AVAILABLE"
        # arrivals and nearby boards too
        arr = requests.get(s.url("/v1/stops/S3/arrivals"), params={"time": MONDAY, "window": 60}, timeout=10).json()
        schema_check.assert_matches(arr, "StopArrivalsResponse", DOC)
        assert [a["vehicle"]["id"] for a in arr["arrivals"] if a["trip_id"] == "T1"] == ["V1"]
        near_rows = requests.get(s.url("/v1/departures"), params={"lat": 40.0, "lon": -74.0, "time": MONDAY,
                                                                  "window": 60}, timeout=10).json()
        schema_check.assert_matches(near_rows, "DeparturesResponse", DOC)
        assert any(d.get("vehicle", {}).get("id") == "V1" for d in near_rows["departures"])
        # T2 (25:30, Monday's service) has V2; T3 on Saturday has no vehicle
        late = [d for d in departures(s, "S2", "2026-11-03T01:00:00-05:00") if d["trip_id"] == "T2"]
        assert late[0]["vehicle"]["id"] == "V2" and late[0]["occupancy_status"] == "STANDING_ROOM_ONLY"
        sat = departures(s, "S3", "2026-11-07T08:30:00-05:00")
        assert sat and "vehicle" not in sat[0] and "occupancy_status" not in sat[0]

        # the export, decoded by the protobuf package, and its JSON form
        r = requests.get(s.url("/gtfs-rt/vehicle-positions.pb"), timeout=10)
        assert r.status_code == 200 and r.headers["Content-Type"] == "application/x-protobuf"
        m = pb2().FeedMessage()
        m.ParseFromString(r.content)
        assert m.header.timestamp == now
        got = {e.id: e.vehicle for e in m.entity}
        assert sorted(got) == ["veh-1", "veh-2", "veh-3"]
        assert all(not e.HasField("trip_update") and not e.HasField("alert") for e in m.entity)
        e1 = got["veh-1"]
        assert e1.vehicle.id == "V1" and e1.vehicle.label == "4021" and e1.vehicle.license_plate == "NY 1234"
        assert e1.trip.trip_id == "T1" and e1.trip.start_date == "20261102"
        assert abs(e1.position.latitude - 40.0005) < 1e-5 and e1.position.bearing == 12.5
        assert e1.occupancy_status == pb2().VehiclePosition.MANY_SEATS_AVAILABLE and e1.occupancy_percentage == 35
        assert e1.stop_id == "S2" and e1.timestamp == now
        j = requests.get(s.url("/gtfs-rt/vehicle-positions.pb"), params={"format": "json"}, timeout=10).json()
        schema_check.assert_matches(j, "FeedMessageJson", DOC)
        assert sorted(e["id"] for e in j["entity"]) == ["veh-1", "veh-2", "veh-3"]
        # the trip-updates export still holds only trip updates
        tu = pb2().FeedMessage()
        tu.ParseFromString(requests.get(s.url("/gtfs-rt/trip-updates.pb"), timeout=10).content)
        assert [e.id for e in tu.entity] == ["tu-1"]
        assert tu.entity[0].trip_update.stop_time_update[0].departure_occupancy_status == \
            pb2().VehiclePosition.FULL

        # `transitd query` answers the same bytes, rows included
        for args, path, params in [(["vehicles", "--route", "R1"], "/v1/vehicles", {"route": "R1"}),
                                   (["stop-departures", "--stop", "S2", "--time", MONDAY], "/v1/stops/S2/departures",
                                    {"time": MONDAY})]:
            q = run_query(tiny_data / "data", "--gtfs-rt", str(rt), *args)
            assert q.returncode == 0, q.stderr
            assert q.stdout.rstrip("\n") == requests.get(s.url(path), params=params, timeout=10).text

        # metrics and /readyz count them
        assert metric(s, 'transitd_rt_vehicles{outcome="shown"}') == 3
        assert metric(s, 'transitd_rt_vehicles{outcome="stale"}') == 1
        assert metric(s, 'transitd_rt_vehicles{outcome="matched"}') == 2
        assert metric(s, 'transitd_rt_entities{kind="vehicle"}') == 4
        assert metric(s, f'transitd_rt_source_vehicles{{source="{rt}"}}') == 4
        ready = requests.get(s.url("/readyz"), timeout=10).json()
        schema_check.assert_matches(ready, "ReadyResponse", DOC)
        assert ready["realtime_sources"][0]["vehicles"] == 4
        assert ready["realtime_sources"][0]["entities"] == 6


def test_vehicles_merge_newest_and_go_stale(tiny_data):  # noqa: F811
    """Two sources report V1: the newest position wins whichever source has
    the newer feed; a vehicle older than --rt-max-age leaves the list, the
    rows and the export at a later poll, with the same feed bytes."""
    a, b = tiny_data / "veh-a.pb", tiny_data / "veh-b.pb"

    def write_feeds():
        now = int(time.time())
        fa = new_feed(now + 5)   # the newer feed, with the older position
        add_vehicle(fa, "a1", "V1", "T1", lat=40.001, timestamp=now - 1)
        fb = new_feed(now)
        add_vehicle(fb, "b1", "V1", "T1", lat=40.002, timestamp=now)
        add_vehicle(fb, "b2", "V9", lat=40.003, timestamp=now - 1, occupancy="FULL")
        a.write_bytes(fa.SerializeToString())
        b.write_bytes(fb.SerializeToString())

    write_feeds()
    with Server(tiny_data / "data", "--gtfs-rt", str(a), "--gtfs-rt", str(b), "--rt-interval", "1",
                "--rt-max-age", "4") as s:
        # written again once the server answers: a start slower than --rt-max-age
        # (a loaded machine) would otherwise find every position stale already
        write_feeds()
        assert wait_for(lambda: len(vehicles(s)["vehicles"]) == 2, timeout=15)
        got = {v["id"]: v for v in vehicles(s)["vehicles"]}
        assert abs(got["V1"]["lat"] - 40.002) < 1e-5
        row = [d for d in departures(s, "S2") if d["trip_id"] == "T1"][0]
        assert abs(row["vehicle"]["lat"] - 40.002) < 1e-5
        # nobody sends anything newer: after --rt-max-age every vehicle is stale
        assert wait_for(lambda: vehicles(s)["vehicles"] == [], timeout=20)
        row = [d for d in departures(s, "S2") if d["trip_id"] == "T1"][0]
        assert "vehicle" not in row
        m = pb2().FeedMessage()
        m.ParseFromString(requests.get(s.url("/gtfs-rt/vehicle-positions.pb"), timeout=10).content)
        assert len(m.entity) == 0
        assert metric(s, 'transitd_rt_vehicles{outcome="stale"}') >= 2


def test_without_realtime_no_vehicles(tiny_data):  # noqa: F811
    with Server(tiny_data / "data") as s:
        body = vehicles(s, bbox="-180,-90,180,90")
        assert body == {"vehicles": [], "truncated": False, "next": None}
        rows = departures(s, "S2")
        assert rows and all("vehicle" not in d and "occupancy_status" not in d for d in rows)
        m = pb2().FeedMessage()
        m.ParseFromString(requests.get(s.url("/gtfs-rt/vehicle-positions.pb"), timeout=10).content)
        assert len(m.entity) == 0


def test_replica_mirrors_vehicle_positions(tiny_data):  # noqa: F811
    from test_replica import ready_version, wait_until
    now = int(time.time())
    rt = tiny_data / "rt-replica.pb"
    rt.write_bytes(mixed_feed(now).SerializeToString())
    replica_dir = tiny_data / "replica-vehicles"
    with Server(tiny_data / "data", "--quiet", "--gtfs-rt", str(rt), "--rt-interval", "1") as primary:
        purl = f"http://127.0.0.1:{primary.port}"
        with Server(replica_dir, "--quiet", "--replica-of", purl, "--replica-interval", "1") as replica:
            rurl = f"http://127.0.0.1:{replica.port}"
            wait_until(lambda: ready_version(rurl), what="the replica's dataset")
            board = f"/v1/stops/S2/departures?time={urllib.parse.quote(MONDAY)}&window=60"

            def same(path):
                x = requests.get(purl + path, timeout=5)
                y = requests.get(rurl + path, timeout=5)
                return x.status_code == y.status_code == 200 and x.content == y.content

            wait_until(lambda: len(requests.get(rurl + "/v1/vehicles", timeout=5).json()["vehicles"]) == 3,
                       what="the primary's vehicles on the replica")
            wait_until(lambda: same("/v1/vehicles") and same(board), what="identical vehicles and boards")
            m = pb2().FeedMessage()
            m.ParseFromString(requests.get(rurl + "/gtfs-rt/vehicle-positions.pb", timeout=5).content)
            assert sorted(e.id for e in m.entity) == ["veh-1", "veh-2", "veh-3"]
            # a change at the primary travels
            moved = mixed_feed(now + 1)
            moved.entity[1].vehicle.position.latitude = 40.0008
            rt.write_bytes(moved.SerializeToString())
            wait_until(lambda: abs(requests.get(rurl + "/v1/vehicles", timeout=5).json()["vehicles"][0]["lat"]
                                   - 40.0008) < 1e-5, what="the moved vehicle on the replica")
