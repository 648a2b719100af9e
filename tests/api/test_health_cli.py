"""`transitd health`: the probe the Dockerfile HEALTHCHECK and compose use.
Exit 0 only when the server answers 200; 1 with the reason when it answers
something else (a 503 with its detail), refuses the connection, or stays
silent past --timeout; 2 for usage errors. The default URL follows
$TRANSITD_PORT and $TRANSITD_BIND like `serve` does.
"""
import os
import shutil
import socket
import subprocess
import time

import pytest

from conftest import transitd_bin
from http_server import Server, TMP, demo_feed, free_port, import_feed


def health(*args, env=None, timeout=30):
    return subprocess.run([transitd_bin(), "health", *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})))


@pytest.fixture(scope="module")
def data():
    d = TMP / "health-data"
    shutil.rmtree(d, ignore_errors=True)
    import_feed(demo_feed(1), d)
    return d


def test_ready_server_is_healthy(data):
    with Server(data, "--quiet") as s:
        p = health("--url", s.url("/readyz"))
        assert p.returncode == 0, p.stderr
        assert p.stdout == f"{s.url('/readyz')}: 200 ready\n"
        # the default URL: /readyz on 127.0.0.1 at $TRANSITD_PORT (a wildcard bind is not dialled)
        for bind in ("0.0.0.0", "127.0.0.1", ""):
            p = health(env={"TRANSITD_PORT": str(s.port), "TRANSITD_BIND": bind})
            assert p.returncode == 0, (bind, p.stderr)
            assert f"http://127.0.0.1:{s.port}/readyz" in p.stdout


def test_waiting_server_is_alive_but_not_ready():
    empty = TMP / "health-empty"
    shutil.rmtree(empty, ignore_errors=True)
    empty.mkdir(parents=True)
    with Server(empty, "--quiet", "--wait-for-data") as s:
        p = health("--url", s.url("/readyz"))
        assert p.returncode == 1
        assert f"{s.url('/readyz')} answered 503: no dataset is loaded yet" in p.stderr
        assert health("--url", s.url("/healthz")).returncode == 0


def test_refused_and_silent_servers_fail_in_time():
    port = free_port()
    p = health("--url", f"http://127.0.0.1:{port}/readyz")
    assert p.returncode == 1
    assert f"cannot connect to 127.0.0.1 port {port}" in p.stderr and "refused" in p.stderr
    p = health("--url", f"http://[::1]:{port}/readyz")
    assert p.returncode == 1 and "::1" in p.stderr
    with socket.socket() as silent:          # accepts (backlog) but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        t0 = time.monotonic()
        p = health("--url", f"http://127.0.0.1:{silent.getsockname()[1]}/readyz",
                   "--timeout", "1")
        elapsed = time.monotonic() - t0
    assert p.returncode == 1 and "no answer in time" in p.stderr
    assert elapsed < 5


@pytest.mark.parametrize("args", [["--url", "ftp://127.0.0.1/readyz"], ["--url", "https://[::1/"], ["--url", "127.0.0.1"],
                                  ["--url", "http://:80/"], ["--url", "http://h:0/"],
                                  ["--url", "http://h:99999/"], ["--url", "http://h/a b"],
                                  ["--timeout", "0"], ["--timeout", "x"], ["--url"], ["--cacert"], ["--tls-name", ""],
                                  ["--bogus"]])
def test_usage_errors_exit_2(args):
    p = health(*args)
    assert p.returncode == 2
    assert "usage: transitd health" in p.stderr


def test_help_and_top_level_usage():
    p = health("--help")
    assert p.returncode == 0 and "usage: transitd health" in p.stdout
    top = subprocess.run([transitd_bin(), "help"], capture_output=True, text=True, timeout=10)
    assert "health" in top.stdout
