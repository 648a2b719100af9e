"""`transitd serve` follows the data directory's active version, and imports
never delete the version a server maps.

Why it exists: two imports without SIGHUP used to prune the version a running
server still mapped; /readyz stayed 200 and the disk was not freed. Here:
the server switches to the newest version by itself; a version it maps
survives pruning (it is marked .retired) and goes once the server let go;
no deleted file stays mapped or open; /readyz says which version is served,
whether it is the active one, and answers 503 while the server will not
switch by itself (the active version does not open, or following is off).
"""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
import requests

import schema_check
from conftest import transitd_bin
from http_server import Server, TMP, demo_feed, import_feed

DOC = schema_check.load_openapi()


def fresh_dir(name):
    d = TMP / name
    shutil.rmtree(d, ignore_errors=True)
    return d


def versions(data):
    return sorted(p.name for p in (data / "versions").iterdir() if not p.name.startswith("."))


def active(data):
    return os.readlink(data / "current").rsplit("/", 1)[-1]


def readyz(server):
    return requests.get(server.url("/readyz"), timeout=10)


def version_members(body):
    """/readyz's members about versions; feed_validity and its warning are
    test_feed_validity.py's, realtime test_replica.py's."""
    assert body.get("realtime", False) is False   # these servers have no realtime source
    return {k: v for k, v in body.items() if k not in ("feed_validity", "warning", "realtime")}


def served_version(server):
    return requests.get(server.url("/v1/feed"), timeout=10).json()["feed"]["version"]


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s: {what}")


KEPT_DERIVED = re.compile(r"/\.[a-z-]+-open-[A-Za-z0-9]{6} \(deleted\)$")


def own_kept_file(path):
    """A served dataset's derived arrays or row texts, in a file of its version
    directory unlinked as it was created (dataset_keep_derived_in_files): held
    by design while that version is served, and flagged like any other once
    its directory is gone."""
    return KEPT_DERIVED.search(path) and pathlib.Path(path.rsplit("/", 1)[0]).is_dir()


def deleted_files_held(pid, data):
    """Files under data that the process maps or keeps open although they were
    deleted (Linux: /proc); the disk they use is not freed."""
    root = str(pathlib.Path(data).resolve())
    held = []
    with open(f"/proc/{pid}/maps") as maps:
        held += [line.split(None, 5)[-1].strip() for line in maps
                 if root in line and line.rstrip().endswith("(deleted)")
                 and not own_kept_file(line.split(None, 5)[-1].strip())]
    fd_dir = pathlib.Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(root) and target.endswith("(deleted)"):
            held.append(target)
    return held


def maps_version(pid, data, version):
    root = str((pathlib.Path(data) / "versions" / version).resolve())
    with open(f"/proc/{pid}/maps") as maps:
        return any(root + "/timetable.bin" in line for line in maps)


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc to see what the server maps")


def search_once(server):
    """Opens a schedule.sqlite connection of the served version (stop search)."""
    r = requests.get(server.url("/v1/stops?q=a&limit=1"), timeout=10)
    assert r.status_code == 200, r.text


@linux_only
def test_two_imports_in_a_row_switch_without_sighup_and_free_the_old_version():
    data = fresh_dir("http-follow-two-imports")
    import_feed(demo_feed(1), data)
    first = active(data)
    with Server(data, "--quiet", "--threads", "2") as server:
        search_once(server)
        assert version_members(readyz(server).json()) == {"status": "ready", "dataset_version": first,
                                         "active_version": first, "stale": False}
        import_feed(demo_feed(2), data)
        import_feed(demo_feed(3), data)
        newest = active(data)
        assert newest != first
        wait_until(lambda: served_version(server) == newest, 10,
                   "the server switched to the newest version:\n" + server.log())
        body = readyz(server).json()
        assert version_members(body) == {"status": "ready", "dataset_version": newest, "active_version": newest,
                        "stale": False}
        search_once(server)
        # the first version goes (pruned, or collected once the server let go); two stay
        wait_until(lambda: first not in versions(data), 10,
                   f"version {first} removed: {versions(data)}\n" + server.log())
        assert len(versions(data)) == 2 and newest in versions(data)
        wait_until(lambda: not deleted_files_held(server.proc.pid, data), 5,
                   "no deleted file of the data directory stays mapped or open")
        assert server.log().count("now serving dataset") >= 1
        # SIGHUP when nothing changed re-opens nothing
        server.send_signal(signal.SIGHUP)
        server.wait_for_log(rf"SIGHUP: already serving the active version {newest}")
        assert served_version(server) == newest


@linux_only
def test_a_mapped_version_survives_pruning_and_goes_after_the_switch():
    data = fresh_dir("http-follow-pinned")
    import_feed(demo_feed(1), data)
    first = active(data)
    with Server(data, "--quiet", "--follow-interval", "0") as server:
        search_once(server)
        import_feed(demo_feed(2), data)
        import_feed(demo_feed(3), data)
        newest = active(data)
        # keep 2 would have removed the first version: the server maps it
        assert first in versions(data) and len(versions(data)) == 3
        assert (data / "versions" / first / ".retired").exists()
        assert (data / "versions" / first / "timetable.bin").exists()
        assert maps_version(server.proc.pid, data, first)
        assert deleted_files_held(server.proc.pid, data) == []
        assert served_version(server) == first

        # stale, and it will not switch by itself: 503 that says why
        r = readyz(server)
        assert r.status_code == 503, r.text
        assert r.headers["Content-Type"] == "application/problem+json; charset=utf-8"
        assert r.headers["Retry-After"] == "5"
        body = r.json()
        assert body["dataset_version"] == first and body["active_version"] == newest
        assert body["stale"] is True
        assert "--follow-interval 0" in body["detail"] and "SIGHUP" in body["detail"]
        schema_check.assert_matches(body, "ReadyProblem", DOC)

        server.send_signal(signal.SIGHUP)
        server.wait_for_log(rf"now serving dataset {newest}")
        assert version_members(readyz(server).json()) == {"status": "ready", "dataset_version": newest,
                                         "active_version": newest, "stale": False}
        wait_until(lambda: first not in versions(data), 5,
                   f"the retired version {first} removed: {versions(data)}\n" + server.log())
        server.wait_for_log(r"removed 1 version\(s\) an import retired while they were served")
        assert not maps_version(server.proc.pid, data, first)
        assert deleted_files_held(server.proc.pid, data) == []


def activate_by_hand(data, version):
    """What datadir_activate does: a fresh symlink renamed over `current`."""
    link = data / ".current-test"
    if link.is_symlink():
        link.unlink()
    link.symlink_to(f"versions/{version}")
    os.replace(link, data / "current")


def test_readyz_is_503_while_the_active_version_does_not_open():
    data = fresh_dir("http-follow-broken")
    import_feed(demo_feed(1), data)
    first = active(data)
    # the second feed's version, damaged, then made the active one
    other = fresh_dir("http-follow-broken-other")
    import_feed(demo_feed(2), other)
    second = active(other)
    shutil.copytree(other / "versions" / second, data / "versions" / second)
    timetable = data / "versions" / second / "timetable.bin"
    with open(timetable, "r+b") as f:
        f.truncate(timetable.stat().st_size // 2)

    with Server(data, "--quiet") as server:
        activate_by_hand(data, second)
        server.wait_for_log(r"reload failed, still serving the previous dataset")
        r = readyz(server)
        assert r.status_code == 503, r.text
        body = r.json()
        assert body["dataset_version"] == first and body["active_version"] == second
        assert body["stale"] is True
        assert f"the active version {second} cannot be served" in body["detail"]
        assert "truncated" in body["detail"]
        schema_check.assert_matches(body, "ReadyProblem", DOC)
        assert served_version(server) == first   # /v1 keeps answering
        # not retried every second while `current` stays the same
        time.sleep(2.5)
        assert server.log().count("reload failed") == 1, server.log()

        # importing the feed again rebuilds the damaged version in place: followed at once
        import_feed(demo_feed(2), data)
        wait_until(lambda: served_version(server) == second, 10,
                   "the rebuilt version is served:\n" + server.log())
        assert version_members(readyz(server).json()) == {"status": "ready", "dataset_version": second,
                                         "active_version": second, "stale": False}


def test_wait_for_data_starts_serving_the_first_import_by_itself():
    data = fresh_dir("http-follow-wait")
    data.mkdir(parents=True)
    with Server(data, "--quiet", "--wait-for-data") as server:
        assert readyz(server).status_code == 503
        import_feed(demo_feed(1), data)
        wait_until(lambda: readyz(server).status_code == 200, 10,
                   "the first import is served without SIGHUP:\n" + server.log())
        assert readyz(server).json()["dataset_version"] == active(data)


def test_follow_interval_is_validated_and_documented():
    p = subprocess.run([transitd_bin(), "serve", "--follow-interval", "-1"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=10)
    assert p.returncode == 2 and "--follow-interval must be" in p.stderr
    p = subprocess.run([transitd_bin(), "serve", "--help"], stdout=subprocess.PIPE, text=True,
                       timeout=10)
    assert "--follow-interval S" in p.stdout and "/readyz answers 503" in p.stdout
