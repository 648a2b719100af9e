"""Calls every GET operation of docs/openapi.json through a client that
openapi-python-client generated from it, against a live server.

Why it exists: the spec is meant to be exact enough to generate clients from.
test_generated_client.py generates the client at test time (nothing generated
is committed) and runs this file with the interpreter that has the generator's
dependencies (httpx, attrs), not the one running pytest. For each operation it
checks the status, that the answer parsed into the model the spec names, and
that the model gives back the JSON the server sent (date-times compared as instants) (so no member is lost
or renamed, and none the spec lacks: those would land in additional_properties).

usage: generated_client_driver.py CLIENT_DIR BASE_URL FIXTURES_JSON
Prints one line per operation and exits 1 on the first mismatch.
"""
import datetime
import importlib
import json
import re
import sys

INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def same_instants(v):
    """v with RFC 3339 date-times as datetimes: the models give format:
    date-time members back in Python's spelling (+00:00 for Z)."""
    if isinstance(v, dict):
        return {k: same_instants(x) for k, x in v.items()}
    if isinstance(v, list):
        return [same_instants(x) for x in v]
    if isinstance(v, str) and INSTANT.match(v):
        return datetime.datetime.fromisoformat(v)
    return v


def main():
    client_dir, base_url, fixtures = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    sys.path.insert(0, client_dir)
    from transitd_client import Client
    from transitd_client import models as m
    from transitd_client.types import File

    f = fixtures
    when, lat, lon = f["time"], f["lat"], f["lon"]
    # operationId: (module, arguments, the model a 200 parses into; None for
    # bodies that are not JSON, whose bytes are checked instead)
    calls = {
        "getNearbyStops": ("v1.get_nearby_stops", dict(lat=lat, lon=lon, radius=800), m.NearbyStopsResponse),
        "searchStops": ("v1.search_stops", dict(q=f["stop_query"]), m.StopsResponse),
        "getStop": ("v1.get_stop", dict(id=f["stop_id"]), m.StopResponse),
        "getStopDepartures": ("v1.get_stop_departures",
                              dict(id=f["stop_id"], time=when, kind=m.GetStopDeparturesKind.BOTH),
                              m.StopDeparturesResponse),
        "getStopArrivals": ("v1.get_stop_arrivals", dict(id=f["stop_id"], time=when), m.StopArrivalsResponse),
        "getNearbyDepartures": ("v1.get_nearby_departures",
                                dict(lat=lat, lon=lon, radius=800, time=when), m.DeparturesResponse),
        "listRoutes": ("v1.list_routes", {}, m.RoutesResponse),
        "getRoute": ("v1.get_route", dict(id=f["route_id"]), m.RouteResponse),
        "getTrip": ("v1.get_trip", dict(id=f["trip_id"], include=m.GetTripInclude.SHAPE), m.TripResponse),
        "getShape": ("v1.get_shape", dict(id=f["shape_id"]), m.ShapeResponse),
        "listAgencies": ("v1.list_agencies", {}, m.AgenciesResponse),
        "getFeed": ("v1.get_feed", {}, m.FeedResponse),
        "getHealth": ("operations.get_health", {}, m.HealthResponse),
        "getReadiness": ("operations.get_readiness", {}, m.ReadyResponse),
        "getMetrics": ("operations.get_metrics", {}, None),
        "getOpenAPI": ("operations.get_open_api", {}, m.GetOpenApiResponse200),
        "listAlerts": ("alerts.list_alerts", dict(stop_id=f["stop_id"], active_at="now"), m.AlertsResponse),
        "getAlert": ("alerts.get_alert", dict(id=f["alert_id"]), m.Alert),
        "getLandingPage": ("pages.get_landing_page", {}, None),
        "getApiReference": ("pages.get_api_reference", {}, None),
        "getAsset": ("pages.get_asset", dict(id=f["asset"]), None),
        "getRealtimeTripUpdates": ("realtime.get_realtime_trip_updates",
                                   dict(format_=m.GetRealtimeTripUpdatesFormat.JSON),
                                   m.FeedMessageJson),
        "getRealtimeAlerts": ("realtime.get_realtime_alerts", dict(format_=m.GetRealtimeAlertsFormat.JSON),
                              m.FeedMessageJson),
        "getRealtimeVehiclePositions": ("realtime.get_realtime_vehicle_positions",
                                        dict(format_=m.GetRealtimeVehiclePositionsFormat.JSON),
                                        m.FeedMessageJson),
        "listVehicles": ("v1.list_vehicles", dict(bbox="-180,-90,180,90"), m.VehiclesResponse),
        "getDatasetManifest": ("replication.get_dataset_manifest", {}, m.DatasetManifest),
        "getDatasetFile": ("replication.get_dataset_file",
                           dict(version=f["dataset_version"], file=f["dataset_file"]), File),
    }
    wanted = set(f["get_operations"])
    if wanted != set(calls):
        print(f"the spec's GET operations and this driver's differ: only in the spec "
              f"{sorted(wanted - set(calls))}, only here {sorted(set(calls) - wanted)}")
        return 1
    with Client(base_url=base_url, raise_on_unexpected_status=True, timeout=30) as client:
        for op, (module, args, model) in sorted(calls.items()):
            api = importlib.import_module(f"transitd_client.api.{module}")
            r = api.sync_detailed(client=client, **args)
            if r.status_code != 200:
                print(f"{op}: status {r.status_code}: {r.content[:300]!r}")
                return 1
            if model is None:
                if not r.content:
                    print(f"{op}: an empty body")
                    return 1
                print(f"{op}: 200, {len(r.content)} bytes")
                continue
            if not isinstance(r.parsed, model):
                print(f"{op}: parsed into {type(r.parsed).__name__}, not {model.__name__}")
                return 1
            if model is File:
                if r.parsed.payload.read() != r.content or not r.content:
                    print(f"{op}: the file's bytes differ from the body")
                    return 1
                print(f"{op}: 200, a file of {len(r.content)} bytes")
                continue
            sent = json.loads(r.content)
            back = r.parsed.to_dict()
            if same_instants(back) != same_instants(sent):
                print(f"{op}: the model does not give back the server's JSON\n  sent: "
                      f"{json.dumps(sent)[:600]}\n  back: {json.dumps(back)[:600]}")
                return 1
            unknown = sorted(k for k in getattr(r.parsed, "additional_properties", {}))
            if unknown and model is not m.GetOpenApiResponse200:
                print(f"{op}: members the spec does not declare: {unknown}")
                return 1
            print(f"{op}: 200, {model.__name__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
