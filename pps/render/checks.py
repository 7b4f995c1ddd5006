"""Checks of the files a template refers to, and of its fixed texts and defaults.

Run by :func:`pps.render.parsing.parse_spec` when the template's folder is given (at import):
every artwork PDF, image and font is opened once, and each fixed text and default must fit
its box, because the template's own preview is rendered from them. Problems are reported at
every path that names the file, in the parser's :class:`~pps.render.reader.Reader`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from io import BytesIO

import pikepdf
from PIL import Image, UnidentifiedImageError

from pps.render.assets import AssetLoader, sniff
from pps.render.decode import NOT_AN_IMAGE
from pps.render.errors import AssetError
from pps.render.fonts import is_font_file, load_font
from pps.render.layout import fit_problem
from pps.render.model import (
    ASPECT_TOLERANCE,
    Element,
    ImageElement,
    Page,
    PdfBackground,
    QrElement,
    TextElement,
)
from pps.render.pdf_errors import read_error
from pps.render.problems import Code, Problem
from pps.render.reader import Reader

__all__ = ["check_files"]

_Test = Callable[[str, bytes], Problem | None]


def check_files(
    reader: Reader,
    pages: Sequence[Page],
    placed: Sequence[tuple[str, Element]],
    loader: AssetLoader,
    width: float,
    height: float,
    artwork: Sequence[tuple[str, PdfBackground]] = (),
    fonts: Sequence[tuple[str, str]] = (),
) -> None:
    """Open every referenced file once and report problems at each path that names it.

    ``artwork`` lists further backgrounds with their paths (those variants swap in),
    ``fonts`` further font files with theirs (a text element's ``choices``).
    """
    found: dict[tuple[str, str], Problem | None] = {}
    problems_before = len(reader.problems)

    def check(kind: str, name: str, path: str, test: _Test) -> None:
        if (kind, name) not in found:
            try:
                found[kind, name] = test(name, loader(name))
            except AssetError as exc:
                found[kind, name] = _unusable(name, exc)
        problem = found[kind, name]
        if problem is not None:
            reader.add(path, problem)

    for page_index, page in enumerate(pages):
        background = page.background
        if isinstance(background, PdfBackground):
            check(
                f"pdf:{background.page}",
                background.file,
                f"pages[{page_index}].background.pdf",
                functools.partial(_pdf_problem, page=background.page, width=width, height=height),
            )
    for artwork_path, background in artwork:
        check(
            f"pdf:{background.page}",
            background.file,
            artwork_path,
            functools.partial(_pdf_problem, page=background.page, width=width, height=height),
        )
    for font_path, font in fonts:
        check("font", font, font_path, _font_problem)
    for element_path, element in placed:
        if isinstance(element, ImageElement) and element.file is not None:
            check("image", element.file, f"{element_path}.file", _image_problem)
        elif isinstance(element, TextElement) and is_font_file(element.font):
            check("font", element.font, f"{element_path}.font", _font_problem)
    if len(reader.problems) > problems_before:
        return
    # With every font loadable, fixed texts and defaults must fit their boxes: the
    # template's preview renders from the defaults.
    for element_path, element in placed:
        if not isinstance(element, TextElement | QrElement):
            continue
        for key, value in (("text", element.text), ("default", element.default)):
            if value is None:
                continue
            problem = fit_problem(element, value, loader)
            if problem is not None:
                reader.add(f"{element_path}.{key}", problem)


def _pdf_problem(name: str, data: bytes, page: int, width: float, height: float) -> Problem | None:
    shown = repr(name)
    if sniff(data) != "pdf":
        return Problem(Code.FILE_NOT_PDF, {"name": shown})
    try:
        with pikepdf.open(BytesIO(data)) as pdf:
            if page >= len(pdf.pages):
                return Problem(
                    Code.FILE_MISSING_PAGE, {"name": shown, "count": len(pdf.pages), "page": page}
                )
            art = pdf.pages[page]
            if int(art.obj.get("/Rotate", 0)) % 360:
                return Problem(Code.FILE_ROTATED, {"name": shown, "page": page})
            trim = art.trimbox
            art_w, art_h = float(trim[2]) - float(trim[0]), float(trim[3]) - float(trim[1])
    except pikepdf.PasswordError:
        return Problem(Code.FILE_ENCRYPTED, {"name": shown})
    except (pikepdf.PikepdfError, ValueError, TypeError) as exc:  # QpdfRuntimeError too
        return Problem(Code.FILE_UNREADABLE_PDF, {"name": shown, "reason": read_error(exc)})
    if art_w <= 0 or art_h <= 0:
        return Problem(Code.FILE_EMPTY_TRIM, {"name": shown, "page": page})
    if abs((art_w / art_h) / (width / height) - 1) > ASPECT_TOLERANCE:
        return Problem(
            Code.FILE_SHAPE,
            {
                "name": shown,
                "page": page,
                "art_width": _mm(art_w),
                "art_height": _mm(art_h),
                "width": width,
                "height": height,
            },
        )
    return None


def _image_problem(name: str, data: bytes) -> Problem | None:
    if sniff(data) not in ("png", "jpeg"):
        return Problem(Code.FILE_NOT_IMAGE, {"name": repr(name)})
    try:
        with warnings.catch_warnings():
            # A decompression bomb warning becomes an error: such an image is refused.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(BytesIO(data)) as image:
                image.verify()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        return Problem(Code.FILE_TOO_MANY_PIXELS, {"name": repr(name)})
    except UnidentifiedImageError:  # its message names the in-memory stream by its repr
        return Problem(Code.FILE_UNREADABLE_IMAGE, {"name": repr(name), "reason": NOT_AN_IMAGE})
    except (OSError, SyntaxError, ValueError) as exc:
        return Problem(Code.FILE_UNREADABLE_IMAGE, {"name": repr(name), "reason": str(exc)})
    return None


def _font_problem(name: str, data: bytes) -> Problem | None:
    try:
        load_font(name, lambda _name: data)
    except AssetError as exc:
        return _unusable(name, exc)
    return None


def _unusable(name: str, exc: AssetError) -> Problem:
    """A loader's or font's own message, which names the file (prefixed when it does not)."""
    reason = str(exc)
    if not reason.startswith(repr(name)):
        reason = f"{name!r} {reason}"
    return Problem(Code.FILE_UNUSABLE, {"reason": reason})


def _mm(points: float) -> float:
    return points * 25.4 / 72
