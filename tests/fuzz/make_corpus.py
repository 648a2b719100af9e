#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz targets (tests/fuzz/fuzz_*.c) from the
shared real feeds, into OUT/<target>/. Why it exists: good seeds make the
fuzzers start from what real feeds look like (quotes, CRLF, BOM-less UTF-8,
times past 24:00, trimmed real zips, timetable.bin files of a few trips) instead of from nothing,
and generating them keeps large files out of the repository.

    tests/fuzz/make_corpus.py --transitd build/transitd --out build/fuzz/corpus

Missing ../shared/gtfs is not an error: the committed seeds in
tests/fuzz/seeds/ are then all there is."""
import argparse
import hashlib
import io
import pathlib
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "gtfs"
SMALL_FEEDS = ("cairns_translink_2014.zip", "abidjan_osm_frequencies_2021.zip")


def put(out, target, data):
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def head_lines(text, n):
    return b"".join(text.splitlines(keepends=True)[:n])


def csv_seeds(out, feeds):
    for feed in feeds:
        with zipfile.ZipFile(feed) as z:
            for name in z.namelist():
                data = z.read(name)
                for n in (2, 8, 40):
                    # the first byte of an input is the fuzzer's chunk size
                    put(out, "csv", bytes([n]) + head_lines(data, n))


def value_seeds(out, feeds):
    seen = set()
    for feed in feeds:
        with zipfile.ZipFile(feed) as z:
            for name, cols in (("stop_times.txt", (1, 2)), ("calendar.txt", (8, 9)),
                               ("calendar_dates.txt", (1,)), ("stops.txt", (4, 5))):
                if name not in z.namelist():
                    continue
                for line in z.read(name).splitlines()[1:60]:
                    fields = line.split(b",")
                    for c in cols:
                        if c < len(fields) and fields[c] not in seen:
                            seen.add(fields[c])
                            put(out, "gtfs_time", fields[c])


def zip_seeds(out, feeds):
    for feed in feeds:
        with zipfile.ZipFile(feed) as z:
            for rows in (3, 20):
                buf = io.BytesIO()
                with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as small:
                    for name in z.namelist():
                        small.writestr(name, head_lines(z.read(name), rows))
                put(out, "feed_zip", buf.getvalue())
                buf = io.BytesIO()   # the same, stored and in a folder
                with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as small:
                    for name in z.namelist():
                        small.writestr("feed/" + name, head_lines(z.read(name), rows))
                put(out, "feed_zip", buf.getvalue())


def tiny_feed(feed, dest, ntrips=3):
    """A directory feed: the feed's files, stop_times.txt cut to its first
    trips, trips.txt to those trips, shapes.txt left out. A timetable.bin of
    a few KB runs the fuzzer a hundred times faster than a real one."""
    dest.mkdir(parents=True)
    with zipfile.ZipFile(feed) as z:
        lines = z.read("stop_times.txt").splitlines(keepends=True)
        keep, trips = [lines[0]], []
        for line in lines[1:]:
            trip = line.split(b",")[0]
            if trip not in trips:
                if len(trips) == ntrips:
                    break
                trips.append(trip)
            keep.append(line)
        # NYC-style files put trip_id first; Cairns does too (checked by the import)
        (dest / "stop_times.txt").write_bytes(b"".join(keep))
        header = lines[0].decode("utf-8-sig").strip().split(",")
        stop_col = header.index("stop_id")
        stops = {line.split(b",")[stop_col].strip() for line in keep[1:]}
        for name in z.namelist():
            if name in ("stop_times.txt", "shapes.txt"):
                continue
            data = z.read(name)
            rows = data.splitlines(keepends=True)
            if name == "trips.txt":
                data = rows[0] + b"".join(r for r in rows[1:] if any(t in r for t in trips))
            elif name == "stops.txt":   # only the stops the kept trips visit (ids lead the row)
                data = rows[0] + b"".join(r for r in rows[1:] if r.split(b",")[0].strip(b'" ') in stops)
            (dest / name).write_bytes(data)
    return dest


def timetable_seeds(out, feeds, transitd):
    with tempfile.TemporaryDirectory() as tmp:
        feeds = [tiny_feed(f, pathlib.Path(tmp) / f"tiny{i}") for i, f in enumerate(feeds)]
        for i, feed in enumerate(feeds):
            data = pathlib.Path(tmp) / f"d{i}"
            p = subprocess.run([transitd, "import", str(feed), "--data", str(data), "--quiet",
                                "--max-drop", "100"], capture_output=True, text=True)
            if p.returncode != 0:
                print(f"make_corpus: import of {feed} failed: {p.stderr}", file=sys.stderr)
                continue
            put(out, "timetable_open", (data / "current" / "timetable.bin").read_bytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--transitd", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    feeds = [SHARED / f for f in SMALL_FEEDS if (SHARED / f).exists()]
    if not feeds:
        print(f"make_corpus: {SHARED} has none of {SMALL_FEEDS}; committed seeds only",
              file=sys.stderr)
        return 0
    csv_seeds(out, feeds)
    value_seeds(out, feeds)
    zip_seeds(out, feeds)
    timetable_seeds(out, feeds, a.transitd)
    for t in sorted(p.name for p in out.iterdir()):
        print(f"make_corpus: {t}: {len(list((out / t).iterdir()))} seed(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
