#!/usr/bin/env python3
"""Checks that screenshots are real pictures: valid PNGs that are not blank.

A page that failed to render (a broken SVG shows an error text or nothing at all) is one flat
color, or nearly so. A picture passes when it has at least MIN_COLORS distinct colors and at least
MIN_INK of its pixels differ from its most common color (the background). Python's standard library
only: zlib for the image data, the PNG filters undone by hand.

usage: png-not-blank.py FILE.png...
"""
import struct
import sys
import zlib

MIN_COLORS = 16
MIN_INK = 0.02


def pixels(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    offset, chunks, header = 8, [], None
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        offset += 12 + length
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace:
        raise ValueError(f"unexpected PNG format (depth {depth}, color type {color}, interlace {interlace})")
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    previous = bytearray(stride)
    rows = []
    for y in range(height):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = row[i - channels] if i >= channels else 0
            up = previous[i]
            up_left = previous[i - channels] if i >= channels else 0
            if kind == 1:
                row[i] = (row[i] + left) & 0xFF
            elif kind == 2:
                row[i] = (row[i] + up) & 0xFF
            elif kind == 3:
                row[i] = (row[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                row[i] = (row[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 0xFF
        rows.append(bytes(row))
        previous = row
    return width, height, [bytes(r[x:x + channels]) for r in rows for x in range(0, stride, channels)]


def main(paths):
    failed = False
    for path in paths:
        try:
            width, height, all_pixels = pixels(path)
        except (OSError, ValueError, zlib.error, struct.error, TypeError) as error:
            print(f"{path}: FAIL: {error}")
            failed = True
            continue
        counts = {}
        for pixel in all_pixels:
            counts[pixel] = counts.get(pixel, 0) + 1
        background = max(counts.values())
        ink = 1 - background / len(all_pixels)
        ok = len(counts) >= MIN_COLORS and ink >= MIN_INK
        failed |= not ok
        print(f"{path}: {'ok' if ok else 'FAIL: blank'}: {width}x{height}, {len(counts)} colors, {ink:.1%} drawn")
    return 1 if failed or not paths else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
