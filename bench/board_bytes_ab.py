#!/usr/bin/env python3
"""board_bytes_ab.py — the same random departure boards asked of two builds,
their bodies compared byte for byte.

Why it exists: a change to how boards are chosen, joined or written (the
engine's board.c, the API's departure_json.c) must not change a byte of the
answers, and the API tests cover the cases one by one rather than many boards
of a real feed. This serves one imported dataset from two builds' transitd
(--a, --b) on the same realtime feed and asks both for the same seeded boards:
/v1/departures near a point (some of kind=both or arrivals, some
wheelchair=1), /v1/stops/{id}/departures and /arrivals, by predicted time (the
default, or realtime=predicted) and by realtime=scheduled, some with another
limit or window, some of them followed to their next page (the cursor's
board_join). Each body pair must be equal, byte for byte.

Two feeds, each served in turn by both builds:
- bench: realtime_bench.py's 20,000 trip updates (delays, 2 % canceled, 2 %
  with a skipped stop);
- rich: the same instances, with platform changes (assigned_stop_id) on 400
  of them, a TripProperties headsign on 300, 200 ADDED trips (copies of the
  service date's trips), 5,000 vehicle positions and 40 alerts on stops. Its
  boards go through the full join (board_row a row) where the bench feed's
  mostly do not.

    python3 bench/board_bytes_ab.py --a BASE_BUILD --b BUILD --data DATA_DIR [--boards 5000] [--seed 7]
        [--feeds bench,rich] [--out FILE]

DATA_DIR is an imported dataset (realtime_bench.py leaves one in
BUILD/bench-realtime/data). Exits 1 on any difference, and prints the first.
"""
import argparse
import datetime
import json
import random
import sqlite3
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "api"))
import realtime_bench as rtb   # noqa: E402  (its feed and the trips it reads)
import run_bench as rb   # noqa: E402
from gtfs_rt_wire import alert_entity, field_bytes, field_varint, vehicle_entity  # noqa: E402

RICH_MOVED = 400
RICH_HEADSIGNS = 300
RICH_ADDED = 200
RICH_VEHICLES = 5000
RICH_ALERTS = 40


def stops_of(data_dir):
    """(stop_id, lat, lon, location_type) of every stop."""
    con = sqlite3.connect(f"file:{data_dir / 'current' / 'schedule.sqlite'}?mode=ro", uri=True)
    try:
        return [(r[0], float(r[1] or 0), float(r[2] or 0), str(r[3] or 0))
                for r in con.execute("SELECT stop_id, stop_lat, stop_lon, location_type FROM stops")]
    finally:
        con.close()


def rich_update(i, trip, day, seqs, rng, stop_ids, moved, headsign, features):
    """A TripUpdate entity for (trip, day) with a delay from a middle stop on,
    and a platform change (assigned_stop_id, added to `features`) at that stop
    and the next, or a TripProperties headsign."""
    trip_desc = field_bytes(1, trip) + field_bytes(3, day.strftime("%Y%m%d"))
    tu = field_bytes(1, trip_desc)
    k = rng.randrange(len(seqs))
    delay = rng.randint(-60, 600)
    for j in range(k, min(k + 2, len(seqs))):
        stu = field_varint(1, seqs[j]) + field_bytes(3, field_varint(1, delay & 0xFFFFFFFFFFFFFFFF))
        if moved:
            assigned = rng.choice(stop_ids)
            features.add(assigned)
            stu += field_bytes(6, field_bytes(1, assigned))   # StopTimeProperties.assigned_stop_id
        tu += field_bytes(2, stu)
    if headsign:
        tu += field_bytes(6, field_bytes(5, f"Bench headsign {i}"))   # TripProperties.trip_headsign
    return field_bytes(2, field_bytes(1, f"rich{i}") + field_bytes(3, tu))


def rich_feed(seqs, added, service_date, rng, stop_ids):
    """The bench feed's instances, some moved or with a headsign, plus ADDED
    trips, vehicles and alerts: the FeedMessage's bytes, and the stops rows
    are moved to or alerts are on."""
    entities = []
    items = list(seqs.items())
    now = int(time.time())
    for i, ((trip, day), s) in enumerate(items[:RICH_VEHICLES]):
        entities.append(vehicle_entity(f"veh{i}", f"bus-{i}", trip, day.strftime("%Y%m%d"),
                                       lat=40.6 + rng.random() * 0.1, lon=-74.0 + rng.random() * 0.1,
                                       timestamp=now, occupancy=rng.randrange(7), bearing=rng.random() * 360))
    special = RICH_MOVED + RICH_HEADSIGNS
    # the special instances spread over the list, so that vehicles fall on some of them too
    step = max(1, len(items) // max(1, special))
    chosen = {i * step: (i < RICH_MOVED) for i in range(special) if i * step < len(items)}
    plain, features = {}, set()
    for i, ((trip, day), s) in enumerate(items):
        if i in chosen:
            entities.append(rich_update(i, trip, day, s, rng, stop_ids, chosen[i], not chosen[i], features))
        else:
            plain[(trip, day)] = s
    body = rtb.trip_updates_feed(plain, added, service_date, rng, 0)
    alerted = [rng.choice(stop_ids) for _ in range(RICH_ALERTS)]
    features.update(alerted)
    alerts = [alert_entity(f"alert{i}", stop, f"Bench alert {i}") for i, stop in enumerate(alerted)]
    # a FeedMessage with more entities after it is still one (repeated fields concatenate)
    return body + b"".join(entities) + b"".join(alerts), features


def board_paths(rng, n, stops, service_date, feature_stops):
    """n seeded board requests."""
    located = [s for s in stops if s[3] in ("0", "") and (s[1] or s[2])]
    servable = [s for s in stops if s[3] in ("0", "1", "")]
    q = lambda v: urllib.parse.quote(str(v), safe="")
    paths = []
    for _ in range(n):
        secs = rng.randrange(4 * 3600, 26 * 3600)
        day = service_date + datetime.timedelta(days=secs // 86400)
        secs %= 86400
        when = f"{day.isoformat()}T{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
        params = [("time", when)]
        mode = rng.random()
        if mode < 0.45:
            params.append(("realtime", "scheduled"))
        elif mode < 0.55:
            params.append(("realtime", "predicted"))
        roll = rng.random()
        if roll < 0.1:
            params.append(("limit", str(rng.choice([1, 5, 10, 100, 200]))))
        elif roll < 0.15:
            params.append(("window", str(rng.choice([15, 30, 120, 240]))))
        if rng.random() < 0.05:
            params.append(("wheelchair", "1"))
        near_feature = feature_stops and rng.random() < 0.25
        kind = rng.random()
        if kind < 0.5:
            s = rng.choice(feature_stops) if near_feature else rng.choice(located)
            lat = s[1] + (rng.random() - 0.5) * 0.006
            lon = s[2] + (rng.random() - 0.5) * 0.008
            params[:0] = [("lat", f"{lat:.6f}"), ("lon", f"{lon:.6f}")]
            if rng.random() < 0.1:
                params.append(("kind", rng.choice(["both", "arrivals"])))
            if rng.random() < 0.1:
                params.append(("radius", str(rng.choice([100, 300, 1000]))))
            base = "/v1/departures"
        else:
            s = rng.choice(feature_stops) if near_feature else rng.choice(servable)
            base = f"/v1/stops/{q(s[0])}/" + ("arrivals" if kind > 0.85 else "departures")
        paths.append(base + "?" + urllib.parse.urlencode(params))
    return paths


def serve(transitd, data_dir, work, rt_file, tag):
    port = rb.free_port()
    s = rb.Server(f"transitd {tag}", [str(transitd), "serve", "--data", str(data_dir), "--port", str(port),
                                       "--bind", "127.0.0.1", "--threads", "2", "--quiet", "--gtfs-rt", str(rt_file),
                                       "--rt-interval", "3600", "--rt-max-age", "0"],
                  port, "/healthz", work / f"transitd-{tag}.log").start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if rtb.metric(port, 'transitd_rt_trip_updates{outcome="matched"}'):
            return s
        time.sleep(0.2)
    s.stop()
    raise rb.BenchError(f"{tag}: the overlay matched no trip update within 60 s")


class Keep:
    """One kept-alive connection to a server."""

    def __init__(self, port):
        import http.client
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def get(self, path):
        self.conn.request("GET", path)
        r = self.conn.getresponse()
        return r.status, r.read()


def compare(name, a, b, paths, rng, follow=0.15):
    """Asks both servers every path (and some boards' next page); returns
    (boards, bytes, differences, counts of what the bodies held)."""
    ka, kb = Keep(a.port), Keep(b.port)
    boards = nbytes = 0
    diffs = []
    held = {k: 0 for k in ('"vehicle":', '"assigned_stop":', '"added":true', '"alerts":["', '"canceled":true',
                           '"realtime":true', '"predicted":"', 'Bench headsign')}
    statuses = {}
    queue = list(paths)
    while queue:
        path = queue.pop(0)
        sa, ba = ka.get(path)
        sb, bb = kb.get(path)
        boards += 1
        nbytes += len(ba)
        statuses[sa] = statuses.get(sa, 0) + 1
        if sa != sb or ba != bb:
            diffs.append((path, sa, sb, ba, bb))
            continue
        text = ba.decode("utf-8", "replace")
        for k in held:
            held[k] += text.count(k)
        if sa == 200 and rng.random() < follow:
            nxt = json.loads(ba).get("next")
            if nxt:
                queue.insert(0, urllib.parse.urlsplit(nxt)._replace(scheme="", netloc="").geturl())
    rb.log(f"{name}: {boards:,} boards ({len(paths):,} asked, the rest next pages), {nbytes:,} bytes, "
           f"statuses {statuses}, {len(diffs)} differences; rows with {held}")
    return {"feed": name, "boards": boards, "asked": len(paths), "bytes": nbytes, "statuses": statuses,
            "differences": len(diffs), "held": held}, diffs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="the base build folder (its transitd)")
    ap.add_argument("--b", required=True, help="the other build folder")
    ap.add_argument("--data", required=True, help="an imported dataset")
    ap.add_argument("--boards", type=int, default=5000, help="boards asked per feed (default 5000)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--feeds", default="bench,rich")
    ap.add_argument("--out", help="a JSON record of the counts")
    args = ap.parse_args(argv)
    ta = rb.require_binary(Path(args.a).resolve() / "transitd", "build A's server")
    tb = rb.require_binary(Path(args.b).resolve() / "transitd", "build B's server")
    data_dir = Path(args.data).resolve()
    work = Path(args.b).resolve() / "board-bytes-ab"
    rb.remove_own_dir(work)
    work.mkdir(parents=True)
    inputs = rb.extract_inputs(data_dir, work / "inputs", seed=args.seed)
    service_date = datetime.date.fromisoformat(inputs["service_date"])
    rng = random.Random(args.seed)
    # realtime_bench.py's instances: the service date's trips, then the next days'
    instances, day = [], service_date
    while len(instances) < rtb.UPDATES and day < service_date + datetime.timedelta(days=7):
        trips = rtb.running_trips(data_dir, day)
        rng.shuffle(trips)
        instances += [(t, day) for t in trips[:rtb.UPDATES - len(instances)]]
        day += datetime.timedelta(days=1)
    originals = rtb.running_trips(data_dir, service_date)
    rng.shuffle(originals)
    plain = rtb.serve(ta, data_dir, work, [], "plain")
    try:
        known = rtb.stop_sequences(plain.port, sorted({t for t, _ in instances}))
        added = rtb.added_copies(plain.port, originals[:RICH_ADDED], service_date)
    finally:
        plain.stop()
    seqs = {(t, d): known[t] for t, d in instances if known.get(t)}
    stops = stops_of(data_dir)
    stop_ids = [s[0] for s in stops if s[3] in ("0", "")]
    records, failed = [], False
    for name in [f for f in args.feeds.split(",") if f]:
        frng = random.Random(f"{args.seed}-{name}")
        if name == "bench":
            body = rtb.trip_updates_feed(seqs, [], service_date, frng, 0)
            feature = []
        elif name == "rich":
            body, ids = rich_feed(seqs, added, service_date, frng, stop_ids)
            feature = [s for s in stops if s[0] in ids]
        else:
            raise SystemExit(f"board_bytes_ab: unknown feed {name} (bench, rich)")
        rt_file = work / f"{name}.pb"
        rt_file.write_bytes(body)
        paths = board_paths(frng, args.boards, stops, service_date, feature)
        a = serve(ta, data_dir, work, rt_file, f"a-{name}")
        try:
            b = serve(tb, data_dir, work, rt_file, f"b-{name}")
            try:
                record, diffs = compare(name, a, b, paths, frng)
            finally:
                b.stop()
        finally:
            a.stop()
        records.append(record)
        if diffs:
            failed = True
            path, sa, sb, ba, bb = diffs[0]
            at = next((i for i in range(min(len(ba), len(bb))) if ba[i] != bb[i]), min(len(ba), len(bb)))
            rb.log(f"first difference: {path}: {sa} / {sb} at byte {at}:\n  A {ba[max(0, at - 200):at + 200]!r}\n"
                   f"  B {bb[max(0, at - 200):at + 200]!r}")
    if args.out:
        Path(args.out).write_text(json.dumps({"a": str(ta), "b": str(tb), "feeds": records}, indent=1) + "\n")
    rb.log("identical" if not failed else "DIFFERENT")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
