#!/usr/bin/env python3
"""csv_python.py — Python's csv module on a GTFS file, as a reference point
for bench_csv (what a script-based importer would get).

    python3 bench/csv_python.py FILE [repeats]

Reads the file once into memory (warm), then times csv.reader over it,
looking up the same six stop_times columns bench_csv asks for, and reports
the median MB/s. The last line is JSON in bench_csv's form:
{"bench":"csv","reader":"python csv.reader",...}.
"""
import csv
import io
import json
import statistics
import sys
import time

KEYS = ["trip_id", "arrival_time", "departure_time", "stop_id", "stop_sequence", "pickup_type"]


def run(text):
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [h.strip() for h in next(reader)]
    cols = [header.index(k) for k in KEYS if k in header]
    rows = 0
    total = 0
    for row in reader:
        if not row:
            continue
        rows += 1
        for c in cols:
            if c < len(row):
                total += len(row[c])
    return rows, total


def main():
    if len(sys.argv) < 2:
        print("usage: csv_python.py FILE [repeats]", file=sys.stderr)
        return 2
    path = sys.argv[1]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8-sig")
    mb = len(data) / 1e6
    times = []
    rows = 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        rows, _ = run(text)
        times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    print(f"file: {path} ({mb:.1f} MB, {rows} data rows)")
    print(f"python {sys.version.split()[0]} csv.reader: median of {repeats}: {t:.3f} s, {mb / t:.0f} MB/s")
    print(json.dumps({"bench": "csv", "reader": f"python {sys.version.split()[0]} csv.reader",
                      "file": path, "bytes": len(data), "rows": rows, "repeats": repeats,
                      "seconds": round(t, 4), "mb_s": round(mb / t, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
