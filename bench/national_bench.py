#!/usr/bin/env python3
"""national_bench.py — transitd at national and continental size: the
generated national feed (bench/national_gen.py) at 4x, 16x and 64x NYC bus
Brooklyn, against Brooklyn itself in the same run (issue #28).

Why it exists: a city benchmark says nothing about the costs that grow with
the feed. At each size this measures, with the release build:
- the import: wall time and peak RSS (the process's own rusage);
- the stores: bytes on disk of the active version, and the serving RSS
  (the server's peak VmRSS while it answers wrk);
- req/s (and the server's CPU µs per request) of stop departures and nearby
  departures (bench/wrk stop_departures.lua and departures.lua, 64
  connections, loopback), alternating with a Brooklyn server in the same
  minutes, as ratios to Brooklyn, medians of --reps;
- nearby departures p50/p99 in process (bench/bench_query);
- a hot swap under wrk: feed_info.txt's feed_version is changed (a new
  dataset version), `transitd import` runs into the served data directory
  while wrk asks for nearby departures, and the server follows it: the time
  from the import's start until the server answers with the new version,
  the import's and the server's peak RSS meanwhile, and wrk's failed
  requests (non-2xx and socket errors), which must be 0.
Brooklyn is measured the same way as the first point of the curves. Curves
against stop_times go to a PNG beside the JSON record (gnuplot).

    python3 bench/national_bench.py --build build/release [--sizes 4,16,64] [--reps 3] [--duration 6]

Generated feeds are kept in build/feeds/national-x<size>-s<seed> (16x is
5.6 GB, 64x 22 GB; regenerated when cut off). Exits 1 when a measurement
fails (a swap with failed requests counts), 0 otherwise: this benchmark
reports figures, the issue's targets are judged in bench/README.md.
"""
import argparse
import datetime
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import national_gen   # noqa: E402
import run_bench as rb   # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
SCRIPTS = ("stop_departures", "departures")
CONNS = 64


def log(msg):
    rb.log(f"national: {msg}")


def feed_dir(size, seed):
    return ROOT / "build" / "feeds" / f"national-x{size:g}-s{seed}"


def ensure_feed(path, size, seed):
    """The generated feed at `path`, generated unless a complete one of the same size and seed is there."""
    done = path / ".complete"
    if done.exists():
        try:
            meta = json.loads(done.read_text())
            if meta.get("size") == size and meta.get("seed") == seed:
                return meta
        except ValueError:
            pass
    if path.exists():
        shutil.rmtree(path)
    log(f"generating {size:g}x Brooklyn into {path}")
    t0 = time.monotonic()
    national_gen.generate(size, seed, path, log=None)
    log(f"generated in {time.monotonic() - t0:.0f} s")
    return json.loads(done.read_text())


def dir_bytes(path):
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file())


def serve(transitd, data, name, work):
    port = rb.free_port()
    return rb.Server(name, [transitd, "serve", "--data", str(data), "--port", str(port), "--bind", "127.0.0.1",
                            "--threads", str(os.cpu_count() or 1), "--quiet"],
                     port, "/healthz", work / f"{name}.log").start(timeout=300)


def served_version(server):
    try:
        status, _, body = rb.http_get(server.port, "/v1/feed", timeout=2.0)
        return json.loads(body)["feed"]["version"] if status == 200 else None
    except (OSError, ValueError, KeyError):
        return None


def stop_times_of(data):
    import sqlite3
    con = sqlite3.connect(f"file:{data / 'current' / 'schedule.sqlite'}?mode=ro", uri=True)
    try:
        return con.execute("SELECT COUNT(*) FROM stop_times").fetchone()[0]
    except sqlite3.Error:
        return None
    finally:
        con.close()


def measure_point(label, transitd, build, feed, work, brooklyn, args):
    """Import, stores, in-process p99, and the server; returns the point's
    record and its running server (the caller compares it with Brooklyn's)."""
    data = work / f"data-{label}"
    imp = rb.import_once(transitd, feed, data)
    summary = imp["summary"] or {}
    log(f"{label}: import {imp['wall_s']:.1f} s, peak RSS {imp['max_rss_mb']:.0f} MB")
    current = (data / "current").resolve()
    point = {
        "label": label, "feed": str(feed),
        "stop_times": (summary.get("files") or {}).get("stop_times.txt"),
        "import_s": imp["wall_s"], "import_peak_rss_mb": imp["max_rss_mb"], "import_summary": summary,
        "store_bytes": dir_bytes(current),
        "stores": {p.name: p.stat().st_size for p in current.iterdir() if p.is_file()},
    }
    q = rb.bench_query(build, data)
    point["query"] = {k: q[k] for k in ("nearby_departures", "stop_departures", "nearby_stops") if k in q}
    server = serve(transitd, data, label, work)
    point["rss_idle_mb"] = rb.rss_kb(server.pid) / 1024.0
    return point, server, data


def wrk_pair(servers, inputs, args):
    """Every script on every server, alternating order per rep; {(server, script): [results]}."""
    runs = {}
    names = list(servers)
    for rep in range(args.reps):
        for script in SCRIPTS:
            order = names if rep % 2 == 0 else names[::-1]
            for n in order:
                r = rb.run_wrk_with_cpu(script, servers[n], CONNS, args.duration, inputs[n], seed=args.seed + rep)
                if not r["ok"]:
                    raise rb.BenchError(f"wrk {script} on {n}: {r['problems']}")
                runs.setdefault((n, script), []).append(r)
    return runs


def hot_swap(transitd, feed, data, server, inputs, args, k):
    """A new version of the feed imported into the served data directory
    under wrk (nearby departures, in 5 s runs back to back from a second
    before the import until the server answers with the new version)."""
    info = feed / "feed_info.txt"
    original = info.read_text()
    header, row = original.split("\n", 1)
    info.write_text(header + "\n" + row.rstrip("\n") + f" swap {k}\n")
    before = served_version(server)
    wrk_runs, served = [], threading.Event()

    def load():
        while not served.is_set():
            wrk_runs.append(rb.run_wrk("departures", server.url(), CONNS, 5, inputs, seed=args.seed + len(wrk_runs)))

    try:
        t = threading.Thread(target=load)
        with rb.RssSampler(server.pid, interval=0.05) as rss:
            t.start()
            time.sleep(1.0)
            t0 = time.monotonic()
            imp = import_keep(transitd, feed, data)
            t_import = time.monotonic() - t0
            new = (imp["summary"] or {}).get("version")
            deadline = time.monotonic() + 60.0
            while served_version(server) != new and time.monotonic() < deadline:
                time.sleep(0.02)
            t_served = time.monotonic() - t0
            swapped = served_version(server) == new
            served.set()
            t.join()
        failed = sum(r.get("non2xx", 0) + sum((r.get("socket_errors") or {}).values()) for r in wrk_runs)
        requests = sum(r.get("requests", 0) for r in wrk_runs)
        return {"version_before": before, "version_after": new, "swapped": swapped,
                "import_s": t_import, "until_served_s": t_served, "import_peak_rss_mb": imp["max_rss_mb"],
                "server_peak_rss_mb": rss.max_kb / 1024.0, "wrk_runs": len(wrk_runs), "wrk_requests": requests,
                "wrk_req_per_s": statistics.median(r["req_per_s"] for r in wrk_runs) if wrk_runs else None,
                "failed_requests": failed,
                "wrk_problems": [q for r in wrk_runs for q in r.get("problems", [])]}
    finally:
        served.set()
        info.write_text(original)


def import_keep(transitd, feed, data):
    """`transitd import` into an existing data directory (rb.import_once starts afresh)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([transitd, "import", str(feed), "--data", str(data), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    out = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
    reader.start()
    rc, maxrss_kb = rb.wait_with_rusage(proc)
    reader.join()
    if rc != 0:
        raise rb.BenchError(f"transitd import {feed} (swap) exited {rc}")
    return {"wall_s": time.perf_counter() - t0, "max_rss_mb": maxrss_kb / 1024.0,
            "summary": json.loads(b"".join(out).decode())}


def write_record(record, args):
    out = pathlib.Path(args.out) if args.out else \
        RESULTS / f"{datetime.date.today().isoformat()}-{socket.gethostname()}-national.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    return out


def chart(points, png):
    """Curves against stop_times: import s, peak RSS, stores, serving RSS, req/s ratios, p99."""
    dat = png.with_suffix(".dat")
    lines = ["# stop_times import_s import_rss_mb store_mb serve_rss_mb stop_ratio nearby_ratio p99_us"]
    for p in points:
        lines.append(" ".join(str(v) for v in (
            round(p["stop_times"] / 1e6, 3), round(p["import_s"], 3), round(p["import_peak_rss_mb"], 1),
            round(p["store_bytes"] / 1e6, 1), round(p["serve_rss_mb"], 1),
            round(p.get("ratio_stop_departures", 1.0), 3), round(p.get("ratio_departures", 1.0), 3),
            round(p["query"]["nearby_departures"]["p99_us"], 2))))
    dat.write_text("\n".join(lines) + "\n")
    script = f"""
set terminal pngcairo size 1200,800 noenhanced font "sans,10"
set output '{png}'
set multiplot layout 2,3 title "transitd at national scale: the generated national feed at 4x, 16x, 64x; the first point is NYC bus Brooklyn"
set xlabel "stop_times (millions)"
set xrange [0:*]
set yrange [0:*]
set grid
set key off
set title "import wall time (s)"
plot '{dat}' using 1:2 with linespoints pt 7
set title "import peak RSS (MB)"
plot '{dat}' using 1:3 with linespoints pt 7
set title "stores on disk (MB)"
plot '{dat}' using 1:4 with linespoints pt 7
set title "serving RSS under wrk (MB)"
plot '{dat}' using 1:5 with linespoints pt 7
set title "req/s against Brooklyn (same run)"
set key bottom left
plot '{dat}' using 1:6 with linespoints pt 7 title "stop departures", '' using 1:7 with linespoints pt 5 title "nearby departures"
set key off
set title "nearby departures p99 in process (us)"
plot '{dat}' using 1:8 with linespoints pt 7
unset multiplot
"""
    p = subprocess.run(["gnuplot"], input=script, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        log(f"gnuplot failed: {p.stderr.strip()[-500:]}")
        return None
    return png


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--feed", help="the Brooklyn baseline (default ../shared/gtfs/nyct_bus_brooklyn_2026.zip)")
    ap.add_argument("--sizes", default="4,16,64", help="in Brooklyns, comma-separated")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=int, default=6)
    ap.add_argument("--keep", action="store_true", help="keep the data directories")
    ap.add_argument("--out")
    ap.add_argument("--chart", metavar="JSON", help="only draw the PNG of a record written before")
    args = ap.parse_args(argv)
    if args.chart:
        record = json.loads(pathlib.Path(args.chart).read_text())
        png = chart(record["points"], pathlib.Path(args.chart).with_suffix(".png"))
        log(f"wrote {png}")
        return 0 if png else 1
    build = pathlib.Path(args.build).resolve()
    transitd = rb.require_binary(build / "transitd", "the server")
    sizes = [float(s) for s in args.sizes.split(",") if s]
    work = build / "bench-national"
    rb.remove_own_dir(work)
    work.mkdir(parents=True)
    brooklyn_feed, source = rb.choose_feed(args, build)
    log(f"baseline: {brooklyn_feed} ({source})")
    record = {"bench": "national", "sizes": sizes, "seed": args.seed, "reps": args.reps,
              "duration_s": args.duration, "conns": CONNS, "machine": rb.machine_info(), "points": []}
    servers = {}
    ok = True
    try:
        base, servers["brooklyn"], base_data = measure_point("brooklyn", transitd, build, brooklyn_feed, work,
                                                            None, args)
        inputs = {"brooklyn": work / "inputs-brooklyn"}
        rb.extract_inputs(base_data, inputs["brooklyn"], seed=args.seed)
        base["stop_times"] = base["stop_times"] or stop_times_of(base_data)
        with rb.RssSampler(servers["brooklyn"].pid) as rss:
            runs = wrk_pair({"brooklyn": servers["brooklyn"]}, inputs, args)
        base["serve_rss_mb"] = rss.max_kb / 1024.0
        for s in SCRIPTS:
            base[f"req_per_s_{s}"] = statistics.median(r["req_per_s"] for r in runs[("brooklyn", s)])
        record["points"].append(base)
        for size in sizes:
            label = f"x{size:g}"
            feed = feed_dir(size, args.seed)
            meta = ensure_feed(feed, size, args.seed)
            point, server, data = measure_point(label, transitd, build, feed, work, base, args)
            point["regions"] = meta.get("regions")
            point["stop_times"] = point["stop_times"] or meta["rows"]["stop_times.txt"]
            point["csv_bytes"] = sum(f.stat().st_size for f in feed.glob("*.txt") if f.name != "shapes.txt")
            servers[label] = server
            inputs[label] = work / f"inputs-{label}"
            rb.extract_inputs(data, inputs[label], seed=args.seed)
            with rb.RssSampler(server.pid) as rss:
                runs = wrk_pair({"brooklyn": servers["brooklyn"], label: server}, inputs, args)
            point["serve_rss_mb"] = rss.max_kb / 1024.0
            for s in SCRIPTS:
                mine, theirs = runs[(label, s)], runs[("brooklyn", s)]
                point[f"req_per_s_{s}"] = statistics.median(r["req_per_s"] for r in mine)
                point[f"ratio_{s}"] = statistics.median(a["req_per_s"] / b["req_per_s"] for a, b in zip(mine, theirs))
                cpu = [a["server_cpu_us_per_req"] / b["server_cpu_us_per_req"] for a, b in zip(mine, theirs)
                       if a["server_cpu_us_per_req"] and b["server_cpu_us_per_req"]]
                point[f"cpu_ratio_{s}"] = statistics.median(cpu) if cpu else None
            point["hot_swap"] = hot_swap(transitd, feed, data, server, inputs[label], args, 1)
            hs = point["hot_swap"]
            log(f"{label}: swap served after {hs['until_served_s']:.1f} s, server peak RSS "
                f"{hs['server_peak_rss_mb']:.0f} MB, {hs['failed_requests']} failed requests")
            if not hs["swapped"] or hs["failed_requests"]:
                ok = False
            server.stop()
            del servers[label]
            if not args.keep:
                rb.remove_own_dir(data)
            record["points"].append(point)
            write_record(record, args)   # after each size: a cut-off run keeps what it measured
    finally:
        for s in servers.values():
            s.stop()
    record["finished"] = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    out = write_record(record, args)
    png = chart(record["points"], out.with_suffix(".png"))
    print(f"{'point':9s} {'stop_times':>12s} {'import s':>9s} {'imp RSS':>8s} {'stores MB':>9s} "
          f"{'serve RSS':>9s} {'stop r':>7s} {'near r':>7s} {'p99 us':>7s} {'swap s':>7s} {'swap RSS':>8s} {'fail':>5s}")
    for p in record["points"]:
        hs = p.get("hot_swap") or {}
        print(f"{p['label']:9s} {p['stop_times'] or 0:12,d} {p['import_s']:9.1f} {p['import_peak_rss_mb']:8.0f} "
              f"{p['store_bytes'] / 1e6:9.1f} {p['serve_rss_mb']:9.0f} {p.get('ratio_stop_departures', 1.0):7.3f} "
              f"{p.get('ratio_departures', 1.0):7.3f} {p['query']['nearby_departures']['p99_us']:7.2f} "
              f"{hs.get('until_served_s', float('nan')):7.1f} {hs.get('server_peak_rss_mb', float('nan')):8.0f} "
              f"{hs.get('failed_requests', 0):5d}")
    log(f"wrote {out}" + (f" and {png.name}" if png else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    rb.exit_with(main)
