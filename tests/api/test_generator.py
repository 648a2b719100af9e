"""Checks bench/gtfs_gen.py, the synthetic feed every demo and benchmark uses:
the same (scale, seed) gives the same bytes, another seed gives other bytes,
and an independent reader (the csv module) finds a structurally valid GTFS
feed that carries every feature the importer and query engine must handle.
Only the demo scale is generated here; the berlin scale is timed by hand."""
import csv
import hashlib
import io
import pathlib
import subprocess
import sys
import zipfile
from collections import defaultdict

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GEN = ROOT / "bench" / "gtfs_gen.py"
REQUIRED = ["agency.txt", "stops.txt", "routes.txt", "trips.txt", "stop_times.txt"]


def run_gen(*args):
    p = subprocess.run([sys.executable, str(GEN), *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stderr


def sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def parse_time(s):
    h, m, sec = s.split(":")
    assert len(m) == 2 and len(sec) == 2, s
    return int(h) * 3600 + int(m) * 60 + int(sec)


class Feed:
    """The raw bytes and the parsed rows (list of dicts) of each member."""

    def __init__(self, zip_path):
        self.raw = {}
        with zipfile.ZipFile(zip_path) as z:
            self.names = z.namelist()
            for n in self.names:
                self.raw[n] = z.read(n)
        self.rows = {}
        for n, data in self.raw.items():
            text = data.decode("utf-8-sig")
            self.rows[n] = list(csv.DictReader(io.StringIO(text, newline="")))

    def __getitem__(self, name):
        return self.rows.get(name, [])


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    d = tmp_path_factory.mktemp("gen")
    out = d / "demo_seed1.zip"
    log = run_gen("--scale", "demo", "--seed", "1", "--out", str(out))
    return out, log, Feed(out)


def test_same_seed_same_bytes(demo, tmp_path):
    first, _, _ = demo
    again = tmp_path / "sub" / "again.zip"          # parent directory is created
    run_gen("--scale", "demo", "--out", str(again))  # seed 1 is the default
    assert sha256(first) == sha256(again)


def test_other_seed_other_bytes(demo, tmp_path):
    first, _, _ = demo
    other = tmp_path / "seed2.zip"
    run_gen("--scale", "demo", "--seed", "2", "--out", str(other))
    assert sha256(first) != sha256(other)


def test_dir_output_matches_zip_members(demo, tmp_path):
    _, _, feed = demo
    out = tmp_path / "plain"
    run_gen("--scale", "demo", "--dir", str(out))
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(feed.names)
    for name in feed.names:
        assert (out / name).read_bytes() == feed.raw[name], name


def test_stderr_reports_counts(demo):
    _, log, feed = demo
    for name in feed.names:
        line = [ln for ln in log.splitlines() if ln.split()[:1] == [name]]
        assert line, f"{name} missing from the report:\n{log}"
        assert int(line[0].split()[1]) == len(feed[name])


def test_zip_is_deflated_with_fixed_timestamps(demo):
    path, _, _ = demo
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
    assert infos, "empty zip"
    assert {i.compress_type for i in infos} == {zipfile.ZIP_DEFLATED}
    assert len({i.date_time for i in infos}) == 1


def test_required_files_present(demo):
    _, _, feed = demo
    for name in REQUIRED:
        assert name in feed.names, name
        assert feed[name], f"{name} has no rows"
    assert "calendar.txt" in feed.names or "calendar_dates.txt" in feed.names
    for name in ("calendar.txt", "calendar_dates.txt", "feed_info.txt", "shapes.txt",
                 "frequencies.txt", "transfers.txt"):
        assert name in feed.names, name


def test_foreign_keys_resolve(demo):
    _, _, feed = demo
    route_ids = {r["route_id"] for r in feed["routes.txt"]}
    agency_ids = {a["agency_id"] for a in feed["agency.txt"]}
    services = ({c["service_id"] for c in feed["calendar.txt"]}
                | {c["service_id"] for c in feed["calendar_dates.txt"]})
    stops = {s["stop_id"]: s for s in feed["stops.txt"]}
    trip_ids = {t["trip_id"] for t in feed["trips.txt"]}
    shape_ids = {s["shape_id"] for s in feed["shapes.txt"]}
    assert len(stops) == len(feed["stops.txt"]), "duplicate stop_id"
    assert len(trip_ids) == len(feed["trips.txt"]), "duplicate trip_id"
    for r in feed["routes.txt"]:
        assert r["agency_id"] in agency_ids, r
    for t in feed["trips.txt"]:
        assert t["route_id"] in route_ids, t
        assert t["service_id"] in services, t
        assert t["shape_id"] in shape_ids, t
    for st in feed["stop_times.txt"]:
        assert st["trip_id"] in trip_ids, st
        stop = stops.get(st["stop_id"])
        assert stop is not None, st
        assert stop["location_type"] in ("", "0"), f"trip serves a station: {st}"
    for s in stops.values():
        if s["parent_station"]:
            parent = stops.get(s["parent_station"])
            assert parent is not None and parent["location_type"] == "1", s
    for f in feed["frequencies.txt"]:
        assert f["trip_id"] in trip_ids, f
    for tr in feed["transfers.txt"]:
        assert tr["from_stop_id"] in stops and tr["to_stop_id"] in stops, tr
    served_trips = {st["trip_id"] for st in feed["stop_times.txt"]}
    assert served_trips == trip_ids, "a trip without stop_times"


def test_trip_times_and_sequences(demo):
    _, _, feed = demo
    shape_len = defaultdict(float)
    for p in feed["shapes.txt"]:
        shape_len[p["shape_id"]] = max(shape_len[p["shape_id"]], float(p["shape_dist_traveled"]))
    shape_of = {t["trip_id"]: t["shape_id"] for t in feed["trips.txt"]}
    by_trip = defaultdict(list)
    for st in feed["stop_times.txt"]:
        by_trip[st["trip_id"]].append(st)
    assert by_trip
    for trip_id, rows in by_trip.items():
        seqs = [int(r["stop_sequence"]) for r in rows]
        assert all(a < b for a, b in zip(seqs, seqs[1:])), f"{trip_id}: stop_sequence {seqs}"
        assert rows[0]["arrival_time"] and rows[0]["departure_time"], trip_id
        assert rows[-1]["arrival_time"] and rows[-1]["departure_time"], trip_id
        last = -1
        for r in rows:
            a, d = r["arrival_time"], r["departure_time"]
            assert (a == "") == (d == ""), r
            assert (r["timepoint"] == "0") == (a == ""), r
            if a:
                ta, td = parse_time(a), parse_time(d)
                assert last <= ta <= td, f"{trip_id}: time goes back at {r}"
                last = td
        dists = [r["shape_dist_traveled"] for r in rows]
        if any(dists):
            assert all(dists), f"{trip_id}: shape_dist_traveled on some rows only"
            vals = [float(x) for x in dists]
            assert all(a <= b for a, b in zip(vals, vals[1:])), trip_id
            assert vals[-1] <= shape_len[shape_of[trip_id]] + 0.05, trip_id


def test_feature_presence(demo):
    _, _, feed = demo
    st = feed["stop_times.txt"]
    times = [r["arrival_time"] for r in st if r["arrival_time"]]
    assert max(parse_time(t) for t in times) >= 24 * 3600
    assert any(r["departure_time"] == "24:30:00" for r in st), "no last trip at 24:30"
    assert any(r["arrival_time"] == "" for r in st), "no non-timepoint stop"
    assert any(r["arrival_time"] != r["departure_time"] for r in st), "no dwell"
    with_dist = {r["trip_id"] for r in st if r["shape_dist_traveled"]}
    without_dist = {r["trip_id"] for r in st if not r["shape_dist_traveled"]}
    assert with_dist and without_dist
    untimed_trips = {r["trip_id"] for r in st if r["arrival_time"] == ""}
    assert untimed_trips & with_dist and untimed_trips - with_dist, \
        "interpolation needs untimed stops both with and without distances"

    by_trip = defaultdict(list)
    for r in st:
        by_trip[r["trip_id"]].append(r)
    mid_pickup = mid_drop = False
    for rows in by_trip.values():
        for r in rows[1:-1]:
            mid_pickup |= r["pickup_type"] == "1"
            mid_drop |= r["drop_off_type"] == "1"
    assert mid_pickup and mid_drop

    firsts = {rows[0]["stop_sequence"] for rows in by_trip.values()}
    assert {"1", "10"} <= firsts
    steps = {int(rows[1]["stop_sequence"]) - int(rows[0]["stop_sequence"]) for rows in by_trip.values()}
    assert {1, 10} <= steps

    assert {r["route_type"] for r in feed["routes.txt"]} >= {"0", "1", "3"}
    assert {a["agency_timezone"] for a in feed["agency.txt"]} == {"Europe/Berlin"}

    # Raw bytes: BOM, CRLF in trips.txt, LF elsewhere, RFC 4180 quoting.
    assert feed.raw["stops.txt"].startswith(b"\xef\xbb\xbf")
    assert not any(feed.raw[n].startswith(b"\xef\xbb\xbf") for n in feed.names if n != "stops.txt")
    trips_raw = feed.raw["trips.txt"]
    assert trips_raw.count(b"\n") == trips_raw.count(b"\r\n") > 1
    assert b"\r" not in feed.raw["stop_times.txt"] and b"\r" not in feed.raw["stops.txt"]
    names = [s["stop_name"] for s in feed["stops.txt"]]
    tricky = [n for n in names if "," in n and '"' in n]
    assert tricky, "no stop name with both a comma and a double quote"
    quoted = ('"' + tricky[0].replace('"', '""') + '"').encode("utf-8")
    assert quoted in feed.raw["stops.txt"]
    assert 'Große Straße "Am Tor", Süd' in names
    assert any(any(ord(c) > 127 for c in n) for n in names)

    # Stations and platforms: a station with 2+ platforms served by the subway.
    stops = {s["stop_id"]: s for s in feed["stops.txt"]}
    subway_trips = {t["trip_id"] for t in feed["trips.txt"]
                    if t["route_id"] in {r["route_id"] for r in feed["routes.txt"] if r["route_type"] == "1"}}
    served = defaultdict(set)
    for r in st:
        if r["trip_id"] in subway_trips and stops[r["stop_id"]]["parent_station"]:
            served[stops[r["stop_id"]]["parent_station"]].add(r["stop_id"])
    assert any(len(p) >= 2 for p in served.values())
    assert any(s["location_type"] == "1" for s in stops.values())

    # Frequencies: the documented windows.
    freq = feed["frequencies.txt"]
    assert freq
    windows = {(f["start_time"], f["end_time"], f["headway_secs"]) for f in freq}
    assert ("06:00:00", "09:00:00", "300") in windows
    assert ("09:00:00", "16:00:00", "600") in windows
    assert {f["exact_times"] for f in freq} == {"0", "1"}


def test_calendars(demo):
    _, _, feed = demo
    cal = {c["service_id"]: c for c in feed["calendar.txt"]}
    cd = feed["calendar_dates.txt"]
    assert {c["exception_type"] for c in cd} == {"1", "2"}
    only_dates = {c["service_id"] for c in cd} - set(cal)
    assert only_dates, "no service defined only by calendar_dates"
    used = {t["service_id"] for t in feed["trips.txt"]}
    assert only_dates & used
    # weekday, Saturday and Sunday patterns
    patterns = {tuple(c[d] for d in ("monday", "tuesday", "wednesday", "thursday", "friday",
                                     "saturday", "sunday")) for c in cal.values()}
    assert ("1", "1", "1", "1", "1", "0", "0") in patterns
    assert ("0", "0", "0", "0", "0", "1", "0") in patterns
    assert ("0", "0", "0", "0", "0", "0", "1") in patterns
    # "live" now and across both DST changes in Europe/Berlin
    for c in cal.values():
        assert c["start_date"] <= "20261025" and c["end_date"] >= "20270328"
        assert c["start_date"] <= "20261121" <= c["end_date"]
    # A holiday on a weekday runs the Sunday service: Christmas Day, a Friday.
    xmas = {(c["service_id"], c["exception_type"]) for c in cd if c["date"] == "20261225"}
    assert ("SU", "1") in xmas and ("WD", "2") in xmas


def test_demo_size(demo):
    _, _, feed = demo
    assert 80_000 <= len(feed["stop_times.txt"]) <= 130_000
    assert 800 <= len(feed["stops.txt"]) <= 1300
    lat = [float(s["stop_lat"]) for s in feed["stops.txt"]]
    lon = [float(s["stop_lon"]) for s in feed["stops.txt"]]
    # a city-sized area around Berlin (52.52, 13.40): ~30 x 25 km at most
    assert 52.40 < min(lat) and max(lat) < 52.64
    assert 13.17 < min(lon) and max(lon) < 13.63
    assert (max(lat) - min(lat)) * 111.32 > 10 and (max(lon) - min(lon)) * 67.7 > 10
    assert all(s["stop_id"].startswith("de:11000:") for s in feed["stops.txt"])
