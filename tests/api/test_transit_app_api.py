"""The API a transit app needs (issue #27, first part), over real HTTP on the
generated demo feed: boards of arrivals and of both kinds (`kind`,
/v1/stops/{id}/arrivals), trips whose stop times name and place their stops,
shapes as encoded polylines (/v1/shapes/{id}, include=shape, a line through
the stops where the feed has no shape), every answer held to
docs/openapi.json, bad parameters answered with a 400 naming them and unknown
ids with a 404.

The server runs once for the module against the demo feed (bench/gtfs_gen.py
--scale demo, seed 1), so nothing here needs ../shared; the shared feeds'
checks are in test_transit_app_feeds.py.
"""
import csv
import io
import math
import shutil
import zipfile

import pytest
import requests

import schema_check
from http_server import Server, demo_feed, import_feed, TMP

DOC = schema_check.load_openapi()
STOP = "de:11000:900100001"            # a station with two platforms
TRIP = "1000001"
DATE = "2026-11-23"                    # a Monday inside the service period
WHEN = "2026-11-23T08:00"


@pytest.fixture(scope="module")
def server():
    data = TMP / "transit-app-data"
    shutil.rmtree(data, ignore_errors=True)
    import_feed(demo_feed(1), data)
    with Server(data) as s:
        yield s


def get(server, path, **kw):
    return requests.get(server.url(path), timeout=10, **kw)


def ok(server, path, api_path):
    """The JSON of a 200 answer, checked against the path's OpenAPI schema."""
    r = get(server, path)
    assert r.status_code == 200, r.text
    body = r.json()
    errors = schema_check.validate(body, schema_check.response_schema(DOC, api_path), DOC)
    assert not errors, f"{path}:\n" + "\n".join(errors[:20])
    return body


def problem(server, path, status):
    r = get(server, path)
    assert r.status_code == status, r.text
    assert r.headers["Content-Type"] == "application/problem+json; charset=utf-8"
    body = r.json()
    schema_check.assert_matches(body, "Problem", DOC)
    return body


def last_call(server):
    """(stop_id, arrival instant text) of TRIP's last stop on DATE."""
    trip = ok(server, f"/v1/trips/{TRIP}?date={DATE}", "/v1/trips/{id}")["trip"]
    last = trip["stop_times"][-1]
    return last["stop_id"], last["arrival"][:16]


# ------------------------------------------------------------ arrivals and kind

def test_default_board_is_kind_departures(server):
    for path in (f"/v1/stops/{STOP}/departures?time={WHEN}&limit=20",
                 f"/v1/departures?lat=52.5271&lon=13.2343&time={WHEN}&limit=20"):
        plain = get(server, path)
        explicit = get(server, path + "&kind=departures")
        assert plain.status_code == explicit.status_code == 200
        assert plain.content == explicit.content
        assert all("departure" in d and "arrival" not in d for d in plain.json()["departures"])


def test_arrivals_endpoint_is_kind_arrivals(server):
    arrivals = ok(server, f"/v1/stops/{STOP}/arrivals?time={WHEN}&limit=30", "/v1/stops/{id}/arrivals")
    kind = ok(server, f"/v1/stops/{STOP}/departures?time={WHEN}&limit=30&kind=arrivals",
              "/v1/stops/{id}/departures")
    assert arrivals["arrivals"] == kind["departures"]
    assert arrivals["stop"] == kind["stop"] and arrivals["truncated"] == kind["truncated"]
    assert arrivals["arrivals"], "the demo station has arrivals at 08:00"
    for row in arrivals["arrivals"]:
        assert "departure" not in row and row["arrival"] >= "2026-11-23T08:00:00+01:00"
    instants = [r["arrival"] for r in arrivals["arrivals"]]
    assert instants == sorted(instants)


def test_last_stop_is_an_arrival(server):
    stop, at = last_call(server)
    window = f"time={at}&window=2&limit=500"
    departures = ok(server, f"/v1/stops/{stop}/departures?{window}", "/v1/stops/{id}/departures")
    assert TRIP not in [d["trip_id"] for d in departures["departures"]]
    for kind in ("arrivals", "both"):
        body = ok(server, f"/v1/stops/{stop}/departures?{window}&kind={kind}", "/v1/stops/{id}/departures")
        rows = [d for d in body["departures"] if d["trip_id"] == TRIP]
        assert len(rows) == 1, (kind, body)
        assert rows[0]["arrival"].startswith(at) and rows[0]["service_date"] == DATE
        assert "departure" not in rows[0]


def test_both_has_one_row_per_call(server):
    body = ok(server, f"/v1/stops/{STOP}/departures?time={WHEN}&window=120&limit=500&kind=both",
              "/v1/stops/{id}/departures")
    calls = [(d["trip_id"], d["service_date"], d["stop_id"], d["stop_sequence"]) for d in body["departures"]]
    assert len(calls) == len(set(calls))
    departures = ok(server, f"/v1/stops/{STOP}/departures?time={WHEN}&window=120&limit=500",
                    "/v1/stops/{id}/departures")["departures"]
    # every departure is there, and the rest are arrivals
    assert [d for d in body["departures"] if "departure" in d] == departures
    nearby = ok(server, f"/v1/departures?lat=52.5271&lon=13.2343&radius=1000&time={WHEN}&kind=both&limit=200",
                "/v1/departures")
    assert nearby["departures"]


def test_nearby_arrivals(server):
    body = ok(server, f"/v1/departures?lat=52.5271&lon=13.2343&radius=1000&time={WHEN}&kind=arrivals&limit=50",
              "/v1/departures")
    assert body["departures"]
    for row in body["departures"]:
        assert "arrival" in row and "departure" not in row and row["distance_m"] <= 1000


def test_bad_kind_is_400_and_unknown_stop_404(server):
    for path in (f"/v1/stops/{STOP}/departures?kind=arrival",
                 f"/v1/stops/{STOP}/departures?kind=",
                 "/v1/departures?lat=52.5&lon=13.4&kind=BOTH"):
        body = problem(server, path, 400)
        assert "kind" in body["detail"]
    assert "'kind'" in problem(server, f"/v1/stops/{STOP}/arrivals?kind=arrivals", 400)["detail"]
    assert "no-such-stop" in problem(server, "/v1/stops/no-such-stop/arrivals", 404)["detail"]
    assert "window" in problem(server, f"/v1/stops/{STOP}/arrivals?window=0", 400)["detail"]


# ------------------------------------------------------------ polylines

def decode_polyline(text):
    """Google's encoded polyline, precision 5, as a list of (lat, lon)."""
    points, i, lat, lon = [], 0, 0, 0
    while i < len(text):
        deltas = []
        for _ in range(2):
            shift = value = 0
            while True:
                b = ord(text[i]) - 63
                i += 1
                value |= (b & 0x1f) << shift
                shift += 5
                if b < 0x20:
                    break
            deltas.append(~(value >> 1) if value & 1 else value >> 1)
        lat += deltas[0]
        lon += deltas[1]
        points.append((lat / 1e5, lon / 1e5))
    return points


def haversine_m(a, b):
    r = math.pi / 180
    s1 = math.sin((b[0] - a[0]) * r / 2)
    s2 = math.sin((b[1] - a[1]) * r / 2)
    h = s1 * s1 + math.cos(a[0] * r) * math.cos(b[0] * r) * s2 * s2
    return 2 * 6371008.8 * math.asin(math.sqrt(min(1.0, h)))


def test_decoder_on_googles_example():
    assert decode_polyline("_p~iF~ps|U_ulLnnqC_mqNvxq`@") == [(38.5, -120.2), (40.7, -120.95),
                                                             (43.252, -126.453)]


def feed_shapes(path):
    """shape_id -> [(lat, lon)] by shape_pt_sequence, from a feed zip."""
    with zipfile.ZipFile(path) as z:
        rows = list(csv.DictReader(io.TextIOWrapper(z.open("shapes.txt"), "utf-8-sig")))
    shapes = {}
    for r in rows:
        shapes.setdefault(r["shape_id"].strip(), []).append(
            (int(r["shape_pt_sequence"]), float(r["shape_pt_lat"]), float(r["shape_pt_lon"])))
    return {k: [(la, lo) for _, la, lo in sorted(v)] for k, v in shapes.items()}


def check_line(shape, points):
    """The Shape object against the points it stands for."""
    got = decode_polyline(shape["polyline"])
    assert shape["points"] == len(points) == len(got)
    for (a, b), (c, e) in zip(got, points):
        assert abs(a - c) <= 0.5e-5 + 1e-9 and abs(b - e) <= 0.5e-5 + 1e-9
    length = sum(haversine_m(points[i - 1], points[i]) for i in range(1, len(points)))
    assert abs(shape["length_m"] - length) <= 0.5 + 1e-6


# ------------------------------------------------------------ trips and shapes

def test_trip_stop_times_name_and_place_their_stops(server):
    trip = ok(server, f"/v1/trips/{TRIP}", "/v1/trips/{id}")["trip"]
    assert "shape" not in trip
    for st in trip["stop_times"]:
        stop = ok(server, f"/v1/stops/{st['stop_id']}", "/v1/stops/{id}")["stop"]
        assert (st["stop_name"], st["lat"], st["lon"], st["platform_code"]) == (
            stop["name"], stop["lat"], stop["lon"], stop["platform_code"])


def test_shapes_match_the_feed(server):
    shapes = feed_shapes(demo_feed(1))
    assert len(shapes) > 10
    for shape_id in sorted(shapes)[:40]:
        shape = ok(server, f"/v1/shapes/{shape_id}", "/v1/shapes/{id}")["shape"]
        assert shape["id"] == shape_id and shape["source"] == "feed"
        check_line(shape, shapes[shape_id])


def test_trip_shape_from_the_feed(server):
    trip = ok(server, f"/v1/trips/{TRIP}?include=shape", "/v1/trips/{id}")["trip"]
    assert trip["shape"]["id"] == trip["shape_id"] and trip["shape"]["source"] == "feed"
    check_line(trip["shape"], feed_shapes(demo_feed(1))[trip["shape_id"]])
    # the same answer as the shape itself
    alone = ok(server, f"/v1/shapes/{trip['shape_id']}", "/v1/shapes/{id}")["shape"]
    assert alone == trip["shape"]


def test_trip_shape_from_its_stops(server, tmp_path):
    """A feed without shapes.txt: the line through the stops, marked so."""
    src = zipfile.ZipFile(demo_feed(1))
    feed = tmp_path / "noshapes.zip"
    with zipfile.ZipFile(feed, "w") as z:
        for name in src.namelist():
            if name != "shapes.txt":
                z.writestr(name, src.read(name))
    data = tmp_path / "data"
    import_feed(feed, data)
    with Server(data) as s:
        trip = ok(s, f"/v1/trips/{TRIP}?include=shape", "/v1/trips/{id}")["trip"]
        shape = trip["shape"]
        assert shape["id"] is None and shape["source"] == "stops"
        check_line(shape, [(st["lat"], st["lon"]) for st in trip["stop_times"]])
        assert trip["shape_id"]   # the feed names a shape it does not have
        assert "shp_10000_1_0" in problem(s, "/v1/shapes/shp_10000_1_0", 404)["detail"]


def test_bad_include_and_unknown_ids(server):
    for bad in ("shapes", "shape,shape", "", "shape,", ",shape"):
        body = problem(server, f"/v1/trips/{TRIP}?include={bad}", 400)
        assert "include" in body["detail"]
    assert "no-such-shape" in problem(server, "/v1/shapes/no-such-shape", 404)["detail"]
    assert "'date'" in problem(server, "/v1/shapes/shp_10000_1_0?date=2026-11-23", 400)["detail"]
    assert "no-such-trip" in problem(server, "/v1/trips/no-such-trip?include=shape", 404)["detail"]


# ------------------------------------------------------------ routes and stops

def test_route_patterns(server):
    route = ok(server, "/v1/routes/10000_1", "/v1/routes/{id}")["route"]
    assert route["short_name"] == "U1"
    patterns = route["patterns"]
    assert [p["direction_id"] for p in patterns] == sorted(p["direction_id"] for p in patterns)
    # the trip's stop order is one of the route's patterns
    trip = ok(server, f"/v1/trips/{TRIP}", "/v1/trips/{id}")["trip"]
    ids = [st["stop_id"] for st in trip["stop_times"]]
    mine = [p for p in patterns if [s["stop_id"] for s in p["stops"]] == ids]
    assert len(mine) == 1 and mine[0]["direction_id"] == trip["direction_id"]
    assert trip["headsign"] in mine[0]["headsigns"]
    for p in patterns:
        for s in p["stops"]:
            stop = ok(server, f"/v1/stops/{s['stop_id']}", "/v1/stops/{id}")["stop"]
            assert (s["stop_name"], s["lat"], s["lon"]) == (stop["name"], stop["lat"], stop["lon"])
    assert "nope" in problem(server, "/v1/routes/nope", 404)["detail"]


def test_stop_routes_and_headsigns(server):
    stop = ok(server, f"/v1/stops/{STOP}", "/v1/stops/{id}")["stop"]
    assert stop["routes"]
    departing = set()
    board = ok(server, f"/v1/stops/{STOP}/departures?time={DATE}T00:00&window=1440&limit=500",
               "/v1/stops/{id}/departures")["departures"]
    for d in board:
        departing.add((d["route_id"], d["headsign"]))
    listed = {(r["id"], h) for r in stop["routes"] for h in r["headsigns"]}
    # what leaves on a Monday is listed (the headsigns cover the whole timetable)
    assert {x for x in departing if x[1]} <= listed
    assert "nope" in problem(server, "/v1/stops/nope", 404)["detail"]


def test_empty_board_outside_the_service_names_its_kind(server):
    for path, key, word in ((f"/v1/stops/{STOP}/arrivals?time=2030-01-01T08:00", "arrivals", "no arrivals:"),
                            (f"/v1/stops/{STOP}/departures?time=2030-01-01T08:00&kind=both", "departures",
                             "no departures or arrivals:"),
                            (f"/v1/stops/{STOP}/departures?time=2030-01-01T08:00", "departures",
                             "no departures:")):
        body = ok(server, path, "/v1/stops/{id}/arrivals" if key == "arrivals" else "/v1/stops/{id}/departures")
        assert body[key] == [] and body["warning"].startswith(word), body
