#!/usr/bin/env python3
"""ctest driver: the SVGs of `redist show --svg` and `redist plan --svg` render in a headless
browser (Debian's chromium). Each document is screenshot and the PNG decoded here, in pure
python (zlib, struct), and checked: not blank, every tile colour of the document visible
as a patch of pixels, the memory bar's colour present in the plan.

Usage: test_svg_render.py --redist build/tools/redist --chromium /usr/bin/chromium
"""

import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib
from collections import Counter

from cli_checks import Checks, run


def decode_png(data):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace != 0:
        raise ValueError("unsupported PNG: depth %d, colour type %d, interlace %d" % (depth, color, interlace))
    bpp = 3 if color == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def screenshot(chromium, svg, png, profile):
    text = open(svg, encoding="utf-8").read()
    w, h = (int(v) for v in re.search(r'<svg [^>]*width="(\d+)" height="(\d+)"', text).groups())
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
           "--user-data-dir=" + profile, "--screenshot=" + png, "--window-size=%d,%d" % (w + 100, max(h + 200, 600)), "file://" + svg]
    subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    with open(png, "rb") as f:
        return (w, h), decode_png(f.read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redist", required=True)
    ap.add_argument("--chromium", required=True)
    args = ap.parse_args()
    checks = Checks()
    expect = checks.expect

    cases = [
        ("show2d", ["show", "--mesh", "{x: 2, y: 2}", "--type", "[64{x}128, 32{y}64]"]),
        ("show3d", ["show", "--mesh", "{x: 2, y: 2, z: 2}", "--type", "[{x}8, {y}4, 6{z}12]"]),
        ("plan", ["plan", "--mesh", "{x: 4, y: 8}", "--from", "[64{x}256, 1024]", "--to", "[256, 128{y}1024]"]),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in cases:
            svg, png = os.path.join(tmp, name + ".svg"), os.path.join(tmp, name + ".png")
            r = run(args.redist, cmd + ["--svg", svg])
            if r.returncode != 0:
                checks.fail("%s: redist exit %d: %s" % (name, r.returncode, r.stderr))
                continue
            try:
                (sw, sh), (w, h, rows) = screenshot(args.chromium, svg, png, os.path.join(tmp, "profile-" + name))
            except (OSError, ValueError, subprocess.TimeoutExpired) as e:
                checks.fail("%s: no screenshot: %s" % (name, e))
                continue
            pixels = Counter(p for row in rows for p in row)
            white = pixels.get((255, 255, 255), 0)
            text = open(svg, encoding="utf-8").read()
            fills = set(re.findall(r'<rect class="tile"[^>]* fill="#([0-9a-f]{6})"', text))
            seen = {f for f in fills if pixels.get(tuple(int(f[i:i + 2], 16) for i in (0, 2, 4)), 0) >= 200}
            print("%s: %dx%d, %d colours, %d non-white pixels, %d of %d tile colours visible" %
                  (name, w, h, len(pixels), w * h - white, len(seen), len(fills)))
            expect(w * h - white > sw * sh // 20, "%s: the screenshot is (almost) blank" % name)
            expect(len(fills) >= 4 and seen == fills, "%s: tile colours not visible: %s" % (name, sorted(fills - seen)))
            if name == "plan":
                expect(pixels.get((0x2c, 0xa0, 0x2c), 0) >= 50, "plan: the memory bars are not visible")

    return checks.report("the SVGs render")


if __name__ == "__main__":
    sys.exit(main())
