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
arrival_time (Unix seconds), skipped=True and assigned_stop_id (a platform
change: the call is served at that stop instead, rule R7), in increasing
stop_sequence.
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
        for u in updates:
            trip = feed.trip_index.get(u["trip_id"])
            day = u["start_date"]
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
        base = self.feed.service_day_base(day)
        if u.get("deleted"):
            self.hidden.add((trip, day))
            return
        if u.get("canceled"):
            for seq, stop_id in zip(seqs, stops):
                for arrival in (False, True):
                    self._note(trip, day, seq, stop_id, arrival, Said(None, True, False))
            return
        given = dict(u["stops"])
        carry = None            # the delay carried to stops without an update
        last = None             # the last predicted departure
        for seq, arr, dep, stop_id in zip(seqs, arrs, deps, stops):
            sched_dep, sched_arr = base + dep, base + arr
            what = given.get(seq)
            if what is not None:
                if what.get("skipped"):
                    for arrival in (False, True):
                        self._note(trip, day, seq, stop_id, arrival, Said(None, True, True))
                    continue    # the delay carries past a skipped stop
                d_dep = _delay(what, "departure", sched_dep)
                if d_dep is None:
                    d_dep = _delay(what, "arrival", sched_arr)
                d_arr = _delay(what, "arrival", sched_arr)
                if d_arr is None:
                    d_arr = _delay(what, "departure", sched_dep)
                if d_dep is not None:
                    self._note(trip, day, seq, stop_id, False, Said(d_dep, False, False))
                    self._note(trip, day, seq, stop_id, True, Said(d_arr, False, False))
                    carry, last = d_dep, sched_dep + d_dep
                    continue
            if carry is None:
                continue
            # carried: no event earlier than the departure before it
            arrives = max(sched_arr + carry, last)
            departs = max(sched_dep + carry, last)
            self._note(trip, day, seq, stop_id, True, Said(arrives - sched_arr, False, False))
            self._note(trip, day, seq, stop_id, False, Said(departs - sched_dep, False, False))
            last = departs

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
        out = self.visible(events) + self.moved_events(targets, t_from, window_s, kind)
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
        return self._by_prediction(wide, t_from, window_s, served)

    def nearby_departures(self, lat, lon, radius_m, t_from, window_s, kind="departures"):
        near = [s for s, _ in self.feed.nearby_stops(lat, lon, radius_m)]
        late, early = self._slack(near)
        wide = self.feed.nearby_departures(lat, lon, radius_m, t_from - late, window_s + late + early, kind)
        served = self.moved_events(self.feed.nearby_stops(lat, lon, radius_m), t_from - MOVES_AT_MOST,
                                   window_s + 2 * MOVES_AT_MOST, kind)
        return self._by_prediction(wide, t_from, window_s, served)
