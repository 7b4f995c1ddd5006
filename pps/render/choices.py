"""``choices`` of a text element: the fonts, colours and sizes a customer may pick from.

In a template::

    {"type": "text", "dataKey": "name", "font": "Vera-Bold", "size": 13, "color": "#1a1a1a",
     "choices": {"font": ["Vera-Bold", "Vera"],
                 "color": ["#1a1a1a", {"name": "Ocean", "color": {"c": 100, "m": 45,
                           "y": 0, "k": 30}}],
                 "size": [11, 13, 15]}}

Nothing else is offered: a customer never picks freely unless the template says so with
``"color": "any"`` (any ``#RRGGBB``). The element's own font, colour and size is the
default and must be among the options. A choice is stored among the draft's values under
``<dataKey>.<property>`` (``name.color``; an element without a DataKey names itself with
``id``). Elements naming the same owner share the choice and must offer the same list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pps.render.fonts import BUILTIN_FONTS, is_font_file
from pps.render.model import (
    CHOICE_PROPERTIES,
    CMYK,
    MAX_FONT_PT,
    RGB,
    Choice,
    ChoiceOption,
    Color,
    Page,
    TextElement,
)
from pps.render.problems import Code
from pps.render.reader import Reader, shown

__all__ = ["color_value", "parse_choices"]

#: More options than this is a template mistake, not a choice a customer can make.
MAX_OPTIONS = 50


def color_value(color: Color) -> str:
    """How a colour option without a name is stored: ``#rrggbb`` or ``cmyk(c,m,y,k)``."""
    if isinstance(color, RGB):
        return color.hex
    return f"cmyk({color.c:g},{color.m:g},{color.y:g},{color.k:g})"


def parse_choices(
    c: Reader, raw_pages: Any, pages: Sequence[Page], data_keys: Sequence[str]
) -> tuple[Choice, ...]:
    """Every element's ``choices``, merged by key; problems go to ``c`` with their path."""
    if not isinstance(raw_pages, list):
        return ()
    found: dict[str, Choice] = {}
    for page_index, raw_page in enumerate(raw_pages):
        raw_elements = raw_page.get("elements") if isinstance(raw_page, Mapping) else None
        if not isinstance(raw_elements, list) or page_index >= len(pages):
            continue
        elements = pages[page_index].elements
        aligned = len(elements) == len(raw_elements)  # else the spec has errors already
        for index, raw in enumerate(raw_elements):
            if not isinstance(raw, Mapping) or "choices" not in raw:
                continue
            path = f"pages[{page_index}].elements[{index}].choices"
            element = elements[index] if aligned else None
            owner = raw.get("dataKey", raw.get("id"))
            if not isinstance(owner, str) or not owner:
                c.error(path, Code.SPEC_CHOICE_OWNER)
                continue
            obj = c.obj(raw["choices"], path, set(CHOICE_PROPERTIES))
            if obj is None or not isinstance(element, TextElement):
                continue
            for prop in CHOICE_PROPERTIES:
                if prop not in obj:
                    continue
                choice = _choice(c, obj[prop], f"{path}.{prop}", owner, prop, element)
                if choice is None:
                    continue
                choice = _with_target(choice, (page_index, index))
                before = found.get(choice.key)
                if choice.key in data_keys or (
                    before is not None
                    and (before.options, before.free) != (choice.options, choice.free)
                ):
                    c.error(f"{path}.{prop}", Code.SPEC_CHOICE_CLASH, key=repr(choice.key))
                    continue
                if before is not None:
                    choice = _with_target(before, (page_index, index))
                found[choice.key] = choice
    return tuple(found.values())


def _with_target(choice: Choice, target: tuple[int, int]) -> Choice:
    return Choice(
        key=choice.key,
        property=choice.property,
        options=choice.options,
        default=choice.default,
        free=choice.free,
        targets=(*choice.targets, target),
    )


def _choice(
    c: Reader, raw: Any, path: str, owner: str, prop: str, element: TextElement
) -> Choice | None:
    key = f"{owner}.{prop}"
    if prop == "color" and raw == "any":
        if not isinstance(element.color, RGB):
            c.error(path, Code.SPEC_CHOICE_DEFAULT, value=color_value(element.color))
            return None
        return Choice(key, "color", (), element.color.hex, True, ())
    if not isinstance(raw, list) or not raw or len(raw) > MAX_OPTIONS:
        c.error(path, Code.SPEC_CHOICE_OPTIONS)
        return None
    options: list[ChoiceOption] = []
    for index, item in enumerate(raw):
        option = _option(c, item, f"{path}[{index}]", prop)
        if option is not None:
            options.append(option)
    if len(options) != len(raw):
        return None
    if len({option.value.lower() for option in options}) != len(options):
        c.error(path, Code.SPEC_CHOICE_OPTIONS)
        return None
    own = _own(element, prop)
    default = next((o.value for o in options if _same(o, prop, own)), None)
    if default is None:
        c.error(path, Code.SPEC_CHOICE_DEFAULT, value=shown(_shown_own(own)))
        return None
    return Choice(key, prop, tuple(options), default, False, ())  # type: ignore[arg-type]


def _option(c: Reader, raw: Any, path: str, prop: str) -> ChoiceOption | None:
    if prop == "font":
        if not isinstance(raw, str) or not (raw in BUILTIN_FONTS or is_font_file(raw)):
            c.error(path, Code.SPEC_FONT, fonts=", ".join(BUILTIN_FONTS), got=shown(raw))
            return None
        if is_font_file(raw) and not c.relative(raw, path):
            return None
        return ChoiceOption(value=raw, label=raw.rsplit("/", 1)[-1].rsplit(".", 1)[0])
    if prop == "size":
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 < raw <= MAX_FONT_PT:
            c.error(path, Code.SPEC_AT_MOST, limit=MAX_FONT_PT)
            return None
        text = f"{float(raw):g}"
        return ChoiceOption(value=text, label=f"{text} pt", size=float(raw))
    if isinstance(raw, Mapping) and "name" in raw:
        obj = c.obj(raw, path, {"name", "color"})
        name = None if obj is None else obj.get("name")
        if obj is None or not isinstance(name, str) or not name.strip() or "color" not in obj:
            c.error(path, Code.SPEC_CHOICE_OPTIONS)
            return None
        color = c.color(obj["color"], f"{path}.color")
        return None if color is None else ChoiceOption(value=name, label=name, color=color)
    color = c.color(raw, path)
    if color is None:
        return None
    return ChoiceOption(value=color_value(color), label=color_value(color), color=color)


def _own(element: TextElement, prop: str) -> object:
    return {"font": element.font, "color": element.color, "size": element.size}[prop]


def _same(option: ChoiceOption, prop: str, own: object) -> bool:
    if prop == "font":
        return option.value == own
    if prop == "size":
        return option.size == own
    return option.color == own


def _shown_own(own: object) -> object:
    if isinstance(own, RGB | CMYK):
        return color_value(own)
    return own
