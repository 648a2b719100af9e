"""The dataset over HTTP (issue #24): the manifest at /v1/dataset, the files at
/v1/dataset/{version}/{file} (ETag, Range, If-Range), `transitd export` as a static
mirror, and `serve --replica-of URL`: a replica with a data directory of its own
takes each version from its primary or from a mirror, verifies every SHA-256,
resumes a cut transfer, never activates a corrupted one, and sends writes to the
primary with 307.

Runs on loopback with the demo feed (seeds 1 and 2 as two versions); the mirror
tests use nginx (.ci/deps test installs it) and a small Python server that cuts
a transfer or flips a byte.
"""
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.parse

import pytest
import requests

import schema_check
from conftest import ROOT, transitd_bin
from http_server import Server, TMP, demo_feed, free_port, import_feed

DOC = json.loads((ROOT / "docs" / "openapi.json").read_text())

STOP = "de:11000:900100001"
WHEN = "2026-11-23T08:00"


def fresh(name):
    d = TMP / name
    shutil.rmtree(d, ignore_errors=True)
    return d


@pytest.fixture(scope="module")
def primary_data():
    d = fresh("replica-primary")
    import_feed(demo_feed(1), d)
    return d


def wait_until(check, timeout=20, what="the condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.1)


def ready_version(url):
    try:
        r = requests.get(url + "/readyz", timeout=5)
    except requests.RequestException:
        return None
    return r.json().get("dataset_version") if r.status_code == 200 else None


def metric(url, name):
    text = requests.get(url + "/metrics", timeout=5).text
    m = re.search(rf"^{re.escape(name)} (\d+)$", text, re.M)
    return int(m.group(1)) if m else None


def file_sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------ the primary's side

def test_manifest_names_every_file_with_its_digest(primary_data):
    with Server(primary_data, "--quiet") as s:
        r = requests.get(s.url("/v1/dataset"), timeout=10)
        assert r.status_code == 200
        m = r.json()
        assert r.headers["ETag"] == f'"{m["version"]}"'
        errors = schema_check.validate(m, schema_check.response_schema(DOC, "/v1/dataset"), DOC)
        assert not errors, errors
        assert re.fullmatch(r"[0-9a-f]{12}", m["version"])
        assert m["created"].endswith("Z") and "days_until_expiry" in m["feed_validity"]
        vdir = primary_data / "versions" / m["version"]
        names = sorted(p.name for p in vdir.iterdir() if p.is_file() and not p.name.startswith("."))
        assert [f["name"] for f in m["files"]] == names
        assert {"COMPLETE", "timetable.bin", "schedule.sqlite"} <= set(names)
        for f in m["files"]:
            assert f["size"] == (vdir / f["name"]).stat().st_size
            assert f["sha256"] == file_sha256(vdir / f["name"])
        # an unchanged server costs a 304
        r2 = requests.get(s.url("/v1/dataset"), headers={"If-None-Match": r.headers["ETag"]}, timeout=10)
        assert r2.status_code == 304 and r2.content == b""
        assert requests.get(s.url("/v1/dataset?x=1"), timeout=10).status_code == 400


def test_files_are_immutable_and_resumable(primary_data):
    with Server(primary_data, "--quiet") as s:
        m = requests.get(s.url("/v1/dataset"), timeout=10).json()
        f = next(x for x in m["files"] if x["name"] == "timetable.bin")
        url = s.url(f"/v1/dataset/{m['version']}/timetable.bin")
        whole = requests.get(url, headers={"Accept-Encoding": "identity"}, timeout=10)
        assert whole.status_code == 200
        assert hashlib.sha256(whole.content).hexdigest() == f["sha256"]
        assert whole.headers["ETag"] == f'"{f["sha256"]}"'
        assert "immutable" in whole.headers["Cache-Control"]
        assert whole.headers["Accept-Ranges"] == "bytes"
        assert "Content-Encoding" not in whole.headers
        size = f["size"]
        part = requests.get(url, headers={"Range": "bytes=100-199"}, timeout=10)
        assert part.status_code == 206 and part.content == whole.content[100:200]
        assert part.headers["Content-Range"] == f"bytes 100-199/{size}"
        tail = requests.get(url, headers={"Range": f"bytes={size - 10}-"}, timeout=10)
        assert tail.status_code == 206 and tail.content == whole.content[-10:]
        suffix = requests.get(url, headers={"Range": "bytes=-7"}, timeout=10)
        assert suffix.status_code == 206 and suffix.content == whole.content[-7:]
        beyond = requests.get(url, headers={"Range": f"bytes={size}-"}, timeout=10)
        assert beyond.status_code == 416 and beyond.headers["Content-Range"] == f"bytes */{size}"
        # If-Range names another file: the whole of this one, not a piece
        other = requests.get(url, headers={"Range": "bytes=0-9", "If-Range": '"' + "0" * 64 + '"'},
                             timeout=10)
        assert other.status_code == 200 and other.content == whole.content
        same = requests.get(url, headers={"Range": "bytes=0-9", "If-Range": f'"{f["sha256"]}"'},
                            timeout=10)
        assert same.status_code == 206 and same.content == whole.content[:10]
        assert requests.get(url, headers={"If-None-Match": whole.headers["ETag"]},
                            timeout=10).status_code == 304
        # gzip for a whole file, as it is sent (its own validator); Range stays uncompressed
        gz = requests.get(url, headers={"Accept-Encoding": "gzip"}, timeout=10, stream=True)
        raw = gz.raw.read(decode_content=False)
        assert gz.status_code == 200 and gz.headers["Content-Encoding"] == "gzip"
        assert gz.headers["ETag"] == f'"{f["sha256"]}-gzip"' and "Accept-Encoding" in gz.headers["Vary"]
        assert len(raw) < size // 2
        import gzip as gzip_module
        assert hashlib.sha256(gzip_module.decompress(raw)).hexdigest() == f["sha256"]
        part_gz = requests.get(url, headers={"Accept-Encoding": "gzip", "Range": "bytes=0-9"}, timeout=10,
                               stream=True)
        assert part_gz.status_code == 206 and "Content-Encoding" not in part_gz.headers
        assert part_gz.raw.read(decode_content=False) == whole.content[:10]
        head = requests.head(url, headers={"Accept-Encoding": "identity"}, timeout=10)
        assert head.status_code == 200 and int(head.headers["Content-Length"]) == size
        for bad in (f"/v1/dataset/{'0' * 12}/timetable.bin", f"/v1/dataset/{m['version']}/nope.bin",
                    f"/v1/dataset/{m['version']}/.readers.lock"):
            assert requests.get(s.url(bad), timeout=10).status_code == 404, bad


def test_export_writes_the_same_snapshot_as_static_files(primary_data):
    out = fresh("replica-export")
    p = subprocess.run([transitd_bin(), "export", "--data", str(primary_data), str(out)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    version = p.stdout.strip()
    index = json.loads((out / "v1" / "dataset" / "index.json").read_text())
    with Server(primary_data, "--quiet") as s:
        served = requests.get(s.url("/v1/dataset"), timeout=10).json()
    assert index["version"] == version == served["version"]
    assert index["files"] == served["files"]
    for f in index["files"]:
        assert file_sha256(out / "v1" / "dataset" / version / f["name"]) == f["sha256"]
    p = subprocess.run([transitd_bin(), "export", "--data", str(primary_data)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "OUT is required" in p.stderr


# ------------------------------------------------------------------ replicas

def test_replica_from_an_empty_directory_follows_its_primary(primary_data):
    pdata = fresh("replica-follow-primary")
    shutil.copytree(primary_data, pdata, symlinks=True)
    rdata = fresh("replica-follow-replica")
    with Server(pdata, "--quiet") as primary:
        base = f"http://127.0.0.1:{primary.port}"
        with Server(rdata, "--quiet", "--replica-of", base, "--replica-interval", "1") as replica:
            rurl = f"http://127.0.0.1:{replica.port}"
            v1 = wait_until(lambda: ready_version(rurl), what="the replica's first version")
            assert v1 == ready_version(base)
            ready = requests.get(rurl + "/readyz", timeout=5).json()
            assert ready["replica"]["primary"] == base and ready["replica"]["behind"] is False
            errors = schema_check.validate(ready, schema_check.schema("ReadyResponse"), DOC)
            assert not errors, errors
            # the replica answers as the primary does
            path = f"/v1/stops/{STOP}/departures?time={WHEN}&limit=20"
            assert requests.get(rurl + path, timeout=5).content == requests.get(base + path, timeout=5).content
            # writes go to the primary, method and body kept (307)
            r = requests.post(rurl + "/v1/alerts", json={"x": 1}, allow_redirects=False, timeout=5)
            assert r.status_code == 307 and r.headers["Location"] == base + "/v1/alerts"
            assert r.json() == {"detail": "this server is a replica; writes go to its primary",
                                "location": base + "/v1/alerts"}
            r = requests.delete(rurl + "/v1/alerts/a1?x=y", allow_redirects=False, timeout=5)
            assert r.status_code == 307 and r.headers["Location"] == base + "/v1/alerts/a1?x=y"
            # a new import at the primary reaches the replica
            import_feed(demo_feed(2), pdata)
            v2 = wait_until(lambda: ready_version(base) != v1 and ready_version(base), what="the primary's switch")
            t0 = time.monotonic()
            wait_until(lambda: ready_version(rurl) == v2, what="the replica's switch")
            print(f"replica switched {time.monotonic() - t0:.2f} s after the primary")
            assert metric(rurl, "transitd_replica_versions_installed_total") == 2
            assert metric(rurl, "transitd_replica_transfer_failures_total") == 0
            assert not (rdata / "live.sqlite").exists()      # a replica writes no live state
            # `transitd health` works on both roles
            for url in (base, rurl):
                p = subprocess.run([transitd_bin(), "health", "--url", url + "/readyz"],
                                   capture_output=True, text=True, timeout=30)
                assert p.returncode == 0, p.stderr


def test_replica_waits_for_a_primary_that_is_down(primary_data):
    rdata = fresh("replica-waits")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with Server(rdata, "--quiet", "--replica-of", base, "--replica-interval", "1") as replica:
        rurl = f"http://127.0.0.1:{replica.port}"
        time.sleep(1.5)
        r = requests.get(rurl + "/readyz", timeout=5)
        assert r.status_code == 503
        assert r.json()["replica"]["primary"] == base and "last_error" in r.json()["replica"]
        with Server(primary_data, "--quiet", "--port", str(port)):
            wait_until(lambda: ready_version(rurl), what="readiness once the primary is up")
        assert metric(rurl, 'transitd_replica_polls_total{result="failed"}') >= 1


class Mirror(http.server.ThreadingHTTPServer):
    """A static mirror of an export that can cut a file's first transfer after
    `cut_after` bytes, with Range support (what nginx does, minus the faults)."""
    daemon_threads = True

    def __init__(self, root, cut_after=None):
        self.root, self.cut_after, self.cuts, self.ranges = root, cut_after, 0, []
        super().__init__(("127.0.0.1", 0), MirrorHandler)


class MirrorHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        path = urllib.parse.urlparse(self.path).path
        if path == "/v1/dataset":
            path = "/v1/dataset/index.json"
        f = self.server.root / path.lstrip("/")
        if not f.is_file():
            self.send_error(404)
            return
        data = f.read_bytes()
        start = 0
        rng = self.headers.get("Range")
        if rng:
            self.server.ranges.append(rng)
            start = int(rng.split("=")[1].split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        cut = self.server.cut_after
        if cut is not None and f.name == "timetable.bin" and self.server.cuts == 0:
            self.server.cuts += 1
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.connection.shutdown(2)   # cut mid-transfer
            return
        self.wfile.write(body)


def test_cut_transfer_resumes_and_a_flipped_byte_never_activates(primary_data):
    out = fresh("replica-mirror")
    subprocess.run([transitd_bin(), "export", "--data", str(primary_data), str(out)], check=True,
                   capture_output=True, timeout=60)
    version = json.loads((out / "v1" / "dataset" / "index.json").read_text())["version"]
    mirror = Mirror(out, cut_after=100_000)
    threading.Thread(target=mirror.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{mirror.server_address[1]}"
        rdata = fresh("replica-resume")
        with Server(rdata, "--quiet", "--replica-of", base, "--replica-interval", "1") as replica:
            rurl = f"http://127.0.0.1:{replica.port}"
            assert wait_until(lambda: ready_version(rurl), what="activation after the cut") == version
            assert mirror.cuts == 1 and "bytes=100000-" in mirror.ranges
            assert metric(rurl, "transitd_replica_bytes_resumed_total") == 100_000
            assert metric(rurl, "transitd_replica_transfer_failures_total") >= 1
        # a corrupted file on the mirror: refused, counted, the old version kept
        pdata = fresh("replica-corrupt-primary")
        import_feed(demo_feed(2), pdata)
        subprocess.run([transitd_bin(), "export", "--data", str(pdata), str(out)], check=True,
                       capture_output=True, timeout=60)
        v2 = json.loads((out / "v1" / "dataset" / "index.json").read_text())["version"]
        bad = out / "v1" / "dataset" / v2 / "timetable.bin"
        data = bytearray(bad.read_bytes())
        bad.unlink()                  # (an export may hard-link it to the primary's own file)
        data[len(data) // 2] ^= 0x01
        bad.write_bytes(bytes(data))
        mirror.cut_after = None
        with Server(rdata, "--quiet", "--replica-of", base, "--replica-interval", "1") as replica:
            rurl = f"http://127.0.0.1:{replica.port}"
            wait_until(lambda: (metric(rurl, "transitd_replica_transfer_failures_total") or 0) >= 1,
                       what="the refusal of the flipped byte")
            assert ready_version(rurl) == version    # still the old one
            ready = requests.get(rurl + "/readyz", timeout=5).json()
            assert ready["replica"]["behind"] is True and "does not match" in ready["replica"]["last_error"]
            assert not (rdata / "versions" / v2).exists()
    finally:
        mirror.shutdown()


@pytest.mark.skipif(not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")),
                    reason="nginx is not installed (.ci/deps test installs it)")
def test_replica_of_an_nginx_mirror(primary_data):
    out = fresh("replica-nginx-export")
    subprocess.run([transitd_bin(), "export", "--data", str(primary_data), str(out)], check=True,
                   capture_output=True, timeout=60)
    version = json.loads((out / "v1" / "dataset" / "index.json").read_text())["version"]
    prefix = fresh("replica-nginx")
    (prefix / "tmp").mkdir(parents=True)
    port = free_port()
    conf = prefix / "nginx.conf"
    conf.write_text(f"""worker_processes 1; daemon off; pid {prefix}/nginx.pid; error_log {prefix}/error.log warn;
events {{ worker_connections 64; }}
http {{ access_log off; client_body_temp_path {prefix}/tmp;
  server {{ listen 127.0.0.1:{port}; root {out}; index index.json; location / {{ }} }} }}
""")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(conf), "-e", str(prefix / "error.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        rdata = fresh("replica-nginx-data")
        with Server(rdata, "--quiet", "--replica-of", f"http://127.0.0.1:{port}",
                    "--replica-interval", "1") as replica:
            rurl = f"http://127.0.0.1:{replica.port}"
            assert wait_until(lambda: ready_version(rurl), what="a version from nginx") == version
    finally:
        proc.terminate()
        proc.wait(10)


def test_replica_of_must_be_a_url(primary_data):
    p = subprocess.run([transitd_bin(), "serve", "--data", str(TMP / "x"), "--replica-of", "ftp://h"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "--replica-of must be an http:// or https:// URL" in p.stderr


# ------------------------------------------------------------------ live state

def test_alerts_and_realtime_reach_the_replica(tmp_path):
    """Alerts written at the primary (and its realtime feed's, rt: ids) and its
    realtime overlay reach a replica that has no live store, in about a second;
    the replica's answers are the primary's, byte for byte."""
    from gtfs_rt_wire import alert_entity, feed, trip_update
    from test_alerts_api import make_token
    from test_realtime import TINY_FEED, MONDAY
    import zipfile
    base = fresh("replica-live")
    base.mkdir(parents=True)
    zip_path = base / "tiny.zip"
    with zipfile.ZipFile(zip_path, "w") as z:
        for name, text in TINY_FEED.items():
            z.writestr(name, text)
    pdata = base / "primary"
    import_feed(zip_path, pdata)
    rt = base / "rt.pb"
    rt.write_bytes(feed(trip_update("e1", "T1", "20261102", [(2, 90)]),
                        alert_entity("a1", "S2", "Detour")))
    tokens = base / "tokens"
    auth = {"Authorization": f"Bearer {make_token(tokens)}"}
    with Server(pdata, "--quiet", "--gtfs-rt", str(rt), "--rt-interval", "1",
                "--tokens", str(tokens)) as primary:
        purl = f"http://127.0.0.1:{primary.port}"
        with Server(base / "replica", "--quiet", "--replica-of", purl,
                    "--replica-interval", "1") as replica:
            rurl = f"http://127.0.0.1:{replica.port}"
            wait_until(lambda: ready_version(rurl), what="the replica's dataset")
            board = f"/v1/stops/S2/departures?time={urllib.parse.quote(MONDAY)}&window=60"

            def same(path):
                a = requests.get(purl + path, timeout=5)
                b = requests.get(rurl + path, timeout=5)
                return a.status_code == b.status_code == 200 and a.content == b.content

            def ids(url):
                return [a["id"] for a in requests.get(url + "/v1/alerts", timeout=5).json()["alerts"]]

            wait_until(lambda: ids(purl) == ["rt:a1"], what="the primary's feed alert")
            try:
                wait_until(lambda: ids(rurl) == ["rt:a1"] and same(board), what="the feed alert and predictions on the replica")
            except AssertionError:
                print("primary", requests.get(purl + board, timeout=5).text[:1500])
                print("replica", requests.get(rurl + board, timeout=5).text[:1500])
                print("ids", ids(purl), ids(rurl))
                print("replica log", replica.log()[-2000:].replace(chr(10), " / "))
                print("readyz", requests.get(rurl + "/readyz", timeout=5).text)
                raise
            ready = requests.get(rurl + "/readyz", timeout=5).json()
            assert ready["realtime"] is True
            assert ready["replica"]["seconds_since_live_check"] <= 2 and ready["replica"]["live_generation"] >= 1
            latencies = []
            for i in range(10):
                r = requests.put(f"{purl}/v1/alerts/ops-{i}", headers=auth, timeout=10, json={
                    "informed_entity": [{"stop_id": "S2"}],
                    "header_text": {"translation": [{"text": f"Works {i}", "language": "en"}]}})
                assert r.status_code == 201, r.text
                t0 = time.monotonic()
                # arrival is what is tested; how fast is bench/replicas_bench.py's figure (a
                # timed assertion here failed at load 5-10 on a shared machine: 5.7-5.9 s)
                wait_until(lambda: f"ops-{i}" in ids(rurl), timeout=30, what=f"alert ops-{i} on the replica")
                latencies.append(time.monotonic() - t0)
                assert requests.get(f"{rurl}/v1/alerts/ops-{i}", timeout=5).content == \
                    requests.get(f"{purl}/v1/alerts/ops-{i}", timeout=5).content
            latencies.sort()
            print(f"alert propagation: p50 {latencies[4]:.2f} s, max {latencies[-1]:.2f} s")
            wait_until(lambda: same(board) and same("/v1/alerts"), what="identical boards and lists")
            # a delete travels too; the replica holds no live store of its own
            assert requests.delete(f"{purl}/v1/alerts/ops-0", headers=auth, timeout=10).status_code == 204
            wait_until(lambda: "ops-0" not in ids(rurl), what="the delete on the replica")
            assert not (base / "replica" / "live.sqlite").exists()


@pytest.mark.skipif(not (shutil.which("unshare") and os.geteuid() == 0 and os.uname().sysname == "Linux"),
                    reason="needs root and unshare(1) to mount the data directory read-only")
def test_replica_on_a_read_only_data_directory(primary_data):
    """A read-only bind mount of a data directory that already holds the version (what
    users tried): reads work, alerts come from the primary, writes redirect."""
    ro = fresh("replica-read-only")
    shutil.copytree(primary_data, ro, symlinks=True)
    for f in ro.glob("live.sqlite*"):
        f.unlink()
    with Server(primary_data, "--quiet") as primary:
        base = f"http://127.0.0.1:{primary.port}"
        port = free_port()
        script = (f"mount --bind {ro} {ro} && mount -o remount,ro,bind {ro} && exec {transitd_bin()} "
                  f"serve --data {ro} --port {port} --quiet --replica-of {base} --replica-interval 1")
        proc = subprocess.Popen(["unshare", "-m", "sh", "-c", script], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            rurl = f"http://127.0.0.1:{port}"
            assert wait_until(lambda: ready_version(rurl), what="readiness") == ready_version(base)
            path = f"/v1/stops/{STOP}/departures?time={WHEN}&limit=5"
            assert requests.get(rurl + path, timeout=5).content == requests.get(base + path, timeout=5).content
            assert requests.get(rurl + "/v1/alerts", timeout=5).status_code == 200
            r = requests.put(rurl + "/v1/alerts/a", json={}, allow_redirects=False, timeout=5)
            assert r.status_code == 307 and r.headers["Location"] == base + "/v1/alerts/a"
            assert not (ro / "live.sqlite").exists()
        finally:
            proc.terminate()
            proc.wait(10)
