"""Black-box tests of the import guard (`transitd import --max-drop/--max-shrink/
--force`): a feed that loses most of a file's rows, or that is much smaller
than the active version, is built but not activated (exit 3, a message that
names the files and counts, `current` and the versions untouched); --force
and the limits let it through. Feeds come from bench/gtfs_gen.py and are
damaged here on purpose."""
import csv
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GEN = ROOT / "bench" / "gtfs_gen.py"


def run(transitd, *args):
    return subprocess.run([transitd, *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=300)


def rewrite(path, change):
    """Rewrites a CSV file row by row: change(header, row) returns the new row or None."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    header, out = rows[0], [rows[0]]
    for r in rows[1:]:
        r = change(header, r)
        if r is not None:
            out.append(r)
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(out)
    return len(rows) - 1


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    d = tmp_path_factory.mktemp("guard") / "good"
    subprocess.run([sys.executable, str(GEN), "--scale", "demo", "--seed", "7", "--dir", str(d)],
                   check=True, stderr=subprocess.DEVNULL)
    return d


@pytest.fixture(scope="module")
def bad_stops(good, tmp_path_factory):
    """Every stop but those of the first five trips gets an unparsable stop_lat
    (so most stop times go too, yet a few trips stay usable)."""
    d = tmp_path_factory.mktemp("guard") / "bad"
    shutil.copytree(good, d)
    with open(d / "stop_times.txt", newline="", encoding="utf-8-sig") as f:
        rows = csv.DictReader(f)
        trips, keep = [], set()
        for r in rows:
            if r["trip_id"] not in trips:
                if len(trips) == 5:
                    break
                trips.append(r["trip_id"])
            keep.add(r["stop_id"])

    def spoil(header, row):
        if row[header.index("stop_id")] not in keep:
            row[header.index("stop_lat")] = "not-a-number"
        return row
    total = rewrite(d / "stops.txt", spoil)
    assert len(keep) * 20 < total   # more than 95 % are spoiled
    return d


@pytest.fixture(scope="module")
def shrunk(good, tmp_path_factory):
    """A clean feed holding a quarter of the trips (every row it keeps is valid)."""
    d = tmp_path_factory.mktemp("guard") / "shrunk"
    shutil.copytree(good, d)
    kept = set()

    def keep_quarter(header, row):
        i = header.index("trip_id")
        keep_quarter.n += 1
        if keep_quarter.n % 4 == 0:
            kept.add(row[i])
            return row
        return None
    keep_quarter.n = 0
    rewrite(d / "trips.txt", keep_quarter)
    rewrite(d / "stop_times.txt", lambda h, r: r if r[h.index("trip_id")] in kept else None)
    freq = d / "frequencies.txt"
    if freq.exists():
        rewrite(freq, lambda h, r: r if r[h.index("trip_id")] in kept else None)
    return d


def current(data):
    target = os.readlink(pathlib.Path(data) / "current")
    m = re.fullmatch(r"versions/([0-9a-f]{12})", target)
    assert m, target
    return m.group(1)


def versions(data):
    return sorted(p.name for p in (pathlib.Path(data) / "versions").iterdir())


@pytest.fixture
def data_with_good(transitd, good, tmp_path):
    data = tmp_path / "data"
    p = run(transitd, "import", good, "--data", data, "--quiet")
    assert p.returncode == 0, p.stderr
    return data


def test_mostly_invalid_stops_are_refused_and_current_stays(transitd, bad_stops, data_with_good):
    before, before_versions = current(data_with_good), versions(data_with_good)
    p = run(transitd, "import", bad_stops, "--data", data_with_good)
    assert p.returncode == 3, p.stderr
    assert re.search(r"stops\.txt: [\d,]+ of [\d,]+ rows dropped \(9\d\.\d %\) > --max-drop 5 %", p.stderr), p.stderr
    assert re.search(r"stop_times\.txt: [\d,]+ of [\d,]+ rows dropped", p.stderr), p.stderr
    assert f"not activated, current stays {before}; use --force to activate anyway" in p.stderr
    assert current(data_with_good) == before
    assert versions(data_with_good) == before_versions   # the refused version is not kept
    assert "imported" not in p.stdout


def test_refusal_in_json(transitd, bad_stops, data_with_good):
    p = run(transitd, "import", bad_stops, "--data", data_with_good, "--json")
    assert p.returncode == 3
    j = json.loads(p.stdout)
    assert j["refused"] is True and j["activated"] is False
    assert "rows dropped" in j["error"]
    assert j["problems"]["bad_coordinate"] > 0


def test_force_activates_anyway(transitd, bad_stops, data_with_good):
    before = current(data_with_good)
    p = run(transitd, "import", bad_stops, "--data", data_with_good, "--force", "--json")
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["activated"] is True and j["refused"] is False
    assert current(data_with_good) == j["version"] != before


def test_max_drop_100_allows_on_a_fresh_data_dir(transitd, bad_stops, tmp_path):
    data = tmp_path / "fresh"
    p = run(transitd, "import", bad_stops, "--data", data)
    assert p.returncode == 3
    assert "there is no active version" in p.stderr
    assert not (data / "current").exists()
    p = run(transitd, "import", bad_stops, "--data", data, "--max-drop", "100")
    assert p.returncode == 0, p.stderr
    assert current(data)


def test_shrink_against_the_active_version(transitd, shrunk, data_with_good):
    before = current(data_with_good)
    p = run(transitd, "import", shrunk, "--data", data_with_good)
    assert p.returncode == 3, p.stderr
    assert re.search(r"trips: [\d,]+ in the active version, [\d,]+ in the new one \(-7\d\.\d %\) "
                     r"> --max-shrink 50 %", p.stderr), p.stderr
    assert "rows dropped" not in p.stderr   # every row of the smaller feed is valid
    assert current(data_with_good) == before
    p = run(transitd, "import", shrunk, "--data", data_with_good, "--max-shrink=100")
    assert p.returncode == 0, p.stderr
    assert current(data_with_good) != before


@pytest.mark.parametrize("args", [["--max-drop"], ["--max-drop", "abc"], ["--max-drop", "101"],
                                  ["--max-shrink=-1"], ["--max-drop="]])
def test_bad_limit_is_a_usage_error(transitd, good, tmp_path, args):
    p = run(transitd, "import", good, "--data", tmp_path / "d", *args)
    assert p.returncode == 2
    assert "percentage from 0 to 100" in p.stderr


def test_help_documents_the_flags(transitd):
    p = run(transitd, "import", "--help")
    assert p.returncode == 0
    for flag in ("--max-drop PCT", "--max-shrink PCT", "--force", "default 5", "default\n               50"):
        assert flag in p.stdout, flag
