"""Fonts: the built-in Vera family and TrueType files shipped with a template.

reportlab keeps registered fonts in a process-wide registry, so each font is registered
once under a name derived from its content hash: two templates shipping the same file share
it, and a changed file can never be mistaken for the old one.
"""

from __future__ import annotations

import hashlib
import threading
from io import BytesIO
from pathlib import Path

import reportlab
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont

from pps.render.assets import AssetLoader, sniff
from pps.render.errors import AssetError

__all__ = ["BUILTIN_FONTS", "DEFAULT_FONT", "font_problem", "is_font_file", "load_font"]

# Bitstream Vera ships inside the reportlab wheel under a licence that allows bundling and
# redistribution (reportlab/fonts/bitstream-vera-license.txt), so pps needs no font files.
_VERA_DIR = Path(reportlab.__file__).resolve().parent / "fonts"
BUILTIN_FONTS: dict[str, Path] = {
    "Vera": _VERA_DIR / "Vera.ttf",
    "Vera-Bold": _VERA_DIR / "VeraBd.ttf",
    "Vera-Italic": _VERA_DIR / "VeraIt.ttf",
    "Vera-BoldItalic": _VERA_DIR / "VeraBI.ttf",
}
DEFAULT_FONT = "Vera"

_lock = threading.Lock()
#: Built-in fonts by name, template fonts by content hash.
_fonts: dict[str, TTFont] = {}


def is_font_file(name: str) -> bool:
    """Whether a template's ``font`` names a file (rather than a built-in font)."""
    return name.lower().endswith((".ttf", ".otf"))


def load_font(name: str, loader: AssetLoader | None) -> TTFont:
    """The registered reportlab font for a template's ``font`` value.

    Raises :class:`AssetError` when the file is missing or not an embeddable TrueType font.
    """
    if name in BUILTIN_FONTS:
        key = name
        with _lock:
            font = _fonts.get(key)
        if font is not None:
            return font
        data = BUILTIN_FONTS[name].read_bytes()
    elif not is_font_file(name):
        known = ", ".join(BUILTIN_FONTS)
        raise AssetError(f"{name!r}: unknown font; use one of {known} or a .ttf file")
    elif loader is None:
        raise AssetError(f"{name!r}: font files need the template's folder")
    else:
        data = loader(name)
        key = hashlib.sha256(data).hexdigest()[:24]
        with _lock:
            font = _fonts.get(key)
        if font is not None:
            return font
    problem = font_problem(data)
    if problem is not None:
        raise AssetError(f"{name!r}: {problem}")
    try:
        font = TTFont(f"pps-{key}", BytesIO(data))
    except Exception as exc:  # reportlab raises bare exceptions for broken fonts
        raise AssetError(f"{name!r}: cannot be used as a font: {exc}") from None
    with _lock:
        # Another thread may have registered the same font meanwhile; keep the first.
        existing = _fonts.setdefault(key, font)
        if existing is font:
            pdfmetrics.registerFont(font)
        return existing


def font_problem(data: bytes) -> str | None:
    """Why ``data`` is not a font reportlab can embed, judged by its signature; or None."""
    kind = sniff(data)
    if kind == "truetype":
        return None
    if kind == "cff":
        return "is an OpenType font with PostScript (CFF) outlines; only TrueType outlines embed"
    if kind == "collection":
        return "is a font collection (.ttc); ship the single font as .ttf"
    return "is not a TrueType font file"
