"""Accessibility (#27): wheelchair_accessible and bikes_allowed on every
departure and arrival row and on a trip, and wheelchair=1 on the stop, station
and nearby boards.

The feed is the demo feed (bench/gtfs_gen.py --scale demo, seed 1) with its
accessibility fields rewritten so that every case occurs: trips with 0, 1, 2,
an empty and an invalid wheelchair_accessible and bikes_allowed; platforms
with 0 or none under stations with 1 (they inherit 1), with 0 under stations
with 2 or 0 (they inherit those), and with their own 1 or 2. The expected
filtered board is the unfiltered one filtered here by the documented rule, so
the server's rule, its `limit` (a filtered board still fills it), its
`truncated` and its `next` links are all checked against it. Needs nothing
from ../shared.
"""
import csv
import io
import shutil
import urllib.parse
import zipfile

import pytest
import requests

import schema_check
from http_server import Server, demo_feed, import_feed, TMP

DOC = schema_check.load_openapi()
STATION_ID = "de:11000:900100001"
STATION = urllib.parse.quote(STATION_ID, safe="")
WHEN = "2026-11-23T08:00"
NEAR = "lat=52.52&lon=13.30&radius=5000"
BOARDS = [
    (f"/v1/stops/{STATION}/departures?time={WHEN}&window=240", "departures", "/v1/stops/{id}/departures"),
    (f"/v1/stops/{STATION}/departures?time={WHEN}&window=240&kind=both", "departures",
     "/v1/stops/{id}/departures"),
    (f"/v1/stops/{STATION}/arrivals?time={WHEN}&window=240", "arrivals", "/v1/stops/{id}/arrivals"),
    (f"/v1/departures?{NEAR}&time={WHEN}&window=60", "departures", "/v1/departures"),
    (f"/v1/departures?{NEAR}&time={WHEN}&window=60&kind=arrivals", "departures", "/v1/departures"),
]
FLAG_VALUES = ["0", "1", "2", "", "7", "1", "1"]   # mostly 1, so that boards keep rows


def rewrite(rows, field, value_of):
    for i, row in enumerate(rows):
        row[field] = value_of(i, row)


def table(rows, fields):
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


def accessible_feed(path):
    """The demo feed with the accessibility fields described above; returns
    (path, trips by id, stops by id) as written."""
    src = zipfile.ZipFile(demo_feed(1))
    read = lambda name: list(csv.DictReader(io.StringIO(src.read(name).decode("utf-8-sig"))))
    trips, stops = read("trips.txt"), read("stops.txt")
    rewrite(trips, "wheelchair_accessible", lambda i, _: FLAG_VALUES[i % len(FLAG_VALUES)])
    rewrite(trips, "bikes_allowed", lambda i, _: FLAG_VALUES[(3 * i + 1) % len(FLAG_VALUES)])
    stations = [s["stop_id"] for s in stops if s.get("location_type") == "1"]
    station_value = {sid: ("1" if sid == STATION_ID else ["1", "2", "0", "", "1"][i % 5])
                     for i, sid in enumerate(stations)}
    children = {}
    for s in stops:
        if s.get("parent_station"):
            children.setdefault(s["parent_station"], []).append(s["stop_id"])

    def stop_value(i, s):
        if s.get("location_type") == "1":
            return station_value[s["stop_id"]]
        if s.get("parent_station"):
            # the station of the station boards: its two platforms say 0 and
            # nothing (both inherit its 1); elsewhere a station's platforms
            # say 0, 2, nothing, 1, 0 in turn
            rank = children[s["parent_station"]].index(s["stop_id"])
            if s["parent_station"] == STATION_ID:
                return ["0", ""][rank % 2]
            return ["0", "2", "", "1", "0"][rank % 5]
        return ["1", "0", "2", "", "1", "1"][i % 6]
    rewrite(stops, "wheelchair_boarding", stop_value)
    with zipfile.ZipFile(path, "w") as z:
        for name in src.namelist():
            if name == "trips.txt":
                z.writestr(name, table(trips, list(trips[0].keys())))
            elif name == "stops.txt":
                z.writestr(name, table(stops, list(stops[0].keys())))
            else:
                z.writestr(name, src.read(name))
    return path, {t["trip_id"]: t for t in trips}, {s["stop_id"]: s for s in stops}


def flag(text):
    """A trips.txt flag as the API gives it: 0 for empty or invalid."""
    return int(text) if text in ("0", "1", "2") else 0


def stop_accessible(stops, stop_id):
    """The documented rule's stop half: wheelchair_boarding 1, a platform with
    0 or none taking its station's."""
    s = stops[stop_id]
    value = s.get("wheelchair_boarding") or "0"
    if value == "0" and s.get("parent_station"):
        value = stops[s["parent_station"]].get("wheelchair_boarding") or "0"
    return value == "1"


def accessible(trips, stops, row):
    return flag(trips[row["trip_id"]]["wheelchair_accessible"]) == 1 and stop_accessible(stops, row["stop_id"])


@pytest.fixture(scope="module")
def feed():
    base = TMP / "accessibility"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    path, trips, stops = accessible_feed(base / "accessible.zip")
    import_feed(path, base / "data")
    with Server(base / "data") as server:
        yield server, trips, stops


def get(server, path):
    r = requests.get(server.url(path), timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def page_through(server, path, key, limit, api_path):
    rows, url = [], server.url(f"{path}&limit={limit}")
    for _ in range(1000):
        r = requests.get(url, timeout=10)
        assert r.status_code == 200, r.text
        body = r.json()
        assert not schema_check.validate(body, schema_check.response_schema(DOC, api_path), DOC)
        assert len(body[key]) == limit or body["next"] is None
        rows += body[key]
        if not body["next"]:
            return rows
        assert "wheelchair=1" in body["next"]
        url = server.url(body["next"])
    raise AssertionError("more than 1000 pages")


@pytest.mark.parametrize("path,key,api_path", BOARDS)
def test_rows_carry_their_trips_flags(feed, path, key, api_path):
    server, trips, _ = feed
    body = get(server, f"{path}&limit=500")
    assert not schema_check.validate(body, schema_check.response_schema(DOC, api_path), DOC)
    rows = body[key]
    assert len(rows) > 20
    for row in rows:
        trip = trips[row["trip_id"]]
        assert row["wheelchair_accessible"] == flag(trip["wheelchair_accessible"]), row
        assert row["bikes_allowed"] == flag(trip["bikes_allowed"]), row
        keys = list(row)
        assert keys[keys.index("headsign") + 1:keys.index("headsign") + 3] == ["wheelchair_accessible",
                                                                               "bikes_allowed"]
    # every value occurs
    assert {r["wheelchair_accessible"] for r in rows} == {0, 1, 2}
    assert {r["bikes_allowed"] for r in rows} == {0, 1, 2}


def test_a_trip_carries_its_flags(feed):
    server, trips, _ = feed
    seen = set()
    for trip_id in list(trips)[:14]:
        body = get(server, f"/v1/trips/{urllib.parse.quote(trip_id, safe='')}")["trip"]
        assert body["wheelchair_accessible"] == flag(trips[trip_id]["wheelchair_accessible"])
        assert body["bikes_allowed"] == flag(trips[trip_id]["bikes_allowed"])
        seen.add((body["wheelchair_accessible"], body["bikes_allowed"]))
    assert len(seen) >= 4


@pytest.mark.parametrize("path,key,api_path", BOARDS)
def test_the_filtered_board_is_the_board_filtered_and_fills_its_limit(feed, path, key, api_path):
    server, trips, stops = feed
    whole = get(server, f"{path}&limit=500")
    assert not whole["truncated"]
    expected = [r for r in whole[key] if accessible(trips, stops, r)]
    assert 5 < len(expected) < len(whole[key])
    filtered = get(server, f"{path}&limit=500&wheelchair=1")
    assert filtered[key] == expected and not filtered["truncated"] and filtered["next"] is None
    assert get(server, f"{path}&limit=500&wheelchair=0")[key] == whole[key]
    for limit in (1, 3, len(expected) - 1, len(expected)):
        body = get(server, f"{path}&limit={limit}&wheelchair=1")
        assert body[key] == expected[:limit], f"limit {limit}"
        assert body["truncated"] == (limit < len(expected))
    for limit in (1, 4):
        assert page_through(server, f"{path}&wheelchair=1", key, limit, api_path) == expected


def test_platforms_inherit_their_stations_wheelchair_boarding(feed):
    """The station board: its platforms say 0 and nothing under a station
    with 1, so both are kept for the trips with wheelchair_accessible 1."""
    server, trips, stops = feed
    path = f"/v1/stops/{STATION}/departures?time={WHEN}&window=240&limit=500&kind=both"
    whole = get(server, path)["departures"]
    assert {stops[r["stop_id"]]["wheelchair_boarding"] for r in whole} == {"0", ""}
    kept = get(server, f"{path}&wheelchair=1")["departures"]
    assert kept == [r for r in whole if flag(trips[r["trip_id"]]["wheelchair_accessible"]) == 1]
    assert {stops[r["stop_id"]]["wheelchair_boarding"] for r in kept} == {"0", ""}


def test_nearby_platforms_take_1_or_2_or_their_stations(feed):
    """Near a point, for the rows of trips with wheelchair_accessible 1: a
    platform with its own 1 is kept and with 2 left out; one with 0 or
    nothing is kept exactly when its station says 1."""
    server, trips, stops = feed
    path = f"/v1/departures?{NEAR}&time={WHEN}&window=60&limit=500"
    whole = get(server, path)["departures"]
    assert len(whole) < 500
    kept = {(r["stop_id"], r["trip_id"], r["departure"]) for r in get(server, f"{path}&wheelchair=1")["departures"]}
    cases = set()
    for row in whole:
        s = stops[row["stop_id"]]
        if not s.get("parent_station") or flag(trips[row["trip_id"]]["wheelchair_accessible"]) != 1:
            continue
        own = s["wheelchair_boarding"] or "0"
        parent = stops[s["parent_station"]]["wheelchair_boarding"] or "0"
        case = own if own != "0" else f"inherits {parent}"
        cases.add(case)
        want = own == "1" or (own == "0" and parent == "1")
        assert ((row["stop_id"], row["trip_id"], row["departure"]) in kept) == want, (row, case)
    assert cases >= {"1", "2", "inherits 1", "inherits 2", "inherits 0"}, cases


def test_bad_wheelchair_is_400_and_cursors_are_bound_to_it(feed):
    server, _, _ = feed
    for bad in ("2", "true", "", "yes", "01"):
        r = requests.get(server.url(f"/v1/stops/{STATION}/departures?time={WHEN}&wheelchair={bad}"), timeout=10)
        assert r.status_code == 400, bad
        assert r.json()["detail"].startswith("wheelchair "), r.text
    first = get(server, f"/v1/stops/{STATION}/departures?time={WHEN}&window=240&limit=2&wheelchair=1")
    assert "wheelchair=1" in first["next"]
    unfiltered = first["next"].replace("wheelchair=1", "wheelchair=0")
    r = requests.get(server.url(unfiltered), timeout=10)
    assert r.status_code == 400 and r.json()["detail"].startswith("cursor "), r.text


# ------------------------------------------------------------ with realtime

def rt_trips():
    return [(f"K{h:02d}{m:02d}", h * 60 + m) for h in (8, 9) for m in range(0, 60, 10)]


def hhmm(minutes):
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


RT_FEED = {
    "agency.txt": "agency_id,agency_name,agency_url,agency_timezone\n"
                  "A1,Access Transit,https://example.com,America/New_York\n",
    "stops.txt": "stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station,wheelchair_boarding\n"
                 "STA,Station,40.0,-74.0,1,,1\n"
                 "A,Platform A,40.0,-74.0,0,STA,\n"
                 "B,Stop B,40.001,-74.0,0,,2\n",
    "routes.txt": "route_id,agency_id,route_short_name,route_type\nR,A1,9,3\n",
    # even trips accessible, odd ones not (2, or nothing said)
    "trips.txt": "route_id,service_id,trip_id,wheelchair_accessible\n" + "".join(
        f"R,WK,{t},{'1' if i % 2 == 0 else ('2' if i % 4 == 1 else '')}\n" for i, (t, _) in enumerate(rt_trips())),
    "stop_times.txt": "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n" + "".join(
        f"{t},{hhmm(m)},{hhmm(m)},A,1\n{t},{hhmm(m + 10)},{hhmm(m + 10)},B,2\n" for t, m in rt_trips()),
    "calendar.txt": "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
                    "start_date,end_date\nWK,1,1,1,1,1,0,0,20261026,20261113\n",
}
RT_DAY = "20261102"


def rt_updates():
    import datetime
    from gtfs_rt_pb import add_trip_update, new_feed, pb2
    at = lambda text: int(datetime.datetime.fromisoformat(text).timestamp())
    m = new_feed(timestamp=at("2026-11-02T08:00:00-05:00"))
    add_trip_update(m, "u1", "K0840", RT_DAY, [(1, {"departure_delay": 900})])    # 08:55, accessible
    add_trip_update(m, "u2", "K0850", RT_DAY, [(1, {"departure_delay": 900})])    # 09:05, not
    add_trip_update(m, "u3", "K0900", RT_DAY, [(1, {"departure_delay": 720})])    # 09:12, accessible
    e = m.entity.add()
    e.id = "added"
    trip = e.trip_update.trip
    trip.trip_id, trip.route_id, trip.start_date = "X1", "R", RT_DAY
    trip.schedule_relationship = pb2().TripDescriptor.ADDED
    for seq, stop, t in ((1, "A", "2026-11-02T09:02:00-05:00"), (2, "B", "2026-11-02T09:12:00-05:00")):
        u = e.trip_update.stop_time_update.add()
        u.stop_sequence, u.stop_id = seq, stop
        u.arrival.time = u.departure.time = at(t)
    return m.SerializeToString()


@pytest.fixture(scope="module")
def rt_data():
    base = TMP / "accessibility-rt"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    with zipfile.ZipFile(base / "feed.zip", "w") as z:
        for name, text in RT_FEED.items():
            z.writestr(name, text)
    import_feed(base / "feed.zip", base / "data")
    (base / "rt.pb").write_bytes(rt_updates())
    return base


def rt_board(base, **params):
    import json
    from test_cli_query import run_query
    q = {"op": "stop-departures", "stop": "STA", "time": "2026-11-02T08:50:00-05:00", "window": 60, **params}
    p = run_query(base / "data", "--gtfs-rt", str(base / "rt.pb"), "batch", stdin=json.dumps(q) + "\n")
    assert p.returncode == 0, p.stderr
    body = json.loads(p.stdout)
    schema_check.assert_matches(body, "StopDeparturesResponse", DOC)
    return body


@pytest.mark.parametrize("order", ["predicted", "scheduled"])
def test_realtime_boards_filter_before_they_cut(rt_data, order):
    """By predicted time (a trip delayed into the window included) and by
    schedule: the filtered board is the board's accessible rows, never the
    ADDED trip's, and a small limit is still filled."""
    whole = rt_board(rt_data, realtime=order)
    ids = [d["trip_id"] for d in whole["departures"]]
    assert "X1" in ids and ("K0840" in ids) == (order == "predicted")
    accessible_ids = [i for i in ids if i != "X1" and int(i[1:3]) * 60 + int(i[3:]) in
                      {m for n, (_, m) in enumerate(rt_trips()) if n % 2 == 0}]
    filtered = rt_board(rt_data, realtime=order, wheelchair="1")
    assert [d["trip_id"] for d in filtered["departures"]] == accessible_ids
    assert all(d["wheelchair_accessible"] == 1 for d in filtered["departures"])
    assert len(accessible_ids) >= 3
    for limit in (1, 2):
        cut = rt_board(rt_data, realtime=order, wheelchair="1", limit=limit)
        assert [d["trip_id"] for d in cut["departures"]] == accessible_ids[:limit] and cut["truncated"]
    # platform B says 2: nothing there
    assert rt_board(rt_data, realtime=order, wheelchair="1", stop="B", kind="arrivals")["departures"] == []
