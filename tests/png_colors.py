#!/usr/bin/env python3
"""Where given colours appear in a PNG (stdlib only: zlib and struct).

usage: png_colors.py FILE.png RRGGBB... [--tolerance=N]
prints one JSON object: {"width": W, "height": H, "RRGGBB": {"count": n, "x0": .., "y0": ..,
"x1": .., "y1": ..}, ...} where a pixel matches when every channel is within the tolerance.
Used by tests/report_chromium_test.cc on Chromium's screenshots (8-bit RGB or RGBA)."""
import json
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat = 8, []
    width = height = None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                sys.exit(f"{path}: unsupported PNG (depth {depth}, colour type {ctype})")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    tol = 0
    for a in sys.argv[1:]:
        if a.startswith("--tolerance="):
            tol = int(a.split("=", 1)[1])
    width, height, bpp, rows = decode(args[0])
    wanted = {c: tuple(int(c[i:i + 2], 16) for i in (0, 2, 4)) for c in args[1:]}
    found = {c: {"count": 0, "x0": width, "y0": height, "x1": -1, "y1": -1} for c in wanted}
    for y, row in enumerate(rows):
        for x in range(width):
            r, g, b = row[x * bpp], row[x * bpp + 1], row[x * bpp + 2]
            for c, (wr, wg, wb) in wanted.items():
                if abs(r - wr) <= tol and abs(g - wg) <= tol and abs(b - wb) <= tol:
                    f = found[c]
                    f["count"] += 1
                    f["x0"], f["y0"] = min(f["x0"], x), min(f["y0"], y)
                    f["x1"], f["y1"] = max(f["x1"], x), max(f["y1"], y)
    print(json.dumps({"width": width, "height": height, **found}))


if __name__ == "__main__":
    main()
