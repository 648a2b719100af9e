#!/usr/bin/env python3
"""topology_driver.py — the client side of test_replica_topology.py, run where
the load balancer is (inside the test's hub network namespace, or on
loopback): waits for the replicas, rolls out feeds under wrk load through
nginx, writes alerts through nginx and measures how long each takes to show
on every replica. Prints one JSON object on stdout.

Why it exists: the test process itself lives outside the namespaces and
cannot reach their addresses; this script runs inside (`ip netns exec`),
using only the standard library, curl-free.

    topology_driver.py CONFIG.json
"""
import http.client
import json
import os
import statistics
import subprocess
import sys
import time


def get(host, port, path, timeout=5.0, method="GET", body=None, headers=None):
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def ready_version(host, port):
    try:
        status, body = get(host, port, "/readyz", timeout=2)
    except OSError:
        return None
    return json.loads(body).get("dataset_version") if status == 200 else None


def wait_all(nodes, want, timeout):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        versions = [ready_version(h, p) for h, p in nodes]
        if all(v == want if want else v for v in versions):
            return time.monotonic() - t0, versions
        time.sleep(0.05)
    raise SystemExit(json.dumps({"error": f"not all nodes on {want} after {timeout} s",
                                 "versions": [ready_version(h, p) for h, p in nodes]}))


def main():
    cfg = json.load(open(sys.argv[1]))
    lb = (cfg["lb_host"], cfg["lb_port"])
    primary = (cfg["primary_host"], cfg["primary_port"])
    replicas = [tuple(r) for r in cfg["replicas"]]
    out = {}
    out["first_ready_s"], versions = wait_all(replicas, None, 60)
    out["first_version"] = versions[0]

    # roll-outs under load: wrk through nginx for the whole sequence
    wrk = subprocess.Popen(["wrk", "-t2", "-c16", f"-d{cfg['wrk_seconds']}s", "--timeout", "10s",
                            "-s", cfg["wrk_script"], f"http://{lb[0]}:{lb[1]}"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, TRANSITD_BENCH_PATH=cfg["wrk_path"]))
    time.sleep(1.0)
    rollouts = []
    for feed in cfg["feeds"]:
        before = ready_version(*primary)
        t0 = time.monotonic()
        p = subprocess.run([cfg["transitd"], "import", feed, "--data", cfg["primary_data"], "--quiet"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(json.dumps({"error": "import failed", "stderr": p.stderr}))
        imported = time.monotonic() - t0
        want = before
        while want == before and time.monotonic() - t0 < 30:
            time.sleep(0.02)
            want = ready_version(*primary)
        spread, _ = wait_all(replicas, want, 60)
        rollouts.append({"version": want, "import_s": round(imported, 3),
                         "all_replicas_s": round(time.monotonic() - t0, 3)})
    stdout, stderr = wrk.communicate(timeout=cfg["wrk_seconds"] + 60)
    line = next((l for l in stdout.splitlines() if l.startswith('{"bench":"wrk"')), None)
    out["wrk"] = json.loads(line) if line else {"error": stdout[-500:] + stderr[-500:]}
    out["rollouts"] = rollouts

    # alert writes through nginx: each seen on every replica
    latencies = []
    headers = {"Authorization": f"Bearer {cfg['token']}", "Content-Type": "application/json"}
    for i in range(cfg["alerts"]):
        body = json.dumps({"informed_entity": [{"route_id": cfg["route"]}],
                           "header_text": {"translation": [{"text": f"Works {i}", "language": "en"}]}})
        t0 = time.monotonic()
        # nginx passes a write on to the primary itself (the shipped config)
        status, text = get(*lb, f"/v1/alerts/topo-{i}", method="PUT", body=body, headers=headers)
        if status not in (200, 201):
            raise SystemExit(json.dumps({"error": f"PUT through nginx answered {status}", "body": text.decode()[:300]}))
        pending = set(range(len(replicas)))
        while pending and time.monotonic() - t0 < 30:
            for j in list(pending):
                s, _ = get(*replicas[j], f"/v1/alerts/topo-{i}", timeout=2)
                if s == 200:
                    pending.discard(j)
            if pending:
                time.sleep(0.01)
        if pending:
            raise SystemExit(json.dumps({"error": f"alert topo-{i} missing on replicas {sorted(pending)}"}))
        latencies.append(time.monotonic() - t0)
    latencies.sort()
    out["alerts"] = {"count": len(latencies), "p50_s": round(statistics.median(latencies), 3),
                     "p99_s": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 3),
                     "max_s": round(latencies[-1], 3)}
    # a write sent straight to a replica is redirected to the primary
    status, _ = get(*replicas[0], "/v1/alerts/x", method="DELETE", headers=headers)
    out["replica_write_status"] = status
    print(json.dumps(out))


if __name__ == "__main__":
    main()
