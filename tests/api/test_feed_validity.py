"""An expired feed says so: /v1/feed's feed_validity block, /readyz's detail
and warning, the transitd_feed_days_until_expiry metric, and a `warning` on
departures answers whose time lies outside the feed's service (only those:
a normal answer carries no extra bytes).

Two datasets: the demo feed (service 2026-10-01..2027-03-31, Europe/Berlin;
expectations are computed from today's date there), and test_cli_query's
tiny feed, whose service ended on 2026-11-13 (America/New_York), served over
HTTP and asked through `transitd query`.
"""
import datetime
import json
import shutil
import subprocess
import zipfile
from zoneinfo import ZoneInfo

import pytest
import requests

import schema_check
from conftest import transitd_bin
from http_server import Server, TMP, demo_feed, import_feed
from test_cli_query import TINY_FEED

DOC = schema_check.load_openapi()
LAT, LON = "52.5271", "13.2343"


def today_in(zone):
    return datetime.datetime.now(ZoneInfo(zone)).date()


def expected_validity(start, end, zone):
    today = today_in(zone)
    start, end = datetime.date.fromisoformat(start), datetime.date.fromisoformat(end)
    return {"start": start.isoformat(), "end": end.isoformat(), "today": today.isoformat(),
            "days_until_expiry": (end - today).days, "expired": today > end,
            "not_yet_valid": today < start}


def metric(server, name):
    for line in requests.get(server.url("/metrics"), timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


@pytest.fixture(scope="module")
def demo():
    data = TMP / "validity-demo"
    shutil.rmtree(data, ignore_errors=True)
    import_feed(demo_feed(1), data)
    with Server(data) as s:
        yield s


@pytest.fixture(scope="module")
def expired():
    base = TMP / "validity-expired"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    feed = base / "tiny.zip"
    with zipfile.ZipFile(feed, "w") as z:
        for name, text in TINY_FEED.items():
            z.writestr(name, text)
    import_feed(feed, base / "data")
    with Server(base / "data") as s:
        yield s


def test_feed_carries_its_validity(demo):
    body = requests.get(demo.url("/v1/feed"), timeout=10).json()
    schema_check.assert_matches(body, "FeedResponse", DOC)
    assert body["feed_validity"] == expected_validity("2026-10-01", "2027-03-31", "Europe/Berlin")
    assert (body["feed"]["start_date"], body["feed"]["end_date"]) == ("2026-10-01", "2027-03-31")


def test_feed_cache_follows_the_date(demo):
    r = requests.get(demo.url("/v1/feed"), timeout=10)
    assert r.headers["Cache-Control"] == "max-age=3600"
    # the body depends on today's date: the ETag carries the clock, unlike a stop's
    etag = r.headers["ETag"]
    assert requests.get(demo.url("/v1/feed"), headers={"If-None-Match": etag},
                        timeout=10).status_code in (200, 304)


def test_ready_and_metrics_carry_the_validity(demo):
    feed = requests.get(demo.url("/v1/feed"), timeout=10).json()
    ready = requests.get(demo.url("/readyz"), timeout=10)
    assert ready.status_code == 200
    body = ready.json()
    schema_check.assert_matches(body, "ReadyResponse", DOC)
    assert body["feed_validity"] == feed["feed_validity"]
    in_effect = not (body["feed_validity"]["expired"] or body["feed_validity"]["not_yet_valid"])
    assert ("warning" in body) == (not in_effect)
    assert metric(demo, "transitd_feed_days_until_expiry") == \
        feed["feed_validity"]["days_until_expiry"]


@pytest.mark.parametrize("when,word", [("2028-01-05T08:00", "after"),
                                       ("2025-06-02T08:00", "before")])
def test_departures_outside_the_service_say_why(demo, when, word):
    for path in [f"/v1/departures?lat={LAT}&lon={LON}&time={when}",
                 f"/v1/stops/de:11000:900100001/departures?time={when}"]:
        body = requests.get(demo.url(path), timeout=10).json()
        assert body["departures"] == []
        assert f"the time is {word} the feed's service (2026-10-01 to 2027-03-31" in body["warning"]
        api_path = "/v1/departures" if path.startswith("/v1/departures") else \
            "/v1/stops/{id}/departures"
        errors = schema_check.validate(body, schema_check.response_schema(DOC, api_path), DOC)
        assert not errors, errors


def test_departures_inside_the_service_have_no_warning(demo):
    # with departures, and without any (a window in the night inside the service)
    for when in ["2026-11-23T08:00", "2026-11-24T03:10"]:
        r = requests.get(demo.url(f"/v1/departures?lat={LAT}&lon={LON}&time={when}&window=1"),
                         timeout=10)
        assert r.status_code == 200
        assert b"warning" not in r.content, r.text[:300]
    # a window that starts before the service but reaches into it: no warning either
    r = requests.get(demo.url(f"/v1/departures?lat={LAT}&lon={LON}&time=2026-09-30T23:30"
                              "&window=60"), timeout=10)
    assert "warning" not in r.json()


def test_an_expired_feed_says_so_everywhere(expired):
    today = today_in("America/New_York")
    assert today > datetime.date(2026, 11, 13)
    feed = requests.get(expired.url("/v1/feed"), timeout=10).json()
    v = feed["feed_validity"]
    assert v == expected_validity("2026-10-26", "2026-11-13", "America/New_York")
    assert v["expired"] is True and v["days_until_expiry"] < 0
    ready = requests.get(expired.url("/readyz"), timeout=10)
    assert ready.status_code == 200            # it still answers: ready, with a warning
    body = ready.json()
    schema_check.assert_matches(body, "ReadyResponse", DOC)
    assert f"the feed expired {-v['days_until_expiry']} days ago" in body["warning"]
    assert "2026-11-13" in body["warning"]
    assert metric(expired, "transitd_feed_days_until_expiry") == v["days_until_expiry"]
    # departures from now: none, and the answer says the feed is over
    deps = requests.get(expired.url("/v1/departures?lat=40.0&lon=-74.0&radius=2000"),
                        timeout=10).json()
    assert deps["departures"] == []
    assert "after the feed's service (2026-10-26 to 2026-11-13" in deps["warning"]
    # while a time inside its service still answers normally
    inside = requests.get(expired.url("/v1/stops/P1/departures?time=2026-11-02T07:30"),
                          timeout=10).json()
    assert inside["departures"] and "warning" not in inside


def test_cli_query_gives_the_same_validity(expired):
    data = expired.args[expired.args.index("--data") + 1]
    out = subprocess.run([transitd_bin(), "query", "--data", data, "feed"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["feed_validity"]["expired"] is True
    out = subprocess.run([transitd_bin(), "query", "--data", data, "stop-departures", "--stop", "P1"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "after the feed's service" in json.loads(out.stdout)["warning"]
