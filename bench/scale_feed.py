#!/usr/bin/env python3
"""scale_feed.py — N copies of a GTFS feed as one feed directory, for imports
at national scale (issue #28: 16 copies of NYC bus Brooklyn, 38M stop_times,
2.7 GB stop_times.txt).

Why it exists: no real feed here is that large, and the import's costs that
grow with the bytes (hashing, parsing) only show at that size. Copy k keeps
every row of the source; each identifier (every column named *_id but
direction_id, and parent_station) gets the prefix "kk_" (00_, 01_, ...), so the
copies are distinct agencies, stops, routes, services and trips that share
names and coordinates. feed_info.txt is written once. The output is a
directory (what the issue measured: the hash runs over its .txt members);
generation is deterministic, so the same source gives the same bytes and the
same dataset version.

    python3 bench/scale_feed.py --copies 16 --out build/feeds/brooklyn-x16 \\
        [--source ../shared/gtfs/nyct_bus_brooklyn_2026.zip]

16 copies of Brooklyn: 2.9 GB on disk, about a minute.
"""
import argparse
import csv
import io
import pathlib
import shutil
import sys
import time
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "gtfs" / "nyct_bus_brooklyn_2026.zip"
MARK = "\x01"   # where a copy's prefix goes in a file's template; absent from GTFS text
ONCE = {"feed_info.txt"}


def is_id_column(name):
    name = name.strip().lstrip("\ufeff")
    return (name.endswith("_id") and name != "direction_id") or name == "parent_station"


def template(text):
    """The file's rows (header excluded) with MARK before every non-empty
    identifier, and its header line; None when no column is an identifier."""
    first_end = text.find("\n") + 1 if "\n" in text else len(text)
    header, body = text[:first_end], text[first_end:]
    cols = next(csv.reader([header.rstrip("\r\n")]))
    ids = [i for i, c in enumerate(cols) if is_id_column(c)]
    if not ids:
        return header, None, body
    out = []
    if '"' not in body:   # the fast path: no quoting, split on commas
        for line in body.splitlines(keepends=True):
            end = len(line.rstrip("\r\n"))
            fields = line[:end].split(",")
            for i in ids:
                if i < len(fields) and fields[i]:
                    fields[i] = MARK + fields[i]
            out.append(",".join(fields) + line[end:])
    else:
        eol = "\r\n" if "\r\n" in body else "\n"
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator=eol)
        for fields in csv.reader(io.StringIO(body, newline="")):
            for i in ids:
                if i < len(fields) and fields[i]:
                    fields[i] = MARK + fields[i]
            w.writerow(fields)
        out.append(buf.getvalue())
    return header, "".join(out), None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--out", required=True, help="the feed directory to write (replaced; written as OUT.partial, "
                    "renamed when complete)")
    ap.add_argument("--source", default=str(DEFAULT_SOURCE), help="a GTFS .zip (flat)")
    a = ap.parse_args(argv)
    if not 1 <= a.copies <= 100:
        ap.error("--copies must be 1..100")
    final = pathlib.Path(a.out)
    out = final.with_name(final.name + ".partial")   # renamed when complete
    for d in (out, final):
        if d.exists():
            shutil.rmtree(d)
    out.mkdir(parents=True)
    started = time.monotonic()
    total = 0
    with zipfile.ZipFile(a.source) as z:
        for name in sorted(n for n in z.namelist() if n.endswith(".txt") and "/" not in n):
            text = z.read(name).decode("utf-8")
            header, tmpl, plain = template(text)
            if not header.endswith("\n"):
                header += "\n"
            rows = tmpl if tmpl is not None else plain
            if rows and not rows.endswith("\n"):   # the copies must not run into each other
                rows += "\r\n" if header.endswith("\r\n") else "\n"
            tmpl, plain = (rows, None) if tmpl is not None else (None, rows)
            with open(out / name, "w", encoding="utf-8", newline="") as f:
                f.write(header)
                for k in range(1 if name in ONCE else a.copies):
                    f.write(plain if tmpl is None else tmpl.replace(MARK, f"{k:02d}_"))
            size = (out / name).stat().st_size
            total += size
            print(f"{name}: {size / 1e6:.1f} MB", file=sys.stderr, flush=True)
    out.rename(final)
    print(f"{final}: {a.copies} copies, {total / 1e9:.2f} GB in {time.monotonic() - started:.0f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
