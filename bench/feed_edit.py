#!/usr/bin/env python3
"""feed_edit.py — the next version of a GTFS feed, as an agency would publish it.

Why it exists: a phone updates its offline snapshot with a binary delta
(issue #25), and how small that delta is depends on what changed. This writes
the two changes the issue measures, seeded so the figures repeat:
  --retime PCT   PCT % of the trips (chosen at random) run MINUTES later: every
                 arrival and departure time of theirs moves;
  --add-route    one route more: a copy of an existing route (new route_id,
                 its trips under new trip_ids, same stops and times).
The input is a .zip or a directory; the output a .zip. Rows other than the
changed ones are written back unchanged, in their order.
"""
import argparse
import csv
import io
import random
import sys
import zipfile
from pathlib import Path


def read_files(src):
    src = Path(src)
    if src.is_dir():
        return {p.name: p.read_bytes() for p in sorted(src.iterdir()) if p.is_file()}
    with zipfile.ZipFile(src) as z:
        return {Path(n).name: z.read(n) for n in z.namelist() if not n.endswith('/')}


def table(data):
    text = data.decode('utf-8-sig')
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], rows[1:]


def write_table(header, rows):
    out = io.StringIO()
    w = csv.writer(out, lineterminator='\n')
    w.writerow(header)
    w.writerows(rows)
    return out.getvalue().encode('utf-8')


def shift(t, minutes):
    if not t.strip():
        return t
    h, m, s = (int(x) for x in t.strip().split(':'))
    secs = h * 3600 + m * 60 + s + minutes * 60
    return '%02d:%02d:%02d' % (secs // 3600, secs // 60 % 60, secs % 60)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('feed')
    ap.add_argument('--out', required=True)
    ap.add_argument('--retime', type=float, default=0.0, metavar='PCT')
    ap.add_argument('--minutes', type=int, default=3)
    ap.add_argument('--add-route', action='store_true')
    ap.add_argument('--seed', type=int, default=25)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    files = read_files(a.feed)
    th, trips = table(files['trips.txt'])
    ti = th.index('trip_id')
    changed = set()
    if a.retime > 0:
        ids = sorted(r[ti] for r in trips)
        changed = set(rnd.sample(ids, max(1, round(len(ids) * a.retime / 100))))
        sh, sts = table(files['stop_times.txt'])
        si, ai, di = sh.index('trip_id'), sh.index('arrival_time'), sh.index('departure_time')
        for r in sts:
            if r[si] in changed:
                r[ai] = shift(r[ai], a.minutes)
                r[di] = shift(r[di], a.minutes)
        files['stop_times.txt'] = write_table(sh, sts)
    if a.add_route:
        rh, routes = table(files['routes.txt'])
        ri = rh.index('route_id')
        tri = th.index('route_id')
        served = {r[tri] for r in trips}
        candidates = sorted((r for r in routes if r[ri] in served), key=lambda r: r[ri])
        model = candidates[rnd.randrange(len(candidates))]
        new_route = list(model)
        new_route[ri] = model[ri] + '-added'
        routes.append(new_route)
        files['routes.txt'] = write_table(rh, routes)
        copies = {}
        for r in [r for r in trips if r[tri] == model[ri]]:
            c = list(r)
            c[tri] = new_route[ri]
            c[ti] = r[ti] + '-added'
            copies[r[ti]] = c[ti]
            trips.append(c)
        files['trips.txt'] = write_table(th, trips)
        sh, sts = table(files['stop_times.txt'])
        si = sh.index('trip_id')
        sts += [[copies[r[si]] if k == si else v for k, v in enumerate(r)] for r in sts if r[si] in copies]
        files['stop_times.txt'] = write_table(sh, sts)
        print('added route %s with %d trips' % (new_route[ri], len(copies)), file=sys.stderr)
    if changed:
        print('retimed %d trips by %d min' % (len(changed), a.minutes), file=sys.stderr)
    with zipfile.ZipFile(a.out, 'w', zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name, data in files.items():
            z.writestr(name, data)


if __name__ == '__main__':
    main()
