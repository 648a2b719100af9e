"""`transitd import a.zip b.zip ...`: several feeds merged into one dataset.

Three tiny feeds built here: "north" and "south" define the same stop, route,
trip, service and shape ids (and "south" has ids of its own), "east" shares
none. The merged answers must equal each feed's own answers for its stops,
with the ids the rule namespaces (feed_merge.h: a later feed's colliding id
becomes "<feed>:<id>"); /v1/feed lists the feeds; errors name the feed file,
the file inside it, the line and the column. Last, two shared feeds (NYC
subway and Brooklyn bus) imported together (skipped visibly without
../shared).
"""
import hashlib
import json
import shutil
import subprocess
import time
import zipfile

import pytest
import requests

import schema_check
from conftest import shared_feed, transitd_bin
from http_server import TMP, Server

WHEN = "2026-12-02T08:00"  # a Wednesday
TZ = "America/New_York"


def feed_files(prefix_name, stop_names, tz=TZ, extra_stop=None, agency_id="ag"):
    """A small valid feed: one route with one trip over three stops, a
    station parenting the first stop, weekday service for 2026-2027."""
    stops = ["stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station",
             f"ST,{prefix_name} Station,40.7000,-73.9000,1,",
             f"S1,{stop_names[0]},40.7001,-73.9001,0,ST",
             f"S2,{stop_names[1]},40.7100,-73.9100,0,",
             f"S3,{stop_names[2]},40.7200,-73.9200,0,"]
    stop_times = ["trip_id,arrival_time,departure_time,stop_id,stop_sequence",
                  "T1,08:10:00,08:10:00,S1,1", "T1,08:20:00,08:20:00,S2,2", "T1,08:30:00,08:30:00,S3,3",
                  "T2,08:40:00,08:40:00,S1,1", "T2,08:50:00,08:50:00,S2,2", "T2,09:00:00,09:00:00,S3,3"]
    if extra_stop:
        stops.append(f"{extra_stop},{prefix_name} Extra,40.7300,-73.9300,0,")
        stop_times += [f"T3,08:15:00,08:15:00,{extra_stop},1", "T3,08:25:00,08:25:00,S2,2"]
    trips = ["route_id,service_id,trip_id,trip_headsign,shape_id",
             f"R1,WK,T1,{prefix_name} bound,SH", f"R1,WK,T2,{prefix_name} bound,SH"]
    if extra_stop:
        trips.append(f"R1,WK,T3,{prefix_name} extra,SH")
    return {
        "agency.txt": ["agency_id,agency_name,agency_url,agency_timezone",
                       f"{agency_id},{prefix_name} Transit,https://example.com/{prefix_name},{tz}"],
        "stops.txt": stops,
        "routes.txt": ["route_id,agency_id,route_short_name,route_long_name,route_type",
                       f"R1,{agency_id},1,{prefix_name} Line,3"],
        "trips.txt": trips,
        "stop_times.txt": stop_times,
        "calendar.txt": ["service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date",
                         "WK,1,1,1,1,1,0,0,20260101,20271231"],
        "shapes.txt": ["shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence",
                       "SH,40.7001,-73.9001,1", "SH,40.7200,-73.9200,2"],
        "feed_info.txt": ["feed_publisher_name,feed_publisher_url,feed_lang,feed_version",
                          f"{prefix_name} Publisher,https://example.com,en,v-{prefix_name}"],
    }


def write_zip(path, files):
    with zipfile.ZipFile(path, "w") as z:
        for name, lines in files.items():
            z.writestr(name, "\n".join(lines) + "\n")
    return str(path)


def run_import(feeds, data, *extra):
    return subprocess.run([transitd_bin(), "import", *feeds, "--data", str(data), *extra],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def get(server, path):
    r = requests.get(server.url(path), timeout=10)
    assert r.status_code == 200, (path, r.status_code, r.text)
    return r.json()


@pytest.fixture(scope="module")
def feeds():
    base = TMP / "merge-feeds"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    # a stop "x" in east avoids nothing: east's ids are its own
    east = feed_files("east", ["E one", "E two", "E three"])
    east = {k: [lines[0]] + [line.replace("S1", "E1").replace("S2", "E2").replace("S3", "E3").replace("ST,", "EST,")
                .replace(",ST", ",EST").replace("T1", "ET1").replace("T2", "ET2").replace("R1", "ER1")
                .replace("WK", "EWK").replace("SH", "ESH").replace("ag,", "eag,").replace(",ag", ",eag")
                for line in lines[1:]] for k, lines in east.items()}
    return {
        "north": write_zip(base / "north.zip", feed_files("north", ["N one", "N two", "N three"])),
        "south": write_zip(base / "south.zip", feed_files("south", ["S one", "S two", "S three"],
                                                          extra_stop="S9")),
        "east": write_zip(base / "east.zip", east),
        "base": base,
    }


@pytest.fixture(scope="module")
def servers(feeds):
    """The merged dataset and each feed alone, served."""
    base = feeds["base"]
    out = {}
    started = []
    try:
        for name in ("north", "south", "east"):
            data = base / f"alone-{name}"
            p = run_import([feeds[name]], data, "--quiet")
            assert p.returncode == 0, p.stderr
            out[name] = Server(data).start()
            started.append(out[name])
        data = base / "merged"
        p = run_import([feeds["north"], feeds["south"], feeds["east"]], data)
        assert p.returncode == 0, p.stderr
        out["merge_log"] = p.stderr + p.stdout
        out["merged"] = Server(data).start()
        started.append(out["merged"])
        yield out
    finally:
        for s in started:
            s.stop()


def strip_prefix(value, prefix):
    if isinstance(value, dict):
        return {k: strip_prefix(v, prefix) for k, v in value.items()}
    if isinstance(value, list):
        return [strip_prefix(v, prefix) for v in value]
    if isinstance(value, str) and value.startswith(prefix):
        return value[len(prefix):]
    return value


def test_merge_reports_each_feed_and_what_it_namespaced(servers):
    log = servers["merge_log"]
    assert "north.zip as 'north', 0 id(s) namespaced" in log
    # south repeats ST S1 S2 S3 (stops), R1, T1 T2, WK, SH and the agency: 10 ids
    assert "south.zip as 'south', 10 id(s) namespaced as south:ID" in log
    assert "east.zip as 'east', 0 id(s) namespaced" in log


@pytest.mark.parametrize("feed,prefix", [("north", ""), ("south", "south:"), ("east", "")])
def test_merged_departures_equal_each_feeds_own(servers, feed, prefix):
    stops = {"north": ["S1", "S2", "ST"], "south": ["S1", "S2", "S9"], "east": ["E1", "E2"]}[feed]
    rows = {"departures": 0, "arrivals": 0}
    for stop in stops:
        merged_id = prefix + stop if stop != "S9" else "S9"
        for key in rows:
            path = f"/v1/stops/{{}}/{key}?time={WHEN}&limit=10"
            alone = get(servers[feed], path.format(stop))
            merged = get(servers["merged"], path.format(merged_id))
            rows[key] += len(alone[key])
            assert strip_prefix(merged[key], prefix) == alone[key], (feed, stop, key)
            assert strip_prefix(merged["stop"], prefix) == alone["stop"]
    assert rows["departures"] >= 4 and rows["arrivals"] >= 2, rows


def test_records_name_their_feed(servers):
    m = servers["merged"]
    assert get(m, "/v1/stops/S1")["stop"]["feed"] == "north"
    assert get(m, "/v1/stops/S1")["stop"]["name"] == "N one"
    assert get(m, "/v1/stops/south:S1")["stop"]["feed"] == "south"
    assert get(m, "/v1/stops/south:S1")["stop"]["name"] == "S one"
    assert get(m, "/v1/stops/S9")["stop"]["feed"] == "south"   # not colliding: kept as it is
    assert get(m, "/v1/stops/E1")["stop"]["feed"] == "east"
    assert get(m, "/v1/routes/R1")["route"]["feed"] == "north"
    assert get(m, "/v1/routes/south:R1")["route"]["feed"] == "south"
    trip = get(m, "/v1/trips/south:T1")["trip"]
    assert trip["feed"] == "south"
    assert trip["route_id"] == "south:R1" and trip["service_id"] == "south:WK" and trip["shape_id"] == "south:SH"
    assert [s["stop_id"] for s in trip["stop_times"]] == ["south:S1", "south:S2", "south:S3"]
    assert get(m, "/v1/trips/T3")["trip"]["route_id"] == "south:R1"
    # parent_station rewritten with its stop
    assert "south:S1" in get(m, "/v1/stops/south:ST")["stop"]["children"]
    # a one-feed dataset has no feed member
    assert "feed" not in get(servers["north"], "/v1/stops/S1")["stop"]


def test_merged_answers_match_the_openapi_document(servers):
    m = servers["merged"]
    schema_check.assert_matches(get(m, "/v1/feed"), "FeedResponse")
    schema_check.assert_matches(get(m, "/v1/stops/south:S1"), "StopResponse")
    schema_check.assert_matches(get(m, "/v1/routes/south:R1"), "RouteResponse")
    schema_check.assert_matches(get(m, "/v1/trips/south:T1"), "TripResponse")


def test_feed_lists_every_feed(servers, feeds):
    body = get(servers["merged"], "/v1/feed")
    listed = body["feed"]["feeds"]
    assert [f["name"] for f in listed] == ["north", "south", "east"]
    for f in listed:
        path = feeds[f["name"]]
        assert f["file"] == f"{f['name']}.zip"
        with open(path, "rb") as fh:
            assert f["sha256"] == hashlib.sha256(fh.read()).hexdigest()
        assert f["timezone"] == TZ
        assert f["start_date"] == "2026-01-01" and f["end_date"] == "2027-12-31"
    south = listed[1]
    assert south["publisher_name"] == "south Publisher" and south["version"] == "v-south"
    assert south["counts"] == {"agencies": 1, "stops": 5, "routes": 1, "trips": 3, "stop_times": 8,
                               "namespaced_ids": 10}
    # the combined figures cover all of them
    assert body["feed"]["counts"]["stops"] == 4 + 5 + 4
    assert body["feed"]["counts"]["trips"] == 2 + 3 + 2
    assert body["feed"]["start_date"] == "2026-01-01" and body["feed"]["end_date"] == "2027-12-31"
    assert body["feed"]["publisher_name"] == "north Publisher, south Publisher, east Publisher"
    assert "feeds" not in get(servers["north"], "/v1/feed")["feed"]


def test_the_merge_is_deterministic(feeds):
    data = feeds["base"] / "again"
    shutil.rmtree(data, ignore_errors=True)
    versions = []
    for _ in range(2):
        p = run_import([feeds["north"], feeds["south"], feeds["east"]], data, "--json")
        assert p.returncode == 0, p.stderr
        versions.append(json.loads(p.stdout)["version"])
    assert versions[0] == versions[1]
    assert [e.name for e in data.iterdir() if e.name.startswith(".merge")] == []


def test_feed_id_names_the_prefix(feeds):
    data = feeds["base"] / "named"
    shutil.rmtree(data, ignore_errors=True)
    p = run_import([feeds["north"], feeds["south"], "--feed-id", "bk"], data)
    assert p.returncode == 0, p.stderr
    with Server(data) as s:
        assert get(s, "/v1/stops/bk:S1")["stop"]["feed"] == "bk"


def test_errors_name_the_feed_file_line_and_column(feeds):
    base = feeds["base"]
    bad = feed_files("bad", ["B one", "B two", "B three"])
    bad["stops.txt"][2] = 'S1,"B one" x,40.7,-73.9,0,ST'
    bad_zip = write_zip(base / "bad.zip", bad)
    p = run_import([feeds["north"], bad_zip], base / "err1")
    assert p.returncode == 1
    assert f"{bad_zip}: stops.txt:3: column 2:" in p.stderr, p.stderr

    # a bad value the import skips: its example names the feed's own line
    skip = feed_files("skip", ["K one", "K two", "K three"])
    skip["stop_times.txt"][2] = "T1,8h20,08:20:00,S2,2"
    skip_zip = write_zip(base / "skip.zip", skip)
    p = run_import([feeds["north"], skip_zip, "--feed-id", "k"], base / "err2")
    assert p.returncode == 0, p.stderr
    assert f"{skip_zip}: stop_times.txt:3: " in p.stdout, p.stdout

    other_tz = write_zip(base / "berlin.zip", feed_files("berlin", ["a", "b", "c"], tz="Europe/Berlin"))
    p = run_import([feeds["north"], other_tz], base / "err3")
    assert p.returncode == 1
    assert "berlin.zip: agency.txt: agency_timezone 'Europe/Berlin' differs" in p.stderr

    p = run_import([feeds["north"], feeds["north"]], base / "err4")
    assert p.returncode == 1 and "both are named 'north'; give one --feed-id NAME" in p.stderr

    p = run_import([feeds["north"], "--feed-id", "a:b", feeds["south"]], base / "err5")
    assert p.returncode == 1 and "--feed-id 'a:b'" in p.stderr

    p = run_import(["--feed-id", "x", feeds["north"]], base / "err6")
    assert p.returncode == 2 and "names the FEED before it" in p.stderr
    p = run_import([feeds["north"], "--feed-id", "x"], base / "err7")
    assert p.returncode == 2

    no_stops = feed_files("nostops", ["a", "b", "c"])
    del no_stops["stops.txt"]
    p = run_import([feeds["north"], write_zip(base / "nostops.zip", no_stops)], base / "err8")
    assert p.returncode == 1 and "nostops.zip: stops.txt: required file is missing" in p.stderr
    for d in ("err1", "err3", "err4", "err5", "err8"):
        assert not (base / d / "current").exists()


def test_two_shared_feeds_together():
    subway = shared_feed("nyct_subway_2026.zip")
    bus = shared_feed("nyct_bus_brooklyn_2026.zip")
    data = TMP / "merge-shared"
    shutil.rmtree(data, ignore_errors=True)
    p = run_import([subway, bus], data, "--json")
    assert p.returncode == 0, p.stderr
    with Server(data) as s:
        feed = get(s, "/v1/feed")["feed"]
        names = [f["name"] for f in feed["feeds"]]
        assert names == ["nyct_subway_2026", "nyct_bus_brooklyn_2026"]
        assert feed["counts"]["stop_times"] == sum(f["counts"]["stop_times"] for f in feed["feeds"])
        assert feed["counts"]["stops"] == sum(f["counts"]["stops"] for f in feed["feeds"])


def query(data, *args):
    p = subprocess.run([transitd_bin(), "query", "--data", str(data), *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def realtime_rows(board):
    return {(d["trip_id"], d.get("delay_s")) for d in board["departures"] if d.get("realtime")}


def test_a_realtime_source_names_its_feed(servers, feeds):
    """--gtfs-rt-feed south: the source's "T1" and "S1" are south's (south:T1,
    south:S1); without it they are the dataset's own ids (north's T1)."""
    import gtfs_rt_wire as wire
    rt = feeds["base"] / "south-rt.pb"
    rt.write_bytes(wire.feed(wire.trip_update("e1", "T1", "20261202", [(1, 120), (2, 120)]),
                             wire.alert_entity("a1", "S1", "South stop S1 moved")))
    data = feeds["base"] / "merged"
    args = ["stop-departures", "--time", WHEN]
    named = ["--gtfs-rt", str(rt), "--gtfs-rt-feed", "south"]
    south = query(data, *named, *args, "--stop", "south:S1")
    assert realtime_rows(south) == {("south:T1", 120)}
    assert [a["id"] for a in south["alerts"]] == ["rt:a1"]
    north = query(data, *named, *args, "--stop", "S1")
    assert realtime_rows(north) == set() and north["alerts"] == []
    # the same source without a feed: its ids are taken as the dataset's
    plain = query(data, "--gtfs-rt", str(rt), *args, "--stop", "S1")
    assert realtime_rows(plain) == {("T1", 120)}
    # served the same way
    port_data = feeds["base"] / "merged"
    with Server(port_data, "--gtfs-rt", str(rt), "--gtfs-rt-feed", "south") as s:
        deadline = time.monotonic() + 10   # the first poll runs beside the start
        while True:
            board = get(s, f"/v1/stops/south:S1/departures?time={WHEN}")
            if realtime_rows(board) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert realtime_rows(board) == {("south:T1", 120)}


def test_gtfs_rt_feed_needs_a_source_and_a_name(feeds):
    data = feeds["base"] / "merged"
    for args, why in ((["--gtfs-rt-feed", "south"], "applies to the --gtfs-rt given before it"),
                      (["--gtfs-rt", "x.pb", "--gtfs-rt-feed", "a:b"], "a feed name is 1 to 47"),
                      (["--gtfs-rt", "x.pb", "--gtfs-rt-feed", "a", "--gtfs-rt-feed", "b"],
                       "one --gtfs-rt-feed per --gtfs-rt")):
        p = subprocess.run([transitd_bin(), "query", "--data", str(data), *args, "stop", "--stop", "S1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.returncode == 2 and why in p.stderr, p.stderr


def test_an_alert_selector_names_its_feed(feeds):
    """informed_entity {"stop_id": "S1", "feed": "south"} is south's S1 (south:S1);
    without `feed`, S1 is the dataset's (north's); an unknown id in the feed is a 422."""
    from test_alerts_api import make_token
    base = feeds["base"]
    data = base / "merged-alerts"
    shutil.rmtree(data, ignore_errors=True)
    p = run_import([feeds["north"], feeds["south"], feeds["east"]], data, "--quiet")
    assert p.returncode == 0, p.stderr
    tokens = base / "alert-tokens"
    tokens.unlink(missing_ok=True)
    token = make_token(tokens)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    body = {"informed_entity": [{"stop_id": "S1", "feed": "south"}], "effect": "DETOUR",
            "header_text": {"translation": [{"text": "South S1 moved", "language": "en"}]}}
    with Server(data, "--tokens", str(tokens)) as s:
        r = requests.put(s.url("/v1/alerts/south-s1"), json=body, headers=headers, timeout=10)
        assert r.status_code in (200, 201), r.text
        assert r.json()["informed_entity"] == [{"stop_id": "S1", "feed": "south"}]
        on = get(s, f"/v1/stops/south:S1/departures?time={WHEN}")
        assert [a["id"] for a in on["alerts"]] == ["south-s1"]
        assert get(s, f"/v1/stops/S1/departures?time={WHEN}")["alerts"] == []
        # S9 was not namespaced: `feed` finds it as it is
        body["informed_entity"] = [{"stop_id": "S9", "feed": "south"}]
        r = requests.put(s.url("/v1/alerts/south-s9"), json=body, headers=headers, timeout=10)
        assert r.status_code in (200, 201), r.text
        assert [a["id"] for a in get(s, f"/v1/stops/S9/departures?time={WHEN}")["alerts"]] == ["south-s9"]
        body["informed_entity"] = [{"stop_id": "E1", "feed": "south:x"}]
        r = requests.put(s.url("/v1/alerts/bad"), json=body, headers=headers, timeout=10)
        assert r.status_code == 422 and r.json()["pointer"] == "/informed_entity/0/feed", r.text


def test_one_agency_feeds_without_agency_id(feeds):
    """Feeds that leave agency_id out: each agency (and its routes) takes the feed's name."""
    base = feeds["base"]
    zips = []
    for name in ("x", "y"):
        files = feed_files(name, ["a", "b", "c"])
        files["agency.txt"] = ["agency_name,agency_url,agency_timezone", f"{name} Transit,https://example.com,{TZ}"]
        files["routes.txt"] = ["route_id,route_short_name,route_type", "R1,1,3"]
        zips.append(write_zip(base / f"{name}.zip", files))
    data = base / "no-agency-id"
    shutil.rmtree(data, ignore_errors=True)
    p = run_import(zips, data)
    assert p.returncode == 0, p.stderr
    with Server(data) as s:
        agencies = get(s, "/v1/agencies")["agencies"]
        assert sorted(a["id"] for a in agencies) == ["x", "y"]
        assert get(s, "/v1/routes/R1")["route"]["agency_id"] == "x"
        assert get(s, "/v1/routes/y:R1")["route"]["agency_id"] == "y"


def test_quoted_header_names_split_like_the_rows(feeds):
    """A header with quoted names, one of them holding a comma: the merge
    splits it the way the CSV reader splits rows, so every column keeps its
    values (before, `"zone, id"` became two columns and shifted the rest)."""
    base = feeds["base"]
    quoted = feed_files("quoted", ["Q one", "Q two", "Q three"])
    quoted["stops.txt"] = ['"stop_id", "stop_name" ,"zone, id",stop_lat,"stop_lon",location_type,parent_station'] + [
        f'{row.split(",", 2)[0]},{row.split(",", 2)[1]},"z, {i}",{row.split(",", 2)[2]}'
        for i, row in enumerate(quoted["stops.txt"][1:])]
    quoted_zip = write_zip(base / "quoted.zip", quoted)
    data = base / "quoted-merged"
    shutil.rmtree(data, ignore_errors=True)
    p = run_import([feeds["east"], quoted_zip], data, "--quiet")
    assert p.returncode == 0, p.stderr
    with Server(data) as s:
        stop = get(s, "/v1/stops/S2")["stop"]
        assert stop["name"] == "Q two"
        assert (stop["lat"], stop["lon"]) == (40.71, -73.91)
        assert get(s, "/v1/stops/E2")["stop"]["name"] == "E two"

    broken = dict(quoted)
    broken["stops.txt"] = ['stop_id,"stop_name,stop_lat,stop_lon'] + quoted["stops.txt"][1:]
    p = run_import([feeds["east"], write_zip(base / "quoted-open.zip", broken)], base / "quoted-err")
    assert p.returncode == 1
    assert "quoted-open.zip: stops.txt:1: column 2: " in p.stderr, p.stderr


def test_a_killed_merge_leaves_nothing_behind(feeds):
    """DATA/.merge-<pid> of an import that died is removed by the next
    import's prune (a live pid's is left alone)."""
    import os
    data = feeds["base"] / "killed"
    shutil.rmtree(data, ignore_errors=True)
    p = run_import([feeds["north"], feeds["south"]], data, "--quiet")
    assert p.returncode == 0, p.stderr
    dead = 4194000
    while os.path.exists(f"/proc/{dead}") and dead > 4190000:
        dead -= 1
    stale = data / f".merge-{dead}"
    stale.mkdir()
    (stale / "stop_times.txt").write_text("trip_id\n")
    alive = data / f".merge-{os.getpid()}"
    alive.mkdir()
    p = run_import([feeds["north"], feeds["east"]], data, "--quiet")
    assert p.returncode == 0, p.stderr
    assert not stale.exists()
    assert alive.exists()
    alive.rmdir()
