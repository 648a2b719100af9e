"""A primary and three replicas as separate hosts (issue #24): each in a Linux network
namespace of its own with its own address and data directory, joined by a bridge in a
hub namespace where nginx runs docker/nginx.conf (reads to the replicas, writes to the
primary). Nothing is shared but the primary's files with the importer. Three feed
roll-outs under wrk load through nginx (0 non-2xx, 0 socket errors, every replica on the
newest version, the time from import to "all replicas serve it" reported), then 100
alert writes through nginx, each seen on every replica (p50 and p99 reported).

The namespaces (and the addresses inside them, 10.213.N.0/24) are made by this test and
removed after it. Where they cannot be made (macOS, no root) the same topology runs on
loopback ports and says so; with CI=true on Linux, namespaces are required.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, transitd_bin
from http_server import TMP, demo_feed, free_port, import_feed
from test_alerts_api import make_token
from test_deploy_topology import nginx_config

PORT = 8080
WRK_SECONDS = 20


def run(*cmd, check=True):
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=60, check=check)


class Namespaces:
    """hub (a bridge, nginx, the client) and one namespace per node."""

    def __init__(self, names):
        tag = os.getpid() % 200 + 20
        self.prefix = f"td{os.getpid()}"
        self.subnet = f"10.213.{tag}"
        self.hub = f"{self.prefix}h"
        self.nodes = {n: f"{self.prefix}{n[0]}{i}" for i, n in enumerate(names)}
        self.addr = {n: f"{self.subnet}.{10 + i}" for i, n in enumerate(names)}
        self.hub_addr = f"{self.subnet}.1"
        self.made = []

    def create(self):
        run("ip", "netns", "add", self.hub)
        self.made.append(self.hub)
        run("ip", "netns", "exec", self.hub, "ip", "link", "set", "lo", "up")
        run("ip", "netns", "exec", self.hub, "ip", "link", "add", "br0", "type", "bridge")
        run("ip", "netns", "exec", self.hub, "ip", "addr", "add", f"{self.hub_addr}/24", "dev", "br0")
        run("ip", "netns", "exec", self.hub, "ip", "link", "set", "br0", "up")
        for i, (name, ns) in enumerate(self.nodes.items()):
            run("ip", "netns", "add", ns)
            self.made.append(ns)
            inside, outside = f"{self.prefix}v{i}", f"{self.prefix}b{i}"
            run("ip", "link", "add", inside, "type", "veth", "peer", "name", outside)
            run("ip", "link", "set", inside, "netns", ns)
            run("ip", "link", "set", outside, "netns", self.hub)
            run("ip", "netns", "exec", self.hub, "ip", "link", "set", outside, "master", "br0")
            run("ip", "netns", "exec", self.hub, "ip", "link", "set", outside, "up")
            run("ip", "netns", "exec", ns, "ip", "addr", "add", f"{self.addr[name]}/24", "dev", inside)
            run("ip", "netns", "exec", ns, "ip", "link", "set", inside, "up")
            run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        return self

    def exec_prefix(self, name):
        return ["ip", "netns", "exec", self.hub if name == "hub" else self.nodes[name]]

    def remove(self):
        for ns in reversed(self.made):
            subprocess.run(["ip", "netns", "pids", ns], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def namespaces_possible():
    if os.environ.get("TRANSITD_TEST_LOOPBACK_TOPOLOGY") == "1":   # to exercise the fallback
        return False
    if sys.platform != "linux" or os.geteuid() != 0 or not shutil.which("ip"):
        return False
    probe = f"tdprobe{os.getpid()}"
    ok = subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0
    if ok:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return ok


def start(prefix, args, log):
    return subprocess.Popen(prefix + args, stdout=subprocess.DEVNULL, stderr=open(log, "w"))


def test_primary_and_three_replicas_on_separate_hosts():
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if not nginx or not shutil.which("wrk"):
        if os.environ.get("CI") == "true":
            pytest.fail("nginx and wrk are needed (.ci/deps test installs them)")
        pytest.skip("nginx or wrk is not installed (.ci/deps test installs them)")
    use_ns = namespaces_possible()
    if not use_ns and os.environ.get("CI") == "true" and sys.platform == "linux":
        pytest.fail("CI=true on Linux: this test must run the topology in network namespaces "
                    "(root and `ip netns` are needed)")
    if not use_ns:
        print("network namespaces cannot be made here: the topology runs on loopback ports")
    base = TMP / "topology"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    feeds = []
    for seed in (1, 2, 3, 4):
        feeds.append(demo_feed(seed))
    pdata = base / "primary"
    import_feed(feeds[0], pdata)
    tokens = base / "tokens"
    token = make_token(tokens)
    names = ["primary", "r1", "r2", "r3"]
    ns = Namespaces(names) if use_ns else None
    procs = []
    try:
        if ns:
            ns.create()
            host = {n: ns.addr[n] for n in names}
            port = {n: PORT for n in names}
            lb_host, lb_port = ns.hub_addr, PORT
            prefix = ns.exec_prefix
        else:
            host = {n: "127.0.0.1" for n in names}
            port = {n: free_port() for n in names}
            lb_host, lb_port = "127.0.0.1", free_port()
            prefix = lambda name: []   # noqa: E731
        tb = transitd_bin()
        procs.append(start(prefix("primary"), [tb, "serve", "--data", str(pdata), "--bind", host["primary"],
                                                "--port", str(port["primary"]), "--threads", "2",
                                                "--quiet", "--tokens", str(tokens)], base / "primary.log"))
        primary_url = f"http://{host['primary']}:{port['primary']}"
        for r in names[1:]:
            procs.append(start(prefix(r), [tb, "serve", "--data", str(base / r), "--bind", host[r],
                                           "--port", str(port[r]), "--threads", "2", "--quiet",
                                           "--replica-of", primary_url, "--replica-interval", "1"],
                               base / f"{r}.log"))
        ndir = base / "nginx"
        ndir.mkdir()
        conf = nginx_config(ndir, lb_port, [port[r] for r in names[1:]],
                            primary_port=(host["primary"], port["primary"]), host=lb_host,
                            hosts=[host[r] for r in names[1:]])
        procs.append(start(prefix("hub"), [nginx, "-p", str(ndir), "-c", str(conf), "-e",
                                           str(ndir / "error.log")], ndir / "stderr.log"))
        cfg = {
            "lb_host": lb_host, "lb_port": lb_port,
            "primary_host": host["primary"], "primary_port": port["primary"],
            "replicas": [[host[r], port[r]] for r in names[1:]],
            "transitd": tb, "primary_data": str(pdata), "feeds": [str(f) for f in feeds[1:]],
            "wrk_seconds": WRK_SECONDS, "wrk_script": str(ROOT / "bench" / "wrk" / "baseline.lua"),
            "wrk_path": "/v1/stops/nearby?lat=52.52&lon=13.40&radius=2000",
            "token": token, "alerts": 100, "route": "10000_1",
        }
        (base / "driver.json").write_text(json.dumps(cfg))
        p = subprocess.run(prefix("hub") + [sys.executable, str(ROOT / "tests" / "api" / "topology_driver.py"),
                                            str(base / "driver.json")],
                           capture_output=True, text=True, timeout=WRK_SECONDS + 240)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        out = json.loads(p.stdout.strip().splitlines()[-1])
        print(("namespaces" if ns else "loopback") + ": " + json.dumps(
            {k: out[k] for k in ("first_ready_s", "rollouts", "alerts", "replica_write_status")}))
        wrk = out["wrk"]
        assert wrk.get("requests", 0) > 0, wrk
        assert wrk["non2xx"] == 0, wrk
        assert not any(wrk["socket_errors"].values()), wrk
        assert len(out["rollouts"]) == 3
        assert len({r["version"] for r in out["rollouts"]}) == 3
        assert out["alerts"]["count"] == 100
        assert out["replica_write_status"] == 307
        for r in names[1:]:
            assert not (base / r / "live.sqlite").exists(), f"{r} wrote live state"
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if ns:
            ns.remove()


def ns_get(prefix, url):
    p = subprocess.run(prefix + ["curl", "-s", "-m", "5", "-w", "\n%{http_code}", url],
                       capture_output=True, text=True, timeout=30)
    body, _, code = p.stdout.rpartition("\n")
    return int(code or 0), body


def metric_of(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    return None


def test_primary_killed_in_the_middle_of_a_transfer():
    """kill -9 of the primary, its link going down with it, while a replica copies a new
    version over a slow link (1 Mbit/s, tc on the primary's interface): the replica keeps
    serving the old
    version; once the primary is back, the transfer resumes from the bytes it has,
    and the bytes sent again are reported."""
    if not shutil.which("tc") or not shutil.which("curl") or not namespaces_possible():
        if os.environ.get("CI") == "true" and sys.platform == "linux":
            pytest.fail("CI=true on Linux: network namespaces, tc and curl are needed")
        pytest.skip("needs network namespaces (root), tc and curl to slow the primary's link")
    base = TMP / "topology-kill"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    pdata = base / "primary"
    import_feed(demo_feed(1), pdata)
    ns = Namespaces(["primary", "replica"]).create()
    tb = transitd_bin()
    procs = []
    try:
        pv = f"{ns.prefix}v0"
        run(*ns.exec_prefix("primary"), "tc", "qdisc", "add", "dev", pv, "root", "tbf", "rate", "1mbit",
            "burst", "32kbit", "latency", "400ms")
        purl = f"http://{ns.addr['primary']}:{PORT}"
        rurl = f"http://{ns.addr['replica']}:{PORT}"
        serve_primary = [tb, "serve", "--data", str(pdata), "--bind", ns.addr["primary"], "--port", str(PORT),
                         "--threads", "2", "--quiet"]
        primary = start(ns.exec_prefix("primary"), serve_primary, base / "primary.log")
        procs.append(primary)
        procs.append(start(ns.exec_prefix("replica"), [tb, "serve", "--data", str(base / "replica"), "--bind",
                                                       ns.addr["replica"], "--port", str(PORT), "--threads", "2",
                                                       "--quiet", "--replica-of", purl, "--replica-interval", "1"],
                           base / "replica.log"))
        hub = ns.exec_prefix("hub")

        def version(url):
            code, body = ns_get(hub, url + "/readyz")
            return json.loads(body).get("dataset_version") if code == 200 else None

        def fetched():
            code, body = ns_get(hub, rurl + "/metrics")
            return metric_of(body, "transitd_replica_bytes_fetched_total") or 0 if code == 200 else 0

        deadline = time.monotonic() + 60
        while not version(rurl):
            assert time.monotonic() < deadline, "the replica's first version did not arrive"
            time.sleep(0.2)
        v1 = version(rurl)
        first = fetched()
        import_feed(demo_feed(2), pdata)
        deadline = time.monotonic() + 30
        while version(purl) == v1:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        v2 = version(purl)
        v2_size = sum(f["size"] for f in json.loads(ns_get(hub, purl + "/v1/dataset")[1])["files"])
        # wait until the replica holds part of v2's last file (files go in name order;
        # timetable.bin, the largest, comes last), then kill the primary outright
        files = json.loads(ns_get(hub, purl + "/v1/dataset")[1])["files"]
        last_starts = sum(f["size"] for f in files[:-1])
        deadline = time.monotonic() + 30
        while fetched() - first < last_starts + files[-1]["size"] // 10:
            assert time.monotonic() < deadline, "the transfer of the new version did not start"
            time.sleep(0.05)
        # the primary's host dies: the process is killed and its link goes down with the
        # bytes still queued in its socket (else the kernel would deliver them)
        run(*ns.exec_prefix("primary"), "ip", "link", "set", pv, "down")
        primary.kill()
        primary.wait()
        procs.remove(primary)
        cut_at = fetched() - first
        assert cut_at < v2_size, "the transfer finished before the kill: the link is too fast"
        # the host stays away until the replica gives up on the stalled transfer (curl's
        # low-speed limit: under 1 KB/s for 15 s, as curl averages it); meanwhile the
        # replica serves the old version
        def failures():
            code, body = ns_get(hub, rurl + "/metrics")
            return metric_of(body, "transitd_replica_transfer_failures_total") or 0 if code == 200 else 0

        before_cut = failures()
        deadline = time.monotonic() + 60
        while failures() == before_cut:
            assert time.monotonic() < deadline, "the replica never gave up on the stalled transfer"
            assert version(rurl) == v1
            assert ns_get(hub, rurl + "/v1/feed")[0] == 200
            time.sleep(1)
        run(*ns.exec_prefix("primary"), "ip", "link", "set", pv, "up")
        primary = start(ns.exec_prefix("primary"), serve_primary, base / "primary2.log")
        procs.append(primary)
        deadline = time.monotonic() + 90   # the cut transfer ends by curl's stall timeout (15 s)
        while version(rurl) != v2:
            assert time.monotonic() < deadline, "the transfer did not resume and finish"
            time.sleep(0.2)
        code, body = ns_get(hub, rurl + "/metrics")
        resumed = metric_of(body, "transitd_replica_bytes_resumed_total")
        total = fetched() - first
        print(f"kill -9 at {cut_at:,} of {v2_size:,} bytes; resumed from {resumed:,}; "
              f"bytes sent again: {total - v2_size:,}")
        assert resumed and resumed > 0
        assert total - v2_size < 200_000       # only what was in flight at the kill is sent again
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        ns.remove()
