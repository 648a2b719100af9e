"""Writes the seed inputs of the GTFS-Realtime fuzz target into a corpus
directory: small valid feeds (trip updates with delays, SKIPPED and
NO_DATA stops, a CANCELED trip, an alert), so mutations start from inputs
that reach deep into the decoder.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "api"))
from gtfs_rt_wire import alert_entity, feed, field_bytes, field_varint, trip_update  # noqa: E402

out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
skipped = field_bytes(2, field_varint(1, 4) + field_varint(5, 1))
no_data = field_bytes(2, field_varint(1, 5) + field_varint(5, 2))
seeds = {
    "empty": feed(),
    "delays": feed(trip_update("e1", "T1", "20261102", [(1, 60), (3, -30)])),
    "canceled": feed(trip_update("e2", "T2", "20261102", relationship=3)),
    "alert": feed(alert_entity("a1", "S2", "Detour")),
    "mixed": feed(trip_update("e1", "T1", "20261102", [(2, 120)]), alert_entity("a2", "S1", "x"),
                  trip_update("e3", "T3", "20261103", [(1, 5)]) + field_bytes(2, skipped + no_data)),
}
for name, data in seeds.items():
    (out / f"seed-{name}.pb").write_bytes(data)
