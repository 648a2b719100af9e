#!/usr/bin/env python3
"""stream_bench.py — pushed boards (text/event-stream) at scale: 5,000 open
streams on one server, its RSS and idle CPU, and the latency from a new
GTFS-Realtime feed to the event on every stream.

Why it exists: issue #26 asks a server to hold 5,000 pushed boards. The
bench imports the feed (Brooklyn by default), picks --boards stops whose
08:00 board (fixed `time`, 60 minutes) has rows, and opens --streams
streams spread over them from --clients processes (epoll each; loopback
only), the server with --gtfs-rt on a file polled every second. It raises
RLIMIT_NOFILE for itself and so for the server it starts. Then:
  - RSS: the server's before the streams and with them open (per stream);
  - idle CPU: the server's CPU time over --idle seconds with every stream
    open and nothing changing (keep-alives every 15 s, the minute's
    recomputation of every board included);
  - latency: --rounds times, a new feed file replaces the old (alternately
    every trip running on the service date canceled, then none), which
    changes every board's rows; for each stream the time from the file's
    replacement to the arrival of its next `event: board`. The poll runs
    every second, so up to 1 s of that is the poll's wait: the record also
    gives each round's spread (last arrival minus first), the fan-out alone.
Each round's p50, p99 and max; the report is the median over rounds.

    python3 bench/stream_bench.py --build build/release [--streams 5000] [--boards 1000] [--rounds 5]
    make bench-streams
"""
import datetime
import json
import multiprocessing
import os
import random
import resource
import selectors
import socket
import sqlite3
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "api"))
import run_bench as rb   # noqa: E402
from gtfs_rt_wire import feed, trip_update   # noqa: E402
from realtime_bench import running_trips   # noqa: E402

TOKEN = b"event: board"
CANCELED = 3   # TripDescriptor.ScheduleRelationship


def raise_nofile(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = need if hard == resource.RLIM_INFINITY else min(need, hard)
    if soft == resource.RLIM_INFINITY or soft >= want:
        return soft
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return want


# ------------------------------------------------------------------ client processes

def client_main(conn, port, targets):
    """One client process: opens a stream per target, counts `event: board`
    on each, and answers the parent's commands over `conn`."""
    sel = selectors.EpollSelector()
    socks = []
    tails, counts, arrivals = [], [], []
    for i, target in enumerate(targets):
        for attempt in range(50):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                time.sleep(0.05 * (attempt + 1))
        else:
            conn.send(("error", f"cannot connect stream {i}"))
            return
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, i)
        socks.append(s)
        tails.append(b"")
        counts.append(0)
        arrivals.append({})

    def pump(timeout):
        for key, _ in sel.select(timeout):
            i = key.data
            try:
                data = key.fileobj.recv(1 << 16)
            except BlockingIOError:
                continue
            if not data:
                sel.unregister(key.fileobj)
                continue
            now = time.monotonic()
            buf = tails[i] + data
            n = buf.count(TOKEN)
            if n:
                counts[i] += n
                arrivals[i][counts[i]] = now
            tails[i] = buf[-(len(TOKEN) - 1):]

    def wait_for(count, deadline):
        while time.monotonic() < deadline and min(counts) < count:
            pump(0.05)
        return [arrivals[i].get(count) for i in range(len(socks))]

    wait_for(1, time.monotonic() + 120)
    conn.send(("ready", sum(1 for c in counts if c >= 1)))
    while True:
        while not conn.poll(0):
            pump(0.05)
        cmd = conn.recv()
        if cmd[0] == "collect":
            conn.send(("arrivals", wait_for(cmd[1], time.monotonic() + cmd[2])))
        elif cmd[0] == "quit":
            for s in socks:
                s.close()
            conn.send(("done",))
            return


# ------------------------------------------------------------------ the bench

def choose_boards(port, data_dir, service_date, n, rng):
    """n stop ids whose board at 08:00 on the service date has rows."""
    con = sqlite3.connect(f"file:{data_dir / 'current' / 'schedule.sqlite'}?mode=ro", uri=True)
    try:
        stops = [r[0] for r in con.execute("SELECT stop_id FROM stops WHERE COALESCE(location_type, 0) = 0")]
    finally:
        con.close()
    rng.shuffle(stops)
    when = urllib.parse.quote(f"{service_date.isoformat()}T08:00:00", safe="")
    chosen = []
    for stop in stops:
        target = f"/v1/stops/{urllib.parse.quote(stop, safe='')}/departures?time={when}&window=60"
        status, _, body = rb.http_get(port, target)
        if status == 200 and json.loads(body)["departures"]:
            chosen.append(target)
            if len(chosen) == n:
                break
    if not chosen:
        raise rb.BenchError("no stop has departures at 08:00 on the service date")
    return chosen


def cancellations(trips, ymd, canceled, stamp):
    if not canceled:
        return feed(timestamp=stamp)
    return feed(*(trip_update(f"c{i}", t, ymd, relationship=CANCELED) for i, t in enumerate(trips)),
                timestamp=stamp)


def publish(path, data):
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main(argv=None):
    ap = rb.side_bench_parser(__doc__, "streams")
    ap.add_argument("--streams", type=int, default=5000)
    ap.add_argument("--boards", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--idle", type=int, default=30)
    args = ap.parse_args(argv)
    if args.smoke:
        args.streams, args.boards, args.rounds, args.idle = 40, 10, 2, 2
    limit = raise_nofile(args.streams + 2048)
    if limit != resource.RLIM_INFINITY and limit < args.streams + 256:
        raise rb.BenchError(f"the open-file limit ({limit}) is too low for {args.streams} streams; "
                            "raise the hard limit (ulimit -Hn)")
    transitd, work, feed_path, data_dir = rb.prepare_side_bench(args, "streams")
    rng = random.Random(args.seed)
    con = sqlite3.connect(f"file:{data_dir / 'current' / 'schedule.sqlite'}?mode=ro", uri=True)
    try:
        service_date = rb.choose_service_date(con)
    finally:
        con.close()
    ymd = service_date.strftime("%Y%m%d")
    trips = running_trips(data_dir, service_date)
    rt = work / "rt.pb"
    stamp = int(time.time())
    publish(rt, cancellations(trips, ymd, False, stamp))
    port = rb.free_port()
    server = rb.Server("transitd streams", [
        transitd, "serve", "--data", str(data_dir), "--port", str(port), "--bind", "127.0.0.1",
        "--threads", "2", "--quiet", "--gtfs-rt", str(rt), "--rt-interval", "1",
        "--max-connections", str(args.streams + 1000), "--max-connections-per-ip", "0",
        "--max-streams", str(args.streams)], port, "/healthz", work / "server.log").start()
    clients = []
    try:
        boards = choose_boards(port, data_dir, service_date, args.boards, rng)
        rb.log(f"{len(boards)} boards with rows at 08:00 on {service_date}; {len(trips):,} trips run that day")
        time.sleep(1)
        rss_before = rb.rss_kb(server.pid)
        targets = [boards[i % len(boards)] for i in range(args.streams)]
        per = (len(targets) + args.clients - 1) // args.clients
        ctx = multiprocessing.get_context("fork")
        t_open = time.monotonic()
        for k in range(args.clients):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=client_main, args=(child, port, targets[k * per:(k + 1) * per]))
            p.start()
            clients.append((p, parent))
        ready = 0
        for p, parent in clients:
            msg = parent.recv()
            if msg[0] != "ready":
                raise rb.BenchError(f"a client failed: {msg[1]}")
            ready += msg[1]
        open_s = time.monotonic() - t_open
        if ready != len(targets):
            raise rb.BenchError(f"only {ready} of {len(targets)} streams got their first event")
        status, _, body = rb.http_get(port, "/metrics")
        open_now = [l for l in body.decode().splitlines() if l.startswith("transitd_streams_open ")]
        rb.log(f"{ready} streams open in {open_s:.1f} s ({open_now[0] if open_now else '?'})")
        time.sleep(2)
        rss_with = rb.rss_kb(server.pid)
        c0, t0 = rb.cpu_seconds(server.pid), time.monotonic()
        time.sleep(args.idle)
        c1, t1 = rb.cpu_seconds(server.pid), time.monotonic()
        idle_cpu = (c1 - c0) / (t1 - t0) if c0 is not None and c1 is not None else None
        rb.log(f"RSS {rss_before / 1024:.1f} MB before, {rss_with / 1024:.1f} MB with {ready} streams "
               f"({(rss_with - rss_before) / ready:.2f} KB each); idle CPU {idle_cpu * 100:.2f} % of a core "
               f"over {args.idle} s")
        rounds = []
        for r in range(args.rounds):
            c_before = rb.cpu_seconds(server.pid)
            t_change = time.monotonic()
            publish(rt, cancellations(trips, ymd, r % 2 == 0, stamp + r + 1))
            for p, parent in clients:
                parent.send(("collect", r + 2, 30))
            arrivals = []
            for p, parent in clients:
                arrivals += parent.recv()[1]
            got = [a - t_change for a in arrivals if a is not None]
            c_after = rb.cpu_seconds(server.pid)
            if not got:
                raise rb.BenchError(f"round {r + 1}: no stream got an event")
            one = {"received": len(got), "missing": len(arrivals) - len(got),
                   "p50_ms": percentile(got, 50) * 1e3, "p99_ms": percentile(got, 99) * 1e3,
                   "max_ms": max(got) * 1e3, "spread_ms": (max(got) - min(got)) * 1e3,
                   "first_ms": min(got) * 1e3, "server_cpu_s": c_after - c_before if c_before else None}
            rounds.append(one)
            rb.log(f"round {r + 1}: {one['received']} events ({one['missing']} missing), from the file: "
                   f"p50 {one['p50_ms']:.0f} ms, p99 {one['p99_ms']:.0f} ms, max {one['max_ms']:.0f} ms; "
                   f"first {one['first_ms']:.0f} ms, spread {one['spread_ms']:.0f} ms")
            time.sleep(1.5)
        for p, parent in clients:
            parent.send(("quit",))
            parent.recv()
            p.join(10)
        clients = []
        status, _, body = rb.http_get(port, "/metrics")
        stream_metrics = {l.split()[0]: float(l.split()[1]) for l in body.decode().splitlines()
                          if l.startswith(("transitd_stream", "transitd_streams"))}
    finally:
        for p, parent in clients:
            p.kill()
        server.stop()
    med = lambda k: statistics.median(r[k] for r in rounds)
    result = {
        "bench": "streams", "feed": str(feed_path), "streams": args.streams, "boards": len(boards),
        "clients": args.clients, "service_date": service_date.isoformat(), "canceled_trips": len(trips),
        "rss_before_kb": rss_before, "rss_with_streams_kb": rss_with,
        "rss_per_stream_kb": (rss_with - rss_before) / args.streams,
        "idle_s": args.idle, "idle_cpu_fraction": idle_cpu, "open_s": open_s,
        "latency_p50_ms": med("p50_ms"), "latency_p99_ms": med("p99_ms"), "latency_max_ms": med("max_ms"),
        "spread_ms": med("spread_ms"), "first_ms": med("first_ms"), "rounds": rounds,
        "metrics": stream_metrics, "machine": rb.machine_info(),
        "finished": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }
    print(f"streams benchmark: {args.streams} streams on {len(boards)} boards; RSS {rss_before / 1024:.1f} → "
          f"{rss_with / 1024:.1f} MB ({result['rss_per_stream_kb']:.2f} KB per stream); idle CPU "
          f"{idle_cpu * 100:.2f} % of a core; feed file → event on every stream (median of {len(rounds)} "
          f"rounds): p50 {result['latency_p50_ms']:.0f} ms, p99 {result['latency_p99_ms']:.0f} ms, max "
          f"{result['latency_max_ms']:.0f} ms (first {result['first_ms']:.0f} ms, spread "
          f"{result['spread_ms']:.0f} ms)")
    if not args.smoke:
        rb.write_side_record(result, "streams", args.out)
    missing = sum(r["missing"] for r in rounds)
    return 0 if missing == 0 else 2


if __name__ == "__main__":
    rb.exit_with(main)
