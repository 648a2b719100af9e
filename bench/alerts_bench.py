#!/usr/bin/env python3
"""alerts_bench.py — read throughput of the iPhone mix with 50 active alerts
and 1 % alert writes, against the same mix without alerts, in one run.

Why it exists: the alerts issue's target (reads keep >= 90 % of the rate of
the mix without alerts) needs both sides measured on the same server, data
and machine minutes. One transitd serves Brooklyn (or --feed) with a bearer
token; each repetition deletes the benchmark's alerts and runs wrk/mix.lua,
and PUTs 50 alerts (40 on random stops, 10 on routes) and runs
wrk/mix_alerts.lua, whose 1 % of PUTs keep replacing them, the two in turns
(which goes first alternates). The read rate of the alerts run is its req/s
times the share of reads in its request lists; the report is the median of
the per-repetition ratios with its 95 % interval, and both medians.

    python3 bench/alerts_bench.py --build build [--reps 12] [--duration 6] [--feed F]
    make bench-alerts
"""
import http.client
import json
import random
import sqlite3
import statistics
import subprocess
import sys
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_bench as rb   # noqa: E402  (the shared runner: Server, run_wrk, inputs)

ALERTS = 50
TARGET = 0.90
CONNS = rb.MAIN_CONNECTIONS


def request(port, method, path, token, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"Authorization": f"Bearer {token}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers=headers)
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


def alert_bodies(data_dir, inputs_dir, rng):
    """50 alert bodies: 40 on stops the mix asks about, 10 on routes."""
    stops = [urllib.parse.unquote(s) for s in
             (inputs_dir / "stops.txt").read_text().split()]
    con = sqlite3.connect(f"file:{data_dir / 'current' / 'schedule.sqlite'}?mode=ro", uri=True)
    routes = [r[0] for r in con.execute("SELECT route_id FROM routes ORDER BY route_id")]
    con.close()
    bodies = []
    for k in range(ALERTS):
        entity = {"route_id": rng.choice(routes)} if k % 5 == 4 else {"stop_id": rng.choice(stops)}
        bodies.append({"informed_entity": [entity], "effect": "DETOUR", "cause": "CONSTRUCTION",
                       "header_text": {"translation": [{"text": f"Benchmark alert {k}",
                                                        "language": "en"}]},
                       "description_text": {"translation": [{"text": "Works on the line; "
                                                             "expect detours."}]}})
    return bodies


def set_alerts(port, token, bodies):
    for k in range(ALERTS):
        path = f"/v1/alerts/bench-{k}"
        status = request(port, "DELETE", path, token) if bodies is None else \
            request(port, "PUT", path, token, bodies[k])
        if status not in (200, 201, 204, 404):
            raise rb.BenchError(f"{path}: HTTP {status}")


def read_share(result):
    kinds = result.get("request_list_kinds") or {}
    total = sum(kinds.values())
    return (total - kinds.get("write", 0)) / total if total else 1.0


def main(argv=None):
    ap = rb.side_bench_parser(__doc__, "alerts")
    # single repetitions spread by a tenth either way on shared cores: more,
    # shorter ones (the summary gives the median's 95 % interval)
    ap.set_defaults(reps=12, duration=6)
    args = ap.parse_args(argv)
    transitd, work, feed, data_dir = rb.prepare_side_bench(args, "alerts")
    tokens = work / "tokens"
    token = subprocess.run([str(transitd), "token", "new", "--tokens", str(tokens)], check=True,
                           stdout=subprocess.PIPE, text=True).stdout.strip()
    port = rb.free_port()
    server = rb.Server("transitd", [transitd, "serve", "--data", str(data_dir), "--port", str(port),
                                    "--bind", "127.0.0.1", "--threads", str(rb.os.cpu_count() or 1),
                                    "--tokens", str(tokens), "--quiet"],
                       port, "/healthz", work / "transitd.log").start()
    runs = []
    try:
        inputs = rb.extract_inputs(data_dir, work / "inputs", seed=args.seed)
        bodies = alert_bodies(data_dir, work / "inputs", random.Random(args.seed))
        env = {"TRANSITD_BENCH_TOKEN": token, "TRANSITD_BENCH_ALERTS": str(ALERTS)}
        rb.log(f"inputs: {inputs['stops']} stops; {args.reps} x (mix without alerts, mix with "
               f"{ALERTS} alerts and 1 % writes), c={CONNS}, {args.duration} s each")
        for rep in range(args.reps):
            # which side goes first alternates: with one fixed order, load that
            # grows or falls over the run on these shared cores would always
            # land on the same side
            plain = mixed = None
            for side in (("plain", "alerts") if rep % 2 == 0 else ("alerts", "plain")):
                if side == "plain":
                    set_alerts(port, token, None)
                    plain = rb.run_wrk_with_cpu("mix", server, CONNS, args.duration, work / "inputs",
                                                seed=args.seed + rep)
                else:
                    set_alerts(port, token, bodies)
                    mixed = rb.run_wrk_with_cpu("mix_alerts", server, CONNS, args.duration, work / "inputs",
                                                seed=args.seed + rep, env_extra=env)
            share = read_share(mixed)
            reads = mixed["req_per_s"] * share
            ratio = reads / plain["req_per_s"] if plain["req_per_s"] else 0.0
            ok = plain["ok"] and mixed["ok"]
            # the same on CPU: the server's µs per request without alerts over
            # those per request (reads and writes) with them
            cpu_p, cpu_a = plain["server_cpu_us_per_req"], mixed["server_cpu_us_per_req"]
            cpu_ratio = cpu_p / cpu_a if cpu_p and cpu_a else None
            rb.log(f"rep {rep + 1}: mix {plain['req_per_s']:,.0f} req/s; with alerts "
                   f"{mixed['req_per_s']:,.0f} req/s, reads {reads:,.0f} req/s "
                   f"({share:.2%} of requests); ratio {ratio:.3f}"
                   + (f"; server CPU {cpu_p:.1f} vs {cpu_a:.1f} µs/request (ratio {cpu_ratio:.3f})"
                      if cpu_ratio else "")
                   + ("" if ok else "  FLAGGED: " + "; ".join(plain["problems"] + mixed["problems"])))
            runs.append({"rep": rep, "plain": plain, "alerts": mixed, "read_share": share,
                         "reads_per_s": reads, "ratio": ratio, "cpu_ratio": cpu_ratio, "ok": ok})
    finally:
        server.stop()
    good = [r for r in runs if r["ok"]]
    if args.smoke:
        for r in runs:
            for side in ("plain", "alerts"):
                for p in r[side]["problems"]:
                    rb.log(f"FAILED: {r[side]['script']}: {p}")
        rb.log(f"alerts smoke {'OK' if len(good) == len(runs) else 'FAILED'}")
        return 0 if len(good) == len(runs) else 1
    if not good:
        rb.log("every repetition was flagged; no result")
        return 1
    fields = {
        "alerts": ALERTS, "write_share": 1 - statistics.median(r["read_share"] for r in good),
        "mix_req_per_s": statistics.median(r["plain"]["req_per_s"] for r in good),
        "alerts_req_per_s": statistics.median(r["alerts"]["req_per_s"] for r in good),
        "alerts_reads_per_s": statistics.median(r["reads_per_s"] for r in good),
    }
    return rb.finish_side_bench(
        "alerts", args, CONNS, feed, runs, good, TARGET, fields,
        lambda res: f"mix without alerts {res['mix_req_per_s']:,.0f} req/s; with {ALERTS} alerts and "
                    f"{res['write_share']:.2%} writes {res['alerts_req_per_s']:,.0f} req/s, of which "
                    f"reads {res['alerts_reads_per_s']:,.0f} req/s, a ratio to the mix")


if __name__ == "__main__":
    rb.exit_with(main)
