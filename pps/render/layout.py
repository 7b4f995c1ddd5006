"""Values -> what gets drawn: resolved texts, font sizes after shrink-to-fit, QR matrices.

Everything that can refuse a value happens here, before any drawing, so the editor's
:func:`check_values` and the renderer agree: what validates renders. Refusals are
:class:`~pps.render.problems.Problem` codes; :func:`validate_values` words them in English.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import zxingcpp
from reportlab.graphics.barcode import qrencoder
from reportlab.pdfbase.ttfonts import TTFont

from pps.render.assets import AssetLoader, Assets, as_loader
from pps.render.errors import AssetError, InvalidValues
from pps.render.fonts import load_font
from pps.render.media import ImageValue, choice_problem, parse_image_value, resolve
from pps.render.model import (
    MAX_VALUE_LENGTH,
    Element,
    QrElement,
    TemplateSpec,
    TextElement,
)
from pps.render.problems import Code, Problem, english

__all__ = [
    "Prepared",
    "QrMatrix",
    "TextLayout",
    "check_values",
    "fit_problem",
    "prepare",
    "validate_values",
]

MM = 72 / 25.4
_QR_LEVELS = {
    "L": qrencoder.QRErrorCorrectLevel.L,
    "M": qrencoder.QRErrorCorrectLevel.M,
    "Q": qrencoder.QRErrorCorrectLevel.Q,
    "H": qrencoder.QRErrorCorrectLevel.H,
}
QrMatrix = tuple[tuple[bool, ...], ...]


@dataclass(frozen=True)
class TextLayout:
    """Lines to draw, at ``size`` pt (smaller than the template's when shrunk)."""

    font: TTFont
    size: float
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Prepared:
    """Per element, keyed by (page index, element index): text layouts and QR matrices."""

    texts: dict[tuple[int, int], TextLayout]
    qrs: dict[tuple[int, int], QrMatrix]


class _Refused(Exception):
    """A value cannot be drawn as the template says; ``problem`` says why."""

    def __init__(self, code: Code, **params: object) -> None:
        self.problem = Problem(code, params)
        super().__init__(english(self.problem))


def check_values(
    spec: TemplateSpec, values: Mapping[str, object], assets: Assets | None = None
) -> dict[str, list[Problem]]:
    """Problems with ``values`` per DataKey (empty when they render), for the editor.

    Checks strings, maximum length, required keys, characters the font lacks, fitting
    the box and QR capacity. Keys the template does not use are ignored. Fit checks for
    fonts shipped with the template need ``assets``; without it they are left to render time.
    """
    loader = None if assets is None else as_loader(assets)
    problems, _ = _check(spec, values, loader, range(len(spec.pages)), lenient_fonts=True)
    return problems


def validate_values(
    spec: TemplateSpec, values: Mapping[str, object], assets: Assets | None = None
) -> dict[str, list[str]]:
    """:func:`check_values` in English, as the API and the CLI report it."""
    problems = check_values(spec, values, assets)
    return {key: [english(problem) for problem in found] for key, found in problems.items()}


def prepare(
    spec: TemplateSpec,
    values: Mapping[str, object],
    loader: AssetLoader,
    pages: Iterable[int],
    *,
    allow_missing: bool = False,
) -> Prepared:
    """Lay out ``pages`` for ``values``; raise :class:`InvalidValues` naming each bad key.

    ``allow_missing`` lets required keys stay empty, for a template's own thumbnail.
    """
    errors, prepared = _check(
        spec, values, loader, pages, lenient_fonts=False, allow_missing=allow_missing
    )
    if errors:
        raise InvalidValues(errors)
    return prepared


def fit_problem(element: Element, value: str, loader: AssetLoader | None) -> Problem | None:
    """Why ``value`` cannot be drawn in ``element``; None when it can."""
    try:
        if isinstance(element, TextElement):
            _layout(element, _clean(value, element.multiline), load_font(element.font, loader))
        elif isinstance(element, QrElement):
            qr_matrix(value, element.error_correction)
    except _Refused as exc:
        return exc.problem
    return None


def _check(
    spec: TemplateSpec,
    values: Mapping[str, object],
    loader: AssetLoader | None,
    pages: Iterable[int],
    *,
    lenient_fonts: bool,
    allow_missing: bool = False,
) -> tuple[dict[str, list[Problem]], Prepared]:
    errors: dict[str, list[Problem]] = {}
    resolved: dict[str, str] = {}
    if not isinstance(values, Mapping):
        raise TypeError("values must be a mapping of DataKey to string")
    # Only the template's own keys are looked at, so 10 000 unrelated keys cost nothing.
    for field in spec.fields:
        raw = values.get(field.key)
        problems = errors.setdefault(field.key, [])
        if field.kind == "image":
            image = parse_image_value(raw)
            if isinstance(image, Problem):
                problems.append(image)
            elif field.required and not isinstance(image, ImageValue) and not allow_missing:
                problems.append(Problem(Code.VALUE_REQUIRED))
            continue
        if raw is None:
            value = field.default or ""
        elif not isinstance(raw, str):
            problems.append(Problem(Code.VALUE_NOT_STRING, {"type": type(raw).__name__}))
            continue
        else:
            value = raw
        limit = min(field.max_length or MAX_VALUE_LENGTH, MAX_VALUE_LENGTH)
        if len(value) > limit:
            problems.append(Problem(Code.VALUE_TOO_LONG, {"limit": limit, "length": len(value)}))
        elif field.required and not value.strip() and not allow_missing:
            problems.append(Problem(Code.VALUE_REQUIRED))
        else:
            resolved[field.key] = value

    for choice in spec.choices:
        problem = choice_problem(choice, values.get(choice.key))
        if problem is not None:
            errors.setdefault(choice.key, []).append(problem)
    # Fonts and sizes the customer picked decide the layout (what is not valid is ignored).
    spec = resolve(spec, values)
    prepared = Prepared(texts={}, qrs={})
    for page_index in pages:
        for index, element in enumerate(spec.pages[page_index].elements):
            if not isinstance(element, TextElement | QrElement):
                continue
            key = element.data_key
            if key is None:
                text = element.text or ""
            elif key in resolved:
                text = resolved[key]
            else:
                continue  # already reported
            where = (page_index, index)
            label = key if key is not None else f"pages[{page_index}].elements[{index}]"
            try:
                if isinstance(element, QrElement):
                    if text:
                        prepared.qrs[where] = qr_matrix(text, element.error_correction)
                    continue
                try:
                    font = load_font(element.font, loader)
                except AssetError:
                    if lenient_fonts:
                        continue
                    raise
                prepared.texts[where] = _cached_layout(element, text, font)
            except _Refused as exc:
                bucket = errors.setdefault(label, [])
                if exc.problem not in bucket:
                    bucket.append(exc.problem)
    return {key: messages for key, messages in errors.items() if messages}, prepared


@functools.lru_cache(maxsize=4096)
def _cached_layout(element: TextElement, text: str, font: TTFont) -> TextLayout:
    """:func:`_layout` remembered: variable data repeats most values (a title, a phone
    number) from record to record, and a shrink-to-fit search costs a millisecond or more.
    Elements are frozen (hashable by value) and fonts are registered once per process."""
    return _layout(element, _clean(text, element.multiline), font)


def _clean(value: str, multiline: bool) -> str:
    """Line breaks become spaces on one-line fields; other control characters are dropped.

    Control characters have no glyph: drawn, they would print as boxes.
    """
    value = value.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    if not multiline:
        value = value.replace("\n", " ")
    return "".join(ch for ch in value if ch == "\n" or unicodedata.category(ch) not in ("Cc", "Cs"))


def _layout(element: TextElement, text: str, font: TTFont) -> TextLayout:
    """Fit ``text`` into the element's box, shrinking when allowed; raise :class:`_Refused`."""
    if not text.strip():
        return TextLayout(font=font, size=element.size, lines=())
    missing = sorted({ch for ch in text if not ch.isspace() and ord(ch) not in _glyphs(font)})
    if missing:
        shown = "".join(missing[:10]) + ("..." if len(missing) > 10 else "")
        raise _Refused(Code.VALUE_MISSING_GLYPHS, characters=shown)
    width = element.box.width * MM
    if not element.multiline:
        natural = font.stringWidth(text, element.size)
        if natural <= width + 1e-6:
            return TextLayout(font=font, size=element.size, lines=(text,))
        if not element.shrink_to_fit:
            raise _Refused(
                Code.VALUE_TOO_WIDE,
                natural=natural / MM,
                size=element.size,
                width=element.box.width,
            )
        # Width grows linearly with size; step down in tenths to absorb rounding.
        size = math.floor(element.size * width / natural * 10) / 10
        while size >= element.min_size and font.stringWidth(text, size) > width + 1e-6:
            size = round(size - 0.1, 1)
        if size < element.min_size:
            raise _Refused(Code.VALUE_NO_FIT, min_size=element.min_size)
        return TextLayout(font=font, size=size, lines=(text,))

    lines = _wrap(text, font, element.size, width)
    if _block_height(font, element, element.size, len(lines)) <= element.box.height * MM + 1e-6:
        return TextLayout(font=font, size=element.size, lines=lines)
    if not element.shrink_to_fit:
        raise _Refused(Code.VALUE_TOO_MANY_LINES, lines=len(lines), size=element.size)
    # Wrapping makes height a step function of size: search the largest size that fits.
    low, high = math.ceil(element.min_size * 10), math.floor(element.size * 10)
    best: tuple[str, ...] | None = None
    while low <= high:
        mid = (low + high) // 2
        candidate = _wrap(text, font, mid / 10, width)
        if _block_height(font, element, mid / 10, len(candidate)) <= element.box.height * MM:
            best, low = candidate, mid + 1
        else:
            high = mid - 1
    if best is None:
        raise _Refused(Code.VALUE_NO_FIT, min_size=element.min_size)
    return TextLayout(font=font, size=high / 10, lines=best)


def _block_height(font: TTFont, element: TextElement, size: float, count: int) -> float:
    ascent = float(font.face.ascent) / 1000 * size
    descent = float(font.face.descent) / 1000 * size
    return (count - 1) * size * element.line_height + ascent - descent


def _wrap(text: str, font: TTFont, size: float, width: float) -> tuple[str, ...]:
    """Greedy word wrap; a word wider than the box is broken between characters."""
    space = font.stringWidth(" ", size)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line: list[str] = []
        line_width = 0.0
        for word in paragraph.split():
            word_width = font.stringWidth(word, size)
            if line and line_width + space + word_width <= width:
                line.append(word)
                line_width += space + word_width
                continue
            if line:
                lines.append(" ".join(line))
            while word_width > width and len(word) > 1:
                cut = _fitting_prefix(word, font, size, width)
                lines.append(word[:cut])
                word = word[cut:]
                word_width = font.stringWidth(word, size)
            line, line_width = [word], word_width
        lines.append(" ".join(line))
    return tuple(lines)


def _fitting_prefix(word: str, font: TTFont, size: float, width: float) -> int:
    total = 0.0
    for index, ch in enumerate(word):
        total += font.stringWidth(ch, size)
        if total > width:
            return max(index, 1)
    return len(word)


@functools.cache
def _glyphs(font: TTFont) -> frozenset[int]:
    """The code points ``font`` has glyphs for (fonts are registered once, so this is bounded)."""
    return frozenset(font.face.charToGlyph)


@functools.lru_cache(maxsize=512)
def qr_matrix(text: str, level: str) -> QrMatrix:
    """The QR modules for ``text`` at the smallest version that holds it.

    Capacity is checked with reportlab's tables for byte mode (UTF-8), so a value that
    fits is the same for every encoder; the matrix comes from zxing-cpp's C++ encoder,
    about 30 times faster than reportlab's pure-Python one (0.16 ms against 4.8 ms for a
    URL on the benchmark VM), which decided variable-data throughput (one code per record).
    Cached: the editor's preview and the print file render the same codes again and again.
    """
    data = qrencoder.QR8bitByte(text)
    correction = _QR_LEVELS[level]
    for version in range(1, 41):
        # reportlab's encoder is untyped; these calls are its documented building blocks.
        blocks = qrencoder.QRRSBlock.getRSBlocks(version, correction)  # type: ignore[no-untyped-call]
        capacity = sum(block.dataCount for block in blocks) * 8
        length_bits = data.getLengthBits(version)  # type: ignore[no-untyped-call]
        if 4 + length_bits + data.bitlength <= capacity:
            break
    else:
        raise _Refused(Code.VALUE_QR_TOO_LONG, bytes=len(data.data), level=level)
    try:
        code = zxingcpp.create_barcode(text, zxingcpp.BarcodeFormat.QRCode, ec_level=level)
    except ValueError:  # an ECI header pushed a value at the very limit over it
        raise _Refused(Code.VALUE_QR_TOO_LONG, bytes=len(data.data), level=level) from None
    image = code.to_image(scale=1, add_quiet_zones=False)
    rows, cols = image.shape
    pixels = bytes(memoryview(cast(Any, image)))  # 8-bit grey, row by row: 0 is dark
    return tuple(tuple(pixels[row * cols + col] == 0 for col in range(cols)) for row in range(rows))
