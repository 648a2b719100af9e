#!/usr/bin/env python3
"""daily_calendar.py — a GTFS feed rewritten with day-by-day calendars: every
trip gets its own service, listed date by date in calendar_dates.txt.

Why it exists: national feeds (the Netherlands, parts of Germany) are written
that way, and it is the worst case for a store that keeps one calendar per
service (issue #28: Brooklyn rewritten so has 58,357 services and 1.45M
calendar_dates rows). The rewritten feed runs exactly the same trips on
exactly the same dates, so every answer the service gives must stay the same;
the oracle tests (tests/api/test_oracle.py) and bench/calendar_ab.py import
both forms and compare.

The traffic days of a service are what the importer computes: calendar.txt's
weekdays between start_date and end_date, plus calendar_dates additions,
minus removals. A trip whose service runs on no day keeps a calendar.txt row
with no weekdays (so it is still a known, never-running trip); otherwise
calendar.txt is dropped. Service ids are "D" and a number; the numbers are
given to the trips in an order shuffled by --seed. calendar_dates.txt lists
them as national feeds do: service by service in number order, each one's
dates in order. Every other member is copied byte for byte; only trips.txt's
service_id column changes.

    python3 bench/daily_calendar.py --source ../shared/gtfs/nyct_bus_brooklyn_2026.zip \\
        --out build/feeds/brooklyn-daily.zip [--seed 28]

Brooklyn: about 10 s. convert_members() is the same conversion on a dict of
member texts, for tests.
"""
import argparse
import csv
import datetime
import io
import pathlib
import random
import sys
import time
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "gtfs" / "nyct_bus_brooklyn_2026.zip"
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
EPOCH = datetime.date(1970, 1, 1)


def _rows(text):
    """(header, rows) of a CSV member, BOM and surrounding spaces stripped from
    the header names."""
    if text.startswith("\ufeff"):
        text = text[1:]
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [h.strip() for h in next(reader, [])]
    return header, [r for r in reader if any(c.strip() for c in r)]


def _day(text):
    """Days since the epoch of a GTFS date YYYYMMDD, or None when it is not one."""
    text = text.strip()
    if len(text) != 8 or not text.isdigit():
        return None
    try:
        return (datetime.date(int(text[:4]), int(text[4:6]), int(text[6:])) - EPOCH).days
    except ValueError:
        return None


def _date(day):
    return (EPOCH + datetime.timedelta(days=day)).strftime("%Y%m%d")


def traffic_days(members):
    """{service_id: set of days since the epoch}: calendar.txt weekdays within
    its dates, plus calendar_dates additions, minus removals, a removal
    winning over an addition of the same date (the importer's rule). Rows the
    importer skips (bad dates, weekdays or types, end before start, a second
    calendar row of a service) are skipped here too."""
    days = {}
    if "calendar.txt" in members:
        header, rows = _rows(members["calendar.txt"])
        col = {h: i for i, h in enumerate(header)}
        for r in rows:
            cell = lambda k: r[col[k]].strip() if k in col and col[k] < len(r) else ""  # noqa: E731
            sid = cell("service_id")
            start, end = _day(cell("start_date")), _day(cell("end_date"))
            flags = [cell(w) for w in WEEKDAYS]
            if (not sid or sid in days or start is None or end is None or end < start
                    or any(f not in ("0", "1") for f in flags)):
                continue
            s = days[sid] = set()
            for d in range(start, end + 1):
                if flags[(d + 3) % 7] == "1":   # 1970-01-01 was a Thursday
                    s.add(d)
    if "calendar_dates.txt" in members:
        header, rows = _rows(members["calendar_dates.txt"])
        col = {h: i for i, h in enumerate(header)}
        adds, removes = [], []
        for r in rows:
            cell = lambda k: r[col[k]].strip() if k in col and col[k] < len(r) else ""  # noqa: E731
            sid, day, kind = cell("service_id"), _day(cell("date")), cell("exception_type")
            if not sid or day is None or kind not in ("1", "2"):
                continue
            (adds if kind == "1" else removes).append((sid, day))
        for sid, day in adds:
            days.setdefault(sid, set()).add(day)
        for sid, day in removes:
            days.setdefault(sid, set()).discard(day)
    return days


def convert_members(members, seed=28):
    """The day-by-day form of a feed given as {member name: text}; returns the
    new {member name: text}."""
    rng = random.Random(seed)
    days = traffic_days(members)
    header, rows = _rows(members["trips.txt"])
    trip_col, svc_col = header.index("trip_id"), header.index("service_id")
    order = list(range(len(rows)))
    rng.shuffle(order)
    number = {t: n for n, t in enumerate(order)}
    dates, empty = [], []   # dates: (number, service_id, day)
    for t, r in enumerate(rows):
        if svc_col >= len(r) or trip_col >= len(r):
            continue
        old = r[svc_col].strip()
        if old not in days:        # an unknown service stays unknown: the trip is dropped as before
            continue
        sid = f"D{number[t]}"
        r[svc_col] = sid
        if days[old]:
            dates.extend((number[t], sid, d) for d in sorted(days[old]))
        else:
            empty.append(sid)
    dates.sort()
    out = {k: v for k, v in members.items() if k not in ("calendar.txt", "calendar_dates.txt", "trips.txt")}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    out["trips.txt"] = buf.getvalue()
    out["calendar_dates.txt"] = "service_id,date,exception_type\n" + "".join(
        f"{sid},{_date(d)},1\n" for _, sid, d in dates)
    if empty:
        out["calendar.txt"] = ("service_id," + ",".join(WEEKDAYS) + ",start_date,end_date\n" + "".join(
            f"{sid},0,0,0,0,0,0,0,20000101,20000101\n" for sid in empty))
    return out


def convert_zip(source, out, seed=28, level=1):
    """Reads the flat GTFS zip source, writes its day-by-day form to the zip
    out (through out.partial, renamed when complete), deflated at `level`.
    Returns the new calendar_dates row count."""
    with zipfile.ZipFile(source) as z:
        names = [n for n in z.namelist() if n.endswith(".txt") and "/" not in n]
        members = {n: z.read(n).decode("utf-8") for n in names}
    converted = convert_members(members, seed)
    out = pathlib.Path(out)
    partial = out.with_name(out.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as z:
        for name in sorted(converted):
            z.writestr(name, converted[name].encode("utf-8"))
    partial.replace(out)
    return converted["calendar_dates.txt"].count("\n") - 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", default=str(DEFAULT_SOURCE), help="a flat GTFS .zip")
    ap.add_argument("--out", required=True, help="the .zip to write")
    ap.add_argument("--seed", type=int, default=28, help="which trip gets which service number")
    # 9, as the shared feeds are deflated (`unzip -v`: Defl:X): at level 1
    # Brooklyn's stop_times.txt took 26.6 MB instead of 18.5 and a sixth
    # longer to inflate, which bench/calendar_ab.py counted against the
    # calendars (the tests convert at 1, for speed)
    ap.add_argument("--level", type=int, default=9, help="deflate level of the written zip (1-9)")
    a = ap.parse_args(argv)
    started = time.monotonic()
    n = convert_zip(a.source, a.out, a.seed, a.level)
    print(f"{a.out}: {n} calendar_dates rows in {time.monotonic() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
