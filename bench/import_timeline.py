#!/usr/bin/env python3
"""import_timeline.py — one `transitd import --progress` drawn as a timeline of
its threads: when each one runs, when it waits, and when each phase ends.

Why it exists: the import runs the timetable on the main thread and the hash,
schedule.sqlite and shapes.sqlite on a second one (plus short helpers), so its
wall time is not the sum of its phases, nor their maximum: what counts is
which thread is busy when, and which one waits for the other (issue #28, a
40M stop_times import in 10 s on two cores). This samples every thread's CPU
time from /proc (Linux only) while the import runs, and stamps each progress
line on stderr with its time since the start.

    python3 bench/import_timeline.py --build build/release --feed build/feeds/brooklyn-x16 [--bin 0.5]

Prints, per thread, one character per bin (# busy >= 75 %, + >= 25 %, . some,
blank idle), its CPU seconds, the resident set per bin (darker is larger) and
when it peaked (with --rss-every S, the largest RSS of every S seconds in MB),
then the progress lines with their times, the load average before and after,
and the process's CPU and peak RSS. TRANSITD_TEST_SCHEDULE_AFTER=FILE in the
environment holds the schedule writer until the timetable has read FILE
(src/import/import_hold.h), to draw a given meeting of the two threads.
Python 3 standard library only.
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def thread_cpu(pid):
    """{tid: (utime + stime) seconds} of every thread of pid now."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / TICK
    return out


def rss_mb(pid):
    """The process's resident set now, in MB (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def draw(samples, start, end, bin_s):
    """Per thread, in order of first appearance: its busy fraction per bin."""
    order, per_thread = [], {}
    for t, cpu in samples:
        for tid, c in cpu.items():
            if tid not in per_thread:
                order.append(tid)
                per_thread[tid] = []
            per_thread[tid].append((t, c))
    nbins = max(1, int((end - start) / bin_s + 0.999))
    rows = []
    for tid in order:
        pts = per_thread[tid]
        busy = [0.0] * nbins
        for (t0, c0), (t1, c1) in zip(pts, pts[1:]):
            if c1 <= c0:
                continue
            # spread the CPU time between two samples evenly over their interval
            rate = (c1 - c0) / max(t1 - t0, 1e-9)
            # bin by bin over the interval's indexes (a loop on float bounds
            # could stop moving when a bound rounds onto itself)
            for i in range(int((t0 - start) / bin_s), int((t1 - start) / bin_s) + 1):
                lo, hi = max(t0, start + i * bin_s), min(t1, start + (i + 1) * bin_s)
                if hi > lo:
                    busy[min(nbins - 1, i)] += rate * (hi - lo)
        rows.append((tid, busy, pts[-1][1] if pts else 0.0, pts[0][0] - start, pts[-1][0] - start))
    return nbins, rows


def glyph(frac):
    return "#" if frac >= 0.75 else "+" if frac >= 0.25 else "." if frac > 0.02 else " "


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="a build folder holding transitd")
    ap.add_argument("--feed", required=True, help="a feed (.zip or directory)")
    ap.add_argument("--bin", type=float, default=0.5, help="seconds per character (0.5)")
    ap.add_argument("--every", type=float, default=0.02, help="sampling interval in seconds (0.02)")
    ap.add_argument("--data", help="the data directory (default: a fresh temporary one, removed)")
    ap.add_argument("--rss-every", type=float, default=0,
                    help="also print the largest RSS sampled in each window of this many seconds (0: no)")
    a = ap.parse_args(argv)
    if not os.path.isdir("/proc/self/task"):
        sys.exit("import_timeline.py reads /proc: Linux only")
    transitd = pathlib.Path(a.build).resolve() / "transitd"
    if not transitd.exists():
        sys.exit(f"{transitd}: not built")
    tmp = None
    data = a.data
    if not data:
        tmp = tempfile.mkdtemp(prefix="import-timeline-")
        data = os.path.join(tmp, "data")
    load_before = os.getloadavg()
    lines = []
    start = time.monotonic()
    proc = subprocess.Popen([str(transitd), "import", a.feed, "--data", data, "--progress", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def read_progress():
        for line in proc.stderr:
            lines.append((time.monotonic() - start, line.rstrip("\n")))

    reader = threading.Thread(target=read_progress, daemon=True)
    reader.start()
    samples, rss = [], []
    while True:
        now = time.monotonic()
        samples.append((now, thread_cpu(proc.pid)))
        rss.append((now, rss_mb(proc.pid)))
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(a.every)
    end = time.monotonic()
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join(timeout=5)
    load_after = os.getloadavg()
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    nbins, rows = draw(samples, start, end, a.bin)
    print(f"wall {end - start:.2f} s, one character = {a.bin:g} s; load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after")
    scale = "".join(str(int(i * a.bin) % 10) if (i * a.bin) % 1 == 0 else " " for i in range(nbins))
    print(f"{'thread':>16} |{scale}| CPU s  seen")
    names = ["main (timetable)", "store thread"]
    for n, (tid, busy, cpu, first, last) in enumerate(rows):
        name = names[n] if n < len(names) else f"helper {n - 1}"
        bar = "".join(glyph(b / a.bin) for b in busy)
        print(f"{name:>16} |{bar}| {cpu:5.2f}  {first:5.2f}..{last:5.2f} s")
    peak_t, peak = max(rss, key=lambda x: x[1]) if rss else (start, 0.0)
    per_bin = [0.0] * nbins
    for t, mb in rss:
        i = min(nbins - 1, int((t - start) / a.bin))
        per_bin[i] = max(per_bin[i], mb)
    top = max(per_bin) or 1.0
    print(f"{'RSS':>16} |{''.join(' .:-=+*#%@'[min(9, int(9 * mb / top + 0.5))] for mb in per_bin)}| "
          f"peak {peak:.0f} MB at {peak_t - start:.2f} s")
    if a.rss_every > 0:
        windows = {}
        for t, mb in rss:
            k = int((t - start) / a.rss_every)
            windows[k] = max(windows.get(k, 0.0), mb)
        print(f"{'RSS MB':>16} | " + " ".join(f"{k * a.rss_every:g}s:{mb:.0f}" for k, mb in sorted(windows.items())))
    print()
    for t, line in lines:
        print(f"{t:7.2f}  {line}")
    if proc.returncode == 0:
        print(f"\nexit {proc.returncode}; CPU user {usage.ru_utime:.2f} s, sys {usage.ru_stime:.2f} s; "
              f"peak RSS {usage.ru_maxrss / 1024:.0f} MB")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
