#!/usr/bin/env python3
"""realtime_large.py — a 64 MB GTFS-Realtime feed: its decode and apply
(time and peak extra memory), and /v1/departures while such a feed is
swapped in every second, against the same server without swaps, in one run
(`make bench-realtime-large`).

Why it exists: issue #26 asks that a 64 MB TripUpdates feed (about 200,000
entities) decode and apply with a peak extra memory of at most 3x its size,
without blocking readers, and for the departures rate while it is swapped
in every second. The feed (bench/rt_large_feed.py: Brooklyn's trip
instances, seeded, written with Google's protobuf package) is cached in
build/feeds/. Two measures:

1. In process, bench/bench_rt_large (the server's own poll and overlay
   build on the dataset): the time of each, and VmHWM minus the VmRSS
   before, for the first apply and for swaps over a published overlay.
   With --base BUILD it runs that build's bench_rt_large too (before/after).
2. The server with `--gtfs-rt FILE --rt-interval 1`: its RSS before any
   feed, then wrk/departures.lua with the feed applied and not changing,
   and with the file replaced every second by a variant that differs in
   its header timestamp (so every poll decodes and applies 64 MB again),
   alternating, `--reps` times: req/s and the server's CPU per request,
   medians, 0 failed requests, the feeds actually taken in during the swap
   runs (from /metrics), and the server's VmHWM above its RSS before.

    python3 bench/realtime_large.py --build build/release [--reps 3] [--duration 10] [--mb 64]
                                    [--base OTHER_BUILD]
    make bench-realtime-large
"""
import datetime
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_bench as rb   # noqa: E402
import rt_large_feed     # noqa: E402
from realtime_bench import metric, serve   # noqa: E402

CONNS = rb.MAIN_CONNECTIONS
TARGET = 3.0            # peak extra memory, as a multiple of the feed's size


def status_kb(pid, name):
    for line in rb.read_text(f"/proc/{pid}/status").splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def in_process(build, data_dir, feed_a, feed_b, rounds, label):
    """bench_rt_large's JSON lines (one per round) for one build."""
    binary = rb.require_binary(Path(build) / "bench" / "bench_rt_large", "the in-process large-feed benchmark")
    p = subprocess.run([str(binary), str(data_dir / "current"), str(feed_a), str(feed_b), "--rounds", str(rounds)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800)
    sys.stdout.write(f"-- {label}: {binary}\n{p.stdout}")
    if p.returncode != 0:
        raise rb.BenchError(f"bench_rt_large ({label}) exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return rb.parse_json_lines(p.stdout, "rt_large")


def summarise_in_process(lines):
    first = [r for r in lines if r["kind"] == "first"]
    swaps = [r for r in lines if r["kind"] == "swap"]
    out = {"feed_bytes": lines[0]["feed_bytes"]}
    for name, rows in (("first", first), ("swap", swaps)):
        if rows:
            out[name] = {k: statistics.median(r[k] for r in rows) for k in ("poll_ms", "build_ms", "extra_mb", "ratio")}
    return out


class Swapper(threading.Thread):
    """Points `stage` at feed_a and feed_b in turn every `interval` seconds
    (an atomic rename of a symlink), and counts, sampling /metrics five times
    a second, how often the feed in use changed: the feeds the server took in
    (a poll finds the file replaced, decodes it and builds its overlay; when
    that takes longer than a second the next poll takes the newest file)."""

    def __init__(self, stage, feeds, port, interval=1.0):
        super().__init__(daemon=True)
        self.stage, self.feeds, self.port, self.interval = stage, feeds, port, interval
        self.stop_event = threading.Event()
        self.swaps = 0
        self.taken = 0

    def run(self):
        last = metric(self.port, "transitd_rt_feed_timestamp_seconds")
        k, next_swap = 1, time.monotonic() + self.interval
        while not self.stop_event.wait(0.2):
            if time.monotonic() >= next_swap:
                point(self.stage, self.feeds[k % 2])
                k += 1
                self.swaps += 1
                next_swap += self.interval
            now = metric(self.port, "transitd_rt_feed_timestamp_seconds")
            if now is not None and now != last:
                self.taken += 1
                last = now


def point(stage, target):
    tmp = stage.with_name(stage.name + ".tmp")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, stage)


def main(argv=None):
    ap = rb.side_bench_parser(__doc__, "realtime-large")
    ap.add_argument("--mb", type=int, default=64, help="the feed's size in MiB (default 64)")
    ap.add_argument("--base", help="another build folder whose bench_rt_large runs beside this one's")
    ap.add_argument("--rounds", type=int, default=5, help="in-process rounds per build (default 5)")
    args = ap.parse_args(argv)
    transitd, work, feed_path, data_dir = rb.prepare_side_bench(args, "realtime-large")
    inputs = rb.extract_inputs(data_dir, work / "inputs", seed=args.seed)
    service_date = datetime.date.fromisoformat(inputs["service_date"])
    cache = rb.ROOT / "build" / "feeds"
    feed_a = cache / f"rt-large-{Path(feed_path).stem}-{args.mb}mb-{service_date}-seed{args.seed}.pb"
    feed_b = feed_a.with_suffix(".b.pb")
    if not (feed_a.exists() and feed_b.exists()):
        rt_large_feed.write_feeds(feed_path, data_dir, service_date, feed_a, args.mb, args.seed, log=rb.log)
    size = feed_a.stat().st_size
    rb.log(f"feed: {feed_a} ({size / 1048576:.1f} MiB)")

    # 1. in process
    builds = [("this", Path(args.build))] + ([("base", Path(args.base))] if args.base else [])
    proc = {}
    for label, build in builds:
        proc[label] = summarise_in_process(in_process(build, data_dir, feed_a, feed_b, args.rounds, label))
        f, s = proc[label].get("first"), proc[label].get("swap")
        rb.log(f"in process ({label}): first apply poll {f['poll_ms']:.0f} ms + build {f['build_ms']:.0f} ms, "
               f"peak +{f['extra_mb']:.0f} MB = {f['ratio']:.2f}x the feed"
               + (f"; swaps (median) poll {s['poll_ms']:.0f} ms + build {s['build_ms']:.0f} ms, "
                  f"peak +{s['extra_mb']:.0f} MB = {s['ratio']:.2f}x" if s else ""))

    # 2. the server, the feed swapped in every second against not swapped
    stage = work / "rt-feed.pb"
    server = serve(transitd, data_dir, work, ["--gtfs-rt", str(stage), "--rt-interval", "1"], "realtime-large")
    runs = []
    try:
        rb.run_wrk("departures", server.url(), CONNS, 2, work / "inputs", seed=args.seed)   # warm, no feed yet
        rss_before = rb.rss_kb(server.pid)
        point(stage, feed_a)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 120:
            if metric(server.port, 'transitd_rt_trip_updates{outcome="matched"}'):
                break
            time.sleep(0.1)
        else:
            raise rb.BenchError("the server applied no trip update of the large feed within 120 s")
        first_apply_s = time.monotonic() - t0
        rss_applied = rb.rss_kb(server.pid)
        rb.log(f"server: RSS {rss_before / 1024:.0f} MB before the feed, {rss_applied / 1024:.0f} MB with it "
               f"(applied {first_apply_s:.1f} s after the file appeared, polls every 1 s)")
        for rep in range(args.reps):
            still = rb.run_wrk_with_cpu("departures", server, CONNS, args.duration, work / "inputs",
                                        seed=args.seed + rep)
            sw = Swapper(stage, (feed_a, feed_b), server.port)
            sw.start()
            swapping = rb.run_wrk_with_cpu("departures", server, CONNS, args.duration, work / "inputs",
                                           seed=args.seed + rep)
            sw.stop_event.set()
            sw.join()
            point(stage, feed_a)
            ratio = swapping["req_per_s"] / still["req_per_s"] if still["req_per_s"] else 0.0
            cs, cw = still["server_cpu_us_per_req"], swapping["server_cpu_us_per_req"]
            ok = still["ok"] and swapping["ok"]
            rb.log(f"rep {rep + 1}: departures {still['req_per_s']:,.0f} req/s without swaps, "
                   f"{swapping['req_per_s']:,.0f} req/s with the feed swapped every second "
                   f"({sw.taken} of {sw.swaps} swaps taken in); ratio {ratio:.3f}"
                   + (f"; server CPU {cs:.1f} vs {cw:.1f} µs/request" if cs and cw else "")
                   + ("" if ok else "  FLAGGED: " + "; ".join(still["problems"] + swapping["problems"])))
            runs.append({"rep": rep, "still": still, "swapping": swapping, "swaps": sw.swaps, "taken": sw.taken,
                         "ratio": ratio, "cpu_ratio": cs / cw if cs and cw else None, "ok": ok})
        hwm = status_kb(server.pid, "VmHWM")
    finally:
        server.stop()
    good = [r for r in runs if r["ok"]]
    if not good:
        rb.log("every repetition was flagged; no result")
        return 1
    extra_server_mb = (hwm - rss_before) / 1024
    fields = {
        "feed_file": str(feed_a), "feed_bytes": size, "in_process": proc,
        "server_rss_before_mb": rss_before / 1024, "server_rss_applied_mb": rss_applied / 1024,
        "server_hwm_mb": hwm / 1024, "server_extra_mb": extra_server_mb,
        "server_extra_ratio": extra_server_mb / (size / 1048576),
        "first_apply_s": first_apply_s,
        "still_req_per_s": statistics.median(r["still"]["req_per_s"] for r in good),
        "swapping_req_per_s": statistics.median(r["swapping"]["req_per_s"] for r in good),
        "still_cpu_us": statistics.median(r["still"]["server_cpu_us_per_req"] or 0 for r in good),
        "swapping_cpu_us": statistics.median(r["swapping"]["server_cpu_us_per_req"] or 0 for r in good),
        "failed_requests": sum(r["still"].get("non2xx", 0) + r["swapping"].get("non2xx", 0) for r in runs),
        "swaps_taken": [r["taken"] for r in runs],
    }
    mem_ok = proc["this"]["first"]["ratio"] <= TARGET
    rb.log(f"server: VmHWM {hwm / 1024:.0f} MB = RSS before the feed + {extra_server_mb:.0f} MB "
           f"({fields['server_extra_ratio']:.2f}x the feed; the swap runs' connections included)")
    print(f"realtime-large benchmark: {size / 1048576:.1f} MiB feed; first apply in process "
          f"{proc['this']['first']['poll_ms'] + proc['this']['first']['build_ms']:.0f} ms, peak extra "
          f"{proc['this']['first']['ratio']:.2f}x its size (target <= {TARGET:.0f}x) {'✓' if mem_ok else '✗'}; "
          f"departures {fields['still_req_per_s']:,.0f} req/s without swaps, {fields['swapping_req_per_s']:,.0f} "
          f"with a swap every second (CPU {fields['still_cpu_us']:.1f} vs {fields['swapping_cpu_us']:.1f} "
          f"µs/request), "
          f"{fields['failed_requests']} failed requests")
    result = {"bench": "realtime-large", "conns": CONNS, "duration_s": args.duration, "reps": args.reps, **fields,
              "ratio": statistics.median(r["ratio"] for r in good),
              "cpu_ratio": statistics.median(r["cpu_ratio"] for r in good if r["cpu_ratio"]) if any(
                  r["cpu_ratio"] for r in good) else None,
              "target_extra_ratio": TARGET, "machine": rb.machine_info(), "runs": runs,
              "finished": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}
    rb.write_side_record(result, "realtime-large", args.out)
    return 0 if mem_ok and not fields["failed_requests"] else 2


if __name__ == "__main__":
    rb.exit_with(main)
