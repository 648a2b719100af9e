"""docs/openapi.json against the running server, by Schemathesis: every
operation, every check (`--checks all`), the coverage, fuzzing and stateful
phases, a fixed seed and up to 100 examples per operation
(tests/api/schemathesis.toml). The writes carry a bearer token made by the
same fixture as test_alerts_api.py, so the alert operations are tested past
their 401.

Why it exists: the spec is the contract clients are generated from; a
member, status, format or pattern that it and the server disagree on fails
here. A failure prints Schemathesis's report, with a curl line to reproduce.

Runs against the demo feed (bench/gtfs_gen.py --scale demo, seed 1), so it
needs nothing from ../shared; Schemathesis comes from the contract venv that
`.ci/deps test` makes (skipped without it, failed under CI=true).
"""
import os
import shutil
import subprocess
import time

from conftest import ROOT, contract_tool_or_skip
from http_server import Server, demo_feed, import_feed, TMP
from test_alerts_api import make_token

CONFIG = ROOT / "tests" / "api" / "schemathesis.toml"
HOOKS = ROOT / "tests" / "api" / "schemathesis_hooks.py"
SPEC = ROOT / "docs" / "openapi.json"


def test_every_operation_keeps_the_contract():
    schemathesis = contract_tool_or_skip("schemathesis")
    base = TMP / "contract"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    data = base / "data"
    import_feed(demo_feed(1), data)
    tokens = base / "tokens"
    token = make_token(tokens)
    with Server(data, "--tokens", str(tokens)) as server:
        t0 = time.monotonic()
        p = subprocess.run(
            [schemathesis, "--config-file", str(CONFIG), "run", str(SPEC),
             "--url", server.url(""), "--checks", "all", "--no-color",
             "--phases", "examples,coverage,fuzzing,stateful",
             "--header", f"Authorization: Bearer {token}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
            timeout=900, cwd=base, env={**os.environ, "SCHEMATHESIS_HOOKS": str(HOOKS)})
        seconds = time.monotonic() - t0
    report = p.stdout
    print(f"schemathesis: {seconds:.1f} s\n" + report[-1500:])
    assert p.returncode == 0, report[-20000:]
    assert "Seed: 27" in report
    assert "Tested: " in report
    selected = report.split("Selected: ", 1)[1].split()[0]        # "29/29"
    tested, total = selected.split("/")
    assert tested == total, f"Schemathesis left operations out: {selected}"
    for phase in ("Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in report, f"the {phase} phase did not pass or did not run"
