"""Malformed feeds against `transitd import`: each broken feed either fails
with exit 1 and a message naming the file (and column), or imports with
exit 0 and the problem counted by kind with a `file:line:` example in the
--json summary. After a failure the previously imported dataset must still be
the active one, byte for byte, with no temporary directory left behind; the
same holds when an import is killed with SIGKILL part way through.
The corpus is derived here from a tiny valid feed written in Python."""
import hashlib
import json
import os
import pathlib
import re
import signal
import subprocess
import time
import zipfile

import pytest

from conftest import shared_feed

TINY = {
    "agency.txt": [
        "agency_id,agency_name,agency_url,agency_timezone",
        "A,Tiny Transit,https://example.org,Europe/Berlin",
    ],
    "stops.txt": [
        "stop_id,stop_name,stop_lat,stop_lon",
        "S1,First,52.500,13.400",
        "S2,Second,52.510,13.410",
        "S3,Third,52.520,13.420",
        "S4,Fourth,52.530,13.430",
    ],
    "routes.txt": [
        "route_id,agency_id,route_short_name,route_long_name,route_type",
        "R1,A,1,One,3",
        "R2,A,2,Two,3",
    ],
    "trips.txt": [
        "route_id,service_id,trip_id",
        "R1,WD,T1",
        "R1,WD,T2",
        "R2,WD,T3",
    ],
    "stop_times.txt": [
        "trip_id,arrival_time,departure_time,stop_id,stop_sequence",
        "T1,08:00:00,08:00:00,S1,1",   # line 2
        "T1,08:05:00,08:05:00,S2,2",   # line 3
        "T1,08:10:00,08:10:00,S3,3",   # line 4
        "T2,09:00:00,09:00:00,S1,1",   # line 5
        "T2,09:05:00,09:05:00,S2,2",   # line 6
        "T2,09:10:00,09:10:00,S3,3",   # line 7
        "T3,10:00:00,10:00:00,S2,1",   # line 8
        "T3,10:05:00,10:05:00,S3,2",   # line 9
        "T3,10:10:00,10:10:00,S4,3",   # line 10
    ],
    "calendar.txt": [
        "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date",
        "WD,1,1,1,1,1,0,0,20260101,20261231",
    ],
}


def write_feed(dest, files):
    dest.mkdir(parents=True)
    for name, lines in files.items():
        text = lines if isinstance(lines, str) else "\n".join(lines) + "\n"
        (dest / name).write_text(text, encoding="utf-8")
    return dest


def variant(**changes):
    """TINY with files replaced (a list of lines or a str) or removed (None)."""
    files = {k: list(v) for k, v in TINY.items()}
    for name, value in changes.items():
        name = name.replace("__", ".")
        if value is None:
            files.pop(name, None)
        else:
            files[name] = value
    return files


def drop_column(name, column):
    lines = TINY[name]
    header = lines[0].split(",")
    i = header.index(column)
    return [",".join(c for j, c in enumerate(line.split(",")) if j != i) for line in lines]


def replace_line(name, line_no, text):
    """The file with physical line `line_no` (1-based, header = 1) replaced."""
    lines = list(TINY[name])
    lines[line_no - 1] = text
    return lines


def run(transitd, *args, timeout=300):
    return subprocess.run([transitd, *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout)


def snapshot(data):
    """The active version and a digest of every file in it."""
    data = pathlib.Path(data)
    target = os.readlink(data / "current")
    vdir = data / target
    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
               for p in sorted(vdir.iterdir()) if p.is_file()}
    return target, digests


def leftovers(data):
    return [p.name for p in (pathlib.Path(data) / "versions").iterdir()
            if p.name.startswith(".")]


@pytest.fixture
def data_with_good_version(transitd, tmp_path):
    data = tmp_path / "data"
    feed = write_feed(tmp_path / "good", TINY)
    p = run(transitd, "import", feed, "--data", data, "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["activated"] is True
    assert s["counts"]["stops"] == 4 and s["counts"]["trips"] == 3
    return data


def test_the_tiny_feed_is_clean(transitd, tmp_path):
    feed = write_feed(tmp_path / "good", TINY)
    p = run(transitd, "import", feed, "--data", tmp_path / "data", "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["problems"] == {} or set(s["problems"]) <= {"ignored_file"}
    assert s["files"]["stop_times.txt"] == 9


# ---------------------------------------------------------------- fatal problems

FATAL = {
    "missing_stops_file": (variant(stops__txt=None), ["stops.txt"]),
    "empty_stops_file": (variant(stops__txt=""), ["stops.txt"]),
    "stop_times_without_stop_id": (variant(stop_times__txt=drop_column("stop_times.txt", "stop_id")),
                                   ["stop_times.txt", "stop_id"]),
    "stop_times_without_trip_id": (variant(stop_times__txt=drop_column("stop_times.txt", "trip_id")),
                                   ["stop_times.txt", "trip_id"]),
    "trips_without_service_id": (variant(trips__txt=drop_column("trips.txt", "service_id")),
                                 ["trips.txt", "service_id"]),
    "no_calendar_at_all": (variant(calendar__txt=None), ["calendar"]),
}


@pytest.mark.parametrize("case", sorted(FATAL))
def test_fatal_problem_fails_and_keeps_the_active_version(transitd, tmp_path,
                                                          data_with_good_version, case):
    files, needles = FATAL[case]
    data = data_with_good_version
    before = snapshot(data)
    feed = write_feed(tmp_path / case, files)
    p = run(transitd, "import", feed, "--data", data)
    assert p.returncode == 1, p.stdout + p.stderr
    for needle in needles:
        assert needle in p.stderr, (needle, p.stderr)
    assert "still the active one" in p.stderr
    assert snapshot(data) == before
    assert leftovers(data) == []
    # --json reports the failure as well
    q = run(transitd, "import", feed, "--data", data, "--json")
    assert q.returncode == 1
    s = json.loads(q.stdout)
    assert s["activated"] is False and needles[0] in s["error"]


def test_truncated_zip_fails_and_keeps_the_active_version(transitd, tmp_path,
                                                          data_with_good_version):
    data = data_with_good_version
    before = snapshot(data)
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w", zipfile.ZIP_DEFLATED) as z:
        for name, lines in TINY.items():
            z.writestr(name, "\n".join(lines) + "\n")
    blob = good.read_bytes()
    bad = tmp_path / "truncated.zip"
    bad.write_bytes(blob[: len(blob) * 2 // 3])
    p = run(transitd, "import", bad, "--data", data)
    assert p.returncode == 1
    assert "truncated.zip" in p.stderr
    assert snapshot(data) == before
    assert leftovers(data) == []


def test_not_a_zip_at_all(transitd, tmp_path, data_with_good_version):
    data = data_with_good_version
    before = snapshot(data)
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"this is not a zip file\n" * 10)
    p = run(transitd, "import", junk, "--data", data)
    assert p.returncode == 1
    assert "junk.zip" in p.stderr
    assert snapshot(data) == before


# ---------------------------------------------------------------- warnings

WARNINGS = {
    "bad_time_minutes": (
        variant(stop_times__txt=replace_line("stop_times.txt", 6, "T2,25:61:00,25:61:00,S2,2")),
        "bad_time", "stop_times.txt:6:"),
    "bad_time_text": (
        variant(stop_times__txt=replace_line("stop_times.txt", 9, "T3,abc,abc,S3,2")),
        "bad_time", "stop_times.txt:9:"),
    "unknown_stop": (
        variant(stop_times__txt=replace_line("stop_times.txt", 3, "T1,08:05:00,08:05:00,S99,2")),
        "unknown_stop", "stop_times.txt:3:"),
    "unknown_trip": (
        variant(stop_times__txt=TINY["stop_times.txt"] + ["T99,11:00:00,11:00:00,S1,1"]),
        "unknown_trip", "stop_times.txt:11:"),
    "unknown_route": (
        variant(trips__txt=replace_line("trips.txt", 4, "R9,WD,T3")),
        "unknown_route", "trips.txt:4:"),
    "duplicate_stop_id": (
        variant(stops__txt=TINY["stops.txt"] + ["S2,Second again,52.515,13.415"]),
        "duplicate_id", "stops.txt:6:"),
    "duplicate_trip_id": (
        variant(trips__txt=TINY["trips.txt"] + ["R2,WD,T1"]),
        "duplicate_id", "trips.txt:5:"),
}


@pytest.mark.parametrize("case", sorted(WARNINGS))
def test_bad_rows_are_counted_with_an_example(transitd, tmp_path, data_with_good_version, case):
    files, kind, where = WARNINGS[case]
    data = data_with_good_version
    previous, _ = snapshot(data)
    feed = write_feed(tmp_path / case, files)
    p = run(transitd, "import", feed, "--data", data, "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["activated"] is True
    assert s["problems"].get(kind, 0) >= 1, s["problems"]
    assert any(e.startswith(where) for e in s["examples"]), s["examples"]
    for e in s["examples"]:
        assert re.match(r"^[a-z_]+\.txt:\d+: \S", e), e
    # the new version is active and the previous one is kept
    assert os.readlink(data / "current") == "versions/" + s["version"]
    assert (data / previous / "COMPLETE").is_file()
    # the human summary shows the same problem
    q = run(transitd, "import", feed, "--data", data, "--force")
    assert q.returncode == 0
    assert kind in q.stdout and where in q.stdout


# ---------------------------------------------------------------- kill -9

def tmp_dirs(data):
    return [p for p in (pathlib.Path(data) / "versions").glob(".tmp-*")]


def tmp_has(name):
    return lambda data: any((d / name).exists() for d in tmp_dirs(data))


# Moments to kill an import at, observed from outside: the temporary directory
# appears, then each store file is created inside it. (The last steps, marker,
# rename and switch, take well under a millisecond: tests/unit/test_import.c
# checks their atomicity directly.)
KILL_POINTS = {
    "tmp_dir_created": lambda data: bool(tmp_dirs(data)),
    "schedule_sqlite_created": tmp_has("schedule.sqlite"),
    "shapes_sqlite_created": tmp_has("shapes.sqlite"),
    "timetable_bin_created": tmp_has("timetable.bin"),
}


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_kill_9_midway_leaves_the_active_version(transitd, tmp_path, data_with_good_version,
                                                 point):
    big = shared_feed("nyct_bus_brooklyn_2026.zip")
    data = data_with_good_version
    before = snapshot(data)
    reached = KILL_POINTS[point]
    p = subprocess.Popen([transitd, "import", big, "--data", str(data), "--quiet"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while p.poll() is None and not reached(data):
        time.sleep(0.0005)
    p.send_signal(signal.SIGKILL)
    p.wait()
    if p.returncode != -signal.SIGKILL:
        pytest.skip(f"the import finished before {point} was observed")
    after = snapshot(data)
    if after != before:
        # killed after the switch: then the new version is complete
        target, files = after
        assert (data / target / "COMPLETE").is_file()
        assert {"timetable.bin", "schedule.sqlite", "shapes.sqlite"} <= set(files)
    # the next import removes what the killed one left and succeeds
    q = run(transitd, "import", big, "--data", data, "--json")
    assert q.returncode == 0, q.stderr
    assert leftovers(data) == []
    s = json.loads(q.stdout)
    assert s["version"] == os.readlink(data / "current").split("/")[-1]
    if not s["noop"]:
        assert s["files"]["stop_times.txt"] == 2400187
