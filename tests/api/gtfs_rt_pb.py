"""GTFS-Realtime feeds built with Google's protobuf package, from classes
protoc compiles out of proto/gtfs-realtime.proto: an encoder that shares
nothing with transitd's decoder (protobuf-c), for the tests that must not
trust the project to check itself (issue #26). `pb2()` compiles once per
test session into $TRANSITD_TEST_TMP and skips (fails under CI=true, where
.ci/deps test installs protoc and python3-protobuf) when either is missing.
"""
import importlib
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from http_server import TMP

_module = None


def pb2():
    """The gtfs_realtime_pb2 module, or skip."""
    global _module
    if _module is not None:
        return _module
    protoc = shutil.which("protoc")
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        protoc = None
    if not protoc:
        if os.environ.get("CI") == "true":
            pytest.fail("protoc or the protobuf Python package is missing and CI=true (see .ci/deps test)")
        pytest.skip("protoc or the protobuf Python package is missing (.ci/deps test installs them)")
    out = TMP / "gtfs_rt_pb2"
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([protoc, f"--python_out={out}", f"-I{ROOT / 'proto'}", "gtfs-realtime.proto"],
                   check=True, capture_output=True, timeout=60)
    sys.path.insert(0, str(out))
    try:
        _module = importlib.import_module("gtfs_realtime_pb2")
    finally:
        sys.path.remove(str(out))
    return _module


def new_feed(timestamp=0):
    """An empty FeedMessage (FULL_DATASET, version 2.0)."""
    g = pb2()
    m = g.FeedMessage()
    m.header.gtfs_realtime_version = "2.0"
    m.header.timestamp = timestamp
    return m


def add_trip_update(message, entity_id, trip_id, start_date=None, stops=(), canceled=False, delay=None):
    """Appends a TripUpdate. stops: (stop_sequence, what) pairs, what being a
    dict with any of departure_delay, arrival_delay, departure_time,
    arrival_time (Unix seconds), skipped=True, no_data=True (a NO_DATA
    update) and assigned_stop_id (a platform change:
    StopTimeProperties.assigned_stop_id)."""
    g = pb2()
    e = message.entity.add()
    e.id = entity_id
    tu = e.trip_update
    tu.trip.trip_id = trip_id
    if start_date:
        tu.trip.start_date = start_date
    if canceled:
        tu.trip.schedule_relationship = g.TripDescriptor.CANCELED
    if delay is not None:
        tu.delay = delay
    for seq, what in stops:
        u = tu.stop_time_update.add()
        u.stop_sequence = seq
        if what.get("skipped"):
            u.schedule_relationship = g.TripUpdate.StopTimeUpdate.SKIPPED
        if what.get("no_data"):
            u.schedule_relationship = g.TripUpdate.StopTimeUpdate.NO_DATA
        if "departure_delay" in what:
            u.departure.delay = what["departure_delay"]
        if "departure_time" in what:
            u.departure.time = what["departure_time"]
        if "arrival_delay" in what:
            u.arrival.delay = what["arrival_delay"]
        if "arrival_time" in what:
            u.arrival.time = what["arrival_time"]
        if "assigned_stop_id" in what:
            u.stop_time_properties.assigned_stop_id = what["assigned_stop_id"]
    return e
