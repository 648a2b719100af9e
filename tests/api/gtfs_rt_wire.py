"""GTFS-Realtime protobuf fixtures written by hand: the few wire-format
rules (varints, length-delimited fields) the tests need to build feeds,
trip updates and alerts byte by byte, without a protobuf package. Used by
test_realtime.py and tests/fuzz/make_seeds.py.
"""


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, value):
    return varint(num << 3) + varint(value)


def field_bytes(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(num << 3 | 2) + varint(len(data)) + data


def trip_update(entity_id, trip_id, start_date, stop_updates=(), relationship=None):
    trip = field_bytes(1, trip_id) + field_bytes(3, start_date)
    if relationship is not None:
        trip += field_varint(4, relationship)
    tu = field_bytes(1, trip)
    for seq, delay in stop_updates:
        event = field_varint(1, delay)                      # StopTimeEvent.delay
        tu += field_bytes(2, field_varint(1, seq) + field_bytes(3, event))
    return field_bytes(2, field_bytes(1, entity_id) + field_bytes(3, tu))


def alert_entity(entity_id, stop_id, text):
    translation = field_bytes(1, text) + field_bytes(2, "en")
    alert = field_bytes(5, field_bytes(5, stop_id)) + field_varint(7, 4)   # DETOUR
    alert += field_bytes(10, field_bytes(1, translation))
    return field_bytes(2, field_bytes(1, entity_id) + field_bytes(5, alert))


def feed(*entities, timestamp=1793000000):
    header = field_bytes(1, "2.0") + field_varint(3, timestamp)
    return field_bytes(1, header) + b"".join(entities)


def added_trip(entity_id, trip_id, route_id, start_date, stops):
    """An ADDED trip (no schedule): stops are (stop_id, Unix time) pairs,
    each time a departure but the last, an arrival where the trip ends."""
    trip = field_bytes(1, trip_id) if trip_id else b""
    trip += field_bytes(3, start_date) + field_varint(4, 1) + field_bytes(5, route_id)
    tu = field_bytes(1, trip)
    for i, (stop_id, when) in enumerate(stops):
        event = field_bytes(2 if i == len(stops) - 1 else 3, field_varint(2, when))
        tu += field_bytes(2, field_bytes(4, stop_id) + event)
    return field_bytes(2, field_bytes(1, entity_id) + field_bytes(3, tu))


def field_float(num, value):
    import struct
    return varint(num << 3 | 5) + struct.pack("<f", value)


def vehicle_entity(entity_id, vehicle_id, trip_id=None, start_date=None, lat=40.001, lon=-74.0,
                   timestamp=1793624400, occupancy=None, stop_id=None, status=None, bearing=None,
                   start_time=None):
    """A VehiclePosition entity: its VehicleDescriptor id, the trip it serves,
    a position, a timestamp and optionally occupancy_status and a current stop."""
    vp = b""
    if trip_id:
        trip = field_bytes(1, trip_id)
        if start_date:
            trip += field_bytes(3, start_date)
        if start_time:
            trip += field_bytes(2, start_time)
        vp += field_bytes(1, trip)
    position = field_float(1, lat) + field_float(2, lon)
    if bearing is not None:
        position += field_float(3, bearing)
    vp += field_bytes(2, position)
    if status is not None:
        vp += field_varint(4, status)
    vp += field_varint(5, timestamp)
    if stop_id:
        vp += field_bytes(7, stop_id)
    vp += field_bytes(8, field_bytes(1, vehicle_id))
    if occupancy is not None:
        vp += field_varint(9, occupancy)
    return field_bytes(2, field_bytes(1, entity_id) + field_bytes(4, vp))
