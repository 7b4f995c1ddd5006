"""Render benchmark: the business card's print PDF and PNG, uncached and cached, in pages/s.

    .venv/bin/python bench/render.py [--seconds 2.5] [--width 1000]

Each figure is set against a baseline measured in the same run with the same library:
a blank page written by reportlab (for the PDF), and a blank page written by reportlab,
rasterized by pdfium and encoded by Pillow at the same pixel size (for the PNG). Uncached
runs change the values every iteration (a new name and URL, so a new QR code), so no
memoized layout or QR matrix flatters them. Cached runs look the result up in a dict keyed
by ``pps.render.cache_key`` (renderer version, template digest, the values, options), as
the service does before rendering. Every measurement stops after ``--seconds``, so the
whole run takes about 6 x that (~15-20 s by default).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from io import BytesIO
from pathlib import Path

import pypdfium2 as pdfium
from reportlab.pdfgen.canvas import Canvas

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pps.render import (  # noqa: E402  (the path above makes the checkout importable)
    RENDER_VERSION,
    TemplateSpec,
    cache_key,
    image_size,
    parse_spec,
    render_png,
    render_print_pdf,
)
from pps.render.raster import PNG_COMPRESS_LEVEL  # noqa: E402  (path set above)

CARD = ROOT / "examples" / "templates" / "business-card"


def rate(step: Callable[[int], object], seconds: float) -> tuple[float, int]:
    """Pages per second of ``step(i)`` over about ``seconds`` (after one warm-up call)."""
    step(-1)
    count = 0
    started = time.perf_counter()
    deadline = started + seconds
    while True:
        step(count)
        count += 1
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - started), count


def values(index: int) -> dict[str, str]:
    return {
        "name": f"Ada Lovelace {index}",
        "title": "Analyst of Engines",
        "phone": "+44 20 7946 0000",
        "email": "ada@example.org",
        "url": f"https://example.org/ada/{index}",
    }


def blank_pdf(spec: TemplateSpec) -> bytes:
    """One blank page of the card's print size, written by reportlab as the renderer does."""
    mm = 72 / 25.4
    buffer = BytesIO()
    canvas = Canvas(
        buffer,
        pagesize=((spec.width + 2 * spec.bleed) * mm, (spec.height + 2 * spec.bleed) * mm),
        invariant=True,
        pageCompression=1,
    )
    canvas.showPage()
    canvas.save()
    return buffer.getvalue()


def blank_png(pdf: bytes, size: tuple[int, int]) -> bytes:
    document = pdfium.PdfDocument(pdf)
    try:
        page = document[0]
        image = page.render(scale=size[0] / page.get_width(), fill_color=(255, 255, 255, 255))
        pil = image.to_pil().convert("RGB")
    finally:
        document.close()
    out = BytesIO()
    pil.save(out, "PNG", compress_level=PNG_COMPRESS_LEVEL)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.5, help="per measurement")
    parser.add_argument("--width", type=int, default=1000, help="PNG width in pixels")
    opts = parser.parse_args(argv)

    spec = parse_spec(json.loads((CARD / "template.json").read_text()), CARD)
    size = image_size(spec, opts.width, None)
    blank = blank_pdf(spec)
    cache: dict[str, bytes] = {}
    misses = 0

    def cached(kind: str, render: Callable[[], bytes], key: str) -> bytes:
        nonlocal misses
        body = cache.get(key)
        if body is None:
            misses += 1
            body = cache[key] = render()
        return body

    fixed = values(0)
    rows: list[tuple[str, float, int, float]] = []

    base_pdf, count = rate(lambda i: blank_pdf(spec), opts.seconds)
    rows.append(("blank page, reportlab (baseline)", base_pdf, count, base_pdf))
    speed, count = rate(lambda i: render_print_pdf(spec, values(i), CARD), opts.seconds)
    rows.append(("print PDF, uncached", speed, count, base_pdf))
    speed, count = rate(
        lambda i: cached(
            "print",
            lambda: render_print_pdf(spec, fixed, CARD),
            cache_key("print", spec, fixed),
        ),
        opts.seconds,
    )
    rows.append(("print PDF, cached", speed, count, base_pdf))

    base_png, count = rate(lambda i: blank_png(blank, size), opts.seconds)
    label = f"blank page -> PNG {size[0]}x{size[1]}, pdfium (baseline)"
    rows.append((label, base_png, count, base_png))
    speed, count = rate(lambda i: render_png(spec, values(i), CARD, width=opts.width), opts.seconds)
    rows.append((f"PNG {size[0]}x{size[1]}, uncached", speed, count, base_png))
    speed, count = rate(
        lambda i: cached(
            "image",
            lambda: render_png(spec, fixed, CARD, width=opts.width),
            cache_key("image", spec, fixed, width=opts.width),
        ),
        opts.seconds,
    )
    rows.append((f"PNG {size[0]}x{size[1]}, cached", speed, count, base_png))

    print(
        f"pps render benchmark: business card, renderer version {RENDER_VERSION}, "
        f"Python {platform.python_version()}, {platform.machine()}"
    )
    print(f"{'what':<44} {'pages/s':>10} {'runs':>7} {'vs baseline':>12}")
    for label, speed, count, baseline in rows:
        print(f"{label:<44} {speed:>10.1f} {count:>7} {speed / baseline:>11.3f}x")
    print(f"cache misses: {misses} (one per kind: the first lookup renders)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
