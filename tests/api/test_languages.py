"""Languages (#27): translations.txt imported, and Accept-Language choosing the
names in responses (stop, route and agency names and headsigns) and the alerts'
texts (each TranslatedString's one text, every translation kept), with
Content-Language, Vary: Accept-Language, and ETags, 304s, the compressed bodies
and pushed boards per language.

The feed is the demo feed (bench/gtfs_gen.py --scale demo, seed 1), whose
language is German (feed_info.feed_lang de), with English and French
translations added: by record_id and by field_value, a record_id row winning
over a field_value row of the same text, and three bad rows the import must
name and skip. Needs nothing from ../shared.
"""
import csv
import io
import json
import re
import shutil
import subprocess
import time
import urllib.parse
import zipfile

import pytest
import requests

import schema_check
from http_server import Server, TMP, demo_feed, transitd_bin

DOC = schema_check.load_openapi()
STATION_ID = "de:11000:900100001"          # "U Grabenbrücke"
STATION = urllib.parse.quote(STATION_ID, safe="")
BRITZ = "U Stadion Britz"                  # a stop name translated by field_value
TOWARDS = "U Brunnengasse/Tannensteig"     # route 10000_1's headsign (trips 1000001...)
WHEN = "2026-11-23T08:00"

TRANSLATIONS = [
    # table_name, field_name, language, translation, record_id, record_sub_id, field_value
    ("stops", "stop_name", "en", "U Ditch Bridge", STATION_ID, "", ""),
    ("stops", "stop_name", "fr", "U Pont du Fossé", STATION_ID, "", ""),
    ("stops", "stop_name", "en", "U Britz Stadium", "", "", BRITZ),
    ("stops", "stop_name", "en", "U Ditch Bridge (platform 1)", STATION_ID + "::1", "", ""),
    ("trips", "trip_headsign", "en", "U Fountain Lane", "", "", TOWARDS),
    ("trips", "trip_headsign", "fr", "U Ruelle de la Fontaine", "", "", TOWARDS),
    ("trips", "trip_headsign", "en", "U Fountain Lane (first)", "1000001", "", ""),
    ("routes", "route_long_name", "en", "U Ditch Bridge – U Fountain Lane", "10000_1", "", ""),
    ("routes", "route_short_name", "fr", "U un", "10000_1", "", ""),
    ("agency", "agency_name", "en", "Demo Transit Berlin", "DVB", "", ""),
    ("agency", "agency_name", "fr", "Transports de démonstration de Berlin", "DVB", "", ""),
    # bad rows (lines 13, 14 and 15 of translations.txt): named and skipped
    ("levels", "level_name", "en", "Ground", "L1", "", ""),
    ("stops", "stop_name", "en", "Nowhere", "", "", ""),
    ("stops", "stop_name", "e_n", "Bad tag", STATION_ID, "", ""),
]


def translated_feed(path):
    src = zipfile.ZipFile(demo_feed(1))
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["table_name", "field_name", "language", "translation", "record_id", "record_sub_id",
                "field_value"])
    w.writerows(TRANSLATIONS)
    with zipfile.ZipFile(path, "w") as z:
        for name in src.namelist():
            z.writestr(name, src.read(name))
        z.writestr("translations.txt", out.getvalue())
    return path


@pytest.fixture(scope="module")
def imported():
    base = TMP / "languages"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    feed = translated_feed(base / "translated.zip")
    p = subprocess.run([transitd_bin(), "import", str(feed), "--data", str(base / "data"), "--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return base, json.loads(p.stdout)


@pytest.fixture(scope="module")
def server(imported):
    base, _ = imported
    with Server(base / "data") as s:
        yield s


def get(server, path, language=None, **headers):
    if language is not None:
        headers["Accept-Language"] = language
    r = requests.get(server.url(path), headers=headers, timeout=10)
    assert r.status_code == 200, r.text
    return r


def vary(r):
    return [v.strip().lower() for v in r.headers.get("Vary", "").split(",")]


def test_bad_rows_are_named_and_skipped(imported):
    _, summary = imported
    examples = summary["examples"]
    assert "translations.txt:13: table_name 'levels' with field_name 'level_name' is not translated here" \
        in examples, examples
    assert "translations.txt:14: record_id or field_value is required" in examples, examples
    assert "translations.txt:15: language 'e_n' is not a language tag" in examples, examples
    assert summary["problems"] == {"bad_value": 2, "missing_value": 1}


def test_stop_name_by_record_id(server):
    for language, name, content in [(None, "U Grabenbrücke", "de"), ("en", "U Ditch Bridge", "en"),
                                    ("fr", "U Pont du Fossé", "fr"), ("de", "U Grabenbrücke", "de")]:
        r = get(server, f"/v1/stops/{STATION}", language)
        assert r.json()["stop"]["name"] == name
        assert r.headers["Content-Language"] == content
        assert "accept-language" in vary(r) and "accept-encoding" in vary(r)
        assert not schema_check.validate(r.json(), schema_check.response_schema(DOC, "/v1/stops/{id}"), DOC)


def test_stop_name_by_field_value(server):
    stops = get(server, "/v1/stops/nearby?lat=52.524206&lon=13.272858&radius=50", "en").json()["stops"]
    assert "U Britz Stadium" in [s["name"] for s in stops]
    stops = get(server, "/v1/stops/nearby?lat=52.524206&lon=13.272858&radius=50", "fr").json()["stops"]
    assert BRITZ in [s["name"] for s in stops]   # no French for it: the feed's own


@pytest.mark.parametrize("header,content", [
    ("fr;q=0.5, en;q=0.8", "en"),
    ("en;q=0.5, fr", "fr"),
    ("it, fr;q=0.1", "fr"),
    ("it", "de"),
    ("*", "de"),
    ("de-CH, en;q=0.5", "de"),      # de-CH falls back to de, the feed's own
    ("en-GB", "en"),
    ("EN", "en"),
    ("fr;q=0, en;q=0.1", "en"),
    (";;;, q=x, \u00e9", "de"),     # cannot be read: ignored, never a 400
    ("", "de"),
])
def test_q_values_and_fallback(server, header, content):
    r = requests.get(server.url(f"/v1/stops/{STATION}"), headers={"Accept-Language": header.encode("utf-8")},
                     timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Language"] == content
    expected = {"de": "U Grabenbrücke", "en": "U Ditch Bridge", "fr": "U Pont du Fossé"}[content]
    assert r.json()["stop"]["name"] == expected


def test_board_rows_and_stop_object(server):
    path = f"/v1/stops/{STATION}/departures?time={WHEN}&window=240&limit=50"
    de = get(server, path).json()
    en = get(server, path, "en").json()
    fr = get(server, path, "fr").json()
    assert (de["stop"]["name"], en["stop"]["name"], fr["stop"]["name"]) == (
        "U Grabenbrücke", "U Ditch Bridge", "U Pont du Fossé")
    assert len(de["departures"]) == len(en["departures"]) == len(fr["departures"]) > 0
    for d, e, f in zip(de["departures"], en["departures"], fr["departures"]):
        assert d["trip_id"] == e["trip_id"] == f["trip_id"]
        if d["headsign"] == TOWARDS:
            assert e["headsign"] == ("U Fountain Lane (first)" if d["trip_id"] == "1000001" else "U Fountain Lane")
            assert f["headsign"] == "U Ruelle de la Fontaine"
        else:
            assert e["headsign"] == f["headsign"] == d["headsign"]
        if d["route_id"] == "10000_1":
            assert e["route_long_name"] == "U Ditch Bridge – U Fountain Lane"
            assert f["route_short_name"] == "U un"
            assert e["route_short_name"] == d["route_short_name"] == "U1"
    assert any(d["route_id"] == "10000_1" for d in de["departures"])
    schema = schema_check.response_schema(DOC, "/v1/stops/{id}/departures")
    assert not schema_check.validate(en, schema, DOC)
    # the nearby board's rows carry stop names too
    near = get(server, f"/v1/departures?lat=52.527059&lon=13.234300&radius=300&time={WHEN}&window=60",
               "en").json()["departures"]
    assert "U Ditch Bridge (platform 1)" in [d["stop_name"] for d in near]


def test_trip_route_and_agencies(server):
    trip = get(server, "/v1/trips/1000001?date=2026-11-23", "en").json()["trip"]
    assert trip["headsign"] == "U Fountain Lane (first)"
    assert trip["stop_times"][0]["stop_name"] == "U Ditch Bridge (platform 1)"
    trip = get(server, "/v1/trips/1000002?date=2026-11-23", "fr").json()["trip"]
    assert trip["headsign"] == "U Ruelle de la Fontaine"
    route = get(server, "/v1/routes/10000_1", "en").json()["route"]
    assert route["long_name"] == "U Ditch Bridge – U Fountain Lane"
    assert "U Ditch Bridge (platform 1)" in [s["stop_name"] for p in route["patterns"] for s in p["stops"]]
    routes = {r["id"]: r for r in get(server, "/v1/routes", "fr").json()["routes"]}
    assert routes["10000_1"]["short_name"] == "U un"
    agencies = {a["id"]: a["name"] for a in get(server, "/v1/agencies", "en").json()["agencies"]}
    assert agencies["DVB"] == "Demo Transit Berlin"
    agencies = {a["id"]: a["name"] for a in get(server, "/v1/agencies", "fr").json()["agencies"]}
    assert agencies["DVB"] == "Transports de démonstration de Berlin"
    assert agencies["SOST"] == 'Shuttle-Gesellschaft "Ost", Müller & Söhne'


def test_etag_and_304_per_language(server):
    path = f"/v1/stops/{STATION}"
    tags = {}
    for language in ["de", "en", "fr"]:
        tags[language] = get(server, path, language).headers["ETag"]
    assert len(set(tags.values())) == 3
    assert get(server, path).headers["ETag"] == tags["de"]        # no header: the feed's own
    assert get(server, path, "de-AT").headers["ETag"] == tags["de"]
    for language, tag in tags.items():
        r = requests.get(server.url(path), headers={"Accept-Language": language, "If-None-Match": tag},
                         timeout=10)
        assert r.status_code == 304
        assert r.headers["Content-Language"] == language
        other = "en" if language != "en" else "fr"
        r = requests.get(server.url(path), headers={"Accept-Language": other, "If-None-Match": tag},
                         timeout=10)
        assert r.status_code == 200 and r.headers["Content-Language"] == other


def test_compressed_bodies_per_language(server):
    path = f"/v1/stops/{STATION}/departures?time={WHEN}&window=240&limit=50"
    for encoding in ["gzip", "br"]:
        for _ in range(2):   # the second time from the compressed-body cache
            bodies = {}
            for language in ["de", "en", "fr"]:
                r = get(server, path, language, **{"Accept-Encoding": encoding})
                assert r.headers.get("Content-Encoding") == encoding
                assert r.headers["Content-Language"] == language
                bodies[language] = r.json()["stop"]["name"]
            assert bodies == {"de": "U Grabenbrücke", "en": "U Ditch Bridge", "fr": "U Pont du Fossé"}


def test_routes_that_do_not_vary(server):
    r = get(server, "/v1/feed", "en")
    assert "Content-Language" not in r.headers
    assert "accept-language" not in vary(r)


def test_a_dataset_without_translations_answers_as_before():
    base = TMP / "languages-none"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    p = subprocess.run([transitd_bin(), "import", demo_feed(1), "--data", str(base / "data"), "--quiet"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    with Server(base / "data") as s:
        plain = get(s, f"/v1/stops/{STATION}")
        asked = get(s, f"/v1/stops/{STATION}", "en")
        assert plain.content == asked.content
        assert plain.headers["ETag"] == asked.headers["ETag"]
        for r in (plain, asked):
            assert "Content-Language" not in r.headers
            assert vary(r) == ["accept-encoding"]


def test_pushed_boards_per_language(imported):
    from test_board_streams import EventStream
    base, _ = imported
    path = f"/v1/stops/{STATION}/departures?time={WHEN}&window=240&limit=5"
    with Server(base / "data", "--max-streams", "3", "--stream-keepalive", "1") as s:
        streams = {language: EventStream(s.port, path, [f"Accept-Language: {language}"])
                   for language in ["en", "fr"]}
        try:
            for language, name in [("en", "U Ditch Bridge"), ("fr", "U Pont du Fossé")]:
                st = streams[language]
                assert st.status == 200
                assert st.headers["content-language"] == language
                assert [v.strip() for v in st.headers["vary"].split(",")] == ["Accept", "Accept-Language"]
                event = st.next_event()
                assert event["event"] == "board"
                assert json.loads(event["data"])["stop"]["name"] == name
        finally:
            for st in streams.values():
                st.close()


# ------------------------------------------------------------ alert texts

ALERT = {
    "informed_entity": [{"stop_id": STATION_ID}],
    "effect": "DETOUR",
    "active_period": [{"start": "2026-11-01T00:00:00Z", "end": "2026-12-01T00:00:00Z"}],
    "header_text": {"translation": [{"text": "Travaux", "language": "fr"},
                                    {"text": "Bauarbeiten", "language": "de"},
                                    {"text": "Works", "language": "en"}]},
    "description_text": {"translation": [{"text": "Use exit B", "language": "en"}]},
    "url": {"translation": [{"text": "https://example.com/works"},
                            {"text": "https://example.com/fr/travaux", "language": "fr"}]},
}


@pytest.fixture(scope="module")
def writable(imported):
    """A server on the translated feed (feed language de) that takes alert writes."""
    base, _ = imported
    tokens = base / "tokens"
    tokens.unlink(missing_ok=True)
    p = subprocess.run([transitd_bin(), "token", "new", "--tokens", str(tokens), "--name", "ops"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
    token = p.stdout.strip()
    with Server(base / "data", "--tokens", str(tokens)) as s:
        s.auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        r = requests.put(s.url("/v1/alerts/works"), data=json.dumps(ALERT), headers=s.auth, timeout=10)
        assert r.status_code == 201, r.text
        yield s


def texts(alert):
    return tuple(None if alert[k] is None else (alert[k]["text"], alert[k].get("language"))
                 for k in ("header_text", "description_text", "url"))


@pytest.mark.parametrize("header,expected,content", [
    # no header: the feed's language (de); a text without it: the untagged one, else the first
    (None, (("Bauarbeiten", "de"), ("Use exit B", "en"), ("https://example.com/works", None)), "de, en"),
    ("fr", (("Travaux", "fr"), ("Use exit B", "en"), ("https://example.com/fr/travaux", "fr")), "fr, en"),
    ("en-GB, fr;q=0.5", (("Works", "en"), ("Use exit B", "en"), ("https://example.com/fr/travaux", "fr")),
     "en, fr"),
    ("it", (("Bauarbeiten", "de"), ("Use exit B", "en"), ("https://example.com/works", None)), "de, en"),
    ("*", (("Bauarbeiten", "de"), ("Use exit B", "en"), ("https://example.com/works", None)), "de, en"),
    ("it, *;q=0.5, fr;q=0.1", (("Bauarbeiten", "de"), ("Use exit B", "en"), ("https://example.com/works", None)),
     "de, en"),
])
def test_alert_texts_by_accept_language(writable, header, expected, content):
    for path in ["/v1/alerts/works", "/v1/alerts"]:
        r = get(writable, path, header)
        body = r.json()
        alert = body if path == "/v1/alerts/works" else body["alerts"][0]
        assert texts(alert) == expected
        # every translation is kept, as written
        for k in ("header_text", "description_text", "url"):
            assert alert[k]["translation"] == ALERT[k]["translation"]
        assert "accept-language" in vary(r)
        assert r.headers["Content-Language"] == content
        api_path = "/v1/alerts/{id}" if path == "/v1/alerts/works" else "/v1/alerts"
        assert not schema_check.validate(body, schema_check.response_schema(DOC, api_path), DOC)


def test_alert_fallbacks_without_the_feeds_language(writable):
    """Without the feed's language: the untagged translation, else the first."""
    bodies = {
        "untagged": {"translation": [{"text": "Notice", "language": "en"}, {"text": "Hinweis"}]},
        "first": {"translation": [{"text": "Avis", "language": "fr"}, {"text": "Notice", "language": "en"}]},
    }
    for name, header_text in bodies.items():
        r = requests.put(writable.url(f"/v1/alerts/fallback-{name}"),
                         data=json.dumps({**ALERT, "header_text": header_text}), headers=writable.auth, timeout=10)
        assert r.status_code == 201, r.text
    plain = get(writable, "/v1/alerts/fallback-untagged").json()["header_text"]
    assert (plain["text"], plain.get("language")) == ("Hinweis", None)
    assert get(writable, "/v1/alerts/fallback-untagged", "en").json()["header_text"]["text"] == "Notice"
    assert get(writable, "/v1/alerts/fallback-first").json()["header_text"]["text"] == "Avis"
    assert get(writable, "/v1/alerts/fallback-first", "en, fr").json()["header_text"]["text"] == "Notice"
    for name in bodies:
        assert requests.delete(writable.url(f"/v1/alerts/fallback-{name}"), headers=writable.auth,
                               timeout=10).status_code == 204


def test_alert_etags_304_and_if_match_per_language(writable):
    one = "/v1/alerts/works"
    tags = {language: get(writable, one, language).headers["ETag"] for language in ["fr", "en", "it"]}
    plain = get(writable, one).headers["ETag"]
    assert re.fullmatch(r'"\d+"', plain) and tags["it"] == plain          # nothing ranked: the plain revision
    assert re.fullmatch(r'"\d+-[0-9a-f]{8}"', tags["fr"]) and len({tags["fr"], tags["en"], plain}) == 3
    assert get(writable, one, "fr-CA").headers["ETag"] == tags["fr"]
    for language in ["fr", "en"]:
        r = requests.get(writable.url(one), headers={"Accept-Language": language, "If-None-Match": tags[language]},
                         timeout=10)
        assert r.status_code == 304
        other = "en" if language == "fr" else "fr"
        r = requests.get(writable.url(one), headers={"Accept-Language": other, "If-None-Match": tags[language]},
                         timeout=10)
        assert r.status_code == 200 and r.headers["ETag"] == tags[other]
    # the list's weak ETag and 304s are per language too
    listed = {language: get(writable, "/v1/alerts", language).headers["ETag"] for language in ["fr", "en"]}
    assert listed["fr"] != listed["en"] and get(writable, "/v1/alerts", "fr-CH").headers["ETag"] == listed["fr"]
    r = requests.get(writable.url("/v1/alerts"), headers={"Accept-Language": "fr", "If-None-Match": listed["fr"]},
                     timeout=10)
    assert r.status_code == 304
    r = requests.get(writable.url("/v1/alerts"), headers={"Accept-Language": "en", "If-None-Match": listed["fr"]},
                     timeout=10)
    assert r.status_code == 200 and r.json()["alerts"][0]["header_text"]["text"] == "Works"
    # a GET body in French PUT back with its French ETag: the same alert, a new revision
    got = get(writable, one, "fr")
    r = requests.put(writable.url(one), data=got.content,
                     headers={**writable.auth, "If-Match": got.headers["ETag"], "Accept-Language": "fr"}, timeout=10)
    assert r.status_code == 200, r.text
    assert texts(r.json()) == texts(got.json()) and r.json()["revision"] > got.json()["revision"]
    assert r.headers["ETag"] != got.headers["ETag"] and r.headers["ETag"].endswith(got.headers["ETag"][-10:])
    # ... but not with an old revision in any language
    r = requests.put(writable.url(one), data=got.content,
                     headers={**writable.auth, "If-Match": got.headers["ETag"]}, timeout=10)
    assert r.status_code == 412


def test_alert_text_is_read_only_on_writes(writable):
    r = requests.patch(writable.url("/v1/alerts/works"), data=json.dumps({"header_text": {"text": "Edited"}}),
                       headers={**writable.auth, "Content-Type": "application/merge-patch+json"}, timeout=10)
    assert r.status_code == 422 and r.json()["pointer"] == "/header_text/text", r.text
    # a POSTed alert answers in the writer's language
    r = requests.post(writable.url("/v1/alerts"), data=json.dumps(ALERT),
                      headers={**writable.auth, "Accept-Language": "en"}, timeout=10)
    assert r.status_code == 201, r.text
    assert r.json()["header_text"]["text"] == "Works" and "accept-language" in vary(r)
    assert requests.delete(writable.url(r.headers["Location"]), headers=writable.auth,
                           timeout=10).status_code == 204


def test_alert_texts_on_boards_and_stops(writable):
    path = f"/v1/stops/{STATION}/departures?time={WHEN}&window=240&limit=5"
    for language, name, text in [(None, "U Grabenbrücke", "Bauarbeiten"), ("fr", "U Pont du Fossé", "Travaux"),
                                 ("en", "U Ditch Bridge", "Works"), ("it", "U Grabenbrücke", "Bauarbeiten")]:
        for p in [path, f"/v1/stops/{STATION}"]:
            r = get(writable, p, language)
            body = r.json()
            assert body["stop"]["name"] == name
            works = [a for a in body["alerts"] if a["id"] == "works"]
            assert works and works[0]["header_text"]["text"] == text, (p, language)
            # the names' language is the Content-Language of the ten operations
            assert r.headers["Content-Language"] == {"fr": "fr", "en": "en"}.get(language, "de")
    # the same board, gzip'd twice (the second from the compressed-body cache), per alert language
    for _ in range(2):
        for language, text in [("fr", "Travaux"), ("en", "Works")]:
            r = get(writable, path, language, **{"Accept-Encoding": "gzip"})
            assert r.headers.get("Content-Encoding") == "gzip"
            assert [a for a in r.json()["alerts"] if a["id"] == "works"][0]["header_text"]["text"] == text


def test_alert_texts_on_a_dataset_without_translations():
    """The names have one language; the alerts' texts still follow Accept-Language."""
    base = TMP / "languages-alerts-plain"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    p = subprocess.run([transitd_bin(), "import", demo_feed(1), "--data", str(base / "data"), "--quiet"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    tokens = base / "tokens"
    token = subprocess.run([transitd_bin(), "token", "new", "--tokens", str(tokens), "--name", "ops"],
                           stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    with Server(base / "data", "--tokens", str(tokens)) as s:
        auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        assert requests.put(s.url("/v1/alerts/works"), data=json.dumps(ALERT), headers=auth,
                            timeout=10).status_code == 201
        path = f"/v1/stops/{STATION}/departures?time={WHEN}&window=240&limit=5"
        fr = get(s, path, "fr")
        assert [a for a in fr.json()["alerts"] if a["id"] == "works"][0]["header_text"]["text"] == "Travaux"
        assert "accept-language" in vary(fr) and fr.headers["Content-Language"] == "fr, en"
        assert get(s, path, "en").headers["ETag"] != fr.headers["ETag"]
        assert fr.json()["stop"]["name"] == "U Grabenbrücke"
        # one translation per text: nothing varies, as before
        assert requests.put(s.url("/v1/alerts/works"), data=json.dumps({**ALERT, "header_text": {
            "translation": [{"text": "Works", "language": "en"}]}, "url": None}), headers=auth,
            timeout=10).status_code == 200
        plain, asked = get(s, path), get(s, path, "fr")
        assert plain.content == asked.content and plain.headers["ETag"] == asked.headers["ETag"]
        assert "accept-language" not in vary(asked) and "Content-Language" not in asked.headers


def test_pushed_boards_follow_alert_languages(writable):
    from test_board_streams import EventStream
    path = f"/v1/stops/{STATION}/departures?time={WHEN}&window=240&limit=5"
    streams = {language: EventStream(writable.port, path, [f"Accept-Language: {language}"])
               for language in ["en-US", "it"]}
    try:
        for language, text in [("en-US", "Works"), ("it", "Bauarbeiten")]:
            st = streams[language]
            assert st.status == 200
            event = json.loads(st.next_event()["data"])
            assert [a for a in event["alerts"] if a["id"] == "works"][0]["header_text"]["text"] == text
        # an alert written while they listen: each stream gets it in its language
        r = requests.put(writable.url("/v1/alerts/works-more"), data=json.dumps({**ALERT, "header_text": {
            "translation": [{"text": "Mehr Bauarbeiten", "language": "de"},
                            {"text": "More works", "language": "en"}]}}), headers=writable.auth, timeout=10)
        assert r.status_code == 201
        for language, text in [("en-US", "More works"), ("it", "Mehr Bauarbeiten")]:
            event = json.loads(streams[language].next_event()["data"])
            assert [a for a in event["alerts"] if a["id"] == "works-more"][0]["header_text"]["text"] == text
    finally:
        for st in streams.values():
            st.close()
        requests.delete(writable.url("/v1/alerts/works-more"), headers=writable.auth, timeout=10)


# ------------------------------------------------------------ the places names are lists or realtime's

def test_a_stops_and_a_routes_headsign_lists(server):
    """Headsigns that stand for many trips are translated as text (by field_value, else a trip's)."""
    stop = get(server, f"/v1/stops/{STATION}", "en").json()["stop"]
    heads = [h for r in stop["routes"] if r["id"] == "10000_1" for h in r["headsigns"]]
    assert "U Fountain Lane" in heads and TOWARDS not in heads
    body = get(server, f"/v1/stops/{STATION}", "fr").json()
    assert not schema_check.validate(body, schema_check.response_schema(DOC, "/v1/stops/{id}"), DOC)
    stop = body["stop"]
    assert "U Ruelle de la Fontaine" in [h for r in stop["routes"] if r["id"] == "10000_1" for h in r["headsigns"]]
    plain = get(server, f"/v1/stops/{STATION}").json()["stop"]
    assert TOWARDS in [h for r in plain["routes"] if r["id"] == "10000_1" for h in r["headsigns"]]
    route = get(server, "/v1/routes/10000_1", "en").json()["route"]
    heads = [h for p in route["patterns"] for h in p["headsigns"]]
    assert "U Fountain Lane" in heads and TOWARDS not in heads


def test_stop_search_answers_in_the_language(server):
    found = get(server, "/v1/stops?q=Grabenbr%C3%BCcke", "en").json()["stops"]
    assert "U Ditch Bridge" in [s["name"] for s in found]
    found = get(server, "/v1/stops?q=Grabenbr%C3%BCcke").json()["stops"]
    assert "U Grabenbrücke" in [s["name"] for s in found]
    # the names of the language are searched too, first: words by prefix, ASCII case and accents folded
    found = get(server, "/v1/stops?q=ditch", "en").json()
    assert [s["name"] for s in found["stops"]][:2] == ["U Ditch Bridge", "U Ditch Bridge (platform 1)"]
    assert not schema_check.validate(found, schema_check.response_schema(DOC, "/v1/stops"), DOC)
    assert [s["name"] for s in get(server, "/v1/stops?q=pont%20FOSSE", "fr").json()["stops"]] == ["U Pont du Fossé"]
    assert [s["name"] for s in get(server, "/v1/stops?q=Fos", "fr").json()["stops"]] == ["U Pont du Fossé"]
    assert get(server, "/v1/stops?q=ditch").json()["stops"] == []            # not the feed's names
    assert get(server, "/v1/stops?q=ditch", "fr").json()["stops"] == []      # nor another language's
    # paging goes through both: the translated matches, then the feed's
    both = get(server, "/v1/stops?q=U&limit=500", "en").json()["stops"]
    first = get(server, "/v1/stops?q=U&limit=2", "en").json()
    assert [s["id"] for s in first["stops"]] == [s["id"] for s in both[:2]] and first["next"]
    second = get(server, first["next"], "en").json()
    assert [s["id"] for s in second["stops"]] == [s["id"] for s in both[2:4]]
    assert len({s["id"] for s in both}) == len(both)


@pytest.fixture(scope="module")
def realtime_translated():
    """test_realtime_trips.py's feed and trip updates (NEW X1 "Extra to B", DUPLICATED K0900) with French names."""
    from test_realtime_trips import FEED, updates
    base = TMP / "languages-realtime"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    rows = [("trips", "trip_headsign", "fr", "Vers B", "", "", "To B"),
            ("trips", "trip_headsign", "fr", "Supplément vers B", "", "", "Extra to B"),
            ("routes", "route_short_name", "fr", "neuf", "R", "", ""),
            ("stops", "stop_name", "fr", "Quai A", "A", "", "")]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["table_name", "field_name", "language", "translation", "record_id", "record_sub_id", "field_value"])
    w.writerows(rows)
    with zipfile.ZipFile(base / "feed.zip", "w") as z:
        for name, text in FEED.items():
            z.writestr(name, text)
        z.writestr("feed_info.txt", "feed_publisher_name,feed_publisher_url,feed_lang\nT,https://example.com,en\n")
        z.writestr("translations.txt", out.getvalue())
    p = subprocess.run([transitd_bin(), "import", str(base / "feed.zip"), "--data", str(base / "data"), "--quiet"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    (base / "rt.pb").write_bytes(updates())
    with Server(base / "data", "--gtfs-rt", str(base / "rt.pb"), "--rt-interval", "30") as s:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if "X1" in [d["trip_id"] for d in requests.get(s.url("/v1/stops/A/departures"), params={
                    "time": "2026-11-02T09:00:00-05:00"}, timeout=10).json()["departures"]]:
                break
            time.sleep(0.1)
        yield s


def test_realtime_added_rows_and_trips(realtime_translated):
    s = realtime_translated
    path = "/v1/stops/A/departures?time=2026-11-02T09:00:00-05:00&window=60"
    rows = {d["trip_id"]: d for d in get(s, path, "fr").json()["departures"]}
    assert rows["X1"]["added"] is True and rows["X1"]["headsign"] == "Supplément vers B"
    assert rows["X1"]["route_short_name"] == "neuf"
    assert rows["K0900-dup"]["trip_relationship"] == "DUPLICATED" and rows["K0900-dup"]["headsign"] == "Vers B"
    assert rows["K0900"]["headsign"] == "Vers B" and rows["K0900"]["route_short_name"] == "neuf"
    plain = {d["trip_id"]: d for d in get(s, path, "en").json()["departures"]}
    assert plain["X1"]["headsign"] == "Extra to B" and plain["X1"]["route_short_name"] == "9"
    near = get(s, "/v1/departures?lat=40.0&lon=-74.0&radius=100&time=2026-11-02T09:00:00-05:00&window=60",
               "fr").json()["departures"]
    x1 = [d for d in near if d["trip_id"] == "X1"][0]
    assert x1["headsign"] == "Supplément vers B" and x1["stop_name"] == "Quai A"
    trip = get(s, "/v1/trips/X1", "fr").json()["trip"]
    assert trip["realtime_only"] is True and trip["headsign"] == "Supplément vers B"
    assert get(s, "/v1/trips/X1", "en").json()["trip"]["headsign"] == "Extra to B"
    assert get(s, "/v1/stops/A", "fr").json()["stop"]["routes"][0]["headsigns"] == ["Vers B"]


def test_vehicles_carry_no_names(realtime_translated):
    """/v1/vehicles gives ids, positions and its trip's ids, no name or headsign: nothing in it follows
    Accept-Language, so it neither varies nor says a Content-Language."""
    r = get(realtime_translated, "/v1/vehicles", "fr")
    assert "Content-Language" not in r.headers and "accept-language" not in vary(r)
    vehicle = DOC["components"]["schemas"]["Vehicle"]
    names = {"name", "headsign", "route_short_name", "route_long_name", "stop_name", "trip_headsign"}
    assert not names & set(json.dumps(vehicle).replace('"', " ").split())
