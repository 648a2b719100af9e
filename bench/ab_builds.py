#!/usr/bin/env python3
"""ab_builds.py — two transitd builds side by side on the same machine
minutes: req/s and the server's CPU per request, alternating runs.

Why it exists: on a shared VM single `make bench` runs swing by a third
(one endpoint measured 175K, 126K and 175K req/s in three runs), so a
before/after comparison of two commits made of two separate runs says
little. Here both servers are up at once on their own import of the same
feed; each round runs every script against both, alternating which goes
first, and reports the medians and the per-round ratios, beside the
server CPU µs per request (from /proc), which other load disturbs less.

    python3 bench/ab_builds.py --a ../base/build --b build [--scripts departures,stop] [--rounds 4]
                               [--gtfs-rt FEED.pb]

With --gtfs-rt both servers serve that GTFS-Realtime file (e.g. the one
bench/realtime_bench.py writes, build/release/bench-realtime/trip-updates.pb)
and the rounds start once both have matched its updates; the wrk scripts
append $TRANSITD_BENCH_QUERY_EXTRA to every query (realtime=scheduled).
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_bench as rb   # noqa: E402  (the shared runner: Server, run_wrk, inputs)

SCRIPTS = "departures,stop_departures,stop,nearby_stops,mix,trip,routes"


def matched(port):
    """Whether the server's overlay has matched any trip update (/metrics)."""
    status, _, body = rb.http_get(port, "/metrics")
    for line in body.decode().splitlines() if status == 200 else []:
        if line.startswith('transitd_rt_trip_updates{outcome="matched"} '):
            return float(line.split()[-1]) > 0
    return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="the first build folder (holding transitd), e.g. the base")
    ap.add_argument("--b", required=True, help="the second build folder")
    ap.add_argument("--feed")
    ap.add_argument("--scripts", default=SCRIPTS, help=f"bench/wrk scripts (default {SCRIPTS})")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--gtfs-rt", help="a GTFS-Realtime file both servers serve (--gtfs-rt)")
    args = ap.parse_args(argv)
    realtime = ["--gtfs-rt", str(Path(args.gtfs_rt).resolve()), "--rt-interval", "15"] if args.gtfs_rt else []
    work = Path(args.b).resolve() / "bench-ab"
    rb.remove_own_dir(work)
    work.mkdir(parents=True)
    feed, source = rb.choose_feed(args, Path(args.b).resolve())
    rb.log(f"feed: {feed} ({source})")
    servers = {}
    try:
        for name, build in (("a", args.a), ("b", args.b)):
            transitd = rb.require_binary(Path(build).resolve() / "transitd", f"the server of --{name}")
            data = rb.import_for_serving(transitd, feed, work / f"data-{name}")
            port = rb.free_port()
            servers[name] = rb.Server(name, [transitd, "serve", "--data", str(data), "--port", str(port),
                                             "--bind", "127.0.0.1", "--threads",
                                             str(rb.os.cpu_count() or 1), "--quiet", *realtime],
                                      port, "/healthz", work / f"{name}.log").start()
        for server in servers.values() if realtime else ():
            deadline = time.monotonic() + 60
            while not matched(server.port):
                if time.monotonic() > deadline:
                    raise rb.BenchError(f"{server.name}: the realtime overlay matched no trip update within 60 s")
                time.sleep(0.2)
        rb.extract_inputs(work / "data-b", work / "inputs", seed=args.seed)
        scripts = args.scripts.split(",")
        runs = {(n, s): [] for n in servers for s in scripts}
        for r in range(args.rounds):
            for s in scripts:
                for n in (("a", "b") if r % 2 == 0 else ("b", "a")):
                    runs[(n, s)].append(rb.run_wrk_with_cpu(s, servers[n], 64, args.duration,
                                                            work / "inputs", seed=args.seed + r))
    finally:
        for server in servers.values():
            server.stop()
    print(f"{'script':16s} {'a req/s':>9s} {'b req/s':>9s}  b/a per round{'':18s} {'a cpu µs':>8s} "
          f"{'b cpu µs':>8s} {'b/a':>6s}")
    for s in scripts:
        a, b = runs[("a", s)], runs[("b", s)]
        ratios = [y["req_per_s"] / x["req_per_s"] for x, y in zip(a, b) if x["req_per_s"]]
        cpu_a = [x["server_cpu_us_per_req"] for x in a if x["server_cpu_us_per_req"]]
        cpu_b = [y["server_cpu_us_per_req"] for y in b if y["server_cpu_us_per_req"]]
        ca = statistics.median(cpu_a) if cpu_a else float("nan")
        cb = statistics.median(cpu_b) if cpu_b else float("nan")
        print(f"{s:16s} {statistics.median(x['req_per_s'] for x in a):9,.0f} "
              f"{statistics.median(y['req_per_s'] for y in b):9,.0f}  "
              f"{' '.join(f'{q:.2f}' for q in ratios):30s} {ca:8.2f} {cb:8.2f} {cb / ca:6.3f}")
    return 0


if __name__ == "__main__":
    rb.exit_with(main)
