"""`make install PREFIX=...` and the service files, in an installed layout
outside the repository: the installed binary finds its OpenAPI document and
pages under PREFIX/share/transitd (and says where it looked when they are
gone); the systemd unit passes `systemd-analyze verify`, needs no user
created by hand, and its ExecStart, run as the unit would run it on an empty
data directory, waits for the first import instead of exiting; the launchd
plist parses and points at the installed binary.
"""
import os
import pathlib
import plistlib
import shlex
import shutil
import subprocess
import tempfile
import time

import pytest
import requests

from conftest import BUILD, ROOT
from http_server import LISTEN_RE, Server, TMP, demo_feed, free_port, import_feed


def make_install(*args):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    flags = [f"BUILD={BUILD}"] + (["SANITIZE=1"] if BUILD.name == "sanitize" else [])
    p = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), *flags, "install", *args],
                       capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return p


@pytest.fixture(scope="module")
def prefix():
    # outside the repository, so nothing can be found beside the sources by accident
    root = pathlib.Path(tempfile.mkdtemp(prefix="transitd-install-"))
    make_install(f"PREFIX={root}")
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def data():
    d = TMP / "install-data"
    shutil.rmtree(d, ignore_errors=True)
    import_feed(demo_feed(1), d)
    return d


class InstalledServer(Server):
    def __init__(self, prefix, data_dir, *extra):
        super().__init__(data_dir, *extra)
        self.args[0] = str(prefix / "bin" / "transitd")

    def start(self, timeout=10):
        cwd = os.getcwd()
        os.chdir(self.args[0].rsplit("/bin/", 1)[0])   # not the repository: no ./docs here
        try:
            return super().start(timeout)
        finally:
            os.chdir(cwd)


def test_layout(prefix):
    binary = prefix / "bin" / "transitd"
    assert os.access(binary, os.X_OK)
    share = prefix / "share" / "transitd"
    assert (share / "openapi.json").read_bytes() == (ROOT / "docs" / "openapi.json").read_bytes()
    assert sorted(p.name for p in (share / "www").iterdir()) == \
        sorted(p.name for p in (ROOT / "www").iterdir())
    assert (prefix / "lib" / "systemd" / "system" / "transitd.service").is_file()
    assert (share / "org.transitd.plist").is_file()


def test_installed_binary_serves_its_document_and_pages(prefix, data):
    with InstalledServer(prefix, data) as s:
        r = requests.get(s.url("/openapi.json"), timeout=10)
        assert r.status_code == 200
        assert r.content == (ROOT / "docs" / "openapi.json").read_bytes()
        for path in ["/", "/docs", "/assets/docs.js", "/assets/style.css"]:
            assert requests.get(s.url(path), timeout=10).status_code == 200, path
        assert "warning" not in s.log()


def test_without_its_share_dir_it_says_where_it_looked(prefix, data, tmp_path):
    copy = tmp_path / "prefix"
    (copy / "bin").mkdir(parents=True)
    shutil.copy2(prefix / "bin" / "transitd", copy / "bin" / "transitd")
    with InstalledServer(copy, data) as s:
        r = requests.get(s.url("/openapi.json"), timeout=10)
        assert r.status_code == 404
        assert f"{copy}/bin/../share/transitd/openapi.json" in r.json()["detail"]
        assert requests.get(s.url("/"), timeout=10).status_code == 404
        s.wait_for_log(r"warning: no web pages found .*share/transitd/www")


def test_destdir_stages_without_changing_paths(tmp_path):
    make_install("PREFIX=/opt/transitd", f"DESTDIR={tmp_path}")
    unit = (tmp_path / "opt/transitd/lib/systemd/system/transitd.service").read_text()
    assert "ExecStart=/opt/transitd/bin/transitd serve --wait-for-data" in unit
    assert str(tmp_path) not in unit
    assert os.access(tmp_path / "opt/transitd/bin/transitd", os.X_OK)


def unit_settings(text):
    settings = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def test_systemd_unit(prefix):
    unit = prefix / "lib" / "systemd" / "system" / "transitd.service"
    s = unit_settings(unit.read_text())
    assert s["DynamicUser"] == ["yes"] and "User" not in s, "a User= nobody creates"
    assert s["StateDirectory"] == ["transitd"]
    assert f"TRANSITD_DATA=/var/lib/transitd" in s["Environment"]
    assert s["ExecStart"] == [f"{prefix}/bin/transitd serve --wait-for-data --quiet"]
    assert s["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        pytest.skip("systemd-analyze is not installed: the unit was checked by the lines above only")
    p = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "transitd.service" not in p.stderr, p.stderr   # no warning about our unit


def test_unit_command_waits_for_the_first_import(prefix):
    """The unit's ExecStart with its Environment=, on an empty state directory
    (what a fresh install has): no exit, no restart loop; ready once an
    import lands."""
    s = unit_settings((prefix / "lib" / "systemd" / "system" / "transitd.service").read_text())
    env = dict(os.environ)
    env.update(e.split("=", 1) for e in s["Environment"])
    state = TMP / "install-state"
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    port = free_port()
    env.update(TRANSITD_DATA=str(state), TRANSITD_PORT=str(port))   # instead of /var/lib
    argv = shlex.split(s["ExecStart"][0])
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, cwd="/")
    try:
        line = proc.stderr.readline()
        while line and not LISTEN_RE.search(line):
            line = proc.stderr.readline()
        assert LISTEN_RE.search(line), "the unit's command did not start"
        url = f"http://127.0.0.1:{port}"
        assert requests.get(url + "/healthz", timeout=10).status_code == 200
        assert requests.get(url + "/readyz", timeout=10).status_code == 503
        import_feed(demo_feed(1), state)
        deadline = time.monotonic() + 5
        while requests.get(url + "/readyz", timeout=10).status_code != 200:
            assert time.monotonic() < deadline, "the first import was not picked up"
            time.sleep(0.1)
        assert proc.poll() is None
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_launchd_plist(prefix):
    with open(prefix / "share" / "transitd" / "org.transitd.plist", "rb") as f:
        job = plistlib.load(f)
    args = job["ProgramArguments"]
    assert args[0] == f"{prefix}/bin/transitd" and os.access(args[0], os.X_OK)
    assert args[1:3] == ["serve", "--wait-for-data"]
    assert job["EnvironmentVariables"]["TRANSITD_DATA"] == f"{prefix}/var/transitd"
    assert job["KeepAlive"] == {"SuccessfulExit": False}
    assert job["Label"] == "org.transitd"
    # the HTTPS variant: the same job with the TLS flags, paths under PREFIX
    with open(prefix / "share" / "transitd" / "org.transitd.https.plist", "rb") as f:
        https = plistlib.load(f)
    args = https["ProgramArguments"]
    assert args[0] == f"{prefix}/bin/transitd" and https["Label"] == "org.transitd"
    assert args[args.index("--tls-cert") + 1].startswith(f"{prefix}/etc/transitd/tls/")
    assert args[args.index("--tls-key") + 1].endswith(".key")
    assert args[args.index("--port") + 1] == "8443"


def test_https_drop_in_serves_https(prefix):
    """The systemd drop-in's ExecStart (its ${TRANSITD_TLS_*} from its Environment=),
    with a certificate made by `transitd cert new` in place of its paths, serves HTTPS."""
    conf = prefix / "share" / "transitd" / "transitd-https.conf"
    s = unit_settings(conf.read_text())
    assert s["ExecStart"][0] == ""                       # replaces the unit's command
    assert s["SupplementaryGroups"] == ["transitd-tls"]  # how a dynamic user reads the key
    certs = TMP / "install-tls"
    shutil.rmtree(certs, ignore_errors=True)
    p = subprocess.run([str(prefix / "bin" / "transitd"), "cert", "new", "--host", "localhost",
                        "--out", str(certs)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    env = {k: v for k, v in (e.split("=", 1) for e in s["Environment"])}
    assert env["TRANSITD_TLS_CERT"].endswith(".crt") and env["TRANSITD_TLS_KEY"].endswith(".key")
    env = {"TRANSITD_TLS_CERT": str(certs / "localhost.crt"),
           "TRANSITD_TLS_KEY": str(certs / "localhost.key")}
    argv = shlex.split(s["ExecStart"][1])
    assert argv[0] == f"{prefix}/bin/transitd"
    argv = [env.get(a[2:-1], a) if a.startswith("${") else a for a in argv]
    port = free_port()
    argv[argv.index("--port") + 1] = str(port)
    argv[argv.index("--bind") + 1] = "127.0.0.1"
    data = TMP / "install-tls-data"
    shutil.rmtree(data, ignore_errors=True)
    import_feed(demo_feed(1), data)
    proc = subprocess.Popen(argv, env=dict(os.environ, TRANSITD_DATA=str(data)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd="/")
    try:
        line = proc.stderr.readline()
        while line and not LISTEN_RE.search(line):
            line = proc.stderr.readline()
        assert line.startswith("transitd serve: listening on https://"), line
        r = requests.get(f"https://localhost:{port}/readyz", timeout=10,
                         verify=str(certs / "localhost.crt"))
        assert r.status_code == 200
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_replica_service_files(prefix, data):
    """The replica's launchd job and systemd drop-in: --replica-of from their settings;
    the drop-in's command, pointed at a live primary, makes a replica that serves."""
    with open(prefix / "share" / "transitd" / "org.transitd.replica.plist", "rb") as f:
        job = plistlib.load(f)
    args = job["ProgramArguments"]
    assert args[0] == f"{prefix}/bin/transitd" and job["Label"] == "org.transitd"
    assert args[args.index("--replica-of") + 1].startswith("http://")
    s = unit_settings((prefix / "share" / "transitd" / "transitd-replica.conf").read_text())
    assert s["ExecStart"][0] == ""
    env = dict(e.split("=", 1) for e in s["Environment"])
    assert env["TRANSITD_REPLICA_OF"].startswith("http://")
    from http_server import Server
    with Server(data, "--quiet") as primary:
        argv = shlex.split(s["ExecStart"][1])
        assert argv[0] == f"{prefix}/bin/transitd"
        argv = [primary.url("") if a == "${TRANSITD_REPLICA_OF}" else a for a in argv]
        port = free_port()
        state = TMP / "install-replica"
        shutil.rmtree(state, ignore_errors=True)
        proc = subprocess.Popen(argv, env=dict(os.environ, TRANSITD_DATA=str(state), TRANSITD_PORT=str(port)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    if requests.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200:
                        break
                except requests.RequestException:
                    pass
                assert time.monotonic() < deadline, "the replica never became ready"
                time.sleep(0.2)
        finally:
            proc.terminate()
            assert proc.wait(10) == 0
