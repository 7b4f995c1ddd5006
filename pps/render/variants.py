"""Swatches, variants and themes of a template file: the looks a customer may choose from.

A template names colours once (``swatches``) and its elements use them as
``{"swatch": "accent"}``; each variant swaps some swatches and page backgrounds::

    "swatches": {"accent": {"c": 100, "m": 45, "y": 0, "k": 30}},
    "variants": [
      {"id": 1, "identifier": "ocean", "name": "Ocean", "version": 1,
       "thumbnail": {"color": "#1f5fa8"},              # or {"image": "https://..."}
       "swatches": {"accent": {"c": 100, "m": 45, "y": 0, "k": 30}},
       "backgrounds": {"0": {"color": "#ffffff"}}}     # page index -> background
    ],
    "themes": [{"identifier": "sea", "name": "Sea", "variants": ["ocean"]}]

A theme is a named set of the template's variants offered together (a shop offers one
theme to a customer; its first variant is the default). Problems are collected on the
parser's :class:`Reader` with their paths, like every other part of the format.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pps.render.model import (
    MAX_NAME_LENGTH,
    MAX_SWATCHES,
    MAX_VARIANTS,
    Color,
    ColorBackground,
    PdfBackground,
    Theme,
    Variant,
)
from pps.render.problems import Code
from pps.render.reader import Reader, kind_of, shown

__all__ = [
    "MAX_VARIANT_ID",
    "parse_swatches",
    "parse_themes",
    "parse_variants",
    "theme_summaries",
    "variant_summaries",
]

_IDENTIFIER = re.compile(r"[A-Za-z0-9_-]{1,64}")
_URL = re.compile(r"https?://[^\s]{1,2000}")
#: The reference's variant ids are (MySQL) unsigned ints; PHP reads them as int.
MAX_VARIANT_ID = 2**31 - 1

BackgroundParser = Callable[[Reader, Any, str], PdfBackground | ColorBackground | None]


def parse_swatches(c: Reader, data: Mapping[str, Any]) -> dict[str, Color]:
    """The template's named colours (plain colours: a swatch cannot name another)."""
    raw = data.get("swatches", {})
    return _colour_map(c, raw, "swatches", None)


def parse_variants(
    c: Reader,
    data: Mapping[str, Any],
    swatches: Mapping[str, Color],
    page_count: int,
    background: BackgroundParser,
) -> tuple[Variant, ...]:
    raw = data.get("variants", [])
    if not isinstance(raw, list):
        c.error("variants", Code.SPEC_NOT_LIST, kind=kind_of(raw))
        return ()
    if len(raw) > MAX_VARIANTS:
        c.error("variants", Code.SPEC_TOO_MANY_ELEMENTS, limit=MAX_VARIANTS)
        return ()
    variants: list[Variant] = []
    ids: dict[int, int] = {}
    identifiers: dict[str, int] = {}
    for index, item in enumerate(raw):
        path = f"variants[{index}]"
        variant = _variant(c, item, path, swatches, page_count, background)
        if variant is None:
            continue
        if variant.id in ids:
            c.error(f"{path}.id", Code.SPEC_DUPLICATE_VALUE, got=variant.id, first=ids[variant.id])
            continue
        if variant.identifier in identifiers:
            c.error(
                f"{path}.identifier",
                Code.SPEC_DUPLICATE_VALUE,
                got=repr(variant.identifier),
                first=identifiers[variant.identifier],
            )
            continue
        ids[variant.id] = index
        identifiers[variant.identifier] = index
        variants.append(variant)
    return tuple(variants)


def parse_themes(
    c: Reader, data: Mapping[str, Any], variants: tuple[Variant, ...]
) -> tuple[Theme, ...]:
    raw = data.get("themes", [])
    if not isinstance(raw, list):
        c.error("themes", Code.SPEC_NOT_LIST, kind=kind_of(raw))
        return ()
    known = [variant.identifier for variant in variants]
    themes: list[Theme] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(raw[:MAX_VARIANTS]):
        path = f"themes[{index}]"
        obj = c.obj(item, path, {"identifier", "name", "variants"})
        if obj is None:
            continue
        before = len(c.problems)
        identifier = _identifier(c, obj, path)
        name = _name(c, obj, path)
        members = obj.get("variants")
        if not isinstance(members, list) or not members:
            c.error(f"{path}.variants", Code.SPEC_NON_EMPTY_LIST, got=shown(members))
            members = []
        for position, member in enumerate(members):
            if member not in known:
                c.error(
                    f"{path}.variants[{position}]",
                    Code.SPEC_UNKNOWN_VARIANT,
                    variants=", ".join(known) or "none",
                    got=shown(member),
                )
        if identifier is not None and identifier in seen:
            c.error(
                f"{path}.identifier",
                Code.SPEC_DUPLICATE_VALUE,
                got=repr(identifier),
                first=seen[identifier],
            )
        if len(c.problems) != before or identifier is None or name is None:
            continue
        seen[identifier] = index
        themes.append(Theme(identifier, name, tuple(dict.fromkeys(members))))
    return tuple(themes)


def _page_index(key: object, page_count: int) -> bool:
    """Whether ``key`` is a page index in ASCII digits. ``"\u00b2"`` is a digit to
    ``isdigit()`` but not to ``int()``, and ``int()`` refuses a string of thousands of
    digits: both made the import fail with a traceback; ``"\u0661"`` was read as page 1."""
    return (
        isinstance(key, str)
        and key.isascii()
        and key.isdigit()
        and len(key) <= len(str(page_count))
        and int(key) < page_count
    )


def _variant(
    c: Reader,
    raw: Any,
    path: str,
    swatches: Mapping[str, Color],
    page_count: int,
    background: BackgroundParser,
) -> Variant | None:
    keys = {"id", "identifier", "name", "version", "thumbnail", "swatches", "backgrounds"}
    obj = c.obj(raw, path, keys)
    if obj is None:
        return None
    before = len(c.problems)
    variant_id = c.integer(obj, "id", path, ge=1, le=MAX_VARIANT_ID)
    identifier = _identifier(c, obj, path)
    name = _name(c, obj, path)
    version = c.integer(obj, "version", path, ge=1, le=MAX_VARIANT_ID, default=1)
    thumbnail = _thumbnail(c, obj.get("thumbnail"), f"{path}.thumbnail")
    colours = _colour_map(c, obj.get("swatches", {}), f"{path}.swatches", swatches)
    backgrounds: dict[int, PdfBackground | ColorBackground] = {}
    raw_backgrounds = obj.get("backgrounds", {})
    if not isinstance(raw_backgrounds, Mapping):
        c.error(f"{path}.backgrounds", Code.SPEC_NOT_OBJECT, kind=kind_of(raw_backgrounds))
    else:
        for key, value in raw_backgrounds.items():
            where = f"{path}.backgrounds.{key}"
            if not _page_index(key, page_count):
                c.error(where, Code.SPEC_PAGE_INDEX, last=page_count - 1, got=shown(key))
                continue
            parsed = background(c, value, where)
            if parsed is not None:
                backgrounds[int(key)] = parsed
    if (
        len(c.problems) != before
        or variant_id is None
        or identifier is None
        or name is None
        or version is None
        or thumbnail is None
    ):
        return None
    return Variant(
        id=variant_id,
        identifier=identifier,
        name=name,
        version=version,
        thumbnail_type=thumbnail[0],
        thumbnail_value=thumbnail[1],
        swatches=colours,
        backgrounds=backgrounds,
    )


def _identifier(c: Reader, obj: Mapping[str, Any], path: str) -> str | None:
    value = obj.get("identifier")
    if "identifier" not in obj:
        c.error(f"{path}.identifier", Code.SPEC_REQUIRED)
    elif not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        c.error(f"{path}.identifier", Code.SPEC_IDENTIFIER, got=shown(value))
    else:
        return value
    return None


def _name(c: Reader, obj: Mapping[str, Any], path: str) -> str | None:
    value = obj.get("name")
    if "name" not in obj:
        c.error(f"{path}.name", Code.SPEC_REQUIRED)
    elif not isinstance(value, str) or not value.strip():
        c.error(f"{path}.name", Code.SPEC_NON_EMPTY_STRING, got=shown(value))
    elif len(value) > MAX_NAME_LENGTH:
        c.error(f"{path}.name", Code.SPEC_TOO_LONG, limit=MAX_NAME_LENGTH, length=len(value))
    else:
        return value.strip()
    return None


def _thumbnail(c: Reader, raw: Any, path: str) -> tuple[Literal["color", "image"], str] | None:
    """``{"color": "#RRGGBB"}`` or ``{"image": "https://..."}``: what the SDK reads as
    ``thumbnail_type`` and ``thumbnail_value``."""
    if raw is None:
        c.error(path, Code.SPEC_REQUIRED)
        return None
    obj = c.obj(raw, path, {"color", "image"})
    if obj is None:
        return None
    if ("color" in obj) == ("image" in obj):
        c.error(path, Code.SPEC_THUMBNAIL)
        return None
    if "color" in obj:
        value = obj["color"]
        # A thumbnail is shown on screens: #RRGGBB only, as the reference sends it.
        if not isinstance(value, str) or c.color(value, f"{path}.color") is None:
            if not isinstance(value, str):
                c.error(f"{path}.color", Code.SPEC_THUMBNAIL)
            return None
        return "color", value
    value = obj["image"]
    if not isinstance(value, str) or not _URL.fullmatch(value):
        c.error(f"{path}.image", Code.SPEC_THUMBNAIL)
        return None
    return "image", value


def _colour_map(
    c: Reader, raw: Any, path: str, allowed: Mapping[str, Color] | None
) -> dict[str, Color]:
    """Name -> colour; with ``allowed``, only names the template defines may be swapped."""
    if not isinstance(raw, Mapping):
        c.error(path, Code.SPEC_NOT_OBJECT, kind=kind_of(raw))
        return {}
    if len(raw) > MAX_SWATCHES:
        c.error(path, Code.SPEC_TOO_MANY_ELEMENTS, limit=MAX_SWATCHES)
        return {}
    colours: dict[str, Color] = {}
    swatches, c.swatches = c.swatches, None  # a swatch is a plain colour, never a reference
    try:
        for name, value in raw.items():
            where = f"{path}.{name}"
            if allowed is not None and name not in allowed:
                c.error(
                    where,
                    Code.SPEC_SWATCH,
                    swatches=", ".join(sorted(allowed)) or "none",
                    got=shown(name),
                )
                continue
            if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
                c.error(where, Code.SPEC_IDENTIFIER, got=shown(name))
                continue
            colour = c.color(value, where)
            if colour is not None:
                colours[name] = colour
    finally:
        c.swatches = swatches
    return colours


# -- the API's shapes, read from an imported (validated) template file ----------------------


def variant_summaries(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``[{id, identifier, name, thumbnail_type, thumbnail_value}]`` of a stored template."""
    raw = spec.get("variants")
    out: list[dict[str, Any]] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, Mapping) or not isinstance(item.get("thumbnail"), Mapping):
            continue
        thumbnail = item["thumbnail"]
        kind = "color" if "color" in thumbnail else "image"
        out.append(
            {
                "id": item.get("id"),
                "identifier": item.get("identifier"),
                "name": item.get("name"),
                "thumbnail_type": kind,
                "thumbnail_value": thumbnail.get(kind),
            }
        )
    return out


def theme_summaries(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``[{identifier, name}]`` of a stored template's themes."""
    raw = spec.get("themes")
    return [
        {"identifier": item.get("identifier"), "name": item.get("name")}
        for item in (raw if isinstance(raw, list) else [])
        if isinstance(item, Mapping)
    ]
