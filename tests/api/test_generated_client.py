"""A Python client generated from docs/openapi.json by openapi-python-client
calls every GET operation against a live server, and each answer parses into
the spec's model and gives back the server's JSON unchanged
(generated_client_driver.py does the calls).

Why it exists: the spec is meant to be exact enough to generate clients from;
this generates one now (nothing generated is committed) and uses it. The
generator must run without a warning: a warning means part of the spec was
not understood and that part of the client is missing.

Runs against the demo feed (bench/gtfs_gen.py --scale demo, seed 1) with one
alert written, so it needs nothing from ../shared; the generator and the
client's httpx and attrs come from the contract venv that `.ci/deps test`
makes (skipped without it, failed under CI=true).
"""
import json
import shutil
import subprocess
import urllib.parse

import requests

from conftest import CONTRACT_VENV, ROOT, contract_tool_or_skip
from http_server import Server, demo_feed, import_feed, TMP
from test_alerts_api import alert_body, make_token

SPEC = ROOT / "docs" / "openapi.json"
DRIVER = ROOT / "tests" / "api" / "generated_client_driver.py"
STATION = "de:11000:900100001"
WHEN = "2026-11-23T08:00"                # a Monday inside the demo feed's service period


def get_operations():
    spec = json.loads(SPEC.read_text())
    return sorted(op["operationId"] for item in spec["paths"].values()
                  for verb, op in item.items() if verb == "get")


def test_a_generated_client_reads_every_get_operation():
    generator = contract_tool_or_skip("openapi-python-client")
    base = TMP / "generated-client"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    config = base / "generator.yaml"
    config.write_text("post_hooks: []\n")            # no formatter: the code is only run
    gen = subprocess.run([generator, "generate", "--path", str(SPEC), "--config", str(config),
                          "--output-path", str(base / "client"), "--overwrite"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert gen.returncode == 0, gen.stdout
    assert "Warning" not in gen.stdout, gen.stdout
    data = base / "data"
    import_feed(demo_feed(1), data)
    tokens = base / "tokens"
    token = make_token(tokens)
    with Server(data, "--tokens", str(tokens)) as s:
        put = requests.put(s.url("/v1/alerts/works"), data=json.dumps(alert_body()),
                           headers={"Authorization": f"Bearer {token}",
                                    "Content-Type": "application/json"}, timeout=10)
        assert put.status_code == 201, put.text
        board = requests.get(s.url(f"/v1/stops/{urllib.parse.quote(STATION, safe='')}/departures"),
                             params={"time": WHEN, "limit": 1}, timeout=10).json()
        trip_id = board["departures"][0]["trip_id"]
        trip = requests.get(s.url(f"/v1/trips/{urllib.parse.quote(trip_id, safe='')}"),
                            timeout=10).json()["trip"]
        manifest = requests.get(s.url("/v1/dataset"), timeout=10).json()
        fixtures = {
            "get_operations": get_operations(), "time": WHEN, "lat": 52.5271, "lon": 13.2343,
            "stop_id": STATION, "stop_query": "Graben", "route_id": board["departures"][0]["route_id"],
            "trip_id": trip_id, "shape_id": trip["shape_id"], "alert_id": "works",
            "asset": "style.css", "dataset_version": manifest["version"],
            "dataset_file": manifest["files"][0]["name"],
        }
        run = subprocess.run([str(CONTRACT_VENV / "bin" / "python"), str(DRIVER), str(base / "client"),
                              s.url(""), json.dumps(fixtures)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    print(run.stdout)
    assert run.returncode == 0, run.stdout
    assert run.stdout.count(": 200") == len(fixtures["get_operations"]), run.stdout
