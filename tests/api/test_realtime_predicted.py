"""Boards chosen, ordered and cut by predicted time (issue #26): with
realtime, `realtime=predicted` (the default) lists the rows whose predicted
time is in the window, by that time, and cuts them at the limit;
`realtime=scheduled` lists them by the schedule with the predictions added,
as before. Checked on a small feed through `transitd query --gtfs-rt`
(the very endpoints the server calls) and once through the server, with
feeds built by the protobuf package (gtfs_rt_pb.py), not by hand: a trip
delayed into the window, one predicted out of it, one running early into
it, a canceled trip and a skipped stop (both kept at their scheduled time),
a delay past midnight, one of more than a day (which does not move the row), the limit, arrivals and kind=both, a station,
nearby departures, and a bad parameter.

The feed: trips K0800..K1000 leave A (a platform of station STA) every ten
minutes and arrive at B ten minutes later; N2350 leaves A at 23:50. The
feed's time zone is America/New_York; 2026-11-02 is a Monday.
"""
import json

import pytest
import requests

import schema_check
from gtfs_rt_pb import add_trip_update, new_feed
from http_server import Server, import_files_with_realtime
from test_cli_query import run_query

DOC = schema_check.load_openapi()
DAY = "20261102"


def hhmm(minutes):
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def trips():
    out = [(f"K{h:02d}{m:02d}", h * 60 + m) for h in (8, 9) for m in range(0, 60, 10)]
    return out + [("K1000", 600), ("N2350", 23 * 60 + 50)]


FEED = {
    "agency.txt": "agency_id,agency_name,agency_url,agency_timezone\n"
                  "A1,Pred Transit,https://example.com,America/New_York\n",
    "stops.txt": "stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station\n"
                 "STA,Station,40.0,-74.0,1,\n"
                 "A,Platform A,40.0,-74.0,0,STA\n"
                 "B,Stop B,40.001,-74.0,0,\n",
    "routes.txt": "route_id,agency_id,route_short_name,route_type\nR,A1,9,3\n",
    "trips.txt": "route_id,service_id,trip_id\n" + "".join(f"R,WK,{t},\n" for t, _ in trips()),
    "stop_times.txt": "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n" + "".join(
        f"{t},{hhmm(m)},{hhmm(m)},A,1\n{t},{hhmm(m + 10)},{hhmm(m + 10)},B,2\n" for t, m in trips()),
    "calendar.txt": "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
                    "start_date,end_date\nWK,1,1,1,1,1,0,0,20261026,20261113\n",
}


def instant(text):
    import datetime
    return int(datetime.datetime.fromisoformat(text).timestamp())


def updates():
    m = new_feed(timestamp=instant("2026-11-02T08:00:00-05:00"))
    add_trip_update(m, "u1", "K0850", DAY, [(1, {"departure_delay": 900})])          # 09:05
    add_trip_update(m, "u2", "K0900", DAY, [(1, {"departure_delay": 720})])          # 09:12
    add_trip_update(m, "u3", "K0920", DAY, canceled=True)
    add_trip_update(m, "u4", "K0930", DAY, [(1, {"skipped": True})])
    add_trip_update(m, "u5", "K0950", DAY,                                           # 10:10
                    [(1, {"departure_time": instant("2026-11-02T10:10:00-05:00")})])
    add_trip_update(m, "u6", "K1000", DAY, [(1, {"departure_delay": -180})])         # 09:57
    add_trip_update(m, "u7", "N2350", DAY, [(1, {"departure_delay": 1200})])         # 00:10
    add_trip_update(m, "u8", "K0810", DAY, [(1, {"departure_delay": 90000})])        # over a day: stays
    return m.SerializeToString()


@pytest.fixture(scope="module")
def pred():
    return import_files_with_realtime("realtime-predicted", FEED, updates())


def batch(base, queries, with_rt=True):
    lines = "".join(json.dumps(q) + "\n" for q in queries)
    args = ["--gtfs-rt", str(base / "rt.pb")] if with_rt else []
    p = run_query(base / "data", *args, "batch", stdin=lines)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


def board(base, time_, window=60, stop="A", with_rt=True, **params):
    q = {"op": "stop-departures", "stop": stop, "time": time_, "window": window, **params}
    body = batch(base, [q], with_rt)[0]
    assert "departures" in body, body
    schema_check.assert_matches(body, "StopDeparturesResponse", DOC)
    return body


def trip_ids(body, key="departures"):
    return [d["trip_id"] for d in body[key]]


NINE = "2026-11-02T09:00:00-05:00"


def test_predicted_board_chooses_orders_and_cuts_by_predicted_time(pred):
    body = board(pred, NINE)
    # K0850 (late into the window), K0900 after K0910, K0950 predicted out,
    # K1000 early into it; the canceled and the skipped ones where scheduled
    assert trip_ids(body) == ["K0850", "K0910", "K0900", "K0920", "K0930", "K0940", "K1000"]
    rows = {d["trip_id"]: d for d in body["departures"]}
    assert rows["K0850"]["predicted"] == "2026-11-02T09:05:00-05:00"
    assert rows["K0850"]["departure"] == rows["K0850"]["scheduled"] == "2026-11-02T08:50:00-05:00"
    assert rows["K0920"]["canceled"] is True and rows["K0920"]["predicted"] is None
    assert rows["K0930"]["canceled"] is True and rows["K0930"]["predicted"] is None
    assert rows["K1000"]["delay_s"] == -180
    assert body["truncated"] is False
    # the default is predicted
    assert board(pred, NINE, realtime="predicted") == body


def test_scheduled_mode_keeps_the_schedule_with_predictions(pred):
    body = board(pred, NINE, realtime="scheduled")
    assert trip_ids(body) == ["K0900", "K0910", "K0920", "K0930", "K0940", "K0950"]
    rows = {d["trip_id"]: d for d in body["departures"]}
    assert rows["K0950"]["predicted"] == "2026-11-02T10:10:00-05:00"
    assert rows["K0900"]["delay_s"] == 720
    # without realtime both modes are the schedule
    plain = board(pred, NINE, with_rt=False)
    assert trip_ids(plain) == trip_ids(body)
    assert board(pred, NINE, with_rt=False, realtime="predicted") == plain


def test_limit_cuts_by_predicted_time(pred):
    body = board(pred, NINE, limit=2)
    assert trip_ids(body) == ["K0850", "K0910"] and body["truncated"] is True
    body = board(pred, NINE, limit=3)
    assert trip_ids(body) == ["K0850", "K0910", "K0900"] and body["truncated"] is True
    body = board(pred, NINE, limit=7)
    assert len(body["departures"]) == 7 and body["truncated"] is False
    # a window whose only row left it: empty, not truncated
    body = board(pred, "2026-11-02T09:58:00-05:00", window=2)
    assert trip_ids(body) == [] and body["truncated"] is False


def test_station_and_nearby_boards_by_predicted_time(pred):
    station = board(pred, NINE, stop="STA")
    assert trip_ids(station) == trip_ids(board(pred, NINE))
    near = batch(pred, [{"op": "departures", "lat": 40.0, "lon": -74.0, "radius": 50, "time": NINE,
                         "window": 60}])[0]
    schema_check.assert_matches(near, "DeparturesResponse", DOC)
    assert trip_ids(near) == trip_ids(station)
    near = batch(pred, [{"op": "departures", "lat": 40.0, "lon": -74.0, "radius": 50, "time": NINE,
                         "window": 60, "realtime": "scheduled", "limit": 1}])[0]
    assert trip_ids(near) == ["K0900"] and near["truncated"] is True


def test_delay_past_midnight_moves_the_row_to_the_next_day(pred):
    after = board(pred, "2026-11-03T00:00:00-05:00")
    assert trip_ids(after) == ["N2350"]
    row = after["departures"][0]
    assert row["service_date"] == "2026-11-02" and row["predicted"] == "2026-11-03T00:10:00-05:00"
    before = board(pred, "2026-11-02T23:30:00-05:00", window=30)
    assert trip_ids(before) == []
    assert trip_ids(board(pred, "2026-11-02T23:30:00-05:00", window=30, realtime="scheduled")) == ["N2350"]


def test_a_prediction_over_a_day_away_does_not_move_the_row(pred):
    body = board(pred, "2026-11-02T08:00:00-05:00")
    assert trip_ids(body) == ["K0800", "K0810", "K0820", "K0830", "K0840"]
    assert body["departures"][1]["delay_s"] == 90000
    assert body["departures"][1]["predicted"] == "2026-11-03T09:10:00-05:00"


def test_arrivals_and_both_by_predicted_time(pred):
    # at B, K0850 arrives 09:00 + 15 min (the delay carried), K0900 09:10 + 12 min
    t = "2026-11-02T09:10:00-05:00"
    q = {"op": "stop-arrivals", "stop": "B", "time": t, "window": 10}
    got, sched, both = batch(pred, [q, dict(q, realtime="scheduled"),
                                    {"op": "stop-departures", "stop": "B", "time": t, "window": 10,
                                     "kind": "both"}])
    assert trip_ids(got, "arrivals") == ["K0850"]
    assert got["arrivals"][0]["predicted"] == "2026-11-02T09:15:00-05:00"
    assert trip_ids(sched, "arrivals") == ["K0900"]
    assert trip_ids(both) == ["K0850"]


def test_bad_realtime_parameter_names_it(pred):
    body = batch(pred, [{"op": "stop-departures", "stop": "A", "time": NINE, "realtime": "live"}])[0]
    assert body == {"error": {"status": 400, "detail": "realtime must be predicted or scheduled"}}


def test_server_takes_the_parameter(pred):
    with Server(pred / "data", "--gtfs-rt", str(pred / "rt.pb"), "--rt-interval", "30") as s:
        def get(**params):
            return requests.get(s.url("/v1/stops/A/departures"), params={"time": NINE, **params},
                                timeout=10)
        import time
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and get().json()["departures"][0]["trip_id"] != "K0850":
            time.sleep(0.1)
        assert [d["trip_id"] for d in get().json()["departures"]][:3] == ["K0850", "K0910", "K0900"]
        assert [d["trip_id"] for d in get(realtime="scheduled").json()["departures"]][:2] == [
            "K0900", "K0910"]
        r = get(realtime="soon")
        assert r.status_code == 400 and r.json()["detail"] == "realtime must be predicted or scheduled"
        r = requests.get(s.url("/v1/departures"), params={"lat": 40.0, "lon": -74.0, "radius": 50,
                                                          "time": NINE, "limit": 1}, timeout=10)
        assert r.status_code == 200 and r.json()["departures"][0]["trip_id"] == "K0850"
