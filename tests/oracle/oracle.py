"""An independent reference implementation ("oracle") of transitd's departures
semantics, written so that the C engine can be held to it by comparison.

Why it exists: the engine answers departures from a packed timetable built for
speed; this module answers the same questions the slow, obvious way, straight
from the feed's CSV files (csv module + zoneinfo), and shares no code, store or
data structure with the engine. It must never import anything from the repo's
src/ nor read timetable.bin or the sqlite files. tests/oracle/README.md states
the rules it implements and the choices it makes where the contract is silent.

Usage:
    feed = load_feed("/path/feed.zip")      # parsed once, cached per path
    events = feed.stop_departures("127", t_from, 3600)
    events = feed.nearby_departures(40.75, -73.98, 500.0, t_from, 3600)
    events = feed.stop_events("127", t_from, 3600, kind="arrivals")   # or "both"
"""
import array
import bisect
import collections
import csv
import datetime
import io
import math
import os
import re
import zipfile
from fractions import Fraction
from zoneinfo import ZoneInfo

EARTH_RADIUS_M = 6371008.8
SECONDS_PER_DAY = 86400

_TIME_RE = re.compile(r"^(\d{1,2}):([0-5]\d):([0-5]\d)$")
_DATE_RE = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
_QUERY_TIME_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?(Z|[+-]\d{2}:\d{2})?$")

# One departure (or arrival) event, as the oracle reports it. `instant` is
# Unix seconds, `secs` the GTFS departure (arrival) seconds on `service_date`
# (shifted for a frequency instance), `utc_offset` seconds east of UTC at the
# instant; `arrival` says which of the two it is.
Event = collections.namedtuple(
    "Event", "instant stop_id route_short_name trip_id service_date secs stop_sequence "
             "utc_offset distance_m arrival", defaults=(False,))

KINDS = ("departures", "arrivals", "both")


def order_key(e):
    """Contract order: instant, then stop_id, route_short_name, trip_id as
    UTF-8 bytes. stop_sequence and service_date only make the order total."""
    return (e.instant, e.stop_id.encode(), e.route_short_name.encode(), e.trip_id.encode(),
            e.stop_sequence, e.service_date)


def contract_key(e):
    """The part of order_key the contract fixes; events equal on it may come
    in any order."""
    return order_key(e)[:4]


def parse_gtfs_time(text):
    """'H:MM:SS' / 'HH:MM:SS' (hours may pass 24) to seconds; '' to None;
    raises ValueError for anything else."""
    if text == "":
        return None
    m = _TIME_RE.match(text)
    if not m:
        raise ValueError(f"bad GTFS time {text!r}")
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))


def parse_gtfs_date(text):
    m = _DATE_RE.match(text)
    if not m:
        raise ValueError(f"bad GTFS date {text!r}")
    return datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))


def haversine_m(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp = p2 - p1
    dl = math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(a)))


def _open_members(path):
    """Maps a member's base name ('stops.txt') to a function returning its
    text stream. Accepts a zip (flat or with one folder) or a directory."""
    if os.path.isdir(path):
        return {name: (lambda n=name: open(os.path.join(path, n), encoding="utf-8-sig",
                                           newline=""))
                for name in os.listdir(path) if name.endswith(".txt")}
    zf = zipfile.ZipFile(path)
    members = {}
    for info in zf.infolist():
        if info.is_dir():
            continue
        base = info.filename.rsplit("/", 1)[-1]
        if base.endswith(".txt"):
            members[base] = (lambda i=info: io.TextIOWrapper(zf.open(i), encoding="utf-8-sig",
                                                            newline=""))
    return members


def _read_table(members, name):
    """Yields (line_number, dict-like getter) per data row of a member; empty
    if the member is absent. Header names and values are stripped; missing
    columns read as ''. Blank lines are skipped."""
    if name not in members:
        return
    with members[name]() as stream:
        reader = csv.reader(stream)
        header = next(reader, None)
        if header is None:
            return
        header = [h.strip().lstrip("\ufeff") for h in header]
        for row in reader:
            if not row or (len(row) == 1 and row[0].strip() == ""):
                continue
            yield reader.line_num, header, row


def _columns(header, *names):
    """Index of each named column in the header, or None when absent."""
    return [header.index(n) if n in header else None for n in names]


def _field(row, index):
    if index is None or index >= len(row):
        return ""
    return row[index].strip()


class Feed:
    """A feed parsed the slow, obvious way, plus per-stop sorted event lists
    (GTFS seconds, trip, stop_sequence) so that queries only bisect."""

    def __init__(self, path):
        self.path = path
        self.skipped = collections.Counter()      # "file: reason" -> rows skipped
        self.stop_time_rows = collections.Counter()  # stop_id -> raw stop_times rows read
        members = _open_members(path)
        self._read_agency(members)
        self._read_stops(members)
        self._read_routes(members)
        self._read_trips(members)
        self._read_services(members)
        trip_rows = self._read_stop_times(members)
        frequencies = self._read_frequencies(members)
        self._build_events(trip_rows, frequencies)
        self._base_cache = {}

    # ------------------------------------------------------------ reading

    def _read_agency(self, members):
        self.timezone_name = None
        for _, header, row in _read_table(members, "agency.txt"):
            (tz_col,) = _columns(header, "agency_timezone")
            self.timezone_name = _field(row, tz_col)
            break
        if not self.timezone_name:
            raise ValueError(f"{self.path}: agency.txt gives no agency_timezone")
        self.tz = ZoneInfo(self.timezone_name)

    def _read_stops(self, members):
        self.stops = {}      # stop_id -> (name, lat, lon, location_type, parent_station)
        self.children = collections.defaultdict(list)
        for _, header, row in _read_table(members, "stops.txt"):
            id_c, name_c, lat_c, lon_c, lt_c, parent_c = _columns(
                header, "stop_id", "stop_name", "stop_lat", "stop_lon", "location_type",
                "parent_station")
            stop_id = _field(row, id_c)
            if not stop_id:
                self.skipped["stops.txt: missing stop_id"] += 1
                continue
            if stop_id in self.stops:
                self.skipped["stops.txt: duplicate stop_id"] += 1
                continue
            try:
                location_type = int(_field(row, lt_c) or "0")
                lat_text, lon_text = _field(row, lat_c), _field(row, lon_c)
                lat = float(lat_text) if lat_text else None
                lon = float(lon_text) if lon_text else None
            except ValueError:
                self.skipped["stops.txt: bad number"] += 1
                continue
            if location_type in (0, 1, 2) and (lat is None or lon is None):
                self.skipped["stops.txt: missing coordinate"] += 1
                continue
            self.stops[stop_id] = (_field(row, name_c), lat, lon, location_type,
                                   _field(row, parent_c))
        for stop_id, (_, _, _, _, parent) in self.stops.items():
            if parent and parent in self.stops and self.stops[parent][3] == 1:
                self.children[parent].append(stop_id)

    def _read_routes(self, members):
        self.routes = {}     # route_id -> route_short_name
        for _, header, row in _read_table(members, "routes.txt"):
            id_c, short_c = _columns(header, "route_id", "route_short_name")
            route_id = _field(row, id_c)
            if not route_id:
                self.skipped["routes.txt: missing route_id"] += 1
                continue
            self.routes[route_id] = _field(row, short_c)

    def _read_trips(self, members):
        self.trip_ids = []           # trip index -> trip_id
        self.trip_route = []         # trip index -> route_id
        self.trip_service = []       # trip index -> service_id
        self.trip_index = {}
        for _, header, row in _read_table(members, "trips.txt"):
            id_c, route_c, service_c = _columns(header, "trip_id", "route_id", "service_id")
            trip_id, route_id = _field(row, id_c), _field(row, route_c)
            if not trip_id:
                self.skipped["trips.txt: missing trip_id"] += 1
                continue
            if trip_id in self.trip_index:
                self.skipped["trips.txt: duplicate trip_id"] += 1
                continue
            if route_id not in self.routes:
                self.skipped["trips.txt: unknown route_id"] += 1
                continue
            self.trip_index[trip_id] = len(self.trip_ids)
            self.trip_ids.append(trip_id)
            self.trip_route.append(route_id)
            self.trip_service.append(_field(row, service_c))

    def _read_services(self, members):
        """service_id -> set of active dates, by the plain rule: calendar
        weekday flag within [start, end], or an added date; minus removals."""
        active = collections.defaultdict(set)
        weekday_cols = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                        "sunday")
        for _, header, row in _read_table(members, "calendar.txt"):
            cols = _columns(header, "service_id", "start_date", "end_date", *weekday_cols)
            service_id = _field(row, cols[0])
            try:
                start = parse_gtfs_date(_field(row, cols[1]))
                end = parse_gtfs_date(_field(row, cols[2]))
                flags = [_field(row, c) == "1" for c in cols[3:]]
            except ValueError:
                self.skipped["calendar.txt: bad date"] += 1
                continue
            day = start
            while day <= end:
                if flags[day.weekday()]:
                    active[service_id].add(day)
                day += datetime.timedelta(days=1)
        removed = collections.defaultdict(set)
        for _, header, row in _read_table(members, "calendar_dates.txt"):
            sid_c, date_c, type_c = _columns(header, "service_id", "date", "exception_type")
            service_id, kind = _field(row, sid_c), _field(row, type_c)
            try:
                day = parse_gtfs_date(_field(row, date_c))
            except ValueError:
                self.skipped["calendar_dates.txt: bad date"] += 1
                continue
            if kind == "1":
                active[service_id].add(day)
            elif kind == "2":
                removed[service_id].add(day)
            else:
                self.skipped["calendar_dates.txt: bad exception_type"] += 1
        for service_id, days in removed.items():
            active[service_id] -= days
        self.service_dates = dict(active)
        all_days = set().union(*self.service_dates.values()) if self.service_dates else set()
        self.first_date = min(all_days) if all_days else None
        self.last_date = max(all_days) if all_days else None

    def _read_stop_times(self, members):
        """trip index -> list of (stop_sequence, stop_id, arrival, departure,
        no_pickup, shape_dist_text, no_drop_off). Bad rows are counted and
        skipped."""
        trip_rows = collections.defaultdict(list)
        time_cache = {"": None}
        rows = _read_table(members, "stop_times.txt")
        first = next(rows, None)
        if first is None:
            return trip_rows
        header = first[1]
        trip_c, arr_c, dep_c, stop_c, seq_c, pick_c, dist_c, drop_c = _columns(
            header, "trip_id", "arrival_time", "departure_time", "stop_id", "stop_sequence",
            "pickup_type", "shape_dist_traveled", "drop_off_type")

        def one(row):
            trip = self.trip_index.get(_field(row, trip_c))
            stop_id = _field(row, stop_c)
            if stop_id in self.stops:
                self.stop_time_rows[stop_id] += 1
            if trip is None:
                self.skipped["stop_times.txt: unknown trip_id"] += 1
                return
            if stop_id not in self.stops:
                self.skipped["stop_times.txt: unknown stop_id"] += 1
                return
            times = []
            for col in (arr_c, dep_c):
                text = _field(row, col)
                if text not in time_cache:
                    try:
                        time_cache[text] = parse_gtfs_time(text)
                    except ValueError:
                        self.skipped["stop_times.txt: bad time"] += 1
                        return
                times.append(time_cache[text])
            seq_text = _field(row, seq_c)
            if not seq_text.isdigit():
                self.skipped["stop_times.txt: bad stop_sequence"] += 1
                return
            pickup = _field(row, pick_c) or "0"
            if pickup not in ("0", "1", "2", "3"):
                self.skipped["stop_times.txt: bad pickup_type"] += 1
                return
            drop_off = _field(row, drop_c) or "0"
            if drop_off not in ("0", "1", "2", "3"):
                self.skipped["stop_times.txt: bad drop_off_type"] += 1
                return
            arrival, departure = times
            trip_rows[trip].append((int(seq_text), stop_id, arrival, departure, pickup == "1",
                                    _field(row, dist_c), drop_off == "1"))

        one(first[2])
        for _, _, row in rows:
            one(row)
        return trip_rows

    def _read_frequencies(self, members):
        """trip index -> list of (start, end, headway)."""
        frequencies = collections.defaultdict(list)
        for _, header, row in _read_table(members, "frequencies.txt"):
            trip_c, start_c, end_c, head_c = _columns(header, "trip_id", "start_time", "end_time",
                                                      "headway_secs")
            trip = self.trip_index.get(_field(row, trip_c))
            if trip is None:
                self.skipped["frequencies.txt: unknown trip_id"] += 1
                continue
            try:
                start = parse_gtfs_time(_field(row, start_c))
                end = parse_gtfs_time(_field(row, end_c))
                headway = int(_field(row, head_c))
            except ValueError:
                self.skipped["frequencies.txt: bad value"] += 1
                continue
            if start is None or end is None or headway <= 0:
                self.skipped["frequencies.txt: bad value"] += 1
                continue
            frequencies[trip].append((start, end, headway))
        return frequencies

    # ------------------------------------------------------------ events

    def _build_events(self, trip_rows, frequencies):
        per_stop = collections.defaultdict(list)
        arrivals = collections.defaultdict(list)
        self.max_secs = 0
        self.interpolated_events = []   # (stop_id, secs, trip) of departures with a computed time
        # trip -> (stop_sequences, arrival secs, departure secs, stop_ids) of a trip that is
        # not frequency-based, by stop_sequence: what realtime predictions propagate over
        self.trip_times = {}
        for trip, rows in trip_rows.items():
            rows.sort(key=lambda r: r[0])
            times = interpolate_times(rows)
            if times is None:
                self.skipped["trips: first or last stop untimed"] += 1
                continue
            arrival_secs, departures = times
            last = len(rows) - 1
            # The last stop never departs; pickup_type=1 rows are not departures.
            kept = [(seq, stop_id, secs, rows[i][3] is None and rows[i][2] is None)
                    for i, ((seq, stop_id, _, _, no_pickup, _, _), secs)
                    in enumerate(zip(rows, departures))
                    if i < last and not no_pickup]
            # The first stop is no arrival; drop_off_type=1 rows are not arrivals. An
            # arrival is "only" where the call has no departure (the last stop, or
            # pickup_type=1): what kind=both adds to the departures.
            kept_arrivals = [(seq, stop_id, secs, i == last or no_pickup)
                             for i, ((seq, stop_id, _, _, no_pickup, _, no_drop_off), secs)
                             in enumerate(zip(rows, arrival_secs))
                             if i > 0 and not no_drop_off]
            latest = max(max(departures), max(arrival_secs))
            if trip in frequencies:
                first_departure = departures[0]
                for start, end, headway in frequencies[trip]:
                    for instance_start in range(start, end, headway):
                        shift = instance_start - first_departure
                        for seq, stop_id, secs, _ in kept:
                            per_stop[stop_id].append((secs + shift, trip, seq))
                        for seq, stop_id, secs, only in kept_arrivals:
                            arrivals[stop_id].append((secs + shift, trip, seq, only))
                        self.max_secs = max(self.max_secs, latest + shift)
            else:
                self.trip_times[trip] = (array.array("l", (r[0] for r in rows)),
                                         array.array("l", arrival_secs), array.array("l", departures),
                                         tuple(r[1] for r in rows))
                for seq, stop_id, secs, computed in kept:
                    per_stop[stop_id].append((secs, trip, seq))
                    if computed:
                        self.interpolated_events.append((stop_id, secs, trip))
                for seq, stop_id, secs, only in kept_arrivals:
                    arrivals[stop_id].append((secs, trip, seq, only))
                self.max_secs = max(self.max_secs, latest)
        for events in per_stop.values():
            events.sort()
        for events in arrivals.values():
            events.sort()
        self.events = dict(per_stop)
        self.arrival_events = dict(arrivals)

    # ------------------------------------------------------------ time

    def service_day_base(self, day):
        """Unix seconds of local noon of `day` minus 12 h."""
        base = self._base_cache.get(day)
        if base is None:
            noon = datetime.datetime(day.year, day.month, day.day, 12, tzinfo=self.tz)
            base = int(noon.timestamp()) - 43200
            self._base_cache[day] = base
        return base

    def utc_offset(self, instant):
        return int(datetime.datetime.fromtimestamp(instant, self.tz).utcoffset().total_seconds())

    def local_date(self, instant):
        return datetime.datetime.fromtimestamp(instant, self.tz).date()

    def local_to_instant(self, naive):
        """A local date-time without offset, in the feed timezone, fold=0."""
        return int(naive.replace(tzinfo=self.tz, fold=0).timestamp())

    def parse_query_time(self, text):
        """RFC 3339 with offset or Z, or local 'YYYY-MM-DDTHH:MM[:SS]'."""
        m = _QUERY_TIME_RE.match(text)
        if not m:
            raise ValueError(f"bad time {text!r}")
        y, mo, d, h, mi = (int(m.group(i)) for i in range(1, 6))
        s = int(m.group(6) or 0)
        naive = datetime.datetime(y, mo, d, h, mi, s)
        zone = m.group(7)
        if zone is None:
            return self.local_to_instant(naive)
        if zone == "Z":
            offset = 0
        else:
            sign = -1 if zone[0] == "-" else 1
            offset = sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
        return int(naive.replace(tzinfo=datetime.timezone.utc).timestamp()) - offset

    def runs_on(self, trip, day):
        return day in self.service_dates.get(self.trip_service[trip], ())

    # ------------------------------------------------------------ queries

    def _events_at(self, stop_id, t_from, window_s, distance_m=0.0, kind="departures"):
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r}")
        out = []
        if kind != "arrivals":
            out += self._events_in(self.events.get(stop_id), False, stop_id, t_from, window_s,
                                   distance_m)
        if kind != "departures":
            events = self.arrival_events.get(stop_id)
            if events and kind == "both":
                events = [e for e in events if e[3]]
            out += self._events_in(events, True, stop_id, t_from, window_s, distance_m)
        return out

    def _events_in(self, events, arrival, stop_id, t_from, window_s, distance_m):
        """The events of one sorted list ((secs, trip, seq, ...) tuples) in the window."""
        if not events:
            return []
        t_to = t_from + window_s
        back_days = self.max_secs // SECONDS_PER_DAY + 1
        day = self.local_date(t_from) - datetime.timedelta(days=back_days)
        last_day = self.local_date(t_to) + datetime.timedelta(days=1)
        out = []
        while day <= last_day:
            base = self.service_day_base(day)
            lo = bisect.bisect_left(events, (t_from - base,))
            hi = bisect.bisect_left(events, (t_to - base,))
            for secs, trip, seq, *_ in events[lo:hi]:
                if self.runs_on(trip, day):
                    instant = base + secs
                    out.append(Event(instant, stop_id, self.routes[self.trip_route[trip]],
                                     self.trip_ids[trip], day, secs, seq,
                                     self.utc_offset(instant), distance_m, arrival))
            day += datetime.timedelta(days=1)
        return out

    def stop_departures(self, stop_id, t_from, window_s):
        """Every departure at the stop (a station: at its child platforms) in
        [t_from, t_from + window_s), in contract order. KeyError if unknown."""
        return self.stop_events(stop_id, t_from, window_s)

    def stop_events(self, stop_id, t_from, window_s, kind="departures"):
        """The same for the events of `kind`: departures, arrivals (riders
        may alight: not a trip's first stop, drop_off_type not 1, at the
        arrival time), or both (each call riders may board or alight at
        once: its departure, else its arrival)."""
        stop = self.stops[stop_id]
        targets = self.children.get(stop_id, []) if stop[3] == 1 else [stop_id]
        out = []
        for target in targets:
            out.extend(self._events_at(target, t_from, window_s, kind=kind))
        out.sort(key=order_key)
        return out

    def nearby_stops(self, lat, lon, radius_m):
        """(stop_id, distance) of location_type 0 stops within radius."""
        found = []
        for stop_id, (_, slat, slon, location_type, _) in self.stops.items():
            if location_type != 0:
                continue
            distance = haversine_m(lat, lon, slat, slon)
            if distance <= radius_m:
                found.append((stop_id, distance))
        return found

    def nearby_departures(self, lat, lon, radius_m, t_from, window_s, kind="departures"):
        out = []
        for stop_id, distance in self.nearby_stops(lat, lon, radius_m):
            out.extend(self._events_at(stop_id, t_from, window_s, distance, kind))
        out.sort(key=order_key)
        return out

    # ------------------------------------------------------------ facts for tests

    def dst_change_days(self):
        """Dates in the service range (and the day after) whose noon instant
        has another UTC offset than the previous day's noon instant: the
        offset changed in between."""
        days = []
        if self.first_date is None:
            return days
        day = self.first_date
        while day <= self.last_date + datetime.timedelta(days=1):
            prev = day - datetime.timedelta(days=1)
            noon_before = self.service_day_base(prev) + 43200
            noon = self.service_day_base(day) + 43200
            if self.utc_offset(noon_before) != self.utc_offset(noon):
                days.append(day)
            day += datetime.timedelta(days=1)
        return days

    def odd_local_time(self, day):
        """For a day from dst_change_days(): (kind, naive local datetime) in
        the middle of the gap ('nonexistent') or fold ('ambiguous') that
        happened between the previous day's noon and this day's noon."""
        # dst_change_days() saw the offset change between the two noons
        prev = day - datetime.timedelta(days=1)
        lo = self.service_day_base(prev) + 43200
        hi = self.service_day_base(day) + 43200
        off_lo = self.utc_offset(lo)
        if self.utc_offset(hi) == off_lo:
            raise ValueError(f"{day} holds no offset change")
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.utc_offset(mid) == off_lo:
                lo = mid
            else:
                hi = mid
        off_hi = self.utc_offset(hi)   # hi is the first instant in the new offset
        delta = abs(off_hi - off_lo)
        if off_hi > off_lo:   # clocks jump forward: local [hi+off_lo, hi+off_hi) does not exist
            local = hi + off_lo + delta // 2
            kind = "nonexistent"
        else:                 # clocks fall back: local [hi+off_hi, hi+off_lo) happens twice
            local = hi + off_hi + delta // 2
            kind = "ambiguous"
        naive = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=local)
        return kind, naive


def interpolate_departures(rows):
    """Departure seconds for each row of one trip (rows sorted by
    stop_sequence: (seq, stop_id, arrival, departure, no_pickup, dist_text, ...)).
    A row with one time uses it for both. Rows without a time get one between
    the surrounding timed rows (from the earlier one's departure to the later
    one's arrival): proportional to shape_dist_traveled when the two timed
    rows and every row between have it (and it grows), else evenly by
    position; floor. Returns None if the first or last row has no time."""
    times = interpolate_times(rows)
    return None if times is None else times[1]


def interpolate_times(rows):
    """(arrivals, departures) for each row of one trip, as
    interpolate_departures: a timed row keeps its arrival (its departure
    when it gives only that); a row without times arrives when it departs.
    None if the first or last row has no time."""
    n = len(rows)
    dep = [r[3] if r[3] is not None else r[2] for r in rows]
    arr = [r[2] if r[2] is not None else r[3] for r in rows]
    if dep[0] is None or dep[-1] is None:
        return None
    out = list(dep)
    a = 0
    while a < n - 1:
        b = a + 1
        while dep[b] is None:
            b += 1
        if b > a + 1:
            t_a, t_b = dep[a], arr[b]
            dists = _distances(rows[a:b + 1])
            for k in range(a + 1, b):
                if dists is not None:
                    frac = (dists[k - a] - dists[0]) / (dists[-1] - dists[0])
                    out[k] = t_a + math.floor((t_b - t_a) * frac)
                else:
                    out[k] = t_a + ((t_b - t_a) * (k - a)) // (b - a)
        a = b
    arrivals = [arr[k] if dep[k] is not None else out[k] for k in range(n)]
    return arrivals, out


def _distances(segment):
    """Exact shape_dist_traveled values of a run of rows, or None when any is
    missing or unparseable or the run covers no distance."""
    values = []
    for row in segment:
        text = row[5]
        if text == "":
            return None
        try:
            values.append(Fraction(text))
        except (ValueError, ZeroDivisionError):
            return None
    if values[-1] == values[0]:
        return None
    return values


_FEEDS = {}


def load_feed(path):
    """The parsed Feed for a path, parsed once per process."""
    key = os.path.abspath(path)
    if key not in _FEEDS:
        _FEEDS[key] = Feed(key)
    return _FEEDS[key]
