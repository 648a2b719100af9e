#!/usr/bin/env python3
"""realtime_bench.py — /v1/departures throughput with 20,000 GTFS-Realtime
trip updates loaded, against the same server binary without realtime, in
one run.

Why it exists: the realtime issue's target is that departures keep >= 85 %
of their rate without realtime. Both sides must be measured on the same
data and machine minutes. Two servers run through the whole measure:
transitd without --gtfs-rt, and transitd with --gtfs-rt on a file of
20,000 trip updates (measured once /metrics shows the overlay matched
them). After a short warm-up run on each, every repetition runs
wrk/departures.lua on both, alternating which goes first (a fixed order
would put any drift of the shared cores' load on one side). The updates
are of trips running on the inputs' service date, then on the days after
it until there are enough, each instance with a delay at a stop in its
middle, 2 % canceled, 2 % with a skipped stop. With --added N, N of the
20,000 are ADDED trips instead: copies of trips running on the service
date, three minutes later under new trip_ids, whose rows the server merges
into the departures it answers.
The realtime side answers by predicted time (realtime=predicted, the
default); --scheduled also runs it with realtime=scheduled, the boards the
schedule chooses. With --vehicles N the same feed also carries N
VehiclePosition entities, one per trip instance of the first N updates (a
position, an occupancy, the time of writing), so the rows of those trips
carry a vehicle (the server then runs with --rt-max-age 0, so that none goes
stale during the run). Written with tests/api/gtfs_rt_wire.py. The report is the median of the
per-repetition ratios with its 95 % interval (bootstrap), and beside it the
ratio of the server's CPU time per request (plain / realtime).

    python3 bench/realtime_bench.py --build build [--reps 40] [--duration 4] [--feed F] [--added 200] [--scheduled]
                                    [--vehicles 5000]
    make bench-realtime
"""
import argparse
import datetime
import http.client
import json
import random
import sqlite3
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "api"))
import run_bench as rb   # noqa: E402  (the shared runner: Server, run_wrk, inputs)
from gtfs_rt_wire import added_trip, feed, field_bytes, field_varint, vehicle_entity  # noqa: E402

UPDATES = 20000
ADDED_LAG_S = 180    # an added trip runs this long after the trip it copies
TARGET = 0.85
CONNS = rb.MAIN_CONNECTIONS


def running_trips(data_dir, service_date):
    """trip_ids whose service runs on service_date (calendar and calendar_dates)."""
    con = sqlite3.connect(f"file:{data_dir / 'current' / 'schedule.sqlite'}?mode=ro", uri=True)
    try:
        day = service_date.weekday()
        ymd = service_date.strftime("%Y%m%d")
        services = set()
        try:
            for row in con.execute("SELECT service_id, monday, tuesday, wednesday, thursday, friday,"
                                   " saturday, sunday, start_date, end_date FROM calendar"):
                start, end = rb.parse_gtfs_date(row[8]), rb.parse_gtfs_date(row[9])
                if start and end and start <= service_date <= end and str(row[1 + day]) == "1":
                    services.add(row[0])
        except sqlite3.Error:
            pass
        try:
            for sid, d, kind in con.execute("SELECT service_id, date, exception_type FROM calendar_dates"):
                if str(d).replace("-", "") == ymd:
                    (services.add if str(kind) == "1" else services.discard)(sid)
        except sqlite3.Error:
            pass
        return [t for t, s in con.execute("SELECT trip_id, service_id FROM trips") if s in services]
    finally:
        con.close()


def stop_sequences(port, trip_ids):
    """trip_id → its stop_sequences, from /v1/trips/{id} over one kept-alive connection."""
    out = {}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for t in trip_ids:
            conn.request("GET", "/v1/trips/" + urllib.parse.quote(t, safe=""))
            r = conn.getresponse()
            body = r.read()
            if r.status == 200:
                out[t] = [s["stop_sequence"] for s in json.loads(body)["trip"]["stop_times"]]
    finally:
        conn.close()
    return out


def added_copies(port, trip_ids, service_date):
    """(route_id, [(stop_id, Unix departure time)]) of each trip on service_date,
    from /v1/trips/{id}?date=, for ADDED copies of them."""
    out = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for t in trip_ids:
            conn.request("GET", "/v1/trips/" + urllib.parse.quote(t, safe="") + "?date="
                         + service_date.isoformat())
            r = conn.getresponse()
            body = r.read()
            if r.status != 200:
                continue
            trip = json.loads(body)["trip"]
            stops = [(st["stop_id"], int(datetime.datetime.fromisoformat(st["departure"]).timestamp()))
                     for st in trip["stop_times"] if st.get("departure")]
            if len(stops) >= 2:
                out.append((trip["route_id"], stops))
    finally:
        conn.close()
    return out


def trip_updates_feed(seqs, added, service_date, rng, vehicles=0):
    """The FeedMessage bytes: one TripUpdate per (trip, date) of `seqs`, then
    one ADDED trip per copy in `added`, then a vehicle for each of the first
    `vehicles` instances of `seqs`."""
    entities = []
    now = int(time.time())
    for i, (trip, day) in enumerate(list(seqs)[:vehicles]):
        entities.append(vehicle_entity(f"veh{i}", f"bus-{i}", trip, day.strftime("%Y%m%d"),
                                       lat=40.6 + rng.random() * 0.1, lon=-74.0 + rng.random() * 0.1,
                                       timestamp=now, occupancy=rng.randrange(7), bearing=rng.random() * 360))
    for i, ((trip, day), s) in enumerate(seqs.items()):
        trip_desc = field_bytes(1, trip) + field_bytes(3, day.strftime("%Y%m%d"))
        roll = rng.random()
        if roll < 0.02:
            trip_desc += field_varint(4, 3)   # CANCELED
            tu = field_bytes(1, trip_desc)
        else:
            tu = field_bytes(1, trip_desc)
            k = rng.randrange(len(s))
            delay = rng.randint(-60, 600)
            event = field_varint(1, delay & 0xFFFFFFFFFFFFFFFF)
            tu += field_bytes(2, field_varint(1, s[k]) + field_bytes(3, event))
            if roll < 0.04 and k + 1 < len(s):
                tu += field_bytes(2, field_varint(1, s[k + 1]) + field_varint(5, 1))   # SKIPPED
        entities.append(field_bytes(2, field_bytes(1, f"tu{i}") + field_bytes(3, tu)))
    ymd = service_date.strftime("%Y%m%d")
    for i, (route_id, stops) in enumerate(added):
        entities.append(added_trip(f"add{i}", f"added-{i}", route_id, ymd,
                                   [(stop, when + ADDED_LAG_S) for stop, when in stops]))
    return feed(*entities, timestamp=int(time.time()))


def measured(server, args, work, rep, extra=""):
    """wrk/departures.lua against server, with the server's CPU µs per request;
    `extra` is appended to every query string (realtime=scheduled)."""
    return rb.run_wrk_with_cpu("departures", server, CONNS, args.duration, work / "inputs",
                               seed=args.seed + rep, env_extra={"TRANSITD_BENCH_QUERY_EXTRA": extra})


def metric(port, name):
    status, _, body = rb.http_get(port, "/metrics")
    for line in body.decode().splitlines() if status == 200 else []:
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def serve(transitd, data_dir, work, extra, tag):
    port = rb.free_port()
    return rb.Server(f"transitd {tag}", [transitd, "serve", "--data", str(data_dir), "--port", str(port),
                                          "--bind", "127.0.0.1", "--threads", str(rb.os.cpu_count() or 1),
                                          "--quiet", *extra],
                     port, "/healthz", work / f"transitd-{tag}.log").start()


def wait_matched(server, want_added):
    """Waits (at most 60 s) until the realtime server's overlay has matched
    trip updates (and shown ADDED trips when the feed has them); returns
    (matched, shown) from /metrics."""
    deadline = time.monotonic() + 60
    matched = shown = None
    while time.monotonic() < deadline:
        matched = metric(server.port, 'transitd_rt_trip_updates{outcome="matched"}')
        shown = metric(server.port, 'transitd_rt_trip_updates{outcome="added"}')
        if matched and (shown or not want_added):
            return matched, shown
        time.sleep(0.2)
    raise rb.BenchError("the realtime overlay matched no trip update (or showed no ADDED trip) within 60 s")


def repetition(rep, plain, realtime, by_schedule, matched, shown):
    """One repetition's record and its log line: realtime over plain by req/s
    and by the server's CPU per request (plain / realtime)."""
    ratio = realtime["req_per_s"] / plain["req_per_s"] if plain["req_per_s"] else 0.0
    cpu_p, cpu_r = plain["server_cpu_us_per_req"], realtime["server_cpu_us_per_req"]
    cpu_ratio = cpu_p / cpu_r if cpu_p and cpu_r else None
    ok = plain["ok"] and realtime["ok"] and (by_schedule is None or by_schedule["ok"])
    if by_schedule:
        cpu_s = by_schedule["server_cpu_us_per_req"]
        rb.log(f"rep {rep + 1}: realtime=scheduled {by_schedule['req_per_s']:,.0f} req/s (ratio "
               f"{by_schedule['req_per_s'] / plain['req_per_s']:.3f})"
               + (f"; server CPU {cpu_s:.1f} µs/request (ratio {cpu_p / cpu_s:.3f})" if cpu_p and cpu_s
                  else ""))
    first = "plain first" if rep % 2 == 0 else "realtime first"
    rb.log(f"rep {rep + 1} ({first}): departures {plain['req_per_s']:,.0f} req/s; with {matched:,.0f} "
           f"trip instances matched and {shown or 0:,.0f} added {realtime['req_per_s']:,.0f} req/s; "
           f"ratio {ratio:.3f}"
           + (f"; server CPU {cpu_p:.1f} vs {cpu_r:.1f} µs/request (ratio {cpu_ratio:.3f})"
              if cpu_ratio else "")
           + ("" if ok else "  FLAGGED: " + "; ".join(plain["problems"] + realtime["problems"])))
    return {"rep": rep, "plain": plain, "realtime": realtime, "matched": matched, "ratio": ratio,
            "cpu_ratio": cpu_ratio, "ok": ok, "scheduled": by_schedule, "first": "plain" if rep % 2 == 0 else
            "realtime"}


def main(argv=None):
    ap = rb.side_bench_parser(__doc__, "realtime")
    # shorter runs, more of them: each repetition is a pair a few seconds
    # apart, and single pairs spread by a tenth either way on shared cores,
    # so 40 of them place the median within about 0.03 (the summary gives
    # its 95 % interval)
    ap.set_defaults(reps=40, duration=4)
    ap.add_argument("--added", type=int, default=0,
                    help="how many of the 20,000 trip updates are ADDED trips (default 0)")
    ap.add_argument("--vehicles", type=int, default=0,
                    help="vehicle positions in the feed besides the trip updates, one per trip instance of "
                         "the first N updates (default 0)")
    ap.add_argument("--scheduled", action="store_true",
                    help="also measure the realtime server with realtime=scheduled (boards by scheduled "
                         "time), after the default predicted-time run of each repetition")
    args = ap.parse_args(argv)
    n_added = max(0, min(args.added, UPDATES))
    transitd, work, feed_path, data_dir = rb.prepare_side_bench(args, "realtime")
    inputs = rb.extract_inputs(data_dir, work / "inputs", seed=args.seed)
    service_date = datetime.date.fromisoformat(inputs["service_date"])
    rng = random.Random(args.seed)
    # the trips of the service date, then (when they are fewer than UPDATES) of the
    # days after it, each instance with its own start_date
    instances = []
    day = service_date
    while len(instances) < UPDATES - n_added and day < service_date + datetime.timedelta(days=7):
        trips = running_trips(data_dir, day)
        rng.shuffle(trips)
        instances += [(t, day) for t in trips[:UPDATES - n_added - len(instances)]]
        day += datetime.timedelta(days=1)
    originals = running_trips(data_dir, service_date)
    rng.shuffle(originals)
    plain_server = serve(transitd, data_dir, work, [], "plain")
    try:
        known = stop_sequences(plain_server.port, sorted({t for t, _ in instances}))
        added = added_copies(plain_server.port, originals[:n_added], service_date)
    finally:
        plain_server.stop()
    seqs = {(t, d): known[t] for t, d in instances if known.get(t)}
    rt_file = work / "trip-updates.pb"
    rt_file.write_bytes(trip_updates_feed(seqs, added, service_date, rng, max(0, args.vehicles)))
    rb.log(f"inputs: {inputs['stops']} stops, service date {service_date}; {len(seqs) + len(added):,} "
           f"trip updates, {len(added)} of them ADDED trips, {min(max(0, args.vehicles), len(seqs)):,} vehicles "
           f"({rt_file.stat().st_size:,} bytes); "
           f"{args.reps} x (departures without realtime, with it), c={CONNS}, {args.duration} s each")
    # Both servers run through the whole measure, each warmed by a short run
    # first, and the repetitions alternate which is measured first (plain,
    # realtime; then realtime, plain; ...): with one fixed order, load that
    # grows or falls over the run on these shared cores would always land on
    # the same side. A repetition's ratio compares two runs seconds apart.
    plain_server = serve(transitd, data_dir, work, [], "plain")
    rt_server = None
    runs = []
    try:
        rt_server = serve(transitd, data_dir, work, ["--gtfs-rt", str(rt_file), "--rt-interval", "15"]
                          + (["--rt-max-age", "0"] if args.vehicles > 0 else []), "realtime")
        matched, shown = wait_matched(rt_server, bool(added))
        warm = argparse.Namespace(**{**vars(args), "duration": min(2, max(1, args.duration // 2))})
        measured(plain_server, warm, work, -1)
        measured(rt_server, warm, work, -1)
        for rep in range(args.reps):
            plain = realtime = by_schedule = None
            for side in (("plain", "realtime") if rep % 2 == 0 else ("realtime", "plain")):
                if side == "plain":
                    plain = measured(plain_server, args, work, rep)
                else:
                    realtime = measured(rt_server, args, work, rep)
                    if args.scheduled:
                        by_schedule = measured(rt_server, args, work, rep, "realtime=scheduled")
            runs.append(repetition(rep, plain, realtime, by_schedule, matched, shown))
    finally:
        plain_server.stop()
        if rt_server:
            rt_server.stop()
    good = [r for r in runs if r["ok"]]
    if args.smoke:
        rb.log(f"realtime smoke {'OK' if len(good) == len(runs) else 'FAILED'}")
        return 0 if len(good) == len(runs) else 1
    if not good:
        rb.log("every repetition was flagged; no result")
        return 1
    fields = {
        "trip_updates": len(seqs) + len(added),
        "added_trips": len(added),
        "plain_req_per_s": statistics.median(r["plain"]["req_per_s"] for r in good),
        "realtime_req_per_s": statistics.median(r["realtime"]["req_per_s"] for r in good),
    }
    if args.scheduled:
        sched = [r for r in good if r["scheduled"]]
        fields["scheduled_req_per_s"] = statistics.median(r["scheduled"]["req_per_s"] for r in sched)
        fields["scheduled_ratio"] = statistics.median(r["scheduled"]["req_per_s"] / r["plain"]["req_per_s"]
                                                      for r in sched)
        cpu = [r["plain"]["server_cpu_us_per_req"] / r["scheduled"]["server_cpu_us_per_req"] for r in sched
               if r["plain"]["server_cpu_us_per_req"] and r["scheduled"]["server_cpu_us_per_req"]]
        fields["scheduled_cpu_ratio"] = statistics.median(cpu) if cpu else None
        rb.log(f"realtime=scheduled (median): {fields['scheduled_req_per_s']:,.0f} req/s, ratio "
               f"{fields['scheduled_ratio']:.3f}, server CPU ratio {fields['scheduled_cpu_ratio'] or 0:.3f}")
    return rb.finish_side_bench(
        "realtime", args, CONNS, feed_path, runs, good, TARGET, fields,
        lambda res: f"departures without realtime {res['plain_req_per_s']:,.0f} req/s; with "
                    f"{len(seqs) + len(added):,} trip updates ({len(added)} ADDED) "
                    f"{res['realtime_req_per_s']:,.0f} req/s")


if __name__ == "__main__":
    rb.exit_with(main)
