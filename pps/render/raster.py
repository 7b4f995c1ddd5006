"""A page as PNG: composed at trim size with full-resolution content, rasterized by pdfium.

Rasterizing the same PDF the print file is made from means the preview shows what prints,
fonts and artwork included, rather than a second drawing of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from io import BytesIO

import pypdfium2 as pdfium
from PIL import Image

from pps.render.assets import Assets, as_loader
from pps.render.errors import RenderOptionError
from pps.render.layout import MM
from pps.render.model import TemplateSpec
from pps.render.pdf import RENDER_LOCK, render_page_pdf

__all__ = ["DEFAULT_DPI", "MAX_PIXELS", "image_size", "render_page_image", "render_png"]

#: Each side of a PNG is 1 to this many pixels; larger requests are refused, not clamped.
MAX_PIXELS = 4000
#: Without width or height, pages are rendered at this resolution (within MAX_PIXELS).
DEFAULT_DPI = 150
PNG_COMPRESS_LEVEL = 3


def image_size(spec: TemplateSpec, width: int | None, height: int | None) -> tuple[int, int]:
    """The pixel size of a page image: one side given keeps the aspect ratio, both fit inside.

    Raises :class:`RenderOptionError` (a ``ValueError``) for sizes outside 1..MAX_PIXELS.
    """
    for name, value in (("width", width), ("height", height)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PIXELS
        ):
            raise RenderOptionError(
                f"{name} must be a whole number of pixels from 1 to {MAX_PIXELS}, got {value!r}"
            )
    aspect = spec.width / spec.height
    if width is None and height is None:
        w, h = spec.width / 25.4 * DEFAULT_DPI, spec.height / 25.4 * DEFAULT_DPI
    elif width is None:
        assert height is not None
        w, h = height * aspect, float(height)
    elif height is None or width / height <= aspect:
        w, h = float(width), width / aspect
    else:
        w, h = height * aspect, float(height)
    # A very wide or tall page asked by its short side is scaled down whole, never distorted.
    scale = min(1.0, MAX_PIXELS / w, MAX_PIXELS / h)
    return max(1, round(w * scale)), max(1, round(h * scale))


def render_png(
    spec: TemplateSpec,
    values: Mapping[str, object],
    assets: Assets,
    page: int = 0,
    width: int | None = None,
    height: int | None = None,
    *,
    allow_missing: bool = False,
) -> bytes:
    """PNG bytes of ``page`` (counted from 0) of the trim area, RGB on white.

    Raises :class:`RenderOptionError` for an unknown page or a size out of range, and
    ``InvalidValues`` naming each bad DataKey. ``allow_missing`` lets required keys stay
    empty: a template's thumbnail is rendered from its defaults, which may leave some out.
    """
    image = render_page_image(
        spec, values, assets, page, width, height, allow_missing=allow_missing
    )
    out = BytesIO()
    # Level 3 takes ~40% less time than the default 6 for ~10% more bytes: page
    # images are mostly previews the editor asks for as the customer types.
    image.save(out, "PNG", compress_level=PNG_COMPRESS_LEVEL)
    return out.getvalue()


def render_page_image(
    spec: TemplateSpec,
    values: Mapping[str, object],
    assets: Assets,
    page: int = 0,
    width: int | None = None,
    height: int | None = None,
    *,
    allow_missing: bool = False,
) -> Image.Image:
    """:func:`render_png` before encoding: the page as an RGB image, for callers that send
    another format (the editor's live preview: JPEG encodes several times faster)."""
    if isinstance(page, bool) or not isinstance(page, int) or not 0 <= page < len(spec.pages):
        raise RenderOptionError(
            f"page must be from 0 to {len(spec.pages) - 1} (counted from 0), got {page!r}"
        )
    size = image_size(spec, width, height)
    pdf_bytes = render_page_pdf(spec, values, as_loader(assets), page, allow_missing=allow_missing)
    with RENDER_LOCK:
        document = pdfium.PdfDocument(pdf_bytes)
        try:
            # Scale per axis so the bitmap is exactly the size asked for.
            bitmap = document[0].render(
                scale=size[0] / (spec.width * MM),
                fill_color=(255, 255, 255, 255),
                may_draw_forms=False,
            )
            image: Image.Image = bitmap.to_pil().convert("RGB")
        finally:
            document.close()
    if image.size != size:
        # pdfium rounds the bitmap up to whole pixels: drop that sliver rather than resample.
        if image.width - size[0] in (0, 1) and image.height - size[1] in (0, 1):
            image = image.crop((0, 0, *size))
        else:
            image = image.resize(size, Image.Resampling.LANCZOS)
    return image
