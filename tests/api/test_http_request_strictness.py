"""Requests the server refuses instead of guessing, and a header on every
response.

Why it exists: libmicrohttpd decodes query arguments itself: `q=a%00b`
reached the endpoint as "a" (silently truncated) and `%zz` passed through as
text; an HTTP/1.1 request without Host was answered 200; responses had no
X-Content-Type-Options. Here: %00 and malformed escapes in the query are a
400 naming the parameter, Host is required (exactly once) in HTTP/1.1, well
formed escapes still work, the connection stays usable after such a 400, and
every kind of response carries `X-Content-Type-Options: nosniff`.
"""
import http.client
import json
import shutil

import pytest

from http_server import Server, TMP, demo_feed, import_feed

LAT, LON, WHEN = "52.5271", "13.2343", "2026-11-23T08:00"


@pytest.fixture(scope="module")
def server():
    data = TMP / "http-strictness"
    shutil.rmtree(data, ignore_errors=True)
    import_feed(demo_feed(1), data)
    with Server(data, "--quiet") as s:
        yield s


def raw(server, target, method="GET", version="HTTP/1.1", hosts=("x",), conn=None):
    """Sends the request target exactly as given; returns (response, body,
    connection)."""
    conn = conn or http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn._http_vsn_str = version
    conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
    for h in hosts:
        conn.putheader("Host", h)
    conn.endheaders()
    r = conn.getresponse()
    body = r.read()
    return r, body, conn


def problem(r, body, status):
    assert r.status == status, body
    assert r.getheader("Content-Type") == "application/problem+json; charset=utf-8"
    doc = json.loads(body)
    assert doc["status"] == status
    return doc["detail"]


@pytest.mark.parametrize("target, param, words", [
    ("/v1/stops?q=a%00b", "q", "encoded NUL"),
    ("/v1/stops?limit=3&q=%00", "q", "encoded NUL"),
    (f"/v1/departures?lat={LAT}&lon={LON}&time={WHEN}%00", "time", "encoded NUL"),
    ("/v1/stops?q=ab%zz", "q", "malformed percent-encoding"),
    ("/v1/stops?q=ab%4", "q", "malformed percent-encoding"),
    ("/v1/stops?q=ab%4g&limit=2", "q", "malformed percent-encoding"),
    ("/v1/stops?q=ab&limit=%", "limit", "malformed percent-encoding"),
    ("/v1/routes?bad%zzname=1", "bad%zzname", "malformed percent-encoding"),
])
def test_bad_escapes_in_the_query_are_a_400_naming_the_parameter(server, target, param, words):
    r, body, conn = raw(server, target)
    detail = problem(r, body, 400)
    assert f"query parameter '{param}'" in detail and words in detail
    # the connection stays usable
    r, body, _ = raw(server, "/v1/routes", conn=conn)
    assert r.status == 200
    conn.close()


def test_well_formed_escapes_still_work(server):
    r, body, conn = raw(server, "/v1/stops?q=S%2BU%20Zoo%C3%A4&limit=2")
    assert r.status == 200, body
    r, body, _ = raw(server, f"/v1/departures?lat={LAT}&lon={LON}&time=2026-11-23T08%3A00",
                     conn=conn)
    assert r.status == 200, body
    conn.close()


def test_http11_without_host_is_a_400(server):
    r, body, conn = raw(server, "/v1/routes", hosts=())
    assert "Host" in problem(r, body, 400)
    r, body, _ = raw(server, "/healthz", hosts=(), conn=conn)
    problem(r, body, 400)
    # keep-alive survives, and a proper request on it is answered
    r, body, _ = raw(server, "/healthz", conn=conn)
    assert r.status == 200
    conn.close()


def test_two_host_headers_are_a_400(server):
    r, body, conn = raw(server, "/v1/routes", hosts=("a", "b"))
    assert "Host" in problem(r, body, 400)
    conn.close()
    r, body, conn = raw(server, "/v1/routes", version="HTTP/1.0", hosts=("a", "b"))
    problem(r, body, 400)
    conn.close()


def test_http10_without_host_is_answered(server):
    r, body, conn = raw(server, "/v1/routes", version="HTTP/1.0", hosts=())
    assert r.status == 200, body
    conn.close()


@pytest.mark.parametrize("method, target, status", [
    ("GET", "/healthz", 200),
    ("HEAD", "/healthz", 200),
    ("GET", "/readyz", 200),
    ("GET", "/metrics", 200),
    ("GET", "/openapi.json", 200),
    ("GET", f"/v1/departures?lat={LAT}&lon={LON}&time={WHEN}&limit=3", 200),
    ("GET", "/v1/stops/nope", 404),
    ("GET", "/nowhere", 404),
    ("GET", "/v1/stops?q=a%00", 400),
    ("DELETE", "/v1/routes", 405),
    ("OPTIONS", "/v1/routes", 204),
])
def test_every_response_says_nosniff(server, method, target, status):
    r, body, conn = raw(server, target, method=method)
    assert r.status == status, body
    assert r.getheader("X-Content-Type-Options") == "nosniff"
    conn.close()


def test_not_modified_and_unavailable_say_nosniff_too(server):
    r, body, conn = raw(server, "/v1/routes")
    etag = r.getheader("ETag")
    conn.putrequest("GET", "/v1/routes", skip_host=True)
    conn.putheader("Host", "x")
    conn.putheader("If-None-Match", etag)
    conn.endheaders()
    r = conn.getresponse()
    r.read()
    assert r.status == 304 and r.getheader("X-Content-Type-Options") == "nosniff"
    conn.close()
    empty = TMP / "http-strictness-empty"
    shutil.rmtree(empty, ignore_errors=True)
    empty.mkdir(parents=True)
    with Server(empty, "--quiet", "--wait-for-data") as waiting:
        r, body, conn = raw(waiting, "/v1/routes")
        assert r.status == 503 and r.getheader("X-Content-Type-Options") == "nosniff"
        conn.close()
