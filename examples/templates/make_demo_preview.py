"""Draw ``demo-card.png``, the preview of the demo template, with nothing but zlib and struct.

Run ``python examples/templates/make_demo_preview.py`` to regenerate it; the output is
deterministic, so the committed file only changes when this script does.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

WIDTH, HEIGHT = 320, 200
PAPER = (250, 248, 242)
BAND = (32, 72, 128)
INK = (60, 60, 60)
LIGHT_INK = (150, 150, 150)

# (left, top, right, bottom, colour): a band and "text lines" where the data keys go.
SHAPES = [
    (0, 0, 24, HEIGHT, BAND),
    (48, 40, 220, 56, INK),  # firstName lastName
    (48, 66, 160, 76, LIGHT_INK),  # jobTitle
    (48, 130, 200, 138, LIGHT_INK),  # email
    (48, 148, 170, 156, LIGHT_INK),  # phone
    (248, 40, 288, 80, BAND),  # logo
]


def pixel(x: int, y: int) -> tuple[int, int, int]:
    for left, top, right, bottom, colour in reversed(SHAPES):
        if left <= x < right and top <= y < bottom:
            return colour
    return PAPER


def chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def png() -> bytes:
    rows = b"".join(
        b"\x00" + bytes(c for x in range(WIDTH) for c in pixel(x, y)) for y in range(HEIGHT)
    )
    header = struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


if __name__ == "__main__":
    target = Path(__file__).resolve().parent / "demo-card.png"
    target.write_bytes(png())
    print(f"wrote {target}")
