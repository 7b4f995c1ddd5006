"""Rendering: template spec + values -> print PDF, low-resolution PDF, PNG. No Flask here.

Typical use::

    spec = parse_spec(json.loads(text), base_dir)           # SpecError lists every problem
    errors = validate_values(spec, values, base_dir)         # English, per DataKey
    problems = check_values(spec, values, base_dir)          # codes, for the editor
    body, content_type = render_file("print", spec, values, base_dir)

Every function is pure: the same spec, values, files and :data:`RENDER_VERSION` give the
same bytes, so results can be cached under :func:`cache_key`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Literal

from pps.render.assets import AssetLoader, Assets, DirectoryAssets
from pps.render.errors import AssetError, InvalidValues, RenderError, RenderOptionError, SpecError
from pps.render.fonts import BUILTIN_FONTS
from pps.render.layout import check_values, validate_values
from pps.render.model import Field, TemplateSpec
from pps.render.parsing import parse_spec
from pps.render.pdf import render_low_res_pdf, render_print_pdf
from pps.render.problems import Code, Problem
from pps.render.raster import MAX_PIXELS, image_size, render_page_image, render_png

__all__ = [
    "BUILTIN_FONTS",
    "CONTENT_TYPES",
    "MAX_PIXELS",
    "RENDER_VERSION",
    "AssetError",
    "AssetLoader",
    "Assets",
    "Code",
    "DirectoryAssets",
    "Field",
    "InvalidValues",
    "Kind",
    "Problem",
    "RenderError",
    "RenderOptionError",
    "SpecError",
    "TemplateSpec",
    "cache_key",
    "check_values",
    "image_size",
    "parse_spec",
    "render_file",
    "render_low_res_pdf",
    "render_page_image",
    "render_png",
    "render_print_pdf",
    "validate_values",
]

#: Part of every cache key: bump it whenever the same input would render differently.
RENDER_VERSION = "1"

Kind = Literal["print", "low-res", "image"]
CONTENT_TYPES: dict[Kind, str] = {
    "print": "application/pdf",
    "low-res": "application/pdf",
    "image": "image/png",
}


def render_file(
    kind: Kind,
    spec: TemplateSpec,
    values: Mapping[str, object],
    assets: Assets,
    *,
    page: int = 0,
    width: int | None = None,
    height: int | None = None,
    crop_marks: bool = False,
    allow_missing: bool = False,
) -> tuple[bytes, str]:
    """Render one file of ``kind`` and return ``(body, content_type)``.

    ``page``, ``width``, ``height`` and ``allow_missing`` (required keys may be empty, for
    a template's thumbnail) apply to ``image``; ``crop_marks`` to ``print``.
    Raises :class:`RenderError` subclasses (all ``ValueError``) for bad values or options.
    """
    if kind == "print":
        body = render_print_pdf(spec, values, assets, crop_marks=crop_marks)
    elif kind == "low-res":
        body = render_low_res_pdf(spec, values, assets)
    elif kind == "image":
        body = render_png(
            spec,
            values,
            assets,
            page=page,
            width=width,
            height=height,
            allow_missing=allow_missing,
        )
    else:
        raise RenderOptionError(f"kind must be print, low-res or image, got {kind!r}")
    return body, CONTENT_TYPES[kind]


def cache_key(
    kind: Kind,
    spec: TemplateSpec,
    values: Mapping[str, object],
    *,
    page: int = 0,
    width: int | None = None,
    height: int | None = None,
    crop_marks: bool = False,
) -> str:
    """A hex key for a rendered file: renderer version, template JSON, used values, options.

    Only the template's own DataKeys count, so unrelated draft values do not split the
    cache. Files beside the template are assumed immutable once imported.
    """
    used = {key: values.get(key) for key in spec.data_keys}
    used.update({choice.key: values.get(choice.key) for choice in spec.choices})
    options: dict[str, object] = {"kind": kind}
    if kind == "image":
        options.update(page=page, size=list(image_size(spec, width, height)))
    elif kind == "print":
        options.update(crop_marks=crop_marks)
    document = [RENDER_VERSION, spec.digest, used, options]
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
