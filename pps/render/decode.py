"""Decode a template's files completely, once, before they are accepted.

Checking signatures and headers (what :mod:`pps.render.spec` does while parsing) lets a
truncated PNG through: its chunks are intact, its pixel data is not, and every render of the
template then fails. So ``pps template import`` decodes every file here the way the
renderer will read it: images with Pillow down to the last pixel, PDFs with both pikepdf
(which composes them) and pdfium (which rasterizes them), fonts with reportlab.

Pixel counts are checked on the header before anything is decoded, so an image of 80
megapixels is refused without the 2 GB its decoding would take. Plain Python, no Flask.
"""

from __future__ import annotations

import struct
import warnings
import zlib
from io import BytesIO
from typing import Literal

import pikepdf
import pypdfium2 as pdfium
from PIL import Image, UnidentifiedImageError
from reportlab.pdfbase.ttfonts import TTFont

from pps.render.assets import sniff
from pps.render.fonts import font_problem
from pps.render.pdf_budget import ContentBudget
from pps.render.pdf_errors import read_error
from pps.render.xobjects import MAX_FORM_DEPTH, survey_xobjects

__all__ = [
    "DECODE_ERRORS",
    "DEFAULT_MAX_IMAGE_PIXELS",
    "MAX_PDF_PAGES",
    "NOT_AN_IMAGE",
    "AssetFault",
    "asset_fault",
    "asset_problem",
    "image_pixels_problem",
]

#: Why a file cannot be rendered, for callers that word it themselves (the editor, for a
#: customer, in the page's language).
AssetFault = Literal["too_many_pixels", "unreadable"]
#: Why Pillow finds no image in a file: no format it knows has this header. Said in words,
#: as its own message names the in-memory stream by its repr.
NOT_AN_IMAGE = "its header is not one of a PNG or JPEG"
#: Images with more pixels than this are refused (``PPS_MAX_IMAGE_PIXELS``). Decoding
#: takes 3 to 4 bytes per pixel, so 40 megapixels bound one image at about 160 MB, and a
#: page image of a template rendered from it at about 1 s on one core.
DEFAULT_MAX_IMAGE_PIXELS = 40_000_000
#: Pages a PDF may have. Every page is opened by pikepdf and pdfium to be checked (some
#: 50 microseconds and several kilobytes each): a 64 MB file holds 700,000 empty pages.
#: Print products have a few hundred pages at most.
MAX_PDF_PAGES = 1000

#: What Pillow, pikepdf and pdfium raise for data they cannot decode: broken or truncated
#: streams (``OSError``, ``zlib.error``, ``EOFError``), bad headers (``SyntaxError``,
#: ``struct.error``, ``ValueError``), and each library's own error class.
DECODE_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    SyntaxError,
    ValueError,
    EOFError,
    struct.error,
    zlib.error,
    Image.DecompressionBombError,
    Image.DecompressionBombWarning,
    pikepdf.PdfError,
    pikepdf.PikepdfError,
    pdfium.PdfiumError,
)


def asset_problem(data: bytes, *, max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS) -> str | None:
    """Why ``data`` cannot be rendered, judged by decoding all of it; None when it can.

    The kind comes from the file's signature (the template's parser already checked that
    each file is the kind its use asks for).
    """
    fault = asset_fault(data, max_pixels=max_pixels)
    return None if fault is None else fault[1]


def asset_fault(
    data: bytes, *, max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS
) -> tuple[AssetFault, str] | None:
    """:func:`asset_problem` with the kind of fault beside its words (for a shop's
    developer): for a customer, an image with too many pixels is not a damaged one."""
    kind = sniff(data)
    if kind in ("png", "jpeg"):
        return _image_fault(data, max_pixels)
    if kind == "pdf":
        problem = _pdf_problem(data)
    elif kind in ("truetype", "cff", "collection"):
        problem = _font_problem(data)
    else:
        problem = "is not a PDF, PNG, JPEG or TrueType file"
    return None if problem is None else ("unreadable", problem)


def image_pixels_problem(data: bytes, max_pixels: int) -> str | None:
    """Why the image ``data`` has too many pixels, read from its header alone; or None.

    Cheap enough for every render: Pillow reads the header only until ``load()``.
    Non-images and unreadable headers pass; decoding reports those.
    """
    if sniff(data) not in ("png", "jpeg"):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(BytesIO(data)) as image:
                width, height = image.size
    except DECODE_ERRORS:
        return None
    return _too_many(width, height, max_pixels)


def _too_many(width: int, height: int, max_pixels: int) -> str | None:
    if width * height > max_pixels:
        return (
            f"is {width} x {height} pixels ({width * height / 1e6:.1f} megapixels), more than "
            f"the limit of {max_pixels / 1e6:g} megapixels (PPS_MAX_IMAGE_PIXELS); "
            "scale it down: print needs about 300 pixels per inch of its placed size"
        )
    return None


def _image_fault(data: bytes, max_pixels: int) -> tuple[AssetFault, str] | None:
    try:
        with warnings.catch_warnings():
            # Our own limit comes first; Pillow's bomb check is a second line behind it.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(BytesIO(data)) as image:
                too_many = _too_many(image.width, image.height, max_pixels)
                if too_many is not None:
                    return "too_many_pixels", too_many
                image.load()  # every pixel: a truncated stream fails here, not in a render
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        return "too_many_pixels", "has too many pixels"
    except UnidentifiedImageError:
        return "unreadable", f"cannot be decoded as an image: {NOT_AN_IMAGE}"
    except DECODE_ERRORS as exc:
        return "unreadable", f"cannot be decoded as an image: {exc or type(exc).__name__}"
    return None


def _pdf_problem(data: bytes) -> str | None:
    try:
        with pikepdf.open(BytesIO(data)) as pdf:
            too_many = _page_count_problem(pdf)
            if too_many is not None:
                return too_many
            budget = ContentBudget()
            for index, page in enumerate(pdf.pages):
                # Measured before anything decompresses it whole, pdfium above all.
                too_much = budget.problem(page)
                if too_much is not None:
                    return f"cannot be drawn: on page {index + 1}, {too_much}"
                # Decompresses and tokenizes each page's content, which the renderer copies
                # (keeping only ``Do``: every instruction as a Python object is not needed).
                pikepdf.parse_content_stream(page, "Do")
                depth = survey_xobjects(page.obj.get("/Resources")).depth
                if depth > MAX_FORM_DEPTH:  # the renderer refuses such a page
                    return (
                        f"nests form XObjects {depth} levels deep; "
                        f"at most {MAX_FORM_DEPTH} can be drawn"
                    )
    except pikepdf.PasswordError:
        return "is encrypted"
    except DECODE_ERRORS as exc:
        return f"cannot be read as PDF: {read_error(exc)}"
    try:
        document = pdfium.PdfDocument(data)
        try:
            for index in range(len(document)):
                document[index].get_size()
        finally:
            document.close()
    except DECODE_ERRORS as exc:
        return f"cannot be rasterized: {exc or type(exc).__name__}"
    return None


def _page_count_problem(pdf: pikepdf.Pdf) -> str | None:
    """Why ``pdf`` has too many pages, or None; the page tree's own count is read first,
    as counting the pages builds a list of them all."""
    tree = pdf.Root.get("/Pages")
    declared = tree.get("/Count") if isinstance(tree, pikepdf.Dictionary) else None
    pages = declared if isinstance(declared, int) and declared > MAX_PDF_PAGES else None
    if pages is None and len(pdf.pages) > MAX_PDF_PAGES:
        pages = len(pdf.pages)
    if pages is None:
        return None
    return f"has {pages} pages; at most {MAX_PDF_PAGES} are accepted"


def _font_problem(data: bytes) -> str | None:
    problem = font_problem(data)
    if problem is not None:
        return problem
    try:
        # Parsed, not registered: registering is the renderer's job, under its own name.
        TTFont("pps-import-check", BytesIO(data))
    except Exception as exc:  # reportlab raises bare exceptions for broken fonts
        return f"cannot be used as a font: {exc or type(exc).__name__}"
    return None
