"""The template format: an imported JSON object -> a validated :class:`TemplateSpec`.

A template::

    {
      "name": "Business card",
      "dataKeys": ["name", "email"],                # optional: derived from the elements
      "fields": {"name": {"label": {"en": "Name", "de": "Name"}, "inputType": "text"}},
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

Any colour may be ``{"swatch": "<name>"}``, a named colour of ``swatches`` that each of the
template's ``variants`` may swap, with page backgrounds (see :mod:`pps.render.variants`,
also for ``themes``). ``fields`` gives each DataKey its words in the editor (label, help,
placeholder, per language) and its kind of input (:mod:`pps.render.field_info`).
Units and coordinates are described in :mod:`pps.render.model`.
Old files of the first issue (name, dataKeys, customAttributes, no pages) still parse: they
become ``pageCount`` blank pages of :data:`~pps.render.model.DEFAULT_SIZE`. Every problem
is collected with its path (``pages[0].elements[2].box.width: must be greater than 0``)
before raising, so an operator fixes a file in one round; with the template's folder,
:mod:`pps.render.checks` opens the files it names too.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pps.render.assets import DirectoryAssets
from pps.render.checks import check_files
from pps.render.choices import parse_choices
from pps.render.errors import SpecError
from pps.render.field_info import apply_field_info
from pps.render.fonts import BUILTIN_FONTS, DEFAULT_FONT, is_font_file
from pps.render.model import (
    BLACK,
    DEFAULT_SIZE,
    MAX_BLEED_MM,
    MAX_ELEMENTS,
    MAX_FONT_PT,
    MAX_KEY_LENGTH,
    MAX_NAME_LENGTH,
    MAX_PAGE_MM,
    MAX_PAGES,
    MAX_STROKE_PT,
    MAX_VALUE_LENGTH,
    Box,
    ColorBackground,
    Element,
    Field,
    ImageElement,
    LineElement,
    Page,
    PdfBackground,
    Point,
    QrElement,
    RectElement,
    TemplateSpec,
    TextElement,
)
from pps.render.problems import Code, Problem
from pps.render.reader import Reader, is_int, kind_of, shown
from pps.render.variants import parse_swatches, parse_themes, parse_variants

__all__ = ["parse_spec"]

_IDENTIFIER = re.compile(r"[A-Za-z0-9_-]{1,64}")


def parse_spec(
    data: Mapping[str, Any], base_dir: Path | None = None, *, variant: str | None = None
) -> TemplateSpec:
    """Validate a parsed template; raise :class:`SpecError` listing every problem.

    With ``base_dir`` every referenced file must exist inside it and be what it claims
    (a PDF with that page, a PNG/JPEG, a TrueType font); without it files are not opened,
    which is what the service does for templates it already imported. ``variant`` (an
    identifier of the template's ``variants``) resolves swatches and backgrounds as that
    variant sets them (see :mod:`pps.render.variants`); None renders the template's own.
    """
    if not isinstance(data, Mapping):
        raise SpecError([("", Problem(Code.SPEC_NOT_JSON_OBJECT, {"kind": kind_of(data)}))])
    c = Reader()
    name = _name(c, data)
    identifier = data.get("identifier")
    if identifier is not None and (
        not isinstance(identifier, str) or not _IDENTIFIER.fullmatch(identifier)
    ):
        c.error("identifier", Code.SPEC_IDENTIFIER, got=shown(identifier))
        identifier = None
    listed = _data_keys(c, data)
    custom = data.get("customAttributes", {})
    if not isinstance(custom, Mapping):
        c.error("customAttributes", Code.SPEC_NOT_OBJECT, kind=kind_of(custom))
        custom = {}

    swatches = parse_swatches(c, data)
    c.swatches = swatches
    has_pages = "pages" in data
    width, height = DEFAULT_SIZE
    if "size" in data:
        size = c.obj(data["size"], "size", {"width", "height", "unit"})
        if size is not None and size.get("unit", "mm") != "mm":
            c.error("size.unit", Code.SPEC_UNIT, got=shown(size["unit"]))
        if size is not None:
            width = c.number(size, "width", "size", gt=0, le=MAX_PAGE_MM) or width
            height = c.number(size, "height", "size", gt=0, le=MAX_PAGE_MM) or height
    elif has_pages:
        c.error("size", Code.SPEC_SIZE_REQUIRED)
    bleed = c.number(data, "bleed", "", ge=0, le=MAX_BLEED_MM, default=0.0)
    bleed = 0.0 if bleed is None else bleed
    color_space = (
        c.choice(data, "colorSpace", "", _COLOR_SPACES, "cmyk") if "colorSpace" in data else None
    )

    pages: list[Page] = []
    # Every valid element with its path in the file: errors found after parsing must name
    # the element's index in the file, not its index among the valid ones.
    placed: list[tuple[str, Element]] = []
    page_count_value = data.get("pageCount")
    if has_pages:
        raw_pages = data["pages"]
        if not isinstance(raw_pages, list) or not raw_pages:
            c.error("pages", Code.SPEC_NON_EMPTY_LIST, got=shown(raw_pages))
        elif len(raw_pages) > MAX_PAGES:
            c.error("pages", Code.SPEC_TOO_MANY_PAGES, limit=MAX_PAGES, count=len(raw_pages))
        else:
            pages = [
                _page(c, raw, f"pages[{index}]", placed) for index, raw in enumerate(raw_pages)
            ]
        if (
            page_count_value is not None
            and isinstance(raw_pages, list)
            and (not is_int(page_count_value) or page_count_value != len(raw_pages))
        ):
            c.error(
                "pageCount", Code.SPEC_PAGE_COUNT, pages=len(raw_pages), got=shown(page_count_value)
            )
    else:
        count = c.integer(data, "pageCount", "", ge=1, le=MAX_PAGES, default=1) or 1
        pages = [Page(background=None, elements=()) for _ in range(count)]

    data_keys, fields = _fields(c, placed, listed)
    fields = apply_field_info(c, data, fields)
    variants = parse_variants(c, data, swatches, max(1, len(pages)), _background)
    themes = parse_themes(c, data, variants)
    if base_dir is not None:  # at import only: a stored template keeps rendering
        for element_path, element in placed:
            _off_page(c, element_path, element, width, height, bleed)
        artwork = [
            (f"variants[{index}].backgrounds.{page}.pdf", background)
            for index, item in enumerate(variants)
            for page, background in item.backgrounds.items()
            if isinstance(background, PdfBackground)
        ]
        check_files(c, pages, placed, DirectoryAssets(base_dir), width, height, artwork)
    active = None
    if variant is not None and not c.problems:
        active = next((item for item in variants if item.identifier == variant), None)
        if active is None:
            c.error(
                "variant",
                Code.SPEC_UNKNOWN_VARIANT,
                variants=", ".join(item.identifier for item in variants) or "none",
                got=shown(variant),
            )
        else:
            # Parse the pages again with the variant's colours: elements keep plain colours.
            c.swatches = {**swatches, **active.swatches}
            placed = []
            pages = (
                [
                    _page(c, raw, f"pages[{index}]", placed)
                    for index, raw in enumerate(data["pages"])
                ]
                if has_pages
                else pages
            )
            pages = [
                Page(
                    background=active.backgrounds.get(index, page.background),
                    elements=page.elements,
                )
                for index, page in enumerate(pages)
            ]
    # After the variant: a choice's default and its options see the variant's swatches.
    choices = parse_choices(c, data.get("pages"), pages, data_keys)
    if base_dir is not None and not c.problems:
        fonts = [
            (f"choices.{choice.key}", option.value)
            for choice in choices
            if choice.property == "font"
            for option in choice.options
            if is_font_file(option.value)
        ]
        check_files(c, [], [], DirectoryAssets(base_dir), width, height, fonts=fonts)
    if c.problems:
        raise SpecError(c.problems)
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
        # The template's own look keeps the digest of its JSON; a variant's differs.
        digest=_digest(data) if active is None else _digest({"spec": data, "variant": variant}),
        variants=variants,
        themes=themes,
        variant=None if active is None else active.identifier,
        color_space=color_space,
        choices=choices,
    )


# --- pieces of the format ---------------------------------------------------------------


def _name(c: Reader, data: Mapping[str, Any]) -> str:
    name = data.get("name")
    if "name" not in data:
        c.error("name", Code.SPEC_REQUIRED)
    elif not isinstance(name, str) or not name.strip():
        c.error("name", Code.SPEC_NON_EMPTY_STRING, got=shown(name))
    elif len(name) > MAX_NAME_LENGTH:
        c.error("name", Code.SPEC_TOO_LONG, limit=MAX_NAME_LENGTH, length=len(name))
    else:
        return name.strip()
    return ""


def _data_keys(c: Reader, data: Mapping[str, Any]) -> list[str] | None:
    if "dataKeys" not in data:
        return None
    value = data["dataKeys"]
    if not isinstance(value, list):
        c.error("dataKeys", Code.SPEC_STRING_LIST, kind=kind_of(value))
        return None
    seen: dict[str, int] = {}
    for index, key in enumerate(value):
        path = f"dataKeys[{index}]"
        if not isinstance(key, str) or not key.strip():
            c.error(path, Code.SPEC_NON_EMPTY_STRING, got=shown(key))
        elif len(key) > MAX_KEY_LENGTH:
            c.error(path, Code.SPEC_KEY_TOO_LONG, limit=MAX_KEY_LENGTH)
        elif key in seen:
            c.error(path, Code.SPEC_DUPLICATE_KEY, first=seen[key], key=repr(key))
        else:
            seen[key] = index
    return list(seen)


def _page(c: Reader, raw: Any, path: str, placed: list[tuple[str, Element]]) -> Page:
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
        c.error(f"{path}.elements", Code.SPEC_NOT_LIST, kind=kind_of(raw_elements))
    elif len(raw_elements) > MAX_ELEMENTS:
        c.error(f"{path}.elements", Code.SPEC_TOO_MANY_ELEMENTS, limit=MAX_ELEMENTS)
    else:
        for index, raw_element in enumerate(raw_elements):
            element_path = f"{path}.elements[{index}]"
            element = _element(c, raw_element, element_path)
            if element is not None:
                elements.append(element)
                placed.append((element_path, element))
    return Page(background=background, elements=tuple(elements))


def _background(c: Reader, raw: Any, path: str) -> PdfBackground | ColorBackground | None:
    obj = c.obj(raw, path, {"pdf", "page", "color"})
    if obj is None:
        return None
    if ("pdf" in obj) == ("color" in obj):
        c.error(path, Code.SPEC_BACKGROUND)
        return None
    if "color" in obj:
        if "page" in obj:
            c.error(f"{path}.page", Code.SPEC_PDF_ONLY)
        color = c.color(obj["color"], f"{path}.color")
        return None if color is None else ColorBackground(color)
    file = c.file(obj, "pdf", path)
    page = c.integer(obj, "page", path, ge=0, le=100_000, default=0)
    if file is None or page is None:
        return None
    return PdfBackground(file=file, page=page)


_COLOR_SPACES: tuple[Literal["cmyk", "rgb"], ...] = ("cmyk", "rgb")
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
    | {"lineHeight", "choices", "id"},
    "qr": _COMMON | _BINDING | {"color", "errorCorrection", "quietZone"},
    "image": _COMMON | {"file", "fit", "dataKey", "required"},
    "rect": _COMMON | {"fill", "stroke", "strokeWidth"},
    "line": {"type", "from", "to", "color", "width"},
}


def _element(c: Reader, raw: Any, path: str) -> Element | None:
    if not isinstance(raw, Mapping):
        c.error(path, Code.SPEC_NOT_OBJECT, kind=kind_of(raw))
        return None
    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in _ALLOWED:  # a list or object: unhashable
        c.error(f"{path}.type", Code.SPEC_CHOICE, options=", ".join(_ALLOWED), got=shown(kind))
        return None
    before = len(c.problems)
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
            element = _image(c, obj, path, box)
        else:
            element = _rect(c, obj, path, box)
    return element if len(c.problems) == before else None


def _image(c: Reader, obj: Mapping[str, Any], path: str, box: Box | None) -> ImageElement | None:
    """A template's image, or (with ``dataKey``) the customer's, ``file`` standing in."""
    data_key = obj.get("dataKey")
    if "dataKey" in obj and (
        not isinstance(data_key, str) or not data_key.strip() or len(data_key) > MAX_KEY_LENGTH
    ):
        c.error(f"{path}.dataKey", Code.SPEC_NON_EMPTY_STRING, got=shown(data_key))
    if "file" not in obj and "dataKey" not in obj:
        c.error(path, Code.SPEC_IMAGE_SOURCE)
    file = c.file(obj, "file", path) if "file" in obj else None
    fit = c.choice(obj, "fit", path, _FITS, "contain")
    required = c.boolean(obj, "required", path, default=False)
    if "required" in obj and "dataKey" not in obj:
        c.error(f"{path}.required", Code.SPEC_DATA_KEY_ONLY)
    if box is None or fit is None or required is None:
        return None
    return ImageElement(
        box=box,
        file=file,
        fit=fit,
        data_key=data_key if isinstance(data_key, str) else None,
        required=required,
    )


def _box(c: Reader, raw: Any, path: str) -> Box | None:
    if raw is None:
        c.error(path, Code.SPEC_REQUIRED)
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
    c: Reader, obj: Mapping[str, Any], path: str
) -> tuple[str | None, str | None, int | None, bool, str | None]:
    """The ``dataKey`` / fixed ``text`` pair and the rules that come with a DataKey."""
    data_key = obj.get("dataKey")
    text = obj.get("text")
    if ("dataKey" in obj) == ("text" in obj):
        c.error(path, Code.SPEC_BINDING)
    if "dataKey" in obj and (
        not isinstance(data_key, str) or not data_key.strip() or len(data_key) > MAX_KEY_LENGTH
    ):
        c.error(f"{path}.dataKey", Code.SPEC_NON_EMPTY_STRING, got=shown(data_key))
    if "text" in obj and (not isinstance(text, str) or len(text) > MAX_VALUE_LENGTH):
        c.error(f"{path}.text", Code.SPEC_FIXED_TEXT, limit=MAX_VALUE_LENGTH)
    max_length = c.integer(obj, "maxLength", path, ge=1, le=MAX_VALUE_LENGTH, default=None)
    required = c.boolean(obj, "required", path, default=False)
    default = obj.get("default")
    if "default" in obj:
        if "dataKey" not in obj:
            c.error(f"{path}.default", Code.SPEC_DATA_KEY_ONLY)
        elif not isinstance(default, str):
            c.error(f"{path}.default", Code.SPEC_NOT_STRING, kind=kind_of(default))
        elif len(default) > (max_length or MAX_VALUE_LENGTH):
            c.error(f"{path}.default", Code.SPEC_DEFAULT_TOO_LONG, limit=max_length)
    for key in ("maxLength", "required"):
        if key in obj and "dataKey" not in obj:
            c.error(f"{path}.{key}", Code.SPEC_DATA_KEY_ONLY)
    return (
        data_key if isinstance(data_key, str) else None,
        text if isinstance(text, str) else None,
        max_length,
        bool(required),
        default if isinstance(default, str) else None,
    )


def _text(c: Reader, obj: Mapping[str, Any], path: str, box: Box | None) -> TextElement | None:
    data_key, text, max_length, required, default = _binding(c, obj, path)
    font = obj.get("font", DEFAULT_FONT)
    if not isinstance(font, str) or not (font in BUILTIN_FONTS or is_font_file(font)):
        c.error(f"{path}.font", Code.SPEC_FONT, fonts=", ".join(BUILTIN_FONTS), got=shown(font))
    elif is_font_file(font):
        c.relative(font, f"{path}.font")
    size = c.number(obj, "size", path, gt=0, le=MAX_FONT_PT, default=10.0)
    color = c.color(obj["color"], f"{path}.color") if "color" in obj else BLACK
    align = c.choice(obj, "align", path, _ALIGNS, "left")
    valign = c.choice(obj, "valign", path, _VALIGNS, "middle")
    shrink = c.boolean(obj, "shrinkToFit", path, default=False)
    min_size = c.number(obj, "minSize", path, gt=0, le=MAX_FONT_PT, default=4.0)
    if size is not None and min_size is not None and min_size > size and "minSize" in obj:
        c.error(f"{path}.minSize", Code.SPEC_MIN_SIZE, size=size)
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


def _qr(c: Reader, obj: Mapping[str, Any], path: str, box: Box | None) -> QrElement | None:
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


def _rect(c: Reader, obj: Mapping[str, Any], path: str, box: Box | None) -> RectElement | None:
    fill = c.color(obj["fill"], f"{path}.fill") if obj.get("fill") is not None else None
    stroke = c.color(obj["stroke"], f"{path}.stroke") if obj.get("stroke") is not None else None
    width = c.number(obj, "strokeWidth", path, gt=0, le=MAX_STROKE_PT, default=0.5)
    if obj.get("fill") is None and obj.get("stroke") is None:
        c.error(path, Code.SPEC_FILL_OR_STROKE)
    if box is None or width is None:
        return None
    return RectElement(box=box, fill=fill, stroke=stroke, stroke_width=width)


def _line(c: Reader, obj: Mapping[str, Any], path: str) -> LineElement | None:
    points: list[Point] = []
    for key in ("from", "to"):
        point_path = f"{path}.{key}"
        if key not in obj:
            c.error(point_path, Code.SPEC_REQUIRED)
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


def _off_page(
    c: Reader, path: str, element: Element, width: float, height: float, bleed: float
) -> None:
    """An element wholly outside the page and its bleed prints nothing: a customer's text
    bound to it would be dropped without a word. Touching the bleed's edge is enough."""
    if isinstance(element, LineElement):
        xs, ys = (element.start.x, element.end.x), (element.start.y, element.end.y)
        left, right, top, bottom = min(xs), max(xs), min(ys), max(ys)
    else:
        box = element.box
        left, right, top, bottom = box.x, box.x + box.width, box.y, box.y + box.height
        path = f"{path}.box"
    if right < -bleed or left > width + bleed or bottom < -bleed or top > height + bleed:
        c.error(
            path,
            Code.SPEC_OFF_PAGE,
            left=-bleed,
            right=width + bleed,
            top=-bleed,
            bottom=height + bleed,
        )


def _fields(
    c: Reader, placed: list[tuple[str, Element]], listed: list[str] | None
) -> tuple[tuple[str, ...], tuple[Field, ...]]:
    """DataKeys (listed, else derived in order of first use) and each key's merged rules."""
    rules: dict[str, Field] = {}
    for element_path, element in placed:
        if isinstance(element, ImageElement) and element.data_key is not None:
            key = element.data_key
            before = rules.get(key)
            if listed is not None and key not in listed:
                c.error(f"{element_path}.dataKey", Code.SPEC_NOT_LISTED, key=repr(key))
            if before is not None and before.kind != "image":
                # One value cannot be both an upload and a text.
                c.error(f"{element_path}.dataKey", Code.SPEC_CHOICE_CLASH, key=repr(key))
                continue
            required = element.required or (before is not None and before.required)
            rules[key] = Field(key, None, required, None, False, kind="image")
            continue
        if not isinstance(element, TextElement | QrElement) or element.data_key is None:
            continue
        key = element.data_key
        if listed is not None and key not in listed:
            c.error(f"{element_path}.dataKey", Code.SPEC_NOT_LISTED, key=repr(key))
        if key in rules and rules[key].kind == "image":
            c.error(f"{element_path}.dataKey", Code.SPEC_CHOICE_CLASH, key=repr(key))
            continue
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


def _digest(data: Mapping[str, Any]) -> str:
    try:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(data)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
