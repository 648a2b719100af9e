#!/usr/bin/env python3
"""import_ab.py — `transitd import` of one or more builds on the same feeds,
alternating, in the same minutes: wall time, CPU time (user + sys), the hash
phase, the timetable phase and peak RSS, medians of the runs; and the no-op re-import of the
unchanged feed.

Why it exists: on the shared 2-core VM one import of 16 copies of Brooklyn
swings by seconds between runs, so a before/after of two separate runs says
little. Each round imports every feed with every build (the order rotating
from round to round) into a fresh data directory, then imports it again (the
no-op that a periodic re-import of an unchanged feed is). Every build must
name each feed's version alike: the version is the feed's SHA-256, and a
change of hashing must not change it (the script exits 1 otherwise).

    python3 bench/import_ab.py --build base=../base/build/release --build new=build/release \\
        --feed ../shared/gtfs/nyct_bus_brooklyn_2026.zip --feed build/feeds/brooklyn-x16 [--runs 3]

Writes bench/results/<date>-<host>-import-ab.json (--out to choose).
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
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import run_bench as rb   # noqa: E402  (wait_with_rusage, require_binary, machine_info)

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def wait_usage(proc):
    """(returncode, peak RSS in kB, CPU seconds user + sys) from the child's own rusage."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    maxrss = usage.ru_maxrss // (1024 if sys.platform == "darwin" else 1)
    return proc.returncode, maxrss, usage.ru_utime + usage.ru_stime


def one(transitd, feed, data):
    """One `transitd import FEED --data DATA --json` (DATA kept as it is): its
    wall time, its own peak RSS, and phases from the summary."""
    data.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([transitd, "import", str(feed), "--data", str(data), "--json"],
                                stdout=out, stderr=err)
        rc, maxrss_kb, cpu_s = wait_usage(proc)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        text, errtext = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if rc != 0:
        raise rb.BenchError(f"transitd import {feed} exited {rc}: {errtext[-2000:]}")
    s = json.loads(text)
    phases = s.get("phases", {})
    return {"wall_s": wall, "cpu_s": cpu_s, "max_rss_mb": maxrss_kb / 1024.0, "version": s.get("version"),
            "noop": s.get("noop"), "hash_s": phases.get("hash"), "timetable_s": phases.get("timetable"),
            "seconds": s.get("seconds")}


def med(runs, key):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", required=True, metavar="NAME=DIR",
                    help="a build folder holding transitd, named; repeatable (the first is the baseline)")
    ap.add_argument("--feed", action="append", required=True, help="a feed (.zip or directory); repeatable")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default="build/import-ab", help="where the data directories go (emptied)")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    builds = []
    for spec in a.build:
        name, _, folder = spec.partition("=")
        if not folder:
            ap.error(f"--build {spec}: expected NAME=DIR")
        builds.append((name, rb.require_binary(pathlib.Path(folder).resolve() / "transitd", name)))
    work = pathlib.Path(a.work).resolve()
    rb.remove_own_dir(work)
    work.mkdir(parents=True)
    feeds = [pathlib.Path(f).resolve() for f in a.feed]
    runs = {(f.name, b): {"fresh": [], "noop": []} for f in feeds for b, _ in builds}
    for r in range(a.runs):
        order = builds[r % len(builds):] + builds[:r % len(builds)]
        for feed in feeds:
            for name, transitd in order:
                data = work / f"{feed.name}-{name}"
                rb.remove_own_dir(data)
                fresh = one(transitd, feed, data)
                noop = one(transitd, feed, data)
                shutil.rmtree(data, ignore_errors=True)
                if noop["noop"] is not True:
                    sys.exit(f"{name} on {feed.name}: the re-import was not a no-op")
                runs[(feed.name, name)]["fresh"].append(fresh)
                runs[(feed.name, name)]["noop"].append(noop)
                rb.log(f"round {r + 1}/{a.runs} {feed.name} {name}: {fresh['wall_s']:.2f} s "
                       f"(hash {fresh['hash_s']:.2f} s, timetable {fresh['timetable_s']:.2f} s), "
                       f"no-op {noop['wall_s']:.2f} s, version {fresh['version']}")
    ok = True
    table = []
    for feed in feeds:
        versions = {r["version"] for b, _ in builds for k in ("fresh", "noop")
                    for r in runs[(feed.name, b)][k]}
        if len(versions) != 1:
            ok = False
            print(f"{feed.name}: the builds disagree on the version: {sorted(map(str, versions))}")
        base = med(runs[(feed.name, builds[0][0])]["fresh"], "wall_s")
        for name, _ in builds:
            fr, nr = runs[(feed.name, name)]["fresh"], runs[(feed.name, name)]["noop"]
            row = {"feed": feed.name, "build": name, "version": sorted(map(str, versions))[0],
                   "wall_s": med(fr, "wall_s"), "hash_s": med(fr, "hash_s"),
                   "timetable_s": med(fr, "timetable_s"), "max_rss_mb": med(fr, "max_rss_mb"),
                   "cpu_s": med(fr, "cpu_s"),
                   "noop_wall_s": med(nr, "wall_s"), "noop_hash_s": med(nr, "hash_s"),
                   "wall_per_round": [round(r["wall_s"], 2) for r in fr],
                   "noop_per_round": [round(r["wall_s"], 2) for r in nr]}
            row["vs_first"] = row["wall_s"] / base if base else None
            # the same round's ratio to the first build: load that hits a whole round cancels
            firsts = runs[(feed.name, builds[0][0])]["fresh"]
            row["ratio_per_round"] = [round(x["wall_s"] / f["wall_s"], 3) for x, f in zip(fr, firsts)]
            row["ratio_median"] = statistics.median(row["ratio_per_round"])
            table.append(row)
    print(f"\nmedians of {a.runs} alternating rounds (fresh data directory each; the no-op re-imports "
          f"the same feed into it)")
    print(f"{'feed':28} {'build':10} {'wall s':>7} {'hash s':>7} {'timetable s':>11} {'CPU s':>6} {'RSS MB':>7} "
          f"{'vs ' + builds[0][0]:>9} {'paired':>7} {'no-op s':>8}  per round (wall / paired ratio / no-op)")
    for t in table:
        print(f"{t['feed']:28} {t['build']:10} {t['wall_s']:7.2f} {t['hash_s']:7.2f} {t['timetable_s']:11.2f} "
              f"{t['cpu_s']:6.2f} {t['max_rss_mb']:7.0f} {t['vs_first']:9.2f} {t['ratio_median']:7.2f} {t['noop_wall_s']:8.2f}  "
              f"{t['wall_per_round']} / {t['ratio_per_round']} / {t['noop_per_round']}")
    print(f"(vs {builds[0][0]}: ratio of the medians; paired: median of each round's ratio)")
    record = {"bench": "import-ab", "date": datetime.datetime.now().isoformat(timespec="seconds"),
              "machine": rb.describe_machine(rb.machine_info()),
              "builds": {n: str(t) for n, t in builds}, "feeds": [str(f) for f in feeds], "runs": a.runs,
              "table": table,
              "raw": {f"{f}/{b}": v for (f, b), v in runs.items()}}
    out = pathlib.Path(a.out) if a.out else RESULTS / (
        f"{datetime.date.today().isoformat()}-{socket.gethostname().split('.')[0]}-import-ab.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\nrecord: {out}")
    rb.remove_own_dir(work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
