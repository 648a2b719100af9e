"""Holds the C engine's departures to the independent Python oracle
(tests/oracle/oracle.py): for each shared feed and the generated demo feed,
import it once, send >= 1,000 seeded random stop-departures queries and a few
hundred nearby-departures queries through `transitd query --data DIR batch`,
and compare every answer with the oracle's, event by event. The boards of arrivals
and of both kinds (`kind=arrivals|both`, /v1/stops/{id}/arrivals) get a few hundred
queries of each per feed, anchored on arrival events.

The query set deliberately covers the hard cases: DST change days (and an
ambiguous or nonexistent local time on them), windows across midnight and the
early-morning hours served by the previous day's trips, parent stations, the
interpolated non-timepoint stops, frequency-based trips, local times without
offset, and small limits that truncate. A mismatch fails with the query and the
missing and extra events."""
import datetime
import json
import os
import random
import re
import subprocess
import sys
import time
import zipfile

import pytest

from conftest import ROOT, engine_or_skip, shared_feed, transitd_bin

sys.path.insert(0, str(ROOT / "tests" / "oracle"))
import oracle  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import daily_calendar  # noqa: E402

# NAME@daily is feed NAME rewritten with one service per trip listed day by
# day (bench/daily_calendar.py): the same trips on the same dates, stored
# through shared day sets instead of calendar.txt (issue #28).
DAILY = "@daily"
FEEDS = ["cairns_translink_2014", "abidjan_osm_frequencies_2021", "amtab_bari_2026",
         "exo_laurentides_2025", "nyct_subway_2026", "nyct_bus_brooklyn_2026", "demo",
         "nyct_bus_brooklyn_2026" + DAILY, "demo" + DAILY]
STOP_QUERIES = 1000
NEARBY_QUERIES = 300
WINDOWS = [1, 2, 5, 10, 15, 30, 45, 60, 90, 120, 180, 240, 360, 720, 1440]
WINDOW_WEIGHTS = [3, 3, 6, 8, 8, 10, 6, 10, 5, 6, 4, 3, 2, 2, 2]
RADII = [1, 10, 50, 100, 150, 200, 300, 500, 800, 1000, 2000, 5000]
RADIUS_WEIGHTS = [1, 2, 4, 8, 8, 10, 10, 10, 6, 5, 2, 1]
# The fewest departure rows each feed's queries must compare, about half of
# what they compared when these were set (2026-11-26): an engine and an
# oracle that both answered nothing would otherwise agree and pass.
MIN_COMPARED_STOP = {"cairns_translink_2014": 1500, "abidjan_osm_frequencies_2021": 8000,
                     "amtab_bari_2026": 8500, "exo_laurentides_2025": 1400,
                     "nyct_subway_2026": 8500, "nyct_bus_brooklyn_2026": 4000, "demo": 3200}
MIN_COMPARED_NEARBY = {"cairns_translink_2014": 1250, "abidjan_osm_frequencies_2021": 6000,
                       "amtab_bari_2026": 6500, "exo_laurentides_2025": 1350,
                       "nyct_subway_2026": 4500, "nyct_bus_brooklyn_2026": 8500, "demo": 1700}
# The same floor for the boards of other kinds (KIND_QUERIES stop queries and
# KIND_NEARBY nearby ones per kind and feed), set on 2026-11-26 as above.
KIND_QUERIES = 300
KIND_NEARBY = 60
MIN_COMPARED_KIND = {"cairns_translink_2014": 500, "abidjan_osm_frequencies_2021": 2000,
                     "amtab_bari_2026": 2000, "exo_laurentides_2025": 500,
                     "nyct_subway_2026": 2000, "nyct_bus_brooklyn_2026": 1500, "demo": 1000}
SHOW = 10          # events listed per side in a diff
SHOW_QUERIES = 5   # failing queries described in full

_imported = {}     # feed name -> (feed zip, data dir, import seconds)


# ------------------------------------------------------------ setup

def base_name(name):
    return name[:-len(DAILY)] if name.endswith(DAILY) else name


def feed_zip(name, tmp_path_factory):
    if name.endswith(DAILY):
        out = tmp_path_factory.mktemp("daily_feed") / f"{name}.zip"
        daily_calendar.convert_zip(feed_zip(base_name(name), tmp_path_factory), out, seed=28)
        return str(out)
    if name != "demo":
        return shared_feed(f"{name}.zip")
    script = ROOT / "bench" / "gtfs_gen.py"
    if not script.exists():
        pytest.skip("bench/gtfs_gen.py does not exist yet")
    out = tmp_path_factory.mktemp("demo_feed") / "demo.zip"
    subprocess.run([sys.executable, str(script), "--scale", "demo", "--out", str(out)],
                   check=True, cwd=ROOT, capture_output=True, timeout=600)
    return str(out)


def imported(name, tmp_path_factory):
    """(feed zip, data dir, import seconds), importing once per session."""
    if name not in _imported:
        exe = engine_or_skip()
        path = feed_zip(name, tmp_path_factory)
        data = tmp_path_factory.mktemp(f"data_{name}")
        started = time.monotonic()
        p = subprocess.run([exe, "import", path, "--data", str(data)], capture_output=True,
                           text=True, timeout=900)
        assert p.returncode == 0, f"import {path} failed ({p.returncode}):\n{p.stderr[-3000:]}"
        _imported[name] = (path, str(data), time.monotonic() - started)
    return _imported[name]


def run_batch(data_dir, queries):
    lines = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)
    p = subprocess.run([transitd_bin(), "query", "--data", data_dir, "batch"], input=lines,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"query batch exited {p.returncode}:\n{p.stderr[-3000:]}"
    out = p.stdout.splitlines()
    assert len(out) == len(queries), (
        f"batch wrote {len(out)} lines for {len(queries)} queries; stderr:\n{p.stderr[-2000:]}")
    return [json.loads(line) for line in out]


# ------------------------------------------------------------ query generation

def format_time(feed, rng, t):
    """The instant t written as RFC 3339 with the feed offset, Z, another
    offset, or a local time without offset (then read back by the oracle, so
    an ambiguous local time is allowed to mean another instant)."""
    style = rng.choices(["feed", "z", "other", "local"], [45, 20, 10, 25])[0]
    if style == "local":
        local = datetime.datetime.fromtimestamp(t, feed.tz).replace(tzinfo=None)
        fmt = "%Y-%m-%dT%H:%M" if local.second == 0 and rng.random() < 0.5 else "%Y-%m-%dT%H:%M:%S"
        return local.strftime(fmt)
    if style == "feed":
        zone = datetime.timezone(datetime.timedelta(seconds=feed.utc_offset(t)))
    elif style == "z":
        zone = datetime.timezone.utc
    else:
        zone = datetime.timezone(datetime.timedelta(minutes=rng.choice([330, -180, 60, -600, 545])))
    text = datetime.datetime.fromtimestamp(t, zone).strftime("%Y-%m-%dT%H:%M:%S%z")
    text = text[:-2] + ":" + text[-2:]
    return text[:-6] + "Z" if style == "z" else text


def pick_window(rng):
    return rng.choices(WINDOWS, WINDOW_WEIGHTS)[0]


def pick_limit(rng):
    return 500 if rng.random() < 0.9 else rng.choice([1, 2, 3, 10, 50])


def random_day(feed, rng, margin=1):
    span = (feed.last_date - feed.first_date).days + 2 * margin
    return feed.first_date + datetime.timedelta(days=rng.randrange(span + 1) - margin)


def local_instant(feed, day, seconds_after_midnight):
    naive = datetime.datetime(day.year, day.month, day.day) + datetime.timedelta(
        seconds=seconds_after_midnight)
    return feed.local_to_instant(naive)


class QueryMaker:
    """Builds the seeded query list for one feed; every query records why it
    was made (its 'case'), which the diff report shows. Most queries are
    anchored on a real departure so that few answers are empty."""

    def __init__(self, feed, seed):
        self.feed = feed
        self.rng = random.Random(seed)
        self.stops_with_events = sorted(feed.events)
        self.stations = sorted(s for s, c in feed.children.items()
                               if any(x in feed.events for x in c))
        self.active_days = {sid: sorted(days) for sid, days in feed.service_dates.items()}
        # departures past 24:00 (served on the next calendar day) and before 06:00
        self.after_midnight = [(stop, ev) for stop in self.stops_with_events
                               for ev in feed.events[stop] if ev[0] >= 86400 or ev[0] < 6 * 3600]

    def stop_query(self, case, stop, t, window, limit=None, time_text=None):
        return {"op": "stop-departures", "stop": stop,
                "time": time_text or format_time(self.feed, self.rng, t),
                "window": window, "limit": limit or pick_limit(self.rng), "_case": case}

    def event_instant(self, event, day=None):
        """The instant of a (secs, trip, seq) event on `day`, or on a random
        day its trip runs (a random day if it never runs)."""
        secs, trip, _ = event
        if day is None:
            days = self.active_days.get(self.feed.trip_service[trip])
            day = self.rng.choice(days) if days else random_day(self.feed, self.rng)
        return self.feed.service_day_base(day) + secs

    def before(self, t, window):
        """A window start that puts instant t inside a window of `window` minutes."""
        return t - self.rng.randrange(window * 60)

    def anchored(self, case, stop, events_stop=None):
        window = pick_window(self.rng)
        event = self.rng.choice(self.feed.events[events_stop or stop])
        return self.stop_query(case, stop, self.before(self.event_instant(event), window), window)

    def dst_events(self, day):
        """(stop, instant) of departures in the first hours of a DST change
        day, from that day's trips and from the previous day's late trips."""
        feed, out = self.feed, []
        prev = day - datetime.timedelta(days=1)
        for stop, ev in self.after_midnight:
            service_day = prev if ev[0] >= 86400 else day
            if feed.runs_on(ev[1], service_day):
                out.append((stop, feed.service_day_base(service_day) + ev[0]))
        return out

    def kind_queries(self, kind, count=KIND_QUERIES, nearby=KIND_NEARBY):
        """Queries of boards of `kind` ("arrivals" or "both"): stop queries
        anchored on arrival events (for "both": on the arrivals at calls
        without a departure, and on departures), some at stations, a third of
        the arrivals ones through /v1/stops/{id}/arrivals; then nearby ones."""
        feed, rng = self.feed, self.rng
        arrivals = feed.arrival_events
        if kind == "both":
            only = {s: [e for e in evs if e[3]] for s, evs in arrivals.items()}
            anchors = {s: evs for s, evs in only.items() if evs}
            anchors.update({s: evs for s, evs in feed.events.items() if s not in anchors})
        else:
            anchors = arrivals
        stops = sorted(anchors)
        if not stops:
            return []
        stations = sorted(s for s, c in feed.children.items() if any(x in anchors for x in c))
        qs = []
        for i in range(count):
            window = pick_window(rng)
            if stations and i % 10 == 9:
                stop = rng.choice(stations)
                at = rng.choice([c for c in feed.children[stop] if c in anchors])
                case = f"{kind}: parent station"
            else:
                stop = at = rng.choice(stops)
                case = f"{kind}: anchored"
            event = rng.choice(anchors[at])
            q = self.stop_query(case, stop, self.before(self.event_instant(event[:3]), window), window)
            if kind == "arrivals" and i % 3 == 0:
                q["op"] = "stop-arrivals"
            else:
                q["kind"] = kind
            qs.append(q)
        for q in self.nearby_queries()[:nearby]:
            q["kind"] = kind
            q["_case"] = f"{kind}: {q['_case']}"
            qs.append(q)
        return qs

    def stop_queries(self):
        feed, rng = self.feed, self.rng
        if not self.stops_with_events:
            return []
        qs = []
        for _ in range(400):
            qs.append(self.anchored("anchored", rng.choice(self.stops_with_events)))
        for _ in range(200):
            stop = rng.choice(self.stops_with_events)
            t = local_instant(feed, random_day(feed, rng), rng.randrange(86400))
            qs.append(self.stop_query("uniform", stop, t, pick_window(rng)))
        for i in range(120):
            window = rng.choice([30, 60, 120, 180])
            if i % 3 and self.after_midnight:
                stop, event = rng.choice(self.after_midnight)
                t = self.before(self.event_instant(event), window)
            else:
                stop = rng.choice(self.stops_with_events)
                t = local_instant(feed, random_day(feed, rng), rng.randrange(3 * 3600))
            qs.append(self.stop_query("early morning", stop, t, window))
        late = [(stop, ev) for stop, ev in self.after_midnight if ev[0] >= 86400]
        for _ in range(80 if late else 0):
            stop, event = rng.choice(late)
            window = rng.choice([60, 120, 180, 240, 360])
            day_start = self.event_instant(event) - event[0] + 86400
            service_day = feed.local_date(day_start - 43200)
            t = local_instant(feed, service_day, 86400 - 60 * rng.randrange(1, window))
            qs.append(self.stop_query("across midnight", stop, t, window))
        for day in feed.dst_change_days():
            candidates = self.dst_events(day)
            for _ in range(60 if candidates else 0):
                stop, t = rng.choice(candidates)
                window = rng.choice([10, 30, 60, 120, 180, 240, 1440])
                qs.append(self.stop_query(f"DST day {day}", stop, self.before(t, window), window))
            kind, naive = feed.odd_local_time(day)
            for seconds in (0, 59, 1800):
                text = (naive + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")
                t = feed.parse_query_time(text)
                busy = [s for s in self.stops_with_events if feed.stop_departures(s, t, 7200)]
                for _ in range(5):
                    stop = rng.choice(busy or self.stops_with_events)
                    qs.append(self.stop_query(f"{kind} local time {text}", stop, 0,
                                              rng.choice([30, 60, 120]), 500, time_text=text))
        for _ in range(min(120, 10 * len(self.stations))):
            station = rng.choice(self.stations)
            child = rng.choice([c for c in feed.children[station] if c in feed.events])
            qs.append(self.anchored("parent station", station, events_stop=child))
        for _ in range(80 if feed.interpolated_events else 0):
            stop, secs, trip = rng.choice(feed.interpolated_events)
            window = rng.choice([5, 10, 30, 60])
            t = self.before(self.event_instant((secs, trip, 0)), window)
            qs.append(self.stop_query("interpolated stop", stop, t, window))
        while len(qs) < STOP_QUERIES:
            qs.append(self.anchored("anchored (fill)", rng.choice(self.stops_with_events)))
        return qs

    def nearby_queries(self):
        feed, rng = self.feed, self.rng
        points = [(v[1], v[2]) for v in feed.stops.values() if v[3] == 0]
        if not points or not self.stops_with_events:
            return []
        lats = sorted(p[0] for p in points)
        lons = sorted(p[1] for p in points)
        # the 1st..99th percentile box: a few stray stops must not make it a continent
        box = (lats[len(lats) // 100], lats[-1 - len(lats) // 100],
               lons[len(lons) // 100], lons[-1 - len(lons) // 100])
        dst = [c for day in feed.dst_change_days() for c in self.dst_events(day)]
        qs = []
        for i in range(NEARBY_QUERIES):
            window = rng.choice([1, 5, 10, 15, 30, 60, 120])
            radius = rng.choices(RADII, RADIUS_WEIGHTS)[0]
            if i % 10 == 0 and dst:
                stop, t = rng.choice(dst)
                case = "near a stop, DST day"
            elif rng.random() < 0.75:
                stop = rng.choice(self.stops_with_events)
                t = self.event_instant(rng.choice(feed.events[stop]))
                case = "near a stop"
            else:
                stop = None
                t = local_instant(feed, random_day(feed, rng), rng.randrange(86400))
                radius = rng.choice([300, 500, 1000, 2000, 5000])
                case = "in the bounding box"
            if stop is None:
                lat, lon = rng.uniform(box[0], box[1]), rng.uniform(box[2], box[3])
            else:
                _, lat, lon, _, _ = feed.stops[stop]
                spread = min(radius, 300) / 111000
                lat += rng.uniform(-spread, spread)
                lon += rng.uniform(-spread, spread)
            qs.append({"op": "departures", "lat": round(lat, 6), "lon": round(lon, 6),
                       "radius": radius, "time": format_time(feed, rng, self.before(t, window)),
                       "window": window, "limit": pick_limit(rng), "_case": case})
        return qs


# ------------------------------------------------------------ comparison

def oracle_row(feed, e, route_of=None):
    route_id = route_of(e.trip_id) if route_of else feed.trip_route[feed.trip_index[e.trip_id]]
    return (e.stop_id, e.trip_id, str(e.service_date), e.secs, e.instant, e.utc_offset,
            e.stop_sequence, route_id, e.route_short_name, "arrival" if e.arrival else "departure")


def engine_row(d):
    """The compared fields of one engine departure (or arrival: the row has
    "arrival" and "arrival_secs" instead); the RFC 3339 string gives the
    instant and its offset (no fractional seconds allowed)."""
    kind = "arrival" if "arrival" in d else "departure"
    text = d.get(kind) or ""
    try:
        if len(text) not in (20, 25) or "." in text:
            raise ValueError(text)
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        instant, offset = int(when.timestamp()), int(when.utcoffset().total_seconds())
    except (ValueError, TypeError, AttributeError):
        instant, offset = f"bad departure {text!r}", None
    return (d.get("stop_id"), d.get("trip_id"), d.get("service_date"), d.get(f"{kind}_secs"),
            instant, offset, d.get("stop_sequence"), d.get("route_id"),
            d.get("route_short_name") or "", kind)


def tie_key(row):
    """The contract's order key (instant, stop_id, route_short_name, trip_id)
    as bytes; rows equal on it may come in any order."""
    return (row[4] if isinstance(row[4], int) else -1, str(row[0]).encode(),
            str(row[8]).encode(), str(row[1]).encode())


def normalise_ties(rows):
    """Sorts each run of rows equal on tie_key, so that free orders compare equal."""
    out, i = [], 0
    while i < len(rows):
        j = i
        while j < len(rows) and tie_key(rows[j]) == tie_key(rows[i]):
            j += 1
        out.extend(sorted(rows[i:j], key=repr))
        i = j
    return out


def expected_prefix(full, limit):
    """The first `limit` rows of the oracle's list, plus, when the cut falls
    inside a tie group, that whole group (the engine may take any members)."""
    if len(full) <= limit:
        return full, None
    cut_key = tie_key(full[limit - 1])
    start = limit - 1
    while start > 0 and tie_key(full[start - 1]) == cut_key:
        start -= 1
    end = limit
    while end < len(full) and tie_key(full[end]) == cut_key:
        end += 1
    if end == limit:
        return full[:limit], None
    return full[:start], (full[start:end], limit - start)


def multiset_diff(a, b):
    left = list(a)
    extra = []
    for row in b:
        if row in left:
            left.remove(row)
        else:
            extra.append(row)
    return left, extra


def compare_one(feed, query, result, events, check_distance, route_of=None):
    """None when the engine's answer matches the oracle's events, else a
    readable description of the difference. route_of(trip_id) gives a row's
    route_id where the feed alone cannot (realtime-only trips)."""
    key = "arrivals" if query.get("op") == "stop-arrivals" else "departures"
    if not isinstance(result, dict) or key not in result:
        return f"expected {key}, got {json.dumps(result)[:500]}"
    limit = query["limit"]
    full = normalise_ties([oracle_row(feed, e, route_of) for e in events])
    got_rows = [engine_row(d) for d in result[key]]
    got = normalise_ties(got_rows)
    problems = []
    want_truncated = len(full) > limit
    if result.get("truncated") is not want_truncated:
        problems.append(f"truncated: engine {result.get('truncated')!r}, oracle {want_truncated} "
                        f"(oracle has {len(full)} events, limit {limit})")
    exact, straddle = expected_prefix(full, limit)
    if straddle:
        group, take = straddle
        want = exact + group[:take]
        matches = (got[:len(exact)] == exact and len(got) == limit
                   and not multiset_diff(group, got[len(exact):])[1])
    else:
        want = exact
        matches = got == exact
    if not matches:
        missing, extra = multiset_diff(want, got)
        lines = [f"{len(got)} events from the engine, {len(want)} expected "
                 f"(oracle total {len(full)})"]
        if missing:
            lines.append(f"missing ({len(missing)}), first {SHOW}:")
            lines += ["  - " + fmt_row(r) for r in missing[:SHOW]]
        if extra:
            lines.append(f"extra ({len(extra)}), first {SHOW}:")
            lines += ["  + " + fmt_row(r) for r in extra[:SHOW]]
        if not missing and not extra:
            first = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), 0)
            lines.append(f"same events, different order; first difference at index {first}:")
            lines += ["  want " + fmt_row(r) for r in want[first:first + 3]]
            lines += ["  got  " + fmt_row(r) for r in got[first:first + 3]]
        problems.append("\n".join(lines))
    if check_distance:
        oracle_distance = {e.stop_id: e.distance_m for e in events}
        for d in result[key][:SHOW * 5]:
            want_d = oracle_distance.get(d.get("stop_id"))
            got_d = d.get("distance_m")
            if want_d is not None and (not isinstance(got_d, (int, float))
                                       or abs(got_d - want_d) > 0.5):
                problems.append(f"distance_m of {d.get('stop_id')}: engine {got_d}, "
                                f"oracle {want_d:.2f}")
                break
    return "\n".join(problems) or None


def fmt_row(r):
    stop_id, trip_id, service_date, secs, instant, offset, seq, route_id, short, kind = r
    if isinstance(instant, int):
        when = datetime.datetime.fromtimestamp(instant, datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        when += f" (offset {offset})"
    else:
        when = str(instant)
    return (f"{when} {kind} stop={stop_id} route={route_id}/{short!r} trip={trip_id} "
            f"date={service_date} secs={secs} seq={seq}")


def oracle_events(feed, q):
    t = feed.parse_query_time(q["time"])
    if q["op"] == "stop-arrivals":
        return feed.stop_events(q["stop"], t, q["window"] * 60, "arrivals")
    kind = q.get("kind", "departures")
    if q["op"] == "stop-departures":
        return feed.stop_events(q["stop"], t, q["window"] * 60, kind)
    return feed.nearby_departures(q["lat"], q["lon"], q["radius"], t, q["window"] * 60, kind)


def answer_rows(result):
    """The rows of one batch answer, whichever endpoint gave it."""
    if not isinstance(result, dict):
        return ()
    return result.get("departures", result.get("arrivals", ()))


def check_feed(name, tmp_path_factory, make_queries, check_distance):
    path, data, import_s = imported(name, tmp_path_factory)
    started = time.monotonic()
    feed = oracle.load_feed(path)
    load_s = time.monotonic() - started
    queries = make_queries(QueryMaker(feed, f"transitd-oracle-{name}"))
    started = time.monotonic()
    results = run_batch(data, [{k: v for k, v in q.items() if k != "_case"} for q in queries])
    engine_s = time.monotonic() - started
    started = time.monotonic()
    failures = []
    for q, r in zip(queries, results):
        check = check_distance(q) if callable(check_distance) else check_distance
        problem = compare_one(feed, q, r, oracle_events(feed, q), check)
        if problem:
            failures.append((q, problem))
    compare_s = time.monotonic() - started
    compared = sum(len(answer_rows(r)) for r in results)
    truncated = sum(1 for r in results if isinstance(r, dict) and r.get("truncated"))
    print(f"\n{name}: {len(queries)} queries ({compared} events, {truncated} truncated), "
          f"{len(failures)} mismatches; import {import_s:.1f}s, "
          f"oracle load {load_s:.1f}s, engine batch {engine_s:.2f}s, oracle+compare "
          f"{compare_s:.1f}s; oracle skipped rows: {dict(feed.skipped) or 'none'}")
    if failures:
        cases = {}
        for q, _ in failures:
            cases[q["_case"]] = cases.get(q["_case"], 0) + 1
        report = [f"{name}: {len(failures)} of {len(queries)} queries differ from the oracle "
                  f"(by case: {cases}); feed timezone {feed.timezone_name}"]
        for q, problem in failures[:SHOW_QUERIES]:
            report.append(f"--- query ({q['_case']}): "
                          + json.dumps({k: v for k, v in q.items() if k != '_case'},
                                       ensure_ascii=False))
            report.append(problem)
        pytest.fail("\n".join(report), pytrace=False)
    return queries, compared


@pytest.mark.parametrize("name", FEEDS)
def test_stop_departures_match_oracle(name, tmp_path_factory):
    queries, compared = check_feed(name, tmp_path_factory, QueryMaker.stop_queries, False)
    assert len(queries) >= STOP_QUERIES
    assert compared >= MIN_COMPARED_STOP[base_name(name)], (
        f"{name}: only {compared} departure rows compared, expected at least "
        f"{MIN_COMPARED_STOP[base_name(name)]}")


@pytest.mark.parametrize("kind", ["arrivals", "both"])
@pytest.mark.parametrize("name", FEEDS)
def test_arrivals_and_both_match_oracle(name, kind, tmp_path_factory):
    """Boards of arrivals (kind=arrivals and /v1/stops/{id}/arrivals) and of
    both kinds, at stops, stations and near points, against the oracle."""
    queries, compared = check_feed(name, tmp_path_factory,
                                   lambda maker: maker.kind_queries(kind),
                                   lambda q: q["op"] == "departures")
    assert len(queries) >= KIND_QUERIES
    assert compared >= MIN_COMPARED_KIND[base_name(name)], (
        f"{name} ({kind}): only {compared} rows compared, expected at least "
        f"{MIN_COMPARED_KIND[base_name(name)]}")


@pytest.mark.parametrize("name", FEEDS)
def test_nearby_departures_match_oracle(name, tmp_path_factory):
    queries, compared = check_feed(name, tmp_path_factory, QueryMaker.nearby_queries, True)
    assert len(queries) == NEARBY_QUERIES
    assert compared >= MIN_COMPARED_NEARBY[base_name(name)], (
        f"{name}: only {compared} departure rows compared, expected at least "
        f"{MIN_COMPARED_NEARBY[base_name(name)]}")


@pytest.mark.parametrize("name", [n for n in FEEDS if n.endswith(DAILY)])
def test_daily_calendars_answer_as_calendar_txt(name, tmp_path_factory):
    """The same queries, asked of the feed and of its day-by-day form, get
    the same answers byte for byte: departures, arrivals, both, at stops,
    stations and near points, and every trip those name."""
    base = base_name(name)
    _, data_calendar, _ = imported(base, tmp_path_factory)
    path, data_daily, _ = imported(name, tmp_path_factory)
    maker = QueryMaker(oracle.load_feed(path), f"transitd-daily-{base}")
    queries = (maker.stop_queries()[:400] + maker.nearby_queries()[:100]
               + maker.kind_queries("arrivals", 100, 20) + maker.kind_queries("both", 100, 20))
    queries = [{k: v for k, v in q.items() if k != "_case"} for q in queries]
    calendar, daily = run_batch(data_calendar, queries), run_batch(data_daily, queries)
    trips = sorted({(row["trip_id"], row["service_date"]) for r in calendar for row in answer_rows(r)
                    if "trip_id" in row and "service_date" in row})
    assert len(trips) > 50, "too few trips in the answers to compare"
    differ = [(q, a, b) for q, a, b in zip(queries, calendar, daily) if a != b]
    assert not differ, (f"{len(differ)} of {len(queries)} answers differ; the first:\n"
                        + json.dumps(differ[0], ensure_ascii=False)[:3000])
    # trip details (the service_id aside, which the rewrite renames) on the
    # day they run, the day after and the day before (often not running)
    rng = random.Random(f"transitd-daily-trips-{base}")
    ask = []
    for trip, date in rng.sample(trips, min(300, len(trips))):
        day = datetime.date.fromisoformat(date)
        for d in (day, day + datetime.timedelta(days=1), day - datetime.timedelta(days=1)):
            ask.append({"op": "trip", "trip": trip, "date": d.isoformat()})
    for q, a, b in zip(ask, run_batch(data_calendar, ask), run_batch(data_daily, ask)):
        for answer in (a, b):
            answer.get("trip", {}).pop("service_id", None)
        assert a == b, f"{q}: {json.dumps(a)[:800]} != {json.dumps(b)[:800]}"


# ------------------------------------------------------------ the comparison itself

class _StubFeed:
    trip_index = {"T1": 0, "T2": 1, "T3": 2}
    trip_route = ["R", "R", "R"]


def _event(trip, instant, stop="S", seq=1):
    return oracle.Event(instant, stop, "r", trip, datetime.date(2026, 7, 1), instant % 86400,
                        seq, -14400, 0.0)


def _engine(e):
    when = datetime.datetime.fromtimestamp(e.instant, datetime.timezone(
        datetime.timedelta(seconds=e.utc_offset))).isoformat()
    return {"stop_id": e.stop_id, "trip_id": e.trip_id, "route_id": "R",
            "route_short_name": "r", "service_date": "2026-07-01", "departure": when,
            "departure_secs": e.secs, "stop_sequence": e.stop_sequence}


def test_compare_accepts_equal_answers_and_free_tie_orders():
    t = 1782907200
    events = [_event("T1", t), _event("T2", t + 60, seq=1), _event("T2", t + 60, seq=2)]
    q = {"limit": 500}
    answer = {"departures": [_engine(e) for e in events], "truncated": False}
    assert compare_one(_StubFeed, q, answer, events, False) is None
    swapped = {"departures": [_engine(events[0]), _engine(events[2]), _engine(events[1])],
               "truncated": False}
    assert compare_one(_StubFeed, q, swapped, events, False) is None
    # the limit cuts inside the tie group: either member is right
    cut = {"departures": [_engine(events[0]), _engine(events[2])], "truncated": True}
    assert compare_one(_StubFeed, {"limit": 2}, cut, events, False) is None


def test_compare_reports_missing_extra_order_and_truncation():
    t = 1782907200
    events = [_event("T1", t), _event("T2", t + 60), _event("T3", t + 120)]
    q = {"limit": 500}
    missing = compare_one(_StubFeed, q, {"departures": [_engine(e) for e in events[:2]],
                                         "truncated": False}, events, False)
    assert "missing (1)" in missing and "trip=T3" in missing
    shifted = dict(_engine(events[0]), departure_secs=1)
    extra = compare_one(_StubFeed, q, {"departures": [shifted] + [_engine(e) for e in events[1:]],
                                       "truncated": False}, events, False)
    assert "extra (1)" in extra and "secs=1 " in extra
    order = compare_one(_StubFeed, q, {"departures": [_engine(e) for e in events[::-1]],
                                       "truncated": False}, events, False)
    assert "different order" in order
    flag = compare_one(_StubFeed, {"limit": 2}, {"departures": [_engine(e) for e in events[:2]],
                                                 "truncated": False}, events, False)
    assert flag.startswith("truncated: engine False, oracle True")
    fraction = dict(_engine(events[0]), departure=_engine(events[0])["departure"][:19] + ".5-04:00")
    bad = compare_one(_StubFeed, q, {"departures": [fraction] + [_engine(e) for e in events[1:]],
                                     "truncated": False}, events, False)
    assert "bad departure" in bad
    assert "expected departures" in compare_one(_StubFeed, q, {"error": {"status": 400}},
                                                events, False)


# ------------------------------------------------------------ generated quirky feeds

FUZZ_ZONES = [
    ("America/Santiago", datetime.date(2026, 4, 1)),     # DST ends at local midnight
    ("America/Havana", datetime.date(2026, 3, 2)),       # DST starts at local midnight
    ("Australia/Lord_Howe", datetime.date(2026, 3, 28)),  # 30-minute DST
    ("Europe/Dublin", datetime.date(2026, 10, 18)),      # "negative" DST in tzdata
    ("Pacific/Apia", datetime.date(2011, 12, 25)),       # 2011-12-30 never happened there
    ("Asia/Kolkata", datetime.date(2026, 6, 1)),         # +05:30, no DST
]


def write_fuzz_feed(path, tz, first_day, rng):
    """A small random feed full of quirks (BOM, CRLF, quoting, shuffled rows
    and columns, sequence gaps, empty times with and without
    shape_dist_traveled, equal times, pickup_type=1, drop_off_type=1, stations, frequencies
    across midnight, calendar_dates only services) around `first_day`."""
    def table(header, rows, crlf=False, bom=False):
        def cell(v):
            v = str(v)
            return '"' + v.replace('"', '""') + '"' if ("," in v or '"' in v or rng.random() < 0.1) else v
        eol = "\r\n" if crlf else "\n"
        body = eol.join(",".join(cell(v) for v in r) for r in [header] + rows) + eol
        return ("\ufeff" if bom else "") + body

    stops = []
    for i in range(24):
        sid = rng.choice(["s", "S", "ß", "s_"]) + str(i)
        stops.append([sid, f"Stop {i}, \"{sid}\"", f" {rng.uniform(-0.02, 0.02):.6f}",
                      f"{rng.uniform(-0.02, 0.02):.6f} ", "0", ""])
    for i in range(3):
        lat, lon = rng.uniform(-0.02, 0.02), rng.uniform(-0.02, 0.02)
        stops.append([f"ST{i}", f"Station {i}", f"{lat:.6f}", f"{lon:.6f}", "1", ""])
        for p in range(2):
            stops.append([f"ST{i}{'NS'[p]}", f"Platform {p}", f"{lat + 1e-4 * p:.6f}",
                          f"{lon:.6f}", rng.choice(["", "0"]), f"ST{i}"])
    boardable = [s[0] for s in stops if s[4] != "1"]
    routes = [[f"R{i}", name, f"Route {i}", "3"] for i, name in enumerate(["", "a", "B", "é", "B"])]
    weekdays = [[rng.choice("01") for _ in range(7)] for _ in range(3)]
    start, end = first_day, first_day + datetime.timedelta(days=13)
    calendar = [[f"C{i}"] + weekdays[i] + [start.strftime("%Y%m%d"), end.strftime("%Y%m%d")]
                for i in range(3)]
    calendar_dates = []
    for _ in range(12):
        day = first_day + datetime.timedelta(days=rng.randrange(-1, 15))
        calendar_dates.append([rng.choice(["C0", "C1", "C2", "D"]), day.strftime("%Y%m%d"),
                               rng.choice(["1", "1", "2"])])
    trips, stop_times, frequencies = [], [], []
    for t in range(70):
        tid = f"T{t:02d}" if t % 7 else f"t{t}"
        trips.append([routes[rng.randrange(len(routes))][0], rng.choice(["C0", "C1", "C2", "D"]),
                      tid, f"To {t}"])
        n = rng.randrange(2, 9)
        secs = rng.randrange(0, 30 * 3600)
        seq = rng.randrange(0, 3)
        dist = 0.0
        with_dist = rng.random() < 0.5
        for k in range(n):
            arr = secs
            dep = secs + rng.choice([0, 0, 0, 30, 120])
            untimed = 0 < k < n - 1 and rng.random() < 0.3
            fmt = (lambda s: f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}") if rng.random() < 0.3 \
                else (lambda s: f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}")
            a_text, d_text = ("", "") if untimed else (fmt(arr), fmt(dep))
            if not untimed and rng.random() < 0.1:
                a_text = ""       # departure stands for both
            dist_text = f"{dist:.3f}" if with_dist and rng.random() < 0.9 else ""
            stop_times.append([tid, a_text, d_text, rng.choice(boardable), seq,
                               "1" if rng.random() < 0.1 else rng.choice(["", "0", "2"]),
                               dist_text, "1" if rng.random() < 0.1 else rng.choice(["", "0", "3"])])
            seq += rng.randrange(1, 4)
            secs = dep + rng.choice([0, 60, 90, 300, 601])
            dist += rng.uniform(0, 900)
        if t % 10 == 3:
            w_start = rng.randrange(20 * 3600, 24 * 3600)
            frequencies.append([tid, f"{w_start // 3600:02d}:{w_start % 3600 // 60:02d}:00",
                                f"{(w_start + 7200) // 3600:02d}:{w_start % 3600 // 60:02d}:00",
                                rng.choice([300, 600, 1234])])
    # rows the importer must skip (and count), as the oracle does
    stop_times += [["T01", "08:00:00", "08:00:00", "nowhere", 99, "", "", ""],
                   ["ghost", "08:00:00", "08:00:00", boardable[0], 1, "", "", ""],
                   ["T02", "8:61:00", "8:61:00", boardable[1], 98, "", "", ""],
                   ["T03", "soon", "soon", boardable[2], 97, "", "", ""]]
    rng.shuffle(stop_times)
    members = {
        "agency.txt": table(["agency_name", "agency_url", "agency_timezone"],
                            [["Fuzz", "http://x", tz]]),
        "stops.txt": table(["stop_id", "stop_name", "stop_lat", "stop_lon", "location_type",
                            "parent_station"], stops, crlf=True, bom=True),
        "routes.txt": table(["route_id", "route_short_name", "route_long_name", "route_type"],
                            routes),
        "trips.txt": table(["route_id", "service_id", "trip_id", "trip_headsign"], trips,
                           crlf=True),
        "calendar.txt": table(["service_id", "monday", "tuesday", "wednesday", "thursday",
                               "friday", "saturday", "sunday", "start_date", "end_date"],
                              calendar),
        "calendar_dates.txt": table(["service_id", "date", "exception_type"], calendar_dates),
        "stop_times.txt": table(["trip_id", "arrival_time", "departure_time", "stop_id",
                                 "stop_sequence", "pickup_type", "shape_dist_traveled",
                                 "drop_off_type"],
                                stop_times, bom=True),
        "frequencies.txt": table(["trip_id", "start_time", "end_time", "headway_secs"],
                                 frequencies),
    }
    with zipfile.ZipFile(path, "w") as z:
        for name, text in members.items():
            z.writestr(name, text.encode("utf-8"))


@pytest.mark.parametrize("form", ["calendar", "daily"])
@pytest.mark.parametrize("tz,first_day", FUZZ_ZONES, ids=[z for z, _ in FUZZ_ZONES])
def test_generated_quirky_feed_matches_oracle(tz, first_day, form, tmp_path):
    """The quirky feed as generated, and rewritten day by day (its services'
    days in calendar_dates.txt only, one service per trip)."""
    exe = engine_or_skip()
    rng = random.Random(f"fuzz-{tz}")
    path = tmp_path / "fuzz.zip"
    write_fuzz_feed(path, tz, first_day, rng)
    if form == "daily":
        written, path = path, tmp_path / "fuzz-daily.zip"
        daily_calendar.convert_zip(written, path, seed=28)
    data = tmp_path / "data"
    p = subprocess.run([exe, "import", str(path), "--data", str(data)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, f"import failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}"
    feed = oracle.Feed(str(path))
    # the import's problem summary ("  bad_time   2") counts the rows the oracle skipped
    reported = dict(re.findall(r"^\s+(bad_time|unknown_stop|unknown_trip)\s+(\d+)\s*$",
                               p.stdout, re.M))
    skipped = {"bad_time": feed.skipped["stop_times.txt: bad time"],
               "unknown_stop": feed.skipped["stop_times.txt: unknown stop_id"],
               "unknown_trip": feed.skipped["stop_times.txt: unknown trip_id"]}
    assert {k: int(v) for k, v in reported.items()} == skipped, p.stdout[-1500:]
    maker = QueryMaker(feed, f"fuzz-queries-{tz}")
    queries = (maker.stop_queries() + maker.nearby_queries() + maker.kind_queries("arrivals", 200, 40)
               + maker.kind_queries("both", 200, 40))
    results = run_batch(str(data), [{k: v for k, v in q.items() if k != "_case"} for q in queries])
    failures = []
    for q, r in zip(queries, results):
        problem = compare_one(feed, q, r, oracle_events(feed, q), q["op"] == "departures")
        if problem:
            failures.append((q, problem))
    compared = sum(len(answer_rows(r)) for r in results)
    print(f"\n{tz}: {len(queries)} queries ({compared} events), {len(failures)} mismatches; "
          f"oracle skipped rows: {dict(feed.skipped) or 'none'}; DST days {feed.dst_change_days()}")
    assert compared > 1000, "the generated feed gave too few departures to compare"
    if failures:
        report = [f"{tz}: {len(failures)} of {len(queries)} queries differ from the oracle "
                  f"(feed kept in {path})"]
        for q, problem in failures[:SHOW_QUERIES]:
            report.append(f"--- query ({q['_case']}): " + json.dumps(
                {k: v for k, v in q.items() if k != "_case"}, ensure_ascii=False))
            report.append(problem)
        pytest.fail("\n".join(report), pytrace=False)
