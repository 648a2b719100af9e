"""A real headless browser for the page tests: Chromium's own --screenshot and
--dump-dom, and a PNG reader to prove a screenshot shows something.

Why it exists: the landing page and the API reference are for people, so
they are tested the way people see them: Chromium loads them from a running
transitd, runs their script, and the tests read the resulting DOM and look at
the pixels. The machine may have no outside network: Chromium starts with
every background fetch off and a fresh profile, and the pages themselves
fetch nothing from another host. Only the standard library is used.
"""
import os
import shutil
import struct
import subprocess
import tempfile
import zlib

from conftest import tool_or_skip

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome",
                  "/Applications/Chromium.app/Contents/MacOS/Chromium",
                  "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--mute-audio"]


def chromium():
    return tool_or_skip(*CHROMIUM_NAMES)


def run(url, *args, budget_ms=5000, timeout=90):
    """Runs Chromium once on url with a fresh profile; returns stdout. The
    virtual-time budget lets the page's script and its fetches finish first."""
    profile = tempfile.mkdtemp(prefix="transitd-chromium-")
    try:
        p = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}",
                            f"--virtual-time-budget={budget_ms}", *args, url],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           text=True, errors="replace")
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert p.returncode == 0, f"chromium exited {p.returncode}:\n{p.stderr[-3000:]}"
    return p.stdout


def dump_dom(url, **kw):
    """The DOM after the page's script ran, serialised as HTML."""
    return run(url, "--dump-dom", **kw)


def screenshot(url, path, width=1280, height=1000, **kw):
    """Writes a PNG of the page's first width x height pixels to path."""
    path = os.path.abspath(path)
    if os.path.exists(path):
        os.unlink(path)
    run(url, f"--screenshot={path}", f"--window-size={width},{height}", **kw)
    assert os.path.exists(path), f"chromium wrote no screenshot to {path}"
    return path


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path):
    """(width, height, rows): rows of RGB(A) byte strings, for 8-bit RGB or
    RGBA non-interlaced PNGs (what Chromium writes). Fails on anything else,
    so a truncated or bogus file never passes."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        assert zlib.crc32(kind + chunk) == crc, f"{path}: bad CRC in {kind!r}"
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        elif kind == b"IEND":
            break
        pos += 12 + length
    assert header, f"{path} has no IHDR"
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, f"{path}: unsupported PNG {header}"
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    assert len(raw) == height * (stride + 1), f"{path}: pixel data has the wrong size"
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                line[i] = (line[i] + _paeth(a, b, c)) & 255
            else:
                assert ftype == 0, f"{path}: unknown filter {ftype}"
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def png_summary(path, step=4):
    """(width, height, distinct colours, share of pixels unlike the most
    common colour), sampling every `step`-th pixel of every `step`-th row."""
    width, height, bpp, rows = read_png(path)
    counts = {}
    for row in rows[::step]:
        for x in range(0, width, step):
            px = row[x * bpp:x * bpp + 3]
            counts[px] = counts.get(px, 0) + 1
    total = sum(counts.values())
    background = max(counts.values())
    return width, height, len(counts), 1 - background / total
