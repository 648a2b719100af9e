"""Shared fixtures for the black-box tests: where the build and the real feeds
are, and the rule for a missing ../shared (skip visibly on a fresh clone; fail
when CI=true)."""
import os
import pathlib
import shutil
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("TRANSITD_BUILD", ROOT / "build"))
SHARED_GTFS = ROOT.parent / "shared" / "gtfs"


def transitd_bin():
    return str(BUILD / "transitd")


def shared_feed(name):
    """Path of ../shared/gtfs/<name>, or skip (fail under CI=true)."""
    p = SHARED_GTFS / name
    if p.exists():
        return str(p)
    if os.environ.get("CI") == "true":
        pytest.fail(f"shared feed {p} is missing and CI=true")
    pytest.skip(f"{p} not found (../shared/gtfs is absent)")


def engine_or_skip():
    """Path of build/transitd, or skip (fail under CI=true) when it is not built."""
    path = transitd_bin()
    if not os.access(path, os.X_OK):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{path} is not built and CI=true")
        pytest.skip(f"{path} is not built")
    return path


def tool_or_skip(*names):
    """Path of the first of these programs on PATH (or an absolute path that
    exists), or skip (fail under CI=true, where .ci/deps installs them)."""
    for name in names:
        path = name if os.path.isabs(name) and os.access(name, os.X_OK) else shutil.which(name)
        if path:
            return path
    if os.environ.get("CI") == "true":
        pytest.fail(f"none of {', '.join(names)} is installed and CI=true (see .ci/deps test)")
    pytest.skip(f"{names[0]} is not installed (`.ci/deps test` installs it)")


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


@pytest.fixture(scope="session")
def transitd():
    p = transitd_bin()
    assert os.access(p, os.X_OK), f"{p} is not built"
    return p


# The contract tools (schemathesis, openapi-python-client) live in a venv of
# their own that `.ci/deps test` makes: their pins would fight Debian's pytest.
CONTRACT_VENV = pathlib.Path(os.environ.get("TRANSITD_CONTRACT_VENV",
                                            pathlib.Path.home() / ".cache" / "transitd" / "contract-venv"))


def contract_tool_or_skip(name):
    """Path of a program in the contract venv, or skip (fail under CI=true)."""
    return tool_or_skip(str(CONTRACT_VENV / "bin" / name))
