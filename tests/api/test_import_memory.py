"""The import's memory budget (issue #28): stop_times.txt folded trip by
trip while it is read (src/import/trip_stream.c), a feed not grouped by trip
read again holding its rows within `--memory-budget` and sorted in runs on
disk past it (src/import/stop_times_spill.c), and `--progress`.

What must hold: the order of stop_times.txt's rows changes nothing in
timetable.bin (the rows of a trip sorted by stop_sequence, trips numbered in
trips.txt order), whether the rows are grouped by trip in trips.txt's order,
grouped in another order, shuffled, or grouped but for one row; the per-trip
problems are reported alike; a feed not grouped by trip whose rows pass the
budget is sorted in runs on disk and merged to the same bytes, the runs
removed; a grouped one imports under any budget.
Feeds come from bench/gtfs_gen.py (deterministic), with per-trip problems
added."""
import csv
import io
import json
import pathlib
import random
import shutil
import struct
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GEN = ROOT / "bench" / "gtfs_gen.py"


def run(transitd, *args, timeout=300):
    return subprocess.run([transitd, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout)


def read_rows(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def write_rows(path, header, rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


@pytest.fixture(scope="module")
def base_feed(tmp_path_factory):
    """The demo feed as a directory, with per-trip problems: an exact duplicate
    row (a repeated stop_sequence), a trip cut to one stop time, a trip whose
    last stop has no time, a trip whose times go backwards, and a trip with no
    stop times at all."""
    d = tmp_path_factory.mktemp("memory") / "base"
    subprocess.run([sys.executable, str(GEN), "--scale", "demo", "--seed", "28", "--dir", str(d)], check=True,
                   stderr=subprocess.DEVNULL)
    header, rows = read_rows(d / "stop_times.txt")
    col = {name: i for i, name in enumerate(header)}
    trips = []
    for r in rows:
        if not trips or trips[-1] != r[col["trip_id"]]:
            trips.append(r[col["trip_id"]])
    dup, one, untimed, backwards, empty = trips[3], trips[10], trips[20], trips[30], trips[40]
    out = []
    for r in rows:
        t = r[col["trip_id"]]
        if t == empty:
            continue
        if t == one and out and out[-1][col["trip_id"]] == one:
            continue
        out.append(r)
        if t == dup and len([x for x in out if x[col["trip_id"]] == dup]) == 2:
            out.append(list(r))
    last = max(i for i, r in enumerate(out) if r[col["trip_id"]] == untimed)
    out[last][col["arrival_time"]] = out[last][col["departure_time"]] = ""
    back = [i for i, r in enumerate(out) if r[col["trip_id"]] == backwards]
    out[back[2]][col["arrival_time"]] = out[back[2]][col["departure_time"]] = "00:00:01"
    write_rows(d / "stop_times.txt", header, out)
    return d


def variant(base, dest, reorder):
    shutil.copytree(base, dest)
    header, rows = read_rows(dest / "stop_times.txt")
    write_rows(dest / "stop_times.txt", header, reorder(rows))
    return dest


def by_trip(rows):
    groups, order = {}, []
    for r in rows:
        if r[0] not in groups:
            groups[r[0]] = []
            order.append(r[0])
        groups[r[0]].append(r)
    return groups, order


def reversed_trips(rows):
    groups, order = by_trip(rows)
    return [r for t in reversed(order) for r in groups[t]]


def shuffled(rows):
    rows = list(rows)
    random.Random(28).shuffle(rows)
    return rows


def one_row_back(rows):
    return rows[1:] + rows[:1]


def timetable_bytes(data):
    """timetable.bin of the active version, but the import's clock: the
    header's checksum and meta.imported_at."""
    path = pathlib.Path(data) / "current" / "timetable.bin"
    b = bytearray(path.read_bytes())
    nsec = struct.unpack_from("<I", b, 20)[0]
    for i in range(nsec):
        sid, _, off, _ = struct.unpack_from("<IIQQ", b, 40 + 24 * i)
        if sid == 0:  # META: imported_at after 16 uint32 and the uint64 stop_times
            b[off + 72:off + 80] = bytes(8)
    b[32:36] = bytes(4)
    return bytes(b)


def trip_problems(summary):
    """The problems found per trip (no line: they are reported in trip order)."""
    return [e for e in summary["examples"] if "trip '" in e and ":0:" not in e and
            e.split(":")[0] in ("stop_times.txt", "trips.txt") and not e.split(":")[1].strip().isdigit()]


@pytest.fixture(scope="module")
def imported(transitd, base_feed, tmp_path_factory):
    root = tmp_path_factory.mktemp("memory-variants")
    feeds = {"grouped": base_feed,
             "reversed": variant(base_feed, root / "reversed", reversed_trips),
             "shuffled": variant(base_feed, root / "shuffled", shuffled),
             "one-back": variant(base_feed, root / "one-back", one_row_back)}
    out = {}
    for name, feed in feeds.items():
        data = root / f"data-{name}"
        p = run(transitd, "import", feed, "--data", data, "--json", "--max-drop", "100")
        assert p.returncode == 0, p.stderr
        out[name] = (feed, data, json.loads(p.stdout))
    return out


@pytest.mark.parametrize("name", ["reversed", "shuffled", "one-back"])
def test_the_order_of_stop_times_changes_nothing_in_the_timetable(imported, name):
    _, grouped_data, grouped = imported["grouped"]
    _, data, summary = imported[name]
    assert timetable_bytes(data) == timetable_bytes(grouped_data)
    assert summary["counts"] == grouped["counts"]
    assert summary["problems"] == grouped["problems"]
    assert trip_problems(summary) == trip_problems(grouped)


def test_per_trip_problems_are_reported(imported):
    _, _, s = imported["grouped"]
    text = "\n".join(s["examples"])
    for what in ("duplicate stop_sequence", "has only one stop time", "the first and last stop must have times",
                 "times go backwards", "has no stop times"):
        assert what in text, text


def test_a_grouped_feed_imports_under_any_budget(transitd, imported, tmp_path):
    feed, grouped_data, _ = imported["grouped"]
    data = tmp_path / "data"
    p = run(transitd, "import", feed, "--data", data, "--json", "--max-drop", "100", "--memory-budget", "1K")
    assert p.returncode == 0, p.stderr
    assert timetable_bytes(data) == timetable_bytes(grouped_data)


@pytest.mark.parametrize("budget", ["4K", "1K", "64K"])
def test_a_scattered_feed_past_the_budget_is_sorted_on_disk_to_the_same_bytes(transitd, imported, tmp_path, budget):
    feed, grouped_data, grouped = imported["shuffled"]
    data = tmp_path / "data"
    p = run(transitd, "import", feed, "--data", data, "--json", "--max-drop", "100", "--memory-budget", budget)
    assert p.returncode == 0, p.stderr
    assert timetable_bytes(data) == timetable_bytes(imported["grouped"][1])
    s = json.loads(p.stdout)
    assert s["problems"] == grouped["problems"] and trip_problems(s) == trip_problems(grouped)
    # the runs are gone: nothing but the versions' own files is left
    leftovers = [p.name for p in (data / "versions").rglob("*") if "runs" in p.name or p.name.startswith(".tmp")]
    assert leftovers == []


@pytest.mark.parametrize("size", ["", "0", "-1", "1.5X", "abc", "1e9", "99999999999999999999T"])
def test_a_bad_budget_is_a_usage_error(transitd, base_feed, tmp_path, size):
    p = run(transitd, "import", base_feed, "--data", tmp_path / "data", "--memory-budget", size)
    assert p.returncode == 2
    assert "--memory-budget needs a size" in p.stderr


def test_progress_on_a_pipe_leaves_json_clean(transitd, base_feed, tmp_path):
    p = run(transitd, "import", base_feed, "--data", tmp_path / "data", "--json", "--progress", "--max-drop", "100")
    assert p.returncode == 0, p.stderr
    json.loads(p.stdout)
    lines = p.stderr.splitlines()
    st = [ln for ln in lines if ln.startswith("stop_times.txt")]
    assert len(st) == 1 and "rows/s" in st[0], p.stderr
    assert any(ln.startswith("timetable.bin") for ln in lines), p.stderr
    assert "\033" not in p.stderr and "\r" not in p.stderr
    # without --progress a pipe gets no progress
    q = run(transitd, "import", base_feed, "--data", tmp_path / "data2", "--json", "--max-drop", "100")
    assert q.returncode == 0, q.stderr
    assert not [ln for ln in q.stderr.splitlines() if ln.startswith(("stop_times.txt", "timetable.bin"))], q.stderr
