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
