"""The template format: an imported JSON object -> frozen, validated dataclasses.

Units: lengths in millimetres, font sizes and stroke widths in points (as in DTP tools).
Coordinates start at the top-left corner of the trim area and grow right and down, so a
designer can read them off a layout; negative values reach into the bleed. A template::

    {
      "name": "Business card",
      "dataKeys": ["name", "email"],                # optional: derived from the elements
      "size": {"width": 85, "height": 55, "unit": "mm"}, "bleed": 3,
      "pages": [{
        "background": {"color": "#ffffff"},          # or {"pdf": "art.pdf", "page": 0}
        "elements": [
          {"type": "text", "dataKey": "name", "box": {"x": 5, "y": 5, "width": 50,
           "height": 8}, "font": "Vera-Bold", "size": 12, "color": {"c": 0, "m": 0,
           "y": 0, "k": 100}, "align": "left", "shrinkToFit": true, "maxLength": 40},
          {"type": "qr", "dataKey": "email", "box": {...}},
          {"type": "image", "file": "logo.png", "box": {...}},
          {"type": "rect", "box": {...}, "fill": "#eeeeee", "stroke": "#000000"},
          {"type": "line", "from": {"x": 5, "y": 20}, "to": {"x": 80, "y": 20}}
        ]}]
    }

Old files of the first issue (name, dataKeys, customAttributes, no pages) still parse: they
become ``pageCount`` blank pages of :data:`DEFAULT_SIZE`. Every error is collected with its
path (``pages[0].elements[2].box.width: must be greater than 0``) before raising, so an
operator fixes a file in one round.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any, Literal, TypeVar

import pikepdf
from PIL import Image

from pps.render.assets import AssetLoader, DirectoryAssets, check_relative_name, sniff
from pps.render.errors import AssetError, SpecError
from pps.render.fonts import BUILTIN_FONTS, DEFAULT_FONT, is_font_file, load_font

__all__ = [
    "CMYK",
    "DEFAULT_SIZE",
    "MAX_VALUE_LENGTH",
    "RGB",
    "Box",
    "Color",
    "ColorBackground",
    "Element",
    "Field",
    "ImageElement",
    "LineElement",
    "Page",
    "PdfBackground",
    "Point",
    "QrElement",
    "RectElement",
    "SpecError",
    "TemplateSpec",
    "TextElement",
    "parse_spec",
]

#: Old templates without a size are business-card sized (width, height in mm).
DEFAULT_SIZE = (85.0, 55.0)
#: No single value is rendered beyond this many characters, whatever the template says.
MAX_VALUE_LENGTH = 10_000
MAX_PAGES = 100
MAX_ELEMENTS = 500
#: PDF viewers refuse pages beyond 200 inches (14 400 pt).
MAX_PAGE_MM = 5000.0
MAX_BLEED_MM = 50.0
MAX_FONT_PT = 1000.0
MAX_STROKE_PT = 100.0
MAX_NAME_LENGTH = 200
MAX_KEY_LENGTH = 200
#: Artwork is placed scaled uniformly; a different shape would be distorted or cropped.
ASPECT_TOLERANCE = 0.01

_IDENTIFIER = re.compile(r"[A-Za-z0-9_-]{1,64}")
_HEX = re.compile(r"#[0-9A-Fa-f]{6}")


@dataclass(frozen=True)
class RGB:
    """A screen colour, 0-255 per channel, written ``#RRGGBB`` in templates."""

    red: int
    green: int
    blue: int

    @property
    def hex(self) -> str:
        return f"#{self.red:02x}{self.green:02x}{self.blue:02x}"


@dataclass(frozen=True)
class CMYK:
    """A process colour, 0-100 per ink, passed to the PDF as DeviceCMYK for print."""

    c: float
    m: float
    y: float
    k: float


Color = RGB | CMYK
BLACK = RGB(0, 0, 0)


@dataclass(frozen=True)
class Box:
    """A rectangle in mm from the trim area's top-left corner."""

    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Point:
    x: float
    y: float


@dataclass(frozen=True)
class TextElement:
    """One line (or, with ``multiline``, a wrapped block) of text, bound or fixed."""

    box: Box
    data_key: str | None
    text: str | None
    font: str
    size: float
    color: Color
    align: Literal["left", "center", "right"]
    valign: Literal["top", "middle", "bottom"]
    shrink_to_fit: bool
    min_size: float
    max_length: int | None
    required: bool
    default: str | None
    multiline: bool
    line_height: float


@dataclass(frozen=True)
class QrElement:
    """A QR code drawn as vector squares, centred in its box (square: the smaller side)."""

    box: Box
    data_key: str | None
    text: str | None
    color: Color
    error_correction: Literal["L", "M", "Q", "H"]
    quiet_zone: int
    max_length: int | None
    required: bool
    default: str | None


@dataclass(frozen=True)
class ImageElement:
    """A PNG or JPEG shipped with the template."""

    box: Box
    file: str
    fit: Literal["contain", "cover", "stretch"]


@dataclass(frozen=True)
class RectElement:
    box: Box
    fill: Color | None
    stroke: Color | None
    stroke_width: float


@dataclass(frozen=True)
class LineElement:
    start: Point
    end: Point
    color: Color
    width: float


Element = TextElement | QrElement | ImageElement | RectElement | LineElement


@dataclass(frozen=True)
class PdfBackground:
    """A page of a PDF shipped with the template, placed as vector artwork.

    The artwork page's TrimBox (else CropBox, else MediaBox) is aligned with the template's
    trim area, so artwork made with bleed fills the bleed too.
    """

    file: str
    page: int


@dataclass(frozen=True)
class ColorBackground:
    color: Color


@dataclass(frozen=True)
class Page:
    background: PdfBackground | ColorBackground | None
    elements: tuple[Element, ...]


@dataclass(frozen=True)
class Field:
    """What the editor needs for one DataKey, merged over every element bound to it."""

    key: str
    max_length: int | None
    required: bool
    default: str | None
    multiline: bool


@dataclass(frozen=True)
class TemplateSpec:
    """A validated template; ``digest`` identifies its JSON for cache keys.

    Plain data (a dict, tuples, frozen dataclasses), so it pickles for a job queue.
    """

    name: str
    identifier: str | None
    data_keys: tuple[str, ...]
    custom_attributes: dict[str, Any]
    page_count: int
    width: float
    height: float
    bleed: float
    pages: tuple[Page, ...]
    fields: tuple[Field, ...]
    digest: str

    @property
    def files(self) -> tuple[str, ...]:
        """Every file the template refers to, sorted: what an importer must copy along."""
        names: set[str] = set()
        for page in self.pages:
            if isinstance(page.background, PdfBackground):
                names.add(page.background.file)
            for element in page.elements:
                if isinstance(element, ImageElement):
                    names.add(element.file)
                elif isinstance(element, TextElement) and is_font_file(element.font):
                    names.add(element.font)
        return tuple(sorted(names))

    def field(self, key: str) -> Field | None:
        return next((field for field in self.fields if field.key == key), None)


def parse_spec(data: Mapping[str, Any], base_dir: Path | None = None) -> TemplateSpec:
    """Validate a parsed template; raise :class:`SpecError` listing every problem.

    With ``base_dir`` every referenced file must exist inside it and be what it claims
    (a PDF with that page, a PNG/JPEG, a TrueType font); without it files are not opened,
    which is what the service does for templates it already imported.
    """
    if not isinstance(data, Mapping):
        raise SpecError([f"(template): must be a JSON object, got {_kind(data)}"])
    c = _Checker()
    name = _name(c, data)
    identifier = data.get("identifier")
    if identifier is not None and (
        not isinstance(identifier, str) or not _IDENTIFIER.fullmatch(identifier)
    ):
        c.error(
            "identifier", f"must be 1 to 64 letters, digits, '-' or '_', got {_show(identifier)}"
        )
        identifier = None
    listed = _data_keys(c, data)
    custom = data.get("customAttributes", {})
    if not isinstance(custom, Mapping):
        c.error("customAttributes", f"must be an object, got {_kind(custom)}")
        custom = {}

    has_pages = "pages" in data
    width, height = DEFAULT_SIZE
    if "size" in data:
        size = c.obj(data["size"], "size", {"width", "height", "unit"})
        if size is not None and size.get("unit", "mm") != "mm":
            c.error("size.unit", f'must be "mm" (the only unit), got {_show(size["unit"])}')
        if size is not None:
            width = c.number(size, "width", "size", gt=0, le=MAX_PAGE_MM) or width
            height = c.number(size, "height", "size", gt=0, le=MAX_PAGE_MM) or height
    elif has_pages:
        c.error("size", "is required when pages are given")
    bleed = c.number(data, "bleed", "", ge=0, le=MAX_BLEED_MM, default=0.0)
    bleed = 0.0 if bleed is None else bleed

    pages: list[Page] = []
    # Every valid element with its path in the file: errors found after parsing must name
    # the element's index in the file, not its index among the valid ones.
    placed: list[tuple[str, Element]] = []
    page_count_value = data.get("pageCount")
    if has_pages:
        raw_pages = data["pages"]
        if not isinstance(raw_pages, list) or not raw_pages:
            c.error("pages", f"must be a non-empty list, got {_show(raw_pages)}")
        elif len(raw_pages) > MAX_PAGES:
            c.error("pages", f"must have at most {MAX_PAGES} pages, got {len(raw_pages)}")
        else:
            pages = [
                _page(c, raw, f"pages[{index}]", placed) for index, raw in enumerate(raw_pages)
            ]
        if (
            page_count_value is not None
            and isinstance(raw_pages, list)
            and (not _is_int(page_count_value) or page_count_value != len(raw_pages))
        ):
            c.error(
                "pageCount",
                f"must equal the number of pages ({len(raw_pages)}), got {_show(page_count_value)}",
            )
    else:
        count = c.integer(data, "pageCount", "", ge=1, le=MAX_PAGES, default=1) or 1
        pages = [Page(background=None, elements=()) for _ in range(count)]

    data_keys, fields = _fields(c, placed, listed)
    if base_dir is not None:
        _check_files(c, pages, placed, DirectoryAssets(base_dir), width, height)
    if c.errors:
        raise SpecError(c.errors)
    return TemplateSpec(
        name=name,
        identifier=identifier,
        data_keys=data_keys,
        custom_attributes=dict(custom),
        page_count=len(pages),
        width=width,
        height=height,
        bleed=bleed,
        pages=tuple(pages),
        fields=fields,
        digest=_digest(data),
    )


# --- pieces of the format ---------------------------------------------------------------


def _name(c: _Checker, data: Mapping[str, Any]) -> str:
    name = data.get("name")
    if "name" not in data:
        c.error("name", "is required")
    elif not isinstance(name, str) or not name.strip():
        c.error("name", f"must be a non-empty string, got {_show(name)}")
    elif len(name) > MAX_NAME_LENGTH:
        c.error("name", f"must be at most {MAX_NAME_LENGTH} characters, got {len(name)}")
    else:
        return name.strip()
    return ""


def _data_keys(c: _Checker, data: Mapping[str, Any]) -> list[str] | None:
    if "dataKeys" not in data:
        return None
    value = data["dataKeys"]
    if not isinstance(value, list):
        c.error("dataKeys", f"must be a list of strings, got {_kind(value)}")
        return None
    seen: dict[str, int] = {}
    for index, key in enumerate(value):
        path = f"dataKeys[{index}]"
        if not isinstance(key, str) or not key.strip():
            c.error(path, f"must be a non-empty string, got {_show(key)}")
        elif len(key) > MAX_KEY_LENGTH:
            c.error(path, f"must be at most {MAX_KEY_LENGTH} characters")
        elif key in seen:
            c.error(path, f"duplicates dataKeys[{seen[key]}] ({key!r})")
        else:
            seen[key] = index
    return list(seen)


def _page(c: _Checker, raw: Any, path: str, placed: list[tuple[str, Element]]) -> Page:
    """One page; each valid element is also appended to ``placed`` with its path."""
    obj = c.obj(raw, path, {"background", "elements"})
    if obj is None:
        return Page(background=None, elements=())
    background: PdfBackground | ColorBackground | None = None
    if obj.get("background") is not None:
        background = _background(c, obj["background"], f"{path}.background")
    elements: list[Element] = []
    raw_elements = obj.get("elements", [])
    if not isinstance(raw_elements, list):
        c.error(f"{path}.elements", f"must be a list, got {_kind(raw_elements)}")
    elif len(raw_elements) > MAX_ELEMENTS:
        c.error(f"{path}.elements", f"must have at most {MAX_ELEMENTS} elements")
    else:
        for index, raw_element in enumerate(raw_elements):
            element_path = f"{path}.elements[{index}]"
            element = _element(c, raw_element, element_path)
            if element is not None:
                elements.append(element)
                placed.append((element_path, element))
    return Page(background=background, elements=tuple(elements))


def _background(c: _Checker, raw: Any, path: str) -> PdfBackground | ColorBackground | None:
    obj = c.obj(raw, path, {"pdf", "page", "color"})
    if obj is None:
        return None
    if ("pdf" in obj) == ("color" in obj):
        c.error(path, "must have either 'pdf' (with 'page') or 'color'")
        return None
    if "color" in obj:
        if "page" in obj:
            c.error(f"{path}.page", "only applies to a 'pdf' background")
        color = c.color(obj["color"], f"{path}.color")
        return None if color is None else ColorBackground(color)
    file = c.file(obj, "pdf", path)
    page = c.integer(obj, "page", path, ge=0, le=100_000, default=0)
    if file is None or page is None:
        return None
    return PdfBackground(file=file, page=page)


_FITS: tuple[Literal["contain", "cover", "stretch"], ...] = ("contain", "cover", "stretch")
_ALIGNS: tuple[Literal["left", "center", "right"], ...] = ("left", "center", "right")
_VALIGNS: tuple[Literal["top", "middle", "bottom"], ...] = ("top", "middle", "bottom")
_LEVELS: tuple[Literal["L", "M", "Q", "H"], ...] = ("L", "M", "Q", "H")
_COMMON = {"type", "box"}
_BINDING = {"dataKey", "text", "required", "default", "maxLength"}
_ALLOWED = {
    "text": _COMMON
    | _BINDING
    | {"font", "size", "color", "align", "valign", "shrinkToFit", "minSize", "multiline"}
    | {"lineHeight"},
    "qr": _COMMON | _BINDING | {"color", "errorCorrection", "quietZone"},
    "image": _COMMON | {"file", "fit"},
    "rect": _COMMON | {"fill", "stroke", "strokeWidth"},
    "line": {"type", "from", "to", "color", "width"},
}


def _element(c: _Checker, raw: Any, path: str) -> Element | None:
    if not isinstance(raw, Mapping):
        c.error(path, f"must be an object, got {_kind(raw)}")
        return None
    kind = raw.get("type")
    if kind not in _ALLOWED:
        c.error(f"{path}.type", f"must be one of {', '.join(_ALLOWED)}, got {_show(kind)}")
        return None
    before = len(c.errors)
    obj = c.obj(raw, path, _ALLOWED[kind])
    if obj is None:
        return None
    element: Element | None = None
    if kind == "line":
        element = _line(c, obj, path)
    else:
        box = _box(c, obj.get("box"), f"{path}.box")
        if kind == "text":
            element = _text(c, obj, path, box)
        elif kind == "qr":
            element = _qr(c, obj, path, box)
        elif kind == "image":
            file = c.file(obj, "file", path)
            fit = c.choice(obj, "fit", path, _FITS, "contain")
            if box is not None and file is not None and fit is not None:
                element = ImageElement(box=box, file=file, fit=fit)
        else:
            element = _rect(c, obj, path, box)
    return element if len(c.errors) == before else None


def _box(c: _Checker, raw: Any, path: str) -> Box | None:
    if raw is None:
        c.error(path, "is required")
        return None
    obj = c.obj(raw, path, {"x", "y", "width", "height"})
    if obj is None:
        return None
    x = c.number(obj, "x", path, ge=-MAX_PAGE_MM, le=MAX_PAGE_MM)
    y = c.number(obj, "y", path, ge=-MAX_PAGE_MM, le=MAX_PAGE_MM)
    width = c.number(obj, "width", path, gt=0, le=MAX_PAGE_MM)
    height = c.number(obj, "height", path, gt=0, le=MAX_PAGE_MM)
    if x is None or y is None or width is None or height is None:
        return None
    return Box(x, y, width, height)


def _binding(
    c: _Checker, obj: Mapping[str, Any], path: str
) -> tuple[str | None, str | None, int | None, bool, str | None]:
    """The ``dataKey`` / fixed ``text`` pair and the rules that come with a DataKey."""
    data_key = obj.get("dataKey")
    text = obj.get("text")
    if ("dataKey" in obj) == ("text" in obj):
        c.error(path, "must have either 'dataKey' or a fixed 'text'")
    if "dataKey" in obj and (
        not isinstance(data_key, str) or not data_key.strip() or len(data_key) > MAX_KEY_LENGTH
    ):
        c.error(f"{path}.dataKey", f"must be a non-empty string, got {_show(data_key)}")
    if "text" in obj and (not isinstance(text, str) or len(text) > MAX_VALUE_LENGTH):
        c.error(f"{path}.text", f"must be a string of at most {MAX_VALUE_LENGTH} characters")
    max_length = c.integer(obj, "maxLength", path, ge=1, le=MAX_VALUE_LENGTH, default=None)
    required = c.boolean(obj, "required", path, default=False)
    default = obj.get("default")
    if "default" in obj:
        if "dataKey" not in obj:
            c.error(f"{path}.default", "only applies to an element with a 'dataKey'")
        elif not isinstance(default, str):
            c.error(f"{path}.default", f"must be a string, got {_kind(default)}")
        elif len(default) > (max_length or MAX_VALUE_LENGTH):
            c.error(f"{path}.default", f"is longer than maxLength ({max_length})")
    for key in ("maxLength", "required"):
        if key in obj and "dataKey" not in obj:
            c.error(f"{path}.{key}", "only applies to an element with a 'dataKey'")
    return (
        data_key if isinstance(data_key, str) else None,
        text if isinstance(text, str) else None,
        max_length,
        bool(required),
        default if isinstance(default, str) else None,
    )


def _text(c: _Checker, obj: Mapping[str, Any], path: str, box: Box | None) -> TextElement | None:
    data_key, text, max_length, required, default = _binding(c, obj, path)
    font = obj.get("font", DEFAULT_FONT)
    if not isinstance(font, str) or not (font in BUILTIN_FONTS or is_font_file(font)):
        c.error(
            f"{path}.font",
            f"must be a built-in font ({', '.join(BUILTIN_FONTS)}) or a .ttf file beside "
            f"the template, got {_show(font)}",
        )
    elif is_font_file(font):
        c.relative(font, f"{path}.font")
    size = c.number(obj, "size", path, gt=0, le=MAX_FONT_PT, default=10.0)
    color = c.color(obj["color"], f"{path}.color") if "color" in obj else BLACK
    align = c.choice(obj, "align", path, _ALIGNS, "left")
    valign = c.choice(obj, "valign", path, _VALIGNS, "middle")
    shrink = c.boolean(obj, "shrinkToFit", path, default=False)
    min_size = c.number(obj, "minSize", path, gt=0, le=MAX_FONT_PT, default=4.0)
    if size is not None and min_size is not None and min_size > size and "minSize" in obj:
        c.error(f"{path}.minSize", f"must not be larger than size ({size:g})")
    multiline = c.boolean(obj, "multiline", path, default=False)
    line_height = c.number(obj, "lineHeight", path, ge=0.5, le=5, default=1.2)
    if (
        box is None
        or not isinstance(font, str)
        or size is None
        or color is None
        or align is None
        or valign is None
        or shrink is None
        or min_size is None
        or multiline is None
        or line_height is None
    ):
        return None
    return TextElement(
        box=box,
        data_key=data_key,
        text=text,
        font=font,
        size=size,
        color=color,
        align=align,
        valign=valign,
        shrink_to_fit=shrink,
        min_size=min(min_size, size),
        max_length=max_length,
        required=required,
        default=default,
        multiline=multiline,
        line_height=line_height,
    )


def _qr(c: _Checker, obj: Mapping[str, Any], path: str, box: Box | None) -> QrElement | None:
    data_key, text, max_length, required, default = _binding(c, obj, path)
    color = c.color(obj["color"], f"{path}.color") if "color" in obj else BLACK
    level = c.choice(obj, "errorCorrection", path, _LEVELS, "M")
    quiet_zone = c.integer(obj, "quietZone", path, ge=0, le=10, default=4)
    if box is None or color is None or level is None or quiet_zone is None:
        return None
    return QrElement(
        box=box,
        data_key=data_key,
        text=text,
        color=color,
        error_correction=level,
        quiet_zone=quiet_zone,
        max_length=max_length,
        required=required,
        default=default,
    )


def _rect(c: _Checker, obj: Mapping[str, Any], path: str, box: Box | None) -> RectElement | None:
    fill = c.color(obj["fill"], f"{path}.fill") if obj.get("fill") is not None else None
    stroke = c.color(obj["stroke"], f"{path}.stroke") if obj.get("stroke") is not None else None
    width = c.number(obj, "strokeWidth", path, gt=0, le=MAX_STROKE_PT, default=0.5)
    if obj.get("fill") is None and obj.get("stroke") is None:
        c.error(path, "needs a 'fill' or a 'stroke' colour")
    if box is None or width is None:
        return None
    return RectElement(box=box, fill=fill, stroke=stroke, stroke_width=width)


def _line(c: _Checker, obj: Mapping[str, Any], path: str) -> LineElement | None:
    points: list[Point] = []
    for key in ("from", "to"):
        point_path = f"{path}.{key}"
        if key not in obj:
            c.error(point_path, "is required")
            continue
        point = c.obj(obj[key], point_path, {"x", "y"})
        if point is None:
            continue
        x = c.number(point, "x", point_path, ge=-MAX_PAGE_MM, le=MAX_PAGE_MM)
        y = c.number(point, "y", point_path, ge=-MAX_PAGE_MM, le=MAX_PAGE_MM)
        if x is not None and y is not None:
            points.append(Point(x, y))
    color = c.color(obj["color"], f"{path}.color") if "color" in obj else BLACK
    width = c.number(obj, "width", path, gt=0, le=MAX_STROKE_PT, default=0.5)
    if len(points) != 2 or color is None or width is None:
        return None
    return LineElement(start=points[0], end=points[1], color=color, width=width)


def _fields(
    c: _Checker, placed: list[tuple[str, Element]], listed: list[str] | None
) -> tuple[tuple[str, ...], tuple[Field, ...]]:
    """DataKeys (listed, else derived in order of first use) and each key's merged rules."""
    rules: dict[str, Field] = {}
    for element_path, element in placed:
        if not isinstance(element, TextElement | QrElement) or element.data_key is None:
            continue
        key = element.data_key
        if listed is not None and key not in listed:
            c.error(f"{element_path}.dataKey", f"{key!r} is not listed in dataKeys")
        multiline = isinstance(element, TextElement) and element.multiline
        before = rules.get(key)
        if before is None:
            rules[key] = Field(
                key, element.max_length, element.required, element.default, multiline
            )
            continue
        lengths = [n for n in (before.max_length, element.max_length) if n is not None]
        rules[key] = Field(
            key=key,
            max_length=min(lengths) if lengths else None,
            required=before.required or element.required,
            default=before.default if before.default is not None else element.default,
            # A value shown on one line anywhere must be a single line everywhere.
            multiline=before.multiline and multiline,
        )
    keys = listed if listed is not None else list(rules)
    fields = tuple(rules.get(key) or Field(key, None, False, None, False) for key in keys)
    return tuple(keys), fields


# --- referenced files ----------------------------------------------------------------------


def _check_files(
    c: _Checker,
    pages: list[Page],
    placed: list[tuple[str, Element]],
    loader: AssetLoader,
    width: float,
    height: float,
) -> None:
    """Open every referenced file once and report problems at each path that names it."""
    problems: dict[tuple[str, str], str | None] = {}
    errors_before = len(c.errors)

    def check(kind: str, name: str, path: str, test: Callable[[bytes], str | None]) -> None:
        if (kind, name) not in problems:
            try:
                problems[kind, name] = test(loader(name))
            except AssetError as exc:
                problems[kind, name] = str(exc)
        problem = problems[kind, name]
        if problem is not None:
            c.error(path, problem if problem.startswith(repr(name)) else f"{name!r} {problem}")

    for page_index, page in enumerate(pages):
        background = page.background
        if isinstance(background, PdfBackground):
            check(
                f"pdf:{background.page}",
                background.file,
                f"pages[{page_index}].background.pdf",
                functools.partial(_pdf_problem, page=background.page, width=width, height=height),
            )
    for element_path, element in placed:
        if isinstance(element, ImageElement):
            check("image", element.file, f"{element_path}.file", _image_problem)
        elif isinstance(element, TextElement) and is_font_file(element.font):
            check(
                "font",
                element.font,
                f"{element_path}.font",
                functools.partial(_font_problem, element.font),
            )
    if len(c.errors) > errors_before:
        return
    # With every font loadable, fixed texts and defaults must fit their boxes: the
    # template's preview renders from the defaults.
    from pps.render.layout import fit_problem  # layout builds on this module's types

    for element_path, element in placed:
        for key, value in (("text", _fixed_text(element)), ("default", _default(element))):
            if value is None:
                continue
            problem = fit_problem(element, value, loader)
            if problem is not None:
                c.error(f"{element_path}.{key}", problem)


def _fixed_text(element: Element) -> str | None:
    return element.text if isinstance(element, TextElement | QrElement) else None


def _default(element: Element) -> str | None:
    return element.default if isinstance(element, TextElement | QrElement) else None


def _pdf_problem(data: bytes, page: int, width: float, height: float) -> str | None:
    if sniff(data) != "pdf":
        return "is not a PDF file"
    try:
        with pikepdf.open(BytesIO(data)) as pdf:
            if page >= len(pdf.pages):
                return f"has {len(pdf.pages)} page(s); page {page} does not exist (counted from 0)"
            art = pdf.pages[page]
            if int(art.obj.get("/Rotate", 0)) % 360:
                return f"page {page} is rotated; export the artwork unrotated"
            trim = art.trimbox
            art_w, art_h = float(trim[2]) - float(trim[0]), float(trim[3]) - float(trim[1])
    except pikepdf.PasswordError:
        return "is encrypted"
    except (pikepdf.PdfError, ValueError, TypeError) as exc:
        return f"cannot be read as PDF: {exc}"
    if art_w <= 0 or art_h <= 0:
        return f"page {page} has an empty trim box"
    if abs((art_w / art_h) / (width / height) - 1) > ASPECT_TOLERANCE:
        return (
            f"page {page} is {_mm(art_w):.1f} x {_mm(art_h):.1f} mm (trim), which does not have "
            f"the shape of the template's {width:g} x {height:g} mm"
        )
    return None


def _image_problem(data: bytes) -> str | None:
    if sniff(data) not in ("png", "jpeg"):
        return "is not a PNG or JPEG file"
    try:
        with warnings.catch_warnings():
            # A decompression bomb warning becomes an error: such an image is refused.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(BytesIO(data)) as image:
                image.verify()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        return "has too many pixels"
    except (OSError, SyntaxError, ValueError) as exc:
        return f"cannot be read as an image: {exc}"
    return None


def _font_problem(name: str, data: bytes) -> str | None:
    try:
        load_font(name, lambda _name: data)
    except AssetError as exc:
        return str(exc)
    return None


# --- checking helpers ----------------------------------------------------------------------

_T = TypeVar("_T")
_MISSING: Any = object()


class _Checker:
    """Reads typed values out of JSON objects, recording ``path: message`` for each problem."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(f"{path or '(template)'}: {message}")

    def obj(self, raw: Any, path: str, allowed: set[str]) -> Mapping[str, Any] | None:
        """``raw`` as an object; unknown keys are errors so a typo is not silently ignored."""
        if not isinstance(raw, Mapping):
            self.error(path, f"must be an object, got {_kind(raw)}")
            return None
        for key in raw:
            if key not in allowed:
                self.error(_join(path, str(key)), f"is not a known key here ({_list(allowed)})")
        return raw

    def number(
        self,
        obj: Mapping[str, Any],
        key: str,
        path: str,
        *,
        gt: float | None = None,
        ge: float | None = None,
        le: float | None = None,
        default: Any = _MISSING,
    ) -> float | None:
        where = _join(path, key)
        if key not in obj:
            if default is _MISSING:
                self.error(where, "is required")
                return None
            return default  # type: ignore[no-any-return]
        value = obj[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.error(where, f"must be a number, got {_show(value)}")
            return None
        if not math.isfinite(value):
            self.error(where, "must be a finite number")
            return None
        if gt is not None and value <= gt:
            self.error(where, f"must be greater than {gt:g}")
        elif ge is not None and value < ge:
            self.error(where, f"must be at least {ge:g}")
        elif le is not None and value > le:
            self.error(where, f"must be at most {le:g}")
        else:
            return float(value)
        return None

    def integer(
        self,
        obj: Mapping[str, Any],
        key: str,
        path: str,
        *,
        ge: int,
        le: int,
        default: Any = _MISSING,
    ) -> int | None:
        where = _join(path, key)
        if key not in obj:
            if default is _MISSING:
                self.error(where, "is required")
            return None if default is _MISSING else default
        value = obj[key]
        if not _is_int(value) or value < ge:
            self.error(where, f"must be a whole number of at least {ge}, got {_show(value)}")
            return None
        if value > le:
            self.error(where, f"must be a whole number of at most {le}, got {_show(value)}")
            return None
        return int(value)

    def boolean(self, obj: Mapping[str, Any], key: str, path: str, *, default: bool) -> bool | None:
        value = obj.get(key, default)
        if not isinstance(value, bool):
            self.error(_join(path, key), f"must be true or false, got {_show(value)}")
            return None
        return value

    def choice(
        self, obj: Mapping[str, Any], key: str, path: str, options: tuple[_T, ...], default: _T
    ) -> _T | None:
        value = obj.get(key, default)
        if value not in options:
            self.error(
                _join(path, key),
                f"must be one of {', '.join(map(str, options))}, got {_show(value)}",
            )
            return None
        return value  # type: ignore[no-any-return]

    def color(self, raw: Any, path: str) -> Color | None:
        if isinstance(raw, str):
            if not _HEX.fullmatch(raw):
                self.error(path, f"must be '#RRGGBB' or a CMYK object, got {_show(raw)}")
                return None
            return RGB(int(raw[1:3], 16), int(raw[3:5], 16), int(raw[5:7], 16))
        if not isinstance(raw, Mapping):
            self.error(path, f"must be '#RRGGBB' or a CMYK object, got {_kind(raw)}")
            return None
        obj = self.obj(raw, path, {"c", "m", "y", "k"})
        if obj is None:
            return None
        inks = [self.number(obj, ink, path, ge=0, le=100) for ink in ("c", "m", "y", "k")]
        c, m, y, k = inks
        if c is None or m is None or y is None or k is None:
            return None
        return CMYK(c, m, y, k)

    def relative(self, name: str, path: str) -> bool:
        problem = check_relative_name(name)
        if problem is not None:
            self.error(path, problem)
            return False
        return True

    def file(self, obj: Mapping[str, Any], key: str, path: str) -> str | None:
        where = _join(path, key)
        value = obj.get(key)
        if key not in obj:
            self.error(where, "is required")
        elif not isinstance(value, str):
            self.error(where, f"must be a file name relative to the template, got {_kind(value)}")
        elif self.relative(value, where):
            return value
        return None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _list(keys: set[str]) -> str:
    return ", ".join(sorted(keys))


def _mm(points: float) -> float:
    return points * 25.4 / 72


def _digest(data: Mapping[str, Any]) -> str:
    try:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(data)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    if isinstance(value, Mapping | list):
        return _kind(value)
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
