"""`make run` needs only what running needs: `.ci/deps run` asks for the
compiler, the linked libraries and python3, never for the test tools
(wrk, nginx, Chromium, cmocka, pytest...), which `.ci/deps test` (what `make
test` runs) adds. Checked on a PATH holding only the run-time programs and
no package manager, so nothing is installed: the script can only report.
"""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import ROOT

RUN_TOOLS = ["pkg-config", "clang", "python3", "gnustep-config", "protoc-c", "uname", "id"]


@pytest.fixture()
def run_only_path(tmp_path):
    for tool in RUN_TOOLS:
        found = shutil.which(tool)
        if not found:
            pytest.skip(f"{tool} is not installed here")
        (tmp_path / tool).symlink_to(found)
    return str(tmp_path)


def deps(mode, path):
    env = dict(os.environ, PATH=path)
    return subprocess.run(["/bin/bash", str(ROOT / ".ci" / "deps"), mode], capture_output=True,
                          text=True, timeout=60, env=env)


def test_run_needs_no_test_tools(run_only_path):
    if not pathlib.Path("/usr/share/zoneinfo/America/Montreal").exists():
        pytest.skip("tzdata is missing here")
    p = deps("run", run_only_path)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""


def test_test_adds_the_test_tools(run_only_path):
    p = deps("test", run_only_path)
    assert p.returncode == 1                 # missing, and no apt-get or brew to install them
    missing = re.search(r"deps \(test\): missing: (.*)", p.stderr).group(1).split()
    for tool in ["wrk", "zip", "chromium"]:
        assert tool in missing, p.stderr
    assert "no apt-get or brew here" in p.stderr
    for package in ["libcmocka-dev", "wrk", "nginx", "chromium", "python3-pytest", "python3-yaml"]:
        assert package in p.stderr, package


def test_bad_mode_is_a_usage_error():
    p = subprocess.run(["/bin/bash", str(ROOT / ".ci" / "deps"), "everything"],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "usage" in p.stderr


def test_make_run_uses_the_run_list():
    makefile = (ROOT / "Makefile").read_text()
    run_rule = re.search(r"^run: (.*)$", makefile, re.M).group(1).split()
    assert "deps-run" in run_rule and "deps" not in run_rule
    assert re.search(r"^deps-run:\n\t@bash \.ci/deps run$", makefile, re.M)
    assert re.search(r"^test: deps$", makefile, re.M)
