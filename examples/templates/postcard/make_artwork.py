"""Generate artwork.pdf, the postcard's two background pages, as vector shapes only.

    .venv/bin/python examples/templates/postcard/make_artwork.py

Made by the project itself (so it may be shipped freely). Pages are A6 landscape with
3 mm bleed: the MediaBox includes the bleed and the TrimBox marks the 148 x 105 mm card,
which is how pps aligns artwork with a template. No text: artwork fonts would need
embedding, and the template's own text elements carry the words. ``invariant=True`` keeps
the file byte-identical between runs, so regenerating it shows no diff.
"""

from __future__ import annotations

from pathlib import Path

from reportlab.lib.units import mm
from reportlab.pdfgen.canvas import Canvas

WIDTH, HEIGHT, BLEED = 148 * mm, 105 * mm, 3 * mm
OUT = Path(__file__).resolve().parent / "artwork.pdf"


def front(canvas: Canvas) -> None:
    """Sky, sun, sea and two sails, in CMYK as print artwork would be."""
    b = BLEED
    bands = 12
    for index in range(bands):  # a stepped sky gradient, light at the horizon
        t = index / (bands - 1)
        canvas.setFillColorCMYK(0.55 - 0.4 * t, 0.05 + 0.1 * t, 0.0 + 0.15 * t, 0.0)
        y = b + HEIGHT * (0.45 + 0.55 * (1 - (index + 1) / bands))
        canvas.rect(0, y, WIDTH + 2 * b, HEIGHT * 0.55 / bands + 0.5, stroke=0, fill=1)
    canvas.setFillColorCMYK(0, 0.25, 0.9, 0)
    canvas.circle(b + WIDTH * 0.72, b + HEIGHT * 0.62, 14 * mm, stroke=0, fill=1)
    for index, (c, k) in enumerate(((0.9, 0.2), (0.85, 0.1), (0.75, 0.0))):
        canvas.setFillColorCMYK(c, 0.35, 0.0, k)
        top = b + HEIGHT * (0.45 - 0.12 * index)
        path = canvas.beginPath()
        path.moveTo(0, 0)
        path.lineTo(0, top)
        step = (WIDTH + 2 * b) / 6
        for wave in range(6):
            x = wave * step
            path.curveTo(x + step / 3, top + 4 * mm, x + 2 * step / 3, top - 4 * mm, x + step, top)
        path.lineTo(WIDTH + 2 * b, 0)
        path.close()
        canvas.drawPath(path, stroke=0, fill=1)
    canvas.setFillColorCMYK(0, 0, 0, 0)
    for x, size in ((0.25, 12), (0.42, 8)):
        sail = canvas.beginPath()
        base = b + HEIGHT * 0.47
        sail.moveTo(b + WIDTH * x, base)
        sail.lineTo(b + WIDTH * x, base + size * mm * 1.6)
        sail.lineTo(b + WIDTH * x + size * mm, base)
        sail.close()
        canvas.drawPath(sail, stroke=0, fill=1)


def back(canvas: Canvas) -> None:
    """A paper tint, a divider, a stamp box and address rules."""
    b = BLEED
    canvas.setFillColorCMYK(0, 0.02, 0.08, 0)
    canvas.rect(0, 0, WIDTH + 2 * b, HEIGHT + 2 * b, stroke=0, fill=1)
    canvas.setStrokeColorCMYK(0, 0, 0, 0.45)
    canvas.setLineWidth(0.5)
    canvas.line(b + WIDTH * 0.55, b + 10 * mm, b + WIDTH * 0.55, b + HEIGHT - 10 * mm)
    canvas.setDash(2, 2)
    canvas.rect(b + WIDTH - 30 * mm, b + HEIGHT - 34 * mm, 22 * mm, 26 * mm, stroke=1, fill=0)
    canvas.setDash()
    for index in range(3):
        y = b + 42 * mm - index * 10 * mm
        canvas.line(b + WIDTH * 0.6, y, b + WIDTH - 8 * mm, y)


def main() -> None:
    canvas = Canvas(str(OUT), invariant=True, pageCompression=1)
    canvas.setTitle("pps postcard artwork")
    canvas.setCreator("pps examples/templates/postcard/make_artwork.py")
    for draw in (front, back):
        canvas.setPageSize((WIDTH + 2 * BLEED, HEIGHT + 2 * BLEED))
        canvas.setTrimBox((BLEED, BLEED, BLEED + WIDTH, BLEED + HEIGHT))
        canvas.setBleedBox((0, 0, WIDTH + 2 * BLEED, HEIGHT + 2 * BLEED))
        draw(canvas)
        canvas.showPage()
    canvas.save()
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
