"""Black-box tests of the binary's command line and of `transitd import`:
usage and exit codes, what an import leaves in the data directory (versions,
the `current` symlink, the three stores, live.sqlite), the --json summary, the
no-op re-import, switching and pruning versions, directory and subfolder
feeds, the version's name (the feed's SHA-256, computed here apart), the
import lock, and the progress lines on a terminal. Feeds come from
bench/gtfs_gen.py (deterministic), generated once per session, and from
../shared/gtfs."""
import csv
import hashlib
import io
import json
import os
import pathlib
import pty
import re
import subprocess
import sys
import zipfile

import pytest

from conftest import shared_feed

ROOT = pathlib.Path(__file__).resolve().parents[2]

GEN = ROOT / "bench" / "gtfs_gen.py"
HEX12 = re.compile(r"^[0-9a-f]{12}$")
STORES = ("timetable.bin", "schedule.sqlite", "shapes.sqlite")


def run(transitd, *args, env=None, timeout=300):
    return subprocess.run([transitd, *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=timeout)


def generate(out, seed, as_dir=False):
    dest = ["--dir", str(out)] if as_dir else ["--out", str(out)]
    subprocess.run([sys.executable, str(GEN), "--scale", "demo", "--seed", str(seed), *dest],
                   check=True, stderr=subprocess.DEVNULL)
    return out


@pytest.fixture(scope="session")
def feeds(tmp_path_factory):
    d = tmp_path_factory.mktemp("import-feeds")
    return {
        "a": generate(d / "demo1.zip", 1),
        "b": generate(d / "demo2.zip", 2),
        "c": generate(d / "demo3.zip", 3),
        "dir": generate(d / "demo1-dir", 1, as_dir=True),
    }


def current_version(data):
    link = pathlib.Path(data) / "current"
    assert link.is_symlink(), f"{link} is not a symlink"
    target = os.readlink(link)
    m = re.fullmatch(r"versions/([0-9a-f]{12})", target)
    assert m, f"current points to {target!r}, not versions/<12 hex>"
    return m.group(1)


def versions(data):
    return sorted(p.name for p in (pathlib.Path(data) / "versions").iterdir())


def import_json(transitd, feed, data, *extra):
    p = run(transitd, "import", feed, "--data", data, "--json", *extra)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def zip_rows(feed_zip, member):
    with zipfile.ZipFile(feed_zip) as z:
        text = z.read(member).decode("utf-8-sig")
    return sum(1 for row in csv.reader(io.StringIO(text)) if row) - 1


# ---------------------------------------------------------------- the binary's CLI

def test_no_arguments_prints_usage_and_exits_2(transitd):
    p = run(transitd)
    assert p.returncode == 2
    assert "usage: transitd" in p.stderr
    assert p.stdout == ""


@pytest.mark.parametrize("args", [["help"], ["--help"], ["-h"]])
def test_help_prints_usage_and_exits_0(transitd, args):
    p = run(transitd, *args)
    assert p.returncode == 0
    for command in ("import", "serve", "query", "version"):
        assert command in p.stdout


@pytest.mark.parametrize("command", ["import", "query", "serve"])
def test_each_subcommand_has_help(transitd, command):
    p = run(transitd, command, "--help")
    assert p.returncode == 0, p.stderr
    assert "usage" in p.stdout.lower()
    q = run(transitd, "help", command)
    assert q.returncode == 0
    assert q.stdout == p.stdout


def test_unknown_subcommand_exits_2(transitd):
    p = run(transitd, "frobnicate")
    assert p.returncode == 2
    assert "frobnicate" in p.stderr
    assert "usage: transitd" in p.stderr


def test_version_names_the_libraries(transitd):
    p = run(transitd, "version")
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert re.fullmatch(r"transitd \S+", lines[0])
    for lib in ("libmicrohttpd", "sqlite", "zlib", "libzip"):
        assert any(line.startswith(lib + " ") and re.search(r"\d", line) for line in lines), lib


@pytest.mark.parametrize("args, needle", [
    ([], "missing FEED"),
    (["feed.zip", "--bogus"], "--bogus"),
    (["feed.zip", "--data"], "--data"),
    (["a.zip", "--feed-id", "x"], "--feed-id"),   # a name only for a feed of a merge
    (["--feed-id", "x", "a.zip", "b.zip"], "--feed-id"),
])
def test_import_usage_errors_exit_2(transitd, args, needle):
    p = run(transitd, "import", *args)
    assert p.returncode == 2
    assert needle in p.stderr
    assert "usage: transitd import" in p.stderr


def test_import_of_a_missing_feed_exits_1(transitd, tmp_path):
    p = run(transitd, "import", tmp_path / "nope.zip", "--data", tmp_path / "data")
    assert p.returncode == 1
    assert "nope.zip" in p.stderr
    assert not (tmp_path / "data" / "current").exists()


# ---------------------------------------------------------------- importing

def test_import_demo_feed_activates_a_version(transitd, feeds, tmp_path):
    data = tmp_path / "data"
    p = run(transitd, "import", feeds["a"], "--data", data)
    assert p.returncode == 0, p.stderr
    v = current_version(data)
    vdir = data / "versions" / v
    for name in STORES + ("COMPLETE",):
        assert (vdir / name).is_file(), name
        assert (vdir / name).stat().st_size > 0, name
    assert (data / "live.sqlite").is_file()
    assert versions(data) == [v]                  # no temporary directory left
    assert v in p.stdout                          # the summary names the version
    assert "stop_times.txt" in p.stdout
    assert f"{zip_rows(feeds['a'], 'stop_times.txt'):,}" in p.stdout
    assert "total wall" in p.stdout
    # the written version answers queries
    q = run(transitd, "query", "--data", data, "feed")
    assert q.returncode == 0, q.stderr


def test_json_summary_has_every_key(transitd, feeds, tmp_path):
    data = tmp_path / "data"
    s = import_json(transitd, feeds["a"], data)
    for key in ("version", "feed", "data_dir", "activated", "noop", "seconds", "phases",
                "files", "stores", "counts", "problems", "examples"):
        assert key in s, key
    assert HEX12.match(s["version"])
    assert s["version"] == current_version(data)
    assert s["activated"] is True and s["noop"] is False
    assert s["feed"] == str(feeds["a"]) and s["data_dir"] == str(data)
    assert s["seconds"] > 0
    for phase in ("hash", "timetable", "schedule", "shapes", "verify", "activate"):
        assert phase in s["phases"], phase
    for name in ("stop_times.txt", "stops.txt", "trips.txt", "routes.txt", "shapes.txt"):
        assert s["files"][name] == zip_rows(feeds["a"], name), name
    vdir = data / "versions" / s["version"]
    for name in STORES:
        assert s["stores"][name] == (vdir / name).stat().st_size, name
    assert s["counts"]["stops"] == zip_rows(feeds["a"], "stops.txt")
    assert s["counts"]["routes"] == zip_rows(feeds["a"], "routes.txt")
    assert s["counts"]["trips"] > 0 and s["counts"]["stop_times"] > 0
    assert isinstance(s["problems"], dict) and isinstance(s["examples"], list)
    assert len(s["examples"]) <= 10


def test_reimport_of_the_active_feed_is_a_noop(transitd, feeds, tmp_path):
    data = tmp_path / "data"
    first = import_json(transitd, feeds["a"], data)
    marker = data / "versions" / first["version"] / "COMPLETE"
    before = marker.stat().st_mtime_ns
    p = run(transitd, "import", feeds["a"], "--data", data)
    assert p.returncode == 0, p.stderr
    assert f"feed already imported as version {first['version']}; nothing to do" in p.stdout
    assert marker.stat().st_mtime_ns == before
    s = import_json(transitd, feeds["a"], data)
    assert s["noop"] is True and s["activated"] is False
    assert s["version"] == first["version"]
    assert s["counts"]["stops"] == first["counts"]["stops"]
    assert current_version(data) == first["version"]
    assert versions(data) == [first["version"]]


def test_force_rebuilds_the_active_version(transitd, feeds, tmp_path):
    data = tmp_path / "data"
    first = import_json(transitd, feeds["a"], data)
    s = import_json(transitd, feeds["a"], data, "--force")
    assert s["noop"] is False and s["activated"] is True
    assert s["version"] == first["version"] == current_version(data)
    assert s["files"]["stop_times.txt"] == first["files"]["stop_times.txt"]
    assert versions(data) == [first["version"]]
    assert run(transitd, "query", "--data", data, "feed").returncode == 0


def test_new_feeds_switch_current_and_pruning_keeps_two(transitd, feeds, tmp_path):
    data = tmp_path / "data"
    a = import_json(transitd, feeds["a"], data)["version"]
    b_summary = import_json(transitd, feeds["b"], data)
    b = b_summary["version"]
    assert b != a
    assert current_version(data) == b
    assert b_summary["previous"] == a
    assert versions(data) == sorted([a, b])            # the previous one is kept
    c = import_json(transitd, feeds["c"], data)["version"]
    assert current_version(data) == c
    assert versions(data) == sorted([b, c])            # the oldest one is pruned
    # importing `a` again builds it anew and prunes `b`
    a2 = import_json(transitd, feeds["a"], data)
    assert a2["version"] == a and a2["activated"] is True
    assert versions(data) == sorted([a, c])


def test_reimport_of_the_previous_feed_reactivates_it(transitd, feeds, tmp_path):
    data = tmp_path / "data"
    a = import_json(transitd, feeds["a"], data)["version"]
    b = import_json(transitd, feeds["b"], data)["version"]
    s = import_json(transitd, feeds["a"], data)
    assert s["version"] == a and s["reused"] is True and s["activated"] is True
    assert current_version(data) == a
    assert versions(data) == sorted([a, b])
    # `a` is now the most recent: a third feed prunes `b`, not `a`
    c = import_json(transitd, feeds["c"], data)["version"]
    assert versions(data) == sorted([a, c])


def test_directory_feed(transitd, feeds, tmp_path):
    data = tmp_path / "data"
    s = import_json(transitd, feeds["dir"], data)
    assert s["activated"] is True
    assert s["files"]["stop_times.txt"] == zip_rows(feeds["a"], "stop_times.txt")
    for name in STORES:
        assert (data / "current" / name).is_file()


# ---------------------------------------------------------------- the version's name

def feed_version(feed):
    """The version transitd names a feed by, computed without it: the first 12
    hex digits of the SHA-256 of a zip file's bytes, or of a directory's .txt
    members (regular files, not dot files) in byte order of their names, each
    as its name, a NUL byte, then its bytes."""
    h = hashlib.sha256()
    feed = pathlib.Path(feed)
    if feed.is_dir():
        members = [p for p in feed.iterdir()
                   if p.name.endswith(".txt") and not p.name.startswith(".") and p.is_file()]
        for p in sorted(members, key=lambda p: p.name.encode()):
            h.update(p.name.encode() + b"\0")
            h.update(p.read_bytes())
    else:
        h.update(feed.read_bytes())
    return h.hexdigest()[:12]


def test_version_is_the_feeds_sha256(transitd, feeds, tmp_path):
    """The hash runs alongside the build now; the name must not change: a
    fresh import, the no-op re-import and --force all name the version the
    feed's SHA-256 as Python's hashlib computes it."""
    for key in ("a", "dir"):
        data = tmp_path / f"data-{key}"
        want = feed_version(feeds[key])
        first = import_json(transitd, feeds[key], data)
        assert first["version"] == want and current_version(data) == want, key
        again = import_json(transitd, feeds[key], data)
        assert again["noop"] is True and again["version"] == want, key
        forced = import_json(transitd, feeds[key], data, "--force")
        assert forced["activated"] is True and forced["version"] == want, key
        assert versions(data) == [want], key   # no build directory left behind


def test_version_of_a_real_feed_is_unchanged(transitd, tmp_path):
    """Fixed values: what transitd named the Cairns feed, as a zip and as a
    directory of its members (2.5 MB stop_times.txt: many 1 MiB chunks), before
    the hash moved to nettle and beside the build. An existing data directory
    must keep its versions."""
    feed = shared_feed("cairns_translink_2014.zip")
    folder = tmp_path / "cairns"
    with zipfile.ZipFile(feed) as z:
        z.extractall(folder)
    for path, want in ((feed, "4efd0b76c72a"), (folder, "eafa7f311d87")):
        assert feed_version(path) == want, path
        s = import_json(transitd, path, tmp_path / f"data-{pathlib.Path(path).name}")
        assert s["version"] == want, path


def test_zip_with_the_files_in_a_subfolder(transitd, feeds, tmp_path):
    nested = tmp_path / "nested.zip"
    with zipfile.ZipFile(feeds["a"]) as src, zipfile.ZipFile(nested, "w",
                                                             zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr("my-feed-2026/" + info.filename, src.read(info))
    data = tmp_path / "data"
    s = import_json(transitd, nested, data)
    assert s["activated"] is True
    assert s["files"]["stop_times.txt"] == zip_rows(feeds["a"], "stop_times.txt")
    assert s["counts"]["stops"] == zip_rows(feeds["a"], "stops.txt")


def test_data_dir_from_the_environment(transitd, feeds, tmp_path):
    data = tmp_path / "envdata"
    env = dict(os.environ, TRANSITD_DATA=str(data))
    p = run(transitd, "import", feeds["a"], "--quiet", env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""                      # --quiet prints nothing on success
    assert HEX12.match(current_version(data))


def test_default_data_dir_is_dot_data(transitd, feeds, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRANSITD_DATA"}
    p = subprocess.run([transitd, "import", str(feeds["a"]), "--quiet"], cwd=tmp_path,
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    assert HEX12.match(current_version(tmp_path / "data"))


def test_two_concurrent_imports_are_serialised(transitd, feeds, tmp_path):
    data = tmp_path / "data"
    procs = [subprocess.Popen([transitd, "import", str(feeds[k]), "--data", str(data), "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k in ("a", "b")]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    got = [json.loads(out)["version"] for out, _ in outs]
    assert current_version(data) in got
    assert versions(data) == sorted(got)       # both complete, nothing half-written left
    for v in got:
        assert (data / "versions" / v / "COMPLETE").is_file()


def test_a_real_directory_named_current_is_refused(transitd, feeds, tmp_path):
    data = tmp_path / "data"
    (data / "current").mkdir(parents=True)
    p = run(transitd, "import", feeds["a"], "--data", data)
    assert p.returncode == 1
    assert "current" in p.stderr and "symlink" in p.stderr
    assert (data / "current").is_dir() and not (data / "current").is_symlink()


def test_progress_lines_on_a_terminal(transitd, feeds, tmp_path):
    data = tmp_path / "data"
    master, slave = pty.openpty()
    p = subprocess.Popen([transitd, "import", str(feeds["a"]), "--data", str(data)],
                         stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 4096)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    out, _ = p.communicate(timeout=300)
    os.close(master)
    progress = b"".join(chunks).decode()
    assert p.returncode == 0
    assert "timetable.bin" in progress and "schedule.sqlite" in progress
    assert re.search(r"stop_times\.txt +[\d,]+ rows +[\d.]+ MB", progress)
    assert re.search(r"read [\d.]+ MB at \d+ MB/s", progress)
    assert "activated" in progress
    # without a terminal there are no progress lines, only the summary
    q = run(transitd, "import", feeds["b"], "--data", data)
    assert q.returncode == 0
    assert "MB/s" not in q.stderr
