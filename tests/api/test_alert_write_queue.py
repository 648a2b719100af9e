"""Alert writes are answered on a thread of their own (objc/write_queue.h):
a commit waits for its fsync (synchronous=FULL), and that wait must stall no
thread that answers reads. The server runs with one pool thread and an
LD_PRELOAD shim (preload/slow_wal_sync.c) that makes every fsync of SQLite's
write-ahead log take 600 ms: reads sent while a PUT waits for its fsync are
answered at once, the PUT is answered after its fsync (not before: the 2xx
still means the write is on disk), and a client that hangs up while its
write waits leaves a server that committed it and goes on.

Linux only (LD_PRELOAD); runs against the demo feed, nothing from ../shared.
"""
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest
import requests

from conftest import ROOT, tool_or_skip, transitd_bin
from http_server import Server, TMP, demo_feed, import_feed

SYNC_MS = 600
PLATFORM = "de:11000:900100001::1"
WHEN = "2026-11-23T08:00"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="LD_PRELOAD (the slow-fsync shim) is Linux's")


@pytest.fixture(scope="module")
def env():
    cc = tool_or_skip("cc", "clang", "gcc")
    base = TMP / "alert-write-queue"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    shim = base / "slow_wal_sync.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(shim),
                    str(ROOT / "tests" / "api" / "preload" / "slow_wal_sync.c"), "-ldl"], check=True)
    data = base / "data"
    import_feed(demo_feed(1), data)
    tokens = base / "tokens"
    token = subprocess.run([transitd_bin(), "token", "new", "--tokens", str(tokens), "--name", "ops"],
                           stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    server = Server(data, "--tokens", str(tokens), "--threads", "1",
                    env={"LD_PRELOAD": str(shim), "TD_TEST_WAL_SYNC_MS": str(SYNC_MS)}).start(timeout=30)
    try:
        yield {"server": server, "token": token}
    finally:
        server.stop()


def alert(stop):
    return {"informed_entity": [{"stop_id": stop}], "cause": "CONSTRUCTION", "effect": "DETOUR",
            "header_text": {"translation": [{"text": "Works", "language": "en"}]}}


def put(env, alert_id, out):
    t0 = time.monotonic()
    r = requests.put(env["server"].url(f"/v1/alerts/{alert_id}"), data=json.dumps(alert(PLATFORM)),
                     headers={"Authorization": f"Bearer {env['token']}", "Content-Type": "application/json"},
                     timeout=30)
    out.update(status=r.status_code, seconds=time.monotonic() - t0, body=r.text)


def board_path():
    return f"/v1/stops/{urllib.parse.quote(PLATFORM, safe='')}/departures?time={WHEN}&limit=20"


def test_reads_are_answered_while_a_write_waits_for_its_fsync(env):
    s = env["server"]
    assert requests.get(s.url(board_path()), timeout=10).status_code == 200
    for attempt in range(3):   # bounded: a loaded machine may delay the PUT's start
        done = {}
        writer = threading.Thread(target=put, args=(env, f"queue-{attempt}", done))
        writer.start()
        time.sleep(SYNC_MS / 1000 / 4)   # the PUT is in its fsync by now
        waits = []
        while writer.is_alive() and len(waits) < 20:
            t0 = time.monotonic()
            r = requests.get(s.url(board_path()), timeout=10)
            waits.append(time.monotonic() - t0)
            assert r.status_code == 200
            assert requests.get(s.url("/healthz"), timeout=10).status_code == 200
        writer.join(timeout=30)
        assert done.get("status") == 201, done
        # the shim worked: the 2xx came after the fsync it slowed
        assert done["seconds"] >= SYNC_MS / 1000 * 0.9, done
        if len(waits) >= 3:
            break
    # several reads went through while the one pool thread's write waited;
    # with the write on that thread each would have waited for the fsync
    assert len(waits) >= 3, waits
    assert max(waits) < SYNC_MS / 1000 / 2, waits
    got = requests.get(s.url(f"/v1/alerts/queue-{attempt}"), timeout=10)
    assert got.status_code == 200 and got.json()["id"] == f"queue-{attempt}"


def test_a_client_that_hangs_up_while_its_write_waits(env):
    s = env["server"]
    body = json.dumps(alert(PLATFORM)).encode()
    head = (f"PUT /v1/alerts/gone HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n"
            f"Authorization: Bearer {env['token']}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        c.sendall(head + body)
        time.sleep(SYNC_MS / 1000 / 4)   # the write is waiting for its fsync; leave
    # the write was committed all the same, and the server goes on answering
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        r = requests.get(s.url("/v1/alerts/gone"), timeout=10)
        if r.status_code == 200:
            break
        time.sleep(0.1)
    assert r.status_code == 200, r.text
    assert requests.get(s.url(board_path()), timeout=10).status_code == 200
    assert s.proc.poll() is None


def test_writes_stay_in_order_and_answer_as_before(env):
    s = env["server"]
    h = {"Authorization": f"Bearer {env['token']}", "Content-Type": "application/json"}
    r = requests.put(s.url("/v1/alerts/order"), data=json.dumps(alert(PLATFORM)), headers=h, timeout=30)
    assert r.status_code == 201 and r.headers["ETag"]
    # a lost update is still refused (the precondition is checked on the write thread)
    stale = {**h, "If-Match": '"1"'}
    r2 = requests.put(s.url("/v1/alerts/order"), data=json.dumps(alert(PLATFORM)), headers=h, timeout=30)
    assert r2.status_code == 200
    r3 = requests.put(s.url("/v1/alerts/order"), data=json.dumps(alert(PLATFORM)), headers=stale, timeout=30)
    assert r3.status_code == 412 and r3.headers["Content-Type"].startswith("application/problem+json")
    # bad bodies are refused as before
    r4 = requests.put(s.url("/v1/alerts/order"), data="{", headers=h, timeout=30)
    assert r4.status_code == 400
    assert requests.delete(s.url("/v1/alerts/order"), headers=h, timeout=30).status_code == 204
    assert requests.get(s.url("/v1/alerts/order"), timeout=10).status_code == 404
