"""Imports every shared real feed (../shared/gtfs) and the demo feed, and
checks the rows read per file against the counts published in SOURCES.md,
that the written version opens (`transitd query feed`), and that a damaged
timetable.bin is refused with a checksum error instead of being served.
Each shared feed is imported once per session into its own data directory."""
import csv
import io
import json
import pathlib
import re
import subprocess
import sys
import zipfile

import pytest

from conftest import SHARED_GTFS, shared_feed

ROOT = pathlib.Path(__file__).resolve().parents[2]
FEEDS = [
    "cairns_translink_2014.zip",
    "abidjan_osm_frequencies_2021.zip",
    "amtab_bari_2026.zip",
    "exo_laurentides_2025.zip",
    "nyct_subway_2026.zip",
    "nyct_bus_brooklyn_2026.zip",
]
COLUMNS = ["stops", "routes", "trips", "stop_times", "calendar", "calendar_dates"]


def run(transitd, *args, timeout=600):
    return subprocess.run([transitd, *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout)


def first_number(cell):
    """'1,339' → 1339; '4,276 (+624 frequencies)' → 4276; '–' or 'none' → 0."""
    m = re.search(r"\d[\d,]*", cell)
    return int(m.group(0).replace(",", "")) if m else 0


def published_counts():
    """{feed file: {stops, routes, trips, stop_times, calendar, calendar_dates}}
    from the table at the top of SOURCES.md."""
    text = (SHARED_GTFS / "SOURCES.md").read_text(encoding="utf-8")
    counts = {}
    for line in text.splitlines():
        m = re.match(r"\|\s*`([^`]+\.zip)`\s*\|(.*)\|\s*$", line)
        if not m:
            continue
        cells = [c.strip() for c in m.group(2).split("|")]
        # size | role | stops | routes | trips | stop_times | calendar / calendar_dates | dates
        cal, _, cal_dates = cells[6].partition("/")
        counts[m.group(1)] = {
            "stops": first_number(cells[2]), "routes": first_number(cells[3]),
            "trips": first_number(cells[4]), "stop_times": first_number(cells[5]),
            "calendar": first_number(cal), "calendar_dates": first_number(cal_dates),
        }
    return counts


@pytest.fixture(scope="session")
def imported(tmp_path_factory, transitd):
    """Imports a feed once per session; returns (data dir, --json summary)."""
    cache = {}

    def get(name):
        if name not in cache:
            path = shared_feed(name)
            data = tmp_path_factory.mktemp("feed-" + name.split(".")[0])
            p = run(transitd, "import", path, "--data", data, "--json")
            assert p.returncode == 0, f"{name}: {p.stderr}"
            cache[name] = (data, json.loads(p.stdout))
        return cache[name]
    return get


def test_sources_table_lists_all_six_feeds():
    shared_feed(FEEDS[0])
    counts = published_counts()
    assert sorted(counts) == sorted(FEEDS)
    assert counts["nyct_bus_brooklyn_2026.zip"]["stop_times"] == 2400187
    assert counts["abidjan_osm_frequencies_2021.zip"]["calendar_dates"] == 0


@pytest.mark.parametrize("name", FEEDS)
def test_rows_read_match_sources_md(imported, name):
    data, s = imported(name)
    expected = published_counts()[name]
    got = {c: s["files"].get(c + ".txt", 0) for c in COLUMNS}
    assert got == expected
    assert s["activated"] is True
    # every stop and route is kept; stop_times only lose what the diag explains
    assert s["counts"]["stops"] == expected["stops"]
    assert s["counts"]["routes"] == expected["routes"]
    assert 0 < s["counts"]["trips"] <= expected["trips"]
    assert 0 < s["counts"]["stop_times"] <= expected["stop_times"]
    for store in ("timetable.bin", "schedule.sqlite", "shapes.sqlite"):
        assert s["stores"][store] > 0, store


@pytest.mark.parametrize("name", FEEDS)
def test_written_version_opens(transitd, imported, name):
    data, s = imported(name)
    q = run(transitd, "query", "--data", data, "feed")
    assert q.returncode == 0, q.stderr
    assert s["version"] in q.stdout


def test_demo_feed(transitd, tmp_path):
    feed = tmp_path / "demo.zip"
    subprocess.run([sys.executable, str(ROOT / "bench" / "gtfs_gen.py"), "--scale", "demo",
                    "--out", str(feed)], check=True, stderr=subprocess.DEVNULL)
    data = tmp_path / "data"
    p = run(transitd, "import", feed, "--data", data, "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["activated"] is True
    with zipfile.ZipFile(feed) as z:
        text = z.read("stop_times.txt").decode("utf-8-sig")
    rows = sum(1 for row in csv.reader(io.StringIO(text)) if row) - 1
    assert s["files"]["stop_times.txt"] == rows > 50000
    assert s["files"]["frequencies.txt"] > 0 and s["files"]["transfers.txt"] > 0
    assert s["counts"]["stops"] == s["files"]["stops.txt"]
    assert run(transitd, "query", "--data", data, "feed").returncode == 0


def test_a_flipped_byte_in_timetable_bin_is_refused(transitd, tmp_path):
    data = tmp_path / "data"
    p = run(transitd, "import", shared_feed("cairns_translink_2014.zip"), "--data", data,
            "--json")
    assert p.returncode == 0, p.stderr
    tt = data / "current" / "timetable.bin"
    blob = bytearray(tt.read_bytes())
    blob[len(blob) // 2] ^= 0x01
    tt.write_bytes(bytes(blob))
    q = run(transitd, "query", "--data", data, "feed")
    assert q.returncode == 1
    assert "checksum" in q.stderr.lower()
    # importing the same feed again does not trust the damaged version: it rebuilds it
    r = run(transitd, "import", shared_feed("cairns_translink_2014.zip"), "--data", data,
            "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["noop"] is False
    assert run(transitd, "query", "--data", data, "feed").returncode == 0
