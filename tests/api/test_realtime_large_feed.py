"""A large GTFS-Realtime feed taken in while the server answers (issue #26):
the overlay is built off to the side and published by a pointer swap, so a
board asked while a feed of 120,000 entities is fetched, decoded and applied
answers at once, with the previous overlay's state, until the new one is
swapped in; never an error, never a mix, never back to the old state after.

The feeds are built with the protobuf package (gtfs_rt_pb.py), not by the
project's code; the 120,000 copies of one entity are its serialized bytes
repeated under new entity ids (tests/api/gtfs_rt_wire.py's field_bytes).
"""
import os
import time

import requests

from gtfs_rt_pb import add_trip_update, new_feed
from gtfs_rt_wire import field_bytes
from http_server import Server
from test_realtime import MONDAY, departures, tiny_data, wait_for  # noqa: F401 (a fixture)

COPIES = 120_000


def t1_delay(server):
    rows = [d for d in departures(server, "S2", MONDAY) if d["trip_id"] == "T1"]
    assert len(rows) == 1
    return rows[0].get("delay_s")


def large_feed(timestamp, delay):
    """T1 delayed `delay` s at stop 2, then COPIES more updates of it (the
    overlay keeps the first): bytes of about 4 MB that take a while to apply."""
    head = new_feed(timestamp)
    add_trip_update(head, "first", "T1", "20261102", stops=[(2, {"departure_delay": delay})])
    one = new_feed(timestamp)
    add_trip_update(one, "x", "T1", "20261102", stops=[(2, {"departure_delay": delay})])
    trip_update = one.entity[0].trip_update.SerializeToString()
    copies = b"".join(field_bytes(2, field_bytes(1, f"c{i}") + field_bytes(3, trip_update))
                      for i in range(COPIES))
    return head.SerializeToString() + copies


def test_boards_answer_from_the_old_overlay_while_a_large_feed_is_applied(tiny_data):  # noqa: F811
    path = tiny_data / "rt-large.pb"
    small = new_feed(1793000000)
    add_trip_update(small, "e1", "T1", "20261102", stops=[(2, {"departure_delay": 120})])
    path.write_bytes(small.SerializeToString())
    big = large_feed(1793000100, 300)
    with Server(tiny_data / "data", "--gtfs-rt", str(path), "--rt-interval", "1") as s:
        assert wait_for(lambda: t1_delay(s) == 120)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(big)
        os.replace(tmp, path)   # the poller sees the whole file or the old one
        seen, slowest = [], 0.0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            delay = t1_delay(s)
            metrics = requests.get(s.url("/metrics"), timeout=10)
            slowest = max(slowest, time.monotonic() - t0)
            assert metrics.status_code == 200
            seen.append(delay)
            if delay == 300:
                break
        assert seen and seen[-1] == 300, f"the large feed was not applied within 60 s: {seen[-5:]}"
        # the old state until the swap, the new one from it: nothing else, never back
        swap = seen.index(300)
        assert set(seen[:swap]) <= {120} and set(seen[swap:]) == {300}
        # answered while the file was read, decoded and applied: from the old overlay
        assert swap >= 1
        assert slowest < 10, f"a board and /metrics took {slowest:.1f} s together"
        for _ in range(5):
            assert t1_delay(s) == 300
