"""The API a transit app needs (issue #27, first part), over real HTTP on the
generated demo feed: boards of arrivals and of both kinds (`kind`,
/v1/stops/{id}/arrivals), every answer held to docs/openapi.json, bad
parameters answered with a 400 naming them and unknown ids with a 404.

The server runs once for the module against the demo feed (bench/gtfs_gen.py
--scale demo, seed 1), so nothing here needs ../shared; the shared feeds'
checks are in test_transit_app_feeds.py.
"""
import shutil

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
