"""Service alerts over real HTTP: every verb of /v1/alerts and
/v1/alerts/{id}, bearer auth (none configured, missing, wrong, right),
preconditions (If-Match / If-None-Match, 412 on a lost update), bad bodies
that change nothing, persistence across restarts and re-imports, writes by
another process, and alerts in stop detail and both departures endpoints.

Runs against the demo feed (bench/gtfs_gen.py --scale demo, seed 1), so it
needs nothing from ../shared.
"""
import json
import re
import shutil
import subprocess
import time
import urllib.parse

import brotli
import pytest
import requests

import schema_check
from conftest import transitd_bin
from http_server import Server, demo_feed, import_feed, TMP

DOC = schema_check.load_openapi()
STATION = "de:11000:900100001"         # two platforms, served by U1 (route 10000_1)
PLATFORM = "de:11000:900100001::1"
ROUTE = "10000_1"
WHEN = "2026-11-23T08:00"              # a Monday inside the service period
LAT, LON = "52.5271", "13.2343"
JSON = {"Content-Type": "application/json"}


def q(s):
    return urllib.parse.quote(s, safe="")


def alert_body(**over):
    body = {
        "informed_entity": [{"stop_id": STATION}],
        "cause": "CONSTRUCTION",
        "effect": "DETOUR",
        "header_text": {"translation": [{"text": "Platform works", "language": "en"},
                                        {"text": "Bauarbeiten", "language": "de"}]},
        "active_period": [{"start": "2026-11-01T00:00:00+01:00", "end": "2026-12-01T00:00:00Z"}],
    }
    body.update(over)
    return body


def make_token(path, name="ops"):
    p = subprocess.run([transitd_bin(), "token", "new", "--tokens", str(path), "--name", name],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
    token = p.stdout.strip()
    assert token.startswith("td_") and len(token) == 46
    return token


@pytest.fixture(scope="module")
def env():
    base = TMP / "alerts-api"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    data = base / "data"
    import_feed(demo_feed(1), data)
    tokens = base / "tokens"
    token = make_token(tokens)
    with Server(data, "--tokens", str(tokens)) as s:
        yield {"server": s, "data": data, "tokens": tokens, "token": token, "base": base}


def auth(env):
    return {"Authorization": f"Bearer {env['token']}", **JSON}


def url(env, path):
    return env["server"].url(path)


def check_schema(body, api_path, method="get", status="200"):
    op = DOC["paths"][api_path][method]
    schema = op["responses"][status]
    schema = schema.get("content", {}).get("application/json", {}).get("schema")
    if schema is None:   # a $ref'd response
        schema = schema_check.response_schema(DOC, api_path)
    errors = schema_check.validate(body, schema, DOC)
    assert not errors, "\n".join(errors[:20])


def assert_problem(r, status, pointer=None):
    assert r.status_code == status, r.text
    assert r.headers["Content-Type"] == "application/problem+json; charset=utf-8"
    body = r.json()
    errors = schema_check.validate(body, schema_check.schema("Problem"), DOC)
    assert not errors, errors
    assert body["status"] == status and body["detail"]
    if pointer is not None:
        assert body.get("pointer") == pointer, body
    return body


def listing(env):
    r = requests.get(url(env, "/v1/alerts?limit=1000"), timeout=10)
    assert r.status_code == 200
    return r.json()["alerts"]


# ------------------------------------------------------------ auth

def test_writes_without_tokens_configured_are_403(tmp_path):
    data = tmp_path / "data"
    import_feed(demo_feed(1), data)
    with Server(data) as s:
        r = requests.post(s.url("/v1/alerts"), data=json.dumps(alert_body()), headers=JSON,
                          timeout=10)
        body = assert_problem(r, 403)
        assert "--tokens" in body["detail"] and "transitd token new" in body["detail"]
        for verb in ("put", "patch", "delete"):
            r = requests.request(verb, s.url("/v1/alerts/x1"), data="{}", headers=JSON, timeout=10)
            assert_problem(r, 403)
        assert requests.get(s.url("/v1/alerts"), timeout=10).json()["alerts"] == []


def test_missing_wrong_and_malformed_tokens_are_401(env):
    before = listing(env)
    cases = [({}, 'Bearer realm="transitd"'),
             ({"Authorization": "Bearer td_wrong"}, 'error="invalid_token"'),
             ({"Authorization": f"Bearer {env['token'][:-1]}x"}, 'error="invalid_token"'),
             ({"Authorization": f"Basic {env['token']}"}, 'error="invalid_token"')]
    for headers, challenge in cases:
        for verb, path in (("post", "/v1/alerts"), ("put", "/v1/alerts/a1"),
                           ("patch", "/v1/alerts/a1"), ("delete", "/v1/alerts/a1")):
            r = requests.request(verb, url(env, path), data=json.dumps(alert_body()),
                                 headers={**JSON, **headers}, timeout=10)
            assert_problem(r, 401)
            assert challenge in r.headers["WWW-Authenticate"]
    assert listing(env) == before


def test_tokens_file_is_hashed_and_bad_files_refused(env, tmp_path):
    text = env["tokens"].read_text()
    assert env["token"] not in text and text.startswith("sha256:")
    bad = tmp_path / "bad-tokens"
    bad.write_text("# ops\n" + env["token"] + "\n")
    p = subprocess.run([transitd_bin(), "serve", "--data", str(env["data"]), "--port", "0",
                        "--tokens", str(bad)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=20)
    assert p.returncode == 1
    assert f"{bad}:2:" in p.stderr and "not a hashed token" in p.stderr


# ------------------------------------------------------------ the verbs

def test_post_creates_with_a_server_id(env):
    r = requests.post(url(env, "/v1/alerts"), data=json.dumps(alert_body()), headers=auth(env),
                      timeout=10)
    assert r.status_code == 201, r.text
    body = r.json()
    check_schema(body, "/v1/alerts/{id}")
    assert r.headers["Location"] == f"/v1/alerts/{body['id']}"
    assert r.headers["ETag"] == f'"{body["revision"]}"'
    assert body["active_period"] == [{"start": "2026-10-31T23:00:00Z", "end": "2026-12-01T00:00:00Z"}]
    assert body["severity_level"] == "UNKNOWN_SEVERITY" and body["url"] is None
    got = requests.get(url(env, r.headers["Location"]), timeout=10)
    assert got.status_code == 200 and got.json() == body
    assert got.headers["ETag"] == r.headers["ETag"]
    nm = requests.get(url(env, r.headers["Location"]), headers={"If-None-Match": got.headers["ETag"]},
                      timeout=10)
    assert nm.status_code == 304
    second = requests.post(url(env, "/v1/alerts"), data=json.dumps(alert_body()), headers=auth(env),
                           timeout=10).json()
    assert second["id"] != body["id"]
    with_id = requests.post(url(env, "/v1/alerts"), data=json.dumps(alert_body(id="mine")),
                            headers=auth(env), timeout=10)
    assert_problem(with_id, 422, "/id")


def test_put_creates_then_replaces_idempotently(env):
    path = url(env, "/v1/alerts/works-1")
    r = requests.put(path, data=json.dumps(alert_body()), headers=auth(env), timeout=10)
    assert r.status_code == 201 and r.headers["Location"] == "/v1/alerts/works-1"
    first = r.json()
    r = requests.put(path, data=json.dumps(alert_body()), headers=auth(env), timeout=10)
    assert r.status_code == 200
    again = r.json()
    assert again["revision"] > first["revision"] and again["created_at"] == first["created_at"]
    strip = lambda a: {k: v for k, v in a.items() if k not in ("revision", "updated_at")}
    assert strip(again) == strip(first)
    # a GET body can be PUT back as it is
    r = requests.put(path, data=json.dumps(again), headers=auth(env), timeout=10)
    assert r.status_code == 200
    # create-only
    r = requests.put(path, data=json.dumps(alert_body()), headers={**auth(env), "If-None-Match": "*"},
                     timeout=10)
    assert_problem(r, 412)
    r = requests.put(url(env, "/v1/alerts/works-1-new"), data=json.dumps(alert_body()),
                     headers={**auth(env), "If-None-Match": "*"}, timeout=10)
    assert r.status_code == 201
    r = requests.put(url(env, "/v1/alerts/bad%20id"), data=json.dumps(alert_body()),
                     headers=auth(env), timeout=10)
    assert_problem(r, 400)


def test_if_match_stops_a_lost_update(env):
    path = url(env, "/v1/alerts/lost-update")
    created = requests.put(path, data=json.dumps(alert_body()), headers=auth(env), timeout=10)
    tag = created.headers["ETag"]
    # writer A updates with the right tag
    a = requests.patch(path, data=json.dumps({"severity_level": "WARNING"}),
                       headers={**auth(env), "If-Match": tag,
                                "Content-Type": "application/merge-patch+json"}, timeout=10)
    assert a.status_code == 200 and a.json()["severity_level"] == "WARNING"
    # writer B still holds the old tag: every write verb refuses it
    for verb, body in (("put", alert_body()), ("patch", {"effect": "NO_SERVICE"}), ("delete", None)):
        r = requests.request(verb, path, data=json.dumps(body) if body else None,
                             headers={**auth(env), "If-Match": tag}, timeout=10)
        assert_problem(r, 412)
    now = requests.get(path, timeout=10)
    assert now.json()["severity_level"] == "WARNING" and now.json()["effect"] == "DETOUR"
    r = requests.put(path, data=json.dumps(alert_body()),
                     headers={**auth(env), "If-Match": f'W/{now.headers["ETag"]}'}, timeout=10)
    assert_problem(r, 412)   # If-Match compares strongly
    r = requests.put(path, data=json.dumps(alert_body()),
                     headers={**auth(env), "If-Match": f'"1", {now.headers["ETag"]}'}, timeout=10)
    assert r.status_code == 200
    r = requests.put(url(env, "/v1/alerts/not-there"), data=json.dumps(alert_body()),
                     headers={**auth(env), "If-Match": "*"}, timeout=10)
    assert_problem(r, 412)
    assert_problem(requests.put(path, data=json.dumps(alert_body()),
                                headers={**auth(env), "If-Match": "garbage"}, timeout=10), 400)


def test_if_match_is_412_for_any_well_formed_tag_and_400_only_when_malformed(env):
    path = url(env, "/v1/alerts/preconditions")
    requests.put(path, data=json.dumps(alert_body()), headers=auth(env), timeout=10)
    patch = {**auth(env), "Content-Type": "application/merge-patch+json"}
    for tag in ('"abc"', '"0"', 'W/""', '"9999999"', '"AarIT", W/"tZd\\#"', '"x" ,, "y"'):
        for verb, body, headers in (("put", alert_body(), auth(env)),
                                    ("patch", {"effect": "NO_SERVICE"}, patch),
                                    ("delete", None, auth(env))):
            r = requests.request(verb, path, data=json.dumps(body) if body else None,
                                 headers={**headers, "If-Match": tag}, timeout=10)
            assert_problem(r, 412)
    for tag in ("", ", ,", "garbage", '"open', '"a" "b"', '"a", *', 'W/x', '"a"b'):
        r = requests.delete(path, headers={**auth(env), "If-Match": tag}, timeout=10)
        assert_problem(r, 400, None)
        assert "If-Match" in r.json()["detail"]
    assert requests.get(path, timeout=10).status_code == 200   # nothing was deleted
    # a bad patch is reported whatever If-Match says
    r = requests.patch(path, data=json.dumps({"effect": "SUNSHINE"}),
                       headers={**patch, "If-Match": '"abc"'}, timeout=10)
    assert_problem(r, 422, "/effect")
    # without the alert, DELETE is a 404 whatever the preconditions (RFC 9110 §13.2.1)
    r = requests.delete(url(env, "/v1/alerts/never-was"), headers={**auth(env), "If-Match": '"3"'},
                        timeout=10)
    assert_problem(r, 404)


def test_patch_is_a_json_merge_patch(env):
    path = url(env, "/v1/alerts/patch-me")
    requests.put(path, data=json.dumps(alert_body(
        description_text={"translation": [{"text": "Use the other exit"}]})), headers=auth(env),
        timeout=10)
    patch = {"severity_level": "SEVERE", "description_text": None, "url": {
        "translation": [{"text": "https://example.com/works"}]}}
    r = requests.patch(path, data=json.dumps(patch),
                       headers={**auth(env), "Content-Type": "application/merge-patch+json"},
                       timeout=10)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["severity_level"] == "SEVERE" and body["description_text"] is None
    assert body["url"]["translation"][0]["text"] == "https://example.com/works"
    assert body["header_text"] == alert_body()["header_text"]
    # a patch that leaves the alert invalid changes nothing
    r = requests.patch(path, data=json.dumps({"informed_entity": None}), headers=auth(env),
                       timeout=10)
    assert_problem(r, 422, "/informed_entity")
    assert requests.get(path, timeout=10).json() == body
    assert_problem(requests.patch(url(env, "/v1/alerts/nope"), data="{}", headers=auth(env),
                                  timeout=10), 404)
    assert_problem(requests.patch(path, data="[]", headers=auth(env), timeout=10), 400)


def test_delete(env):
    path = url(env, "/v1/alerts/delete-me")
    tag = requests.put(path, data=json.dumps(alert_body()), headers=auth(env),
                       timeout=10).headers["ETag"]
    r = requests.delete(path, headers={**auth(env), "If-Match": tag}, timeout=10)
    assert r.status_code == 204 and r.content == b""
    assert_problem(requests.get(path, timeout=10), 404)
    assert_problem(requests.delete(path, headers=auth(env), timeout=10), 404)
    assert "delete-me" not in [a["id"] for a in listing(env)]


def test_allow_lists_the_verbs_the_resources_answer(env):
    r = requests.options(url(env, "/v1/alerts/x"), timeout=10)
    assert r.status_code == 204
    assert r.headers["Allow"] == "GET, HEAD, PUT, PATCH, DELETE, OPTIONS"
    r = requests.options(url(env, "/v1/alerts"), timeout=10)
    assert r.headers["Allow"] == "GET, HEAD, POST, OPTIONS"
    assert_problem(requests.delete(url(env, "/v1/alerts"), headers=auth(env), timeout=10), 405)


# ------------------------------------------------------------ bad bodies

@pytest.mark.parametrize("body,status,pointer", [
    (b"{not json", 400, None),
    (b"", 400, None),
    (b'{"a":1,"a":2}', 400, None),
    (b"[1,2]", 400, None),
    (json.dumps(alert_body(colour="red")).encode(), 422, "/colour"),
    (json.dumps(alert_body(informed_entity=[{"stop": STATION}])).encode(), 422,
     "/informed_entity/0/stop"),
    (json.dumps(alert_body(informed_entity=[{"stop_id": 42}])).encode(), 422,
     "/informed_entity/0/stop_id"),
    (json.dumps(alert_body(informed_entity=[{"stop_id": "no-such-stop"}])).encode(), 422,
     "/informed_entity/0/stop_id"),
    (json.dumps(alert_body(informed_entity=[{"route_id": "no-such-route"}])).encode(), 422,
     "/informed_entity/0/route_id"),
    (json.dumps(alert_body(informed_entity=[])).encode(), 422, "/informed_entity"),
    (json.dumps(alert_body(effect="BROKEN")).encode(), 422, "/effect"),
    (json.dumps(alert_body(cause=3)).encode(), 422, "/cause"),
    (json.dumps(alert_body(active_period=[{"start": "yesterday"}])).encode(), 422,
     "/active_period/0/start"),
    (json.dumps(alert_body(active_period=[{"start": 200, "end": 100}])).encode(), 422,
     "/active_period/0"),
    (json.dumps(alert_body(header_text="Works")).encode(), 422, "/header_text"),
    (json.dumps(alert_body(header_text={"translation": [{"text": "x" * 5000}]})).encode(), 422,
     "/header_text/translation/0/text"),
    (json.dumps(alert_body(url={"translation": [{"text": "javascript:alert(1)"}]})).encode(), 422,
     "/url/translation/0/text"),
])
def test_bad_bodies_change_nothing(env, body, status, pointer):
    before = listing(env)
    for verb, path in (("post", "/v1/alerts"), ("put", "/v1/alerts/bad-body")):
        r = requests.request(verb, url(env, path), data=body, headers=auth(env), timeout=10)
        assert_problem(r, status, pointer)
    assert listing(env) == before


def put_headers_only(env, path, content_length):
    """A PUT's request line and headers announcing content_length bytes, and
    no body: (status, body) of the answer, which must come at once."""
    import socket
    parts = urllib.parse.urlsplit(url(env, path))
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        head = (f"PUT {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                f"Authorization: {auth(env)['Authorization']}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {content_length}\r\n\r\n")
        sock.sendall(head.encode())
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < int(
                re.search(rb"(?i)content-length: *(\d+)", data.split(b"\r\n\r\n", 1)[0]).group(1)):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def test_oversized_and_mistyped_bodies(env):
    before = listing(env)
    # refused at once, on Content-Length: the answer comes before any byte of the body is sent
    # (sending the body first races the server's close, which resets the connection)
    status, body = put_headers_only(env, "/v1/alerts/big", 1 << 20)
    assert status == 413, body
    assert json.loads(body)["status"] == 413
    r = requests.put(url(env, "/v1/alerts/typed"), data=json.dumps(alert_body()),
                     headers={**auth(env), "Content-Type": "text/plain"}, timeout=10)
    assert_problem(r, 415)
    r = requests.patch(url(env, "/v1/alerts/typed"), data="{}",
                       headers={**auth(env), "Content-Type": "application/xml"}, timeout=10)
    assert_problem(r, 415)
    assert listing(env) == before


# ------------------------------------------------------------ reading

def test_list_filters_and_pages(env):
    for i in range(5):
        requests.put(url(env, f"/v1/alerts/page-{i}"), headers=auth(env), timeout=10, data=json.dumps(
            alert_body(informed_entity=[{"route_id": ROUTE}] if i % 2 else [{"stop_id": PLATFORM}],
                       active_period=[{"start": f"2027-0{i + 1}-01T00:00:00Z"}])))
    r = requests.get(url(env, "/v1/alerts?limit=2&after=page-"), timeout=10)
    check_schema(r.json(), "/v1/alerts")
    page = r.json()
    assert [a["id"] for a in page["alerts"]] == ["page-0", "page-1"] and page["truncated"]
    nxt = requests.get(url(env, f"/v1/alerts?limit=2&after={page['next_after']}"), timeout=10).json()
    assert [a["id"] for a in nxt["alerts"]][:2] == ["page-2", "page-3"]
    by_route = requests.get(url(env, f"/v1/alerts?route_id={ROUTE}"), timeout=10).json()["alerts"]
    assert {"page-1", "page-3"} <= {a["id"] for a in by_route}
    assert all(any(e.get("route_id") == ROUTE for e in a["informed_entity"]) for a in by_route)
    by_stop = requests.get(url(env, f"/v1/alerts?stop_id={q(PLATFORM)}"), timeout=10).json()["alerts"]
    assert {a["id"] for a in by_stop} >= {"page-0", "page-2", "page-4"}
    active = requests.get(url(env, "/v1/alerts?active_at=2027-02-15T00:00:00Z"), timeout=10).json()
    ids = {a["id"] for a in active["alerts"]}
    assert {"page-0", "page-1"} <= ids and "page-2" not in ids
    assert_problem(requests.get(url(env, "/v1/alerts?active_at=soon"), timeout=10), 400)
    assert_problem(requests.get(url(env, "/v1/alerts?limit=0"), timeout=10), 400)
    assert_problem(requests.get(url(env, "/v1/alerts?colour=red"), timeout=10), 400)


def test_alerts_show_in_stop_detail_and_departures(env):
    requests.put(url(env, "/v1/alerts/station-works"), data=json.dumps(alert_body(
        active_period=[{"start": "2026-11-23T07:00:00+01:00", "end": "2026-11-23T09:00:00+01:00"}])),
        headers=auth(env), timeout=10)
    deps_path = f"/v1/stops/{STATION}/departures?time={WHEN}&limit=5"
    r = requests.get(url(env, deps_path), timeout=10)
    check_schema(r.json(), "/v1/stops/{id}/departures")
    body = r.json()
    assert body["departures"], body
    for d in body["departures"]:
        assert "station-works" in d["alerts"]
    shown = [a["id"] for a in body["alerts"]]
    assert shown.count("station-works") == 1 and shown == sorted(shown)
    assert all(any(a["id"] == i for a in body["alerts"]) for d in body["departures"]
               for i in d["alerts"])
    near = requests.get(url(env, f"/v1/departures?lat={LAT}&lon={LON}&time={WHEN}&limit=200"
                                 "&radius=2000"), timeout=10).json()
    check_schema(near, "/v1/departures")
    at_station = [d for d in near["departures"] if d["stop_id"].startswith(STATION)]
    assert at_station and all("station-works" in d["alerts"] for d in at_station)
    others = [d for d in near["departures"] if not d["stop_id"].startswith(STATION)]
    assert others and all("station-works" not in d.get("alerts", []) for d in others)
    assert any("alerts" not in d for d in others)
    # outside the active period the rows carry no such id
    later = requests.get(url(env, f"/v1/stops/{STATION}/departures?time=2026-11-23T10:00&limit=5"),
                         timeout=10).json()
    assert all("station-works" not in d.get("alerts", []) for d in later["departures"])


def test_writes_change_the_etags_of_affected_responses(env):
    path = f"/v1/stops/{STATION}/departures?time={WHEN}&limit=5"
    first = requests.get(url(env, path), timeout=10)
    tag = first.headers["ETag"]
    assert requests.get(url(env, path), headers={"If-None-Match": tag}, timeout=10).status_code == 304
    requests.put(url(env, "/v1/alerts/etag-changer"), data=json.dumps(alert_body()),
                 headers=auth(env), timeout=10)
    after = requests.get(url(env, path), headers={"If-None-Match": tag}, timeout=10)
    assert after.status_code == 200 and after.headers["ETag"] != tag
    assert "etag-changer" in [a["id"] for a in after.json()["alerts"]]
    detail = requests.get(url(env, f"/v1/stops/{STATION}"), timeout=10)
    check_schema(detail.json(), "/v1/stops/{id}")
    assert detail.headers["Cache-Control"] == "max-age=60"


def test_codings_of_alert_answers(env):
    """An alert's own ETag is strong (If-Match uses it), so its answer is sent as
    it is even when large (RFC 9110 §8.8.3: a strong tag names exact bytes); the
    list has the server's weak ETag and is compressed, and after a write the
    compressed list is the new one, never the one cached before it."""
    long = {"description_text": {"translation": [{"text": "Replacement buses every 10 minutes. " * 60,
                                                   "language": "en"}]}}
    path = url(env, "/v1/alerts/long-works")
    created = requests.put(path, data=json.dumps(alert_body(**long)), headers=auth(env), timeout=10)
    assert created.status_code == 201
    r = requests.get(path, headers={"Accept-Encoding": "gzip, deflate, br"}, timeout=10, stream=True)
    raw = r.raw.read(decode_content=False)
    assert len(raw) > 2000 and "Content-Encoding" not in r.headers
    assert re.fullmatch(r'"\d+"', r.headers["ETag"]) and r.headers["Vary"] == "Accept-Encoding"
    assert json.loads(raw)["id"] == "long-works"
    ok = requests.patch(path, data=json.dumps({"severity_level": "INFO"}),
                        headers={**auth(env), "If-Match": r.headers["ETag"],
                                 "Content-Type": "application/merge-patch+json"}, timeout=10)
    assert ok.status_code == 200

    def listed(coding):
        r = requests.get(url(env, "/v1/alerts?limit=100"), headers={"Accept-Encoding": coding},
                         timeout=10, stream=True)
        raw = r.raw.read(decode_content=False)
        return r, (brotli.decompress(raw) if r.headers.get("Content-Encoding") == "br" else raw)

    before, body = listed("br")
    assert before.headers["Content-Encoding"] == "br"
    assert listed("br")[1] == body == listed("identity")[1]
    requests.patch(path, data=json.dumps({"severity_level": "SEVERE"}),
                   headers={**auth(env), "Content-Type": "application/merge-patch+json"}, timeout=10)
    after, body_after = listed("br")
    assert after.headers["ETag"] != before.headers["ETag"]
    assert body_after == listed("identity")[1] != body
    severity = {a["id"]: a.get("severity_level") for a in json.loads(body_after)["alerts"]}
    assert severity["long-works"] == "SEVERE"


def test_alerts_survive_restart_and_reimport(env, tmp_path):
    data = tmp_path / "data"
    import_feed(demo_feed(1), data)
    tokens = tmp_path / "tokens"
    token = make_token(tokens)
    h = {"Authorization": f"Bearer {token}", **JSON}
    with Server(data, "--tokens", str(tokens)) as s:
        r = requests.put(s.url("/v1/alerts/keep-me"), data=json.dumps(alert_body()), headers=h,
                         timeout=10)
        assert r.status_code == 201
        kept = r.json()
    import_feed(demo_feed(2), data)        # another feed version becomes active
    with Server(data, "--tokens", str(tokens)) as s:
        assert requests.get(s.url("/v1/alerts/keep-me"), timeout=10).json() == kept


# Another server notices a write at its next look at live.sqlite (about a
# second); the bound leaves room for a loaded CI machine under sanitizers.
CROSS_PROCESS_BOUND_S = 20


def test_another_process_sees_writes_within_seconds(env):
    with Server(env["data"], "--tokens", str(env["tokens"])) as other:
        requests.put(url(env, "/v1/alerts/cross-process"), data=json.dumps(alert_body()),
                     headers=auth(env), timeout=10)
        deadline = time.time() + CROSS_PROCESS_BOUND_S
        while time.time() < deadline:
            if requests.get(other.url("/v1/alerts/cross-process"), timeout=10).status_code == 200:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"the second server did not see the write within {CROSS_PROCESS_BOUND_S} s")
        requests.delete(other.url("/v1/alerts/cross-process"), headers=auth(env), timeout=10)
        deadline = time.time() + CROSS_PROCESS_BOUND_S
        while requests.get(url(env, "/v1/alerts/cross-process"), timeout=10).status_code != 404:
            assert time.time() < deadline, "the first server still shows a deleted alert"
            time.sleep(0.2)


def test_query_cli_shows_the_same_alerts_as_the_server(env):
    requests.put(url(env, "/v1/alerts/cli-parity"), data=json.dumps(alert_body()), headers=auth(env),
                 timeout=10)
    http_body = requests.get(url(env, f"/v1/stops/{STATION}/departures?time={WHEN}&limit=5"),
                             timeout=10).content
    p = subprocess.run([transitd_bin(), "query", "--data", str(env["data"]), "stop-departures",
                        "--stop", STATION, "--time", WHEN, "--limit", "5"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    assert p.stdout.rstrip(b"\n") == http_body
    assert b"cli-parity" in p.stdout
    listed = subprocess.run([transitd_bin(), "query", "--data", str(env["data"]), "alert",
                             "cli-parity"], stdout=subprocess.PIPE, check=True).stdout
    assert json.loads(listed) == requests.get(url(env, "/v1/alerts/cli-parity"), timeout=10).json()


def test_metrics_count_alerts(env):
    text = requests.get(url(env, "/metrics"), timeout=10).text
    stored = int(re.search(r"^transitd_alerts (\d+)$", text, re.M).group(1))
    assert stored == len(listing(env))
    generation = int(re.search(r"^transitd_alerts_generation (\d+)$", text, re.M).group(1))
    requests.put(url(env, "/v1/alerts/metrics-1"), data=json.dumps(alert_body(active_period=[
        {"start": "2020-01-01T00:00:00Z", "end": "2020-01-02T00:00:00Z"}])), headers=auth(env),
        timeout=10)
    after = requests.get(url(env, "/metrics"), timeout=10).text
    assert int(re.search(r"^transitd_alerts_generation (\d+)$", after, re.M).group(1)) > generation
    active = int(re.search(r"^transitd_alerts_active (\d+)$", after, re.M).group(1))
    assert active < int(re.search(r"^transitd_alerts (\d+)$", after, re.M).group(1))
