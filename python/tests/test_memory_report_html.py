"""--memory-report=PLAN.html opened in headless Chromium: the screenshot shows
the plot's blocks in the category colours, the hatched recomputed block and
the budget line (issue 19's picture of the memory plan).

scripts/setup installs Chromium; scripts/test sets WEFT_REQUIRE_CHROMIUM=1 so
a missing browser fails there instead of skipping."""
import os
import shutil
import struct
import subprocess
import zlib

import pytest

from harness import REPO, tool

WIDE = os.path.join(REPO, "test", "Tools", "weft-compile", "Inputs", "wide.mlir")
# Category fills and the budget line's colour (lib/Target/MemoryReportHtml.cpp).
COLOURS = {"parameters": (0x4C, 0x72, 0xB0), "saved_activations": (0x55, 0xA8, 0x68),
           "temporaries": (0xC4, 0x4E, 0x52), "gradients": (0xDD, 0x84, 0x52)}
BUDGET = (0xE8, 0x00, 0x0B)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    message = "no headless Chromium on PATH (scripts/setup installs the chromium package)"
    if os.environ.get("WEFT_REQUIRE_CHROMIUM") == "1":
        pytest.fail(message)
    pytest.skip(message)


def read_png(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        previous = line
    return width, height, rows


def near(pixel, colour, tolerance=12):
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour))


def test_memory_plan_page_in_headless_chromium(tmp_path):
    browser = chromium()
    page = tmp_path / "plan.html"
    subprocess.run([tool("weft-compile"), WIDE, "--entry", "forward", "--train", "--remat=budget",
                    "--memory-budget=190000", f"--memory-report={page}", "-o", os.devnull],
                   check=True, timeout=120)
    shot = tmp_path / "plan.png"
    # No network: the page is a file, and the browser is told to stay offline.
    run = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                          "--hide-scrollbars", "--no-first-run", "--disable-extensions",
                          "--proxy-server=127.0.0.1:9", f"--screenshot={shot}",
                          "--window-size=1300,1100", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert shot.exists(), f"Chromium wrote no screenshot: {run.stderr[-2000:]}"
    width, height, rows = read_png(shot)
    assert (width, height) == (1300, 1100)
    # The plot's blocks: every category of wide.mlir's step has pixels of its
    # fill, well beyond the legend's 12x12 swatches.
    counts = {name: sum(near(p, c) for row in rows for p in row) for name, c in COLOURS.items()}
    for name, count in counts.items():
        assert count > 2000, f"{name}: {count} pixels of its colour, expected blocks ({counts})"
    # The budget line: a dashed red line across most of the plot's width.
    longest = max(sum(near(p, BUDGET, 30) for p in row) for row in rows)
    assert longest > 600, f"no budget line: the reddest row has {longest} budget-coloured pixels"
    # The recomputed block's hatching: dark stripes over the temporaries' red.
    dark_red = sum(1 for row in rows for p in row if 60 <= p[0] <= 130 and p[1] < 60 and p[2] < 60)
    assert dark_red > 20, f"no hatched (recomputed) block: {dark_red} dark red pixels"
