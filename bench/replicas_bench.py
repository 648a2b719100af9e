#!/usr/bin/env python3
"""replicas_bench.py — primary and replicas (issue #24): how fast a snapshot travels,
how fast alerts reach replicas, and what nginx in front of three replicas serves.

Why it exists: the targets of the primary/replica issue, measured the way they are
used, in one run:
  transfer     the largest file of the served version, fetched whole with curl from
               the primary (GET /v1/dataset/{version}/{file}) and from nginx serving the
               `transitd export` of the same version, alternating; MB/s median of
               repeats each; target transitd >= 0.8 of nginx.
  propagation  a replica (`serve --replica-of`) and 100 alert writes to the primary,
               each timed until the replica shows it; p50 and p99, target p99 <= 2 s.
  serving      stop departures (wrk, c=64) through nginx with three replicas behind it
               (docker/nginx.conf) against one server asked directly, back to back.
               On a machine with few cores the four servers, nginx and wrk share them:
               the ratio says what the proxy hop costs there, not what more hosts add.

    python3 bench/replicas_bench.py --build build/release [--reps 3] [--duration 10] [--feed F]
    make bench-replicas
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "api"))
import run_bench as rb   # noqa: E402
from test_deploy_topology import nginx_config   # noqa: E402  (docker/nginx.conf for loopback)

ALERTS = 100


def curl_rate(url):
    p = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{speed_download} %{size_download}", url],
                       capture_output=True, text=True, timeout=120)
    speed, size = p.stdout.split()
    return float(speed) / 1e6, int(size)


def ready_version(port):
    try:
        status, _, body = rb.http_get(port, "/readyz", timeout=2)
    except OSError:
        return None
    return json.loads(body).get("dataset_version") if status == 200 else None


def wait_ready(port, timeout=120):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if ready_version(port):
            return
        time.sleep(0.1)
    raise rb.BenchError(f"the server on port {port} is not ready after {timeout} s")


def main(argv=None):
    ap = rb.side_bench_parser(__doc__, "replicas")
    args = ap.parse_args(argv)
    transitd, work, feed, data_dir = rb.prepare_side_bench(args, "replicas")
    nginx_bin = rb.find_nginx()
    if not nginx_bin:
        raise rb.BenchError("nginx is needed (the transfer baseline and the load balancer)")
    threads = "1" if (os.cpu_count() or 1) <= 2 else "2"
    servers = []
    try:
        tokens = work / "tokens"
        token = subprocess.run([transitd, "token", "new", "--tokens", str(tokens)], capture_output=True,
                               text=True, check=True).stdout.strip()
        pport = rb.free_port()
        primary = rb.Server("primary", [transitd, "serve", "--data", str(data_dir), "--port", str(pport),
                                        "--bind", "127.0.0.1", "--threads", threads, "--quiet",
                                        "--tokens", str(tokens)],
                            pport, "/healthz", work / "primary.log").start()
        servers.append(primary)
        manifest = json.loads(rb.http_get(pport, "/v1/dataset")[2])
        biggest = max(manifest["files"], key=lambda f: f["size"])
        export = work / "export"
        subprocess.run([transitd, "export", "--data", str(data_dir), str(export)], check=True,
                       capture_output=True)
        nport = rb.free_port()
        ndir = work / "nginx-static"
        ndir.mkdir()
        (ndir / "nginx.conf").write_text(f"""worker_processes 1; daemon off; pid {ndir}/nginx.pid;
error_log {ndir}/error.log warn; events {{ worker_connections 256; }}
http {{ access_log off; sendfile on; client_body_temp_path {ndir};
  server {{ listen 127.0.0.1:{nport}; root {export}; index index.json; location / {{ }} }} }}
""")
        static = rb.Server("nginx (static export)", [nginx_bin, "-p", str(ndir), "-c", str(ndir / "nginx.conf"),
                                                     "-e", str(ndir / "error.log")],
                           nport, "/v1/dataset/index.json", work / "nginx-static.log").start()
        servers.append(static)
        path = f"/v1/dataset/{manifest['version']}/{biggest['name']}"
        transfer = []
        for rep in range(max(args.reps, 3) * 2):
            order = (("transitd", pport), ("nginx", nport)) if rep % 2 == 0 else (("nginx", nport), ("transitd", pport))
            pair = {}
            for name, port in order:
                mbps, size = curl_rate(f"http://127.0.0.1:{port}{path}")
                if size != biggest["size"]:
                    raise rb.BenchError(f"{name} sent {size} bytes of {biggest['size']}")
                pair[name] = mbps
            transfer.append(pair)
            rb.log(f"transfer {biggest['name']} ({biggest['size']:,} B): transitd {pair['transitd']:.0f} MB/s, "
                   f"nginx {pair['nginx']:.0f} MB/s")
        transfer_ratio = statistics.median(p["transitd"] / p["nginx"] for p in transfer)

        # three replicas, their first version timed
        replicas = []
        t0 = time.monotonic()
        for i in range(3):
            port = rb.free_port()
            r = rb.Server(f"replica {i + 1}", [transitd, "serve", "--data", str(work / f"replica{i}"),
                                               "--port", str(port), "--bind", "127.0.0.1", "--threads", threads,
                                               "--quiet", "--replica-of", f"http://127.0.0.1:{pport}",
                                               "--replica-interval", "1"],
                          port, "/healthz", work / f"replica{i}.log").start()
            replicas.append(r)
            servers.append(r)
        for r in replicas:
            wait_ready(r.port)
        first_copy_s = time.monotonic() - t0
        rb.log(f"three empty replicas serve the primary's version {first_copy_s:.2f} s after they started")

        # alert propagation
        latencies = []
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        route = json.loads(rb.http_get(pport, "/v1/routes")[2])["routes"][0]["id"]
        for i in range(ALERTS):
            body = json.dumps({"informed_entity": [{"route_id": route}],
                               "header_text": {"translation": [{"text": f"Works {i}", "language": "en"}]}})
            conn = rb.http.client.HTTPConnection("127.0.0.1", pport, timeout=10)
            conn.request("PUT", f"/v1/alerts/bench-{i}", body=body, headers=headers)
            status = conn.getresponse().status
            conn.close()
            t0 = time.monotonic()
            if status not in (200, 201):
                raise rb.BenchError(f"PUT answered {status}")
            while rb.http_status(replicas[0].port, f"/v1/alerts/bench-{i}") != 200:
                if time.monotonic() - t0 > 30:
                    raise rb.BenchError(f"alert bench-{i} did not reach the replica")
                time.sleep(0.005)
            latencies.append(time.monotonic() - t0)
        latencies.sort()
        p50, p99 = statistics.median(latencies), latencies[int(len(latencies) * 0.99) - 1]
        rb.log(f"alert propagation over {ALERTS} writes: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")

        # serving through nginx with three replicas, against one server direct
        lport = rb.free_port()
        ldir = work / "nginx-lb"
        ldir.mkdir()
        conf = nginx_config(ldir, lport, [r.port for r in replicas], primary_port=("127.0.0.1", pport))
        lb = rb.Server("nginx (3 replicas)", [nginx_bin, "-p", str(ldir), "-c", str(conf), "-e",
                                               str(ldir / "error.log")], lport, "/healthz",
                       work / "nginx-lb.log").start()
        servers.append(lb)
        inputs = work / "inputs"
        rb.extract_inputs(data_dir, inputs, seed=args.seed)
        serving = []
        for rep in range(args.reps):
            pair = {}
            order = (("direct", primary), ("nginx", lb)) if rep % 2 == 0 else (("nginx", lb), ("direct", primary))
            for name, server in order:
                r = rb.run_wrk("stop_departures", server.url(), rb.MAIN_CONNECTIONS, args.duration, inputs,
                               seed=args.seed + rep)
                if not r["ok"]:
                    raise rb.BenchError(f"{name}: " + "; ".join(r["problems"]))
                pair[name] = r["req_per_s"]
            serving.append(pair)
            rb.log(f"stop departures: direct {pair['direct']:.0f} req/s, through nginx to 3 replicas "
                   f"{pair['nginx']:.0f} req/s")
        result = {
            "bench": "replicas", "feed": str(feed), "file": biggest, "transfer": transfer,
            "transfer_ratio": transfer_ratio,
            "transitd_mb_per_s": statistics.median(p["transitd"] for p in transfer),
            "nginx_mb_per_s": statistics.median(p["nginx"] for p in transfer),
            "first_copy_s": first_copy_s,
            "alert_propagation": {"count": ALERTS, "p50_s": p50, "p99_s": p99, "max_s": latencies[-1]},
            "serving": serving,
            "direct_req_per_s": statistics.median(p["direct"] for p in serving),
            "nginx_3_replicas_req_per_s": statistics.median(p["nginx"] for p in serving),
            "threads_per_server": int(threads), "machine": rb.machine_info(),
            "targets": {"transfer_ratio": 0.8, "alert_p99_s": 2.0},
        }
        ok = transfer_ratio >= 0.8 and p99 <= 2.0
        print(f"replicas benchmark: transfer {result['transitd_mb_per_s']:.0f} MB/s / nginx "
              f"{result['nginx_mb_per_s']:.0f} MB/s = {transfer_ratio:.2f} (target >= 0.80); alert propagation "
              f"p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms (target <= 2000 ms); stop departures through "
              f"nginx to 3 replicas {result['nginx_3_replicas_req_per_s']:.0f} req/s, direct "
              f"{result['direct_req_per_s']:.0f} req/s {'✓' if ok else '✗'}")
        if args.smoke:
            return 0
        rb.write_side_record(result, "replicas", args.out)
        return 0 if ok else 2
    finally:
        for s in reversed(servers):
            s.stop()
        for d in ("nginx-static", "nginx-lb"):
            shutil.rmtree(work / d, ignore_errors=True)


if __name__ == "__main__":
    rb.exit_with(main)
