"""Re-importing one feed of many: a store whose inputs are unchanged is taken
from the active version (src/import/store_reuse.h), and is then the same
bytes a rebuild would write; any change of its inputs, of the store's format
(the recorded digest), of the build, or --force builds it again.

shapes.sqlite is made from the merged shapes.txt alone: its inputs' digest
(with the store's format number and the SQLite version) is kept in the
version's COMPLETE marker as `shapes_input`.
"""
import json
import re
import shutil

from test_import_merge import TMP, feed_files, run_import, write_zip


def imported(feeds, data, *extra):
    p = run_import(feeds, data, "--json", *extra)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def marker(data):
    return (data / "current" / "COMPLETE").read_text()


def shapes_bytes(data):
    return (data / "current" / "shapes.sqlite").read_bytes()


def make_feeds(tmp, east_stop="East One", east_shape_lat="40.7200"):
    files = {}
    files["north"] = write_zip(tmp / "north.zip", feed_files("North", ["N1", "N2", "N3"]))
    files["south"] = write_zip(tmp / "south.zip", feed_files("South", ["S1", "S2", "S3"], extra_stop="SX"))
    east = feed_files("East", [east_stop, "East Two", "East Three"], agency_id="eag")
    east = {name: [line.replace("SH", "ESH").replace("R1", "ER1").replace("WK", "EWK").replace("T1,", "ET1,")
                   .replace("T2,", "ET2,").replace("ST,", "EST,").replace(",ST", ",EST")
                   for line in lines] for name, lines in east.items()}
    east["shapes.txt"][2] = f"ESH,{east_shape_lat},-73.9200,2"
    files["east"] = write_zip(tmp / f"east-{east_stop.replace(' ', '')}-{east_shape_lat}.zip", east)
    return files


def fresh(tmp, name):
    d = tmp / name
    shutil.rmtree(d, ignore_errors=True)
    return d


def test_an_unchanged_shapes_txt_is_taken_and_equals_a_rebuild():
    tmp = fresh(TMP, "reuse-unchanged")
    tmp.mkdir(parents=True)
    before, after = make_feeds(tmp), make_feeds(tmp, east_stop="East Renamed")
    data = tmp / "data"
    first = imported([before["north"], before["south"], before["east"]], data)
    assert first["stores_reused"] == []
    recorded = re.search(r"^shapes_input ([0-9a-f]{64})$", marker(data), re.M)
    assert recorded, marker(data)
    again = imported([after["north"], after["south"], after["east"]], data)
    assert again["version"] != first["version"]
    assert again["stores_reused"] == ["shapes.sqlite"]
    assert again["files"]["shapes.txt"] == first["files"]["shapes.txt"]
    assert again["stores"]["shapes.sqlite"] == first["stores"]["shapes.sqlite"]
    assert f"shapes_input {recorded.group(1)}" in marker(data)
    # the same bytes as a build from nothing, and as a forced rebuild
    rebuilt = imported([after["north"], after["south"], after["east"]], tmp / "rebuilt")
    assert rebuilt["stores_reused"] == []
    assert rebuilt["version"] == again["version"]
    assert shapes_bytes(data) == shapes_bytes(tmp / "rebuilt")
    forced = imported([after["north"], after["south"], after["east"]], data, "--force")
    assert forced["stores_reused"] == []
    assert shapes_bytes(data) == shapes_bytes(tmp / "rebuilt")


def test_a_single_feed_reimport_takes_it_too():
    tmp = fresh(TMP, "reuse-single")
    tmp.mkdir(parents=True)
    before, after = make_feeds(tmp), make_feeds(tmp, east_stop="East Renamed")
    data = tmp / "data"
    assert imported([before["east"]], data)["stores_reused"] == []
    assert imported([after["east"]], data)["stores_reused"] == ["shapes.sqlite"]
    imported([after["east"]], tmp / "rebuilt")
    assert shapes_bytes(data) == shapes_bytes(tmp / "rebuilt")


def test_a_changed_shapes_txt_is_rebuilt():
    tmp = fresh(TMP, "reuse-changed")
    tmp.mkdir(parents=True)
    before, after = make_feeds(tmp), make_feeds(tmp, east_shape_lat="40.7250")
    data = tmp / "data"
    imported([before["north"], before["south"], before["east"]], data)
    old = shapes_bytes(data)
    again = imported([after["north"], after["south"], after["east"]], data)
    assert again["stores_reused"] == []
    assert shapes_bytes(data) != old
    imported([after["north"], after["south"], after["east"]], tmp / "rebuilt")
    assert shapes_bytes(data) == shapes_bytes(tmp / "rebuilt")


def rewrite_marker(data, old, new):
    path = data / "current" / "COMPLETE"
    text = path.read_text()
    assert re.search(old, text, re.M), text
    path.write_text(re.sub(old, new, text, flags=re.M))


def test_another_format_or_build_forces_a_rebuild():
    """A digest recorded by another store format (or SQLite) differs from this
    build's, and a marker of another transitd build is not trusted at all."""
    tmp = fresh(TMP, "reuse-format")
    tmp.mkdir(parents=True)
    a, b = make_feeds(tmp), make_feeds(tmp, east_stop="East Renamed")
    c = make_feeds(tmp, east_stop="East Renamed Again")
    data = tmp / "data"
    imported([a["north"], a["east"]], data)
    rewrite_marker(data, r"^shapes_input [0-9a-f]{64}$", "shapes_input " + "0" * 64)
    assert imported([b["north"], b["east"]], data)["stores_reused"] == []
    assert "shapes_input " + "0" * 64 not in marker(data)
    rewrite_marker(data, r"^builder .*$", "builder 0.0.1-other")
    assert imported([c["north"], c["east"]], data)["stores_reused"] == []
    imported([c["north"], c["east"]], tmp / "rebuilt")
    assert shapes_bytes(data) == shapes_bytes(tmp / "rebuilt")


def test_a_store_whose_build_reported_problems_is_not_recorded():
    """Its problems would not be reported again by a taken store: it is built
    each time, and they are."""
    tmp = fresh(TMP, "reuse-problems")
    tmp.mkdir(parents=True)
    files = feed_files("Bad", ["B1", "B2", "B3"])
    files["shapes.txt"].append("SH,not-a-lat,-73.9300,3")
    bad = write_zip(tmp / "bad.zip", files)
    files["stops.txt"][2] = files["stops.txt"][2].replace("B1", "B1 renamed")
    bad2 = write_zip(tmp / "bad2.zip", files)
    data = tmp / "data"
    first = imported([bad], data)
    assert first["problems"], first
    assert "shapes_input" not in marker(data)
    again = imported([bad2], data)
    assert again["stores_reused"] == []
    assert again["problems"] == first["problems"]
