"""Fixture helper for the HTTP tests: datasets to serve and a running
`transitd serve` on a free port.

Why it exists: every test_http*.py file needs the same things — a data
directory with an imported feed (the deterministic demo feed from
bench/gtfs_gen.py, generated once per session, so the tests run without
../shared), a daemon started with `--port 0` whose real port is read from its
start-up line (no race between picking a port and binding it), its stderr
collected (the access log), and a clean stop that reports the exit code.
"""
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time

from conftest import BUILD, ROOT, transitd_bin

TMP = pathlib.Path(os.environ.get("TRANSITD_TEST_TMP", BUILD / "tmp"))
LISTEN_RE = re.compile(r"listening on https?://(\[[^\]]+\]|[^:/]+):(\d+)/")


_generated = {}


def demo_feed(seed=1):
    """TMP/http-demo-<seed>.zip, generated once per test session (the
    generator is deterministic; regenerating per session follows its changes)."""
    TMP.mkdir(parents=True, exist_ok=True)
    out = TMP / f"http-demo-{seed}.zip"
    if seed not in _generated:
        part = out.with_suffix(".part.zip")
        subprocess.run([sys.executable, str(ROOT / "bench" / "gtfs_gen.py"), "--scale", "demo",
                        "--seed", str(seed), "--out", str(part)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        part.rename(out)
        _generated[seed] = out
    return str(out)


def import_feed(feed, data_dir):
    """Imports feed into data_dir (making it the active version)."""
    p = subprocess.run([transitd_bin(), "import", str(feed), "--data", str(data_dir), "--quiet"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, f"import of {feed} failed: {p.stderr}"


def import_files_with_realtime(name, files, realtime):
    """A feed written from {file name: text} into TMP/name/feed.zip, imported
    into TMP/name/data, with the GTFS-Realtime bytes beside it in
    TMP/name/rt.pb. Returns TMP/name."""
    import shutil
    import zipfile
    base = TMP / name
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    with zipfile.ZipFile(base / "feed.zip", "w") as z:
        for file_name, text in files.items():
            z.writestr(file_name, text)
    import_feed(base / "feed.zip", base / "data")
    (base / "rt.pb").write_bytes(realtime)
    return base


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A `transitd serve` child process. Use start() or the context manager."""

    def __init__(self, data_dir, *extra, env=None):
        self.args = [transitd_bin(), "serve", "--data", str(data_dir), "--port", "0",
                     "--threads", "2", *extra]
        self.env = dict(os.environ, **(env or {}))
        self.proc = None
        self.port = None
        self.lines = []
        self._lock = threading.Lock()
        self._ready = threading.Event()

    def start(self, timeout=10):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=self.env, text=True,
                                     errors="replace")
        threading.Thread(target=self._read_stderr, daemon=True).start()
        if not self._ready.wait(timeout) or self.port is None:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("transitd serve did not start:\n" + self.log())
        return self

    def _read_stderr(self):
        for line in self.proc.stderr:
            with self._lock:
                self.lines.append(line.rstrip("\n"))
            m = LISTEN_RE.search(line)
            if m and self.port is None:
                self.port = int(m.group(2))
                self._ready.set()
        self._ready.set()

    def log(self):
        with self._lock:
            return "\n".join(self.lines)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def send_signal(self, signo):
        self.proc.send_signal(signo)

    def stop(self, signo=signal.SIGTERM, timeout=10):
        """Sends signo and returns (exit code, seconds it took)."""
        if self.proc.poll() is not None:
            return self.proc.returncode, 0.0
        t0 = time.monotonic()
        self.proc.send_signal(signo)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"transitd serve did not exit within {timeout}s")
        return rc, time.monotonic() - t0

    def wait_for_log(self, pattern, timeout=5):
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for line in self.lines:
                    if rx.search(line):
                        return line
            time.sleep(0.02)
        raise AssertionError(f"no log line matching {pattern!r}:\n" + self.log())

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            rc, _ = self.stop()
            if exc[0] is None:
                self.assert_clean_exit(rc)

    def assert_clean_exit(self, rc):
        """Exit code 0 and no sanitizer report (under `make test SANITIZE=1`)."""
        time.sleep(0.05)   # let the reader thread take the last lines
        log = self.log()
        assert rc == 0, f"transitd serve exited {rc}:\n{log[-3000:]}"
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            assert marker not in log, log[-3000:]
