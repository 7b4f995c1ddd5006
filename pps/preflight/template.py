"""Preflight of a draft built from a template: the render model, the values and the files.

Two parts, so variable data can check its rows one by one and the files only once:

* :func:`check_template`: what does not depend on the values: images below
  :data:`~pps.preflight.status.MIN_DPI` at their placed size, fonts whose licence forbids
  embedding, and, in a template with ``"colorSpace": "cmyk"``, RGB images and colours;
* :func:`check_values`: what the values do: required values missing, values too long,
  texts that do not fit their box, characters the font lacks (the renderer's own checks,
  so preflight and the print file never disagree).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator, Mapping
from io import BytesIO

from PIL import Image

from pps.preflight.fonts import embedding_restricted
from pps.preflight.status import MIN_DPI, Finding
from pps.render import TemplateSpec
from pps.render import check_values as render_check_values
from pps.render.assets import AssetLoader
from pps.render.errors import AssetError
from pps.render.fonts import is_font_file
from pps.render.media import upload_identifier
from pps.render.model import (
    RGB,
    ColorBackground,
    Element,
    ImageElement,
    LineElement,
    QrElement,
    RectElement,
    TextElement,
)
from pps.render.problems import english
from pps.render.vector import is_svg, svg_problem

__all__ = ["check_template", "check_values", "placed_dpi"]

_ELEMENT_LABEL = re.compile(r"pages\[(\d+)\]\.elements\[(\d+)\]")
#: Pillow modes that hold RGB data (a palette is RGB too); L, 1 and CMYK do not.
_RGB_MODES = frozenset({"RGB", "RGBA", "RGBX", "P", "PA"})


def check_template(spec: TemplateSpec, loader: AssetLoader) -> list[Finding]:
    """Findings that hold for every record: images, fonts and colours (``row`` is None)."""
    findings: list[Finding] = []
    cmyk = spec.color_space == "cmyk"
    fonts_seen: set[str] = set()
    for page_index, page in enumerate(spec.pages):
        number = page_index + 1
        background = page.background
        if cmyk and isinstance(background, ColorBackground) and isinstance(background.color, RGB):
            findings.append(_rgb(number, f"the background colour {background.color.hex}"))
        for index, element in enumerate(page.elements):
            where = f"element {index + 1}"
            if isinstance(element, ImageElement):
                findings.extend(_image_findings(element, loader, number, cmyk))
                continue
            if cmyk:
                for label, color in _colors(element):
                    if isinstance(color, RGB):
                        findings.append(_rgb(number, f"{label} of {where} ({color.hex})"))
            if (
                isinstance(element, TextElement)
                and is_font_file(element.font)
                and element.font not in fonts_seen
            ):
                fonts_seen.add(element.font)
                try:
                    restricted = embedding_restricted(loader(element.font))
                except AssetError as exc:
                    findings.append(Finding(number, f"Font {exc}", "error"))
                    continue
                if restricted:
                    findings.append(
                        Finding(
                            number,
                            f"Font {element.font!r} may not be embedded: its licence "
                            "(OS/2 fsType) restricts embedding.",
                            "error",
                        )
                    )
    return findings


def check_values(
    spec: TemplateSpec,
    values: Mapping[str, object],
    loader: AssetLoader,
    *,
    row: int | None = None,
) -> list[Finding]:
    """Findings for one record's values: each problem on the first page showing its DataKey."""
    findings: list[Finding] = []
    first_page = _first_pages(spec)
    for label, problems in render_check_values(spec, values, loader).items():
        match = _ELEMENT_LABEL.fullmatch(label)
        if match is not None:  # a fixed text of the template
            page = int(match.group(1)) + 1
            name = f"the fixed text of element {int(match.group(2)) + 1}"
        else:
            page = first_page.get(label, 1)
            name = repr(label)
        for problem in problems:
            findings.append(Finding(page, f"{name}: {english(problem)}", "error", row))
    return findings


def placed_dpi(pixels: tuple[int, int], box_mm: tuple[float, float], fit: str) -> float:
    """The lower resolution of an image of ``pixels`` placed in a box of ``box_mm``.

    ``contain`` scales the image to fit inside the box, ``cover`` to fill it (cropping),
    ``stretch`` to the box's own width and height.
    """
    (px_w, px_h), (box_w, box_h) = pixels, box_mm
    if fit == "stretch":
        return min(px_w / (box_w / 25.4), px_h / (box_h / 25.4))
    scale = min(box_w / px_w, box_h / px_h) if fit == "contain" else max(box_w / px_w, box_h / px_h)
    # mm per pixel -> pixels per inch, the same on both axes.
    return 25.4 / scale


def _image_findings(
    element: ImageElement, loader: AssetLoader, page: int, cmyk: bool
) -> Iterator[Finding]:
    if element.file is None:
        return
    key = element.data_key
    name = _image_name(element.file, key)
    data = b""
    try:
        data = loader(element.file)
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(BytesIO(data)) as image:  # the header only: nothing is decoded
                size, mode = image.size, image.mode
    except AssetError as exc:
        # The loader's message names the file: a template's by its name, an upload by its
        # identifier (and the DataKey is added here).
        where = "Image" if upload_identifier(element.file) is None else f"The image of {key!r}:"
        yield Finding(page, f"{where} {exc}", "error")
        return
    except (OSError, ValueError, Image.DecompressionBombError, Image.DecompressionBombWarning):
        if is_svg(data):
            # Vector artwork is sharp at any size, but one stored before the drawing limits
            # (or one svglib cannot draw) fails every file of the draft: judged as at upload.
            problem = svg_problem(data)
            if problem is not None:
                yield Finding(page, f"{name} cannot be drawn: {problem}.", "error")
            return
        yield Finding(page, f"{name} cannot be read.", "error")
        return
    if element.crop is not None:  # the customer's crop is what gets enlarged
        size = (max(1, round(element.crop.width)), max(1, round(element.crop.height)))
    dpi = placed_dpi(size, (element.box.width, element.box.height), element.fit)
    if dpi < MIN_DPI:
        yield Finding(
            page,
            f"{name} has {dpi:.0f} dpi at its placed size "
            f"({size[0]} x {size[1]} px in {element.box.width:g} x {element.box.height:g} mm); "
            f"print needs at least {MIN_DPI} dpi.",
            "warning",
        )
    if cmyk and mode in _RGB_MODES:
        yield _rgb(page, f"{name[0].lower()}{name[1:]} ({mode})")


def _image_name(file: str, data_key: str | None) -> str:
    """How a finding names an image: a customer's upload by its DataKey and identifier (its
    asset name, ``../uploads/<identifier>``, means nothing to a shop), else by its file."""
    identifier = upload_identifier(file)
    if identifier is None:
        return f"Image {file!r}"
    return f"The image of {data_key!r} (uploaded file {identifier!r})"


def _colors(element: Element) -> Iterator[tuple[str, object]]:
    if isinstance(element, TextElement | QrElement | LineElement):
        yield "the colour", element.color
    elif isinstance(element, RectElement):
        yield "the fill", element.fill
        yield "the stroke", element.stroke


def _rgb(page: int, what: str) -> Finding:
    return Finding(
        page,
        f"RGB in a CMYK template: {what} will be converted by the printer and may shift.",
        "warning",
    )


def _first_pages(spec: TemplateSpec) -> dict[str, int]:
    """Each DataKey's first page (counted from 1)."""
    pages: dict[str, int] = {}
    for page_index, page in enumerate(spec.pages):
        for element in page.elements:
            key = getattr(element, "data_key", None)
            if isinstance(key, str):
                pages.setdefault(key, page_index + 1)
    return pages
