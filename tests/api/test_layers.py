"""src/ is layered (docs/ARCHITECTURE.md): a file includes only headers of
its own layer or of the layers below it. This reads every #include of src/
and fails on one that reaches up, naming the file, the line and the header.

A public header (include/transit/X.h) belongs to the layer of the src/ file
that implements it (src/LAYER/X.c); the few without a file of their name are
listed in HEADER_LAYER.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

# what each layer may include besides itself (docs/ARCHITECTURE.md)
ALLOWED = {
    "base": set(),
    "store": {"base"},
    "live": {"base", "store"},
    "import": {"base", "store", "live"},
    "engine": {"base", "store", "live"},
    "api": {"base", "store", "live", "engine"},
    "serving": {"base", "store", "live", "engine", "api"},
    "http": {"base"},
    # the phone's library (libtransit_client.a): the server's queries, no serving, no HTTP
    "client": {"base", "store", "live", "engine", "api"},
    "cli": {"base", "store", "import", "live", "engine", "api", "serving", "http", "client"},
}

# public headers without a src/LAYER/NAME.c of their own
HEADER_LAYER = {
    "transit/query.h": "store",        # the dataset (store) and the queries (engine): see ARCHITECTURE.md
    "transit/stores.h": "store",
    "transit/timetable.h": "import",
    "transit/store_write.h": "import",
    "transit/version.h": "base",
    "transit/cli.h": "cli",
    "gtfs-realtime.pb-c.h": "live",    # generated at build time, for live/rt_feed.c and rt_encode.c
}


def header_layers():
    layers = dict(HEADER_LAYER)
    for c in SRC.glob("*/*.c"):
        layers.setdefault(f"transit/{c.stem}.h", c.parent.name)
    for h in SRC.glob("*/*.h"):
        layers[f"{h.parent.name}/{h.name}"] = h.parent.name
    return layers


def source_files(layers):
    """Every file of src/ and include/transit/, with its layer."""
    for f in sorted(SRC.glob("*/*.[ch]")):
        yield f, f.parent.name
    for h in sorted((ROOT / "include" / "transit").glob("*.h")):
        layer = layers.get(f"transit/{h.name}")
        if layer:
            yield h, layer


def violations():
    layers = header_layers()
    found = []
    for f, layer in source_files(layers):
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            target = layers.get(m.group(1))
            if target is None:
                found.append(f"{f.relative_to(ROOT)}:{n}: {m.group(1)} belongs to no layer")
            elif target != layer and target not in ALLOWED[layer]:
                found.append(f"{f.relative_to(ROOT)}:{n}: {layer}/ includes {m.group(1)} ({target}/)")
    return found


def test_every_source_file_is_in_a_layer():
    folders = {p.name for p in SRC.iterdir() if p.is_dir()}
    assert folders == set(ALLOWED), folders ^ set(ALLOWED)
    assert not list(SRC.glob("*.[ch]")), "src/ keeps its files in layer folders"


def test_no_layer_includes_one_above_it():
    assert violations() == []


def test_the_check_catches_an_upward_include(tmp_path, monkeypatch):
    """The rule is not vacuous: a store file that included the API would fail."""
    fake = tmp_path / "src"
    (fake / "store").mkdir(parents=True)
    (fake / "api").mkdir()
    (fake / "api" / "api.c").write_text("")
    (fake / "store" / "dataset.c").write_text('#include "transit/api.h"\n')
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert violations() == ["src/store/dataset.c:1: store/ includes transit/api.h (api/)"]
