#!/usr/bin/env python3
"""merge_reuse_ab.py — issue #28: re-importing one feed of many, before and
after a change of the import, in the same minutes.

Three feeds in one dataset: Brooklyn bus, the NYC subway, and a third made
here from Bari's (its agency and stop time zones set to America/New_York, so
the three may share a dataset; no id of it collides with the others'). Each
round and each build (the order alternating): a fresh data directory gets the
first import of the three (timed: what recording the stores' input digests
costs), then the three again with the third changed (its first stop renamed,
what merge_bench.py changes): the re-import of one feed of many, timed.
Wall and CPU seconds (user + system, from wait4) of the whole
`transitd import a b c` process (the merge included), medians of the rounds,
and per round the ratio of the builds; the load average is recorded.

    python3 bench/merge_reuse_ab.py --build base=../base/build/release --build this=build/release [--runs 5]

Writes bench/results/<date>-<host>-merge-reuse-ab.json (--out to choose).
"""
import argparse
import datetime
import json
import os
import pathlib
import socket
import statistics
import sys
import zipfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import merge_bench  # noqa: E402  (timed_import: wall, CPU and peak RSS of one import)
import run_bench as rb  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results"
SHARED = HERE.parent.parent / "shared" / "gtfs"


def third_feed(src, out, renamed):
    """Bari's feed in New York's time zone; with renamed, its first stop's name changed."""
    with zipfile.ZipFile(src) as s, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as d:
        for info in s.infolist():
            data = s.read(info.filename)
            if info.filename.endswith(("agency.txt", "stops.txt")):
                data = data.replace(b"Europe/Rome", b"America/New_York")
            if renamed and info.filename.endswith("stops.txt"):
                lines = data.split(b"\n")
                lines[1] = lines[1].replace(b",", b",x", 1)
                data = b"\n".join(lines)
            d.writestr(info.filename, data)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", required=True, metavar="NAME=DIR")
    ap.add_argument("--a", default=str(SHARED / "nyct_bus_brooklyn_2026.zip"))
    ap.add_argument("--b", default=str(SHARED / "nyct_subway_2026.zip"))
    ap.add_argument("--c", default=str(SHARED / "amtab_bari_2026.zip"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", default="build/merge-reuse-ab")
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
    fa, fb = pathlib.Path(a.a).resolve(), pathlib.Path(a.b).resolve()
    for f in (fa, fb, pathlib.Path(a.c)):
        if not f.exists():
            raise rb.BenchError(f"{f} not found (../shared/gtfs)")
    fc = third_feed(a.c, work / "c.zip", False)
    fc2 = third_feed(a.c, work / "c-changed.zip", True)

    runs = {name: {"first": [], "reimport": []} for name, _ in builds}
    loads = []
    for r in range(a.runs):
        order = builds if r % 2 == 0 else list(reversed(builds))
        for name, transitd in order:
            data = work / f"data-{name}"
            rb.remove_own_dir(data)
            first = merge_bench.timed_import(transitd, [fa, fb, fc], data)
            again = merge_bench.timed_import(transitd, [fa, fb, fc2], data)
            loads.append(os.getloadavg()[0])
            runs[name]["first"].append(first)
            runs[name]["reimport"].append(again)
            rb.remove_own_dir(data)
            rb.log(f"round {r + 1}/{a.runs} {name}: first {first['wall_s']:.2f} s (CPU {first['cpu_s']:.2f}), "
                   f"re-import {again['wall_s']:.2f} s (CPU {again['cpu_s']:.2f}), load {loads[-1]:.1f}")
    table = {}
    for name, _ in builds:
        row = {}
        for kind in ("first", "reimport"):
            xs = runs[name][kind]
            row[kind] = {"wall_s": statistics.median(x["wall_s"] for x in xs),
                         "cpu_s": statistics.median(x["cpu_s"] for x in xs),
                         "max_rss_mb": statistics.median(x["max_rss_mb"] for x in xs)}
        table[name] = row
    base = builds[0][0]
    ratios = {}
    for name, _ in builds[1:]:
        ratios[name] = {}
        for kind in ("first", "reimport"):
            for m in ("wall_s", "cpu_s"):
                per = [x[m] / y[m] for x, y in zip(runs[name][kind], runs[base][kind])]
                ratios[name][f"{kind}_{m}"] = {"median": statistics.median(per), "per_round": [round(p, 3) for p in per]}
    print(f"\n3 feeds ({fa.name}, {fb.name}, {pathlib.Path(a.c).name} in New York time): medians of {a.runs} rounds; "
          f"load average {min(loads):.1f} .. {max(loads):.1f} (median {statistics.median(loads):.1f})")
    print(f"{'build':8} {'first wall':>11} {'first CPU':>10} {'re-import wall':>15} {'re-import CPU':>14}")
    for name, _ in builds:
        t = table[name]
        print(f"{name:8} {t['first']['wall_s']:11.2f} {t['first']['cpu_s']:10.2f} {t['reimport']['wall_s']:15.2f} "
              f"{t['reimport']['cpu_s']:14.2f}")
    for name, rs in ratios.items():
        for k, v in rs.items():
            print(f"{name}/{base} {k}: {v['median']:.3f} (per round {v['per_round']})")
    record = {"bench": "merge-reuse-ab", "date": datetime.datetime.now().isoformat(timespec="seconds"),
              "machine": rb.describe_machine(rb.machine_info()), "feeds": [str(fa), str(fb), str(a.c)],
              "builds": {n: str(t) for n, t in builds}, "runs": a.runs, "load_average": loads,
              "table": table, "ratios": ratios, "raw": runs}
    out = pathlib.Path(a.out) if a.out else RESULTS / (
        f"{datetime.date.today().isoformat()}-{socket.gethostname().split('.')[0]}-merge-reuse-ab.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\nrecord: {out}")
    rb.remove_own_dir(work)
    return 0


if __name__ == "__main__":
    rb.exit_with(main)
