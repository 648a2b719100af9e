#!/usr/bin/env python3
"""calendar_ab.py — one feed imported as written and rewritten day by day
(bench/daily_calendar.py: one service per trip, its dates in
calendar_dates.txt), alternating, in the same minutes: import wall time, peak
RSS and every store's size, with the day-by-day form's ratios to the
calendar form (issue #28: stores <= 1.1x, import <= 1.2x).

Why it exists: national feeds are written day by day, and the same trips on
the same dates must not cost more for it. On the shared 2-core VM an import
swings by a third between runs, so each round imports both forms back to
back (the order alternating) and the ratio is taken within the round; the
medians of those are reported. Several builds (--build, e.g. the base
commit's) run in the same rounds.

    python3 bench/calendar_ab.py --build this=build/release [--build base=../base/build/release] \\
        [--feed ../shared/gtfs/nyct_bus_brooklyn_2026.zip] [--daily build/feeds/brooklyn-daily.zip] [--runs 7]

Reported per build: wall and CPU time (user + sys) of each form, medians,
and the day-by-day form's ratio to the calendar form (the median of the
rounds' ratios), with the load average seen during the rounds.

Writes bench/results/<date>-<host>-calendar-ab.json (--out to choose).
"""
import argparse
import datetime
import json
import os
import pathlib
import re
import socket
import statistics
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import daily_calendar   # noqa: E402
import import_ab        # noqa: E402  (one: a timed import)
import run_bench as rb  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
STORES = ("timetable.bin", "schedule.sqlite", "shapes.sqlite")


def store_sizes(data):
    current = data / "current"
    return {name: (current / name).stat().st_size for name in STORES}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", required=True, metavar="NAME=DIR",
                    help="a build folder holding transitd, named; repeatable")
    ap.add_argument("--feed", default=str(daily_calendar.DEFAULT_SOURCE), help="a flat GTFS .zip")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--daily", help="the day-by-day form already written (bench/daily_calendar.py --source FEED"
                    " --seed SEED), instead of converting again")
    ap.add_argument("--work", default="build/calendar-ab", help="where the feeds and data go (emptied)")
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
    feed = pathlib.Path(a.feed).resolve()
    if a.daily:
        daily = pathlib.Path(a.daily).resolve()
        rows = None
    else:
        daily = work / (feed.stem + "-daily.zip")
        # in a process of its own: the imports are forked from this one, and a
        # fork's peak RSS starts at its parent's
        conv = subprocess.run([sys.executable, str(pathlib.Path(daily_calendar.__file__)), "--source", str(feed),
                               "--out", str(daily), "--seed", str(a.seed)], capture_output=True, text=True)
        if conv.returncode != 0:
            raise rb.BenchError(f"daily_calendar.py failed: {conv.stderr[-2000:]}")
        rows = int(re.search(r": (\d+) calendar_dates rows", conv.stderr).group(1))
    rb.log(f"{daily.name}: {rows} calendar_dates rows")
    forms = {"calendar": feed, "daily": daily}
    runs = {(b, f): [] for b, _ in builds for f in forms}
    for r in range(a.runs):
        order = list(forms.items()) if r % 2 == 0 else list(reversed(forms.items()))
        for name, transitd in builds:
            for form, path in order:
                data = work / f"data-{name}-{form}"
                rb.remove_own_dir(data)
                one = import_ab.one(transitd, path, data)
                one["stores"] = store_sizes(data)
                one["load"] = os.getloadavg()[0]
                rb.remove_own_dir(data)
                runs[(name, form)].append(one)
                rb.log(f"round {r + 1}/{a.runs} {name} {form}: {one['wall_s']:.2f} s, CPU {one['cpu_s']:.2f} s, "
                       f"{one['max_rss_mb']:.0f} MB, stores {sum(one['stores'].values()):,} bytes")
    table = []
    for name, _ in builds:
        cal, day = runs[(name, "calendar")], runs[(name, "daily")]
        paired = [d["wall_s"] / c["wall_s"] for c, d in zip(cal, day)]
        paired_cpu = [d["cpu_s"] / c["cpu_s"] for c, d in zip(cal, day)]
        row = {"build": name,
               "calendar_wall_s": statistics.median(x["wall_s"] for x in cal),
               "daily_wall_s": statistics.median(x["wall_s"] for x in day),
               "wall_ratio_per_round": [round(x, 3) for x in paired],
               "wall_ratio": statistics.median(paired),
               "calendar_cpu_s": statistics.median(x["cpu_s"] for x in cal),
               "daily_cpu_s": statistics.median(x["cpu_s"] for x in day),
               "cpu_ratio_per_round": [round(x, 3) for x in paired_cpu],
               "cpu_ratio": statistics.median(paired_cpu),
               "load_average": [round(min(x["load"] for x in cal + day), 2),
                                round(statistics.median(x["load"] for x in cal + day), 2),
                                round(max(x["load"] for x in cal + day), 2)],
               "calendar_rss_mb": statistics.median(x["max_rss_mb"] for x in cal),
               "daily_rss_mb": statistics.median(x["max_rss_mb"] for x in day),
               "calendar_stores": cal[-1]["stores"], "daily_stores": day[-1]["stores"]}
        row["store_ratio"] = {s: row["daily_stores"][s] / row["calendar_stores"][s] for s in STORES}
        row["store_ratio"]["all"] = sum(row["daily_stores"].values()) / sum(row["calendar_stores"].values())
        table.append(row)
    print(f"\n{feed.name} as written (calendar) and day by day (daily): medians of {a.runs} rounds")
    print(f"{'build':8} {'form':9} {'wall s':>7} {'CPU s':>7} {'RSS MB':>7} " + " ".join(f"{s:>16}" for s in STORES))
    for t in table:
        for form in ("calendar", "daily"):
            print(f"{t['build']:8} {form:9} {t[form + '_wall_s']:7.2f} {t[form + '_cpu_s']:7.2f} "
                  f"{t[form + '_rss_mb']:7.0f} " + " ".join(f"{t[form + '_stores'][s]:16,}" for s in STORES))
        print(f"{t['build']:8} {'ratio':9} {t['wall_ratio']:7.3f} {t['cpu_ratio']:7.3f} "
              f"{t['daily_rss_mb'] / t['calendar_rss_mb']:7.2f} "
              + " ".join(f"{t['store_ratio'][s]:16.3f}" for s in STORES)
              + f"   all stores {t['store_ratio']['all']:.3f}; per round: wall {t['wall_ratio_per_round']},"
              f" CPU {t['cpu_ratio_per_round']}; load average (min/median/max) {t['load_average']}")
    record = {"bench": "calendar-ab", "date": datetime.datetime.now().isoformat(timespec="seconds"),
              "machine": rb.describe_machine(rb.machine_info()), "feed": str(feed), "seed": a.seed,
              "calendar_dates_rows": rows, "daily_feed": str(daily), "builds": {n: str(t) for n, t in builds}, "runs": a.runs,
              "table": table, "raw": {f"{b}/{f}": v for (b, f), v in runs.items()}}
    out = pathlib.Path(a.out) if a.out else RESULTS / (
        f"{datetime.date.today().isoformat()}-{socket.gethostname().split('.')[0]}-calendar-ab.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\nrecord: {out}")
    rb.remove_own_dir(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
