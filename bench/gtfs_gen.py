#!/usr/bin/env python3
"""gtfs_gen.py — deterministic synthetic GTFS feed for demos, tests and benchmarks.

Why it exists: transitd cannot ship third-party data, so it makes its own feed.
A (scale, seed) pair always gives the same bytes (fixed zip timestamps and
member order, no set-order dependence, no libm-dependent floats), and the feed
exercises every GTFS feature the importer and the query engine handle: bus,
tram and subway routes, times past 24:00:00, calendar.txt plus
calendar_dates.txt additions and removals, a service defined only by
calendar_dates, stations with platforms, frequencies.txt, non-timepoint stops
with empty times, shape_dist_traveled on some trips, pickup/drop-off
restrictions, dwell times, RFC 4180 quoting of names with commas, quotes and
non-ASCII letters, a UTF-8 BOM (stops.txt) and CRLF line ends (trips.txt).

Model: places on a city-sized plane around Berlin (52.52 N, 13.40 E); lines
are sequences of places sampled along a bent path, with running times from
distance and mode speed; trips come from per-service headway windows.

Usage:
    python3 bench/gtfs_gen.py --scale demo|berlin [--seed N] --out FEED.zip
    python3 bench/gtfs_gen.py --scale demo --dir DIR      (plain .txt files)

Standard library only.
"""
import argparse
import datetime
import math
import os
import random
import sys
import time
import zipfile

# ---------------------------------------------------------------- constants

CENTER_LAT = 52.52
CENTER_LON = 13.40
# Metres per degree at 52.52 N, as literals so no libm call can change a digit.
M_PER_DEG_LAT = 111320.0
M_PER_DEG_LON = 67716.0
# City extent (metres from the centre): ~30 km east-west, ~25 km north-south.
HALF_WIDTH_M = 15000.0
HALF_HEIGHT_M = 12500.0

FEED_START = datetime.date(2026, 10, 1)
FEED_END = datetime.date(2027, 3, 31)          # covers both DST changes
ZIP_DATE_TIME = (2026, 10, 1, 0, 0, 0)
TIMEZONE = "Europe/Berlin"

ROUTE_TYPE_TRAM = 0
ROUTE_TYPE_SUBWAY = 1
ROUTE_TYPE_BUS = 3

# Mode settings: average speed between stops (m/s), stop spacing (m), the
# rounding of published times (s), the grid cell (m) that decides when two
# lines share a place, and the fewest places a line may have (express lines
# need room for their boarding-only and alighting-only stretches).
MODES = {
    "subway": dict(route_type=ROUTE_TYPE_SUBWAY, speed=9.0, spacing=950.0, rounding=30, cell=800.0, min_places=3),
    "tram": dict(route_type=ROUTE_TYPE_TRAM, speed=5.6, spacing=480.0, rounding=60, cell=None, min_places=3),
    "bus": dict(route_type=ROUTE_TYPE_BUS, speed=5.0, spacing=420.0, rounding=60, cell=None, min_places=3),
    "express": dict(route_type=ROUTE_TYPE_BUS, speed=7.0, spacing=900.0, rounding=60, cell=None, min_places=7),
}
# Surface modes (cell=None) share places on the scale's surface_cell grid.

# Scales: lines per mode, headways (minutes), bus/tram line length range and
# the grid cell (m) within which surface lines share a place.
SCALES = {
    # ~1K stops, ~110K stop_times: the default dataset of `make run` and the tests.
    "demo": dict(subway=2, tram=2, bus=22, express=2, bus_headways=(30, 30, 60, 60),
                 tram_headway=10, subway_headway=10, length_km=(4.0, 10.0), surface_cell=250.0),
    # ~13K stops, ~155K trips, ~3.2M stop_times: the size of the BVG feed.
    "berlin": dict(subway=9, tram=22, bus=390, express=30, bus_headways=(10, 20, 20, 20, 30),
                   tram_headway=10, subway_headway=5, length_km=(5.0, 13.0), surface_cell=160.0),
}

# Holidays in the feed period: (date, calendar service removed, service added).
HOLIDAYS = [
    (datetime.date(2026, 10, 3), "SA", "SU"),    # Tag der Deutschen Einheit (Saturday)
    (datetime.date(2026, 12, 24), "WD", "SA"),   # Heiligabend (Thursday): Saturday service
    (datetime.date(2026, 12, 25), "WD", "SU"),   # 1. Weihnachtstag (Friday)
    (datetime.date(2026, 12, 26), "SA", "SU"),   # 2. Weihnachtstag (Saturday)
    (datetime.date(2026, 12, 31), "WD", "SA"),   # Silvester (Thursday): Saturday service
    (datetime.date(2027, 1, 1), "WD", "SU"),     # Neujahr (Friday)
    (datetime.date(2027, 3, 8), "WD", "SU"),     # Frauentag, Berlin (Monday)
    (datetime.date(2027, 3, 26), "WD", "SU"),    # Karfreitag (Friday)
    (datetime.date(2027, 3, 29), "WD", "SU"),    # Ostermontag (Monday)
]
# The service that exists only in calendar_dates.txt: New Year's Eve night subway.
NYE_SERVICE = "NYE"
NYE_DATES = [datetime.date(2026, 12, 31)]

CALENDAR_SERVICES = ("WD", "SA", "SU")
SERVICE_DAYS = {
    "WD": (1, 1, 1, 1, 1, 0, 0),
    "SA": (0, 0, 0, 0, 0, 1, 0),
    "SU": (0, 0, 0, 0, 0, 0, 1),
}

# ---------------------------------------------------------------- names

COMPOUND_STEMS = [
    "Linden", "Birken", "Kastanien", "Eichen", "Ahorn", "Buchen", "Erlen", "Tannen",
    "Föhren", "Weiden", "Pappel", "Ulmen", "Rosen", "Nelken", "Tulpen", "Veilchen",
    "Müller", "Schiller", "Goethe", "Lessing", "Fontane", "Heine", "Kleist", "Brecht",
    "Händel", "Mozart", "Schubert", "Dürer", "Menzel", "Körner", "Schön", "Grün",
    "Weißen", "Sonnen", "Mond", "Stern", "Hirsch", "Falken", "Adler", "Schwanen",
    "Mühlen", "Brunnen", "Kirch", "Schloss", "Burg", "Markt", "Garten", "Wiesen",
    "Feld", "Wald", "Berg", "See", "Hafen", "Brücken", "Post", "Schul", "Königs",
    "Kaiser", "Prinzen", "Grafen", "Ritter", "Bürger", "Bäcker", "Schmiede", "Fischer",
    "Jäger", "Gärtner", "Weber", "Färber", "Töpfer", "Zimmer", "Glocken", "Turm",
    "Tor", "Wall", "Graben", "Insel", "Quell", "Heide", "Moor", "Anger", "Dorf",
]
ADJECTIVE_STEMS = [
    "Märkische", "Spandauer", "Köpenicker", "Pankower", "Neuköllner", "Weißenseer",
    "Zehlendorfer", "Charlottenburger", "Lübecker", "Münchener", "Kölner", "Dresdner",
    "Görlitzer", "Jüterboger", "Fürstenwalder", "Potsdamer", "Frankfurter", "Hamburger",
    "Leipziger", "Prenzlauer", "Schönhauser", "Greifswalder", "Oranienburger",
    "Tempelhofer", "Britzer", "Mariendorfer", "Lichtenrader", "Große", "Kleine", "Alte",
    "Neue", "Lange", "Breite", "Hohe", "Stille", "Grüne",
]
STREET_SUFFIXES = [
    "straße", "straße", "straße", "allee", "platz", "damm", "weg", "ring", "ufer",
    "chaussee", "gasse", "steig", "pfad", "promenade", "brücke",
]
DISTRICTS = [
    "Mitte", "Friedrichshain", "Kreuzberg", "Pankow", "Charlottenburg", "Wilmersdorf",
    "Spandau", "Steglitz", "Zehlendorf", "Tempelhof", "Schöneberg", "Neukölln",
    "Treptow", "Köpenick", "Marzahn", "Hellersdorf", "Lichtenberg", "Reinickendorf",
    "Weißensee", "Friedrichsfelde", "Moabit", "Wedding", "Gesundbrunnen", "Dahlem",
    "Grünau", "Müggelheim", "Britz", "Buckow", "Rudow", "Französisch Buchholz",
]
LANDMARKS = ["Rathaus", "Bahnhof", "Krankenhaus", "Friedhof", "Stadion", "Volkspark", "Dorfkirche"]
QUALIFIERS = ["Süd", "Nord", "Ost", "West", "Mitte", "Nordost", "Südwest"]
NICKNAMES = ["Am Tor", "Zur Linde", "Alte Post", "Grüner Baum", "Zum Löwen", "Weißes Rössl"]
FIXED_FIRST_PLACE_NAME = 'Große Straße "Am Tor", Süd'


def street_name(rng):
    if rng.random() < 0.72:
        return rng.choice(COMPOUND_STEMS) + rng.choice(STREET_SUFFIXES)
    suffix = rng.choice(STREET_SUFFIXES)
    return rng.choice(ADJECTIVE_STEMS) + " " + suffix[0].upper() + suffix[1:]


def place_name(rng):
    r = rng.random()
    if r < 0.50:
        a, b = street_name(rng), street_name(rng)
        return a + "/" + b
    if r < 0.74:
        return street_name(rng)
    if r < 0.84:
        return rng.choice(LANDMARKS) + " " + rng.choice(DISTRICTS)
    if r < 0.95:
        return street_name(rng) + ", " + rng.choice(QUALIFIERS)
    name = street_name(rng) + ' "' + rng.choice(NICKNAMES) + '"'
    if rng.random() < 0.5:
        name += ", " + rng.choice(QUALIFIERS)
    return name


# ---------------------------------------------------------------- text helpers

def csv_field(value):
    """RFC 4180: quote a field holding a comma, a double quote, CR or LF."""
    s = str(value)
    if "," in s or '"' in s or "\n" in s or "\r" in s:
        return '"' + s.replace('"', '""') + '"'
    return s


def csv_row(values, eol="\n"):
    return ",".join(csv_field(v) for v in values) + eol


def make_time_table(max_hours):
    """'HH:MM:SS' for every second up to max_hours (index = seconds)."""
    table = []
    for h in range(max_hours):
        hh = "%02d:" % h
        for m in range(60):
            hm = hh + "%02d:" % m
            table.extend(hm + "%02d" % s for s in range(60))
    return table


def ymd(d):
    return d.strftime("%Y%m%d")


def fmt_lat(y):
    return "%.6f" % (CENTER_LAT + y / M_PER_DEG_LAT)


def fmt_lon(x):
    return "%.6f" % (CENTER_LON + x / M_PER_DEG_LON)


def distance(ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    return math.sqrt(dx * dx + dy * dy)


# ---------------------------------------------------------------- network model

class Place:
    """A named location; bus/tram places own two poles (one per direction),
    subway places are stations owning two platforms per line."""
    __slots__ = ("index", "x", "y", "name", "family", "stops", "lines")

    def __init__(self, index, x, y, name, family):
        self.index, self.x, self.y, self.name, self.family = index, x, y, name, family
        self.stops = []     # Stop objects, creation order
        self.lines = 0      # how many lines serve the place


class Stop:
    __slots__ = ("stop_id", "name", "x", "y", "location_type", "parent", "platform_code")

    def __init__(self, stop_id, name, x, y, location_type, parent, platform_code):
        self.stop_id, self.name, self.x, self.y = stop_id, name, x, y
        self.location_type, self.parent, self.platform_code = location_type, parent, platform_code


class Line:
    """A route: its places in direction 0 and, per direction, the stops,
    the shape and the per-stop timing."""

    def __init__(self, index, mode, short_name, agency_id, headway_min):
        self.index, self.mode, self.short_name = index, mode, short_name
        self.agency_id, self.headway_min = agency_id, headway_min
        self.route_type = MODES[mode]["route_type"]
        self.route_id = "%d_%d" % (10000 + index, self.route_type)
        self.places = []
        self.patterns = {}          # direction -> Pattern
        self.seq_start, self.seq_step = 1, 1
        self.has_untimed = False    # some intermediate stops carry no times
        self.by_frequency = False
        self.platforms = {}         # subway: (place index, direction) -> Stop


class Pattern:
    """One direction of a line: rows are preformatted except the times."""

    def __init__(self):
        self.stops = []
        self.shape_id = ""
        self.shape_points = []      # (x, y, dist)
        self.stop_dist = []         # distance along the shape per stop
        self.tails_dist = []        # ",stop_id,seq,pickup,drop_off,dist,timepoint\n"
        self.tails_nodist = []
        self.timed = []             # per stop: True if the stop carries times
        self.offsets = {}           # variant -> [(arr_offset, dep_offset)]
        self.headsign = ""


class Network:
    def __init__(self, rng):
        self.rng = rng
        self.places = []
        self.cells = {"subway": {}, "surface": {}}
        self.stops = []             # all stops, output order
        self.lines = []
        self.names_used = {}
        self.subway_count = 0
        self.surface_count = 0
        self.surface_cell = 300.0

    def unique_name(self):
        for _ in range(8):
            name = place_name(self.rng)
            if name not in self.names_used:
                break
        n = self.names_used.get(name, 0) + 1
        self.names_used[name] = n
        return name if n == 1 else "%s (%d)" % (name, n)

    def place_at(self, family, key, x, y, cell):
        """The place of grid cell `key`, created at about (x, y) if new."""
        grid = self.cells[family]
        p = grid.get(key)
        if p is not None:
            return p
        if family == "surface" and self.surface_count == 0:
            name = FIXED_FIRST_PLACE_NAME
            self.names_used[name] = 1
        else:
            name = self.unique_name()
        jx = x + (self.rng.random() - 0.5) * cell * 0.3
        jy = y + (self.rng.random() - 0.5) * cell * 0.3
        p = Place(len(self.places), jx, jy, name, family)
        self.places.append(p)
        grid[key] = p
        if family == "subway":
            self.subway_count += 1
            sid = "de:11000:9001%05d" % self.subway_count
            p.name = "U " + p.name
            st = Stop(sid, p.name, p.x, p.y, 1, None, "")
            p.stops.append(st)
            self.stops.append(st)
        else:
            self.surface_count += 1
            base = "de:11000:9002%05d" % self.surface_count
            for k, dx in ((1, 12.0), (2, -12.0)):
                st = Stop("%s::%d" % (base, k), p.name, p.x + dx, p.y + dx * 0.5, None, None, "")
                p.stops.append(st)
                self.stops.append(st)
        return p

    def subway_platform(self, place, direction):
        """Platforms are created per (line, direction) at a station."""
        station = place.stops[0]
        code = "%d" % (len(place.stops))      # platforms numbered 1, 2, 3 ...
        key = "%s::%s" % (station.stop_id, code)
        dx = 8.0 * len(place.stops)
        st = Stop(key, place.name, place.x + dx, place.y - 6.0 + direction * 12.0, 0, station, code)
        place.stops.append(st)
        self.stops.append(st)
        return st


def random_point(rng, spread):
    """A point in the city ellipse, denser towards the centre."""
    while True:
        ux, uy = rng.random() * 2 - 1, rng.random() * 2 - 1
        r2 = ux * ux + uy * uy
        if 0.0001 < r2 <= 1.0:
            break
    r = spread * rng.random()
    n = math.sqrt(r2)
    return ux / n * r * HALF_WIDTH_M, uy / n * r * HALF_HEIGHT_M


def clamp_to_city(x, y):
    e = (x / HALF_WIDTH_M) ** 2 + (y / HALF_HEIGHT_M) ** 2
    if e <= 1.0:
        return x, y
    s = 1.0 / math.sqrt(e)
    return x * s * 0.999, y * s * 0.999


def path_points(rng, mode, length_range):
    """A bent polyline for a line: subway lines cross the centre radially."""
    lo, hi = length_range
    if mode == "subway":
        ax, ay = random_point(rng, 1.0)
        n = math.sqrt(ax * ax + ay * ay) or 1.0
        ax, ay = ax / n * HALF_WIDTH_M * 0.75, ay / n * HALF_HEIGHT_M * 0.75
        bx = -ax * (0.6 + 0.3 * rng.random()) + (rng.random() - 0.5) * 4000.0
        by = -ay * (0.6 + 0.3 * rng.random()) + (rng.random() - 0.5) * 4000.0
        mx, my = (rng.random() - 0.5) * 2500.0, (rng.random() - 0.5) * 2500.0
        return [(ax, ay), (mx, my), clamp_to_city(bx, by)]
    for _ in range(50):
        ax, ay = random_point(rng, 0.95)
        bx, by = random_point(rng, 0.95)
        d = distance(ax, ay, bx, by)
        if lo * 1000.0 <= d <= hi * 1000.0:
            break
    d = max(d, 1.0)
    # bend: a midpoint pushed sideways
    mx, my = (ax + bx) / 2, (ay + by) / 2
    px, py = -(by - ay) / d, (bx - ax) / d
    off = (rng.random() - 0.5) * 0.35 * d
    mid = clamp_to_city(mx + px * off, my + py * off)
    return [(ax, ay), mid, (bx, by)]


def sample_places(net, mode, points):
    """Places every ~spacing metres along the polyline, each snapped to its
    grid cell (a cell holds one place, shared by every line through it).
    Returns None, creating nothing, when the line would be too short."""
    rng = net.rng
    cfg = MODES[mode]
    family = "subway" if mode == "subway" else "surface"
    cell = cfg["cell"] or net.surface_cell
    picks, seen = [], set()
    carry = 0.0
    for (ax, ay), (bx, by) in zip(points, points[1:]):
        seg = distance(ax, ay, bx, by)
        pos = carry
        while pos <= seg:
            t = pos / seg if seg > 0 else 0.0
            x, y = ax + (bx - ax) * t, ay + (by - ay) * t
            key = (math.floor(x / cell), math.floor(y / cell))
            if key not in seen:
                seen.add(key)
                picks.append((key, x, y))
            pos += cfg["spacing"] * (0.8 + 0.4 * rng.random())
        carry = pos - seg
    if len(picks) < cfg["min_places"]:
        return None
    return [net.place_at(family, key, x, y, cell) for key, x, y in picks]


def sample_line(net, mode, length_range):
    for _ in range(1000):
        places = sample_places(net, mode, path_points(net.rng, mode, length_range))
        if places:
            return places
    raise RuntimeError("could not lay out a %s line" % mode)


# ---------------------------------------------------------------- timetables

def headway_windows(line, service):
    """Per-service windows (start min, end min, headway min). Boundaries are
    multiples of every headway used, so a subway (offset 0) departs exactly
    at the last end: 24:30 on weekdays and Sundays, 25:30 on Saturdays."""
    h = line.headway_min
    if service == "WD":
        return [(270, 360, 2 * h), (360, 1230, h), (1230, 1470, 2 * h)]
    if service == "SA":
        return [(300, 600, 2 * h), (600, 1290, h), (1290, 1530, 2 * h)]
    if service == "SU":
        return [(360, 720, 2 * h), (720, 1230, h), (1230, 1470, 2 * h)]
    raise ValueError(service)


def departures(windows, offset_min):
    out = []
    t = windows[0][0] + offset_min
    last_end = windows[-1][1]
    while t <= last_end:
        out.append(t * 60)
        h = windows[-1][2]
        for ws, we, wh in windows:
            if ws <= t < we:
                h = wh
                break
        t += h
    return out


PEAK_WINDOWS = ((390, 540), (900, 1110))    # 06:30-09:00, 15:00-18:30


def is_peak(dep_s):
    m = dep_s // 60
    return any(a <= m < b for a, b in PEAK_WINDOWS)


# ---------------------------------------------------------------- building

def build_line_patterns(net, line):
    rng = net.rng
    cfg = MODES[line.mode]
    rounding = cfg["rounding"]
    n_places = len(line.places)
    for direction in (0, 1):
        pat = Pattern()
        places = line.places if direction == 0 else line.places[::-1]
        if line.mode == "subway":
            pat.stops = [line.platforms[(p.index, direction)] for p in places]
        else:
            pat.stops = [p.stops[direction] for p in places]
        pat.headsign = places[-1].name
        pat.shape_id = "shp_%s_%d" % (line.route_id, direction)
        # Shape: stops are vertices; one or two bends between each pair.
        pts = []
        dist = 0.0
        prev = None
        for i, st in enumerate(pat.stops):
            if prev is not None:
                nb = 1 + (i % 2)
                for k in range(1, nb + 1):
                    t = k / (nb + 1)
                    bx = prev[0] + (st.x - prev[0]) * t + (rng.random() - 0.5) * 60.0
                    by = prev[1] + (st.y - prev[1]) * t + (rng.random() - 0.5) * 60.0
                    dist += distance(pts[-1][0], pts[-1][1], bx, by)
                    pts.append((bx, by, dist))
                dist += distance(pts[-1][0], pts[-1][1], st.x, st.y)
            pts.append((st.x, st.y, dist))
            pat.stop_dist.append(dist)
            prev = (st.x, st.y)
        pat.shape_points = pts
        # Which stops are timed, pickup/drop-off rules, dwell.
        last = n_places - 1
        pickups, dropoffs, dwells = [], [], []
        for i, p in enumerate(places):
            timed = not (line.has_untimed and 0 < i < last and i % 3 == 2)
            pat.timed.append(timed)
            pickup = drop = 0
            if line.mode == "express":
                if 0 < i <= 2:
                    drop = 1            # boarding only near the origin
                if last - 2 <= i < last:
                    pickup = 1          # alighting only near the terminus
            if i == last:
                pickup = 1
            if i == 0:
                drop = 1
            pickups.append(pickup)
            dropoffs.append(drop)
            dwell = 0
            if timed and 0 < i < last:
                if line.mode == "subway" and p.lines > 1:
                    dwell = 30
                elif line.mode != "subway" and i == last // 2 and last >= 12:
                    dwell = 120         # timing point: the bus waits
                elif line.mode == "tram" and p.lines >= 3:
                    dwell = 60
            dwells.append(dwell)
        for i, st in enumerate(pat.stops):
            seq = line.seq_start + i * line.seq_step
            tp = "1" if pat.timed[i] else "0"
            head = ",%s,%d,%d,%d," % (st.stop_id, seq, pickups[i], dropoffs[i])
            pat.tails_dist.append("%s%.1f,%s\n" % (head, pat.stop_dist[i], tp))
            pat.tails_nodist.append("%s,%s\n" % (head, tp))
        # Offsets from the first departure, per variant (normal / peak).
        for variant, factor in (("normal", 1.0), ("peak", 1.15)):
            offs = []
            cum = 0.0
            for i in range(n_places):
                if i > 0:
                    run = (pat.stop_dist[i] - pat.stop_dist[i - 1]) / cfg["speed"] * factor + 20.0
                    cum += max(run, float(rounding))
                arr = int((cum + rounding / 2) // rounding) * rounding
                dep = arr + dwells[i]
                if offs and arr < offs[-1][1]:
                    arr = offs[-1][1]
                    dep = arr + dwells[i]
                offs.append((arr, dep))
                cum = max(cum, float(dep))
            pat.offsets[variant] = offs
        line.patterns[direction] = pat


def build_network(scale, rng):
    cfg = SCALES[scale]
    net = Network(rng)
    net.surface_cell = cfg["surface_cell"]
    specs = []
    for k in range(cfg["subway"]):
        specs.append(("subway", "U%d" % (k + 1), cfg["subway_headway"]))
    tram_names = ["M%d" % (k + 1) if k < 10 else "%d" % (k + 2) for k in range(cfg["tram"])]
    for name in tram_names:
        specs.append(("tram", name, cfg["tram_headway"]))
    for k in range(cfg["bus"]):
        specs.append(("bus", "%d" % (100 + k), rng.choice(cfg["bus_headways"])))
    for k in range(cfg["express"]):
        specs.append(("express", "X%d" % (k + 1), 20))
    for mode, short, headway in specs:
        line = Line(len(net.lines), mode, short, "DVB", headway)
        line.places = sample_line(net, mode, cfg["length_km"])
        net.lines.append(line)
    # The frequency-based shuttle, run by the second agency.
    shuttle = Line(len(net.lines), "bus", "Shuttle 1", "SOST", 10)
    shuttle.places = sample_line(net, "bus", (4.0, 7.0))
    shuttle.by_frequency = True
    net.lines.append(shuttle)
    # Line counts per place (for dwell at interchanges), then per-line rules.
    for line in net.lines:
        for p in line.places:
            p.lines += 1
    bus_k = 0
    for line in net.lines:
        if line.mode == "subway":
            for direction in (0, 1):
                for p in line.places:
                    line.platforms[(p.index, direction)] = net.subway_platform(p, direction)
            line.seq_start, line.seq_step = 1, 1
        elif line.mode == "tram":
            line.seq_start, line.seq_step = 10, 10
        else:
            bus_k += 1
            line.has_untimed = bus_k % 2 == 0
            line.seq_start, line.seq_step = (10, 10) if bus_k % 3 == 0 else (1, 1)
        build_line_patterns(net, line)
    return net


class Trip:
    __slots__ = ("trip_id", "line", "service", "direction", "start", "variant", "with_dist")

    def __init__(self, trip_id, line, service, direction, start, variant, with_dist):
        self.trip_id, self.line, self.service, self.direction = trip_id, line, service, direction
        self.start, self.variant, self.with_dist = start, variant, with_dist


FREQUENCY_WINDOWS = {
    # service: [(start, end, headway_secs, exact_times)]
    "WD": [(6 * 3600, 9 * 3600, 300, 0), (9 * 3600, 16 * 3600, 600, 0),
           (16 * 3600, 19 * 3600, 300, 0), (19 * 3600, 24 * 3600 + 1800, 900, 0)],
    "SA": [(8 * 3600, 20 * 3600, 600, 1)],
}


def build_trips(net, rng):
    trips = []
    frequencies = []
    next_id = [1000001]

    def add(line, service, direction, start, with_dist):
        variant = "peak" if (service == "WD" and line.mode in ("bus", "tram", "express")
                             and is_peak(start)) else "normal"
        t = Trip(str(next_id[0]), line, service, direction, start, variant, with_dist)
        next_id[0] += 1
        trips.append(t)
        return t

    for line in net.lines:
        if line.by_frequency:
            for service, windows in FREQUENCY_WINDOWS.items():
                for direction in (0, 1):
                    t = add(line, service, direction, windows[0][0], direction == 0)
                    for ws, we, hs, exact in windows:
                        frequencies.append((t.trip_id, ws, we, hs, exact))
            continue
        offsets = (0, 0) if line.mode == "subway" else (
            rng.randrange(line.headway_min), rng.randrange(line.headway_min))
        k = 0
        for service in CALENDAR_SERVICES:
            windows = headway_windows(line, service)
            for direction in (0, 1):
                for start in departures(windows, offsets[direction]):
                    if line.mode == "subway":
                        with_dist = False
                    elif line.mode == "tram":
                        with_dist = True
                    elif line.has_untimed:
                        with_dist = k % 2 == 0     # interpolate by distance on half
                    else:
                        with_dist = True
                    add(line, service, direction, start, with_dist)
                    k += 1
    # New Year's Eve night: extra subway trips every 15 minutes until 04:00.
    for line in net.lines:
        if line.mode != "subway":
            continue
        for direction in (0, 1):
            for start in range(25 * 3600 + 2700, 28 * 3600 + 1, 900):
                add(line, NYE_SERVICE, direction, start, direction == 1)
    return trips, frequencies


# ---------------------------------------------------------------- output

class Sink:
    """Writes members to a zip (fixed timestamps, fixed order) or a directory."""

    def __init__(self, out_zip=None, out_dir=None):
        self.zip = None
        self.dir = out_dir
        if out_zip:
            parent = os.path.dirname(os.path.abspath(out_zip))
            os.makedirs(parent, exist_ok=True)
            self.zip = zipfile.ZipFile(out_zip, "w", compression=zipfile.ZIP_DEFLATED)
        else:
            os.makedirs(out_dir, exist_ok=True)
        self.counts = []

    def open(self, name):
        if self.zip is not None:
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            return self.zip.open(info, "w")
        return open(os.path.join(self.dir, name), "wb")

    def write_member(self, name, header, rows_iter, eol="\n", bom=False):
        """rows_iter yields strings (one or many rows each, eol-terminated);
        returns the row count (excluding the header)."""
        count = 0
        with self.open(name) as f:
            first = ("\ufeff" if bom else "") + ",".join(header) + eol
            f.write(first.encode("utf-8"))
            buf, size = [], 0
            for chunk, n in rows_iter:
                buf.append(chunk)
                size += len(chunk)
                count += n
                if size >= 1 << 20:
                    f.write("".join(buf).encode("utf-8"))
                    buf, size = [], 0
            if buf:
                f.write("".join(buf).encode("utf-8"))
        self.counts.append((name, count))
        return count

    def close(self):
        if self.zip is not None:
            self.zip.close()


def one_per_row(rows):
    for r in rows:
        yield r, 1


def write_agency(sink):
    header = ["agency_id", "agency_name", "agency_url", "agency_timezone", "agency_lang", "agency_phone"]
    rows = [
        csv_row(["DVB", "Demo-Verkehrsbetriebe Berlin (DVB)", "https://example.org/dvb", TIMEZONE, "de", "+49 30 0000000"]),
        csv_row(["SOST", 'Shuttle-Gesellschaft "Ost", Müller & Söhne', "https://example.org/shuttle", TIMEZONE, "de", ""]),
    ]
    sink.write_member("agency.txt", header, one_per_row(rows))


def write_feed_info(sink, scale, seed):
    header = ["feed_publisher_name", "feed_publisher_url", "feed_lang", "feed_start_date",
              "feed_end_date", "feed_version", "feed_contact_email"]
    rows = [csv_row(["transitd demo feed generator", "https://example.org/transitd", "de",
                     ymd(FEED_START), ymd(FEED_END), "gtfs_gen %s seed %d" % (scale, seed),
                     "transit@example.org"])]
    sink.write_member("feed_info.txt", header, one_per_row(rows))


def write_calendar(sink):
    header = ["service_id", "monday", "tuesday", "wednesday", "thursday", "friday",
              "saturday", "sunday", "start_date", "end_date"]
    rows = [csv_row([s] + list(SERVICE_DAYS[s]) + [ymd(FEED_START), ymd(FEED_END)])
            for s in CALENDAR_SERVICES]
    sink.write_member("calendar.txt", header, one_per_row(rows))


def write_calendar_dates(sink):
    header = ["service_id", "date", "exception_type"]
    rows = []
    for day, removed, added in HOLIDAYS:
        wd = day.weekday()
        runs = SERVICE_DAYS[removed][wd]
        assert runs == 1, "holiday %s: %s does not run on that weekday" % (day, removed)
        rows.append(csv_row([removed, ymd(day), 2]))
        rows.append(csv_row([added, ymd(day), 1]))
    for day in NYE_DATES:
        rows.append(csv_row([NYE_SERVICE, ymd(day), 1]))
    sink.write_member("calendar_dates.txt", header, one_per_row(rows))


ROUTE_COLORS = {ROUTE_TYPE_SUBWAY: ("115D91", "FFFFFF"), ROUTE_TYPE_TRAM: ("BE1414", "FFFFFF"),
                ROUTE_TYPE_BUS: ("A5027D", "FFFFFF")}


def write_routes(sink, net):
    header = ["route_id", "agency_id", "route_short_name", "route_long_name", "route_type",
              "route_color", "route_text_color"]
    rows = []
    for line in net.lines:
        color, text = ROUTE_COLORS[line.route_type]
        if line.mode == "express":
            color = "006CB3"
        long_name = "%s – %s" % (line.places[0].name, line.places[-1].name)
        rows.append(csv_row([line.route_id, line.agency_id, line.short_name, long_name,
                             line.route_type, color, text]))
    sink.write_member("routes.txt", header, one_per_row(rows))


def write_stops(sink, net):
    header = ["stop_id", "stop_name", "stop_lat", "stop_lon", "location_type",
              "parent_station", "wheelchair_boarding", "platform_code"]

    def rows():
        for st in net.stops:
            lt = "" if st.location_type is None else str(st.location_type)
            parent = st.parent.stop_id if st.parent is not None else ""
            wheelchair = "1" if st.location_type is not None else ""
            yield csv_row([st.stop_id, st.name, fmt_lat(st.y), fmt_lon(st.x), lt, parent,
                           wheelchair, st.platform_code]), 1
    sink.write_member("stops.txt", header, rows(), bom=True)


def write_shapes(sink, net):
    header = ["shape_id", "shape_pt_lat", "shape_pt_lon", "shape_pt_sequence", "shape_dist_traveled"]

    def rows():
        for line in net.lines:
            for direction in (0, 1):
                pat = line.patterns[direction]
                chunk = ["%s,%s,%s,%d,%.1f\n" % (pat.shape_id, fmt_lat(y), fmt_lon(x), i + 1, d)
                         for i, (x, y, d) in enumerate(pat.shape_points)]
                yield "".join(chunk), len(chunk)
    sink.write_member("shapes.txt", header, rows())


def write_trips(sink, trips):
    header = ["route_id", "service_id", "trip_id", "trip_headsign", "direction_id",
              "shape_id", "wheelchair_accessible"]

    def rows():
        for t in trips:
            pat = t.line.patterns[t.direction]
            yield csv_row([t.line.route_id, t.service, t.trip_id, pat.headsign, t.direction,
                           pat.shape_id, 1], "\r\n"), 1
    sink.write_member("trips.txt", header, rows(), eol="\r\n")


def write_stop_times(sink, trips):
    header = ["trip_id", "arrival_time", "departure_time", "stop_id", "stop_sequence",
              "pickup_type", "drop_off_type", "shape_dist_traveled", "timepoint"]
    max_s = max(t.start + t.line.patterns[t.direction].offsets[t.variant][-1][1] for t in trips)
    times = make_time_table(max_s // 3600 + 2)

    def rows():
        for t in trips:
            pat = t.line.patterns[t.direction]
            tails = pat.tails_dist if t.with_dist else pat.tails_nodist
            tid = t.trip_id
            s = t.start
            untimed = tid + ",,"
            out = [
                (tid + "," + times[s + a] + "," + times[s + d] + tail) if timed else (untimed + tail)
                for (a, d), tail, timed in zip(pat.offsets[t.variant], tails, pat.timed)
            ]
            yield "".join(out), len(out)
    sink.write_member("stop_times.txt", header, rows())


def write_frequencies(sink, frequencies):
    header = ["trip_id", "start_time", "end_time", "headway_secs", "exact_times"]
    times = make_time_table(30)
    rows = [csv_row([tid, times[a], times[b], h, exact]) for tid, a, b, h, exact in frequencies]
    sink.write_member("frequencies.txt", header, one_per_row(rows))


def write_transfers(sink, net):
    """Walking times between the platforms of each station."""
    header = ["from_stop_id", "to_stop_id", "transfer_type", "min_transfer_time"]
    rows = []
    for p in net.places:
        if p.family != "subway":
            continue
        platforms = p.stops[1:]
        for a in platforms:
            for b in platforms:
                if a is b:
                    continue
                same_pair = (int(a.platform_code) - 1) // 2 == (int(b.platform_code) - 1) // 2
                rows.append(csv_row([a.stop_id, b.stop_id, 2, 120 if same_pair else 240]))
    sink.write_member("transfers.txt", header, one_per_row(rows))


def generate(scale, seed, out_zip=None, out_dir=None):
    """Builds the feed and writes it; returns [(file name, row count)]."""
    rng = random.Random(seed)
    net = build_network(scale, rng)
    trips, frequencies = build_trips(net, rng)
    sink = Sink(out_zip=out_zip, out_dir=out_dir)
    try:
        write_agency(sink)
        write_feed_info(sink, scale, seed)
        write_calendar(sink)
        write_calendar_dates(sink)
        write_routes(sink, net)
        write_stops(sink, net)
        write_shapes(sink, net)
        write_trips(sink, trips)
        write_stop_times(sink, trips)
        write_frequencies(sink, frequencies)
        write_transfers(sink, net)
    finally:
        sink.close()
    return sink.counts


def main(argv=None):
    ap = argparse.ArgumentParser(description="Deterministic synthetic GTFS feed (Berlin-like).")
    ap.add_argument("--scale", choices=sorted(SCALES), required=True)
    ap.add_argument("--seed", type=int, default=1)
    dest = ap.add_mutually_exclusive_group(required=True)
    dest.add_argument("--out", help="write a zip file")
    dest.add_argument("--dir", help="write plain .txt files into this directory")
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    counts = generate(a.scale, a.seed, out_zip=a.out, out_dir=a.dir)
    elapsed = time.monotonic() - t0
    target = a.out or a.dir
    sys.stderr.write("gtfs_gen: scale=%s seed=%d -> %s (%.1f s)\n" % (a.scale, a.seed, target, elapsed))
    for name, n in counts:
        sys.stderr.write("  %-20s %9d rows\n" % (name, n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
