"""How much drawing an SVG asks of svglib, counted before svglib does any of it.

svglib draws a ``<use>`` by copying what it names, then drawing the copy; a ``clip-path``
is rebuilt for every element that names it, a gradient's ``href`` chain for every shape it
fills, and each nested ``<svg>`` draws all the ``<defs>`` below it once more. A kilobyte
of ``<use>`` elements naming groups of ``<use>`` elements ("billion laughs" of references)
thus asks for millions of shapes and takes minutes. :func:`budget_problem` counts what
the drawing expands to, by those same rules, and refuses more than :data:`MAX_ELEMENTS`
elements or :data:`MAX_TEXT` characters of attributes and text (path data above all).

The count is memoised per element and walks an explicit stack, so it costs time linear in
the file whatever its references multiply to, and no recursion however long a chain of
references is. A reference loop is refused: SVG calls it an error, and counting it as
svglib draws it (each element entered once per path into the loop) is not linear.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from defusedxml.ElementTree import DefusedXMLParser

__all__ = ["MAX_ELEMENTS", "MAX_TEXT", "SvgTooBig", "budget_problem", "parse_svg"]

#: Elements an SVG may expand to once its references are followed. svglib converts some
#: six thousand a second: a logo of a few hundred paths is far below, a drawing at the
#: limit takes under two seconds.
MAX_ELEMENTS = 10_000
#: Characters of attribute values and text an SVG may expand to (path data is converted
#: at about a megabyte a second).
MAX_TEXT = 2_000_000

_SVG = "{http://www.w3.org/2000/svg}"
_HREFS = ("href", "{http://www.w3.org/1999/xlink}href")
_URL_ID = re.compile(r"url\(\s*['\"]?#([^)'\"\s]+)")


class SvgTooBig(ValueError):
    """The SVG has, or expands to, more than the drawing limits allow."""


class _CountingBuilder(ET.TreeBuilder):
    """A tree builder that stops the parse at its ``limit``-th element plus one."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.count = 0

    def start(self, tag: str, attrs: dict[str, str]) -> ET.Element:
        self.count += 1
        if self.count > self.limit:
            raise SvgTooBig(f"it has more than {self.limit} elements")
        return super().start(tag, attrs)


def parse_svg(text: str | bytes, *, forbid_dtd: bool = True) -> ET.Element:
    """The SVG's root, parsed by defusedxml (no entities, no network), with at most
    :data:`MAX_ELEMENTS` elements: a larger file is refused before it is all in memory.

    Raises :class:`SvgTooBig`, defusedxml's errors and ``ET.ParseError``.
    """
    parser = DefusedXMLParser(target=_CountingBuilder(MAX_ELEMENTS), forbid_dtd=forbid_dtd)
    parser.feed(text)
    root: ET.Element = parser.close()
    return root


def budget_problem(root: ET.Element) -> str | None:
    """Why drawing the SVG under ``root`` would take too long, or None."""
    expanded = _expanded(root)
    if expanded is None:
        return "an element refers to itself through its <use>, clip-path or gradient references"
    elements, text = expanded
    if elements > MAX_ELEMENTS:
        return (
            f"it expands to more than {MAX_ELEMENTS} elements once its <use>, clip-path "
            "and gradient references are followed"
        )
    if text > MAX_TEXT:
        return (
            f"it expands to more than {MAX_TEXT} characters of path data and text once its "
            "<use>, clip-path and gradient references are followed"
        )
    return None


def _targets(element: ET.Element, ids: dict[str, list[ET.Element]]) -> list[ET.Element]:
    """The elements ``element`` refers to by ``href="#id"`` or ``url(#id)``."""
    names: list[str] = []
    for attr, value in element.attrib.items():
        if attr in _HREFS:
            value = value.strip()
            if value.startswith("#"):
                names.append(value[1:])
        else:
            names.extend(_URL_ID.findall(value))
    return [target for name in names for target in ids.get(name, ())]


def _own_size(element: ET.Element) -> int:
    return (
        sum(map(len, element.attrib.values())) + len(element.text or "") + len(element.tail or "")
    )


def _expanded(root: ET.Element) -> tuple[int, int] | None:
    """``(elements, characters)`` svglib would draw from ``root``, None for a reference
    loop; each saturates just past its limit, so the sums stay small however much the
    references multiply."""
    ids: dict[str, list[ET.Element]] = {}
    for element in root.iter():
        name = element.get("id")
        if name:
            ids.setdefault(name, []).append(element)

    # Per element: what drawing it costs, and what the <defs> below it cost (an <svg>
    # draws those once more before its children).
    cost: dict[int, tuple[int, int]] = {}
    defs_below: dict[int, tuple[int, int]] = {}
    started: set[int] = set()
    stack: list[ET.Element] = [root]
    while stack:
        element = stack[-1]
        key = id(element)
        if key in cost:
            stack.pop()
            continue
        deps = [*element, *_targets(element, ids)]
        if key not in started:
            started.add(key)
            # Everything started and not finished lies on the path to this element.
            if any(id(dep) in started and id(dep) not in cost for dep in deps):
                return None
            stack.extend(dep for dep in deps if id(dep) not in cost)
            continue
        stack.pop()
        elements, chars = 1, _own_size(element)
        below_e, below_c = 0, 0
        for child in element:
            child_e, child_c = cost[id(child)]
            sub_e, sub_c = defs_below[id(child)]
            below_e, below_c = below_e + sub_e, below_c + sub_c
            if child.tag in (f"{_SVG}defs", "defs"):
                below_e, below_c = below_e + child_e, below_c + child_c
            else:
                elements, chars = elements + child_e, chars + child_c
        for target in deps[len(element) :]:
            target_e, target_c = cost[id(target)]
            elements, chars = elements + target_e, chars + target_c
        if element.tag in (f"{_SVG}svg", "svg"):
            elements, chars = elements + below_e, chars + below_c
        cost[key] = (min(elements, MAX_ELEMENTS + 1), min(chars, MAX_TEXT + 1))
        defs_below[key] = (min(below_e, MAX_ELEMENTS + 1), min(below_c, MAX_TEXT + 1))
    return cost[id(root)]
