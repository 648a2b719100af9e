#!/usr/bin/env python3
"""Runs the whole suite for `make test`: every cmocka unit-test binary, the
pytest black-box tests, and the benchmark smoke run. Prints each runner's
output, then one closing line `N passed, N failed, N skipped`, and exits
non-zero on any failure."""
import argparse
import os
import pathlib
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_unit(build, env):
    passed = failed = skipped = 0
    bins = sorted((build / "tests").glob("test_*"))
    for b in bins:
        if not os.access(b, os.X_OK) or b.suffix:
            continue
        print(f"== unit: {b.name}", flush=True)
        p = subprocess.run([str(b)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors="replace")
        out = p.stdout
        sys.stdout.write(out)
        m_run = re.search(r"\[=+\] (\d+) test\(s\) run", out)
        m_pass = re.search(r"\[  PASSED  \] (\d+) test", out)
        m_fail = re.search(r"\[  FAILED  \] (\d+) test", out)
        m_skip = re.search(r"\[  SKIPPED \] (\d+) test", out)
        np = int(m_pass.group(1)) if m_pass else 0
        nf = int(m_fail.group(1)) if m_fail else 0
        ns = int(m_skip.group(1)) if m_skip else 0
        if p.returncode != 0 and nf == 0:
            # crashed, sanitizer report, or a leak at exit: count it as a failure
            print(f"!! {b.name} exited {p.returncode}", flush=True)
            nf = max(1, (int(m_run.group(1)) - np - ns) if m_run else 1)
        passed, failed, skipped = passed + np, failed + nf, skipped + ns
    return passed, failed, skipped


def run_pytest(build, env, python):
    tests = ROOT / "tests"
    xml = build / "pytest-results.xml"
    if xml.exists():
        xml.unlink()
    cmd = [python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
           f"--junitxml={xml}", str(tests / "api")]
    print("== pytest: " + " ".join(cmd[1:]), flush=True)
    p = subprocess.run(cmd, cwd=ROOT, env=env)
    if not xml.exists():
        return 0, 1, 0
    root = ET.parse(xml).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    tests_n = sum(int(s.get("tests", 0)) for s in suites)
    fail_n = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skip_n = sum(int(s.get("skipped", 0)) for s in suites)
    if p.returncode not in (0, 5) and fail_n == 0:
        fail_n = 1
    return tests_n - fail_n - skip_n, fail_n, skip_n


def run_bench_smoke(build, env, python):
    script = ROOT / "bench" / "run_bench.py"
    if not script.exists():
        return 0, 0, 0
    print("== bench smoke", flush=True)
    p = subprocess.run([python, str(script), "--build", str(build), "--smoke"], cwd=ROOT, env=env)
    return (1, 0, 0) if p.returncode == 0 else (0, 1, 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", choices=["unit", "api", "bench"])
    a = ap.parse_args()
    build = (ROOT / a.build).resolve()
    env = dict(os.environ)
    env["TRANSITD_BUILD"] = str(build)
    env["TRANSITD_TEST_TMP"] = str(build / "tmp")
    (build / "tmp").mkdir(parents=True, exist_ok=True)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    env.setdefault("LSAN_OPTIONS", f"suppressions={ROOT / 'tests' / 'lsan.supp'}:print_suppressions=0")
    python = sys.executable
    totals = [0, 0, 0]
    parts = []
    if a.only in (None, "unit"):
        parts.append(("unit", run_unit(build, env)))
    if a.only in (None, "api"):
        parts.append(("api", run_pytest(build, env, python)))
    if a.only in (None, "bench"):
        parts.append(("bench-smoke", run_bench_smoke(build, env, python)))
    for name, (p, f, s) in parts:
        print(f"   {name}: {p} passed, {f} failed, {s} skipped")
        totals = [totals[0] + p, totals[1] + f, totals[2] + s]
    print(f"{totals[0]} passed, {totals[1]} failed, {totals[2]} skipped")
    sys.exit(1 if totals[1] else 0)


if __name__ == "__main__":
    main()
