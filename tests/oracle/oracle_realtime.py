"""The oracle's realtime half: GTFS-Realtime predictions over a Feed
(oracle.py) and boards chosen, ordered and cut by predicted time, written
again from the rules in README.md ("Realtime") without looking at the
engine. Like oracle.py it imports nothing from the repo and never reads
what transitd wrote.

Updates are plain data, not protobuf (the test encodes the same list with
the protobuf package for the engine): dicts with trip_id, start_date (a
date), canceled (bool), deleted (bool: a DELETED instance, shown on no
board, by prediction or by schedule) and stops, a list of (stop_sequence, what) with what
a dict of any of departure_delay, arrival_delay, departure_time,
arrival_time (Unix seconds), skipped=True, no_data=True (a NO_DATA update:
no timing from there on) and assigned_stop_id (a platform change: the call
is served at that stop instead, rule R7), in increasing stop_sequence.

Realtime-only trips (rules R8-R10) are dicts with `relationship`:
  - "NEW": trip_id (not in the feed), route_id, start_date and calls, a list
    of (stop_id, stop_sequence, what) with what a dict of departure_time,
    arrival_time and assigned_stop_id;
  - "DUPLICATED": trip_id, start_date, stops as above, and new_trip_id,
    new_start_date, new_start_secs (TripProperties);
  - "REPLACEMENT": trip_id, start_date and stops as above.
"""
import collections

import oracle

# What realtime says of one event: delay (None: no prediction), canceled, skipped.
Said = collections.namedtuple("Said", "delay canceled skipped")
NOTHING = Said(None, False, False)
# A prediction further than this from the schedule leaves the row at its scheduled time.
MOVES_AT_MOST = 86400


def _delay(what, name, scheduled):
    """The delay an update's departure or arrival states, or None."""
    if f"{name}_time" in what:
        return what[f"{name}_time"] - scheduled
    return what.get(f"{name}_delay")


class Predictions:
    """What a list of trip updates predicts, per (trip index, service date,
    stop_sequence) and event kind."""

    def __init__(self, feed, updates):
        self.feed = feed
        self.said = {}          # (trip, date, seq, arrival) -> Said
        self.instances = set()
        self.hidden = set()     # (trip, date) of DELETED instances: no rows at all
        self.moved = {}         # (trip, date, stop_sequence) -> the stop a platform change serves it at
        self.moved_to = collections.defaultdict(list)   # that stop -> [(trip, date, seq, scheduled stop)]
        self.late = collections.Counter()    # stop_id -> the largest delay there (>= 0)
        self.early = collections.Counter()   # stop_id -> the largest early running (>= 0)
        self.added = collections.defaultdict(list)   # served stop -> [Event at its scheduled stop]
        self.added_routes = {}  # realtime-only trip_id -> route_id
        self.added_moved = 0    # realtime-only events served at an assigned stop
        self.added_said = {}    # (trip_id, date, seq, arrival) -> Said of a realtime-only row (skipped calls)
        for u in updates:
            relationship = u.get("relationship")
            if relationship == "NEW":
                self._new_trip(u)
                continue
            trip = feed.trip_index.get(u["trip_id"])
            day = u["start_date"]
            if relationship == "DUPLICATED":
                if trip is not None and trip in feed.trip_times and u["new_trip_id"] not in feed.trip_index:
                    self._duplicate(trip, u)
                continue        # the original instance is untouched
            if relationship == "REPLACEMENT":
                if trip is None or trip not in feed.trip_times or not feed.runs_on(trip, day):
                    continue
                if (trip, day) in self.instances:
                    continue
                self.instances.add((trip, day))
                self.hidden.add((trip, day))
                self._replacement(trip, day, u)
                continue
            if trip is None or trip not in feed.trip_times or not feed.runs_on(trip, day):
                continue
            if (trip, day) in self.instances:
                continue        # a second update of an instance: the first stays
            self.instances.add((trip, day))
            self._propagate(trip, day, u)
            if not u.get("deleted"):
                self._assign(trip, day, u)

    def _assign(self, trip, day, u):
        """R7: a stop time's assigned_stop_id (of the dataset, and not its own stop) moves it."""
        seqs, _, _, stops = self.feed.trip_times[trip]
        where = dict(zip(seqs, stops))
        for seq, what in u["stops"]:
            assigned = what.get("assigned_stop_id")
            if assigned is None or seq not in where or assigned not in self.feed.stops or assigned == where[seq]:
                continue
            self.moved[(trip, day, seq)] = assigned
            self.moved_to[assigned].append((trip, day, seq, where[seq]))

    def _note(self, trip, day, seq, stop_id, arrival, said):
        self.said[(trip, day, seq, arrival)] = said
        if said.delay is not None:
            self.late[stop_id] = max(self.late[stop_id], min(said.delay, MOVES_AT_MOST))
            self.early[stop_id] = max(self.early[stop_id], min(-said.delay, MOVES_AT_MOST))

    def _propagate(self, trip, day, u):
        seqs, arrs, deps, stops = self.feed.trip_times[trip]
        if u.get("deleted"):
            self.hidden.add((trip, day))
            return
        if u.get("canceled"):
            for seq, stop_id in zip(seqs, stops):
                for arrival in (False, True):
                    self._note(trip, day, seq, stop_id, arrival, Said(None, True, False))
            return
        for (seq, arrival, stop_id), said in self._predict(seqs, arrs, deps, stops, day, u).items():
            self._note(trip, day, seq, stop_id, arrival, said)

    def _predict(self, seqs, arrs, deps, stops, day, u):
        """R2-R4 over one instance's stop times (GTFS seconds on `day`):
        {(stop_sequence, arrival, stop_id): Said} for every event with a word."""
        base = self.feed.service_day_base(day)
        out = {}
        given = dict(u["stops"])
        carry = None            # the delay carried to stops without an update
        last = None             # the last predicted departure
        for seq, arr, dep, stop_id in zip(seqs, arrs, deps, stops):
            sched_dep, sched_arr = base + dep, base + arr
            what = given.get(seq)
            if what is not None:
                if what.get("skipped"):
                    for arrival in (False, True):
                        out[(seq, arrival, stop_id)] = Said(None, True, True)
                    continue    # the delay carries past a skipped stop
                d_dep = _delay(what, "departure", sched_dep)
                if d_dep is None:
                    d_dep = _delay(what, "arrival", sched_arr)
                d_arr = _delay(what, "arrival", sched_arr)
                if d_arr is None:
                    d_arr = _delay(what, "departure", sched_dep)
                if d_dep is not None:
                    out[(seq, False, stop_id)] = Said(d_dep, False, False)
                    out[(seq, True, stop_id)] = Said(d_arr, False, False)
                    carry, last = d_dep, sched_dep + d_dep
                    continue
            if carry is None:
                continue
            # carried: no event earlier than the departure before it
            arrives = max(sched_arr + carry, last)
            departs = max(sched_dep + carry, last)
            out[(seq, True, stop_id)] = Said(arrives - sched_arr, False, False)
            out[(seq, False, stop_id)] = Said(departs - sched_dep, False, False)
            last = departs
        return out

    # ------------------------------------------------------------ realtime-only trips

    def _assigned(self, what, stop_id):
        """R7 for a call: the stop it is served at."""
        assigned = what.get("assigned_stop_id")
        return assigned if assigned in self.feed.stops else stop_id

    def _add_trip(self, trip_id, route_id, day, calls):
        """R8: calls ((stop_id, served_at, stop_sequence, arrival, departure,
        skipped), in order) become a departure at each but the last and an
        arrival at each but the first, served where the call is (named by its
        own stop); a skipped call's rows are canceled. A trip departing from
        no call but skipped ones is not shown."""
        calls = [c if len(c) == 6 else c + (False,) for c in calls]
        if not any(not c[5] for c in calls[:-1]):
            return
        self.added_routes[trip_id] = route_id
        short = self.feed.routes[route_id]
        base = self.feed.service_day_base(day)
        for i, (stop_id, served, seq, arr, dep, skipped) in enumerate(calls):
            for arrival, when in ((False, dep if i + 1 < len(calls) else None), (True, arr if i else None)):
                if when is None:
                    continue
                if skipped:
                    self.added_said[(trip_id, day, seq, arrival)] = Said(None, True, True)
                kind = "arrival" if arrival else "departure"
                last = i + 1 == len(calls)
                self.added[served].append((oracle.Event(when, stop_id, short, trip_id, day, when - base, seq,
                                                 self.feed.utc_offset(when), 0.0, arrival), kind, last))
                self.added_moved += served != stop_id

    def _new_trip(self, u):
        """R8: a NEW trip calls where its updates say, at their times."""
        if u["trip_id"] in self.feed.trip_index or u["route_id"] not in self.feed.routes:
            return
        calls = []
        for stop_id, seq, what in u["calls"]:
            dep, arr = what.get("departure_time"), what.get("arrival_time")
            dep, arr = (dep if dep is not None else arr), (arr if arr is not None else dep)
            if stop_id in self.feed.stops and dep is not None:
                calls.append((stop_id, self._assigned(what, stop_id), seq, arr, dep))
        self._add_trip(u["trip_id"], u["route_id"], u["start_date"], calls)

    def _duplicate(self, trip, u):
        """R9: a copy of the trip on new_start_date, its times shifted so that it
        leaves at new_start_secs, the update's predictions (R2-R4) over them;
        a skipped stop is a skipped call at its shifted time. The copy's
        platform changes are its own."""
        seqs, arrs, deps, stops = self.feed.trip_times[trip]
        shift = u["new_start_secs"] - deps[0]
        arrs, deps = [a + shift for a in arrs], [d + shift for d in deps]
        day = u["new_start_date"]
        base = self.feed.service_day_base(day)
        said = self._predict(seqs, arrs, deps, stops, day, u)
        given = dict(u["stops"])
        calls = []
        for seq, arr, dep, stop_id in zip(seqs, arrs, deps, stops):
            d, a = said.get((seq, False, stop_id), NOTHING), said.get((seq, True, stop_id), NOTHING)
            calls.append((stop_id, self._assigned(given.get(seq, {}), stop_id), seq,
                          base + arr + (a.delay or 0), base + dep + (d.delay or 0), d.skipped))
        self._add_trip(u["new_trip_id"], self.feed.trip_route[trip], day, calls)

    def _replacement(self, trip, day, u):
        """R10: the instance is hidden; a trip of the same id calls at the
        scheduled stop of each update's stop_sequence, at its time, else the
        scheduled time plus its delay; a NO_DATA update's call is at the
        scheduled time; a skipped one is a skipped call (canceled rows) at
        its time, else the scheduled one. Platform changes apply to each."""
        seqs, arrs, deps, stops = self.feed.trip_times[trip]
        base = self.feed.service_day_base(day)
        where = {seq: (arr, dep, stop_id) for seq, arr, dep, stop_id in zip(seqs, arrs, deps, stops)}
        calls = []
        for seq, what in u["stops"]:
            if seq not in where:
                continue
            arr_s, dep_s, stop_id = where[seq]
            dep = arr = None
            if not what.get("no_data"):
                dep = what.get("departure_time")
                if dep is None and "departure_delay" in what:
                    dep = base + dep_s + what["departure_delay"]
                arr = what.get("arrival_time")
                if arr is None and "arrival_delay" in what:
                    arr = base + arr_s + what["arrival_delay"]
            if (what.get("no_data") or what.get("skipped")) and dep is None and arr is None:
                dep, arr = base + dep_s, base + arr_s
            dep, arr = (dep if dep is not None else arr), (arr if arr is not None else dep)
            if dep is not None:
                calls.append((stop_id, self._assigned(what, stop_id), seq, arr, dep, bool(what.get("skipped"))))
        self._add_trip(self.feed.trip_ids[trip], self.feed.trip_route[trip], day, calls)

    def added_events(self, targets, t_from, window_s, kind="departures"):
        """R8-R10: the realtime-only trips' events of `kind` at their own
        instants in [t_from, t_from + window_s), served at the stops `targets`
        ((stop_id, distance) pairs), with that stop's distance."""
        out = []
        for served, distance in targets:
            for e, what, last in self.added.get(served, ()):
                wanted = (what == "departure" if kind == "departures" else what == "arrival"
                          if kind == "arrivals" else what == "departure" or last)
                if wanted and t_from <= e.instant < t_from + window_s:
                    out.append(e._replace(distance_m=distance))
        return out

    def route_of(self, trip_id):
        """The route_id of a row's trip, of the timetable or realtime-only."""
        trip = self.feed.trip_index.get(trip_id)
        if trip_id in self.added_routes and (trip is None or self.feed.trip_ids[trip] == trip_id):
            return self.added_routes[trip_id]
        return self.feed.trip_route[trip]

    def of(self, e):
        """What realtime says of an oracle Event."""
        trip = self.feed.trip_index[e.trip_id]
        return self.said.get((trip, e.service_date, e.stop_sequence, e.arrival), NOTHING)

    def predicted_instant(self, e):
        """The instant a board by predicted time puts the event at: the
        prediction where there is one, else the schedule (canceled trips and
        skipped stops have none)."""
        said = self.of(e)
        if said.delay is None or abs(said.delay) > MOVES_AT_MOST:
            return e.instant
        return e.instant + said.delay

    # ------------------------------------------------------------ boards

    def visible(self, events):
        """The events of instances not DELETED, and not moved away by a
        platform change (a board by schedule shows these where scheduled)."""
        out = []
        for e in events:
            trip = self.feed.trip_index[e.trip_id]
            if (trip, e.service_date) in self.hidden or (trip, e.service_date, e.stop_sequence) in self.moved:
                continue
            out.append(e)
        return out

    def moved_events(self, targets, t_from, window_s, kind="departures"):
        """R7: the events of `kind` scheduled in [t_from, t_from + window_s)
        that platform changes serve at the stops `targets` ((stop_id,
        distance) pairs): each as at its scheduled stop (stop_id), with the
        assigned stop's distance."""
        out = []
        for stop_id, distance in targets:
            for trip, day, seq, scheduled in self.moved_to.get(stop_id, ()):
                trip_id = self.feed.trip_ids[trip]
                out += [e for e in self.feed._events_at(scheduled, t_from, window_s, distance, kind)
                        if e.trip_id == trip_id and e.service_date == day and e.stop_sequence == seq]
        return out

    def stop_targets(self, stop_id):
        stop = self.feed.stops[stop_id]
        return [(s, 0.0) for s in (self.feed.children.get(stop_id, []) if stop[3] == 1 else [stop_id])]

    def by_schedule(self, events, targets, t_from, window_s, kind="departures"):
        """A board by schedule: the scheduled `events` of [t_from, t_from +
        window_s) at `targets` less the hidden and moved ones, plus those
        moved there."""
        out = (self.visible(events) + self.moved_events(targets, t_from, window_s, kind) +
               self.added_events(targets, t_from, window_s, kind))
        out.sort(key=oracle.order_key)
        return out

    def _by_prediction(self, events, t_from, window_s, served=()):
        out = []
        for e in self.visible(events) + list(served):
            at = self.predicted_instant(e)
            if t_from <= at < t_from + window_s:
                out.append(e._replace(instant=at, utc_offset=self.feed.utc_offset(at)))
        out.sort(key=oracle.order_key)
        return out

    def _slack(self, stop_ids):
        return (max((self.late[s] for s in stop_ids), default=0),
                max((self.early[s] for s in stop_ids), default=0))

    def stop_events(self, stop_id, t_from, window_s, kind="departures"):
        """Feed.stop_events by predicted time: every event predicted in
        [t_from, t_from + window_s), as Events whose instant (and utc_offset)
        is the predicted one, in contract order."""
        stop = self.feed.stops[stop_id]
        targets = self.feed.children.get(stop_id, []) if stop[3] == 1 else [stop_id]
        late, early = self._slack(targets)
        wide = self.feed.stop_events(stop_id, t_from - late, window_s + late + early, kind)
        served = self.moved_events(self.stop_targets(stop_id), t_from - MOVES_AT_MOST,
                                   window_s + 2 * MOVES_AT_MOST, kind)
        out = self._by_prediction(wide, t_from, window_s, served)
        return self._with_added(out, self.stop_targets(stop_id), t_from, window_s, kind)

    def _with_added(self, events, targets, t_from, window_s, kind):
        out = events + self.added_events(targets, t_from, window_s, kind)
        out.sort(key=oracle.order_key)
        return out

    def nearby_departures(self, lat, lon, radius_m, t_from, window_s, kind="departures"):
        near = [s for s, _ in self.feed.nearby_stops(lat, lon, radius_m)]
        late, early = self._slack(near)
        wide = self.feed.nearby_departures(lat, lon, radius_m, t_from - late, window_s + late + early, kind)
        targets = self.feed.nearby_stops(lat, lon, radius_m)
        served = self.moved_events(targets, t_from - MOVES_AT_MOST, window_s + 2 * MOVES_AT_MOST, kind)
        out = self._by_prediction(wide, t_from, window_s, served)
        return self._with_added(out, targets, t_from, window_s, kind)
