"""The deployment of docker/compose.yaml, without Docker: three `transitd
serve` replicas sharing one data directory behind a real nginx running
docker/nginx.conf (only its upstream servers and listen port replaced), a wrk
load through nginx, and during it a feed rollout: a new import into the
shared directory, each replica reloaded in turn with SIGHUP, then one
replica restarted outright. Every response must be 2xx with no socket
error, every replica must have taken part and serve the new version. Also
the container files themselves: compose.yaml's topology and health checks,
the Dockerfile's health check and build, parsed and checked.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest
import requests

from conftest import ROOT, tool_or_skip, transitd_bin
from http_server import Server, TMP, demo_feed, free_port, import_feed

DOCKER = ROOT / "docker"
WRK_SECONDS = 8


def nginx_config(tmp, port, upstream_ports, primary_port=None, host="127.0.0.1", hosts=None):
    """docker/nginx.conf for loopback (or the given addresses), wrapped in a main
    config of its own. The primary's upstream gets primary_port (default: the
    first replica's, for servers sharing one data directory)."""
    site = (DOCKER / "nginx.conf").read_text()
    server_line = re.search(r"^\s*server transitd:8080 (.*);$", site, re.M)
    assert server_line, "docker/nginx.conf lost its upstream server line"
    options = server_line.group(1)
    hosts = hosts or [host] * len(upstream_ports)
    servers = "\n".join(f"    server {h}:{p} {options};" for h, p in zip(hosts, upstream_ports))
    site = site.replace(server_line.group(0), servers)
    primary_line = re.search(r"^\s*server transitd-primary:8080 (.*);$", site, re.M)
    assert primary_line, "docker/nginx.conf lost its primary's server line"
    primary = primary_port or (hosts[0], upstream_ports[0])
    site = site.replace(primary_line.group(0),
                        f"    server {primary[0]}:{primary[1]} {primary_line.group(1)};")
    assert "    listen 80;" in site
    site = site.replace("    listen 80;", f"    listen {host}:{port};")
    (tmp / "transitd.conf").write_text(site)
    user = "user root;\n" if os.geteuid() == 0 else ""
    main = f"""{user}worker_processes 2;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    include {tmp}/transitd.conf;
}}
"""
    (tmp / "nginx.conf").write_text(main)
    return tmp / "nginx.conf"


def version_of(server):
    return requests.get(server.url("/readyz"), timeout=10).json()["dataset_version"]


def served_requests(server):
    text = requests.get(server.url("/metrics"), timeout=10).text
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("transitd_http_requests_total{"))


# How long a replica may take to map and prepare a new version (or start) on
# a loaded CI machine, sanitizer builds included: a bound that proves it
# happens, not a speed (the speed is benchmarked in bench/).
RELOAD_BOUND_S = 30


def wait_until(check, timeout, what):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def start_replica(data, port="0"):
    s = Server(data, "--quiet", "--wait-for-data")
    s.args[s.args.index("--port") + 1] = str(port)
    return s.start()


def test_rollout_behind_nginx_under_load_fails_nothing():
    nginx = tool_or_skip("nginx", "/usr/sbin/nginx", "/opt/homebrew/bin/nginx",
                         "/usr/local/bin/nginx")
    wrk = tool_or_skip("wrk")
    t_start = time.monotonic()
    base = TMP / "topology"
    shutil.rmtree(base, ignore_errors=True)
    (base / "nginx").mkdir(parents=True)
    data = base / "data"
    import_feed(demo_feed(1), data)

    replicas = [start_replica(data) for _ in range(3)]
    nginx_proc = None
    try:
        old = version_of(replicas[0])
        assert all(version_of(r) == old for r in replicas)
        port = free_port()
        conf = nginx_config(base / "nginx", port, [r.port for r in replicas])
        test = subprocess.run([nginx, "-t", "-p", str(base / "nginx"), "-c", str(conf),
                               "-e", str(base / "nginx" / "error.log")],
                              capture_output=True, text=True, timeout=30)
        assert test.returncode == 0, test.stderr
        nginx_proc = subprocess.Popen([nginx, "-p", str(base / "nginx"), "-c", str(conf),
                                       "-e", str(base / "nginx" / "error.log")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        lb = f"http://127.0.0.1:{port}"

        def lb_ready():
            try:
                return requests.get(lb + "/readyz", timeout=2).status_code == 200
            except requests.ConnectionError:
                return False
        wait_until(lb_ready, RELOAD_BOUND_S, "nginx did not come up:\n" +
                   (base / "nginx" / "error.log").read_text() if (base / "nginx" / "error.log").exists() else "")
        before = [served_requests(r) for r in replicas]

        out = {}

        def load():
            p = subprocess.run([wrk, "-t2", "-c8", f"-d{WRK_SECONDS}s", "--timeout", "5s",
                                "-s", str(ROOT / "tests" / "api" / "wrk_rollout.lua"), lb],
                               capture_output=True, text=True, timeout=WRK_SECONDS + 30,
                               env=dict(os.environ, TRANSITD_BENCH_STATUSES="1"))
            out["wrk"] = p
        loader = threading.Thread(target=load)
        loader.start()
        time.sleep(1.0)

        # the rollout: one import into the shared directory, then replica by replica
        import_feed(demo_feed(2), data)
        new = os.readlink(data / "current").rsplit("/", 1)[-1]
        assert new != old
        for r in replicas:
            r.send_signal(signal.SIGHUP)
            wait_until(lambda: version_of(r) == new, RELOAD_BOUND_S, f"replica {r.port} kept {old}")
            time.sleep(0.5)
        # and a replica restarted outright (an upgrade): nginx sends its share elsewhere
        port1 = replicas[1].port
        served_before_restart = served_requests(replicas[1])
        rc, _ = replicas[1].stop()
        assert rc == 0
        time.sleep(0.5)
        replicas[1] = start_replica(data, port1)
        wait_until(lambda: version_of(replicas[1]) == new, RELOAD_BOUND_S, "the restarted replica")

        loader.join()
        p = out["wrk"]
        assert p.returncode == 0, p.stderr
        line = next(line for line in p.stdout.splitlines() if line.startswith('{"bench":"wrk"'))
        result = json.loads(line)
        print("wrk through nginx during the rollout:", {k: result[k] for k in (
            "requests", "non2xx", "statuses", "socket_errors")})
        assert result["requests"] > 500, result
        assert result["non2xx"] == 0 and result["statuses"] == {}, result
        assert result["socket_errors"] == {"connect": 0, "read": 0, "write": 0, "timeout": 0}, \
            result

        # every replica took part, and all serve the new version
        after = [served_requests(r) for r in replicas]
        assert after[0] > before[0] + 50 and after[2] > before[2] + 50, (before, after)
        assert served_before_restart > before[1] + 50, (before, served_before_restart)
        assert {version_of(r) for r in replicas} == {new}
        assert requests.get(lb + "/v1/feed", timeout=10).json()["feed"]["version"] == new
    finally:
        if nginx_proc:
            nginx_proc.send_signal(signal.SIGQUIT)
            try:
                nginx_proc.wait(10)
            except subprocess.TimeoutExpired:
                nginx_proc.kill()
                nginx_proc.wait()
        for r in replicas:
            if r.proc and r.proc.poll() is None:
                rc, _ = r.stop()
                r.assert_clean_exit(rc)
    assert time.monotonic() - t_start < 60


# ------------------------------------------------------------ the container files

def load_yaml(path):
    try:
        import yaml
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("PyYAML is missing and CI=true (.ci/deps test installs python3-yaml)")
        pytest.skip("PyYAML is not installed (.ci/deps test installs python3-yaml)")
    with open(path) as f:
        return yaml.safe_load(f)


def test_compose_topology():
    doc = load_yaml(DOCKER / "compose.yaml")
    services = doc["services"]
    assert set(services) == {"importer", "transitd-primary", "transitd", "lb", "transitd-https"}
    # HTTPS straight from transitd, only with --profile https: the flags, the health check
    https = services["transitd-https"]
    assert https["profiles"] == ["https"]
    cmd = https["command"]
    assert cmd[cmd.index("--tls-cert") + 1].startswith("/tls/") and cmd[cmd.index("--tls-cert") + 1].endswith(".crt")
    assert cmd[cmd.index("--tls-key") + 1].endswith(".key")
    assert https["environment"]["TRANSITD_TLS_CERT"] == cmd[cmd.index("--tls-cert") + 1]
    assert https["healthcheck"]["test"][:3] == ["CMD", "/usr/local/bin/transitd", "health"]
    importer, primary, replica, lb = (services[n] for n in ("importer", "transitd-primary", "transitd", "lb"))
    # one image, built once from the repository by the importer's build section
    assert (DOCKER / importer["build"]["context"] / importer["build"]["dockerfile"]).resolve() == \
        (DOCKER / "Dockerfile").resolve()
    assert importer["image"] == replica["image"] == primary["image"]
    assert importer["command"][0] == "import" and "/data" in importer["command"]
    assert "data:/data" in importer["volumes"]
    assert importer["healthcheck"] == {"disable": True}
    # the primary: the only writable volume, the importer's
    assert primary["volumes"] == ["data:/data"]
    assert primary["command"][:2] == ["serve", "--wait-for-data"]
    assert primary["depends_on"]["importer"]["condition"] == "service_completed_successfully"
    # replicas: no shared volume (each has the image's /data), fed by the primary, several
    assert "volumes" not in replica
    cmd = replica["command"]
    assert cmd[0] == "serve" and cmd[cmd.index("--replica-of") + 1] == "http://transitd-primary:8080"
    assert replica["depends_on"]["transitd-primary"]["condition"] == "service_healthy"
    assert replica["deploy"]["replicas"] >= 2
    assert replica["healthcheck"]["test"][:3] == ["CMD", "/usr/local/bin/transitd", "health"]
    assert "VOLUME /data" in (DOCKER / "Dockerfile").read_text()
    # nginx in front: the shipped config, only once replicas are healthy, with its own check
    assert "./nginx.conf:/etc/nginx/conf.d/default.conf:ro" in lb["volumes"]
    assert (DOCKER / "nginx.conf").is_file()
    assert lb["depends_on"]["transitd"]["condition"] == "service_healthy"
    assert "/readyz" in " ".join(lb["healthcheck"]["test"])
    assert any(str(p).endswith(":80") for p in lb["ports"])
    assert "data" in doc["volumes"]


def test_dockerfile_health_check_and_build():
    text = (DOCKER / "Dockerfile").read_text()
    assert "/dev/tcp" not in text
    check = re.search(r"^HEALTHCHECK .*\n(?:\s+.*\n)*", text, re.M).group(0)
    assert 'CMD ["/usr/local/bin/transitd", "health"' in check, check   # exec form: no shell
    assert "make -j\"$(nproc)\" RELEASE=1 install PREFIX=/usr/local DESTDIR=/out" in text   # no assert()
    assert 'CMD ["serve", "--wait-for-data"]' in text
    for src in re.findall(r"^COPY (?!--from)(\S+)", text, re.M):
        assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
    # what the health check runs exists and behaves: exit 1 when nothing listens
    p = subprocess.run([transitd_bin(), "health", "--timeout", "3"], capture_output=True,
                       text=True, timeout=30, env=dict(os.environ, TRANSITD_PORT=str(free_port())))
    assert p.returncode == 1 and "refused" in p.stderr
