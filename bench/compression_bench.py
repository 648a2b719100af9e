#!/usr/bin/env python3
"""compression_bench.py — what URLSession's Accept-Encoding costs: req/s, server
CPU per request and body size of /v1/departures (nearby departures) and
/v1/stops/{id}/departures with `Accept-Encoding: gzip, deflate, br` against the
same requests without it, back to back, with the compressed-body cache and
without it.

Why it exists: issue #23 measured an iPhone's requests at 0.26 of the rate of
the same requests without the header (zlib level 5 on every response). The
target is >= 0.60 of the uncompressed rate with bodies <= 15 % of the
uncompressed size. On a shared machine only ratios of runs made in the same
minute mean something, so two servers on the same data run at once, one with
the cache (the default, --compressed-cache-mb 32) and one without (0); each
repetition runs every script without and with the header against both, the
order alternating, and the report gives the medians of the per-repetition
ratios next to the server CPU µs per request (from /proc, which other load
disturbs less than req/s) and the median body sizes.

    python3 bench/compression_bench.py --build build/release [--reps 3] [--duration 10] [--feed F]
    make bench-compression
"""
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_bench as rb   # noqa: E402  (the shared runner: Server, run_wrk, inputs)

CONNS = rb.MAIN_CONNECTIONS
HEADER = f"Accept-Encoding: {rb.URLSESSION_ACCEPT_ENCODING}"
SERVERS = (("cache", "32"), ("no-cache", "0"))   # name, --compressed-cache-mb


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main(argv=None):
    ap = rb.side_bench_parser(__doc__, "compression")
    args = ap.parse_args(argv)
    transitd, work, feed, data_dir = rb.prepare_side_bench(args, "compression")
    servers = {}
    try:
        for name, mb in SERVERS:
            port = rb.free_port()
            servers[name] = rb.Server(
                f"transitd ({name})",
                [transitd, "serve", "--data", str(data_dir), "--port", str(port), "--bind", "127.0.0.1",
                 "--threads", str(rb.os.cpu_count() or 1), "--quiet", "--compressed-cache-mb", mb],
                port, "/healthz", work / f"{name}.log").start()
        inputs = work / "inputs"
        rb.extract_inputs(data_dir, inputs, seed=args.seed)
        sizes = {s: rb.body_bytes(servers["cache"].port, inputs, s) for s in rb.URLSESSION_SCRIPTS}
        runs = []
        for rep in range(args.reps):
            for s in rb.URLSESSION_SCRIPTS:
                for name in (n for n, _ in (SERVERS if rep % 2 == 0 else SERVERS[::-1])):
                    pair = {}
                    order = ("plain", "coded") if rep % 2 == 0 else ("coded", "plain")
                    for kind in order:
                        r = rb.run_wrk_with_cpu(s, servers[name], CONNS, args.duration, inputs,
                                                seed=args.seed + rep,
                                                headers=(HEADER,) if kind == "coded" else ())
                        r.update({"server": name, "kind": kind, "rep": rep})
                        rb.log(f"{s:16s} {name:8s} {kind:5s} rep {rep + 1}: {r['req_per_s']:9.0f} req/s, "
                               f"{r['server_cpu_us_per_req'] or 0:6.1f} µs CPU/request"
                               + ("" if r["ok"] else "  FLAGGED: " + "; ".join(r["problems"])))
                        pair[kind] = r
                        runs.append(r)
    finally:
        for server in servers.values():
            server.stop()

    results, ok_all = [], True
    print(f"\n{'script':16s} {'server':8s} {'plain req/s':>11s} {'URLSession':>10s} {'ratio':>6s}  "
          f"{'per rep':24s} {'CPU µs plain':>12s} {'coded':>6s} {'ratio':>6s}  body bytes")
    for s in rb.URLSESSION_SCRIPTS:
        for name, _ in SERVERS:
            mine = [r for r in runs if r["script"] == s and r["server"] == name]
            plain = [r for r in mine if r["kind"] == "plain"]
            coded = [r for r in mine if r["kind"] == "coded"]
            ratios = [c["req_per_s"] / p["req_per_s"] for p, c in
                      zip(sorted(plain, key=lambda r: r["rep"]), sorted(coded, key=lambda r: r["rep"]))
                      if p["ok"] and c["ok"] and p["req_per_s"]]
            ratio = median(ratios)
            body = sizes[s]
            share = body["share"]
            ok = ratio is not None and ratio >= rb.TARGET_CODED_RATIO and (
                s not in rb.BODY_TARGET_SCRIPTS or (share is not None and share <= rb.TARGET_CODED_BODY))
            if name == "cache":
                ok_all = ok_all and ok
            entry = {"script": s, "server": name, "ratio": ratio, "ratios": ratios,
                     "plain_req_per_s": median(r["req_per_s"] for r in plain),
                     "coded_req_per_s": median(r["req_per_s"] for r in coded),
                     "plain_cpu_us_per_req": median(r["server_cpu_us_per_req"] for r in plain),
                     "coded_cpu_us_per_req": median(r["server_cpu_us_per_req"] for r in coded),
                     "plain_body_bytes": body["plain"], "coded_body_bytes": body["coded"],
                     "body_share": share, "ok": ok}
            pc, cc = entry["plain_cpu_us_per_req"], entry["coded_cpu_us_per_req"]
            entry["cpu_ratio"] = pc / cc if pc and cc else None   # the rate ratio if CPU-bound
            results.append(entry)
            fmt = lambda v, d=0: "–" if v is None else f"{v:,.{d}f}"
            print(f"{s:16s} {name:8s} {fmt(entry['plain_req_per_s']):>11s} {fmt(entry['coded_req_per_s']):>10s} "
                  f"{fmt(ratio, 2):>6s}  {' '.join(f'{q:.2f}' for q in ratios):24s} "
                  f"{fmt(pc, 1):>12s} {fmt(cc, 1):>6s} {fmt(entry['cpu_ratio'], 2):>6s}  "
                  f"{body['plain']} -> {body['coded']} (all bytes: {fmt(share and share * 100, 1)} %)"
                  + ("" if name != "cache" else (" ✓" if ok else " ✗")))
    print(f"target (with the cache): >= {rb.TARGET_CODED_RATIO:.2f} of the plain rate; /v1/departures' "
          f"bodies <= {rb.TARGET_CODED_BODY:.0%} of the plain bytes; c={CONNS}, {args.duration} s per run, "
          f"medians of {args.reps}; body sizes are medians of 40 requests")
    flagged = [r for r in runs if not r["ok"]]
    if args.smoke:   # no record: only errors and non-2xx fail it
        for r in flagged:
            rb.log(f"FAILED: {r['script']} {r['server']} {r['kind']}: " + "; ".join(r["problems"]))
        rb.log(f"compression smoke {'FAILED' if flagged else 'OK'}")
        return 1 if flagged else 0
    record = {"bench": "compression", "feed": str(feed), "conns": CONNS, "duration_s": args.duration,
              "reps": args.reps, "accept_encoding": rb.URLSESSION_ACCEPT_ENCODING,
              "target_ratio": rb.TARGET_CODED_RATIO, "target_body_share": rb.TARGET_CODED_BODY,
              "results": results, "machine": rb.machine_info(), "runs": runs}
    rb.write_side_record(record, "compression", args.out)
    return 0 if ok_all and not flagged else 2


if __name__ == "__main__":
    rb.exit_with(main)
