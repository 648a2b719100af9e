"""HTTPS (issue #23): `serve --tls-cert/--tls-key` through libmicrohttpd's GnuTLS,
`transitd cert new`, `transitd health` over HTTPS, and the certificate reload on
SIGHUP with no failed request.

Two independent clients check the server: Python's ssl module (OpenSSL) and
curl. What an iPhone's App Transport Security demands is checked from the
client side: TLS 1.3 and 1.2 work, with forward-secret AEAD suites; TLS 1.1 and
1.0, and TLS 1.2 suites without forward secrecy or with CBC, are refused by the
server (the client is told to allow them, and the server's handshake-failure
counter moves). Runs on the demo feed; needs nothing from ../shared.
"""
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time

import pytest

from conftest import ROOT, transitd_bin
from http_server import Server, TMP, demo_feed, import_feed

STOP = "de:11000:900100001"
WHEN = "2026-11-23T08:00"


def run(*args, timeout=60, env=None):
    return subprocess.run([transitd_bin(), *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})))


def new_cert(out, host="localhost", *extra):
    p = run("cert", "new", "--host", host, "--out", str(out), *extra)
    assert p.returncode == 0, p.stderr
    return out / f"{host}.crt", out / f"{host}.key"


@pytest.fixture(scope="module")
def data():
    d = TMP / "tls-data"
    shutil.rmtree(d, ignore_errors=True)
    import_feed(demo_feed(1), d)
    return d


@pytest.fixture(scope="module")
def certs():
    d = TMP / "tls-certs"
    shutil.rmtree(d, ignore_errors=True)
    crt, key = new_cert(d)
    return crt, key


@pytest.fixture(scope="module")
def tls_server(data, certs):
    crt, key = certs
    with Server(data, "--quiet", "--tls-cert", str(crt), "--tls-key", str(key)) as s:
        yield s


def client_context(cafile, minimum=None, maximum=None, ciphers=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=str(cafile))
    if ciphers:   # lets this client offer what the server must refuse
        ctx.set_ciphers(ciphers)
    if minimum:
        ctx.minimum_version = minimum
    if maximum:
        ctx.maximum_version = maximum
    return ctx


def https_get(port, path, ctx, host="localhost", headers=None):
    conn = http.client.HTTPSConnection(host, port, context=ctx, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read(), conn.sock.version(), conn.sock.cipher()
    finally:
        conn.close()


def metric(port, ctx, name):
    _, _, body, _, _ = https_get(port, "/metrics", ctx)
    m = re.search(rf"^{re.escape(name)} (\d+)$", body.decode(), re.M)
    assert m, f"{name} not in /metrics"
    return int(m.group(1))


def served_fingerprint(port):
    """SHA-256 of the certificate the server presents (no verification: we look)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw) as s:
            return hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()


def file_fingerprint(crt):
    der = ssl.PEM_cert_to_DER_cert(crt.read_text())
    return hashlib.sha256(der).hexdigest()


# ------------------------------------------------------------------ cert new

def test_cert_new_writes_a_pair_an_iphone_accepts(certs):
    crt, key = certs
    assert crt.exists() and key.exists()
    assert key.stat().st_mode & 0o777 == 0o600          # the key is the owner's only
    assert "PRIVATE KEY" in key.read_text()
    info = ssl._ssl._test_decode_cert(str(crt))
    assert info["subjectAltName"] == (("DNS", "localhost"),)   # iOS reads only the SAN
    not_before = ssl.cert_time_to_seconds(info["notBefore"])
    not_after = ssl.cert_time_to_seconds(info["notAfter"])
    assert not_after - not_before <= 825 * 86400                # iOS 13's limit
    assert not_before <= time.time() < not_after
    if shutil.which("openssl"):
        text = subprocess.run(["openssl", "x509", "-in", str(crt), "-noout", "-text"],
                              capture_output=True, text=True).stdout
        assert "ecdsa-with-SHA256" in text and "prime256v1" in text
        assert "CA:TRUE" in text                                 # listed in Certificate Trust Settings
        assert "TLS Web Server Authentication" in text           # extendedKeyUsage serverAuth


def test_cert_new_for_an_address_refuses_to_overwrite_and_checks_its_input():
    d = TMP / "tls-cert-cli"
    shutil.rmtree(d, ignore_errors=True)
    crt, _ = new_cert(d, "127.0.0.1", "--days", "30")
    info = ssl._ssl._test_decode_cert(str(crt))
    assert info["subjectAltName"] == (("IP Address", "127.0.0.1"),)
    days = (ssl.cert_time_to_seconds(info["notAfter"]) - ssl.cert_time_to_seconds(info["notBefore"])) / 86400
    assert round(days) == 30
    before = crt.read_bytes()
    p = run("cert", "new", "--host", "127.0.0.1", "--out", str(d))
    assert p.returncode == 1 and "exists (use --force" in p.stderr
    assert crt.read_bytes() == before                       # nothing touched
    assert run("cert", "new", "--host", "127.0.0.1", "--out", str(d), "--force").returncode == 0
    assert crt.read_bytes() != before
    for args, says in ((["--host", "bad/name", "--out", str(d)], "--host must be"),
                       (["--host", "-x.local", "--out", str(d)], "--host must be"),
                       (["--out", str(d)], "--host NAME is required"),
                       (["--host", "a.local"], "--out DIR is required"),
                       (["--host", "a.local", "--out", str(d), "--days", "826"], "--days must be")):
        p = run("cert", "new", *args)
        assert p.returncode == 2 and says in p.stderr, (args, p.stderr)


# ------------------------------------------------------------------ serving

def test_https_answers_as_plain_http_does(data, tls_server, certs):
    crt, _ = certs
    path = f"/v1/stops/{STOP}/departures?time={WHEN}&limit=20"
    status, headers, body, version, cipher = https_get(tls_server.port, path, client_context(crt))
    assert status == 200 and version == "TLSv1.3"
    with Server(data, "--quiet") as plain:
        conn = http.client.HTTPConnection("127.0.0.1", plain.port, timeout=10)
        conn.request("GET", path)
        assert body == conn.getresponse().read()             # the same answer, byte for byte
        conn.close()
    # compressed, as URLSession asks: the coding and Vary survive TLS
    status, headers, coded, _, _ = https_get(tls_server.port, path, client_context(crt),
                                             headers={"Accept-Encoding": "gzip, deflate, br"})
    assert status == 200 and headers["Content-Encoding"] in ("br", "gzip")
    assert "Accept-Encoding" in headers["Vary"] and len(coded) < len(body)


@pytest.mark.parametrize("version", ["TLSv1_3", "TLSv1_2"])
def test_tls_1_3_and_1_2_with_forward_secret_aead_suites(tls_server, certs, version):
    crt, _ = certs
    v = getattr(ssl.TLSVersion, version)
    status, _, _, got, cipher = https_get(tls_server.port, "/healthz",
                                          client_context(crt, minimum=v, maximum=v))
    assert status == 200 and got == version.replace("_", ".")
    name = cipher[0]
    if version == "TLSv1_2":
        assert name.startswith("ECDHE-") and ("GCM" in name or "CHACHA20" in name), name
    else:
        assert name in ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                        "TLS_CHACHA20_POLY1305_SHA256"), name


@pytest.mark.parametrize("offer", [
    ("TLSv1_1", "TLSv1_1", "DEFAULT:@SECLEVEL=0"),
    ("TLSv1", "TLSv1", "DEFAULT:@SECLEVEL=0"),
    ("TLSv1_2", "TLSv1_2", "AES128-GCM-SHA256:AES256-GCM-SHA384:@SECLEVEL=0"),   # RSA key exchange
    ("TLSv1_2", "TLSv1_2", "ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA384:@SECLEVEL=0"),  # CBC
], ids=["tls1.1", "tls1.0", "tls1.2-no-forward-secrecy", "tls1.2-cbc"])
def test_older_protocols_and_weaker_suites_are_refused(tls_server, certs, offer):
    crt, _ = certs
    lo, hi, ciphers = offer
    ok = client_context(crt)
    failures = metric(tls_server.port, ok, "transitd_tls_handshake_failures_total")
    try:
        ctx = client_context(crt, getattr(ssl.TLSVersion, lo), getattr(ssl.TLSVersion, hi), ciphers)
    except (ssl.SSLError, ValueError) as e:
        pytest.skip(f"this OpenSSL cannot even offer {offer}: {e}")
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        https_get(tls_server.port, "/healthz", ctx)
    # the server refused it (not our client), and counted it
    deadline = time.monotonic() + 5
    while metric(tls_server.port, ok, "transitd_tls_handshake_failures_total") <= failures:
        assert time.monotonic() < deadline, "the refused handshake was not counted"
        time.sleep(0.05)


def test_clients_without_sni_are_served(tls_server, certs):
    crt, _ = certs
    ctx = client_context(crt)
    ctx.check_hostname = False        # no name: no SNI sent; the chain is still verified
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=None) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert s.recv(4096).startswith(b"HTTP/1.1 200")
    if shutil.which("openssl"):
        p = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{tls_server.port}",
                            "-noservername", "-CAfile", str(crt)],
                           input="", capture_output=True, text=True, timeout=20)
        assert "Verify return code: 0 (ok)" in p.stdout, p.stdout + p.stderr


def test_handshakes_are_counted_by_version(tls_server, certs):
    crt, _ = certs
    ok = client_context(crt)
    before = metric(tls_server.port, ok, 'transitd_tls_handshakes_total{version="TLS1.2"}')
    v = ssl.TLSVersion.TLSv1_2
    for _ in range(3):
        assert https_get(tls_server.port, "/healthz", client_context(crt, v, v))[0] == 200
    after = metric(tls_server.port, ok, 'transitd_tls_handshakes_total{version="TLS1.2"}')
    assert after == before + 3
    assert metric(tls_server.port, ok, "transitd_tls_certificate_expiry_seconds") > 800 * 86400


@pytest.mark.skipif(not shutil.which("curl"), reason="curl is not installed (.ci/deps test installs it)")
def test_curl_verifies_and_decodes(tls_server, certs):
    crt, _ = certs
    url = f"https://localhost:{tls_server.port}/v1/departures?lat=52.5271&lon=13.2343&time={WHEN}"
    p = subprocess.run(["curl", "-sS", "--fail", "--cacert", str(crt), "--compressed",
                        "-H", "Accept-Encoding: gzip, deflate, br", "-w", "\n%{http_version} %{ssl_verify_result}",
                        url], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    body, _, tail = p.stdout.rpartition("\n")
    assert json.loads(body)["departures"] is not None and tail == "1.1 0"
    # without the certificate as its trust, curl refuses the self-signed server
    p = subprocess.run(["curl", "-sS", url], capture_output=True, text=True, timeout=30)
    assert p.returncode == 60, p.stderr      # CURLE_PEER_FAILED_VERIFICATION
    # and a client stuck at TLS 1.1 gets nothing
    p = subprocess.run(["curl", "-sS", "--cacert", str(crt), "--tlsv1.0", "--tls-max", "1.1",
                        "--ciphers", "DEFAULT@SECLEVEL=0", url], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0


def test_health_speaks_https(tls_server, certs):
    crt, _ = certs
    url = f"https://localhost:{tls_server.port}/readyz"
    p = run("health", "--url", url, "--cacert", str(crt))
    assert p.returncode == 0 and p.stdout == f"{url}: 200 ready\n", p.stderr
    p = run("health", "--url", url)      # the system's trust does not know a self-signed server
    assert p.returncode == 1 and "not trusted" in p.stderr
    p = run("health", "--url", f"https://127.0.0.1:{tls_server.port}/readyz", "--cacert", str(crt))
    assert p.returncode == 1 and "does not match" in p.stderr     # the name is checked
    p = run("health", "--url", f"https://127.0.0.1:{tls_server.port}/readyz", "--cacert", str(crt),
            "--tls-name", "localhost")
    assert p.returncode == 0, p.stderr
    # as serve is configured: $TRANSITD_TLS_CERT gives the scheme, the trust and the name
    p = run("health", env={"TRANSITD_TLS_CERT": str(crt), "TRANSITD_PORT": str(tls_server.port)})
    assert p.returncode == 0 and p.stdout.startswith("https://127.0.0.1:"), p.stderr


def test_bad_certificate_or_key_stops_start_up_with_the_file_named(data, certs):
    crt, key = certs
    other = TMP / "tls-other"
    shutil.rmtree(other, ignore_errors=True)
    _, other_key = new_cert(other, "other.local")
    cases = [
        (["--tls-cert", str(crt)], 2, "needs both --tls-cert and --tls-key"),
        (["--tls-key", str(key)], 2, "needs both --tls-cert and --tls-key"),
        (["--tls-cert", str(crt) + ".missing", "--tls-key", str(key)], 1,
         f"cannot read the TLS certificate {crt}.missing"),
        (["--tls-cert", str(key), "--tls-key", str(key)], 1, f"{key} is not a PEM certificate chain"),
        (["--tls-cert", str(crt), "--tls-key", str(crt)], 1, f"{crt} is not an unencrypted PEM private key"),
        (["--tls-cert", str(crt), "--tls-key", str(other_key)], 1,
         f"the key {other_key} does not belong to the certificate {crt}"),
    ]
    for args, code, says in cases:
        p = run("serve", "--data", str(data), "--port", "0", *args, timeout=20)
        assert p.returncode == code and says in p.stderr, (args, p.returncode, p.stderr)


# ------------------------------------------------------------------ reload

def test_sighup_swaps_a_renewed_certificate_with_no_failed_request(data):
    d = TMP / "tls-renew"
    shutil.rmtree(d, ignore_errors=True)
    crt, key = new_cert(d)
    old = crt.read_text()
    with Server(data, "--tls-cert", str(crt), "--tls-key", str(key), "--quiet") as s:
        assert served_fingerprint(s.port) == file_fingerprint(crt)
        # three renewals made ahead; clients trust all four (as they would trust one CA)
        renewals = [new_cert(d / f"next{i}") for i in range(3)]
        trust = d / "trust.pem"
        trust.write_text(old + "".join(c.read_text() for c, _ in renewals))
        stop = threading.Event()
        results = {"ok": 0, "failed": []}
        lock = threading.Lock()

        def client():
            ctx = client_context(trust)
            while not stop.is_set():
                try:   # a new connection, so a new handshake, every request
                    status = https_get(s.port, "/healthz", ctx)[0]
                    with lock:
                        if status == 200:
                            results["ok"] += 1
                        else:
                            results["failed"].append(status)
                except Exception as e:   # noqa: BLE001 - every failure is the finding
                    with lock:
                        results["failed"].append(repr(e))

        threads = [threading.Thread(target=client) for _ in range(4)]
        for t in threads:
            t.start()
        try:
            time.sleep(0.5)
            for new_crt, new_key in renewals:   # renew under load, as a deploy hook would
                shutil.copy(new_crt, crt.with_suffix(".crt.new"))
                shutil.copy(new_key, key.with_suffix(".key.new"))
                os.replace(key.with_suffix(".key.new"), key)
                os.replace(crt.with_suffix(".crt.new"), crt)
                if shutil.which("openssl"):
                    p = subprocess.run([str(ROOT / "etc" / "tls-renewed.sh"), f"127.0.0.1:{s.port}",
                                        str(crt), str(s.proc.pid)],
                                       capture_output=True, text=True, timeout=30)
                    assert p.returncode == 0, p.stdout + p.stderr
                    assert "presents" in p.stdout
                else:
                    s.send_signal(signal.SIGHUP)
                    s.wait_for_log("TLS certificate reloaded")
                assert served_fingerprint(s.port) == file_fingerprint(new_crt)
                time.sleep(0.3)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        assert results["failed"] == [] and results["ok"] > 20, results
        # a broken renewal keeps the certificate being served, and says why
        served = served_fingerprint(s.port)
        crt.write_text("not a certificate\n")
        s.send_signal(signal.SIGHUP)
        s.wait_for_log(r"TLS certificate not reloaded, the previous one stays: .* is not a PEM")
        assert served_fingerprint(s.port) == served
        ctx = client_context(trust)
        assert metric(s.port, ctx, 'transitd_tls_certificate_reloads_total{result="ok"}') == 3
        assert metric(s.port, ctx, 'transitd_tls_certificate_reloads_total{result="failed"}') == 1


def process_cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads CPU time from /proc (Linux)")
def test_a_silent_client_does_not_make_the_server_spin(tls_server):
    """libmicrohttpd 0.9.75 with epoll spins while a handshake waits for the client;
    the HTTPS server uses poll. Four clients that connect and say nothing for
    2 s must cost the server next to no CPU (a spinning server burns about 2 s)."""
    pid = tls_server.proc.pid
    socks = [socket.create_connection(("127.0.0.1", tls_server.port), timeout=10) for _ in range(4)]
    try:
        before = process_cpu_seconds(pid)
        time.sleep(2.0)
        used = process_cpu_seconds(pid) - before
    finally:
        for s in socks:
            s.close()
    assert used < 0.5, f"the server used {used:.2f} s of CPU in 2 s for 4 silent TLS clients"
