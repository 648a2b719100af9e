"""How the subcommands read their options (getopt_long through cli.h's
cli_opts): for import, health, token and serve, `--opt=value` and
`--opt value` do the same thing, an unknown option (also an abbreviated one,
or a value given to a flag) exits 2 naming it as typed, an option whose value
is missing exits 2, and positional arguments may come before the options.
Numeric values keep their ranges and messages in both spellings."""
import hashlib
import os
import shutil
import subprocess

import pytest
import requests

from conftest import transitd_bin
from http_server import Server, TMP, demo_feed, import_feed


def run(*args, stdin=None, env=None):
    return subprocess.run([transitd_bin(), *map(str, args)], capture_output=True, text=True,
                          input=stdin, timeout=60, env=dict(os.environ, **(env or {})))


def fresh(name):
    d = TMP / name
    shutil.rmtree(d, ignore_errors=True)
    return d


@pytest.fixture(scope="module")
def data():
    d = fresh("cli-options-data")
    import_feed(demo_feed(1), d)
    return d


def serve(*args):
    """A Server started with exactly these options (no defaults added)."""
    s = Server(TMP)
    s.args = [transitd_bin(), "serve", *map(str, args)]
    return s


def assert_usage_error(p, command, message):
    assert p.returncode == 2, p.stderr
    assert f"transitd {command}: {message}" in p.stderr
    assert f"usage: transitd {command}" in p.stderr


# ---------------------------------------------------------------- import

@pytest.mark.parametrize("order", [
    ["FEED", "--data=DATA", "--max-drop=5", "--max-shrink=50", "--json"],
    ["FEED", "--data", "DATA", "--max-drop", "5", "--max-shrink", "50", "--json"],
    ["--json", "--data", "DATA", "FEED"],
    ["--data=DATA", "--json", "--", "FEED"],
])
def test_import_reads_both_spellings_in_any_order(order):
    data = fresh("cli-options-import")
    feed = demo_feed(1)
    args = [feed if a == "FEED" else a.replace("DATA", str(data)) for a in order]
    p = run("import", *args)
    assert p.returncode == 0, p.stderr
    assert '"activated":true' in p.stdout.replace(" ", "")
    assert (data / "current").is_symlink()


def test_import_short_quiet_and_help():
    data = fresh("cli-options-import-q")
    p = run("import", "-q", demo_feed(1), "--data", data)
    assert p.returncode == 0 and p.stdout == "" and p.stderr == ""
    h = run("import", demo_feed(1), "-h")
    assert h.returncode == 0 and h.stdout.startswith("usage: transitd import")


@pytest.mark.parametrize("args, message", [
    (["feed.zip", "--bogus"], "unknown option --bogus"),
    (["feed.zip", "--bogus=1"], "unknown option --bogus=1"),
    (["feed.zip", "--dat", "d"], "unknown option --dat"),        # no abbreviations
    (["feed.zip", "--json=1"], "unknown option --json=1"),        # a flag takes no value
    (["feed.zip", "-x"], "unknown option -x"),
    (["feed.zip", "--data"], "--data needs a directory"),
    (["feed.zip", "--max-drop"], "--max-drop needs a percentage from 0 to 100"),
    (["feed.zip", "--max-drop=abc"], "--max-drop=abc needs a percentage from 0 to 100"),
    (["feed.zip", "--max-shrink", "101"], "--max-shrink needs a percentage from 0 to 100"),
    (["--data", "d", "a.zip", "--feed-id", "x"],
     "--feed-id names a feed of a merge; one FEED is imported as it is"),
    (["--data", "d", "--feed-id", "x", "a.zip"], "--feed-id NAME names the FEED before it"),
])
def test_import_usage_errors(args, message):
    assert_usage_error(run("import", *args), "import", message)


def test_import_empty_data_value():
    assert_usage_error(run("import", "feed.zip", "--data="), "import", "--data must not be empty")


# ---------------------------------------------------------------- health

def test_health_reads_both_spellings(data):
    with Server(data) as s:
        for args in (["--url=" + s.url("/readyz"), "--timeout=5"],
                     ["--url", s.url("/readyz"), "--timeout", "5"]):
            p = run("health", *args)
            assert p.returncode == 0, (args, p.stderr)
            assert p.stdout == f"{s.url('/readyz')}: 200 ready\n"


@pytest.mark.parametrize("args, message", [
    (["--bogus"], "unknown option '--bogus'"),
    (["--ur", "http://127.0.0.1/"], "unknown option '--ur'"),
    (["-x"], "unknown option '-x'"),
    (["stray", "--timeout", "5"], "unknown option 'stray'"),   # the first mistake, in order
    (["--url"], "--url needs a value"),
    (["--url="], "--url needs a value"),
    (["--timeout"], "--timeout must be 1..300 seconds, got ''"),
    (["--timeout=0"], "--timeout must be 1..300 seconds, got '0'"),
    (["--timeout", "301"], "--timeout must be 1..300 seconds, got '301'"),
    (["--url=ftp://h/"], "--url must be http(s)://host[:port][/path], got 'ftp://h/'"),
])
def test_health_usage_errors(args, message):
    assert_usage_error(run("health", *args), "health", message)


# ---------------------------------------------------------------- token

def test_token_new_reads_both_spellings(tmp_path):
    tokens = tmp_path / "tokens"
    a = run("token", "new", "--tokens=" + str(tokens), "--name=ops")
    b = run("token", "--name", "ci", "new", "--tokens", tokens)   # options before the command
    assert a.returncode == 0 and b.returncode == 0, (a.stderr, b.stderr)
    lines = tokens.read_text().splitlines()
    assert [line.split(" ")[1] for line in lines] == ["ops", "ci"]
    for p, line in zip((a, b), lines):
        token = p.stdout.strip()
        assert line.split(" ")[0] == "sha256:" + hashlib.sha256(token.encode()).hexdigest()


@pytest.mark.parametrize("args", [["hash", "--name=ops"], ["hash", "--name", "ops"],
                                  ["--name", "ops", "hash"]])
def test_token_hash_reads_both_spellings(args):
    p = run("token", *args, stdin="abc\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "sha256:" + hashlib.sha256(b"abc").hexdigest() + " ops\n"


@pytest.mark.parametrize("args, message", [
    (["new", "--bogus"], "unknown option or missing value: --bogus"),
    (["new", "--tok", "f"], "unknown option or missing value: --tok"),
    (["new", "--tokens"], "unknown option or missing value: --tokens"),
    (["new", "--tokens="], "unknown option or missing value: --tokens="),
    (["hash", "--name"], "unknown option or missing value: --name"),
    (["new", "extra"], "unknown option or missing value: extra"),
    (["hash", "--name=a b"], "--name must be at most 64 bytes without spaces: a b"),
    (["new"], "new needs --tokens FILE"),
    (["frob", "--name", "x"], "unknown command: frob"),
    ([], "which command? new or hash"),
])
def test_token_usage_errors(args, message):
    p = run("token", *args, stdin="")
    assert p.returncode == 2, p.stderr
    assert f"transitd token: {message}\n" in p.stderr and "usage: transitd token" in p.stderr


# ---------------------------------------------------------------- serve

@pytest.mark.parametrize("equals", [True, False])
def test_serve_reads_both_spellings(data, equals):
    opts = {"data": data, "port": 0, "threads": 3, "max-body": 10, "bind": "127.0.0.1"}
    args = []
    for name, value in opts.items():
        args += [f"--{name}={value}"] if equals else [f"--{name}", value]
    with serve(*args, "--quiet") as s:
        s.wait_for_log(r"listening on http://127\.0\.0\.1:\d+/ \(3 threads\)")
        assert requests.get(s.url("/readyz"), timeout=10).status_code == 200
        r = requests.post(s.url("/v1/alerts"), data="x" * 100, timeout=10)
        assert r.status_code == 413   # --max-body 10 was read


@pytest.mark.parametrize("args, message", [
    (["--bogus"], "unknown option '--bogus'"),
    (["--max-conn", "5"], "unknown option '--max-conn'"),
    (["--quiet=1"], "unknown option '--quiet=1'"),
    (["-q"], "unknown option '-q'"),                      # serve has no -q
    (["stray", "--port", "0"], "unknown option 'stray'"),
    (["--data"], "--data needs a value"),
    (["--data="], "--data needs a value"),
    (["--cors-origin"], "--cors-origin needs a value"),
    (["--port"], "--port must be a port number 0..65535, got ''"),
    (["--port=70000"], "--port must be a port number 0..65535, got '70000'"),
    (["--threads", "0"], "--threads must be 1..1024, got '0'"),
    (["--max-connections=0"], "--max-connections must be 1..1000000, got '0'"),
    (["--max-connections-per-ip", "-1"], "--max-connections-per-ip must be 0..1000000, got '-1'"),
    (["--rt-interval=3601"], "--rt-interval must be 1..3600 seconds, got '3601'"),
    (["--max-body=1073741825"], "--max-body must be 0..1073741824 bytes, got '1073741825'"),
])
def test_serve_usage_errors(args, message):
    assert_usage_error(run("serve", *args), "serve", message)


def test_every_subcommand_help_exits_0():
    for command in ("import", "health", "token", "serve"):
        for flag in ("--help", "-h"):
            p = run(command, flag)
            assert p.returncode == 0 and p.stdout.startswith(f"usage: transitd {command}"), \
                (command, flag, p.stderr)
