"""`transitd query`: every subcommand's JSON, held to docs/openapi.json and to
exact values.

Two datasets: a tiny hand-made feed whose every answer is known (a station
with a platform, a stop past midnight, a DST change in America/New_York,
optional fields present and absent, a name that needs JSON escaping), and the
real Cairns feed for shapes at scale. Also: batch mode (one line out per line
in, errors inline, answers byte-identical to the single commands), the problem
JSON and exit codes of bad queries, usage errors, and a missing dataset."""
import json
import os
import re
import subprocess
import zipfile

import pytest

from conftest import engine_or_skip, shared_feed, transitd_bin
import schema_check

DOC = schema_check.load_openapi()

# path in the OpenAPI document for each subcommand
PATHS = {
    "nearby": "/v1/stops/nearby",
    "departures": "/v1/departures",
    "stop-departures": "/v1/stops/{id}/departures",
    "stop-arrivals": "/v1/stops/{id}/arrivals",
    "search": "/v1/stops",
    "trip": "/v1/trips/{id}",
    "shape": "/v1/shapes/{id}",
    "stop": "/v1/stops/{id}",
    "routes": "/v1/routes",
    "route": "/v1/routes/{id}",
    "agencies": "/v1/agencies",
    "feed": "/v1/feed",
}

TINY_FEED = {
    "agency.txt": """\
agency_id,agency_name,agency_url,agency_timezone,agency_lang
A1,Tiny Transit,https://example.com,America/New_York,en
""",
    "stops.txt": """\
stop_id,stop_code,stop_name,stop_desc,stop_lat,stop_lon,location_type,parent_station,wheelchair_boarding,platform_code
STA,,Central Station,,40.000000,-74.000000,1,,,
P1,C1,Central Platform 1,Northbound,40.000000,-74.000000,0,STA,1,1
S2,,"Café ""Quote"" Stop",,40.001000,-74.000000,0,,,
S3,,Far Stop,,40.010000,-74.000000,0,,2,
""",
    "routes.txt": """\
route_id,agency_id,route_short_name,route_long_name,route_type,route_color,route_text_color
R1,A1,1,Main Line,3,FF0000,FFFFFF
R2,A1,,Night Express,3,,
""",
    "trips.txt": """\
route_id,service_id,trip_id,trip_headsign,direction_id,shape_id
R1,WK,T1,Downtown,0,SH1
R2,WK,T2,,,
R1,WE,T3,Uptown,1,
""",
    "stop_times.txt": """\
trip_id,arrival_time,departure_time,stop_id,stop_sequence,pickup_type,drop_off_type
T1,08:00:00,08:00:00,P1,1,0,0
T1,08:10:00,08:11:00,S2,2,0,0
T1,08:20:00,08:20:00,S3,3,0,0
T2,25:30:00,25:30:00,S2,5,0,0
T2,25:40:00,25:40:00,S3,6,0,0
T3,09:00:00,09:00:00,S3,1,0,0
T3,09:10:00,09:10:00,S2,2,0,0
T3,09:20:00,09:20:00,P1,3,0,0
""",
    "calendar.txt": """\
service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date
WK,1,1,1,1,1,0,0,20261026,20261113
WE,0,0,0,0,0,1,1,20261026,20261113
""",
    "feed_info.txt": """\
feed_publisher_name,feed_publisher_url,feed_lang,feed_version
Test Publisher,https://example.com,en,2026-10
""",
    "shapes.txt": """\
shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence
SH1,40.0,-74.0,1
SH1,40.01,-74.0,2
""",
}

R1 = {"id": "R1", "agency_id": "A1", "short_name": "1", "long_name": "Main Line", "type": 3,
      "color": "FF0000", "text_color": "FFFFFF"}
R2 = {"id": "R2", "agency_id": "A1", "short_name": "", "long_name": "Night Express", "type": 3,
      "color": None, "text_color": None}
_P1 = {"stop_id": "P1", "stop_name": "Central Platform 1", "lat": 40, "lon": -74}
_S2 = {"stop_id": "S2", "stop_name": 'Café "Quote" Stop', "lat": 40.001, "lon": -74}
_S3 = {"stop_id": "S3", "stop_name": "Far Stop", "lat": 40.01, "lon": -74}
# /v1/routes/{id}: the route with its patterns (T1 and T3 run R1 both ways, T2 runs R2)
R1_DETAIL = dict(R1, patterns=[
    {"direction_id": 0, "headsigns": ["Downtown"], "trips": 1, "stops": [_P1, _S2, _S3]},
    {"direction_id": 1, "headsigns": ["Uptown"], "trips": 1, "stops": [_S3, _S2, _P1]}])
R2_DETAIL = dict(R2, patterns=[{"direction_id": None, "headsigns": [], "trips": 1, "stops": [_S2, _S3]}])


def stop_route(route, headsigns):
    """A route as a stop lists it: with the headsigns departing from there."""
    return dict(route, headsigns=headsigns)


def run_query(data, *args, stdin=None, env=None):
    cmd = [transitd_bin(), "query"]
    if data is not None:
        cmd += ["--data", str(data)]
    cmd += [str(a) for a in args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=300,
                          env=env)


def answer(data, *args):
    """The parsed JSON of a successful query, checked against the OpenAPI
    response schema of its endpoint."""
    p = run_query(data, *args)
    assert p.returncode == 0, f"query {args} exited {p.returncode}:\n{p.stderr}\n{p.stdout}"
    assert p.stdout.endswith("\n") and p.stdout.count("\n") == 1, "one JSON line expected"
    body = json.loads(p.stdout)
    errors = schema_check.validate(body, schema_check.response_schema(DOC, PATHS[args[0]]), DOC)
    assert not errors, f"{args[0]} does not match the OpenAPI schema:\n" + "\n".join(errors[:20])
    return body


def problem(data, *args, status):
    """The problem JSON of a query answered with a 4xx."""
    p = run_query(data, *args)
    assert p.returncode == 1, f"query {args}: expected exit 1, got {p.returncode}\n{p.stderr}"
    body = json.loads(p.stdout)
    schema_check.assert_matches(body, "Problem", DOC)
    assert body["status"] == status, body
    return body


def import_feed(zip_path, data_dir):
    p = subprocess.run([engine_or_skip(), "import", str(zip_path), "--data", str(data_dir),
                        "--quiet"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"import {zip_path} failed ({p.returncode}):\n{p.stderr[-3000:]}"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    engine_or_skip()
    base = tmp_path_factory.mktemp("tiny_feed")
    zip_path = base / "tiny.zip"
    with zipfile.ZipFile(zip_path, "w") as z:
        for name, text in TINY_FEED.items():
            z.writestr(name, text)
    data = base / "data"
    import_feed(zip_path, data)
    return data


@pytest.fixture(scope="module")
def cairns(tmp_path_factory):
    engine_or_skip()
    feed = shared_feed("cairns_translink_2014.zip")
    data = tmp_path_factory.mktemp("cairns") / "data"
    import_feed(feed, data)
    return data


# ------------------------------------------------------------ the document


def test_openapi_document_is_consistent():
    assert DOC["openapi"].startswith("3.1")
    refs = []

    def walk(node):
        if isinstance(node, dict):
            if "$ref" in node:
                refs.append(node["$ref"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(DOC)
    assert refs
    for ref in refs:
        schema_check.resolve(DOC, ref)   # raises when dangling
    # every schema uses only constructs the checker verifies, and every
    # object schema forbids undocumented members
    for name, sch in DOC["components"]["schemas"].items():
        schema_check.validate(None, sch, DOC)

        def objects(s):
            if isinstance(s, dict):
                if s.get("type") == "object" and "properties" in s:
                    assert s.get("additionalProperties") is False, name
                for v in s.values():
                    objects(v)
        objects(sch)
    for path in list(PATHS.values()) + ["/healthz", "/readyz", "/metrics", "/openapi.json"]:
        assert "get" in DOC["paths"][path], path
    for path in PATHS.values():
        responses = DOC["paths"][path]["get"]["responses"]
        for status in ("200", "304", "400", "405", "503"):
            assert status in responses, (path, status)
        for status in ("400", "405", "503"):
            resp = schema_check.resolve(DOC, responses[status]["$ref"])
            assert resp["content"]["application/problem+json"]["schema"] == {
                "$ref": "#/components/schemas/Problem"}
    assert "text/plain" in DOC["paths"]["/metrics"]["get"]["responses"]["200"]["content"]


def test_schema_checker_catches_drift():
    good = {"id": "R1", "agency_id": None, "short_name": "", "long_name": "x", "type": 3,
            "color": None, "text_color": None}
    assert schema_check.validate(good, schema_check.schema("Route"), DOC) == []
    assert schema_check.validate(dict(good, extra=1), schema_check.schema("Route"), DOC)
    assert schema_check.validate({k: v for k, v in good.items() if k != "type"},
                                 schema_check.schema("Route"), DOC)
    assert schema_check.validate(dict(good, type="3"), schema_check.schema("Route"), DOC)
    assert schema_check.validate(dict(good, type=True), schema_check.schema("Route"), DOC)
    dep = {"stop_id": "S", "trip_id": "T", "route_id": "R", "route_short_name": "",
           "route_long_name": "", "route_type": 3, "headsign": None,
           "wheelchair_accessible": 0, "bikes_allowed": 0,
           "service_date": "2026-11-02", "departure": "2026-11-02T08:00:00-05:00",
           "departure_secs": 28800, "stop_sequence": 1}
    assert schema_check.validate(dep, schema_check.schema("Departure"), DOC) == []
    for bad_time in ("2026-11-02T08:00:00.5-05:00", "2026-11-02 08:00:00Z", "2026-02-30T08:00:00Z",
                     "2026-11-02T08:00:00"):
        assert schema_check.validate(dict(dep, departure=bad_time),
                                     schema_check.schema("Departure"), DOC), bad_time
    assert schema_check.validate(dict(dep, service_date="20261102"),
                                 schema_check.schema("Departure"), DOC)
    assert schema_check.validate(dict(dep, departure_secs=-1), schema_check.schema("Departure"),
                                 DOC)


# ------------------------------------------------------------ usage


def test_help_exits_0():
    engine_or_skip()
    p = run_query(None, "--help")
    assert p.returncode == 0 and "usage: transitd query" in p.stdout
    for sub in list(PATHS) + ["batch"]:
        p = run_query(None, sub, "--help")
        assert p.returncode == 0, (sub, p.stderr)
        assert f"transitd query [--data DIR] [--gtfs-rt SRC] {sub}" in p.stdout, (sub, p.stdout)


@pytest.mark.parametrize("args,message", [
    ([], "missing SUBCOMMAND"),
    (["bogus"], "unknown subcommand 'bogus'"),
    (["--frobnicate", "nearby"], "unknown option '--frobnicate'"),
    (["nearby", "--lat", "1"], "missing --lon"),
    (["nearby", "--lat", "1", "--lon", "2", "--time", "2026-11-02T08:00"], "unknown option '--time'"),
    (["nearby", "--lat", "1", "--lon"], "option '--lon' needs a value"),
    (["nearby", "--lat", "1", "--lat", "2", "--lon", "3"], "option '--lat' given twice"),
    (["stop-departures", "--window", "5"], "missing --stop"),
    (["trip"], "missing ID"),
    (["trip", "T1", "T2"], "unexpected argument 'T2'"),
    (["routes", "extra"], "unexpected argument 'extra'"),
    (["search"], "missing TEXT"),
    (["batch", "--lat", "1"], "unexpected argument '--lat'"),
])
def test_usage_errors_exit_2(args, message, tmp_path):
    engine_or_skip()
    p = run_query(tmp_path, *args)
    assert p.returncode == 2, (args, p.returncode, p.stderr)
    assert message in p.stderr, p.stderr
    assert "usage:" in p.stderr
    assert p.stdout == ""


def test_missing_dataset_exits_1(tmp_path):
    engine_or_skip()
    p = run_query(tmp_path / "nothing-here", "routes")
    assert p.returncode == 1
    assert p.stdout == ""
    assert "cannot open the dataset" in p.stderr and "nothing-here" in p.stderr
    p = run_query(tmp_path / "nothing-here", "batch", stdin='{"op":"routes"}\n')
    assert p.returncode == 1 and p.stdout == ""


# ------------------------------------------------------------ the tiny feed, exactly


def test_tiny_stop_departures_of_a_station(tiny):
    body = answer(tiny, "stop-departures", "--stop", "STA", "--time", "2026-11-02T07:55",
                  "--window", "30")
    assert body == {
        "stop": {"id": "STA", "name": "Central Station"},
        "departures": [{
            "stop_id": "P1", "trip_id": "T1", "route_id": "R1", "route_short_name": "1",
            "route_long_name": "Main Line", "route_type": 3, "headsign": "Downtown",
            "wheelchair_accessible": 0, "bikes_allowed": 0,
            "service_date": "2026-11-02", "departure": "2026-11-02T08:00:00-05:00",
            "departure_secs": 28800, "stop_sequence": 1}],
        "truncated": False, "next": None, "alerts": []}


def test_tiny_past_midnight_and_dst_offsets(tiny):
    body = answer(tiny, "stop-departures", "--stop", "S2", "--time",
                  "2026-10-30T08:00:00-04:00", "--window", "1440")
    got = [(d["trip_id"], d["service_date"], d["departure"], d["departure_secs"], d["headsign"],
            d["route_short_name"], d["stop_sequence"]) for d in body["departures"]]
    assert got == [
        ("T1", "2026-10-30", "2026-10-30T08:11:00-04:00", 29460, "Downtown", "1", 2),
        ("T2", "2026-10-30", "2026-10-31T01:30:00-04:00", 91800, None, "", 5),
    ]
    assert body["truncated"] is False
    limited = answer(tiny, "stop-departures", "--stop", "S2", "--time",
                     "2026-10-30T12:08:00Z", "--window", "1440", "--limit", "1")
    assert limited["departures"] == body["departures"][:1]
    assert limited["truncated"] is True
    # Saturday before the change (EDT) and the Sunday of the change (EST)
    sat = answer(tiny, "stop-departures", "--stop", "S3", "--time", "2026-10-31T08:30",
                 "--window", "60")
    assert [d["departure"] for d in sat["departures"]] == ["2026-10-31T09:00:00-04:00"]
    sun = answer(tiny, "stop-departures", "--stop", "S3", "--time", "2026-11-01T08:30",
                 "--window", "60")
    assert [d["departure"] for d in sun["departures"]] == ["2026-11-01T09:00:00-05:00"]
    assert sun["departures"][0]["service_date"] == "2026-11-01"


def test_tiny_time_forms_agree(tiny):
    forms = ["2026-11-02T07:55", "2026-11-02T07:55:00", "2026-11-02T07:55:00-05:00",
             "2026-11-02T12:55:00Z", "2026-11-02T18:25:00+05:30"]
    outs = {run_query(tiny, "stop-departures", "--stop", "STA", "--time", t, "--window",
                      "30").stdout for t in forms}
    assert len(outs) == 1 and "2026-11-02T08:00:00-05:00" in outs.pop()


def test_tiny_nearby_departures(tiny):
    body = answer(tiny, "departures", "--lat", "40", "--lon", "-74", "--radius", "200",
                  "--time", "2026-11-02T07:55", "--window", "30")
    got = [(d["stop_id"], d["stop_name"], d["distance_m"], d["trip_id"], d["departure"])
           for d in body["departures"]]
    assert got == [
        ("P1", "Central Platform 1", 0, "T1", "2026-11-02T08:00:00-05:00"),
        ("S2", 'Café "Quote" Stop', 111, "T1", "2026-11-02T08:11:00-05:00"),
    ]
    assert body["truncated"] is False
    # the keys of a nearby departure: Departure's, then stop_name and distance_m
    assert list(body["departures"][0]) == [
        "stop_id", "trip_id", "route_id", "route_short_name", "route_long_name", "route_type",
        "headsign", "wheelchair_accessible", "bikes_allowed", "service_date", "departure",
        "departure_secs", "stop_sequence", "stop_name", "distance_m"]


def test_tiny_nearby_stops(tiny):
    body = answer(tiny, "nearby", "--lat", "40.0", "--lon", "-74.0", "--radius", "200")
    assert body == {"stops": [
        {"id": "P1", "name": "Central Platform 1", "lat": 40, "lon": -74, "distance_m": 0,
         "location_type": 0, "parent_station": "STA"},
        {"id": "STA", "name": "Central Station", "lat": 40, "lon": -74, "distance_m": 0,
         "location_type": 1, "parent_station": None},
        {"id": "S2", "name": 'Café "Quote" Stop', "lat": 40.001, "lon": -74, "distance_m": 111,
         "location_type": 0, "parent_station": None},
    ], "truncated": False, "next": None}
    limited = answer(tiny, "nearby", "--lat=40", "--lon=-74", "--limit=2")
    assert [s["id"] for s in limited["stops"]] == ["P1", "STA"]
    assert limited["truncated"] is True
    # raw output: escaped quote, UTF-8 passed through, trimmed decimals
    p = run_query(tiny, "nearby", "--lat", "40.001", "--lon", "-74", "--radius", "1")
    assert '"name":"Café \\"Quote\\" Stop","lat":40.001,"lon":-74,"distance_m":0' in p.stdout


def test_tiny_search(tiny):
    body = answer(tiny, "search", "central")
    assert sorted(s["id"] for s in body["stops"]) == ["P1", "STA"]
    assert body["truncated"] is False
    assert all("distance_m" not in s for s in body["stops"])
    cafe = answer(tiny, "search", "cafe")
    assert [s["id"] for s in cafe["stops"]] == ["S2"]
    one = answer(tiny, "search", "central", "--limit", "1")
    assert len(one["stops"]) == 1 and one["truncated"] is True
    assert answer(tiny, "search", "zzzz") == {"stops": [], "truncated": False, "next": None}


def test_tiny_stop_detail(tiny):
    assert answer(tiny, "stop", "P1") == {"stop": {
        "id": "P1", "name": "Central Platform 1", "lat": 40, "lon": -74, "location_type": 0,
        "parent_station": "STA", "code": "C1", "desc": "Northbound", "platform_code": "1",
        "wheelchair_boarding": 1, "children": [],
        "routes": [stop_route(R1, ["Downtown"])]}, "alerts": []}   # T3 (Uptown) ends at P1
    station = answer(tiny, "stop", "STA")["stop"]
    assert station["children"] == ["P1"]
    assert station["routes"] == [stop_route(R1, ["Downtown"])]
    assert station["code"] is None and station["desc"] is None
    assert station["wheelchair_boarding"] == 0
    s2 = answer(tiny, "stop", "S2")["stop"]
    assert s2["routes"] == [stop_route(R1, ["Downtown", "Uptown"]), stop_route(R2, [])]
    assert answer(tiny, "stop", "S3")["stop"]["wheelchair_boarding"] == 2


def test_tiny_routes_and_route(tiny):
    assert answer(tiny, "routes") == {"routes": [R1, R2], "next": None}
    assert answer(tiny, "route", "R2") == {"route": R2_DETAIL}
    assert answer(tiny, "route", "R1") == {"route": R1_DETAIL}


def test_tiny_trip(tiny):
    t1 = answer(tiny, "trip", "T1")["trip"]
    assert t1 == {"id": "T1", "route_id": "R1", "service_id": "WK", "headsign": "Downtown",
                  "direction_id": 0, "shape_id": "SH1", "wheelchair_accessible": 0,
                  "bikes_allowed": 0, "stop_times": [
                      {"stop_id": "P1", "stop_name": "Central Platform 1", "lat": 40.0, "lon": -74.0,
                       "platform_code": "1", "stop_sequence": 1, "arrival_secs": 28800,
                       "departure_secs": 28800},
                      {"stop_id": "S2", "stop_name": 'Café "Quote" Stop', "lat": 40.001,
                       "lon": -74.0, "platform_code": None, "stop_sequence": 2,
                       "arrival_secs": 29400, "departure_secs": 29460},
                      {"stop_id": "S3", "stop_name": "Far Stop", "lat": 40.01, "lon": -74.0,
                       "platform_code": None, "stop_sequence": 3, "arrival_secs": 30000,
                       "departure_secs": 30000}]}
    t2 = answer(tiny, "trip", "T2")["trip"]
    assert (t2["headsign"], t2["direction_id"], t2["shape_id"]) == (None, None, None)
    dated = answer(tiny, "trip", "T2", "--date", "2026-10-30")["trip"]
    assert dated["runs_on_date"] is True
    assert [(s["arrival"], s["departure"]) for s in dated["stop_times"]] == [
        ("2026-10-31T01:30:00-04:00", "2026-10-31T01:30:00-04:00"),
        ("2026-10-31T01:40:00-04:00", "2026-10-31T01:40:00-04:00")]
    sunday = answer(tiny, "trip", "T1", "--date", "2026-11-01")["trip"]
    assert sunday["runs_on_date"] is False
    assert sunday["stop_times"][1]["departure"] == "2026-11-01T08:11:00-05:00"
    assert list(sunday) == ["id", "route_id", "service_id", "headsign", "direction_id",
                            "shape_id", "wheelchair_accessible", "bikes_allowed", "runs_on_date",
                            "stop_times"]


def test_tiny_agencies_and_feed(tiny):
    assert answer(tiny, "agencies") == {"agencies": [{
        "id": "A1", "name": "Tiny Transit", "url": "https://example.com",
        "timezone": "America/New_York", "lang": "en", "phone": None}], "next": None}
    feed = answer(tiny, "feed")["feed"]
    assert re.fullmatch(r"[0-9a-f]{12}", feed["version"])
    assert feed["publisher_name"] == "Test Publisher"
    assert (feed["start_date"], feed["end_date"]) == ("2026-10-26", "2026-11-13")
    assert feed["timezone"] == "America/New_York"
    assert feed["imported_at"].endswith("Z")
    assert feed["counts"] == {"stops": 4, "routes": 2, "trips": 3, "stop_times": 8}


@pytest.mark.parametrize("args,status,detail,instance", [
    (["stop", "NOPE"], 404, "stop 'NOPE' not found", "/v1/stops/NOPE"),
    (["stop-departures", "--stop", "NOPE"], 404, "stop 'NOPE' not found",
     "/v1/stops/NOPE/departures"),
    (["route", "NOPE"], 404, "route 'NOPE' not found", "/v1/routes/NOPE"),
    (["trip", "NOPE"], 404, "trip 'NOPE' not found", "/v1/trips/NOPE"),
    (["nearby", "--lat", "91", "--lon", "0"], 400, "lat must be between -90 and 90",
     "/v1/stops/nearby"),
    (["departures", "--lat", "0", "--lon", "-180.5"], 400, "lon must be between -180 and 180",
     "/v1/departures"),
    (["departures", "--lat", "0", "--lon", "0", "--radius", "5001"], 400,
     "radius must be an integer number of metres between 1 and 5000", "/v1/departures"),
    (["stop-departures", "--stop", "STA", "--window", "0"], 400,
     "window must be an integer number of minutes between 1 and 1440",
     "/v1/stops/STA/departures"),
    (["stop-departures", "--stop", "STA", "--limit", "501"], 400,
     "limit must be an integer between 1 and 500", "/v1/stops/STA/departures"),
    (["stop-departures", "--stop", "STA", "--time", "18:15"], 400,
     "time must be an RFC 3339 date-time such as 2026-11-21T18:15:00-05:00 or a local "
     "date-time in the feed timezone such as 2026-11-21T18:15", "/v1/stops/STA/departures"),
    (["trip", "T1", "--date", "2026-02-30"], 400, "date must be a calendar date YYYY-MM-DD",
     "/v1/trips/T1"),
    (["search", " "], 400, "q must not be empty", "/v1/stops"),
])
def test_tiny_bad_queries_print_a_problem_and_exit_1(tiny, args, status, detail, instance):
    body = problem(tiny, *args, status=status)
    assert body == {"type": "about:blank",
                    "title": "Not Found" if status == 404 else "Bad Request",
                    "status": status, "detail": detail, "instance": instance}


def test_tiny_data_dir_from_environment(tiny):
    env = dict(os.environ, TRANSITD_DATA=str(tiny))
    p = run_query(None, "route", "R1", env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"route": R1_DETAIL}


# ------------------------------------------------------------ batch


def test_tiny_batch(tiny):
    good = [
        ({"op": "stop-departures", "stop": "STA", "time": "2026-11-02T07:55", "window": 30,
          "limit": 500},
         ["stop-departures", "--stop", "STA", "--time", "2026-11-02T07:55", "--window", "30",
          "--limit", "500"]),
        ({"op": "departures", "lat": 40.0, "lon": -74.0, "radius": 200,
          "time": "2026-11-02T07:55:00-05:00", "window": 30, "limit": 50},
         ["departures", "--lat", "40", "--lon", "-74", "--radius", "200", "--time",
          "2026-11-02T07:55:00-05:00", "--window", "30", "--limit", "50"]),
        ({"op": "nearby", "lat": 40.0005, "lon": -74, "radius": 200},
         ["nearby", "--lat", "40.0005", "--lon", "-74", "--radius", "200"]),
        ({"op": "search", "q": "central", "limit": 5}, ["search", "central", "--limit", "5"]),
        ({"op": "trip", "trip": "T1", "date": "2026-11-02"}, ["trip", "T1", "--date", "2026-11-02"]),
        ({"op": "stop", "stop": "STA"}, ["stop", "STA"]),
        ({"op": "route", "route": "R1"}, ["route", "R1"]),
        ({"op": "routes"}, ["routes"]),
        ({"op": "agencies"}, ["agencies"]),
    ]
    bad = [
        ("", 400, "empty line: expected a JSON object"),
        ("not json", 400, None),
        ("[1, 2]", 400, "expected a JSON object"),
        ('{"op": "bogus"}', 400, "unknown op 'bogus'"),
        ('{"stop": "STA"}', 400, "missing required parameter 'op'"),
        ('{"op": "stop", "stop": "NOPE"}', 404, "stop 'NOPE' not found"),
        ('{"op": "nearby", "lat": 91, "lon": 0}', 400, "lat must be between -90 and 90"),
        ('{"op": "nearby", "lat": 40, "lon": -74, "foo": 1}', 400, "unknown parameter 'foo'"),
        ('{"op": "stop-departures", "window": 60}', 400, "missing required parameter 'stop'"),
        ('{"op": "nearby", "lat": true, "lon": 0}', 400,
         "parameter 'lat' must be a string or a number"),
        ('{"op": "stop-departures", "stop": "STA", "window": 60.5}', 400,
         "window must be an integer number of minutes between 1 and 1440"),
        ('{"op": "stop", "stop": "STA", "stop": "P1"}', 400, None),
    ]
    lines = [json.dumps(q, ensure_ascii=False) for q, _ in good] + [b for b, _, _ in bad]
    # interleave good and bad lines so a misaligned answer cannot pass
    order = []
    for i in range(max(len(good), len(bad))):
        if i < len(good):
            order.append(("good", i))
        if i < len(bad):
            order.append(("bad", i))
    text = "".join(
        (json.dumps(good[i][0], ensure_ascii=False) if kind == "good" else bad[i][0]) + "\n"
        for kind, i in order)
    assert len(lines) == len(order)
    p = run_query(tiny, "batch", stdin=text)
    assert p.returncode == 0, p.stderr
    out = p.stdout.split("\n")
    assert out[-1] == "" and len(out) - 1 == len(order), p.stdout
    for (kind, i), line in zip(order, out):
        if kind == "good":
            args = good[i][1]
            single = run_query(tiny, *args)
            assert single.returncode == 0, (args, single.stderr)
            assert line + "\n" == single.stdout, f"batch and `query {' '.join(args)}` differ"
        else:
            body = json.loads(line)
            _, status, detail = bad[i]
            assert list(body) == ["error"] and set(body["error"]) == {"status", "detail"}, body
            assert body["error"]["status"] == status, (bad[i], body)
            if detail is not None:
                assert body["error"]["detail"] == detail, (bad[i], body)
            else:
                assert body["error"]["detail"], body


def test_tiny_batch_of_nothing(tiny):
    p = run_query(tiny, "batch", stdin="")
    assert p.returncode == 0 and p.stdout == ""


def test_tiny_batch_without_final_newline_and_crlf(tiny):
    p = run_query(tiny, "batch", stdin='{"op":"route","route":"R1"}\r\n{"op":"route","route":"R2"}')
    assert p.returncode == 0, p.stderr
    assert [json.loads(x) for x in p.stdout.splitlines()] == [{"route": R1_DETAIL}, {"route": R2_DETAIL}]


# ------------------------------------------------------------ the Cairns feed: shapes at scale

PIER = "750449"    # "The Pier Cairns - Terminus Stop E": 607 stop times, all trips' last stop
PIER_A = "750450"  # "The Pier Cairns - Terminus Stop A", 21 m away: trips start here


def test_cairns_every_subcommand_matches_the_schema(cairns):
    nearby = answer(cairns, "nearby", "--lat", "-16.920876", "--lon", "145.779259",
                    "--radius", "300", "--limit", "50")
    assert nearby["stops"][0]["id"] == PIER and nearby["stops"][0]["distance_m"] == 0
    dists = [s["distance_m"] for s in nearby["stops"]]
    assert dists == sorted(dists) and dists[-1] <= 300

    # the last stop of a trip has no departures
    terminus = answer(cairns, "stop-departures", "--stop", PIER, "--time", "2014-06-02T00:00",
                      "--window", "1440", "--limit", "500")
    assert terminus["departures"] == [] and terminus["truncated"] is False
    board = answer(cairns, "stop-departures", "--stop", PIER_A, "--time", "2014-06-02T00:00",
                   "--window", "1440", "--limit", "500")
    deps = board["departures"]
    assert len(deps) > 20 and board["stop"]["id"] == PIER_A
    assert all(d["departure"].endswith("+10:00") for d in deps)
    assert [d["departure"] for d in deps] == sorted(d["departure"] for d in deps)
    assert {d["service_date"] for d in deps} <= {"2014-06-01", "2014-06-02"}

    near = answer(cairns, "departures", "--lat", "-16.920876", "--lon", "145.779259",
                  "--time", "2014-06-02T07:00:00+10:00", "--window", "120")
    assert near["departures"] and all(d["distance_m"] <= 500 for d in near["departures"])

    found = answer(cairns, "search", "pier")
    assert PIER in [s["id"] for s in found["stops"]]

    trip_id = deps[0]["trip_id"]
    trip = answer(cairns, "trip", trip_id, "--date", deps[0]["service_date"])["trip"]
    assert trip["runs_on_date"] is True
    assert any(st["stop_id"] == PIER_A and st["departure"] == deps[0]["departure"]
               for st in trip["stop_times"])

    stop = answer(cairns, "stop", PIER)["stop"]
    assert stop["name"] == "The Pier Cairns - Terminus Stop E" and stop["routes"]

    routes = answer(cairns, "routes")["routes"]
    assert len(routes) == 22
    route = answer(cairns, "route", routes[0]["id"])["route"]
    assert {k: v for k, v in route.items() if k != "patterns"} == routes[0] and route["patterns"]

    agencies = answer(cairns, "agencies")["agencies"]
    assert len(agencies) == 1 and agencies[0]["timezone"] == "Australia/Brisbane"

    feed = answer(cairns, "feed")["feed"]
    assert feed["counts"]["stops"] == 416 and feed["counts"]["routes"] == 22
    assert feed["counts"]["trips"] == 1339
    assert feed["publisher_name"] is None          # Cairns has no feed_info.txt
    assert feed["start_date"] >= "2014-05-26" and feed["end_date"] <= "2014-12-28"


def test_cairns_batch_matches_single_commands(cairns):
    queries = [
        {"op": "stop-departures", "stop": PIER_A, "time": "2014-06-02T06:00", "window": 60,
         "limit": 500},
        {"op": "departures", "lat": -16.920876, "lon": 145.779259, "radius": 400,
         "time": "2014-06-02T06:00:00+10:00", "window": 30, "limit": 50},
        {"op": "nearby", "lat": -16.92, "lon": 145.78},
    ]
    p = run_query(cairns, "batch", stdin="".join(json.dumps(q) + "\n" for q in queries))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 3
    single = [
        ["stop-departures", "--stop", PIER_A, "--time", "2014-06-02T06:00", "--window", "60",
         "--limit", "500"],
        ["departures", "--lat", "-16.920876", "--lon", "145.779259", "--radius", "400", "--time",
         "2014-06-02T06:00:00+10:00", "--window", "30", "--limit", "50"],
        ["nearby", "--lat", "-16.92", "--lon", "145.78"],
    ]
    for line, args in zip(lines, single):
        assert line + "\n" == run_query(cairns, *args).stdout, args
    assert json.loads(lines[0])["departures"]
