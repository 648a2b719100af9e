#!/usr/bin/env python3
"""run_bench.py — transitd's measuring instrument: import, CSV, query and HTTP
benchmarks, one table, a JSON record and a chart.

Why it exists: performance claims in this project are targets with numbers
(README "Targets"); this runner measures all of them the same way on any
machine, next to baselines measured in the same run, so a figure always comes
with what it should be compared to.

    python3 bench/run_bench.py --build BUILD --all      (make bench, <= 10 min)
    python3 bench/run_bench.py --build BUILD --smoke    (make bench-smoke, ~30 s)
    python3 bench/run_bench.py --build BUILD --import | --query | --csv | --http

Options: --feed ZIP (default ../shared/gtfs/nyct_bus_brooklyn_2026.zip, else
the generated berlin-scale feed), --duration S, --reps N, --update-readme,
--out FILE, --no-install. See bench/README.md for the run budget and how to
read the ratios.

Python 3 standard library only.
"""
import argparse
import datetime
import http.client
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import socket
import ssl
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = ROOT / "bench"
WRK_DIR = BENCH_DIR / "wrk"
RESULTS_DIR = BENCH_DIR / "results"
README = BENCH_DIR / "README.md"
SHARED_FEED = ROOT.parent / "shared" / "gtfs" / "nyct_bus_brooklyn_2026.zip"

README_BEGIN = "<!-- latest-results:begin -->"
README_END = "<!-- latest-results:end -->"

NODE_GTFS_REFERENCE = ("node-gtfs reference (fixed figures from its own benchmark, not measured "
                       "here): import 35 s, 542 MB database, 129 req/s")

# Targets (see the benchmarks issue and bench/README.md).
TARGET_DEPARTURES_RATIO = 0.50      # departures endpoints vs hello_mhd req/s
TARGET_STOP_RATIO = 0.75            # stop by id vs hello_mhd req/s
TARGET_RSS_MB = 64.0                # transitd RSS while serving
TARGET_IMPORT_S = 1.5               # Brooklyn import wall time
TARGET_IMPORT_RSS_MB = 300.0        # Brooklyn import peak RSS
TARGET_STORES_FRACTION = 0.10       # timetable.bin + schedule.sqlite vs CSV bytes (no shapes)
TARGET_CSV_MB_S = 500.0             # the C CSV reader on stop_times.txt
TARGET_QUERY_US = {                 # in-process query engine, (p50, p99) in µs; None = no target
    "nearby_departures": (10.0, 50.0),
    "stop_departures": (2.0, None),
    "nearby_stops": (2.0, None),
}

# The endpoint scripts measured one by one (c=64, repeated), and the mix.
ENDPOINT_SCRIPTS = ["nearby_stops", "stop_departures", "departures", "stop", "search", "trip"]
SWEEP_CONNECTIONS = [1, 16, 64, 256]
MAIN_CONNECTIONS = 64
WRK_THREADS = 2
# Every script, for the smoke run.
ALL_SCRIPTS = ENDPOINT_SCRIPTS + ["departures_large", "routes", "mix"]
# What Apple's URLSession sends on every request (issue #23): these scripts also run
# with it, right after the same script without it, and are reported against it.
URLSESSION_ACCEPT_ENCODING = "gzip, deflate, br"
URLSESSION_VARIANT = " URLSession"
# The iPhone profile (issue #23): the mix as an app sends it, over HTTPS with keep-alive and
# URLSession's Accept-Encoding, to `serve --tls-cert`; judged against the plain-HTTP mix.
IPHONE_VARIANT = " iPhone (HTTPS, URLSession)"
TARGET_IPHONE_RATIO = 0.5
URLSESSION_SCRIPTS = ["departures", "stop_departures"]
TARGET_CODED_RATIO = 0.60           # req/s with URLSession's Accept-Encoding vs without
TARGET_CODED_BODY = 0.15            # coded body bytes vs uncompressed, for /v1/departures: the
BODY_TARGET_SCRIPTS = ["departures"]  # other answers are often too small to shrink as much


def log(msg):
    print(f"bench: {msg}", flush=True)


def side_bench_parser(doc, kind):
    """The command line every side benchmark (alerts, realtime) takes."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--feed")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", help=f"JSON record (default bench/results/<date>-<host>-{kind}.json)")
    ap.add_argument("--smoke", action="store_true",
                    help="one 2 s repetition on the demo feed; fails only on errors or non-2xx "
                         "(part of make test through make bench-smoke)")
    return ap


def prepare_side_bench(args, kind):
    """The common start of a side benchmark (alerts, realtime): the smoke
    settings, a fresh build/bench-<kind>[-smoke] folder, the feed (the demo
    for a smoke run) imported into it. Returns (transitd, work, feed, data_dir)."""
    if args.smoke:
        args.reps, args.duration = 1, 2
    build = Path(args.build).resolve()
    transitd = require_binary(build / "transitd", "the server")
    work = build / (f"bench-{kind}-smoke" if args.smoke else f"bench-{kind}")
    remove_own_dir(work)
    work.mkdir(parents=True)
    if args.smoke:
        feed, source = generate_feed("demo", work / "demo.zip"), "generated demo"
    else:
        feed, source = choose_feed(args, build)
    log(f"feed: {feed} ({source})")
    return transitd, work, feed, import_for_serving(transitd, feed, work / "data")


def cpu_seconds(pid):
    """User + system CPU time of a process so far (Linux /proc; None elsewhere)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def run_wrk_with_cpu(script, server, conns, duration_s, inputs_dir, seed, env_extra=None, headers=()):
    """run_wrk against `server`, plus the server's CPU µs per request
    (result["server_cpu_us_per_req"], None where /proc is missing): a figure
    other processes on the shared cores disturb far less than req/s."""
    c0 = cpu_seconds(server.pid)
    r = run_wrk(script, server.url(), conns, duration_s, inputs_dir, headers=headers,
                env_extra=env_extra, seed=seed)
    c1 = cpu_seconds(server.pid)
    requests = r["req_per_s"] * duration_s
    r["server_cpu_us_per_req"] = ((c1 - c0) / requests * 1e6) if c0 is not None and c1 is not None \
        and requests else None
    return r


def median_ci95(values, resamples=2000, seed=1):
    """A 95 % interval for the median of `values` (the repetitions' ratios),
    by bootstrap: the medians of `resamples` draws with replacement, their
    2.5th and 97.5th percentiles. (None, None) with fewer than 5 values.
    Single repetitions on shared cores spread by a tenth either way, so the
    median alone does not say how far from the target it may be."""
    if len(values) < 5:
        return None, None
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    return medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


def finish_side_bench(kind, args, conns, feed, runs, good, target, fields, summary):
    """The end of a side benchmark (alerts, realtime): its record (the
    medians over the good repetitions of `ratio` and `cpu_ratio`, plus
    `fields`), one summary line (`summary` and the verdict against
    `target`), the record written. Returns the exit status: 0, or 2 when
    the median ratio misses the target."""
    result = {
        "bench": kind, "feed": str(feed), "conns": conns, "duration_s": args.duration, "reps": args.reps,
        **fields,
        "ratio": statistics.median(r["ratio"] for r in good),
        "ratios": [round(r["ratio"], 4) for r in runs], "flagged": len(runs) - len(good),
        "cpu_ratio": statistics.median(r["cpu_ratio"] for r in good) if all(
            r["cpu_ratio"] for r in good) else None,
        "target": target, "machine": machine_info(), "runs": runs,
        "finished": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }
    result["ratio_ci95"] = median_ci95([r["ratio"] for r in good])
    result["cpu_ratio_ci95"] = median_ci95([r["cpu_ratio"] for r in good]) if result["cpu_ratio"] else (None, None)
    ok = result["ratio"] >= target

    def ci(key):
        lo, hi = result[key]
        return f" (95 % interval of the median {lo:.3f}-{hi:.3f})" if lo is not None else ""
    print(f"{kind} benchmark (c={conns}, median of {len(good)}): {summary(result)} = {result['ratio']:.3f}"
          f"{ci('ratio_ci95')} (target >= {target:.2f}) {'✓' if ok else '✗'}; per rep {result['ratios']}"
          + (f"; server CPU per request ratio {result['cpu_ratio']:.3f}{ci('cpu_ratio_ci95')}"
             if result["cpu_ratio"] else ""))
    write_side_record(result, kind, args.out)
    return 0 if ok else 2


def write_side_record(result, kind, out=None):
    """Writes a side benchmark's record (alerts, realtime) to `out`, or to
    bench/results/<date>-<host>-<kind>.json."""
    path = Path(out) if out else (
        RESULTS_DIR / f"{datetime.date.today().isoformat()}-{socket.gethostname()}-{kind}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    log(f"wrote {path}")


def exit_with(main):
    """Runs a benchmark script's main(): its return value is the exit status,
    a BenchError is logged and exits 1."""
    try:
        sys.exit(main())
    except BenchError as e:
        log(f"ERROR: {e}")
        sys.exit(1)


class BenchError(Exception):
    """A measurement that cannot be made (missing binary, server that does not start)."""


# ------------------------------------------------------------------ machine

def read_text(path, default=""):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return default


def command_output(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=10)
        return p.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_info():
    cpuinfo = read_text("/proc/cpuinfo")
    m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    mem = re.search(r"^MemTotal:\s*(\d+) kB", read_text("/proc/meminfo"), re.M)
    osr = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', read_text("/etc/os-release"), re.M)
    wrk_v = command_output(["wrk", "--version"]).splitlines()
    nginx_bin = find_nginx()
    return {
        "host": socket.gethostname(),
        "cores": os.cpu_count() or 1,
        "cpu_model": m.group(1).strip() if m else platform.processor() or "unknown",
        "kernel": platform.release(),
        "os": osr.group(1) if osr else platform.system(),
        "memory_mb": int(mem.group(1)) // 1024 if mem else None,
        "wrk": wrk_v[0] if wrk_v else "absent",
        "nginx": command_output([nginx_bin, "-v"]) if nginx_bin else "absent",
        "libmicrohttpd": command_output(["pkg-config", "--modversion", "libmicrohttpd"]),
        "python": platform.python_version(),
    }


def describe_machine(m):
    return (f"{m['host']}: {m['cores']} cores, {m['cpu_model']}, kernel {m['kernel']}, "
            f"{m['os']}, {m['memory_mb']} MB RAM; {m['wrk']}; libmicrohttpd "
            f"{m['libmicrohttpd']}; {m['nginx']}")


# ------------------------------------------------------------------ tools

def find_nginx():
    for cand in (shutil.which("nginx"), "/usr/sbin/nginx", "/usr/local/sbin/nginx"):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def apt_install(packages):
    """Installs the first installable of `packages` (alternatives) with apt-get."""
    if not shutil.which("apt-get"):
        return False
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for attempt in range(2):
        if attempt == 1:
            subprocess.run(prefix + ["apt-get", "update", "-qq"], env=env)
        for pkg in packages:
            p = subprocess.run(prefix + ["apt-get", "install", "-y", "-qq",
                                         "--no-install-recommends", pkg], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if p.returncode == 0:
                log(f"installed {pkg}")
                return True
    return False


def ensure_tools(need_nginx, need_gnuplot, allow_install):
    """wrk is required; nginx and gnuplot are installed on demand (--all, --http)."""
    if not shutil.which("wrk"):
        if not (allow_install and apt_install(["wrk"])):
            raise BenchError("wrk is not installed (make deps installs it)")
    if need_nginx and not find_nginx():
        log("nginx is missing: installing nginx-light for the baseline")
        if not (allow_install and apt_install(["nginx-light", "nginx"])):
            log("WARNING: nginx could not be installed; the nginx baseline is skipped")
    if need_gnuplot and not shutil.which("gnuplot"):
        log("gnuplot is missing: installing gnuplot-nox for the chart")
        if not (allow_install and apt_install(["gnuplot-nox"])):
            log("WARNING: gnuplot could not be installed; no chart")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_binary(path, what):
    if not os.access(path, os.X_OK):
        raise BenchError(f"{path} is not built ({what}); run `make build-tests` first")
    return str(path)


def remove_own_dir(path):
    """Removes a work directory this runner created (never anything outside BUILD)."""
    if path.exists():
        shutil.rmtree(path)


# ------------------------------------------------------------------ processes

def rss_kb(pid):
    m = re.search(r"^VmRSS:\s*(\d+) kB", read_text(f"/proc/{pid}/status"), re.M)
    return int(m.group(1)) if m else 0


class RssSampler:
    """Samples VmRSS of one process every `interval` seconds; keeps the max."""

    def __init__(self, pid, interval=0.1):
        self.pid, self.interval = pid, interval
        self.max_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.max_kb = max(self.max_kb, rss_kb(self.pid))
            self._stop.wait(self.interval)

    def __enter__(self):
        self.max_kb = rss_kb(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.max_kb = max(self.max_kb, rss_kb(self.pid))


class Server:
    """A server process on a loopback port: started, probed until it answers, stopped."""

    def __init__(self, name, cmd, port, probe_path, log_path, scheme="http"):
        self.name, self.cmd, self.port, self.probe_path = name, cmd, port, probe_path
        self.log_path = log_path
        self.scheme = scheme
        self.proc = None
        self.max_rss_kb = 0

    def start(self, timeout=20.0):
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=ROOT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"{self.name} exited with {self.proc.returncode} at start: "
                                 f"{read_text(self.log_path)[-2000:]}")
            status = http_status(self.port, self.probe_path, self.scheme == "https")
            if status is not None:
                if not 200 <= status < 300:
                    self.stop()
                    raise BenchError(f"{self.name} answers {self.probe_path} with {status}")
                return self
            time.sleep(0.05)
        self.stop()
        raise BenchError(f"{self.name} did not answer on port {self.port} within {timeout} s")

    @property
    def pid(self):
        return self.proc.pid

    def url(self):
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc and getattr(self, "_log", None):
            self._log.close()


def http_get(port, path, headers=None, timeout=5.0, tls=False):
    if tls:   # our own loopback servers with self-signed certificates: no verification
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout, context=ctx)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def http_status(port, path, tls=False):
    try:
        return http_get(port, path, timeout=1.0, tls=tls)[0]
    except OSError:
        return None
    except http.client.HTTPException:
        return None


# ------------------------------------------------------------------ wrk

def wrk_threads_for(conns):
    # wrk needs at least one connection per thread.
    return min(WRK_THREADS, conns)


def run_wrk(script, url, conns, duration_s, inputs_dir=None, headers=(), env_extra=None,
            seed=42):
    """Runs one wrk measurement; returns the parsed JSON line of done() plus
    `ok` and `problems` (non-2xx, socket errors, script errors, no output)."""
    threads = wrk_threads_for(conns)
    cmd = ["wrk", "-t", str(threads), "-c", str(conns), "-d", f"{duration_s}s",
           "--timeout", "10s", "-s", str(WRK_DIR / f"{script}.lua")]
    for h in headers:
        cmd += ["-H", h]
    cmd.append(url)
    env = dict(os.environ)
    env["TRANSITD_BENCH_SEED"] = str(seed)
    if inputs_dir:
        env["TRANSITD_BENCH_INPUTS"] = str(inputs_dir)
    env.update(env_extra or {})
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       timeout=duration_s + 60)
    result = None
    for line in p.stdout.splitlines():
        if line.startswith('{"bench":"wrk"'):
            result = json.loads(line)
    problems = []
    if p.returncode != 0:
        problems.append(f"wrk exited {p.returncode}")
    if re.search(r"error", p.stderr, re.I):
        problems.append("wrk stderr: " + p.stderr.strip()[-500:])
    if result is None:
        problems.append("no JSON line from done(): " + (p.stdout + p.stderr).strip()[-500:])
        result = {"script": script, "requests": 0, "req_per_s": 0.0, "mb_per_s": 0.0,
                  "latency_us": {}, "non2xx": 0, "socket_errors": {}}
    else:
        if result.get("requests", 0) <= 0:
            problems.append("no requests completed")
        if result.get("non2xx", 0):
            problems.append(f"{result['non2xx']} non-2xx responses {result.get('statuses')}")
        sock = {k: v for k, v in (result.get("socket_errors") or {}).items() if v}
        if sock:
            problems.append(f"socket errors {sock}")
    result.update({"conns": conns, "wrk_threads": threads, "duration_s_requested": duration_s,
                   "headers": list(headers), "ok": not problems, "problems": problems})
    return result


# ------------------------------------------------------------------ feeds and import

def feed_csv_bytes(feed):
    """Uncompressed bytes of the feed's .txt files, shapes.txt excluded."""
    with zipfile.ZipFile(feed) as z:
        return sum(i.file_size for i in z.infolist()
                   if i.filename.endswith(".txt") and Path(i.filename).name != "shapes.txt")


def choose_feed(args, build):
    """The HTTP/import feed: --feed, else the shared Brooklyn feed, else a generated one."""
    if args.feed:
        return Path(args.feed).resolve(), "given"
    if SHARED_FEED.exists():
        return SHARED_FEED, "shared"
    out = build / "bench-run" / "berlin.zip"
    generate_feed("berlin", out)
    return out, "generated (../shared/gtfs is absent)"


def generate_feed(scale, out):
    gen = BENCH_DIR / "gtfs_gen.py"
    if out.exists() and out.stat().st_mtime >= gen.stat().st_mtime:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    log(f"generating the {scale} feed into {out}")
    p = subprocess.run([sys.executable, str(gen), "--scale", scale, "--out", str(out)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise BenchError(f"gtfs_gen.py --scale {scale} failed: {p.stdout[-2000:]}")
    return out


def wait_with_rusage(proc):
    """Waits for a child and returns (returncode, peak RSS in kB) from its own rusage."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    maxrss = usage.ru_maxrss
    if sys.platform == "darwin":
        maxrss //= 1024            # bytes there, kB on Linux
    return proc.returncode, maxrss


def import_once(transitd, feed, data_dir):
    remove_own_dir(data_dir)
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    proc = subprocess.Popen([transitd, "import", str(feed), "--data", str(data_dir), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    out, err = b"", b""
    # Read the pipes on threads so a chatty import cannot block on a full pipe,
    # then reap the child with wait4 to get its own rusage.
    chunks = {"out": [], "err": []}

    def drain(stream, key):
        chunks[key].append(stream.read())

    readers = [threading.Thread(target=drain, args=(proc.stdout, "out")),
               threading.Thread(target=drain, args=(proc.stderr, "err"))]
    for t in readers:
        t.start()
    rc, maxrss_kb = wait_with_rusage(proc)
    wall = time.perf_counter() - start
    for t in readers:
        t.join()
    out, err = b"".join(chunks["out"]), b"".join(chunks["err"])
    if rc != 0:
        raise BenchError(f"transitd import {feed} exited {rc}: "
                         f"{err.decode(errors='replace')[-2000:]}")
    summary = None
    text = out.decode(errors="replace").strip()
    try:
        summary = json.loads(text)
    except ValueError:
        for line in reversed(text.splitlines()):
            if line.startswith("{"):
                try:
                    summary = json.loads(line)
                    break
                except ValueError:
                    pass
    return {"wall_s": wall, "max_rss_mb": maxrss_kb / 1024.0, "summary": summary}


def store_sizes(data_dir):
    current = data_dir / "current"
    sizes = {}
    for name in ("timetable.bin", "schedule.sqlite", "shapes.sqlite"):
        p = current / name
        sizes[name] = p.stat().st_size if p.exists() else None
    return sizes


def bench_import(transitd, feed, work, runs=3):
    results = []
    for i in range(runs):
        data_dir = work / f"import-{i}"
        r = import_once(transitd, feed, data_dir)
        log(f"import {i + 1}/{runs}: {r['wall_s']:.3f} s, peak RSS {r['max_rss_mb']:.1f} MB")
        results.append(r)
    last_dir = work / f"import-{runs - 1}"
    sizes = store_sizes(last_dir)
    csv_bytes = feed_csv_bytes(feed)
    stores = (sizes.get("timetable.bin") or 0) + (sizes.get("schedule.sqlite") or 0)
    return {
        "feed": str(feed),
        "runs": results,
        "median_wall_s": statistics.median(r["wall_s"] for r in results),
        "median_max_rss_mb": statistics.median(r["max_rss_mb"] for r in results),
        "max_rss_mb": max(r["max_rss_mb"] for r in results),
        "store_bytes": sizes,
        "csv_bytes_excluding_shapes": csv_bytes,
        "stores_fraction": stores / csv_bytes if csv_bytes else None,
        "data_dir": str(last_dir),
    }


def import_for_serving(transitd, feed, data_dir):
    r = import_once(transitd, feed, data_dir)
    log(f"imported {feed.name} into {data_dir} in {r['wall_s']:.2f} s")
    return data_dir


# ------------------------------------------------------------------ input lists

EARTH_M_PER_DEG = 111320.0


def parse_gtfs_date(v):
    if v is None:
        return None
    s = str(v).strip()
    try:
        if re.fullmatch(r"\d{8}", s):
            return datetime.date(int(s[:4]), int(s[4:6]), int(s[6:]))
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", s):
            return datetime.date.fromisoformat(s)
        if re.fullmatch(r"-?\d{1,6}", s):
            return datetime.date(1970, 1, 1) + datetime.timedelta(days=int(s))
    except ValueError:
        return None
    return None


WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def choose_service_date(con):
    """A weekday inside the service range with the most active services
    (Wednesdays first), so departures queries find trips."""
    calendar = []
    try:
        calendar = con.execute("SELECT service_id, monday, tuesday, wednesday, thursday, friday,"
                               " saturday, sunday, start_date, end_date FROM calendar").fetchall()
    except sqlite3.Error:
        pass
    exceptions = []
    try:
        exceptions = con.execute("SELECT service_id, date, exception_type FROM calendar_dates"
                                 ).fetchall()
    except sqlite3.Error:
        pass
    dates = []
    for row in calendar:
        for v in row[8:10]:
            d = parse_gtfs_date(v)
            if d:
                dates.append(d)
    for row in exceptions:
        d = parse_gtfs_date(row[1])
        if d:
            dates.append(d)
    if not dates:
        return None
    first, last = min(dates), max(dates)
    added, removed = {}, {}
    for sid, v, kind in exceptions:
        d = parse_gtfs_date(v)
        if d:
            (added if str(kind) == "1" else removed).setdefault(d, set()).add(sid)

    def active(d):
        services = set(added.get(d, ()))
        for row in calendar:
            start, end = parse_gtfs_date(row[8]), parse_gtfs_date(row[9])
            if start and end and start <= d <= end and str(row[1 + d.weekday()]) == "1":
                services.add(row[0])
        return len(services - removed.get(d, set()))

    middle = first + (last - first) / 2
    span = (last - first).days + 1
    candidates = [first + datetime.timedelta(days=i) for i in range(span)]
    midweek = [d for d in candidates if d.weekday() in (1, 2, 3)] or candidates
    # Most services first, then closest to the middle of the range.
    return max(midweek, key=lambda d: (active(d), -abs((d - middle).days)))


def search_terms(names, rng, count):
    words = []
    for name in names:
        ws = [w for w in re.findall(r"[^\W_]+", name or "") if len(w) >= 3 and not w.isdigit()]
        if ws:
            words.append(ws)
    out = []
    for _ in range(count if words else 0):
        ws = rng.choice(words)
        i = rng.randrange(len(ws))
        head = ws[i][:rng.randint(3, len(ws[i]))]
        if i + 1 < len(ws) and rng.random() < 0.3:
            head = ws[i] + " " + ws[i + 1][:rng.randint(3, len(ws[i + 1]))]
        out.append(head)
    return out


def extract_inputs(data_dir, out_dir, seed=42, n_points=4096, n_times=1024, n_queries=2048,
                   n_trips=20000, jitter_m=300.0):
    """Writes the input lists the wrk scripts draw from (see bench/wrk/common.lua)
    and returns what they were drawn from."""
    db = data_dir / "current" / "schedule.sqlite"
    if not db.exists():
        raise BenchError(f"{db} does not exist: the import did not produce schedule.sqlite")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        stops = con.execute("SELECT stop_id, stop_name, stop_lat, stop_lon,"
                            " COALESCE(location_type, 0) FROM stops").fetchall()
        trips = [r[0] for r in con.execute("SELECT trip_id FROM trips")]
        service_date = choose_service_date(con)
    finally:
        con.close()
    rng = random.Random(seed)
    servable = [s for s in stops if str(s[4]) in ("0", "1", "")]
    located = [s for s in servable if s[2] is not None and s[3] is not None
               and not (float(s[2]) == 0.0 and float(s[3]) == 0.0) and str(s[4]) in ("0", "")]
    if not servable or not located or not trips:
        raise BenchError(f"{db} has no usable stops or trips")
    if service_date is None:
        raise BenchError(f"{db} has no calendar dates to choose a service date from")
    q = lambda s: urllib.parse.quote(str(s), safe="")
    points = []
    for _ in range(n_points):
        s = rng.choice(located)
        # uniform in a disc of radius jitter_m around the stop
        r = jitter_m * rng.random() ** 0.5
        a = rng.random() * 6.283185307179586
        lat = float(s[2]) + r * math.cos(a) / EARTH_M_PER_DEG
        coslat = max(0.01, math.cos(math.radians(float(s[2]))))
        lon = float(s[3]) + r * math.sin(a) / (EARTH_M_PER_DEG * coslat)
        points.append(f"{lat:.6f} {lon:.6f}")
    times = []
    for _ in range(n_times):
        secs = rng.randrange(5 * 3600, 23 * 3600)
        times.append(f"{service_date.isoformat()}T{secs // 3600:02d}:{secs // 60 % 60:02d}:"
                     f"{secs % 60:02d}")
    stop_ids = [q(s[0]) for s in servable]
    rng.shuffle(stop_ids)
    trip_ids = [q(t) for t in (rng.sample(trips, n_trips) if len(trips) > n_trips else trips)]
    queries = [q(t) for t in search_terms([s[1] for s in servable], rng, n_queries)]
    if not queries:
        raise BenchError(f"{db}: no stop name gives a search term")
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, lines in (("stops.txt", stop_ids[:20000]), ("points.txt", points),
                        ("times.txt", times), ("queries.txt", queries), ("trips.txt", trip_ids)):
        (out_dir / name).write_text("\n".join(lines) + "\n")
    lats = [float(s[2]) for s in located]
    lons = [float(s[3]) for s in located]
    return {"service_date": service_date.isoformat(), "stops": len(servable),
            "trips": len(trips), "bbox": [min(lats), min(lons), max(lats), max(lons)],
            "inputs_dir": str(out_dir)}


def body_sizes(port, inputs_dir, script="departures", accept_encoding=None, samples=40, seed=7):
    """Body sizes, as sent, of responses to requests of the same shape as
    departures.lua or stop_departures.lua (the same draws for any
    accept_encoding, so sizes with and without a coding compare one to one)."""
    rng = random.Random(seed)
    lists = {name: [v for v in (inputs_dir / f"{name}.txt").read_text().split("\n") if v]
             for name in ("points", "times", "stops")}
    headers = {"Accept-Encoding": accept_encoding} if accept_encoding else {}
    sizes = []
    for _ in range(samples):
        if script == "stop_departures":
            path = (f"/v1/stops/{rng.choice(lists['stops'])}/departures?"
                    f"time={rng.choice(lists['times'])}&window=60&limit=50")
        else:
            lat, lon = rng.choice(lists["points"]).split()
            path = (f"/v1/departures?lat={lat}&lon={lon}&radius=500&time={rng.choice(lists['times'])}"
                    f"&window=60&limit=50")
        try:
            status, _, body = http_get(port, path, headers=headers)
        except (OSError, http.client.HTTPException):
            continue
        if status == 200:
            sizes.append(len(body))
    return sizes


def body_bytes(port, inputs_dir, script):
    """The bodies of `script`'s requests without and with URLSession's
    Accept-Encoding, on the same draws: medians and the coded share of all the bytes."""
    plain = body_sizes(port, inputs_dir, script)
    coded = body_sizes(port, inputs_dir, script, URLSESSION_ACCEPT_ENCODING)
    return {"plain": int(statistics.median(plain)) if plain else None,
            "coded": int(statistics.median(coded)) if coded else None,
            "share": sum(coded) / sum(plain) if plain and coded and len(plain) == len(coded) else None}


def typical_departures_bytes(port, inputs_dir):
    """Median body size of departures responses, for the nginx static file."""
    sizes = body_sizes(port, inputs_dir, "departures")
    return int(statistics.median(sizes)) if sizes else None


# ------------------------------------------------------------------ nginx

def nginx_config(prefix, port, workers):
    return f"""# Generated by bench/run_bench.py: the nginx baseline (static JSON, keep-alive).
worker_processes {workers};
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 10000000;
    default_type application/json;
    client_body_temp_path {prefix}/tmp;
    server {{
        listen 127.0.0.1:{port};
        root {prefix}/www;
        location / {{ }}
    }}
}}
"""


def static_json(size):
    """A valid JSON document of exactly `size` bytes (at least 32)."""
    size = max(size, 32)
    head, tail = '{"departures":[],"padding":"', '"}\n'
    return head + "x" * (size - len(head) - len(tail)) + tail


class Nginx(Server):
    def __init__(self, binary, work, port, workers, body_bytes):
        self.prefix = Path(tempfile.mkdtemp(prefix="transitd-nginx-"))
        os.chmod(self.prefix, 0o755)
        (self.prefix / "www").mkdir()
        (self.prefix / "tmp").mkdir()
        (self.prefix / "www" / "departures.json").write_text(static_json(body_bytes))
        os.chmod(self.prefix / "www", 0o755)
        os.chmod(self.prefix / "www" / "departures.json", 0o644)
        conf = self.prefix / "nginx.conf"
        conf.write_text(nginx_config(self.prefix, port, workers))
        super().__init__("nginx", [binary, "-p", str(self.prefix), "-c", str(conf), "-e",
                                   str(self.prefix / "error.log")],
                         port, "/departures.json", work / "nginx.log")

    def stop(self):
        super().stop()
        shutil.rmtree(self.prefix, ignore_errors=True)


# ------------------------------------------------------------------ query and CSV benchmarks

def parse_json_lines(text, bench_name):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and f'"bench"' in line:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if obj.get("bench") == bench_name:
                out.append(obj)
    return out


def bench_query(build, data_dir, queries=None, warmup=None):
    binary = require_binary(build / "bench" / "bench_query", "the query benchmark")
    cmd = [binary, str(data_dir)]
    if queries:
        cmd += ["--queries", str(queries)]
    if warmup is not None:
        cmd += ["--warmup", str(warmup)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       cwd=ROOT, timeout=600)
    sys.stdout.write(p.stdout)
    lines = parse_json_lines(p.stdout, "query")
    if p.returncode != 0 or not lines:
        raise BenchError(f"bench_query exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return lines[-1]


def bench_csv(build, feed, work):
    """The CSV reader on the feed's stop_times.txt: the C benchmark (bench_csv)
    and the Python csv module for reference (csv_python.py)."""
    work.mkdir(parents=True, exist_ok=True)
    target = work / "stop_times.txt"
    with zipfile.ZipFile(feed) as z:
        member = next((n for n in z.namelist() if Path(n).name == "stop_times.txt"), None)
        if member is None:
            raise BenchError(f"{feed} has no stop_times.txt")
        info = z.getinfo(member)
        if not target.exists() or target.stat().st_size != info.file_size:
            with z.open(member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    results = []
    runs = [([require_binary(build / "bench" / "bench_csv", "the CSV benchmark"), str(target)],
             "bench_csv")]
    py = BENCH_DIR / "csv_python.py"
    if py.exists():
        runs.append(([sys.executable, str(py), str(target)], "csv_python.py"))
    for cmd, label in runs:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=ROOT, timeout=600)
        lines = parse_json_lines(p.stdout, "csv")
        if p.returncode != 0 or not lines:
            raise BenchError(f"{label} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
        for obj in lines:
            obj.setdefault("program", label)
            results.append(obj)
    return {"file": str(target), "bytes": target.stat().st_size, "results": results}


# ------------------------------------------------------------------ HTTP benchmark

class HttpBench:
    """Starts transitd, hello_mhd and nginx, runs the wrk plan, summarises."""

    def __init__(self, build, data_dir, work, duration, reps, seed, with_transitd=True,
                 with_nginx=True, smoke=False):
        self.build, self.data_dir, self.work = build, data_dir, work
        self.duration, self.reps, self.seed, self.smoke = duration, reps, seed, smoke
        self.with_transitd, self.with_nginx = with_transitd, with_nginx
        self.cores = os.cpu_count() or 1
        self.runs = []
        self.servers = {}
        self.inputs = None
        self.static_bytes = None
        self.body_bytes = {}    # script -> body_bytes() (URLSESSION_SCRIPTS)

    def start(self):
        hello_bin = require_binary(self.build / "bench" / "hello_mhd", "the hello-world baseline")
        if self.with_transitd:
            transitd = require_binary(self.build / "transitd", "the server")
            port = free_port()
            self.servers["transitd"] = Server(
                "transitd", [transitd, "serve", "--data", str(self.data_dir), "--port",
                             str(port), "--bind", "127.0.0.1", "--threads", str(self.cores),
                             "--quiet"], port, "/healthz", self.work / "transitd.log").start()
            self.inputs = extract_inputs(self.data_dir, self.work / "inputs", seed=self.seed)
            log(f"inputs: {self.inputs['stops']} stops, {self.inputs['trips']} trips, "
                f"service date {self.inputs['service_date']}")
            tls_dir = self.work / "tls"
            p = subprocess.run([str(transitd), "cert", "new", "--host", "localhost", "--out", str(tls_dir),
                                "--force"], capture_output=True, text=True)
            if p.returncode != 0:
                raise BenchError(f"transitd cert new failed: {p.stderr.strip()}")
            tls_port = free_port()
            self.servers["transitd-tls"] = Server(
                "transitd (HTTPS)", [transitd, "serve", "--data", str(self.data_dir), "--port",
                                     str(tls_port), "--bind", "127.0.0.1", "--threads", str(self.cores),
                                     "--quiet", "--tls-cert", str(tls_dir / "localhost.crt"),
                                     "--tls-key", str(tls_dir / "localhost.key")],
                tls_port, "/healthz", self.work / "transitd-tls.log", scheme="https").start()
            for s in URLSESSION_SCRIPTS:
                self.body_bytes[s] = body_bytes(port, self.work / "inputs", s)
                log(f"{s} bodies (median): {self.body_bytes[s]['plain']} bytes, "
                    f"{self.body_bytes[s]['coded']} with {URLSESSION_ACCEPT_ENCODING!r}")
        port = free_port()
        self.servers["hello"] = Server(
            "hello_mhd", [hello_bin, "--port", str(port), "--threads", str(self.cores)], port,
            "/", self.work / "hello_mhd.log").start()
        nginx_bin = find_nginx() if self.with_nginx else None
        if nginx_bin:
            if self.with_transitd:
                self.static_bytes = typical_departures_bytes(self.servers["transitd"].port,
                                                             self.work / "inputs")
            if not self.static_bytes:
                self.static_bytes = 8192
            self.servers["nginx"] = Nginx(nginx_bin, self.work, free_port(), self.cores,
                                          self.static_bytes).start()
            log(f"nginx serves a static JSON file of {self.static_bytes} bytes")
        elif self.with_nginx:
            log("WARNING: no nginx; the nginx baseline is skipped")

    def stop(self):
        for s in self.servers.values():
            s.stop()

    def measure(self, target, script, conns, rep, variant="", headers=(), duration=None):
        server = self.servers[target]
        env = {}
        if target == "nginx":
            env["TRANSITD_BENCH_PATH"] = "/departures.json"
        duration = duration or self.duration
        with RssSampler(server.pid) as rss:
            r = run_wrk(script, server.url(), conns, duration,
                        inputs_dir=self.work / "inputs" if target.startswith("transitd") else None,
                        headers=headers, env_extra=env, seed=self.seed + rep)
        r.update({"target": target, "variant": variant, "rep": rep,
                  "server_max_rss_mb": rss.max_kb / 1024.0})
        server.max_rss_kb = max(server.max_rss_kb, rss.max_kb)
        flag = "" if r["ok"] else "  FLAGGED: " + "; ".join(r["problems"])
        lat = r.get("latency_us") or {}
        log(f"{target:8} {script + variant:22} c={conns:<3} rep {rep + 1}: "
            f"{r['req_per_s']:10.0f} req/s {r['mb_per_s']:8.2f} MB/s "
            f"p50 {fmt_us(lat.get('p50'))} p99 {fmt_us(lat.get('p99'))}{flag}")
        self.runs.append(r)
        return r

    def plan(self):
        """(target, script, conns, variant, headers, repeated) in run order."""
        repeated, single = [], []
        have_t = "transitd" in self.servers
        have_n = "nginx" in self.servers
        repeated.append(("hello", "baseline", MAIN_CONNECTIONS, "", ()))
        if have_n:
            repeated.append(("nginx", "baseline", MAIN_CONNECTIONS, "", ()))
        if have_t:
            for c in SWEEP_CONNECTIONS:
                repeated.append(("transitd", "mix", c, "", ()))
                if c == MAIN_CONNECTIONS and "transitd-tls" in self.servers:   # right after it
                    repeated.append(("transitd-tls", "mix", c, IPHONE_VARIANT,
                                     (f"Accept-Encoding: {URLSESSION_ACCEPT_ENCODING}",)))
            for s in ENDPOINT_SCRIPTS:
                repeated.append(("transitd", s, MAIN_CONNECTIONS, "", ()))
                if s in URLSESSION_SCRIPTS:   # back to back with the run without it
                    repeated.append(("transitd", s, MAIN_CONNECTIONS, URLSESSION_VARIANT,
                                     (f"Accept-Encoding: {URLSESSION_ACCEPT_ENCODING}",)))
        for c in SWEEP_CONNECTIONS:
            if c != MAIN_CONNECTIONS:
                single.append(("hello", "baseline", c, "", ()))
                if have_n:
                    single.append(("nginx", "baseline", c, "", ()))
        if have_t:
            for s in ("departures_large", "routes"):
                single.append(("transitd", s, MAIN_CONNECTIONS, "", ()))
                single.append(("transitd", s, MAIN_CONNECTIONS, " gzip",
                               ("Accept-Encoding: gzip",)))
        return repeated, single

    def run_all(self):
        repeated, single = self.plan()
        total = len(repeated) * self.reps + len(single)
        log(f"HTTP plan: {total} wrk runs of {self.duration} s "
            f"(about {total * (self.duration + 0.5) / 60:.1f} min)")
        for rep in range(self.reps):
            for target, script, conns, variant, headers in repeated:
                self.measure(target, script, conns, rep, variant, headers)
        for target, script, conns, variant, headers in single:
            self.measure(target, script, conns, 0, variant, headers)

    def run_smoke(self, duration):
        conns = 4
        self.measure("hello", "baseline", conns, 0, duration=duration)
        self.measure("transitd-tls", "mix", conns, 0, IPHONE_VARIANT,
                     (f"Accept-Encoding: {URLSESSION_ACCEPT_ENCODING}",), duration=duration)
        for s in ALL_SCRIPTS:
            headers = ("Accept-Encoding: gzip",) if s == "departures_large" else ()
            self.measure("transitd", s, conns, 0, " gzip" if headers else "", headers,
                         duration=duration)
            if s in URLSESSION_SCRIPTS:
                self.measure("transitd", s, conns, 0, URLSESSION_VARIANT,
                             (f"Accept-Encoding: {URLSESSION_ACCEPT_ENCODING}",), duration=duration)

    def summary(self):
        """One entry per (target, script, variant, conns): medians over the runs
        without problems; flagged runs are counted, never averaged in."""
        groups = {}
        for r in self.runs:
            key = (r["target"], r["script"], r["variant"], r["conns"])
            groups.setdefault(key, []).append(r)
        out = []
        for (target, script, variant, conns), runs in groups.items():
            ok = [r for r in runs if r["ok"]]
            entry = {"target": target, "script": script, "variant": variant, "conns": conns,
                     "runs": len(runs), "flagged": len(runs) - len(ok),
                     "problems": sorted({p for r in runs for p in r["problems"]})}
            if ok:
                entry.update({
                    "req_per_s": statistics.median(r["req_per_s"] for r in ok),
                    "mb_per_s": statistics.median(r["mb_per_s"] for r in ok),
                    "p50_us": statistics.median(r["latency_us"]["p50"] for r in ok),
                    "p99_us": statistics.median(r["latency_us"]["p99"] for r in ok),
                    "server_max_rss_mb": max(r["server_max_rss_mb"] for r in ok),
                })
            out.append(entry)
        return out


# ------------------------------------------------------------------ report

def fmt_us(v):
    if v is None:
        return "–"
    if v < 1000:
        return f"{v:.0f} µs" if v >= 10 else f"{v:.2f} µs"
    if v < 1_000_000:
        return f"{v / 1000:.2f} ms"
    return f"{v / 1e6:.2f} s"


def fmt_num(v, digits=0):
    return "–" if v is None else f"{v:,.{digits}f}"


def mark(ok):
    return "–" if ok is None else ("✓" if ok else "✗")


def http_rows(summary, body_bytes=None):
    """Table rows from HttpBench.summary(): baselines, the mix sweep, endpoints, throughput.
    A URLSession row is judged against the same script without the header
    (req/s ratio) and, with body_bytes, by its body's share of the uncompressed one."""
    hello = {e["conns"]: e.get("req_per_s") for e in summary
             if e["target"] == "hello"}
    plain = {(e["script"], e["conns"]): e.get("req_per_s") for e in summary
             if e["target"] == "transitd" and not e["variant"]}
    label = {"baseline": "", "mix": "mix (60/25/10/5)", "nearby_stops": "GET /v1/stops/nearby",
             "stop_departures": "GET /v1/stops/{id}/departures",
             "departures": "GET /v1/departures", "stop": "GET /v1/stops/{id}",
             "search": "GET /v1/stops?q=", "trip": "GET /v1/trips/{id}",
             "departures_large": "departures limit=500 r=1000", "routes": "GET /v1/routes"}
    order = {"hello": 0, "nginx": 1}
    script_order = ["baseline", "mix"] + ENDPOINT_SCRIPTS + ["departures_large", "routes"]
    rows = []
    for e in sorted(summary, key=lambda e: (order.get(e["target"], 2),
                                            script_order.index(e["script"])
                                            if e["script"] in script_order else 99,
                                            e["variant"], e["conns"])):
        if e["target"] == "hello":
            name = "baseline: hello_mhd"
        elif e["target"] == "nginx":
            name = "baseline: nginx static JSON"
        else:
            name = label.get(e["script"], e["script"]) + e["variant"]
        rps = e.get("req_per_s")
        base = hello.get(e["conns"])
        ratio = rps / base if rps and base and e["target"] != "hello" else None
        target, ok = "", None
        if e["target"] == "transitd" and not e["variant"]:
            if e["script"] in ("departures", "stop_departures"):
                target = f"≥{TARGET_DEPARTURES_RATIO:.0%} of hello"
                ok = ratio is not None and ratio >= TARGET_DEPARTURES_RATIO
            elif e["script"] == "stop":
                target = f"≥{TARGET_STOP_RATIO:.0%} of hello"
                ok = ratio is not None and ratio >= TARGET_STOP_RATIO
        if e["target"] == "transitd" and e["variant"] == URLSESSION_VARIANT:
            base_rps = plain.get((e["script"], e["conns"]))
            coded = rps / base_rps if rps and base_rps else None
            sizes = (body_bytes or {}).get(e["script"]) or {}
            share = sizes.get("share")
            bodies = f"bodies {sizes['coded']:,}/{sizes['plain']:,} B (median)" if share else "bodies –"
            if share and e["script"] in BODY_TARGET_SCRIPTS:
                bodies += f", {share:.1%} of the bytes (≤{TARGET_CODED_BODY:.0%})"
            elif share:
                bodies += f", {share:.1%} of the bytes"
            target = (f"≥{TARGET_CODED_RATIO:.2f} of plain: "
                      + (f"{coded:.2f}" if coded is not None else "–") + "; " + bodies)
            ok = coded is not None and coded >= TARGET_CODED_RATIO and \
                (share is None or e["script"] not in BODY_TARGET_SCRIPTS or share <= TARGET_CODED_BODY)
        if e["target"] == "transitd-tls" and e["variant"] == IPHONE_VARIANT:
            base_rps = plain.get((e["script"], e["conns"]))
            share = rps / base_rps if rps and base_rps else None
            target = f"≥{TARGET_IPHONE_RATIO:.2f} of the plain-HTTP mix: " + (
                f"{share:.2f}" if share is not None else "–")
            ok = share is not None and share >= TARGET_IPHONE_RATIO
        if e.get("flagged"):
            target = (target + " " if target else "") + f"{e['flagged']}/{e['runs']} runs flagged"
            ok = False if rps is None or ok is not None else ok
        rss = e.get("server_max_rss_mb") if e["target"].startswith("transitd") else None
        rows.append({"name": name, "conns": str(e["conns"]), "req_s": fmt_num(rps),
                     "mb_s": fmt_num(e.get("mb_per_s"), 1), "p50": fmt_us(e.get("p50_us")),
                     "p99": fmt_us(e.get("p99_us")),
                     "ratio": f"{ratio:.2f}" if ratio is not None else "–",
                     "rss": fmt_num(rss, 1), "target": target, "ok": ok})
    return rows


def rss_row(max_rss_mb):
    return {"name": "transitd RSS, max over all HTTP runs", "conns": "", "req_s": "", "mb_s": "",
            "p50": "", "p99": "", "ratio": "", "rss": fmt_num(max_rss_mb, 1),
            "target": f"≤{TARGET_RSS_MB:.0f} MB", "ok": max_rss_mb <= TARGET_RSS_MB}


def import_rows(imp, feed_label):
    wall, rss = imp["median_wall_s"], imp["median_max_rss_mb"]
    brooklyn = Path(imp["feed"]).name == SHARED_FEED.name
    rows = [{"name": f"import {Path(imp['feed']).name} (median of {len(imp['runs'])})",
             "conns": "", "req_s": "", "mb_s": "", "p50": f"{wall:.2f} s", "p99": "",
             "ratio": "", "rss": fmt_num(rss, 1),
             "target": f"≤{TARGET_IMPORT_S} s, ≤{TARGET_IMPORT_RSS_MB:.0f} MB"
             + ("" if brooklyn else " (Brooklyn target)"),
             "ok": wall <= TARGET_IMPORT_S and rss <= TARGET_IMPORT_RSS_MB}]
    frac = imp.get("stores_fraction")
    sizes = imp["store_bytes"]
    stores = (sizes.get("timetable.bin") or 0) + (sizes.get("schedule.sqlite") or 0)
    rows.append({"name": f"timetable.bin + schedule.sqlite = {stores / 1e6:.1f} MB "
                         f"({frac:.1%} of {imp['csv_bytes_excluding_shapes'] / 1e6:.0f} MB CSV)"
                 if frac is not None else "stores",
                 "conns": "", "req_s": "", "mb_s": "", "p50": "", "p99": "", "ratio": "",
                 "rss": "", "target": f"≤{TARGET_STORES_FRACTION:.0%} of CSV (no shapes)",
                 "ok": frac is not None and frac <= TARGET_STORES_FRACTION})
    return rows


def csv_rows(csv):
    rows = []
    for r in csv["results"]:
        mbs = r.get("mb_per_s") or r.get("mb_s") or r.get("MB_per_s")
        if mbs is None and r.get("bytes") and r.get("seconds"):
            mbs = r["bytes"] / r["seconds"] / 1e6
        name = r.get("reader") or r.get("impl") or r.get("name") or r.get("program")
        is_ours = r.get("program") == "bench_csv" and (
            name in ("bench_csv", "transit", "transitd", "csv.c") or "transit" in str(name))
        rows.append({"name": f"CSV stop_times.txt: {name}", "conns": "", "req_s": "",
                     "mb_s": fmt_num(mbs, 0), "p50": "", "p99": "", "ratio": "", "rss": "",
                     "target": f"≥{TARGET_CSV_MB_S:.0f} MB/s" if is_ours else "reference",
                     "ok": (mbs is not None and mbs >= TARGET_CSV_MB_S) if is_ours else None})
    return rows


def query_rows(q):
    rows = []
    for kind, (t50, t99) in TARGET_QUERY_US.items():
        r = q.get(kind) or {}
        p50, p99 = r.get("p50_us"), r.get("p99_us")
        target = f"p50 ≤{t50:g} µs" + (f", p99 ≤{t99:g} µs" if t99 else "")
        ok = p50 is not None and p50 <= t50 and (t99 is None or (p99 is not None and p99 <= t99))
        qps = 1e6 / r["mean_us"] if r.get("mean_us") else None
        rows.append({"name": f"query {kind} (in-process, n={r.get('queries', '?')})",
                     "conns": "1", "req_s": fmt_num(qps), "mb_s": "", "p50": fmt_us(p50),
                     "p99": fmt_us(p99), "ratio": "", "rss": "", "target": target, "ok": ok})
    return rows


COLUMNS = [("name", "benchmark"), ("conns", "conns"), ("req_s", "req/s"), ("mb_s", "MB/s"),
           ("p50", "p50"), ("p99", "p99"), ("ratio", "vs hello"), ("rss", "RSS MB"),
           ("target", "target"), ("ok", "ok")]


def cell(row, key):
    return mark(row["ok"]) if key == "ok" else str(row.get(key, ""))


def text_table(rows):
    widths = [max(len(title), *(len(cell(r, k)) for r in rows)) for k, title in COLUMNS]
    right = {"conns", "req_s", "mb_s", "p50", "p99", "ratio", "rss"}

    def line(values, keys):
        return "  ".join(v.rjust(w) if k in right else v.ljust(w)
                         for v, w, k in zip(values, widths, keys)).rstrip()
    keys = [k for k, _ in COLUMNS]
    out = [line([t for _, t in COLUMNS], keys), "  ".join("-" * w for w in widths)]
    out += [line([cell(r, k) for k in keys], keys) for r in rows]
    return "\n".join(out)


def markdown_table(rows):
    right = {"conns", "req_s", "mb_s", "p50", "p99", "ratio", "rss"}
    out = ["| " + " | ".join(t for _, t in COLUMNS) + " |",
           "|" + "|".join("---:" if k in right else "---" for k, _ in COLUMNS) + "|"]
    for r in rows:
        out.append("| " + " | ".join(cell(r, k).replace("|", "\\|") for k, _ in COLUMNS) + " |")
    return "\n".join(out)


def chart(summary, png, title):
    """A clustered bar chart of req/s per endpoint and connection count, the
    baselines first. Returns the PNG path, or None without gnuplot."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        return None
    names, table = [], {}
    for e in summary:
        if e["variant"]:
            continue
        name = {"hello": "hello_mhd", "nginx": "nginx"}.get(e["target"], e["script"])
        if name not in table:
            names.append(name)
            table[name] = {}
        table[name][e["conns"]] = e.get("req_per_s")
    order = ["hello_mhd", "nginx", "mix"] + ENDPOINT_SCRIPTS
    names.sort(key=lambda n: order.index(n) if n in order else 99)
    dat = png.with_suffix(".dat")
    with open(dat, "w") as f:
        f.write("# name " + " ".join(f"c{c}" for c in SWEEP_CONNECTIONS) + "\n")
        for n in names:
            vals = [table[n].get(c) for c in SWEEP_CONNECTIONS]
            f.write(n + " " + " ".join("NaN" if v is None else f"{v:.0f}" for v in vals) + "\n")
    cols = ", ".join(
        f"'{dat}' using {i + 2}{':xtic(1)' if i == 0 else ''} title 'c={c}'"
        for i, c in enumerate(SWEEP_CONNECTIONS))
    script = f"""
set terminal pngcairo size 1100,560 noenhanced font "sans,10"
set output '{png}'
set title '{title}'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set ylabel 'requests/s'
set yrange [0:*]
set format y '%.0f'
set grid ytics
set key top right
set xtics rotate by -25
plot {cols}
"""
    p = subprocess.run([gnuplot], input=script, text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    dat.unlink()
    if p.returncode != 0 or not png.exists():
        log(f"WARNING: gnuplot failed: {p.stderr.strip()[-500:]}")
        return None
    return png


def update_readme(md_block):
    text = read_text(README)
    if README_BEGIN not in text or README_END not in text:
        raise BenchError(f"{README} has no {README_BEGIN} ... {README_END} section")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    README.write_text(head + README_BEGIN + "\n" + md_block.strip() + "\n" + README_END + tail)
    log(f"updated {README.relative_to(ROOT)}")


def results_markdown(record, rows, png_name):
    m = record["machine"]
    lines = [f"Measured {record['started'][:16].replace('T', ' ')} on {describe_machine(m)}.",
             f"Feed: `{Path(record['feed']['path']).name}` ({record['feed']['source']}); "
             f"wrk -t{WRK_THREADS} (-t1 at c=1), {record['settings']['duration_s']} s per run, "
             f"medians of {record['settings']['reps']} runs where repeated; "
             f"whole run {record['elapsed_s'] / 60:.1f} min.", "",
             markdown_table(rows), "", NODE_GTFS_REFERENCE + "."]
    if png_name:
        lines += ["", f"![req/s per endpoint and connection count](results/{png_name})"]
    return "\n".join(lines)


# ------------------------------------------------------------------ modes

def run_smoke(args, build):
    """make bench-smoke: every script briefly against the demo feed plus the
    baseline, and bench_query briefly. Fails on any script error or non-2xx."""
    started = time.monotonic()
    ensure_tools(False, False, False)
    transitd = require_binary(build / "transitd", "the server")
    work = build / "bench-smoke"
    feed = generate_feed("demo", work / "demo.zip")
    data_dir = import_for_serving(transitd, feed, work / "data")
    failures = []
    hb = HttpBench(build, data_dir, work, duration=2, reps=1, seed=args.seed, with_nginx=False,
                   smoke=True)
    try:
        hb.start()
        hb.run_smoke(args.smoke_duration)
    finally:
        hb.stop()
    for r in hb.runs:
        if not r["ok"]:
            failures.append(f"{r['target']} {r['script']}: " + "; ".join(r["problems"]))
    try:
        q = bench_query(build, data_dir, queries=300, warmup=30)
        for kind in TARGET_QUERY_US:
            if not (q.get(kind) or {}).get("queries"):
                failures.append(f"bench_query: no {kind} measurements")
    except BenchError as e:
        failures.append(str(e))
    rows = http_rows(hb.summary(), hb.body_bytes)
    print(text_table(rows))
    alerts = subprocess.run([sys.executable, str(BENCH_DIR / "alerts_bench.py"), "--build", str(build),
                             "--smoke", "--seed", str(args.seed)], cwd=ROOT)
    if alerts.returncode != 0:
        failures.append(f"alerts_bench.py --smoke exited {alerts.returncode}")
    # (with ADDED trips, so their merged rows are served under load too)
    realtime = subprocess.run([sys.executable, str(BENCH_DIR / "realtime_bench.py"), "--build",
                               str(build), "--smoke", "--added", "50", "--seed", str(args.seed)], cwd=ROOT)
    if realtime.returncode != 0:
        failures.append(f"realtime_bench.py --smoke exited {realtime.returncode}")
    compression = subprocess.run([sys.executable, str(BENCH_DIR / "compression_bench.py"), "--build",
                                  str(build), "--smoke", "--seed", str(args.seed)], cwd=ROOT)
    if compression.returncode != 0:
        failures.append(f"compression_bench.py --smoke exited {compression.returncode}")
    tls = subprocess.run([sys.executable, str(BENCH_DIR / "tls_bench.py"), "--build", str(build),
                          "--smoke", "--seed", str(args.seed)], cwd=ROOT)
    if tls.returncode != 0:
        failures.append(f"tls_bench.py --smoke exited {tls.returncode}")
    elapsed = time.monotonic() - started
    if failures:
        for f in failures:
            log("FAILED: " + f)
        log(f"smoke FAILED in {elapsed:.1f} s")
        return 1
    log(f"smoke OK in {elapsed:.1f} s: {len(hb.runs)} wrk runs, no errors, no non-2xx")
    return 0


def run_measurements(args, build):
    started_wall = datetime.datetime.now().astimezone()
    started = time.monotonic()
    modes = {m for m in ("all", "import", "query", "csv", "http") if getattr(args, m)}
    everything = "all" in modes
    want = lambda m: everything or m in modes
    serve = want("http") and not args.baselines_only
    ensure_tools(want("http"), everything or want("http"), not args.no_install)
    machine = machine_info()
    log("machine: " + describe_machine(machine))
    work = build / "bench-run"
    work.mkdir(parents=True, exist_ok=True)
    if want("import") or want("csv") or want("query") or serve:
        feed, source = choose_feed(args, build)
        log(f"feed: {feed} ({source})")
    else:
        feed, source = Path("none"), "none (baselines only)"
    record = {"started": started_wall.isoformat(timespec="seconds"), "machine": machine,
              "feed": {"path": str(feed), "source": source},
              "settings": {"duration_s": args.duration, "reps": args.reps,
                           "wrk_threads": WRK_THREADS, "seed": args.seed,
                           "connections": SWEEP_CONNECTIONS},
              "node_gtfs_reference": {"import_s": 35, "db_mb": 542, "req_per_s": 129}}
    rows, broken = [], []
    data_dir = None
    transitd = None
    if want("import") or want("query") or serve:
        transitd = require_binary(build / "transitd", "the server")
    if want("import"):
        imp = bench_import(transitd, feed, work)
        record["import"] = imp
        rows += import_rows(imp, source)
        data_dir = Path(imp["data_dir"])
    if want("csv"):
        try:
            csv = bench_csv(build, feed, work / "csv")
            record["csv"] = csv
            rows += csv_rows(csv)
        except BenchError as e:
            broken.append(f"CSV: {e}")
    if (want("query") or serve) and data_dir is None:
        data_dir = import_for_serving(transitd, feed, work / "data")
    if want("query"):
        try:
            q = bench_query(build, data_dir)
            record["query"] = q
            rows += query_rows(q)
        except BenchError as e:
            broken.append(f"query: {e}")
    http_summary = None
    if want("http"):
        hb = HttpBench(build, data_dir, work, args.duration, args.reps, args.seed,
                       with_transitd=not args.baselines_only)
        try:
            hb.start()
            hb.run_all()
        finally:
            hb.stop()
        http_summary = hb.summary()
        t = hb.servers.get("transitd")
        record["http"] = {"runs": hb.runs, "summary": http_summary, "inputs": hb.inputs,
                          "nginx_static_bytes": hb.static_bytes,
                          "transitd_max_rss_mb": t.max_rss_kb / 1024.0 if t else None}
        record["http"]["body_bytes"] = hb.body_bytes
        rows = http_rows(http_summary, hb.body_bytes) + ([rss_row(t.max_rss_kb / 1024.0)] if t else []) \
            + rows
        broken += [f"HTTP {e['target']} {e['script']}{e['variant']} c={e['conns']}: "
                   f"{e['flagged']}/{e['runs']} runs flagged: {'; '.join(e['problems'])}"
                   for e in http_summary if e["flagged"]]
    record["elapsed_s"] = time.monotonic() - started
    record["rows"] = rows
    record["broken"] = broken
    record["all_targets_met"] = all(r["ok"] is not False for r in rows)
    print()
    print(text_table(rows))
    print(NODE_GTFS_REFERENCE)
    print(f"machine: {describe_machine(machine)}; elapsed {record['elapsed_s']:.0f} s")
    stem = f"{started_wall.date().isoformat()}-{re.sub(r'[^A-Za-z0-9_.-]', '_', machine['host'])}"
    png_name = None
    out = Path(args.out) if args.out else (RESULTS_DIR / f"{stem}.json" if everything else None)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        if http_summary:
            png = chart(http_summary, out.with_suffix(".png"),
                        f"transitd req/s by endpoint and connections — {machine['host']}, "
                        f"{machine['cores']} cores, {started_wall.date()}")
            png_name = png.name if png else None
            record["chart"] = str(png) if png else None
        out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        log(f"wrote {out}" + (f" and {png_name}" if png_name else ""))
    if args.update_readme:
        update_readme(results_markdown(record, rows, png_name))
    for b in broken:
        log("BROKEN: " + b)
    return 1 if broken else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    mode = ap.add_mutually_exclusive_group(required=True)
    for m in ("all", "smoke", "import", "query", "csv", "http"):
        mode.add_argument(f"--{m}", action="store_true")
    ap.add_argument("--feed", help="GTFS zip for import/query/HTTP (default: Brooklyn, "
                                   "else the generated berlin feed)")
    ap.add_argument("--duration", type=int, default=10, help="seconds per wrk run (default 10)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of the main runs (3)")
    ap.add_argument("--smoke-duration", type=int, default=2, help="seconds per smoke run (2)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", help="write the JSON record here (default for --all: "
                                  "bench/results/<date>-<host>.json)")
    ap.add_argument("--update-readme", action="store_true",
                    help="replace the latest-results section of bench/README.md")
    ap.add_argument("--no-install", action="store_true",
                    help="never apt-get nginx/gnuplot (skip what is missing)")
    ap.add_argument("--baselines-only", action="store_true",
                    help="--http without transitd: hello_mhd and nginx only")
    args = ap.parse_args(argv)
    build = (ROOT / args.build).resolve()
    try:
        if args.smoke:
            return run_smoke(args, build)
        return run_measurements(args, build)
    except BenchError as e:
        log(f"ERROR: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
