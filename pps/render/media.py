"""Values that change how elements look: the customer's images and their choices. No Flask.

An image DataKey (a DataKey of ``image`` elements) holds an uploaded file's identifier
(``POST /api-ext/file``, or the editor's upload), as text or as an object::

    "4f1c...e9"                                             # the whole image, fitted
    {"file": "4f1c...e9", "crop": {"x": 120, "y": 40, "width": 800, "height": 530}}

``crop`` is the part of the image to place, in the image's own pixels from its top-left
corner; it is fitted into the element's box as the element's ``fit`` says (``cover``
fills the box and clips, ``contain`` shows all of the crop). Without a crop the whole
image is placed. The value may reach here as JSON text (values are stored as sent and
rendered as text, see :mod:`pps.render.text`).

:func:`resolve` turns a spec and values into the spec as drawn: image elements name
their upload (as :func:`upload_asset`, which the service's asset loader serves from the
client's own uploads) with the crop, text elements take the chosen font, colour and size.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from pps.render.model import (
    CMYK,
    RGB,
    Choice,
    Crop,
    Element,
    ImageElement,
    Page,
    TemplateSpec,
    TextElement,
)
from pps.render.problems import Code, Problem
from pps.render.text import as_text

__all__ = [
    "UPLOAD_PREFIX",
    "ImageValue",
    "choice_problem",
    "crop_problem",
    "image_keys",
    "parse_image_value",
    "resolve",
    "upload_asset",
    "upload_identifier",
]

#: How an upload is named among a template's files: a ``..`` part, which no template may
#: name itself (:func:`pps.render.assets.check_relative_name`), so it never shadows one.
UPLOAD_PREFIX = "../uploads/"
_IDENTIFIER = re.compile(r"[A-Za-z0-9_-]{1,64}")
_HEX = re.compile(r"#[0-9A-Fa-f]{6}")


@dataclass(frozen=True)
class ImageValue:
    file: str
    crop: Crop | None


def upload_asset(identifier: str) -> str:
    return UPLOAD_PREFIX + identifier


def upload_identifier(name: str) -> str | None:
    """The upload an asset name stands for, or None for a template's own file."""
    if not name.startswith(UPLOAD_PREFIX):
        return None
    identifier = name[len(UPLOAD_PREFIX) :]
    return identifier if _IDENTIFIER.fullmatch(identifier) else None


def image_keys(spec: TemplateSpec) -> set[str]:
    return {field.key for field in spec.fields if field.kind == "image"}


def parse_image_value(value: object) -> ImageValue | Problem | None:
    """The image a value names; None for an empty value; a :class:`Problem` when malformed."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if not text.startswith("{"):
            return _image(text, None)
        try:
            value = json.loads(text)
        except ValueError:
            return Problem(Code.VALUE_IMAGE, {"reason": "not valid JSON"})
    if not isinstance(value, Mapping):
        return Problem(Code.VALUE_IMAGE, {"reason": f"got {type(value).__name__}"})
    extra = set(value) - {"file", "crop"}
    if extra:
        return Problem(Code.VALUE_IMAGE, {"reason": f"unknown keys {', '.join(sorted(extra))}"})
    file = value.get("file")
    if not isinstance(file, str):
        return Problem(Code.VALUE_IMAGE, {"reason": "'file' must be a string"})
    crop = value.get("crop")
    if crop is None:
        return _image(file, None)
    if not isinstance(crop, Mapping) or set(crop) != {"x", "y", "width", "height"}:
        return Problem(Code.VALUE_IMAGE, {"reason": "'crop' needs x, y, width and height"})
    numbers = [crop[name] for name in ("x", "y", "width", "height")]
    if not all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
        return Problem(Code.VALUE_IMAGE, {"reason": "'crop' values must be numbers"})
    # Checked before float(): a JSON integer has no size limit, and 10**400 overflows a float.
    x, y, width, height = numbers
    if not (x >= 0 and y >= 0 and width > 0 and height > 0) or max(numbers) > 1e6:
        return Problem(Code.VALUE_IMAGE, {"reason": "'crop' must have a positive size"})
    x, y, width, height = (float(n) for n in numbers)
    return _image(file, Crop(x, y, width, height))


def _image(file: str, crop: Crop | None) -> ImageValue | Problem:
    if not _IDENTIFIER.fullmatch(file):
        return Problem(Code.VALUE_IMAGE, {"reason": "not a file identifier"})
    return ImageValue(file, crop)


def crop_problem(crop: Crop | None, size: tuple[int, int]) -> Problem | None:
    """Why ``crop`` does not lie inside an image of ``size`` pixels (half a pixel of slack)."""
    if crop is None:
        return None
    width, height = size
    if crop.x + crop.width > width + 0.5 or crop.y + crop.height > height + 0.5:
        return Problem(Code.VALUE_IMAGE_CROP, {"width": width, "height": height})
    return None


def choice_problem(choice: Choice, value: object) -> Problem | None:
    """Why ``value`` is not one of the options of ``choice``; None when it is (or empty).

    Read as the text it prints as (:func:`~pps.render.text.as_text`), like every DataKey
    value: a shop's PHP array keeps ``12`` an int, and ``12`` is the size option "12".
    """
    text = as_text(value)
    if not text:
        return None
    if choice.find(text) is not None or (choice.free and _HEX.fullmatch(text)):
        return None
    options = ", ".join(option.value for option in choice.options)
    if choice.free:
        options = (options + ", " if options else "") + "#RRGGBB"
    return Problem(Code.VALUE_CHOICE, {"options": options, "got": repr(value)})


def resolve(spec: TemplateSpec, values: Mapping[str, object]) -> TemplateSpec:
    """``spec`` as drawn with ``values``: uploads in bound image elements, choices applied.

    Values are assumed checked (:func:`pps.render.layout.check_values`); anything that
    does not resolve leaves the element as the template has it. A spec without image
    DataKeys or choices is returned as it is (same object, same digest).
    """
    images = image_keys(spec)
    if not images and not spec.choices:
        return spec
    changes: dict[tuple[int, int], dict[str, object]] = {}
    for choice in spec.choices:
        picked = _picked(choice, values.get(choice.key))
        if picked is None:
            continue
        for target in choice.targets:
            changes.setdefault(target, {})[choice.property] = picked
    pages: list[Page] = []
    for page_index, page in enumerate(spec.pages):
        elements: list[Element] = []
        for index, element in enumerate(page.elements):
            if isinstance(element, ImageElement) and element.data_key in images:
                element = _bound_image(element, values.get(element.data_key))
            elif isinstance(element, TextElement) and (page_index, index) in changes:
                element = _chosen(element, changes[(page_index, index)])
            elements.append(element)
        pages.append(Page(background=page.background, elements=tuple(elements)))
    return dataclasses.replace(spec, pages=tuple(pages))


def _chosen(element: TextElement, change: Mapping[str, object]) -> TextElement:
    font = change.get("font", element.font)
    size = change.get("size", element.size)
    color = change.get("color", element.color)
    assert isinstance(font, str) and isinstance(size, float) and isinstance(color, RGB | CMYK)
    # A smaller size picked than the element's minimum still renders at that size.
    return dataclasses.replace(
        element, font=font, size=size, color=color, min_size=min(element.min_size, size)
    )


def _bound_image(element: ImageElement, value: object) -> ImageElement:
    parsed = parse_image_value(value)
    if not isinstance(parsed, ImageValue):
        return element  # the template's own file (if any) stands in
    return dataclasses.replace(element, file=upload_asset(parsed.file), crop=parsed.crop)


def _picked(choice: Choice, value: object) -> object | None:
    text = as_text(value)  # as choice_problem reads it
    if not text:
        return None
    option = choice.find(text)
    if option is None:
        if choice.free and _HEX.fullmatch(text):
            return RGB(int(text[1:3], 16), int(text[3:5], 16), int(text[5:7], 16))
        return None
    if choice.property == "font":
        return option.value
    if choice.property == "size":
        return option.size
    return option.color
