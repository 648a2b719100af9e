"""Re-importing one feed of many: the merge cache (src/import/merge_cache.h).

The merged directory of the import that built the active version is kept as
DATA/merge-cache; a feed whose bytes, name, position, the merged headers and
its collision set (the ids other feeds make it namespace) are unchanged, built
by the same executable, has its merged rows copied from there after each
range's SHA-256 is checked. A dataset built so is the same bytes as one built
without the cache, any change of what a feed's rows depend on merges that feed
again, a changed or cut cache is not used, and only the active version's merge
is kept.
"""
import os
import shutil
import subprocess

from conftest import transitd_bin
from test_import_memory import timetable_bytes
from test_import_merge import TMP, feed_files, write_zip
from test_store_reuse import fresh, make_feeds

FROM_CACHE = "(unchanged: its rows from the merge cache)"


def run(feeds, data, *extra, binary=None):
    p = subprocess.run([binary or transitd_bin(), "import", *feeds, "--data", str(data), *extra],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    return p.stderr


def cached(stderr):
    """The indexes of the feeds whose rows came from the cache."""
    return [int(line.split(":")[0].split()[1]) for line in stderr.splitlines()
            if line.startswith("feed ") and FROM_CACHE in line]


def merged_files(data):
    d = data / "merge-cache"
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def assert_same_dataset(data, rebuilt):
    """Every store and the merged files are the same bytes (timetable.bin but
    the import's clock), and so is the cache's index."""
    for store in ("schedule.sqlite", "shapes.sqlite"):
        assert (data / "current" / store).read_bytes() == (rebuilt / "current" / store).read_bytes(), store
    assert timetable_bytes(data) == timetable_bytes(rebuilt)
    assert os.readlink(data / "current") == os.readlink(rebuilt / "current")
    assert merged_files(data) == merged_files(rebuilt)


def prepared(name):
    tmp = fresh(TMP, name)
    tmp.mkdir(parents=True)
    return tmp, make_feeds(tmp), make_feeds(tmp, east_stop="East Renamed")


def test_unchanged_feeds_are_copied_and_the_dataset_is_the_same_bytes():
    tmp, before, after = prepared("mcache-same")
    data = tmp / "data"
    first = run([before["north"], before["south"], before["east"]], data)
    assert cached(first) == []
    assert (data / "merge-cache" / ".merge_index").exists()
    again = run([after["north"], after["south"], after["east"]], data)
    assert cached(again) == [0, 1]   # east changed; north and south (namespaced by north) copied
    rebuilt = tmp / "rebuilt"
    assert cached(run([after["north"], after["south"], after["east"]], rebuilt)) == []
    assert_same_dataset(data, rebuilt)
    # and back: the first feeds again, two of three from the cache
    back = run([before["north"], before["south"], before["east"]], data)
    assert cached(back) == [0, 1]
    first_again = tmp / "first"
    run([before["north"], before["south"], before["east"]], first_again)
    assert_same_dataset(data, first_again)


def test_a_change_of_the_collision_set_merges_the_feeds_it_touches_again():
    tmp, before, _ = prepared("mcache-collisions")
    data = tmp / "data"
    run([before["north"], before["south"], before["east"]], data)
    # north now defines SX, which south defines too: south's SX becomes south:SX
    north2 = write_zip(tmp / "north-sx.zip", feed_files("North", ["N1", "N2", "N3"], extra_stop="SX"))
    again = run([north2, before["south"], before["east"]], data)
    assert cached(again) == [2]
    rebuilt = tmp / "rebuilt"
    run([north2, before["south"], before["east"]], rebuilt)
    assert_same_dataset(data, rebuilt)
    # another order: every feed's position or namespacing changes
    swapped = run([before["south"], north2, before["east"]], data)
    assert cached(swapped) == [2]   # east: same position, no collision; its context is unchanged
    rebuilt2 = tmp / "rebuilt2"
    run([before["south"], north2, before["east"]], rebuilt2)
    assert_same_dataset(data, rebuilt2)
    # a later feed that starts defining an id an earlier feed only refers to
    lone = feed_files("Lone", ["L1", "L2", "L3"], agency_id="lag")
    lone = {n: [line.replace("S1", "LS1").replace("S2", "LS2").replace("S3", "LS3").replace("ST,", "LST,")
                .replace(",ST", ",LST").replace("T1,", "LT1,").replace("T2,", "LT2,").replace("R1", "LR1")
                .replace("SH", "LSH").replace("WK", "LWK") for line in lines] for n, lines in lone.items()}
    lone["transfers.txt"] = ["from_stop_id,to_stop_id,transfer_type", "LS1,GHOST,2"]
    lone_zip = write_zip(tmp / "lone.zip", lone)
    run([lone_zip, before["east"]], data)
    ghost = {n: list(lines) for n, lines in feed_files("Ghost", ["G1", "G2", "G3"], agency_id="gag").items()}
    ghost["stops.txt"].append("GHOST,Ghost Stop,40.7400,-73.9400,0,")
    ghost_zip = write_zip(tmp / "ghost.zip", ghost)
    third = run([lone_zip, before["east"], ghost_zip], data)
    # lone refers to GHOST, which now the third feed defines: lone's rows name it ghost's way
    assert 0 not in cached(third)
    rebuilt3 = tmp / "rebuilt3"
    run([lone_zip, before["east"], ghost_zip], rebuilt3)
    assert_same_dataset(data, rebuilt3)


def test_another_build_or_force_merges_every_feed_again():
    tmp, before, after = prepared("mcache-build")
    data = tmp / "data"
    run([before["north"], before["south"], before["east"]], data)
    other = tmp / "transitd-other"
    shutil.copy(transitd_bin(), other)
    with open(other, "ab") as f:   # another executable: one byte more, runs the same
        f.write(b"\0")
    again = run([after["north"], after["south"], after["east"]], data, binary=str(other))
    assert cached(again) == []
    forced = run([after["north"], after["south"], after["east"]], data, "--force")
    assert cached(forced) == []
    rebuilt = tmp / "rebuilt"
    run([after["north"], after["south"], after["east"]], rebuilt)
    assert_same_dataset(data, rebuilt)


def test_a_changed_or_partial_cache_is_not_used():
    tmp, before, after = prepared("mcache-corrupt")
    data = tmp / "data"
    run([before["north"], before["south"], before["east"]], data)
    stop_times = data / "merge-cache" / "stop_times.txt"
    b = bytearray(stop_times.read_bytes())
    at = b.index(b"\n") + 3            # inside north's first row
    b[at] = ord("9") if b[at] != ord("9") else ord("8")
    stop_times.write_bytes(bytes(b))
    again = run([after["north"], after["south"], after["east"]], data)
    assert cached(again) == [1]        # north's range no longer matches its SHA-256
    rebuilt = tmp / "rebuilt"
    run([after["north"], after["south"], after["east"]], rebuilt)
    assert_same_dataset(data, rebuilt)
    # a cut index, and a cut merged file
    index = data / "merge-cache" / ".merge_index"
    index.write_bytes(index.read_bytes()[:-40])
    assert cached(run([before["north"], before["south"], before["east"]], data)) == []
    trips = data / "merge-cache" / "trips.txt"
    lines = trips.read_bytes().split(b"\n")
    trips.write_bytes(b"\n".join(lines[:4]) + b"\n")   # the header, north's two trips, one of south's
    third = run([after["north"], after["south"], after["east"]], data)
    assert cached(third) == [0]        # south's trips are cut: merged again
    assert_same_dataset(data, rebuilt)


def test_only_the_active_versions_merge_is_kept():
    tmp, before, after = prepared("mcache-bounded")
    data = tmp / "data"
    run([before["north"], before["south"], before["east"]], data)
    index = (data / "merge-cache" / ".merge_index").read_bytes()
    # refused (nothing activated): the cache stays the active version's
    p = subprocess.run([transitd_bin(), "import", before["north"], before["south"], "--data", str(data),
                        "--max-shrink", "10"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 3, p.stderr
    assert (data / "merge-cache" / ".merge_index").read_bytes() == index
    run([after["north"], after["south"], after["east"]], data)
    assert (data / "merge-cache" / ".merge_index").read_bytes() != index
    leftovers = [p.name for p in data.iterdir() if p.name.startswith(".merge")]
    assert leftovers == []
    # one feed imported alone: no merge to keep
    run([after["east"]], data, "--max-shrink", "100")
    assert not (data / "merge-cache").exists()
    assert cached(run([after["north"], after["south"], after["east"]], data)) == []


def test_a_copied_feeds_problems_name_its_own_file_and_line():
    """The lines map comes from the cache with the rows: the import's examples
    point at the feed's own line either way."""
    tmp, before, after = prepared("mcache-lines")
    south = feed_files("South", ["S1", "S2", "S3"], extra_stop="SX")
    south["stop_times.txt"][5] = "T2,xx:50:00,08:50:00,S2,2"
    south_bad = write_zip(tmp / "south-bad.zip", south)
    data, rebuilt = tmp / "data", tmp / "rebuilt"
    run([before["north"], south_bad, before["east"]], data, "--max-drop", "100")

    def examples(d):
        p = subprocess.run([transitd_bin(), "import", before["north"], south_bad, after["east"], "--data", str(d),
                            "--max-drop", "100"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.returncode == 0, p.stderr
        return p.stderr, [line.strip() for line in p.stdout.splitlines() if "stop_times.txt:" in line]

    stderr, copied = examples(data)
    assert cached(stderr) == [0, 1]
    _, built = examples(rebuilt)
    assert copied == built == [f"{south_bad}: stop_times.txt:6: bad arrival_time 'xx:50:00'"]
    assert_same_dataset(data, rebuilt)
