#!/usr/bin/env python3
"""rt_mixed_feed.py — a feed with every kind of board row on a large real
timetable, to compare two builds' boards (bench/board_dump.c).

Why it exists: the realtime benchmark's feed (realtime_bench.py) delays
every trip and cancels a few; boards by predicted time also hide DELETED and
REPLACED instances, move rows to an assigned stop, merge NEW and DUPLICATED
trips, fall back to the overlay's look-up for trips whose delays change at
many stops, and filter rows for wheelchair=1.
Brooklyn has no wheelchair data and no stations, so this also writes a copy
of the feed with them (random wheelchair_accessible and wheelchair_boarding,
and stations grouping nearby stops), to import beside the original:

    python3 bench/rt_mixed_feed.py --zip FEED.zip --date 2026-11-03 \
        --out-zip /tmp/mixed.zip --out-feed /tmp/mixed.pb
    transitd import /tmp/mixed.zip --data /tmp/mixed-data

Seeded (--seed), so the files repeat. The feed is built with Google's
protobuf package from proto/gtfs-realtime.proto (compiled with protoc into
a temporary directory), not with the project's encoder.
"""
import argparse
import csv
import datetime
import importlib
import io
import random
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]


def pb2():
    out = Path(tempfile.mkdtemp(prefix="rt_mixed_pb2_"))
    subprocess.run(["protoc", f"--python_out={out}", f"-I{ROOT / 'proto'}", "gtfs-realtime.proto"], check=True)
    sys.path.insert(0, str(out))
    return importlib.import_module("gtfs_realtime_pb2")


def read_csv(z, name):
    with z.open(name) as f:
        return list(csv.DictReader(io.TextIOWrapper(f, encoding="utf-8-sig")))


def write_csv(rows, fields):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue().encode()


def runs_on(calendar, dates, service, day):
    ymd = day.strftime("%Y%m%d")
    on = False
    c = calendar.get(service)
    if c and c["start_date"] <= ymd <= c["end_date"]:
        on = c[day.strftime("%A").lower()] == "1"
    for d, kind in dates.get(service, ()):
        if d == ymd:
            on = kind == "1"
    return on


def secs(t):
    h, m, s = (int(x) for x in t.split(":"))
    return h * 3600 + m * 60 + s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zip", required=True)
    ap.add_argument("--date", required=True, help="the service date, YYYY-MM-DD")
    ap.add_argument("--out-zip", required=True)
    ap.add_argument("--out-feed", required=True)
    ap.add_argument("--trips", type=int, default=12000)
    ap.add_argument("--seed", type=int, default=26)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    day = datetime.date.fromisoformat(args.date)
    with zipfile.ZipFile(args.zip) as z:
        files = {n: z.read(n) for n in z.namelist()}
        trips = read_csv(z, "trips.txt")
        stops = read_csv(z, "stops.txt")
        calendar = {r["service_id"]: r for r in read_csv(z, "calendar.txt")} if "calendar.txt" in files else {}
        dates = {}
        if "calendar_dates.txt" in files:
            for r in read_csv(z, "calendar_dates.txt"):
                dates.setdefault(r["service_id"], []).append((r["date"], r["exception_type"]))
        tz = ZoneInfo(read_csv(z, "agency.txt")[0]["agency_timezone"])

    # the copy with wheelchair data and stations
    for t in trips:
        t["wheelchair_accessible"] = str(rng.choice([0, 1, 1, 1, 2]))
    platforms = [s for s in stops if s.get("location_type", "0") in ("", "0")]
    stations = []
    for i, s in enumerate(rng.sample(platforms, 60)):
        sid = f"station-{i}"
        stations.append({**{k: "" for k in s}, "stop_id": sid, "stop_name": f"Station {i}", "stop_lat": s["stop_lat"],
                         "stop_lon": s["stop_lon"], "location_type": "1"})
        lat, lon = float(s["stop_lat"]), float(s["stop_lon"])
        near = sorted(platforms, key=lambda p: (float(p["stop_lat"]) - lat) ** 2 + (float(p["stop_lon"]) - lon) ** 2)
        for p in near[:3]:
            if not p.get("parent_station"):
                p["parent_station"] = sid
    stops += stations
    for s in stops:
        s["wheelchair_boarding"] = str(rng.choice([0, 0, 1, 1, 2]))
    files["trips.txt"] = write_csv(trips, list(trips[0].keys()))
    files["stops.txt"] = write_csv(stops, list(stops[0].keys()))
    with zipfile.ZipFile(args.out_zip, "w", zipfile.ZIP_DEFLATED) as z:
        for n, b in files.items():
            z.writestr(n, b)

    # the feed
    running = [t for t in trips if runs_on(calendar, dates, t["service_id"], day)]
    chosen = {t["trip_id"]: t for t in rng.sample(running, min(args.trips, len(running)))}
    times = {}
    for r in csv.DictReader(io.TextIOWrapper(io.BytesIO(files["stop_times.txt"]), encoding="utf-8-sig")):
        if r["trip_id"] in chosen:
            times.setdefault(r["trip_id"], []).append((int(r["stop_sequence"]), r["stop_id"], r["departure_time"]))
    stop_ids = [s["stop_id"] for s in platforms]
    base = datetime.datetime.combine(day, datetime.time(12), tz).timestamp() - 12 * 3600
    g = pb2()
    m = g.FeedMessage()
    m.header.gtfs_realtime_version = "2.0"
    m.header.timestamp = int(base) + 8 * 3600

    def entity(eid, trip_id, relationship="SCHEDULED", on=day):
        e = m.entity.add()
        e.id = eid
        tu = e.trip_update
        tu.trip.trip_id = trip_id
        tu.trip.start_date = on.strftime("%Y%m%d")
        tu.trip.schedule_relationship = getattr(g.TripDescriptor, relationship)
        return tu

    def update(tu, seq, delay=None, skipped=False, assigned=None):
        u = tu.stop_time_update.add()
        u.stop_sequence = seq
        if skipped:
            u.schedule_relationship = g.TripUpdate.StopTimeUpdate.SKIPPED
        if delay is not None:
            u.departure.delay = delay
            u.arrival.delay = delay
        if assigned:
            u.stop_time_properties.assigned_stop_id = assigned

    counts = {}
    for i, (trip_id, t) in enumerate(chosen.items()):
        st = sorted(times.get(trip_id, []))
        if len(st) < 3:
            continue
        roll = rng.random()
        k = rng.randrange(len(st) - 1)
        delay = rng.choice([rng.randint(-180, 900), rng.randint(-900, 3600)])
        if roll < 0.03:
            kind = "canceled"
            entity(f"e{i}", trip_id, "CANCELED")
        elif roll < 0.06:
            kind = "deleted"
            entity(f"e{i}", trip_id, "DELETED")
        elif roll < 0.10:
            kind = "replacement"
            tu = entity(f"e{i}", trip_id, "REPLACEMENT")
            for seq, _, _ in st[k:k + 3]:
                update(tu, seq, delay + rng.randint(-60, 60))
        elif roll < 0.13:
            kind = "duplicated"
            tu = entity(f"e{i}", trip_id, "DUPLICATED")
            first = secs(st[0][2]) + 420
            tu.trip_properties.trip_id = f"dup-{i}"
            tu.trip_properties.start_date = day.strftime("%Y%m%d")
            tu.trip_properties.start_time = f"{first // 3600:02d}:{first // 60 % 60:02d}:{first % 60:02d}"
            update(tu, st[k][0], delay)
        elif roll < 0.20:
            kind = "assigned"
            tu = entity(f"e{i}", trip_id)
            for seq, _, _ in rng.sample(st, min(3, len(st))):
                update(tu, seq, rng.choice([None, delay]), assigned=rng.choice(stop_ids))
        elif roll < 0.25:
            kind = "many runs"
            tu = entity(f"e{i}", trip_id)
            for j, (seq, _, _) in enumerate(st[:9]):
                update(tu, seq, delay + 30 * j)
        elif roll < 0.28:
            kind = "skipped"
            tu = entity(f"e{i}", trip_id)
            update(tu, st[k][0], delay)
            update(tu, st[k + 1][0], skipped=True)
        elif roll < 0.31:
            kind = "new"
            tu = entity(f"e{i}", "", "NEW")
            tu.trip.trip_id = f"new-{i}"
            tu.trip.route_id = t["route_id"]
            tu.trip_properties.trip_headsign = "New " + t.get("trip_headsign", "")
            for seq, stop, dep in st:
                u = tu.stop_time_update.add()
                u.stop_id = stop
                u.departure.time = int(base) + secs(dep) + 180
                if rng.random() < 0.05:
                    u.stop_time_properties.assigned_stop_id = rng.choice(stop_ids)
        else:
            kind = "delay"
            tu = entity(f"e{i}", trip_id)
            update(tu, st[k][0], delay)
        counts[kind] = counts.get(kind, 0) + 1
    Path(args.out_feed).write_bytes(m.SerializeToString())
    print(f"{len(m.entity)} entities: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
