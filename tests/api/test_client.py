"""The phone's client library (issue #25): libtransit_client.a, its module
map, `transitd fetch`, snapshot deltas, and the equivalence of its answers
with the HTTP server's.

What is checked, black-box:
  - the library links no HTTP server, HTTP client, Objective-C runtime or
    protobuf (nm of the archive, ldd of a program linking it), and a program
    including only transit/client.h builds with -Wall -Wextra -Werror;
  - module.modulemap is a valid clang module: `@import TransitClient;`
    compiles and links, and a call the header lacks does not;
  - the README's example is the very program tests/client/client_example.c,
    which is built and run here;
  - `transitd fetch` brings a directory to the server's version (phone
    profile: no shapes.sqlite), `transitd query` then answers offline;
  - an update uses zstd patches (?from=) for changed files, keeps unchanged
    ones, and falls back to the whole file when a patch is corrupted; a
    whole file that does not match its SHA-256 is never activated; a cut
    transfer resumes with Range;
  - 2,000 random queries per feed (nearby stops, stop departures, nearby
    departures, search) give byte-identical bodies from the client library
    on a fetched snapshot and from the HTTP server on the primary.
"""
import hashlib
import http.server
import json
import os
import pathlib
import random
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse
import zipfile
import zlib

import pytest
import requests

from conftest import BUILD, ROOT, engine_or_skip, shared_feed, tool_or_skip
from http_server import TMP, Server, demo_feed, import_feed

CLIENT_LIB = BUILD / "libtransit_client.a"
ANSWER = BUILD / "client" / "client_answer"
EXAMPLE = BUILD / "client" / "client_example"
FORBIDDEN = re.compile(r"^(MHD_|curl_|protobuf_c_|objc_|__objc|gnutls_|zip_|Brotli|libdeflate_)")
SHARED_FEEDS = ["nyct_bus_brooklyn_2026.zip", "nyct_subway_2026.zip", "amtab_bari_2026.zip",
                "cairns_translink_2014.zip", "exo_laurentides_2025.zip",
                "abidjan_osm_frequencies_2021.zip"]


def built(path):
    engine_or_skip()
    assert path.exists(), f"{path} is not built (make build-tests builds it)"
    return str(path)


def run(args, **kw):
    return subprocess.run([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=kw.pop("timeout", 300), **kw)


def fetch(url, data_dir, *extra):
    return run([BUILD / "transitd", "fetch", "--data", data_dir, *extra, url])


def answers(snapshot, requests_lines):
    """(status, body bytes) for each "NOW PATH" line, from the client library."""
    p = subprocess.run([built(ANSWER), str(snapshot)], input="\n".join(requests_lines).encode() + b"\n",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    assert p.returncode == 0, p.stderr.decode()
    out, i, result = p.stdout, 0, []
    while i < len(out):
        nl = out.index(b"\n", i)
        status, length = (int(x) for x in out[i:nl].split())
        result.append((status, out[nl + 1:nl + 1 + length]))
        i = nl + 1 + length + 1
    return result


def files_of(version_dir):
    return sorted(p.name for p in pathlib.Path(version_dir).iterdir() if not p.name.startswith("."))


@pytest.fixture(scope="module")
def demo_data(tmp_path_factory):
    engine_or_skip()
    d = tmp_path_factory.mktemp("client-primary")
    import_feed(demo_feed(), d)
    return d


# ------------------------------------------------------------ the library as an app links it

def test_the_library_has_no_server_http_objc_or_protobuf_symbols():
    nm = tool_or_skip("nm", "llvm-nm")
    p = run([nm, "-u", built(CLIENT_LIB)])
    assert p.returncode == 0, p.stderr
    undefined = {line.split()[-1] for line in p.stdout.splitlines() if " U " in line}
    bad = sorted(s for s in undefined if FORBIDDEN.match(s))
    assert undefined, "nm listed nothing: the check would pass vacuously"
    assert bad == [], f"libtransit_client.a needs {bad[:10]}"
    # and the check can fail: the server's library does need them
    p = run([nm, "-u", BUILD / "libtransit.a"])
    assert any(FORBIDDEN.match(line.split()[-1]) for line in p.stdout.splitlines() if " U " in line)


@pytest.mark.skipif(sys.platform == "darwin", reason="ldd is Linux's")
def test_a_program_on_the_library_loads_no_server_library():
    ldd = tool_or_skip("ldd")
    p = run([ldd, built(ANSWER)])
    assert p.returncode == 0, p.stderr
    libs = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
    assert any("sqlite3" in l for l in libs)
    for banned in ("microhttpd", "curl", "protobuf", "objc", "gnustep", "gnutls", "zip.so", "brotli"):
        assert not any(banned in l for l in libs), (banned, libs)


def sanitizer_flags():
    """The flags a program needs to link the archive of a `make SANITIZE=1` build."""
    p = run(["nm", "-u", CLIENT_LIB]) if shutil.which("nm") else None
    return ["-fsanitize=address,undefined"] if p and "__asan_" in p.stdout else []


def test_the_header_alone_builds_with_every_warning_an_error(tmp_path):
    cc = tool_or_skip("clang", "cc")
    src = tmp_path / "app.c"
    src.write_text('#include "transit/client.h"\n'
                   "int main(void) { transit_error e; transit_snapshot *s = transit_open(\"x\", &e);\n"
                   "  if (s) transit_close(s); return s ? 0 : e.status == 0; }\n")
    p = run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", *sanitizer_flags(), f"-I{ROOT / 'include'}", src,
             "-o", tmp_path / "app", built(CLIENT_LIB),
             *os.environ.get("TRANSIT_CLIENT_LIBS", "-lsqlite3 -lz -lzstd -ljansson -lnettle -lpthread -lm").split()])
    assert p.returncode == 0, p.stderr
    p = run([tmp_path / "app"])
    assert p.returncode == 0   # no snapshot at "x": NULL with a status


def test_the_module_map_imports_as_a_clang_module(tmp_path):
    cc = tool_or_skip("clang")
    good = tmp_path / "import.m"
    good.write_text("@import TransitClient;\n"
                    "int main(int argc, char **argv) {\n"
                    "    transit_error err;\n"
                    "    transit_snapshot *s = transit_open(argc > 1 ? argv[1] : \"data\", &err);\n"
                    "    if (!s) return 1;\n"
                    "    transit_close(s);\n"
                    "    return 0;\n}\n")
    flags = ["-x", "objective-c", "-fmodules", f"-fmodules-cache-path={tmp_path / 'cache'}",
             f"-I{ROOT / 'include' / 'transit'}", "-Wall", "-Werror"]
    p = run([cc, *flags, "-c", good, "-o", tmp_path / "import.o"])
    assert p.returncode == 0, p.stderr
    bad = tmp_path / "bad.m"
    bad.write_text("@import TransitClient;\nint f(void) { return transit_no_such_call(); }\n")
    p = run([cc, *flags, "-c", bad, "-o", tmp_path / "bad.o"])
    assert p.returncode != 0 and "transit_no_such_call" in p.stderr


def test_the_readme_shows_the_example_that_is_built_and_run(tmp_path, demo_data):
    readme = (ROOT / "README.md").read_text()
    example = (ROOT / "tests" / "client" / "client_example.c").read_text()
    body = example[example.index("#include <inttypes.h>"):]
    assert body.strip() in readme, "README's offline section must quote tests/client/client_example.c"
    export = tmp_path / "export"
    p = run([BUILD / "transitd", "export", "--data", demo_data, export])
    assert p.returncode == 0, p.stderr
    stop = json.loads(run([BUILD / "transitd", "query", "--data", demo_data, "search", "a", "--limit", "1"]).stdout)["stops"][0]
    p = run([built(EXAMPLE), export, tmp_path / "phone", stop["lat"], stop["lon"]])
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1].startswith("200 {\"stops\":")
    assert (tmp_path / "phone" / "current" / "timetable.bin").exists()


# ------------------------------------------------------------ fetch and query offline

def test_fetch_then_query_offline(tmp_path, demo_data):
    with Server(demo_data) as srv:
        manifest = requests.get(srv.url("/v1/dataset?profile=phone")).json()
        assert [f["name"] for f in manifest["files"]] == ["COMPLETE", "schedule.sqlite", "timetable.bin"]
        with_shapes = requests.get(srv.url("/v1/dataset?profile=phone&include=shapes")).json()
        assert "shapes.sqlite" in [f["name"] for f in with_shapes["files"]]
        r = requests.get(srv.url("/v1/dataset?profile=tablet"))
        assert r.status_code == 400 and "profile" in r.json()["detail"]
        # a phone's poll revalidates: 304 with the version's ETag, 400 stays 400
        etag = f'"{manifest["version"]}"'
        assert requests.get(srv.url("/v1/dataset?profile=phone"), headers={"If-None-Match": etag}).status_code == 304
        assert requests.get(srv.url("/v1/dataset?profile=x"), headers={"If-None-Match": etag}).status_code == 400
        p = fetch(srv.url(""), tmp_path / "phone")
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == manifest["version"]
        assert "bytes on the wire" in p.stderr
        online = requests.get(srv.url("/v1/stops?q=a&limit=5")).content
    assert files_of(tmp_path / "phone" / "current") == ["COMPLETE", "schedule.sqlite", "timetable.bin"]
    for f in manifest["files"]:
        assert hashlib.sha256((tmp_path / "phone" / "current" / f["name"]).read_bytes()).hexdigest() == f["sha256"]
    q = run([BUILD / "transitd", "query", "--data", tmp_path / "phone", "search", "a", "--limit", "5"])
    assert q.returncode == 0, q.stderr
    assert q.stdout.encode().rstrip(b"\n") == online
    # fetched again: nothing to do, nothing downloaded
    with Server(demo_data) as srv:
        p = fetch(srv.url(""), tmp_path / "phone")
    assert p.returncode == 0, p.stderr
    assert "0 bytes on the wire" in p.stderr and "0 whole, 0 patched" in p.stderr, p.stderr


def test_fetch_names_a_server_that_is_not_there(tmp_path):
    engine_or_skip()
    p = fetch("http://127.0.0.1:9", tmp_path / "phone")
    assert p.returncode == 1 and "127.0.0.1:9/v1/dataset" in p.stderr
    p = fetch("ftp://127.0.0.1", tmp_path / "phone")
    assert p.returncode == 2 and "http://" in p.stderr


# ------------------------------------------------------------ deltas

def edited(feed, out, *args):
    subprocess.run([sys.executable, str(ROOT / "bench" / "feed_edit.py"), str(feed), "--out", str(out), *args],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def phone_then_retimed(tmp_path, demo_data):
    """A primary holding the demo feed, a phone fetched from it, then the
    primary given a version with 5 % of the trips retimed; the old version."""
    primary = tmp_path / "primary"
    shutil.copytree(demo_data, primary, symlinks=True)
    with Server(primary) as srv:
        assert fetch(srv.url(""), tmp_path / "phone").returncode == 0
        old = requests.get(srv.url("/v1/dataset")).json()["version"]
    import_feed(edited(demo_feed(), tmp_path / "retimed.zip", "--retime", "5"), primary)
    return primary, old


def test_an_update_patches_changed_files_and_keeps_the_others(tmp_path, demo_data):
    primary, old = phone_then_retimed(tmp_path, demo_data)
    with Server(primary) as srv:
        new = requests.get(srv.url("/v1/dataset?profile=phone")).json()
        assert new["version"] != old
        tt = next(f for f in new["files"] if f["name"] == "timetable.bin")
        r = requests.get(srv.url(f"/v1/dataset/{new['version']}/timetable.bin?from={old}"))
        assert r.status_code == 200 and r.headers["Content-Type"] == "application/zstd"
        assert r.headers["ETag"] == f'"{tt["sha256"]}-from-{old}"'
        assert len(r.content) < tt["size"] / 20, (len(r.content), tt["size"])
        r304 = requests.get(srv.url(f"/v1/dataset/{new['version']}/timetable.bin?from={old}"),
                            headers={"If-None-Match": r.headers["ETag"]})
        assert r304.status_code == 304
        bad = requests.get(srv.url(f"/v1/dataset/{new['version']}/timetable.bin?from=zz"))
        assert bad.status_code == 400 and "from" in bad.json()["detail"]
        gone = requests.get(srv.url(f"/v1/dataset/{new['version']}/timetable.bin?from=0123456789ab"))
        assert gone.status_code == 404 and "whole file" in gone.json()["detail"]
        p = fetch(srv.url(""), tmp_path / "phone")
        assert p.returncode == 0, p.stderr
        assert re.search(r"\b2 patched\b", p.stderr) or re.search(r"\b1 patched\b", p.stderr), p.stderr
        assert "0 patches refused" in p.stderr
        answer = requests.get(srv.url("/v1/stops?q=a&limit=3")).content
    assert os.readlink(tmp_path / "phone" / "current") == f"versions/{new['version']}"
    for f in new["files"]:
        assert hashlib.sha256((tmp_path / "phone" / "current" / f["name"]).read_bytes()).hexdigest() == f["sha256"]
    q = run([BUILD / "transitd", "query", "--data", tmp_path / "phone", "search", "a", "--limit", "3"])
    assert q.stdout.encode().rstrip(b"\n") == answer


class FakePrimary(http.server.ThreadingHTTPServer):
    """A server that serves a real export but can corrupt a patch, corrupt a
    whole file or cut a transfer once: what an unreliable network and a
    broken mirror do."""


def fake_primary(export_root, old_version, delta_dir, mode):
    state = {"cut_done": False, "requests": []}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            state["requests"].append((self.path, self.headers.get("Range")))
            path, _, query = self.path.partition("?")
            if path == "/v1/dataset":
                body = (export_root / "v1" / "dataset" / "index.json").read_bytes()
                return self.reply(200, body)
            name = path.rsplit("/", 1)[-1]
            if "from=" in query:
                body = (delta_dir / name).read_bytes() if (delta_dir / name).exists() else b""
                if mode == "bad-delta" and body:
                    body = body[:-8] + b"\0" * 8
                return self.reply(200 if body else 404, body)
            body = (export_root / path.lstrip("/")).read_bytes()
            if mode == "bad-file" and name == "timetable.bin":
                body = body[:100] + bytes([body[100] ^ 1]) + body[101:]
            rng = self.headers.get("Range")
            if rng:
                start = int(rng.split("=")[1].split("-")[0])
                return self.reply(206, body[start:], {"Content-Range": f"bytes {start}-{len(body) - 1}/{len(body)}"})
            if mode == "cut" and name == "timetable.bin" and not state["cut_done"]:
                state["cut_done"] = True
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[:len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            return self.reply(200, body)

        def reply(self, status, body, headers=None):
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

    srv = FakePrimary(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, state


@pytest.fixture
def two_versions(tmp_path, demo_data):
    """A phone holding the demo's version, an export of a retimed version,
    and the real patches between them."""
    primary, old = phone_then_retimed(tmp_path, demo_data)
    deltas = tmp_path / "deltas"
    deltas.mkdir()
    with Server(primary) as srv:
        new = requests.get(srv.url("/v1/dataset?profile=phone")).json()
        for f in new["files"]:
            r = requests.get(srv.url(f"/v1/dataset/{new['version']}/{f['name']}?from={old}"))
            if r.status_code == 200:
                (deltas / f["name"]).write_bytes(r.content)
    export = tmp_path / "export"
    assert run([BUILD / "transitd", "export", "--data", primary, export]).returncode == 0
    # the phone profile's manifest, as a static mirror would have been given it
    (export / "v1" / "dataset" / "index.json").write_text(json.dumps(new))
    return tmp_path / "phone", export, old, new, deltas


def test_a_corrupted_patch_falls_back_to_the_whole_file(two_versions):
    phone, export, old, new, deltas = two_versions
    srv, state = fake_primary(export, old, deltas, "bad-delta")
    try:
        p = fetch(f"http://127.0.0.1:{srv.server_address[1]}", phone)
    finally:
        srv.shutdown()
    assert p.returncode == 0, p.stderr
    assert "was not usable; fetching it whole" in p.stderr
    assert re.search(r"[1-9] patches refused", p.stderr), p.stderr
    for f in new["files"]:
        assert hashlib.sha256((phone / "current" / f["name"]).read_bytes()).hexdigest() == f["sha256"]


def test_a_file_that_does_not_match_its_digest_is_never_activated(two_versions):
    phone, export, old, new, deltas = two_versions
    for f in deltas.iterdir():
        f.unlink()   # no patches: whole files only
    srv, state = fake_primary(export, old, deltas, "bad-file")
    try:
        p = fetch(f"http://127.0.0.1:{srv.server_address[1]}", phone)
    finally:
        srv.shutdown()
    assert p.returncode == 1
    assert "timetable.bin does not match the manifest's SHA-256" in p.stderr
    assert os.readlink(phone / "current") == f"versions/{old}"
    q = run([BUILD / "transitd", "query", "--data", phone, "search", "a", "--limit", "1"])
    assert q.returncode == 0, q.stderr


def test_a_cut_transfer_resumes_with_range(two_versions):
    phone, export, old, new, deltas = two_versions
    for f in deltas.iterdir():
        f.unlink()
    srv, state = fake_primary(export, old, deltas, "cut")
    try:
        p = fetch(f"http://127.0.0.1:{srv.server_address[1]}", phone)
    finally:
        srv.shutdown()
    assert p.returncode == 0, p.stderr
    ranged = [(path, rng) for path, rng in state["requests"] if rng]
    assert ranged and ranged[0][0].endswith("/timetable.bin"), state["requests"]
    assert "(resuming)" in p.stderr
    for f in new["files"]:
        assert hashlib.sha256((phone / "current" / f["name"]).read_bytes()).hexdigest() == f["sha256"]


# ------------------------------------------------------------ equivalence with the server

def feed_stops(feed):
    with zipfile.ZipFile(feed) as z:
        name = next(n for n in z.namelist() if n.endswith("stops.txt"))
        import csv
        import io
        rows = list(csv.DictReader(io.StringIO(z.read(name).decode("utf-8-sig"))))
    out = []
    for r in rows:
        try:
            out.append((r["stop_id"], float(r["stop_lat"]), float(r["stop_lon"]), r.get("stop_name", "")))
        except (KeyError, ValueError):
            pass
    return out


def random_paths(feed, validity, seed, count=2000):
    rng = random.Random(seed)
    stops = feed_stops(feed)
    start = validity["start"]
    import datetime
    day0 = datetime.date.fromisoformat(start)
    ndays = max(1, (datetime.date.fromisoformat(validity["end"]) - day0).days + 1)
    words = sorted({w for s in stops for w in re.findall(r"\w{3,}", s[3])})
    paths = []
    for i in range(count):
        sid, lat, lon, _ = rng.choice(stops)
        day = day0 + datetime.timedelta(days=rng.randrange(ndays))
        t = f"{day.isoformat()}T{rng.randrange(24):02d}:{rng.randrange(60):02d}"
        kind = i % 4
        if kind == 0:
            paths.append(f"/v1/stops/nearby?lat={lat + rng.uniform(-0.005, 0.005):.6f}"
                         f"&lon={lon + rng.uniform(-0.005, 0.005):.6f}&radius={rng.choice([100, 500, 1500])}"
                         f"&limit={rng.choice([1, 10, 50])}")
        elif kind == 1:
            paths.append(f"/v1/stops/{urllib.parse.quote(sid, safe='')}/departures?time={t}"
                         f"&window={rng.choice([30, 60, 240])}&limit={rng.choice([5, 20, 100])}"
                         + (f"&kind={rng.choice(['arrivals', 'both'])}" if rng.random() < 0.2 else ""))
        elif kind == 2:
            paths.append(f"/v1/departures?lat={lat:.6f}&lon={lon:.6f}&radius={rng.choice([200, 500, 1000])}"
                         f"&time={t}&window={rng.choice([30, 60])}&limit={rng.choice([10, 50])}")
        else:
            q = rng.choice(words)[:rng.randrange(3, 8)] if words else "a"
            paths.append(f"/v1/stops?q={urllib.parse.quote(q)}&limit={rng.choice([5, 20])}")
    return paths


def check_equivalence(tmp_path, feed, seed):
    primary = tmp_path / "primary"
    import_feed(feed, primary)
    with Server(primary) as srv:
        p = fetch(srv.url(""), tmp_path / "phone", "--quiet")
        assert p.returncode == 0, p.stderr
        validity = requests.get(srv.url("/v1/feed")).json()["feed_validity"]
        paths = random_paths(feed, validity, seed)
        s = requests.Session()
        online = []
        for path in paths:
            r = s.get(srv.url(path))
            online.append((r.status_code, r.content))
    # the first open derives the indexes and the rows' texts and keeps them
    # (VERSION/.derived, VERSION/.departure-texts); the second maps them
    version_dir = (tmp_path / "phone" / "current").resolve()
    # the update's commit opened the new version once: the kept files are there
    for kept in (".derived", ".departure-texts"):
        assert (version_dir / kept).stat().st_size > 64
        (version_dir / kept).unlink()
    for open_kind in ("first open", "kept files"):
        offline = answers(tmp_path / "phone", [f"0 {p}" for p in paths])
        assert len(offline) == len(paths)
        mismatches = [(paths[i], online[i][0], offline[i][0], online[i][1][:200], offline[i][1][:200])
                      for i in range(len(paths)) if online[i] != offline[i]]
        assert not mismatches, f"{open_kind}: {len(mismatches)} of {len(paths)} differ; first: {mismatches[0]}"
        assert (version_dir / ".derived").exists() and (version_dir / ".departure-texts").exists()
    ok = sum(1 for st, _ in online if st == 200)
    assert ok >= len(paths) * 0.9, f"only {ok} of {len(paths)} answered 200: the queries test little"
    return ok


def test_the_client_answers_byte_for_byte_as_the_server_demo(tmp_path):
    engine_or_skip()
    check_equivalence(tmp_path, demo_feed(), seed=25)


@pytest.mark.parametrize("name", SHARED_FEEDS)
def test_the_client_answers_byte_for_byte_as_the_server(tmp_path, name):
    engine_or_skip()
    check_equivalence(tmp_path, shared_feed(name), seed=zlib.crc32(name.encode()))


def test_damaged_or_stale_kept_indexes_are_derived_again(tmp_path, demo_data):
    with Server(demo_data) as srv:
        assert fetch(srv.url(""), tmp_path / "phone").returncode == 0
    stop = json.loads(run([BUILD / "transitd", "query", "--data", demo_data, "search", "a", "--limit", "1"]).stdout)["stops"][0]
    paths = [f"0 /v1/departures?lat={stop['lat']}&lon={stop['lon']}&radius=1000&time=2026-11-10T08:00&limit=20",
             "0 /v1/stops?q=a&limit=5"]
    first = answers(tmp_path / "phone", paths)
    assert first[0][0] == 200 and b'"departures":[{' in first[0][1]
    vdir = (tmp_path / "phone" / "current").resolve()
    derived, texts = vdir / ".derived", vdir / ".departure-texts"
    assert derived.exists() and texts.exists()
    # cut in half, bytes flipped in the header, emptied: each is noticed and derived again
    for damage in (lambda b: b[:len(b) // 2], lambda b: b[:8] + bytes(x ^ 0xff for x in b[8:64]) + b[64:],
                   lambda b: b""):
        for f in (derived, texts):
            f.write_bytes(damage(f.read_bytes()))
        assert answers(tmp_path / "phone", paths) == first
        assert derived.stat().st_size > 64 and texts.stat().st_size > 64   # written again
    # kept files that cannot be written (here: directories in their place, as a
    # read-only snapshot would refuse them): nothing kept, the same answers
    derived.unlink()
    texts.unlink()
    derived.mkdir()
    texts.mkdir()
    assert answers(tmp_path / "phone", paths) == first
    assert derived.is_dir() and texts.is_dir()
    assert not [p.name for p in vdir.iterdir() if ".tmp-" in p.name], "temporary files left behind"


def test_fetch_over_https_trusts_the_given_certificate(tmp_path, demo_data):
    certs = tmp_path / "certs"
    p = run([BUILD / "transitd", "cert", "new", "--host", "localhost", "--out", certs])
    assert p.returncode == 0, p.stderr
    crt, key = certs / "localhost.crt", certs / "localhost.key"
    with Server(demo_data, "--tls-cert", str(crt), "--tls-key", str(key)) as srv:
        url = f"https://localhost:{srv.port}"
        refused = fetch(url, tmp_path / "untrusting")
        assert refused.returncode == 1 and "certificate" in refused.stderr.lower(), refused.stderr
        assert not (tmp_path / "untrusting" / "current").exists()
        p = fetch(url, tmp_path / "phone", "--cacert", crt)
        assert p.returncode == 0, p.stderr
        version = requests.get(f"{url}/v1/dataset", verify=str(crt)).json()["version"]
    assert os.readlink(tmp_path / "phone" / "current") == f"versions/{version}"
