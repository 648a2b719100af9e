#!/usr/bin/env python3
"""rt_large_feed.py — a large GTFS-Realtime TripUpdates feed of Brooklyn's
trips (about 64 MB, 200,000 entities), written with Google's protobuf
package, for `make bench-realtime-large` (bench/realtime_large.py).

Why it exists: issue #26 asks that a 64 MB feed decode and apply within 3x
its size in memory, and that departures keep answering while such a feed
is swapped in every second. A feed that size must look like a real one:
one TripUpdate per trip instance running on the service date and the days
after it (start_date set), each with the stop time updates of its next
stops (stop_sequence, stop_id, arrival and departure delays, some with an
uncertainty), 1 % canceled, 2 % with a skipped stop, until the size is
reached. Seeded: the same bytes every run for the same inputs. The feed is
written as its header and its entities apart, so a variant that differs
only in the header timestamp (FEED_B: every poll of a replaced file then
sees other bytes and decodes again) costs nothing to make.

    python3 bench/rt_large_feed.py --zip GTFS.zip --data DATA --date YYYY-MM-DD --out FEED.pb
                                   [--mb 64] [--seed 42]
"""
import argparse
import csv
import datetime
import importlib
import io
import random
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

MAX_STOPS = 12          # stop time updates per trip instance: its next stops, at most this many
MAX_DAYS = 21


def pb2(out_dir):
    """gtfs_realtime_pb2 compiled by protoc from proto/gtfs-realtime.proto into out_dir."""
    protoc = shutil.which("protoc")
    if not protoc:
        raise SystemExit("rt_large_feed: protoc is missing (.ci/deps test installs it)")
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run([protoc, f"--python_out={out_dir}", f"-I{ROOT / 'proto'}", "gtfs-realtime.proto"],
                   check=True, capture_output=True, timeout=60)
    sys.path.insert(0, str(out_dir))
    try:
        return importlib.import_module("gtfs_realtime_pb2")
    finally:
        sys.path.remove(str(out_dir))


def stop_times(zip_path):
    """trip_id → [(stop_sequence, stop_id)] in order, from the feed's stop_times.txt."""
    trips = {}
    with zipfile.ZipFile(zip_path) as z:
        name = next(n for n in z.namelist() if n.rsplit("/", 1)[-1] == "stop_times.txt")
        with z.open(name) as raw:
            rows = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8-sig", newline=""))
            for r in rows:
                trips.setdefault(r["trip_id"], []).append((int(r["stop_sequence"]), r["stop_id"]))
    for v in trips.values():
        v.sort()
    return trips


def instances(data_dir, service_date, want):
    """(trip_id, date) of trips running on service_date and the days after it, up to `want`."""
    import realtime_bench   # running_trips: calendar and calendar_dates of the imported dataset
    out = []
    day = service_date
    while len(out) < want and day < service_date + datetime.timedelta(days=MAX_DAYS):
        out += [(t, day) for t in sorted(realtime_bench.running_trips(data_dir, day))]
        day += datetime.timedelta(days=1)
    return out


def header_bytes(g, timestamp):
    m = g.FeedMessage()
    m.header.gtfs_realtime_version = "2.0"
    m.header.incrementality = g.FeedHeader.FULL_DATASET
    m.header.timestamp = timestamp
    return m.SerializeToString()


def entities_bytes(g, trips, runs, target_bytes, rng, timestamp):
    """The FeedMessage's entity fields, as many as fit in target_bytes, and their count."""
    chunks, size, count = [], 0, 0
    rng.shuffle(runs)
    for trip_id, day in runs:
        stops = trips.get(trip_id)
        if not stops or len(stops) < 2:
            continue
        m = g.FeedMessage()
        e = m.entity.add()
        e.id = f"tu{count}"
        tu = e.trip_update
        tu.trip.trip_id = trip_id
        tu.trip.start_date = day.strftime("%Y%m%d")
        tu.timestamp = timestamp
        roll = rng.random()
        if roll < 0.01:
            tu.trip.schedule_relationship = g.TripDescriptor.CANCELED
        else:
            first = rng.randrange(len(stops) - 1)
            delay = rng.randint(-60, 900)
            for k, (seq, stop_id) in enumerate(stops[first:first + MAX_STOPS]):
                u = tu.stop_time_update.add()
                u.stop_sequence = seq
                u.stop_id = stop_id
                if roll < 0.03 and k == 1:
                    u.schedule_relationship = g.TripUpdate.StopTimeUpdate.SKIPPED
                    continue
                delay += rng.randint(-20, 40)
                u.arrival.delay = delay
                u.departure.delay = delay + rng.randint(0, 30)
                if rng.random() < 0.3:
                    u.departure.uncertainty = 60 + k * 30
        b = m.SerializePartialToString()   # entities only: the header is written apart
        if size + len(b) > target_bytes:   # at most the target: transitd reads at most 64 MiB
            break
        chunks.append(b)
        size += len(b)
        count += 1
    return b"".join(chunks), count


def write_feeds(zip_path, data_dir, service_date, out, mb=64, seed=42, log=print):
    """Writes `out` and its header-only variant out.with_suffix('.b.pb'); returns (entities, bytes)."""
    t0 = time.monotonic()
    g = pb2(out.parent / "gtfs_rt_pb2")
    trips = stop_times(zip_path)
    target = mb * 1024 * 1024
    runs = instances(data_dir, service_date, 400000)
    if not runs:
        raise SystemExit(f"rt_large_feed: no trip runs on {service_date} or the {MAX_DAYS} days after it")
    now = int(time.time())
    body, count = entities_bytes(g, trips, runs, target - 1024, random.Random(seed), now)
    out.parent.mkdir(parents=True, exist_ok=True)
    a, b = header_bytes(g, now) + body, header_bytes(g, now + 1) + body
    out.write_bytes(a)
    out.with_suffix(".b.pb").write_bytes(b)
    log(f"rt_large_feed: {count:,} trip updates of {len(runs):,} trip instances, {len(a):,} bytes, "
        f"in {time.monotonic() - t0:.0f} s → {out}")
    return count, len(a)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zip", required=True)
    ap.add_argument("--data", required=True, help="the imported dataset's DATA folder (for its calendar)")
    ap.add_argument("--date", required=True, help="the service date, YYYY-MM-DD")
    ap.add_argument("--out", required=True)
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args(argv)
    write_feeds(Path(args.zip), Path(args.data), datetime.date.fromisoformat(args.date), Path(args.out),
                args.mb, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
