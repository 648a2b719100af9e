"""Writes the seed inputs of the GTFS-Realtime fuzz target into a corpus
directory: small valid feeds (trip updates with delays, SKIPPED and
NO_DATA stops, a CANCELED trip, ADDED trips, an alert; NEW, DUPLICATED,
REPLACEMENT and DELETED trips with TripProperties, a platform change by
StopTimeProperties.assigned_stop_id (to a platform, a station's other
platform, with NO_DATA, to an unknown stop; on NEW, DUPLICATED and
REPLACEMENT trips too) and TripProperties of a timetable
trip; vehicle positions alone, mixed with trip updates, and with
multi_carriage_details; unknown fields of every wire type, a header twice and
last, cuts inside an entity, a varint and a length, an overlong varint), so
mutations start from inputs that reach deep into the decoder (its top-level
walk too) and the overlay. With --wire it writes only the top-level walk's
seeds (tests/fuzz/seeds/rt_feed_wire/ holds them, for fuzz_rt_feed_wire).
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "api"))
from gtfs_rt_wire import (added_trip, alert_entity, feed, field_bytes, field_varint,  # noqa: E402
                          trip_update, varint, vehicle_entity)

wire_only = "--wire" in sys.argv[1:]
out = pathlib.Path([a for a in sys.argv[1:] if a != "--wire"][0])
out.mkdir(parents=True, exist_ok=True)
skipped = field_bytes(2, field_varint(1, 4) + field_varint(5, 1))
no_data = field_bytes(2, field_varint(1, 5) + field_varint(5, 2))
# TripProperties (TripUpdate field 6): trip_id 1, start_date 2, start_time 3,
# shape_id 4, trip_headsign 5, trip_short_name 6
duplicate_props = field_bytes(6, field_bytes(1, "D1") + field_bytes(2, "20261102") + field_bytes(3, "09:30:00") +
                              field_bytes(5, "Copy") + field_bytes(6, "D"))
new_props = field_bytes(6, field_bytes(4, "SH1") + field_bytes(5, "Extra") + field_bytes(6, "X"))



def _append(entity, extra):
    from gtfs_rt_wire import varint
    # strip the two length-delimited headers (FeedMessage.entity, FeedEntity.trip_update)
    def split(b):
        i = 1
        n = 0
        shift = 0
        while True:
            c = b[i]
            n |= (c & 0x7F) << shift
            shift += 7
            i += 1
            if not c & 0x80:
                return b[:1], b[i:i + n]
    _, body = split(entity)
    # body = id field + trip_update field (the last field)
    id_len = body[1]
    id_field, tu_field = body[:2 + id_len], body[2 + id_len:]
    _, tu = split(tu_field)
    return field_bytes(2, id_field + field_bytes(3, tu + extra))


# assigned_stop_id: StopTimeUpdate field 6 { field 1 }
platform_change = field_bytes(2, field_varint(1, 2) + field_bytes(3, field_varint(1, 30)) +
                              field_bytes(6, field_bytes(1, "S3")))
# assigned_stop_id with NO_DATA at T1's first stop (to S1), a delayed one to a stop the dataset lacks,
# and T3's last stop (an arrival only) moved from P1 to S4
platform_more = (field_bytes(2, field_varint(1, 1) + field_varint(5, 2) + field_bytes(6, field_bytes(1, "S1"))) +
                 field_bytes(2, field_varint(1, 3) + field_bytes(3, field_varint(1, 60)) +
                             field_bytes(6, field_bytes(1, "NOPE"))))
platform_last = field_bytes(2, field_varint(1, 3) + field_bytes(2, field_varint(1, 90)) +
                            field_bytes(6, field_bytes(1, "S4")))
trip_props = field_bytes(6, field_bytes(4, "SH9") + field_bytes(5, "Short") + field_bytes(6, "S"))
# a NEW trip's call at S3 at 08:25 served at S4
platform_new_call = field_bytes(2, field_bytes(4, "S3") + field_bytes(2, field_varint(2, 1793625900)) +
                                field_bytes(6, field_bytes(1, "S4")))


def carriages(entity, *details):
    """A vehicle entity (vehicle_entity) with multi_carriage_details (VehiclePosition field 11:
    id 1, label 2, occupancy_status 3, occupancy_percentage 4, carriage_sequence 5) appended."""
    extra = b"".join(field_bytes(11, field_bytes(1, cid) + field_bytes(2, label) + field_varint(3, occ) +
                                 field_varint(4, pct) + field_varint(5, seq))
                     for cid, label, occ, pct, seq in details)
    # entity = field 2 { id (field 1), vehicle (field 4) { ... } }: rebuild with the vehicle grown
    def split(b):
        i, n, shift = 1, 0, 0
        while True:
            c = b[i]
            n |= (c & 0x7F) << shift
            shift += 7
            i += 1
            if not c & 0x80:
                return b[i:i + n]
    body = split(entity)
    id_len = body[1]
    id_field, vehicle_field = body[:2 + id_len], body[2 + id_len:]
    return field_bytes(2, id_field + field_bytes(4, split(vehicle_field) + extra))


seeds = {
    "empty": feed(),
    "delays": feed(trip_update("e1", "T1", "20261102", [(1, 60), (3, -30)])),
    "canceled": feed(trip_update("e2", "T2", "20261102", relationship=3)),
    "alert": feed(alert_entity("a1", "S2", "Detour")),
    # Monday 2026-11-02 08:05, 08:15, 08:25 EST
    "added": feed(added_trip("x1", "X1", "R1", "20261102",
                             [("P1", 1793624700), ("S2", 1793625300), ("S3", 1793625900)]),
                  added_trip("x2", "", "R2", "20261102", [("S1", 1793624700), ("S2", 1793625000)]),
                  trip_update("e1", "T1", "20261102", [(2, 120)])),
    "mixed": feed(trip_update("e1", "T1", "20261102", [(2, 120)]), alert_entity("a2", "S1", "x"),
                  trip_update("e3", "T3", "20261103", [(1, 5)]) + field_bytes(2, skipped + no_data)),
    "vehicles": feed(vehicle_entity("v1", "BUS1", "T1", "20261102", occupancy=2, stop_id="S2", status=1,
                                    bearing=90.0),
                     vehicle_entity("v2", "BUS2", "F1", "20261102", start_time="07:20:00", lat=40.0005),
                     vehicle_entity("v3", "BUS3", lat=41.0, lon=-75.0),
                     vehicle_entity("v4", "BUS1", "T2", None, timestamp=1793624000), timestamp=1793624400),
    "vehicles-mixed": feed(trip_update("e1", "T1", "20261102", [(2, 120)]),
                           vehicle_entity("v1", "BUS1", "T1", "20261102", occupancy=5),
                           alert_entity("a1", "S2", "Detour"), timestamp=1793624400),
    "new": feed(_append(added_trip("n1", "X1", "R1", "20261102", [("P1", 1793624700), ("S2", 1793625300)]),
                        new_props).replace(field_varint(4, 1), field_varint(4, 8), 1)),
    "duplicated": feed(_append(trip_update("d1", "T1", "20261102", [(2, 60)], relationship=6), duplicate_props)),
    "replacement": feed(trip_update("r1", "T3", "20261102", [(1, 300), (3, 120)], relationship=5),
                        trip_update("del", "T1", "20261102", relationship=7)),
    "platform": feed(_append(trip_update("p1", "T1", "20261102", [(1, 0)]), platform_change)),
    "platform-more": feed(_append(trip_update("p2", "T1", "20261102", []), platform_more),
                          _append(trip_update("p3", "T3", "20261102", []), platform_last)),
    # platform changes of realtime-only trips: a NEW trip's call, a DUPLICATED copy's, a REPLACEMENT's
    "platform-realtime-only": feed(
        _append(added_trip("n2", "X2", "R1", "20261102", [("P1", 1793624700), ("S2", 1793625300)]),
                platform_new_call).replace(field_varint(4, 1), field_varint(4, 8), 1),
        _append(trip_update("d2", "T1", "20261102", [], relationship=6), duplicate_props + platform_change),
        _append(trip_update("r2", "T3", "20261102", [(1, 300)], relationship=5), platform_last)),
    "trip-properties": feed(_append(trip_update("tp", "T1", "20261102", [(2, 30)]), trip_props),
                            vehicle_entity("v1", "BUS1", "T1", "20261102", occupancy=1)),
    "carriages": feed(carriages(vehicle_entity("v1", "TRAIN1", "T1", "20261102", occupancy=2),
                                ("C1", "front", 5, 98, 1), ("C2", "rear", 1, 20, 2)),
                      timestamp=1793624400),
}
# The streaming decode's top-level walk (rt_feed_wire.c): unknown fields of
# each wire type between and inside the entities, a header given twice and
# after the entities, and cuts of a feed inside an entity, inside a varint
# and inside a length.
_unknown = field_varint(40, 2**64 - 1) + varint(41 << 3 | 1) + b"12345678" + field_bytes(42, "x") + \
    varint(43 << 3 | 5) + b"1234"
_delays = seeds["delays"]
seeds.update({
    "unknown-fields": _unknown + feed(trip_update("e1", "T1", "20261102", [(1, 60)]) + _unknown,
                                      _append(trip_update("e3", "T3", "20261102", [(1, 5)]), _unknown)),
    "header-last": trip_update("e1", "T1", "20261102", [(2, 90)]) + field_bytes(1, field_bytes(1, "1.0")) +
                   field_bytes(1, field_bytes(1, "2.0") + field_varint(3, 1793624400)),
    "truncated-entity": _delays[:len(_delays) - 5],
    "truncated-varint": feed() + varint(44 << 3) + b"\xff\xff",
    "truncated-length": feed() + varint(2 << 3 | 2) + b"\x80",
    "overlong-varint": feed() + varint(44 << 3) + b"\xff" * 10 + b"\x01",
})
WIRE = ("delays", "mixed", "vehicles-mixed", "unknown-fields", "header-last", "truncated-entity",
        "truncated-varint", "truncated-length", "overlong-varint")
for name, data in seeds.items():
    if wire_only and name not in WIRE:
        continue
    (out / f"seed-{name}.pb").write_bytes(data)
