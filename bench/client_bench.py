#!/usr/bin/env python3
"""client_bench.py — the phone (issue #25): the snapshot's size on disk and on the
wire for every shared feed, the patches an update costs, and the client library's
cold start, in one run.

Why it exists: the targets of the offline-phone issue, measured the way a phone
meets them:
  sizes       each feed imported, served, and fetched by `transitd fetch` (the phone
              profile, gzip on the wire as the server sends it): the bytes on disk
              and on the wire; target for Brooklyn <= 16 MB and <= 8 MB.
  updates     Brooklyn with 1 % of its trips retimed (3 min later), and with one
              route added (bench/feed_edit.py): the wire bytes of `transitd fetch`
              updating from the original version (zstd patches), against a full
              download of the same version.
  cold start  bench/client/client_cold_start (a program linking only
              libtransit_client.a) in a fresh process each time: open to the first
              departures near a point, as the server's JSON and as structs, then
              1,000 queries; the resident memory the open and the queries add.
              `first` is the first open of a new snapshot (it derives and writes
              VERSION/.derived and, with the first JSON answer, VERSION/.departure-texts);
              `kept` the bytes of those two files; `warm` a later open (an app's relaunch: the files
              in the page cache); `cold` a later open after the snapshot's files
              were evicted from the page cache (posix_fadvise DONTNEED, as after
              a reboot). Medians of --reps processes. Target (Brooklyn): first
              answer < 5 ms, < 20 MB resident.

    python3 bench/client_bench.py --build build/release [--reps 7] [--feeds A.zip ...]
    make bench-client
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_bench as rb   # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "gtfs"
BROOKLYN = SHARED / "nyct_bus_brooklyn_2026.zip"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=kw.pop("timeout", 900), **kw)
    if p.returncode != 0:
        raise rb.BenchError(f"{' '.join(map(str, cmd))} failed ({p.returncode}): {p.stderr[-2000:]}")
    return p


def serve(transitd, data, work, name):
    port = rb.free_port()
    return rb.Server(name, [str(transitd), "serve", "--data", str(data), "--port", str(port),
                            "--threads", "2"], port, "/readyz", work / f"{name}.log").start(timeout=60)


def fetch(transitd, url, data):
    p = run([transitd, "fetch", "--data", data, url])
    m = re.search(r"(\d+) bytes on the wire \((\d+) decoded\)", p.stderr)
    if not m:
        raise rb.BenchError(f"transitd fetch said: {p.stderr[-500:]}")
    return {"wire": int(m.group(1)), "decoded": int(m.group(2)), "log": p.stderr.strip().splitlines()[-1]}


def disk_bytes(version_dir):
    return sum(p.stat().st_size for p in Path(version_dir).iterdir() if not p.name.startswith("."))


def sizes(transitd, feeds, work):
    out = []
    for feed in feeds:
        name = Path(feed).stem
        data = work / f"primary-{name}"
        run([transitd, "import", "--data", data, "--quiet", feed])
        srv = serve(transitd, data, work, f"sizes-{name}")
        try:
            phone = work / f"phone-{name}"
            f = fetch(transitd, srv.url(), phone)
            full = rb.http_get(srv.port, "/v1/dataset")[2]
        finally:
            srv.stop()
        full_bytes = sum(x["size"] for x in json.loads(full)["files"])
        row = {"feed": name, "disk_bytes": disk_bytes(phone / "current"), "wire_bytes": f["wire"],
               "full_snapshot_bytes": full_bytes}
        log(f"  {name}: {row['disk_bytes'] / 1e6:.2f} MB on disk, {row['wire_bytes'] / 1e6:.2f} MB on the "
            f"wire (the full snapshot with shapes: {full_bytes / 1e6:.2f} MB)")
        out.append(row)
    return out


def updates(transitd, work):
    base = work / "upd-base"
    run([transitd, "import", "--data", base, "--quiet", BROOKLYN])
    out = []
    for change, args in (("retime 1 % of trips", ["--retime", "1"]), ("add one route", ["--add-route"])):
        feed = work / f"edited-{args[0].strip('-')}.zip"
        run([sys.executable, ROOT / "bench" / "feed_edit.py", BROOKLYN, "--out", feed, *args])
        primary = work / f"upd-primary-{args[0].strip('-')}"
        shutil.rmtree(primary, ignore_errors=True)
        shutil.copytree(base, primary, symlinks=True)
        phone = work / f"upd-phone-{args[0].strip('-')}"
        shutil.rmtree(phone, ignore_errors=True)
        srv = serve(transitd, primary, work, "upd-old")
        try:
            fetch(transitd, srv.url(), phone)
        finally:
            srv.stop()
        run([transitd, "import", "--data", primary, "--quiet", feed])
        srv = serve(transitd, primary, work, "upd-new")
        try:
            t0 = time.monotonic()
            f = fetch(transitd, srv.url(), phone)
            seconds = time.monotonic() - t0
            full = fetch(transitd, srv.url(), work / f"upd-full-{args[0].strip('-')}")
        finally:
            srv.stop()
        row = {"change": change, "update_wire_bytes": f["wire"], "full_wire_bytes": full["wire"],
               "update_seconds": round(seconds, 3), "fetch": f["log"]}
        log(f"  {change}: update {f['wire'] / 1e3:.1f} KB on the wire against {full['wire'] / 1e6:.2f} MB "
            f"whole ({100.0 * f['wire'] / full['wire']:.2f} %), {seconds:.2f} s")
        out.append(row)
    return out


def evict(version_dir):
    for p in Path(version_dir).iterdir():
        if p.is_file():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def cold_start(build, transitd, work, reps):
    data = work / "cold-primary"
    run([transitd, "import", "--data", data, "--quiet", BROOKLYN])
    srv = serve(transitd, data, work, "cold")
    try:
        phone = work / "cold-phone"
        fetch(transitd, srv.url(), phone)
        validity = json.loads(rb.http_get(srv.port, "/v1/feed")[2])["feed_validity"]
    finally:
        srv.stop()
    # 08:00 New York time on a day inside the feed, near Church Av / Nostrand Av
    day = validity["today"] if not validity["expired"] and not validity["not_yet_valid"] else validity["start"]
    now = int(time.mktime(time.strptime(day + " 13:00", "%Y-%m-%d %H:%M")) - time.timezone)
    prog = build / "client" / "client_cold_start"
    rb.require_binary(prog, "the cold start benchmark (make client)")
    version_dir = (phone / "current").resolve()
    results = {}
    for mode in ("json", "struct"):
        for state in ("first", "warm", "cold"):
            runs = []
            for i in range(reps):
                if state == "first":
                    for kept in (".derived", ".departure-texts"):
                        (version_dir / kept).unlink(missing_ok=True)
                elif state == "warm" and not (version_dir / ".departure-texts").exists():
                    run([prog, phone, now, 40.6504, -73.9496, 1, 1, mode])
                if state == "cold":
                    evict(version_dir)
                p = run([prog, phone, now, 40.6504, -73.9496, 1000, i + 1, mode])
                runs.append(json.loads(p.stdout))
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "mode"}
            row = {"open_ms": round(med["open_ms"], 3), "first_answer_ms": round(med["first_answer_ms"], 3),
                   "rss_added_by_open_mb": round((med["rss_after_open_kb"] - med["rss_before_kb"]) / 1024, 2),
                   "rss_added_by_open_and_1000_queries_mb":
                       round((med["rss_after_queries_kb"] - med["rss_before_kb"]) / 1024, 2),
                   "query_us_median": med["query_us_median"], "runs": runs}
            results[f"{mode}-{state}"] = row
            if state == "first" and mode == "json":   # both kept files exist after a JSON answer
                results["kept_bytes"] = sum((version_dir / k).stat().st_size for k in (".derived", ".departure-texts")
                                            if (version_dir / k).exists())
            log(f"  {mode:6} {state:5}: open {row['open_ms']:.2f} ms, first answer {row['first_answer_ms']:.2f} ms, "
                f"+{row['rss_added_by_open_and_1000_queries_mb']:.1f} MB resident after 1,000 queries "
                f"(median query {row['query_us_median']:.0f} us)")
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--feeds", nargs="*", help="feeds for the size table (default: every shared feed)")
    ap.add_argument("--out", help="the JSON record (default bench/results/<date>-<host>-client.json)")
    a = ap.parse_args()
    build = (ROOT / a.build).resolve() if not Path(a.build).is_absolute() else Path(a.build)
    transitd = build / "transitd"
    rb.require_binary(transitd, "transitd")
    if not BROOKLYN.exists():
        raise rb.BenchError(f"{BROOKLYN} is missing (../shared/gtfs)")
    feeds = a.feeds or sorted(str(p) for p in SHARED.glob("*.zip"))
    work = ROOT / "build" / "bench-client"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log("== phone snapshot sizes (profile phone; gzip on the wire)")
    s = sizes(transitd, feeds, work)
    log("== updates of Brooklyn (zstd patches against the held version)")
    u = updates(transitd, work)
    log(f"== cold start on Brooklyn (medians of {a.reps} processes)")
    c = cold_start(build, transitd, work, a.reps)
    result = {"machine": rb.machine_info(), "sizes": s, "updates": u, "cold_start": c,
              "targets": {"brooklyn_disk_mb": 16, "brooklyn_wire_mb": 8, "first_answer_ms": 5,
                          "rss_added_mb": 20}}
    rb.write_side_record(result, "client", a.out)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    rb.exit_with(main)
