"""The edges of GTFS-Realtime trip semantics (issue #26), one test per case,
each held on stop and station boards, nearby departures, arrivals,
/v1/trips/{id} and the export, in both realtime modes:

  - a REPLACEMENT's NO_DATA, SKIPPED and SCHEDULED calls, with and without
    StopTimeProperties.assigned_stop_id: its calls are its stop_time_updates
    only, so a NO_DATA call is a call at the scheduled time of its
    stop_sequence (no prediction: `scheduled` set, `predicted` null) and a
    SKIPPED call a canceled row (as a timetable trip's skipped stop), and
    the platform change applies to either;
  - the REPLACEMENT of a frequency-based run (its times from the run's
    start_time; two runs of one day replaced apart);
  - a DUPLICATED copy on another date, with a platform change and a skipped
    stop;
  - a NEW trip past midnight with TripProperties (headsign, shape_id);
  - a NEW trip whose updates give only an arrival or only a departure;
  - CANCELED or DELETED and a REPLACEMENT of one instance in one feed: the
    first in the feed is the instance's update, the other goes whole;
  - an assigned_stop_id the dataset lacks on a REPLACEMENT's NO_DATA call:
    counted, logged, the row stays at the scheduled stop;
  - the same trip updated by two sources: the newest feed wins, a
    REPLACEMENT with its calls or not at all.
Feeds are built with the protobuf package from the official .proto
(gtfs_rt_pb.py), never by transitd's encoder.

The timetable (Monday 2026-11-02, America/New_York): trips T0900..T1050
leave platform A1 of station STA every ten minutes and call at B ten and at
C twenty minutes later; A2 is STA's other platform (22 m from A1), B2 a
stop beside B. Frequency trip F (route Q) runs FA -> FB every 20 minutes
from 08:00 to 10:00 (exact_times=1), ten minutes each.
"""
import datetime
import json
import time

import pytest
import requests

import schema_check
from gtfs_rt_pb import new_feed, pb2
from http_server import Server, import_files_with_realtime
from test_cli_query import run_query

DOC = schema_check.load_openapi()
DAY = "20261102"
NINE = "2026-11-02T09:00:00-05:00"
A2 = {"id": "A2", "name": "Platform A2", "platform_code": "2", "lat": 40.0002, "lon": -74}
B2 = {"id": "B2", "name": "Stop B2", "platform_code": None, "lat": 40.0022, "lon": -74}
MODES = ["predicted", "scheduled"]


def hhmm(minutes):
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


TRIPS = [(f"T{h:02d}{m:02d}", h * 60 + m) for h in (9, 10) for m in range(0, 60, 10)]

FEED = {
    "agency.txt": "agency_id,agency_name,agency_url,agency_timezone\n"
                  "AG,Edge Transit,https://example.com,America/New_York\n",
    "stops.txt": "stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station,platform_code\n"
                 "STA,Station,40.0,-74.0,1,,\n"
                 "A1,Platform A1,40.0,-74.0,0,STA,1\n"
                 "A2,Platform A2,40.0002,-74.0,0,STA,2\n"
                 "B,Stop B,40.002,-74.0,0,,\n"
                 "B2,Stop B2,40.0022,-74.0,0,,\n"
                 "C,Stop C,40.004,-74.0,0,,\n"
                 "FA,Stop FA,40.1,-74.0,0,,\n"
                 "FB,Stop FB,40.102,-74.0,0,,\n",
    "routes.txt": "route_id,agency_id,route_short_name,route_type\nR,AG,9,3\nQ,AG,Q,3\n",
    "trips.txt": "route_id,service_id,trip_id,trip_headsign,shape_id\n"
                 + "".join(f"R,WK,{t},To C,S1\n" for t, _ in TRIPS) + "Q,WK,F,To FB,\n",
    "stop_times.txt": "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n" + "".join(
        f"{t},{hhmm(m)},{hhmm(m)},A1,1\n{t},{hhmm(m + 10)},{hhmm(m + 10)},B,2\n"
        f"{t},{hhmm(m + 20)},{hhmm(m + 20)},C,3\n" for t, m in TRIPS)
        + "F,08:00:00,08:00:00,FA,1\nF,08:10:00,08:10:00,FB,2\n",
    "frequencies.txt": "trip_id,start_time,end_time,headway_secs,exact_times\nF,08:00:00,10:00:00,1200,1\n",
    "shapes.txt": "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\n"
                  "S1,40.0,-74.0,1\nS1,40.004,-74.0,2\n"
                  "S2,40.0,-74.0,1\nS2,40.001,-74.001,2\nS2,40.002,-74.0,3\n",
    "calendar.txt": "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
                    "start_date,end_date\nWK,1,1,1,1,1,0,0,20261026,20261113\n",
}


def at(hh_mm, day="2026-11-02"):
    return int(datetime.datetime.fromisoformat(f"{day}T{hh_mm}:00-05:00").timestamp())


def iso(hh_mm, day="2026-11-02"):
    return f"{day}T{hh_mm}:00-05:00"


def trip_entity(m, entity_id, trip_id, relationship="SCHEDULED", start_date=DAY):
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


def call(tu, seq=None, stop_id=None, relationship=None, departure=None, arrival=None, delay=None,
         assigned=None):
    g = pb2()
    u = tu.stop_time_update.add()
    if seq is not None:
        u.stop_sequence = seq
    if stop_id is not None:
        u.stop_id = stop_id
    if relationship is not None:
        u.schedule_relationship = getattr(g.TripUpdate.StopTimeUpdate, relationship)
    if departure is not None:
        u.departure.time = departure
    if arrival is not None:
        u.arrival.time = arrival
    if delay is not None:
        u.departure.delay = delay
        u.arrival.delay = delay
    if assigned is not None:
        u.stop_time_properties.assigned_stop_id = assigned
    return u


def updates():
    m = new_feed(timestamp=at("08:00"))
    # REPLACEMENT calls: NO_DATA assigned (A2), SCHEDULED assigned (B2), NO_DATA
    tu = trip_entity(m, "rep-nodata", "T0900", "REPLACEMENT")
    call(tu, 1, relationship="NO_DATA", assigned="A2")
    call(tu, 2, stop_id="B2", delay=120, assigned="B2")   # stop_id, if given, is the assigned stop
    call(tu, 3, relationship="NO_DATA")
    # SKIPPED, SCHEDULED, SCHEDULED (a time)
    tu = trip_entity(m, "rep-skipped", "T0910", "REPLACEMENT")
    call(tu, 1, relationship="SKIPPED")
    call(tu, 2, delay=60)
    call(tu, 3, arrival=at("09:31"))
    # SKIPPED assigned (A2), SCHEDULED, NO_DATA
    tu = trip_entity(m, "rep-skipped-assigned", "T0920", "REPLACEMENT")
    call(tu, 1, relationship="SKIPPED", assigned="A2")
    call(tu, 2, delay=0)
    call(tu, 3, relationship="NO_DATA")
    # a DUPLICATED copy of T0930 on Tuesday at 07:00: its departure assigned to A2,
    # B skipped, C carried on (delay 60 from A)
    tu = trip_entity(m, "dup", "T0930", "DUPLICATED")
    tu.trip_properties.trip_id = "T0930-tue"
    tu.trip_properties.start_date = "20261103"
    tu.trip_properties.start_time = "07:00:00"
    call(tu, 1, delay=60, assigned="A2")
    call(tu, 2, relationship="SKIPPED")
    # T0940: CANCELED, then a REPLACEMENT of the same instance (the first stays)
    trip_entity(m, "can-first", "T0940", "CANCELED")
    tu = trip_entity(m, "rep-second", "T0940", "REPLACEMENT")
    call(tu, 1, delay=300)
    call(tu, 2, delay=300)
    # T0950: a REPLACEMENT, then DELETED (the first stays)
    tu = trip_entity(m, "rep-first", "T0950", "REPLACEMENT")
    call(tu, 1, delay=180)
    call(tu, 3, delay=180)
    trip_entity(m, "del-second", "T0950", "DELETED")
    # T1000: DELETED, then a REPLACEMENT (the first stays: no rows at all)
    trip_entity(m, "del-first", "T1000", "DELETED")
    tu = trip_entity(m, "rep-after-del", "T1000", "REPLACEMENT")
    call(tu, 1, delay=0)
    call(tu, 2, delay=0)
    # T1010: a NO_DATA call assigned to a stop the dataset lacks: it stays at A1
    tu = trip_entity(m, "rep-unknown", "T1010", "REPLACEMENT")
    call(tu, 1, relationship="NO_DATA", assigned="NOPE")
    call(tu, 2, delay=0)
    # the frequency trip: the 09:00 and 09:20 runs replaced
    tu = trip_entity(m, "freq-0900", "F", "REPLACEMENT")
    tu.trip.start_time = "09:00:00"
    call(tu, 1, delay=180)
    call(tu, 2, relationship="NO_DATA")
    tu = trip_entity(m, "freq-0920", "F", "REPLACEMENT")
    tu.trip.start_time = "09:20:00"
    call(tu, 1, delay=60)
    call(tu, 2, delay=60)
    # NEW past midnight, of 2026-11-02's service: A1 24:30, B 24:40, headsign and shape
    tu = trip_entity(m, "night", "N1", "NEW")
    tu.trip.route_id = "R"
    tu.trip_properties.trip_headsign = "Night to B"
    tu.trip_properties.shape_id = "S2"
    call(tu, stop_id="A1", departure=at("00:30", "2026-11-03"))
    call(tu, stop_id="B", arrival=at("00:40", "2026-11-03"))
    # NEW with one event a call: A1 departure only, B arrival only, C departure only
    tu = trip_entity(m, "half", "N2", "NEW")
    tu.trip.route_id = "R"
    call(tu, stop_id="A1", departure=at("09:13"))
    call(tu, stop_id="B", arrival=at("09:23"))
    call(tu, stop_id="C", departure=at("09:33"))
    return m.SerializeToString()


@pytest.fixture(scope="module")
def feed():
    return import_files_with_realtime("realtime-trip-edges", FEED, updates())


def batch(base, queries, rt_files=None):
    files = rt_files if rt_files is not None else [base / "rt.pb"]
    args = [a for f in files for a in ("--gtfs-rt", str(f))]
    lines = "".join(json.dumps(q) + "\n" for q in queries)
    p = run_query(base / "data", *args, "batch", stdin=lines)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


def board(base, stop, time_=NINE, window=60, op="stop-departures", rt_files=None, **params):
    body = batch(base, [{"op": op, "stop": stop, "time": time_, "window": window, **params}], rt_files)[0]
    key = "arrivals" if op == "stop-arrivals" else "departures"
    assert key in body, body
    schema_check.assert_matches(body, "StopArrivalsResponse" if key == "arrivals" else "StopDeparturesResponse",
                                DOC)
    return body[key]


def nearby(base, lat, lon, radius=60, time_=NINE, window=60, **params):
    body = batch(base, [{"op": "departures", "lat": lat, "lon": lon, "radius": radius, "time": time_,
                         "window": window, **params}])[0]
    schema_check.assert_matches(body, "DeparturesResponse", DOC)
    return body["departures"]


def trip(base, trip_id, rt_files=None, **params):
    body = batch(base, [{"op": "trip", "trip": trip_id, **params}], rt_files)[0]
    assert "trip" in body, body
    schema_check.assert_matches(body, "TripResponse", DOC)
    return body["trip"]


def rows_of(rows, trip_id):
    return [r for r in rows if r["trip_id"] == trip_id]


def when(row):
    return row.get("departure") or row.get("arrival")


@pytest.mark.parametrize("mode", MODES)
def test_replacement_no_data_call_is_kept_at_its_scheduled_time_and_assigned_stop(feed, mode):
    """The known bug: T0900's NO_DATA call assigned to A2 was dropped. It is a
    call of the replacement at the scheduled 09:00, served at A2 (the row
    names A1 and shows assigned_stop), with no prediction; its SCHEDULED call
    at B (delay 120, assigned to B2, stop_id B2 as the spec wants it when
    given: the row still names the scheduled B) and NO_DATA call at C (09:20)
    too."""
    a2 = rows_of(board(feed, "A2", realtime=mode), "T0900")
    assert len(a2) == 1, a2
    row = a2[0]
    assert row["trip_relationship"] == "REPLACEMENT" and row["added"] is True
    assert row["stop_id"] == "A1" and row["assigned_stop"] == A2
    assert row["departure"] == iso("09:00") and row["scheduled"] == iso("09:00")
    assert row["predicted"] is None and row["delay_s"] is None and row["canceled"] is False
    assert rows_of(board(feed, "A1", realtime=mode), "T0900") == []   # moved away, and the schedule hidden
    assert [when(r) for r in rows_of(board(feed, "STA", realtime=mode), "T0900")] == [iso("09:00")]
    b2 = rows_of(board(feed, "B2", realtime=mode), "T0900")
    assert [(r["stop_id"], r["departure"], r["predicted"]) for r in b2] == [("B", iso("09:12"), iso("09:12"))]
    c = rows_of(board(feed, "C", op="stop-arrivals", realtime=mode), "T0900")
    assert [(r["arrival"], r["scheduled"], r["predicted"]) for r in c] == [(iso("09:20"), iso("09:20"), None)]
    near = rows_of(nearby(feed, 40.0, -74.0, radius=60, realtime=mode), "T0900")
    assert [(r["stop_id"], r["distance_m"], r["assigned_stop"]["id"]) for r in near] == [("A1", 22, "A2")]
    t = trip(feed, "T0900", date="2026-11-02")
    assert t["realtime_only"] is True and t["trip_relationship"] == "REPLACEMENT"
    assert [(s["stop_id"], s.get("assigned_stop", {}).get("id"), s["departure"], s["arrival"])
            for s in t["stop_times"]] == [("A1", "A2", iso("09:00"), None), ("B", "B2", iso("09:12"), iso("09:12")),
                                          ("C", None, None, iso("09:20"))]


@pytest.mark.parametrize("mode", MODES)
def test_replacement_skipped_call_is_a_canceled_row(feed, mode):
    """T0910's SKIPPED first call: the vehicle does not stop at A1, and the
    rider there sees the 09:10 row canceled (as a timetable trip's skipped
    stop), not nothing; its SCHEDULED calls keep their times (B 09:21, C
    09:31). A skipped call is not a departure: the trip still departs from B."""
    a1 = rows_of(board(feed, "A1", realtime=mode), "T0910")
    assert [(r["departure"], r["canceled"], r["scheduled"], r["predicted"]) for r in a1] == [
        (iso("09:10"), True, iso("09:10"), None)]
    assert a1[0]["trip_relationship"] == "REPLACEMENT" and "assigned_stop" not in a1[0]
    b = rows_of(board(feed, "B", realtime=mode), "T0910")
    assert [(r["departure"], r["canceled"], r["predicted"]) for r in b] == [(iso("09:21"), False, iso("09:21"))]
    c = rows_of(board(feed, "C", op="stop-arrivals", realtime=mode), "T0910")
    assert [(r["arrival"], r["canceled"]) for r in c] == [(iso("09:31"), False)]
    t = trip(feed, "T0910", date="2026-11-02")
    assert [(s["stop_id"], s.get("skipped", False)) for s in t["stop_times"]] == [
        ("A1", True), ("B", False), ("C", False)]


@pytest.mark.parametrize("mode", MODES)
def test_replacement_skipped_call_with_an_assigned_stop(feed, mode):
    """T0920's SKIPPED call assigned to A2: StopTimeProperties still apply,
    so the canceled row is on A2's board (naming A1), not A1's; its NO_DATA
    last call is an arrival at the scheduled 09:40."""
    assert rows_of(board(feed, "A1", realtime=mode), "T0920") == []
    a2 = rows_of(board(feed, "A2", realtime=mode), "T0920")
    assert [(r["stop_id"], r["assigned_stop"]["id"], r["departure"], r["canceled"]) for r in a2] == [
        ("A1", "A2", iso("09:20"), True)]
    c = rows_of(board(feed, "C", op="stop-arrivals", realtime=mode), "T0920")
    assert [(r["arrival"], r["scheduled"], r["predicted"]) for r in c] == [(iso("09:40"), iso("09:40"), None)]


@pytest.mark.parametrize("mode", MODES)
def test_replacement_of_frequency_runs(feed, mode):
    """F's 09:00 run replaced with a 180 s delay leaves FA at 09:03 (not
    08:03, the template's first run plus the delay), its NO_DATA arrival at
    FB at the run's 09:10; the 09:20 run, replaced too, at 09:21 (a second
    replacement of the same trip and day is another run's, not a duplicate).
    The other runs are as scheduled."""
    rows = board(feed, "FA", time_=iso("08:30"), window=90, realtime=mode)
    assert [(r["departure"], r.get("trip_relationship")) for r in rows] == [
        (iso("08:40"), None), (iso("09:03"), "REPLACEMENT"), (iso("09:21"), "REPLACEMENT"), (iso("09:40"), None)]
    arr = board(feed, "FB", op="stop-arrivals", time_=iso("09:05"), window=20, realtime=mode)
    assert [(r["arrival"], r.get("predicted"), r.get("trip_relationship")) for r in arr] == [
        (iso("09:10"), None, "REPLACEMENT")]
    # the trip's detail is its template, even on a day some of its runs are replaced
    t = trip(feed, "F", date="2026-11-02")
    assert "realtime_only" not in t and [s["departure_secs"] for s in t["stop_times"]] == [8 * 3600, 8 * 3600 + 600]


@pytest.mark.parametrize("mode", MODES)
def test_duplicated_on_another_date_with_an_assigned_stop_and_a_skipped_stop(feed, mode):
    """T0930-tue: T0930 copied to Tuesday 07:00 (TripProperties.start_date and
    start_time), 60 s late from A, served at A2 there; its skipped stop B is a
    canceled row at the copy's 07:10 (as the original's would be), and C is
    predicted 07:21. Monday's T0930 keeps its stops and times."""
    tue = "2026-11-03"
    a2 = rows_of(board(feed, "A2", time_=iso("06:30", tue), realtime=mode), "T0930-tue")
    assert [(r["stop_id"], r["departure"], r["service_date"], r["trip_relationship"]) for r in a2] == [
        ("A1", iso("07:01", tue), tue, "DUPLICATED")]
    assert rows_of(board(feed, "A1", time_=iso("06:30", tue), realtime=mode), "T0930-tue") == []
    b = rows_of(board(feed, "B", time_=iso("06:30", tue), realtime=mode), "T0930-tue")
    assert [(r["departure"], r["canceled"], r["scheduled"], r["predicted"]) for r in b] == [
        (iso("07:10", tue), True, iso("07:10", tue), None)]
    c = rows_of(board(feed, "C", op="stop-arrivals", time_=iso("06:30", tue), realtime=mode), "T0930-tue")
    assert [(r["arrival"], r["canceled"]) for r in c] == [(iso("07:21", tue), False)]
    monday = rows_of(board(feed, "A1", realtime=mode), "T0930")
    assert [(r["departure"], "added" in r) for r in monday] == [(iso("09:30"), False)]
    t = trip(feed, "T0930-tue", date=tue)
    assert t["source_trip_id"] == "T0930" and t["service_date"] == tue
    assert [(s["stop_id"], s.get("assigned_stop", {}).get("id"), s.get("skipped", False))
            for s in t["stop_times"]] == [("A1", "A2", False), ("B", None, True), ("C", None, False)]


@pytest.mark.parametrize("mode", MODES)
def test_new_trip_past_midnight_with_trip_properties(feed, mode):
    """N1, NEW on Monday's service at 24:30: on the boards of Tuesday 00:00
    with service_date Monday, headsign TripProperties.trip_headsign; at
    /v1/trips its shape_id, and with include=shape that shape (S2)."""
    rows = rows_of(board(feed, "A1", time_=iso("00:00", "2026-11-03"), realtime=mode), "N1")
    assert [(r["departure"], r["service_date"], r["departure_secs"], r["headsign"]) for r in rows] == [
        (iso("00:30", "2026-11-03"), "2026-11-02", 24 * 3600 + 1800, "Night to B")]
    arr = rows_of(board(feed, "B", op="stop-arrivals", time_=iso("00:00", "2026-11-03"), realtime=mode), "N1")
    assert [r["arrival"] for r in arr] == [iso("00:40", "2026-11-03")]
    t = trip(feed, "N1", date="2026-11-02", include="shape")
    assert t["headsign"] == "Night to B" and t["shape_id"] == "S2" and t["service_date"] == "2026-11-02"
    assert t["shape"]["id"] == "S2" and t["shape"]["source"] == "feed" and t["shape"]["points"] == 3
    assert [s["departure_secs"] for s in t["stop_times"]] == [24 * 3600 + 1800, None]
    assert trip(feed, "N1")["shape_id"] == "S2"


@pytest.mark.parametrize("mode", MODES)
def test_new_trip_with_only_arrivals_or_only_departures(feed, mode):
    """N2 gives A1 a departure only, B an arrival only and C a departure
    only: a missing event takes the other's time, so N2 departs A1 09:13
    and B 09:23 and arrives at B 09:23 and C 09:33."""
    assert [r["departure"] for r in rows_of(board(feed, "A1", realtime=mode), "N2")] == [iso("09:13")]
    assert [r["departure"] for r in rows_of(board(feed, "B", realtime=mode), "N2")] == [iso("09:23")]
    assert [r["arrival"] for r in rows_of(board(feed, "B", op="stop-arrivals", realtime=mode), "N2")] == [
        iso("09:23")]
    assert [r["arrival"] for r in rows_of(board(feed, "C", op="stop-arrivals", realtime=mode), "N2")] == [
        iso("09:33")]
    assert rows_of(board(feed, "C", realtime=mode), "N2") == []   # the last call: no departure
    both = rows_of(board(feed, "C", kind="both", realtime=mode), "N2")
    assert [r["arrival"] for r in both] == [iso("09:33")]


@pytest.mark.parametrize("mode", MODES)
def test_canceled_or_deleted_and_a_replacement_of_one_instance(feed, mode):
    """Two updates of one instance in a feed: the first is the instance's,
    the other goes whole. T0940 CANCELED then REPLACED: canceled rows, no
    replacement rows. T0950 REPLACED then DELETED: the replacement's rows
    only. T1000 DELETED then REPLACED: no rows at all."""
    a1 = board(feed, "A1", realtime=mode)
    assert [(r["departure"], r["canceled"], "added" in r) for r in rows_of(a1, "T0940")] == [
        (iso("09:40"), True, False)]
    assert [(r["departure"], r["trip_relationship"]) for r in rows_of(a1, "T0950")] == [
        (iso("09:53"), "REPLACEMENT")]
    assert rows_of(a1, "T1000") == []
    b = board(feed, "B", realtime=mode)
    assert [(r["departure"], r["canceled"]) for r in rows_of(b, "T0940")] == [(iso("09:50"), True)]
    assert rows_of(b, "T0950") == [] and rows_of(b, "T1000") == []
    assert "realtime_only" not in trip(feed, "T0940", date="2026-11-02")
    assert trip(feed, "T0950", date="2026-11-02")["trip_relationship"] == "REPLACEMENT"
    assert "realtime_only" not in trip(feed, "T1000", date="2026-11-02")


@pytest.mark.parametrize("mode", MODES)
def test_unknown_assigned_stop_on_a_replacement_call(feed, mode):
    """T1010's NO_DATA call assigned to NOPE: the assignment is skipped (and
    counted: test_server_metrics_log_and_export_round_trip), the call stays
    at A1 at its scheduled 10:10."""
    a1 = rows_of(board(feed, "A1", time_=iso("10:00"), realtime=mode), "T1010")
    assert [(r["departure"], r["scheduled"], r["predicted"], "assigned_stop" in r) for r in a1] == [
        (iso("10:10"), iso("10:10"), None, False)]
    assert rows_of(board(feed, "A2", time_=iso("10:00"), realtime=mode), "T1010") == []


def two_sources(tmp_path, older_first):
    """Two sources: an older feed (08:00) REPLACES T1020 and F's 09:40 run, a
    newer one (08:05) CANCELS T1020 and F's 09:00 run."""
    old = new_feed(timestamp=at("08:00"))
    tu = trip_entity(old, "rep", "T1020", "REPLACEMENT")
    call(tu, 1, delay=240)
    call(tu, 2, delay=240)
    tu = trip_entity(old, "rep-run", "F", "REPLACEMENT")
    tu.trip.start_time = "09:40:00"
    call(tu, 1, delay=120)
    call(tu, 2, delay=120)
    new = new_feed(timestamp=at("08:05"))
    trip_entity(new, "can", "T1020", "CANCELED")
    trip_entity(new, "can-run", "F", "CANCELED").trip.start_time = "09:00:00"
    (tmp_path / "old.pb").write_bytes(old.SerializeToString())
    (tmp_path / "new.pb").write_bytes(new.SerializeToString())
    files = [tmp_path / "old.pb", tmp_path / "new.pb"]
    return files if older_first else files[::-1]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("older_first", [True, False])
def test_two_sources_the_newest_feed_wins_per_instance(feed, tmp_path, mode, older_first):
    """The merge rule: where two sources update one trip instance, the
    newest feed's update is the one shown, whichever source is given first
    (T1020: canceled, the older REPLACEMENT gone whole); a frequency-based
    trip's runs are instances apart (start_time), so one source's update of
    the 09:00 run and another's of the 09:40 run both apply (before, the
    older was dropped as the same trip)."""
    files = two_sources(tmp_path, older_first)
    a1 = rows_of(board(feed, "A1", time_=iso("10:00"), rt_files=files, realtime=mode), "T1020")
    assert [(r["departure"], r["canceled"], "added" in r) for r in a1] == [(iso("10:20"), True, False)]
    assert "realtime_only" not in trip(feed, "T1020", rt_files=files, date="2026-11-02")
    fa = board(feed, "FA", time_=iso("08:50"), window=60, rt_files=files, realtime=mode)
    assert [(r["departure"], r["canceled"], r.get("trip_relationship")) for r in fa] == [
        (iso("09:00"), True, None), (iso("09:20"), False, None), (iso("09:42"), False, "REPLACEMENT")]


QUERIES = [{"op": op, "stop": stop, "time": t, "window": 90, "realtime": mode, **extra}
           for mode in MODES
           for op, stop, t, extra in [
               ("stop-departures", "STA", iso("08:45"), {}), ("stop-departures", "A2", iso("08:45"), {}),
               ("stop-departures", "B", iso("08:45"), {}), ("stop-arrivals", "C", iso("08:45"), {}),
               ("stop-departures", "C", iso("08:45"), {"kind": "both"}),
               ("stop-departures", "FA", iso("08:30"), {}), ("stop-arrivals", "FB", iso("08:30"), {}),
               ("stop-departures", "A1", iso("00:00", "2026-11-03"), {}),
               ("stop-departures", "B", iso("06:30", "2026-11-03"), {})]] + [
    {"op": "departures", "lat": 40.0, "lon": -74.0, "radius": 500, "time": iso("08:45"), "window": 90,
     "realtime": mode} for mode in MODES] + [
    {"op": "trip", "trip": t, "date": d} for t, d in [("T0900", "2026-11-02"), ("T0910", "2026-11-02"),
                                                      ("T0930-tue", "2026-11-03"), ("N1", "2026-11-02"),
                                                      ("N2", "2026-11-02")]]


def test_server_metrics_log_and_export_round_trip(feed, tmp_path):
    """A server on the feed: /metrics counts the unknown assigned stop and the
    updates dropped as second ones of an instance, the log names the unknown
    stop, and the export fed back (as a replica would) answers every case's
    query the same."""
    g = pb2()
    with Server(feed / "data", "--gtfs-rt", str(feed / "rt.pb"), "--rt-interval", "30") as s:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            r = requests.get(s.url("/v1/stops/A2/departures"), params={"time": NINE}, timeout=10)
            if "T0900" in [d["trip_id"] for d in r.json()["departures"]]:
                break
            time.sleep(0.1)
        assert "T0900" in [d["trip_id"] for d in r.json()["departures"]]
        r = requests.get(s.url("/v1/trips/N1"), params={"include": "shape"}, timeout=10)
        assert r.status_code == 200 and r.json()["trip"]["shape"]["id"] == "S2"
        metrics = requests.get(s.url("/metrics"), timeout=10).text
        assert 'transitd_rt_assigned_stops{outcome="unknown_stop"} 1' in metrics
        # T0940's, T0950's and T1000's second updates
        assert 'transitd_rt_trip_updates{outcome="duplicate"} 3' in metrics
        # T0900, T0910, T0920, T0950, F's two runs (T1010's too): the replacements shown
        assert 'transitd_rt_trip_updates{outcome="replaced"} 7' in metrics
        exported = requests.get(s.url("/gtfs-rt/trip-updates.pb"), timeout=10).content
    assert ('stop_time_update 0: stop_time_properties.assigned_stop_id "NOPE" is not a stop of the dataset'
            in s.log())
    out = g.FeedMessage()
    out.ParseFromString(exported)
    by_id = {e.id: e.trip_update for e in out.entity}
    nodata = by_id["rep-nodata"].stop_time_update[0]
    assert nodata.schedule_relationship == g.TripUpdate.StopTimeUpdate.NO_DATA
    assert nodata.stop_time_properties.assigned_stop_id == "A2"
    assert by_id["freq-0920"].trip.start_time == "09:20:00"
    assert by_id["night"].trip_properties.shape_id == "S2"
    (tmp_path / "export.pb").write_bytes(exported)
    assert batch(feed, QUERIES, [tmp_path / "export.pb"]) == batch(feed, QUERIES)
