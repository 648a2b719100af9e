#!/usr/bin/env python3
"""merge_bench.py — issue #28, many feeds in one dataset: what a merge costs.

Two shared feeds (Brooklyn bus first, NYC subway second, so Brooklyn's ids
stay as they are) in the same minutes:
  - import wall and CPU time of each alone and of both together (`transitd import
    a.zip b.zip`), alternating order per round; the ratio "together / (sum
    alone)" per round, and its median;
  - the same import again with one feed changed (subway with one stop renamed),
    to show what re-importing one feed of many costs, and once more unchanged
    (a no-op: the feeds' names and SHA-256 match the active version's);
  - stop departures (bench/wrk/stop_departures.lua, Brooklyn's stops drawn
    from the Brooklyn-only dataset, so both servers get the same requests) on
    the merged dataset and on Brooklyn alone, alternating, req/s and server CPU
    per request; the ratio merged / single, median of the rounds.

    python3 bench/merge_bench.py --build build/release [--runs 3] [--duration 6]

Writes bench/results/<date>-<host>-merge.json (--out to choose).
"""
import argparse
import datetime
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import run_bench as rb  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results"
SHARED = HERE.parent.parent / "shared" / "gtfs"


def timed_import(transitd, feeds, data):
    """One `transitd import FEED... --data DATA --json`: wall time, CPU seconds
    (user + system: what other processes on the shared cores disturb least)
    and peak RSS."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([transitd, "import", *map(str, feeds), "--data", str(data), "--json"],
                                stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        rc = proc.returncode = os.waitstatus_to_exitcode(status)
        maxrss_kb = usage.ru_maxrss // (1024 if sys.platform == "darwin" else 1)
        cpu = usage.ru_utime + usage.ru_stime
        err.seek(0)
        if rc != 0:
            raise rb.BenchError(f"import {feeds} exited {rc}: {err.read().decode(errors='replace')[-2000:]}")
    return {"wall_s": wall, "cpu_s": cpu, "max_rss_mb": maxrss_kb / 1024.0}


def changed_copy(feed, out):
    """feed with the first stop's name changed (an "x" before it): another feed."""
    with zipfile.ZipFile(feed) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("stops.txt"):
                lines = data.split(b"\n")
                lines[1] = lines[1].replace(b",", b",x", 1)
                data = b"\n".join(lines)
            dst.writestr(info.filename, data)
    return out


def serve(transitd, data, work, name):
    port = rb.free_port()
    return rb.Server(name, [transitd, "serve", "--data", str(data), "--port", str(port), "--bind", "127.0.0.1",
                            "--threads", str(rb.os.cpu_count() or 1), "--quiet"],
                     port, "/healthz", work / f"{name}.log").start()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--a", default=str(SHARED / "nyct_bus_brooklyn_2026.zip"))
    ap.add_argument("--b", default=str(SHARED / "nyct_subway_2026.zip"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=6)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--work", default="build/merge-bench")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    transitd = rb.require_binary(pathlib.Path(a.build).resolve() / "transitd", "transitd")
    work = pathlib.Path(a.work).resolve()
    rb.remove_own_dir(work)
    work.mkdir(parents=True)
    fa, fb = pathlib.Path(a.a).resolve(), pathlib.Path(a.b).resolve()
    for f in (fa, fb):
        if not f.exists():
            raise rb.BenchError(f"{f} not found (../shared/gtfs)")
    fb_changed = changed_copy(fb, work / fb.name.replace(".zip", "-changed.zip"))

    imports = []
    for r in range(a.runs):
        row = {}
        order = ["a", "b", "ab"] if r % 2 == 0 else ["ab", "b", "a"]
        for which in order:
            feeds = {"a": [fa], "b": [fb], "ab": [fa, fb]}[which]
            data = work / f"data-{which}"
            rb.remove_own_dir(data)
            row[which] = timed_import(transitd, feeds, data)
        # one feed of the two changed: the whole merged dataset is rebuilt
        row["ab_one_changed"] = timed_import(transitd, [fa, fb_changed], work / "data-ab")
        row["ab_unchanged"] = timed_import(transitd, [fa, fb_changed], work / "data-ab")
        row["ratio"] = row["ab"]["wall_s"] / (row["a"]["wall_s"] + row["b"]["wall_s"])
        row["cpu_ratio"] = row["ab"]["cpu_s"] / (row["a"]["cpu_s"] + row["b"]["cpu_s"])
        rb.log(f"round {r + 1}: a {row['a']['wall_s']:.2f} s, b {row['b']['wall_s']:.2f} s, together "
               f"{row['ab']['wall_s']:.2f} s (ratio {row['ratio']:.3f}, CPU ratio {row['cpu_ratio']:.3f}); one changed "
               f"{row['ab_one_changed']['wall_s']:.2f} s, unchanged again {row['ab_unchanged']['wall_s']:.2f} s")
        imports.append(row)
    # serving: merged (a+b) against a alone, the same Brooklyn stops
    data_a, data_ab = work / "data-a", work / "data-ab-serve"
    rb.remove_own_dir(data_ab)
    timed_import(transitd, [fa, fb], data_ab)
    inputs = rb.extract_inputs(data_a, work / "inputs", seed=28)
    single, merged = serve(transitd, data_a, work, "single"), serve(transitd, data_ab, work, "merged")
    serving = []
    try:
        for r in range(a.runs):
            row = {}
            for name, server in ([("single", single), ("merged", merged)] if r % 2 == 0
                                 else [("merged", merged), ("single", single)]):
                w = rb.run_wrk_with_cpu("stop_departures", server, a.conns, a.duration, work / "inputs", seed=28 + r)
                if not w["ok"]:
                    raise rb.BenchError(f"{name}: {w['problems']}")
                row[name] = {"req_per_s": w["req_per_s"], "cpu_us_per_req": w["server_cpu_us_per_req"]}
            row["ratio"] = row["merged"]["req_per_s"] / row["single"]["req_per_s"]
            cpu = (row["merged"]["cpu_us_per_req"] or 0) / (row["single"]["cpu_us_per_req"] or 1)
            row["cpu_ratio"] = cpu
            rb.log(f"serve round {r + 1}: single {row['single']['req_per_s']:.0f} req/s, merged "
                   f"{row['merged']['req_per_s']:.0f} req/s (ratio {row['ratio']:.3f}, CPU/request {cpu:.3f})")
            serving.append(row)
    finally:
        single.stop()
        merged.stop()

    med = statistics.median
    summary = {
        "import_a_s": med(r["a"]["wall_s"] for r in imports),
        "import_b_s": med(r["b"]["wall_s"] for r in imports),
        "import_together_s": med(r["ab"]["wall_s"] for r in imports),
        "import_ratio_together_over_sum": med(r["ratio"] for r in imports),
        "import_cpu_a_s": med(r["a"]["cpu_s"] for r in imports),
        "import_cpu_b_s": med(r["b"]["cpu_s"] for r in imports),
        "import_cpu_together_s": med(r["ab"]["cpu_s"] for r in imports),
        "import_cpu_ratio_together_over_sum": med(r["cpu_ratio"] for r in imports),
        "import_one_changed_cpu_s": med(r["ab_one_changed"]["cpu_s"] for r in imports),
        "import_one_changed_s": med(r["ab_one_changed"]["wall_s"] for r in imports),
        "import_unchanged_s": med(r["ab_unchanged"]["wall_s"] for r in imports),
        "rss_together_mb": med(r["ab"]["max_rss_mb"] for r in imports),
        "rss_a_mb": med(r["a"]["max_rss_mb"] for r in imports),
        "stop_departures_single_req_s": med(r["single"]["req_per_s"] for r in serving),
        "stop_departures_merged_req_s": med(r["merged"]["req_per_s"] for r in serving),
        "stop_departures_ratio": med(r["ratio"] for r in serving),
        "stop_departures_cpu_ratio": med(r["cpu_ratio"] for r in serving),
    }
    print(f"\n{fa.name} (a) and {fb.name} (b), medians of {a.runs} rounds")
    for k, v in summary.items():
        print(f"  {k:34} {v:10.3f}")
    record = {"bench": "merge", "date": datetime.datetime.now().isoformat(timespec="seconds"),
              "machine": rb.describe_machine(rb.machine_info()), "a": str(fa), "b": str(fb),
              "runs": a.runs, "duration_s": a.duration, "conns": a.conns, "summary": summary,
              "imports": imports, "serving": serving, "inputs": {"stops": inputs.get("stops")}}
    out = pathlib.Path(a.out) if a.out else RESULTS / (
        f"{datetime.date.today().isoformat()}-{socket.gethostname().split('.')[0]}-merge.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\nrecord: {out}")
    rb.remove_own_dir(work)
    return 0


if __name__ == "__main__":
    rb.exit_with(main)
