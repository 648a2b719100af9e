"""Tests of the departures oracle itself (tests/oracle/oracle.py), on tiny
hand-made feeds whose answers are worked out by hand, plus spot checks of its
counts against ../shared/gtfs/SOURCES.md. The engine comparisons in
test_oracle.py are only as good as the oracle, so the oracle gets its own
tests; none of these needs the transitd binary."""
import datetime
import pathlib
import sys
import zipfile

import pytest

from conftest import ROOT, shared_feed

sys.path.insert(0, str(ROOT / "tests" / "oracle"))
import oracle  # noqa: E402

UTC = datetime.timezone.utc

AGENCY = "agency_id,agency_name,agency_url,agency_timezone\nA,Test,http://x,{tz}\n"
STOPS = """stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station
S1,One,40.0000,-74.0000,0,
S2,Two,40.0010,-74.0000,0,
S3,Three,40.0020,-74.0000,0,
S4,Four,40.0030,-74.0000,0,
ST,Station,40.0100,-74.0000,1,
P1,Platform 1,40.0100,-74.0001,,ST
P2,Platform 2,40.0100,-74.0002,0,ST
"""
ROUTES = "route_id,route_short_name,route_long_name,route_type\nR1,B,Bee,3\nR2,a,Ay,3\n"
CALENDAR = ("service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
            "start_date,end_date\nWK,1,1,1,1,1,0,0,20260101,20261231\n")


def write_feed(tmp_path, name="feed", tz="America/New_York", **files):
    """Zips the given member texts (keyword = member name without .txt) with
    defaults for agency, stops, routes and calendar; returns the zip path."""
    members = {"agency": AGENCY.format(tz=tz), "stops": STOPS, "routes": ROUTES,
               "calendar": CALENDAR}
    members.update(files)
    src = pathlib.Path(tmp_path) / name
    src.mkdir()
    for member, text in members.items():
        (src / f"{member}.txt").write_bytes(text.encode("utf-8"))
    out = pathlib.Path(tmp_path) / f"{name}.zip"
    with zipfile.ZipFile(out, "w") as z:
        for p in sorted(src.iterdir()):
            z.write(p, p.name)
    return str(out)


def instant(y, mo, d, h, mi, s=0):
    return int(datetime.datetime(y, mo, d, h, mi, s, tzinfo=UTC).timestamp())


def secs_of(feed, stop_id, t_from, window_s):
    return [(e.trip_id, e.secs) for e in feed.stop_departures(stop_id, t_from, window_s)]


# ------------------------------------------------------------ interpolation

def test_interpolation_by_position_floors(tmp_path):
    path = write_feed(tmp_path, trips="route_id,service_id,trip_id\nR1,WK,T\n", stop_times="""\
trip_id,arrival_time,departure_time,stop_id,stop_sequence
T,08:00:00,08:00:00,S1,1
T,,,S2,2
T,,,S3,3
T,08:00:10,08:00:10,S4,4
""")
    rows = [(1, "S1", 28800, 28800, False, ""), (2, "S2", None, None, False, ""),
            (3, "S3", None, None, False, ""), (4, "S4", 28810, 28810, False, "")]
    assert oracle.interpolate_departures(rows) == [28800, 28803, 28806, 28810]
    feed = oracle.Feed(path)
    t0 = instant(2026, 7, 1, 12, 0)   # 08:00 EDT on Wednesday 2026-07-01
    assert secs_of(feed, "S2", t0, 60) == [("T", 28803)]
    assert secs_of(feed, "S3", t0, 60) == [("T", 28806)]
    assert [s for s, _, _ in feed.interpolated_events] == ["S2", "S3"]


def test_interpolation_by_shape_distance(tmp_path):
    rows = [(1, "S1", 28800, 28800, False, "0"), (2, "S2", None, None, False, "1"),
            (3, "S3", None, None, False, "2.5"), (4, "S4", 28810, 28810, False, "3")]
    # 10 s over 3 distance units: 10/3 -> 3, 25/3 -> 8 (position would give 3, 6)
    assert oracle.interpolate_departures(rows) == [28800, 28803, 28808, 28810]


def test_interpolation_falls_back_to_position_when_a_distance_is_missing():
    rows = [(1, "S1", 28800, 28800, False, "0"), (2, "S2", None, None, False, "1"),
            (3, "S3", None, None, False, ""), (4, "S4", 28810, 28810, False, "3")]
    assert oracle.interpolate_departures(rows) == [28800, 28803, 28806, 28810]
    # distances that cover nothing cannot be proportional: by position too
    rows = [(1, "S1", 0, 0, False, "5"), (2, "S2", None, None, False, "5"),
            (3, "S3", 9, 9, False, "5")]
    assert oracle.interpolate_departures(rows) == [0, 4, 9]


def test_interpolation_runs_from_departure_to_next_arrival_and_single_times():
    # S1 departs 08:01, S3 arrives 08:05: S2 halfway = 08:03. S3 only has an
    # arrival, which stands for its departure too.
    rows = [(1, "S1", 28800, 28860, False, ""), (2, "S2", None, None, False, ""),
            (3, "S3", 29100, None, False, ""), (4, "S4", None, 29400, False, "")]
    assert oracle.interpolate_departures(rows) == [28860, 28980, 29100, 29400]


def test_untimed_first_or_last_stop_drops_the_trip(tmp_path):
    rows = [(1, "S1", None, None, False, ""), (2, "S2", 100, 100, False, "")]
    assert oracle.interpolate_departures(rows) is None
    path = write_feed(tmp_path, trips="route_id,service_id,trip_id\nR1,WK,T\n", stop_times="""\
trip_id,arrival_time,departure_time,stop_id,stop_sequence
T,08:00:00,08:00:00,S1,1
T,,,S2,2
""")
    feed = oracle.Feed(path)
    assert feed.skipped["trips: first or last stop untimed"] == 1
    assert feed.events == {}


# ------------------------------------------------------------ exclusions, order, windows

def test_last_stop_and_no_pickup_are_not_departures(tmp_path):
    path = write_feed(tmp_path, trips="route_id,service_id,trip_id\nR1,WK,T\n", stop_times="""\
trip_id,arrival_time,departure_time,stop_id,stop_sequence,pickup_type
T,08:00:00,08:00:00,S1,5,0
T,08:01:00,08:01:00,S2,7,1
T,08:02:00,08:02:00,S3,9,
T,08:03:00,08:03:00,S4,12,0
""")
    feed = oracle.Feed(path)
    assert sorted(feed.events) == ["S1", "S3"]
    evs = feed.stop_departures("S3", instant(2026, 7, 1, 12, 0), 3600)
    assert [(e.stop_sequence, e.secs) for e in evs] == [(9, 28920)]


def test_arrivals_and_both(tmp_path):
    """Arrivals: not the first stop, not drop_off_type=1, at the arrival time
    (an untimed stop arrives when it departs); both: each call once, its
    departure, else its arrival."""
    path = write_feed(tmp_path, trips="route_id,service_id,trip_id\nR1,WK,T\n", stop_times="""\
trip_id,arrival_time,departure_time,stop_id,stop_sequence,pickup_type,drop_off_type
T,08:00:00,08:00:30,S1,5,0,0
T,08:01:00,08:01:30,S2,7,1,0
T,,,S3,9,0,1
T,08:05:00,08:06:00,S4,12,0,0
T,08:10:00,08:10:00,S1,13,0,
""")
    feed = oracle.Feed(path)
    t = instant(2026, 7, 1, 11, 0)   # 07:00 EDT, a Wednesday

    def board(stop, kind):
        return [(e.stop_sequence, e.secs, e.arrival) for e in feed.stop_events(stop, t, 7200, kind)]
    assert board("S1", "departures") == [(5, 28830, False)]
    assert board("S1", "arrivals") == [(13, 29400, True)]                # not at the first stop
    assert board("S1", "both") == [(5, 28830, False), (13, 29400, True)]
    assert board("S2", "departures") == []                                # pickup_type=1
    assert board("S2", "arrivals") == [(7, 28860, True)]
    assert board("S2", "both") == [(7, 28860, True)]
    # S3: untimed, interpolated from S2's departure (08:01:30) to S4's arrival (08:05:00)
    assert board("S3", "arrivals") == []                                  # drop_off_type=1
    assert board("S3", "both") == [(9, 28995, False)]
    assert board("S4", "arrivals") == [(12, 29100, True)]
    assert board("S4", "both") == [(12, 29160, False)]
    with pytest.raises(ValueError):
        feed.stop_events("S1", t, 60, "nope")


def test_stop_sequence_order_not_file_order(tmp_path):
    path = write_feed(tmp_path, trips="route_id,service_id,trip_id\nR1,WK,T\n", stop_times="""\
stop_sequence,stop_id,departure_time,trip_id,arrival_time
20,S2,08:01:00,T,08:01:00
10,S1,08:00:00,T,08:00:00
30,S3,08:02:00,T,08:02:00
""")
    feed = oracle.Feed(path)
    assert sorted(feed.events) == ["S1", "S2"]   # S3 (sequence 30) is last


def test_window_is_half_open_and_order_is_bytes(tmp_path):
    trips = "route_id,service_id,trip_id\nR1,WK,t2\nR2,WK,t1\nR1,WK,t0\nR1,WK,T3\n"
    path = write_feed(tmp_path, trips=trips, stop_times="""\
trip_id,arrival_time,departure_time,stop_id,stop_sequence
t2,08:00:00,08:00:00,S1,1
t2,08:10:00,08:10:00,S4,2
t1,08:00:00,08:00:00,S1,1
t1,08:10:00,08:10:00,S4,2
t0,08:00:00,08:00:00,S1,1
t0,08:10:00,08:10:00,S4,2
T3,08:00:00,08:00:00,S1,1
T3,08:10:00,08:10:00,S4,2
""")
    feed = oracle.Feed(path)
    t0 = instant(2026, 7, 1, 12, 0)
    # route "B" sorts before route "a" (bytes); within "B", "T3" < "t0" < "t2"
    assert [e.trip_id for e in feed.stop_departures("S1", t0, 60)] == ["T3", "t0", "t2", "t1"]
    assert feed.stop_departures("S1", t0 + 1, 3600) == []
    assert feed.stop_departures("S1", t0 - 60, 60) == []
    assert len(feed.stop_departures("S1", t0 - 60, 61)) == 4


def test_station_gives_child_platform_events(tmp_path):
    path = write_feed(tmp_path, trips="route_id,service_id,trip_id\nR1,WK,T\nR1,WK,U\n",
                      stop_times="""\
trip_id,arrival_time,departure_time,stop_id,stop_sequence
T,08:00:00,08:00:00,P1,1
T,08:10:00,08:10:00,S1,2
U,08:05:00,08:05:00,P2,1
U,08:10:00,08:10:00,S1,2
""")
    feed = oracle.Feed(path)
    evs = feed.stop_departures("ST", instant(2026, 7, 1, 12, 0), 3600)
    assert [(e.stop_id, e.trip_id) for e in evs] == [("P1", "T"), ("P2", "U")]
    assert feed.stop_departures("P2", instant(2026, 7, 1, 12, 0), 3600)[0].trip_id == "U"
    with pytest.raises(KeyError):
        feed.stop_departures("nope", 0, 60)


# ------------------------------------------------------------ frequencies

def test_frequencies_expand_and_template_does_not_run(tmp_path):
    path = write_feed(tmp_path, trips="route_id,service_id,trip_id\nR1,WK,F\n", stop_times="""\
trip_id,arrival_time,departure_time,stop_id,stop_sequence
F,06:00:00,06:00:00,S1,0
F,06:04:00,06:05:00,S2,1
F,06:10:00,06:10:00,S3,2
""", frequencies="trip_id,start_time,end_time,headway_secs\nF,07:00:00,08:00:00,1200\n"
                 "F,23:50:00,24:10:00,600\n")
    feed = oracle.Feed(path)
    day_start = instant(2026, 7, 1, 4, 0)   # 00:00 EDT 2026-07-01
    s1 = [(str(e.service_date), e.secs) for e in feed.stop_departures("S1", day_start, 86400)]
    # Tuesday's 24:00 instance departs at Wednesday 00:00; Wednesday's own
    # 24:00 instance falls on Thursday, outside the window.
    assert s1 == [("2026-06-30", 86400), ("2026-07-01", 7 * 3600),
                  ("2026-07-01", 7 * 3600 + 1200), ("2026-07-01", 7 * 3600 + 2400),
                  ("2026-07-01", 23 * 3600 + 3000)]
    s2 = secs_of(feed, "S2", day_start, 86400)
    assert [s for _, s in s2][:4] == [86400 + 300, 7 * 3600 + 300, 7 * 3600 + 1500,
                                      7 * 3600 + 2700]
    assert "S3" not in feed.events
    # the 24:00 instance of Wednesday departs on Thursday at 00:00 local
    thursday = feed.stop_departures("S1", instant(2026, 7, 2, 4, 0), 60)
    assert [(e.service_date, e.secs) for e in thursday] == [(datetime.date(2026, 7, 1), 86400)]


# ------------------------------------------------------------ service days

def test_service_day_activity(tmp_path):
    calendar_dates = ("service_id,date,exception_type\nWK,20260702,2\nWK,20260704,1\n"
                      "ONLY,20260705,1\nONLY,20260706,1\nONLY,20260706,2\n")
    path = write_feed(tmp_path, trips="route_id,service_id,trip_id\nR1,WK,T\nR1,ONLY,O\n",
                      calendar_dates=calendar_dates, stop_times="""\
trip_id,arrival_time,departure_time,stop_id,stop_sequence
T,08:00:00,08:00:00,S1,1
T,08:10:00,08:10:00,S2,2
O,09:00:00,09:00:00,S1,1
O,09:10:00,09:10:00,S2,2
""")
    feed = oracle.Feed(path)
    d = datetime.date
    assert feed.runs_on(0, d(2026, 7, 1))          # Wednesday
    assert not feed.runs_on(0, d(2026, 7, 2))      # removed Thursday
    assert feed.runs_on(0, d(2026, 7, 3))           # Friday
    assert not feed.runs_on(0, d(2026, 7, 5))      # Sunday
    assert feed.runs_on(0, d(2026, 7, 4))          # added Saturday
    assert not feed.runs_on(0, d(2027, 1, 1))      # after end_date
    assert feed.runs_on(1, d(2026, 7, 5))          # calendar_dates only
    assert not feed.runs_on(1, d(2026, 7, 6))      # added and removed: removal wins
    per_day = {}
    for day in range(1, 8):
        t = instant(2026, 7, day, 4, 0)
        per_day[day] = [e.trip_id for e in feed.stop_departures("S1", t, 86400)]
    assert per_day == {1: ["T"], 2: [], 3: ["T"], 4: ["T"], 5: ["O"], 6: ["T"], 7: ["T"]}
    assert (feed.first_date, feed.last_date) == (d(2026, 1, 1), d(2026, 12, 31))


# ------------------------------------------------------------ instants and DST

DST_STOP_TIMES = """\
trip_id,arrival_time,departure_time,stop_id,stop_sequence
E,01:30:00,01:30:00,S1,1
E,01:40:00,01:40:00,S2,2
L,25:30:00,25:30:00,S1,1
L,25:40:00,25:40:00,S2,2
"""
ALL_DAYS = ("service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
            "start_date,end_date\nALL,1,1,1,1,1,1,1,20260101,20261231\n")


def dst_feed(tmp_path):
    return oracle.Feed(write_feed(tmp_path, calendar=ALL_DAYS, stop_times=DST_STOP_TIMES,
                                  trips="route_id,service_id,trip_id\nR1,ALL,E\nR1,ALL,L\n"))


def test_instants_are_noon_minus_12h_across_dst(tmp_path):
    feed = dst_feed(tmp_path)
    d = datetime.date
    # spring forward 2026-03-08: noon EDT = 16:00Z, minus 12 h = 04:00Z
    assert feed.service_day_base(d(2026, 3, 8)) == instant(2026, 3, 8, 4, 0)
    # fall back 2026-11-01: noon EST = 17:00Z, minus 12 h = 05:00Z
    assert feed.service_day_base(d(2026, 11, 1)) == instant(2026, 11, 1, 5, 0)
    assert feed.service_day_base(d(2026, 7, 1)) == instant(2026, 7, 1, 4, 0)
    # 01:30 on 2026-03-08 is 05:30Z (00:30 EST), not 06:30Z
    evs = feed.stop_departures("S1", instant(2026, 3, 8, 5, 0), 3600)
    assert [(e.trip_id, e.instant, e.utc_offset) for e in evs] == [
        ("E", instant(2026, 3, 8, 5, 30), -5 * 3600)]
    # Fall back: L (25:30 of Oct 31) departs at 05:30Z = the first 01:30 (EDT);
    # E (01:30 of Nov 1) at 05:00Z + 1:30 = 06:30Z = the second 01:30 (EST).
    evs = feed.stop_departures("S1", instant(2026, 11, 1, 5, 0), 7200)
    assert [(e.trip_id, e.service_date, e.instant, e.utc_offset) for e in evs] == [
        ("L", d(2026, 10, 31), instant(2026, 11, 1, 5, 30), -4 * 3600),
        ("E", d(2026, 11, 1), instant(2026, 11, 1, 6, 30), -5 * 3600)]
    assert feed.dst_change_days() == [d(2026, 3, 8), d(2026, 11, 1)]


def test_previous_service_day_runs_past_midnight(tmp_path):
    feed = dst_feed(tmp_path)
    # 2026-07-02 00:00-03:00 local holds E of Jul 2 (01:30) and L of Jul 1 (25:30)
    evs = feed.stop_departures("S1", feed.parse_query_time("2026-07-02T00:00"), 3 * 3600)
    assert [(e.trip_id, str(e.service_date), e.secs) for e in evs] == [
        ("E", "2026-07-02", 5400), ("L", "2026-07-01", 91800)]


def test_local_times_without_offset(tmp_path):
    feed = dst_feed(tmp_path)
    # ambiguous: the earlier instant (EDT)
    assert feed.parse_query_time("2026-11-01T01:30") == instant(2026, 11, 1, 5, 30)
    # nonexistent: fold=0 reads it with the offset before the gap: 07:30Z = 03:30 EDT
    assert feed.parse_query_time("2026-03-08T02:30:00") == instant(2026, 3, 8, 7, 30)
    assert feed.parse_query_time("2026-07-01T08:00:05") == instant(2026, 7, 1, 12, 0, 5)
    assert feed.parse_query_time("2026-07-01T08:00:00Z") == instant(2026, 7, 1, 8, 0)
    assert feed.parse_query_time("2026-07-01T08:00:00+05:30") == instant(2026, 7, 1, 2, 30)
    assert feed.odd_local_time(datetime.date(2026, 11, 1)) == (
        "ambiguous", datetime.datetime(2026, 11, 1, 1, 30))
    assert feed.odd_local_time(datetime.date(2026, 3, 8)) == (
        "nonexistent", datetime.datetime(2026, 3, 8, 2, 30))
    with pytest.raises(ValueError):
        feed.parse_query_time("2026-07-01 08:00")


# ------------------------------------------------------------ nearby

def test_nearby_uses_haversine_and_location_type_0(tmp_path):
    path = write_feed(tmp_path, trips="route_id,service_id,trip_id\nR1,WK,T\n", stop_times="""\
trip_id,arrival_time,departure_time,stop_id,stop_sequence
T,08:00:00,08:00:00,S1,1
T,08:01:00,08:01:00,S2,2
T,08:02:00,08:02:00,P1,3
T,08:03:00,08:03:00,S4,4
""")
    feed = oracle.Feed(path)
    one_milli_degree = 6371008.8 * 0.001 * 3.141592653589793 / 180   # 111.195 m
    near = dict(feed.nearby_stops(40.0, -74.0, 112))
    assert sorted(near) == ["S1", "S2"]
    assert near["S2"] == pytest.approx(one_milli_degree, abs=1e-6)
    assert sorted(dict(feed.nearby_stops(40.0, -74.0, one_milli_degree - 0.01))) == ["S1"]
    # the station ST is location_type 1: never a nearby stop; its platforms are
    assert "ST" not in dict(feed.nearby_stops(40.01, -74.0, 100))
    assert "P1" in dict(feed.nearby_stops(40.01, -74.0, 100))
    evs = feed.nearby_departures(40.0, -74.0, 5000, instant(2026, 7, 1, 12, 0), 3600)
    assert [e.stop_id for e in evs] == ["S1", "S2", "P1"]
    assert evs[1].distance_m == pytest.approx(one_milli_degree, abs=1e-6)


# ------------------------------------------------------------ CSV robustness and bad rows

def test_bom_crlf_quotes_spaces_and_bad_rows(tmp_path):
    stops = ("\ufeffstop_lat,stop_id,stop_lon,stop_name\r\n"
             " 40.0 ,S1,  -74.0,\"One, the first\"\r\n40.001,S2,-74.0,Two\r\n"
             "40.002,S3,-74.0,Three\r\n")
    stop_times = ("\ufefftrip_id,stop_id,stop_sequence,departure_time,arrival_time\r\n"
                  "T,S1,1, 8:00:00 ,\r\n"
                  "T,S2,2,08:01:00,08:01:00\r\n"
                  "T,S9,3,08:02:00,08:02:00\r\n"       # unknown stop
                  "X,S1,1,08:00:00,08:00:00\r\n"       # unknown trip
                  "T,S2,4,8:1:00,8:1:00\r\n"           # bad time
                  "T,S2,5,08:60:00,08:60:00\r\n"       # bad time
                  "\r\n"
                  "T,S3,6,08:03:00,08:03:00\r\n")
    path = write_feed(tmp_path, stops=stops, trips="route_id,service_id,trip_id\nR1,WK,T\n",
                      stop_times=stop_times)
    feed = oracle.Feed(path)
    assert feed.stops["S1"][:3] == ("One, the first", 40.0, -74.0)
    assert dict(feed.skipped) == {"stop_times.txt: unknown stop_id": 1,
                                  "stop_times.txt: unknown trip_id": 1,
                                  "stop_times.txt: bad time": 2}
    evs = feed.stop_departures("S1", instant(2026, 7, 1, 12, 0), 60)
    assert [(e.trip_id, e.secs) for e in evs] == [("T", 28800)]
    assert sorted(feed.events) == ["S1", "S2"]


# ------------------------------------------------------------ the real feeds

SOURCE_COUNTS = [
    # feed, stop_times rows, stops, trips, {stop_id: stop_times rows}
    ("cairns_translink_2014", 37790, 416, 1339, {"750449": 607}),
    ("abidjan_osm_frequencies_2021", 4276, 2119, 528, {}),
    ("amtab_bari_2026", 201464, 1119, 6723, {"09369C00": 2368}),
    ("exo_laurentides_2025", 505323, 2507, 12882, {"80593": 2520}),
    ("nyct_subway_2026", 565093, 1488, 20621, {"127N": 1377}),
]


@pytest.mark.parametrize("name,stop_times,stops,trips,per_stop", SOURCE_COUNTS,
                         ids=[c[0] for c in SOURCE_COUNTS])
def test_counts_match_sources_md(name, stop_times, stops, trips, per_stop):
    feed = oracle.load_feed(shared_feed(f"{name}.zip"))
    assert sum(feed.stop_time_rows.values()) == stop_times
    assert len(feed.stops) == stops
    assert len(feed.trip_ids) == trips
    assert dict(feed.skipped) == {}
    for stop_id, rows in per_stop.items():
        assert feed.stop_time_rows[stop_id] == rows


def test_cairns_has_interpolated_departures():
    feed = oracle.load_feed(shared_feed("cairns_translink_2014.zip"))
    # 65 rows have empty times; each is a mid-trip departure unless pickup_type=1
    assert 0 < len(feed.interpolated_events) <= 65
    assert "750015" in {s for s, _, _ in feed.interpolated_events}


def test_subway_stations_have_platforms():
    feed = oracle.load_feed(shared_feed("nyct_subway_2026.zip"))
    stations = [s for s, v in feed.stops.items() if v[3] == 1]
    assert len(stations) == 496
    assert sorted(feed.children["127"]) == ["127N", "127S"]
    assert sum(len(c) for c in feed.children.values()) == 992


def test_abidjan_frequency_instances():
    feed = oracle.load_feed(shared_feed("abidjan_osm_frequencies_2021.zip"))
    # templates start at 06:00, but instances begin with the first window (05:00 etc.)
    assert min(secs for events in feed.events.values() for secs, _, _ in events) < 6 * 3600
    # 5,000-odd template rows become far more departure events
    assert sum(len(v) for v in feed.events.values()) > 100000
