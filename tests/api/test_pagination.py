"""Paging through departures boards with their `next` links: the stop board
(every kind), the arrivals board and the nearby board, page by page, give the
very rows of the unpaged board; ties on the instant are stepped over one row at
a time; a cursor continues across a dataset swap without repeating or skipping
a row; a cursor that was edited or sent with other parameters is a 400 naming
`cursor`.

Runs against the demo feed (bench/gtfs_gen.py --scale demo, seed 1) and a copy
of it whose trips of route 10000_1 are doubled (the same times under other
trip_ids, so rows tie on their instant), so it needs nothing from ../shared.
"""
import csv
import json
import io
import shutil
import signal
import time
import urllib.parse
import zipfile

import pytest
import requests

import schema_check
from http_server import Server, demo_feed, import_feed, TMP

DOC = schema_check.load_openapi()
STATION = urllib.parse.quote("de:11000:900100001", safe="")
WHEN = "2026-11-23T08:00"
BOARDS = [
    (f"/v1/stops/{STATION}/departures?time={WHEN}&window=240", "departures", "/v1/stops/{id}/departures"),
    (f"/v1/stops/{STATION}/departures?time={WHEN}&window=240&kind=arrivals", "departures",
     "/v1/stops/{id}/departures"),
    (f"/v1/stops/{STATION}/departures?time={WHEN}&window=240&kind=both", "departures",
     "/v1/stops/{id}/departures"),
    (f"/v1/stops/{STATION}/arrivals?time={WHEN}&window=240", "arrivals", "/v1/stops/{id}/arrivals"),
    (f"/v1/departures?lat=52.5271&lon=13.2343&radius=1500&time={WHEN}&window=90", "departures",
     "/v1/departures"),
    (f"/v1/departures?lat=52.5271&lon=13.2343&radius=1500&time={WHEN}&window=90&kind=both", "departures",
     "/v1/departures"),
]


def doubled_feed(path):
    """The demo feed with every trip of route 10000_1 twice (trip_id + "b")."""
    src = zipfile.ZipFile(demo_feed(1))
    trips = list(csv.DictReader(io.StringIO(src.read("trips.txt").decode("utf-8-sig"))))
    doubled = {t["trip_id"] for t in trips if t["route_id"] == "10000_1"}
    with zipfile.ZipFile(path, "w") as z:
        for name in src.namelist():
            text = src.read(name).decode("utf-8-sig")
            if name in ("trips.txt", "stop_times.txt"):
                rows = list(csv.DictReader(io.StringIO(text)))
                out = io.StringIO()
                w = csv.DictWriter(out, fieldnames=list(rows[0].keys()), lineterminator="\n")
                w.writeheader()
                for row in rows:
                    w.writerow(row)
                    if row["trip_id"] in doubled:
                        w.writerow({**row, "trip_id": row["trip_id"] + "b"})
                text = out.getvalue()
            z.writestr(name, text)
    return path


@pytest.fixture(scope="module")
def servers():
    base = TMP / "pagination"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    import_feed(demo_feed(1), base / "demo")
    import_feed(doubled_feed(base / "doubled.zip"), base / "doubled")
    with Server(base / "demo") as demo, Server(base / "doubled") as doubled:
        yield {"demo": demo, "doubled": doubled}


def page_through(server, path, key, limit, api_path):
    rows, pages, url = [], 0, server.url(f"{path}&limit={limit}")
    while url:
        r = requests.get(url, timeout=10)
        assert r.status_code == 200, r.text
        body = r.json()
        errors = schema_check.validate(body, schema_check.response_schema(DOC, api_path), DOC)
        assert not errors, errors
        assert body["truncated"] == (body["next"] is not None)
        assert len(body[key]) <= limit
        rows += body[key]
        pages += 1
        assert pages <= 1000
        url = server.url(body["next"]) if body["next"] else None
    return rows, pages


@pytest.mark.parametrize("which", ["demo", "doubled"])
@pytest.mark.parametrize("path,key,api_path", BOARDS)
def test_paging_through_a_board_gives_the_unpaged_board(servers, which, path, key, api_path):
    server = servers[which]
    whole = requests.get(server.url(f"{path}&limit=500"), timeout=10).json()
    assert not whole["truncated"] and whole["next"] is None and len(whole[key]) > 10
    for limit in (1, 2, 7):
        rows, pages = page_through(server, path, key, limit, api_path)
        assert rows == whole[key], f"limit {limit}"
        assert pages == max(1, -(-len(rows) // limit))


def test_ties_are_stepped_over(servers):
    server = servers["doubled"]
    path = f"/v1/stops/{STATION}/departures?time={WHEN}&window=240"
    rows = requests.get(server.url(f"{path}&limit=500"), timeout=10).json()["departures"]
    instants = [r["departure"] for r in rows]
    assert len(instants) - len(set(instants)) >= 10      # the doubled trips tie


def test_the_next_link_pins_time_and_keeps_the_parameters(servers):
    server = servers["demo"]
    body = requests.get(server.url(f"/v1/departures?lat=52.5271&lon=13.2343&radius=1500&kind=both&limit=2"
                                   f"&time={WHEN}"), timeout=10).json()
    link = urllib.parse.urlsplit(body["next"])
    query = dict(urllib.parse.parse_qsl(link.query))
    assert link.path == "/v1/departures" and not link.netloc
    assert query["time"] == "2026-11-23T07:00:00Z" and query["window"] == "60" and query["limit"] == "2"
    assert query["lat"] == "52.5271" and query["lon"] == "13.2343" and query["kind"] == "both"
    assert query["radius"] == "1500"
    # without time, the first page resolves now and the link pins it
    body = requests.get(server.url(f"/v1/stops/{STATION}/departures?limit=1&window=1440"), timeout=10).json()
    if body["next"]:
        assert "time=" in body["next"]


def test_bad_cursors_are_400_naming_cursor(servers):
    server = servers["demo"]
    first = requests.get(server.url(f"/v1/stops/{STATION}/departures?time={WHEN}&limit=2"), timeout=10).json()
    link = first["next"]
    cursor = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).query))["cursor"]
    flipped = cursor[:10] + ("A" if cursor[10] != "A" else "B") + cursor[11:]
    bad = [link.replace(cursor, flipped), link.replace(cursor, cursor[:-4]), link.replace(cursor, "x"),
           link.replace(cursor, cursor + "!"), link.replace("window=60", "window=61"),
           link.replace("/departures?", "/arrivals?"),
           link.replace("departures?", "departures?kind=both&")]
    for url in bad:
        r = requests.get(server.url(url), timeout=10)
        assert r.status_code == 400, url
        assert r.json()["detail"].startswith("cursor "), r.text
    # another stop's board
    other = urllib.parse.quote("de:11000:900100001::1", safe="")
    r = requests.get(server.url(link.replace(STATION, other)), timeout=10)
    assert r.status_code == 400 and "cursor" in r.json()["detail"]
    # limit may change from page to page
    assert requests.get(server.url(link.replace("limit=2", "limit=5")), timeout=10).status_code == 200


def test_a_cursor_continues_across_a_dataset_swap(tmp_path):
    """Page 1 from the demo feed; the doubled feed is swapped in; the next
    pages continue after page 1's last row: nothing repeated, nothing of the
    new board after it skipped."""
    data = tmp_path / "data"
    import_feed(demo_feed(1), data)
    path = f"/v1/stops/{STATION}/departures?time={WHEN}&window=240"
    with Server(data) as s:
        first = requests.get(s.url(f"{path}&limit=9"), timeout=10).json()
        version = requests.get(s.url("/v1/feed"), timeout=10).json()["feed"]["version"]
        import_feed(doubled_feed(tmp_path / "doubled.zip"), data)
        s.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while requests.get(s.url("/v1/feed"), timeout=10).json()["feed"]["version"] == version:
            assert time.monotonic() < deadline, "the new dataset was not swapped in"
            time.sleep(0.1)
        rest, url = [], s.url(first["next"])
        while url:
            body = requests.get(url, timeout=10).json()
            rest += body["departures"]
            url = s.url(body["next"]) if body["next"] else None
        new_board = requests.get(s.url(f"{path}&limit=500"), timeout=10).json()["departures"]
    last = first["departures"][-1]
    cut = new_board.index(last) + 1       # the last row shown is in the new board too
    assert rest == new_board[cut:]
    assert not {r["trip_id"] for r in rest} & {r["trip_id"] for r in first["departures"]}


LISTS = [
    ("/v1/stops/nearby?lat=52.5271&lon=13.2343&radius=3000", "stops", "/v1/stops/nearby", 500),
    ("/v1/stops?q=U", "stops", "/v1/stops", 500),
    ("/v1/routes?", "routes", "/v1/routes", None),
    ("/v1/agencies?", "agencies", "/v1/agencies", None),
]


@pytest.mark.parametrize("path,key,api_path,whole_limit", LISTS)
def test_paging_through_a_list_gives_the_whole_list(servers, path, key, api_path, whole_limit):
    server = servers["demo"]
    sep = "" if path.endswith("?") else "&"
    whole = requests.get(server.url(path + (f"{sep}limit={whole_limit}" if whole_limit else "")),
                         timeout=10).json()
    assert whole["next"] is None and len(whole[key]) >= 2
    for limit in (1, 3):
        rows, pages, url = [], 0, server.url(f"{path}{sep}limit={limit}")
        while url:
            r = requests.get(url, timeout=10)
            assert r.status_code == 200, r.text
            body = r.json()
            errors = schema_check.validate(body, schema_check.response_schema(DOC, api_path), DOC)
            assert not errors, errors
            rows += body[key]
            pages += 1
            assert pages <= 1000
            url = server.url(body["next"]) if body["next"] else None
        assert rows == whole[key], f"limit {limit}"


def test_a_list_cursor_is_gone_after_a_dataset_swap(tmp_path):
    data = tmp_path / "data"
    import_feed(demo_feed(1), data)
    with Server(data) as s:
        first = requests.get(s.url("/v1/routes?limit=2"), timeout=10).json()
        bad = first["next"].replace("limit=2", "limit=2&x=1")
        assert requests.get(s.url(bad), timeout=10).status_code == 400
        cursor = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(first["next"]).query))["cursor"]
        other = requests.get(s.url(f"/v1/agencies?limit=2&cursor={cursor}"), timeout=10)
        assert other.status_code == 400 and other.json()["detail"].startswith("cursor ")
        version = requests.get(s.url("/v1/feed"), timeout=10).json()["feed"]["version"]
        import_feed(doubled_feed(tmp_path / "doubled.zip"), data)
        s.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while requests.get(s.url("/v1/feed"), timeout=10).json()["feed"]["version"] == version:
            assert time.monotonic() < deadline, "the new dataset was not swapped in"
            time.sleep(0.1)
        r = requests.get(s.url(first["next"]), timeout=10)
        assert r.status_code == 410, r.text
        assert r.headers["Content-Type"].startswith("application/problem+json")
        assert r.json()["title"] == "Gone" and "without cursor" in r.json()["detail"]


def test_alerts_pages_carry_a_next_link(tmp_path):
    from test_alerts_api import alert_body, make_token
    data = tmp_path / "data"
    import_feed(demo_feed(1), data)
    tokens = tmp_path / "tokens"
    token = make_token(tokens)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with Server(data, "--tokens", str(tokens)) as s:
        for n in range(5):
            assert requests.put(s.url(f"/v1/alerts/a{n}"), data=json.dumps(alert_body()),
                                headers=headers, timeout=10).status_code == 201
        rows, url = [], s.url("/v1/alerts?limit=2&stop_id=de:11000:900100001")
        while url:
            body = requests.get(url, timeout=10).json()
            rows += [a["id"] for a in body["alerts"]]
            assert (body["next"] is None) == (not body["truncated"])
            url = s.url(body["next"]) if body["next"] else None
        assert rows == [f"a{n}" for n in range(5)]


def test_query_cli_pages_with_the_same_cursors(servers):
    """`transitd query` prints the same next links, and --cursor follows them."""
    import subprocess
    from conftest import transitd_bin
    data = TMP / "pagination" / "demo"

    def query(*args):
        p = subprocess.run([transitd_bin(), "query", "--data", str(data), *args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    server = servers["demo"]
    args = ["stop-departures", "--stop", "de:11000:900100001", "--time", WHEN, "--window", "240", "--limit", "5"]
    first = query(*args)
    assert first == requests.get(server.url(f"/v1/stops/{STATION}/departures?time={WHEN}&window=240&limit=5"),
                                 timeout=10).json()
    link = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(first["next"]).query))
    second = query("stop-departures", "--stop", "de:11000:900100001", "--time", link["time"], "--window", "240",
                   "--limit", "5", "--cursor", link["cursor"])
    assert second == requests.get(server.url(first["next"]), timeout=10).json()
    routes = query("routes", "--limit", "1")
    cursor = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(routes["next"]).query))["cursor"]
    assert query("routes", "--limit", "1", "--cursor", cursor)["routes"] == \
        requests.get(server.url("/v1/routes"), timeout=10).json()["routes"][1:2]


def test_paging_a_board_ordered_by_predicted_time(tmp_path):
    """With realtime, a board is ordered by predicted time (issue #26): the
    cursor's instant is the predicted one, so paging still gives the unpaged
    board, in both orders (delays move rows across page boundaries here)."""
    import zipfile
    from test_realtime_predicted import FEED, updates
    with zipfile.ZipFile(tmp_path / "feed.zip", "w") as z:
        for name, text in FEED.items():
            z.writestr(name, text)
    import_feed(tmp_path / "feed.zip", tmp_path / "data")
    (tmp_path / "rt.pb").write_bytes(updates())
    nine = urllib.parse.quote("2026-11-02T08:30:00-05:00", safe="")
    with Server(tmp_path / "data", "--gtfs-rt", str(tmp_path / "rt.pb"), "--rt-interval", "30") as s:
        def predicted_rows():
            body = requests.get(s.url(f"/v1/stops/STA/departures?time={nine}&window=120&limit=500"),
                                timeout=10).json()
            # a prediction, not only the members: before the first poll the
            # server answers with an overlay of no feed (every "predicted" null)
            return [r for r in body["departures"] if r.get("predicted")]

        deadline = time.monotonic() + 10
        while not predicted_rows():            # the first poll of the feed
            assert time.monotonic() < deadline, "realtime was not applied"
            time.sleep(0.1)
        for order in ("predicted", "scheduled"):
            path = f"/v1/stops/STA/departures?time={nine}&window=120&kind=both&realtime={order}"
            whole = requests.get(s.url(f"{path}&limit=500"), timeout=10).json()
            assert not whole["truncated"] and len(whole["departures"]) >= 8
            for limit in (1, 2, 3):
                rows, _ = page_through(s, path, "departures", limit, "/v1/stops/{id}/departures")
                assert rows == whole["departures"], (order, limit)
