"""SVG images drawn as vector artwork with svglib (no rasterizing, so a logo stays sharp).

Only SVGs stored by :mod:`pps.uploads` reach here: cleaned to shapes, text and gradients
with local references, so svglib never loads anything from outside the file. What svglib
would expand them to is counted first (:mod:`pps.render.svg_budget`): an SVG that asks for
too much drawing is refused, at upload and, when stored before the limit, at render.
"""

from __future__ import annotations

import functools
import math
from io import BytesIO
from typing import Any, Literal

from reportlab.graphics import renderPDF
from reportlab.pdfgen.canvas import Canvas

from pps.render.svg_budget import SvgTooBig, budget_problem, parse_svg

__all__ = ["SvgFault", "draw_svg", "is_svg", "svg_fault", "svg_problem", "svg_size"]

#: Why an SVG cannot be drawn, for callers that word it themselves (the editor, for a
#: customer, in the page's language).
SvgFault = Literal["no_size", "bad_size", "too_big", "not_drawable"]


def is_svg(data: bytes) -> bool:
    head = data[:4096].lstrip()
    return head.startswith((b"<?xml", b"<svg")) and b"<svg" in head


@functools.lru_cache(maxsize=32)
def _drawing(data: bytes) -> Any:
    from svglib.svglib import svg2rlg

    problem = budget_problem(parse_svg(data))
    if problem is not None:
        raise SvgTooBig(problem)
    drawing = svg2rlg(BytesIO(data), font_map=_standard_fonts())
    if drawing is None or not drawing.width or not drawing.height:
        raise _Sizeless("the SVG has no drawable size")
    if not all(math.isfinite(side) and side > 0 for side in (drawing.width, drawing.height)):
        # svglib reads "-10", "nan" and "inf" as they are: a crop of such an image is not a
        # number (NaN is not even JSON), and the drawing is mirrored or empty.
        raise _BadSize("the SVG's size is not positive")
    return drawing


@functools.cache
def _standard_fonts() -> Any:
    """svglib's font map without the machine's fonts: the standard PDF fonts under their
    usual names (``serif``, ``sans-serif``, ``monospace``, ``Times New Roman``, ...), and
    Helvetica for every other family.

    svglib's own map looks an unknown family up as a file (``<family>.ttf`` on reportlab's
    search path) and then with ``fc-match`` (a process each), and registers what it finds
    in reportlab for the life of the process: an SVG naming a thousand families took a
    thousand processes to draw, and its print file depended on the fonts of the machine
    that drew it.
    """
    from svglib.fonts import FontMap

    class StandardFonts(FontMap):
        def register_font(
            self,
            font_family: str,
            font_path: str | None = None,
            weight: str = "normal",
            style: str = "normal",
            rlgFontName: str | None = None,
        ) -> tuple[str | None, bool]:
            if font_path is not None:
                return None, False  # a font file: never read from the machine
            found: tuple[str | None, bool] = super().register_font(
                font_family, None, weight, style, rlgFontName
            )
            return found

        def use_fontconfig(
            self, font_name: str, weight: str = "normal", style: str = "normal"
        ) -> tuple[str | None, bool]:
            return None, False

    return StandardFonts()


class _Sizeless(ValueError):
    """An SVG whose ``<svg>`` gives neither a ``viewBox`` nor a width and a height."""


class _BadSize(ValueError):
    """An SVG whose size is below zero, infinite or not a number."""


def svg_size(data: bytes) -> tuple[float, float]:
    """The SVG's own size in its user units (what a crop of it is measured in)."""
    drawing = _drawing(data)
    return float(drawing.width), float(drawing.height)


def draw_svg(canvas: Canvas, data: bytes, x: float, y: float, width: float, height: float) -> None:
    """The SVG scaled to ``width`` x ``height`` points with its lower-left corner at x, y."""
    drawing = _drawing(data)
    canvas.saveState()
    canvas.translate(x, y)
    canvas.scale(width / drawing.width, height / drawing.height)
    renderPDF.draw(drawing, canvas, 0, 0)
    canvas.restoreState()


def svg_problem(data: bytes) -> str | None:
    """Why the SVG cannot be drawn, or None: it is drawn once, into a page that is thrown
    away, as a print file would draw it.

    A file can be valid XML and still fail in svglib or in reportlab's PDF writer (a size
    of ``1e-300``, a stroke width of ``1e999``, a ``viewBox`` of zero). Found at upload,
    that is the shop's file refused; found at render, every file of the draft would fail.
    """
    fault = svg_fault(data)
    return None if fault is None else fault[1]


def svg_fault(data: bytes) -> tuple[SvgFault, str] | None:
    """:func:`svg_problem` with the kind of fault beside its words (for a shop's developer)."""
    canvas = Canvas(BytesIO(), pagesize=(100, 100))
    try:
        draw_svg(canvas, data, 0, 0, 100, 100)
        canvas.showPage()
        canvas.save()
    except _Sizeless:
        return (
            "no_size",
            "it has no size: give its <svg> element a viewBox, or a width and a height",
        )
    except _BadSize:
        return "bad_size", "its width and height (or those of its viewBox) must be positive numbers"
    except SvgTooBig as exc:
        return "too_big", str(exc)
    except Exception as exc:  # svglib's and reportlab's many errors: not drawable
        return "not_drawable", f"it cannot be drawn ({type(exc).__name__})"
    return None
