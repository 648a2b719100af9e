"""The endpoints of issue #27 (first part) on real feeds: the shared feeds of
../shared/gtfs (skipped visibly when absent, failing under CI=true) and the
generated demo feed. For each, through `transitd query --data DIR batch`,
every answer checked against docs/openapi.json and against the feed's own
files read here with the csv module:

- /v1/routes/{id}: each pattern's stops are the stops of its trips in
  stop_sequence order, every trip with stop times is in exactly one pattern,
  and the patterns, trip counts and headsigns come in the documented order;
- /v1/stops/{id}: each route's headsigns are those of its trips departing
  from the stop (not their last stop, pickup_type not 1), most departures
  first;
- /v1/shapes/{id} and /v1/trips/{id}?include=shape: the polyline decodes to
  the shape's points (1e-5 degrees) and its length is theirs; a trip whose
  shape_id shapes.txt lacks is drawn through its stops.

Arrivals are held to the oracle in test_oracle.py.
"""
import collections
import csv
import io
import json
import random
import subprocess
import sys
import zipfile

import pytest

import schema_check
from conftest import ROOT, engine_or_skip, shared_feed, transitd_bin
from test_transit_app_api import check_line

DOC = schema_check.load_openapi()
FEEDS = ["cairns_translink_2014", "abidjan_osm_frequencies_2021", "amtab_bari_2026",
         "exo_laurentides_2025", "nyct_subway_2026", "nyct_bus_brooklyn_2026", "demo"]
ROUTES = 4     # routes checked per feed: the busiest and random ones
STOPS = 12     # stops checked per feed: busy ones, random ones and stations
SHAPES = 6

_imported = {}


def feed_path(name, tmp_path_factory):
    if name != "demo":
        return shared_feed(f"{name}.zip")
    out = tmp_path_factory.mktemp("app_demo") / "demo.zip"
    subprocess.run([sys.executable, str(ROOT / "bench" / "gtfs_gen.py"), "--scale", "demo", "--out", str(out)],
                   check=True, capture_output=True, timeout=600)
    return str(out)


def imported(name, tmp_path_factory):
    if name not in _imported:
        exe = engine_or_skip()
        path = feed_path(name, tmp_path_factory)
        data = tmp_path_factory.mktemp(f"app_{name}")
        p = subprocess.run([exe, "import", path, "--data", str(data), "--quiet"], capture_output=True,
                           text=True, timeout=900)
        assert p.returncode == 0, p.stderr[-2000:]
        _imported[name] = (path, str(data))
    return _imported[name]


def batch(data, queries):
    """The answers to [(op, id, extra params)], each checked against its schema."""
    lines = "".join(json.dumps(dict({"op": op, op: ident}, **extra)) + "\n" for op, ident, extra in queries)
    p = subprocess.run([transitd_bin(), "query", "--data", data, "batch"], input=lines, capture_output=True,
                       text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    out = [json.loads(x) for x in p.stdout.splitlines()]
    assert len(out) == len(queries)
    paths = {"route": "/v1/routes/{id}", "stop": "/v1/stops/{id}", "shape": "/v1/shapes/{id}",
             "trip": "/v1/trips/{id}"}
    for (op, ident, _), body in zip(queries, out):
        assert "error" not in body, (op, ident, body)
        errors = schema_check.validate(body, schema_check.response_schema(DOC, paths[op]), DOC)
        assert not errors, f"{op} {ident}:\n" + "\n".join(errors[:20])
    return out


def rows(z, member):
    if member not in z.namelist():
        return
    with z.open(member) as f:
        yield from csv.DictReader(io.TextIOWrapper(f, "utf-8-sig", newline=""))


class Feed:
    """What these checks need of a feed, read the plain way."""

    def __init__(self, path):
        with zipfile.ZipFile(path) as z:
            self.route_ids = [r["route_id"].strip() for r in rows(z, "routes.txt")]
            self.trips = {}       # trip_id -> (route_id, direction or None, headsign, shape_id)
            for r in rows(z, "trips.txt"):
                d = (r.get("direction_id") or "").strip()
                self.trips[r["trip_id"].strip()] = (r["route_id"].strip(), int(d) if d in ("0", "1") else None,
                                                    (r.get("trip_headsign") or "").strip(),
                                                    (r.get("shape_id") or "").strip())
            self.calls = collections.defaultdict(list)   # trip_id -> [(seq, stop_id, pickup)]
            for r in rows(z, "stop_times.txt"):
                self.calls[r["trip_id"].strip()].append((int(r["stop_sequence"]), r["stop_id"].strip(),
                                                         (r.get("pickup_type") or "0").strip() or "0"))
            for calls in self.calls.values():
                calls.sort()
            self.runs = collections.Counter()            # trip_id -> instances (frequencies)
            for r in rows(z, "frequencies.txt"):
                def secs(t):
                    h, m, s = (int(x) for x in t.strip().split(":"))
                    return h * 3600 + m * 60 + s
                self.runs[r["trip_id"].strip()] += len(range(secs(r["start_time"]), secs(r["end_time"]),
                                                             int(r["headway_secs"])))
            self.stations = collections.defaultdict(list)
            for r in rows(z, "stops.txt"):
                parent = (r.get("parent_station") or "").strip()
                if parent:
                    self.stations[parent].append(r["stop_id"].strip())
            self.shapes = collections.defaultdict(list)
            for r in rows(z, "shapes.txt"):
                self.shapes[r["shape_id"].strip()].append(
                    (int(r["shape_pt_sequence"]), float(r["shape_pt_lat"]), float(r["shape_pt_lon"])))
            self.shapes = {k: [(la, lo) for _, la, lo in sorted(v)] for k, v in self.shapes.items()}

    def expected_patterns(self, route_id):
        trips = collections.Counter()
        heads = collections.defaultdict(collections.Counter)
        for trip_id, (route, direction, headsign, _) in self.trips.items():
            calls = self.calls.get(trip_id)
            if route != route_id or not calls or len(calls) < 2:
                continue
            key = (direction, tuple(stop for _, stop, _ in calls))
            trips[key] += 1
            if headsign:
                heads[key][headsign] += 1
        out = []
        for key, n in trips.items():
            direction, stops = key
            ordered = sorted(heads[key].items(), key=lambda kv: (-kv[1], kv[0].encode()))
            out.append({"direction_id": direction, "trips": n, "stops": list(stops),
                        "headsigns": [h for h, _ in ordered]})
        out.sort(key=lambda p: ({0: 0, 1: 1, None: 2}[p["direction_id"]], -p["trips"],
                                [s.encode() for s in p["stops"]]))
        return out

    def expected_headsigns(self, stop_ids):
        """route_id -> headsigns of the trips departing from these stops."""
        counts = collections.defaultdict(collections.Counter)
        for trip_id, calls in self.calls.items():
            route, _, headsign, _ = self.trips[trip_id]
            for i, (_, stop, pickup) in enumerate(calls):
                if stop in stop_ids and i < len(calls) - 1 and pickup != "1" and headsign:
                    counts[route][headsign] += self.runs.get(trip_id) or 1
        return {route: [h for h, _ in sorted(c.items(), key=lambda kv: (-kv[1], kv[0].encode()))]
                for route, c in counts.items()}


@pytest.mark.parametrize("name", FEEDS)
def test_routes_stops_and_shapes_match_the_feed(name, tmp_path_factory):
    path, data = imported(name, tmp_path_factory)
    feed = Feed(path)
    rng = random.Random(f"app-{name}")

    # routes: their patterns are their trips' stops in stop_sequence order
    per_route = collections.Counter(r for t, (r, *_) in feed.trips.items() if t in feed.calls)
    routes = [per_route.most_common(1)[0][0]] + rng.sample(sorted(per_route), min(ROUTES - 1, len(per_route)))
    answers = batch(data, [("route", r, {}) for r in routes])
    for route_id, body in zip(routes, answers):
        got = [{"direction_id": p["direction_id"], "trips": p["trips"], "headsigns": p["headsigns"],
                "stops": [s["stop_id"] for s in p["stops"]]} for p in body["route"]["patterns"]]
        assert got == feed.expected_patterns(route_id), route_id
        assert sum(p["trips"] for p in got) == per_route[route_id]

    # stops: the headsigns departing from them, by route
    busy = collections.Counter(stop for calls in feed.calls.values() for _, stop, _ in calls)
    stops = [s for s, _ in busy.most_common(4)] + rng.sample(sorted(busy), min(STOPS - 6, len(busy)))
    stops += sorted(feed.stations)[:2]
    answers = batch(data, [("stop", s, {}) for s in stops])
    for stop_id, body in zip(stops, answers):
        want = feed.expected_headsigns(set([stop_id] + feed.stations.get(stop_id, [])))
        got = {r["id"]: r["headsigns"] for r in body["stop"]["routes"]}
        assert {r: h for r, h in got.items() if h} == want, stop_id
        assert set(want) <= set(got)

    # shapes: their polylines and lengths
    shape_ids = sorted(feed.shapes)
    for shape_id, body in zip(shape_ids[:SHAPES], batch(data, [("shape", s, {}) for s in shape_ids[:SHAPES]])):
        assert body["shape"]["source"] == "feed"
        check_line(body["shape"], feed.shapes[shape_id])

    # trips' shapes: the feed's, or through their stops
    trips = rng.sample(sorted(t for t in feed.trips if t in feed.calls), 5)
    for trip_id, body in zip(trips, batch(data, [("trip", t, {"include": "shape"}) for t in trips])):
        trip = body["trip"]
        shape_id = feed.trips[trip_id][3]
        if shape_id in feed.shapes:
            assert trip["shape"]["source"] == "feed" and trip["shape"]["id"] == shape_id
            check_line(trip["shape"], feed.shapes[shape_id])
        else:
            assert trip["shape"]["source"] == "stops" and trip["shape"]["id"] is None
            check_line(trip["shape"], [(st["lat"], st["lon"]) for st in trip["stop_times"]])
