"""SVG uploads made safe: parsed by defusedxml (no DTDs, no entities, no network), then
rebuilt from an allow-list of elements and attributes.

What is dropped: scripts and ``<style>`` sheets, every ``on*`` event handler, every
element not on the list (``foreignObject``, ``image``, ``a``, animation, ...), references
that leave the file (an ``href`` not starting with ``#``, ``url(...)`` in attributes or
styles that is not ``url(#id)``), and styles that load or evaluate anything. What remains is
shapes, text, gradients, clipping and masks with local references: what a logo needs.

A file of more elements than :data:`pps.render.svg_budget.MAX_ELEMENTS` is refused while
it is parsed. Elements nested deeper than :data:`MAX_DEPTH` are refused before the rebuild:
rebuilding and serialising recurse once per level, and a few kilobytes of ``<g>`` would
otherwise exhaust Python's recursion limit.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from defusedxml import DefusedXmlException

from pps.render.svg_budget import SvgTooBig, parse_svg

__all__ = ["MAX_DEPTH", "SvgRefused", "sanitize_svg"]

#: The deepest element nesting accepted (the root is level 1). Real logos nest a few dozen
#: levels at most; the rebuild, ElementTree's serialiser and svglib all recurse per level,
#: so this stays far below Python's recursion limit of about a thousand frames.
MAX_DEPTH = 100

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)

ELEMENTS = frozenset(
    {
        "svg", "g", "defs", "symbol", "use", "title", "desc", "path", "rect", "circle",
        "ellipse", "line", "polyline", "polygon", "text", "tspan", "textPath",
        "linearGradient", "radialGradient", "stop", "clipPath", "mask", "pattern", "marker",
    }
)  # fmt: skip
ATTRIBUTES = frozenset(
    {
        "id", "class", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "fx",
        "fy", "width", "height", "d", "points", "transform", "viewBox", "preserveAspectRatio",
        "version", "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width",
        "stroke-linecap", "stroke-linejoin", "stroke-miterlimit", "stroke-dasharray",
        "stroke-dashoffset", "stroke-opacity", "opacity", "color", "display", "visibility",
        "clip-path", "clip-rule", "clipPathUnits", "mask", "maskUnits", "maskContentUnits",
        "offset", "stop-color", "stop-opacity", "gradientUnits", "gradientTransform",
        "spreadMethod", "patternUnits", "patternContentUnits", "patternTransform",
        "font-family", "font-size", "font-weight", "font-style", "text-anchor",
        "dominant-baseline", "letter-spacing", "word-spacing", "dx", "dy", "rotate",
        "textLength", "lengthAdjust", "style", "href", "markerWidth", "markerHeight",
        "refX", "refY", "orient", "markerUnits", "marker-start", "marker-mid", "marker-end",
    }
)  # fmt: skip
_URL = re.compile(r"url\s*\(\s*['\"]?\s*([^)'\"\s]*)", re.IGNORECASE)
_STYLE_DANGER = re.compile(r"@import|expression\s*\(|javascript:|behavior\s*:", re.IGNORECASE)


class SvgRefused(ValueError):
    """The SVG cannot be parsed safely (DTD, entities, not XML, no ``<svg>`` root, nested
    deeper than :data:`MAX_DEPTH`, too many elements). The message is for a shop's
    developer; ``code`` names the catalogues' message for a customer (``media.svg_*``)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def _local(name: str) -> tuple[str, str]:
    if name.startswith("{"):
        namespace, _, local = name[1:].partition("}")
        return namespace, local
    return "", name


def _safe_value(value: str) -> bool:
    if _STYLE_DANGER.search(value):
        return False
    return all(target.startswith("#") for target in _URL.findall(value))


def _too_deep(root: ET.Element, limit: int) -> bool:
    """Whether any element lies deeper than ``limit`` levels; iterative, so depth is no risk."""
    stack = [(root, 1)]
    while stack:
        element, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in element)
    return False


def _clean(element: ET.Element) -> ET.Element:
    """The element rebuilt from allowed parts; recursive, so only for checked depths."""
    _, tag = _local(element.tag)
    out = ET.Element(f"{{{SVG_NS}}}{tag}")
    for name, value in element.attrib.items():
        attr_ns, attr = _local(name)
        if attr.lower().startswith("on") or attr not in ATTRIBUTES:
            continue
        if attr_ns not in ("", XLINK_NS) or (attr_ns == XLINK_NS and attr != "href"):
            continue
        if attr == "href" and not value.strip().startswith("#"):
            continue
        if not _safe_value(value):
            continue
        out.set(f"{{{XLINK_NS}}}href" if attr_ns == XLINK_NS else attr, value)
    out.text = element.text if tag in ("text", "tspan", "textPath", "title", "desc") else None
    for child in element:
        child_ns, child_tag = _local(child.tag)
        if child_ns == SVG_NS and child_tag in ELEMENTS:
            cleaned = _clean(child)
            cleaned.tail = child.tail if tag in ("text", "tspan", "textPath") else None
            out.append(cleaned)
    return out


def sanitize_svg(text: str) -> bytes:
    """The SVG rebuilt from allowed parts only, as UTF-8 bytes."""
    try:
        root = parse_svg(text, forbid_dtd=True)
    except SvgTooBig as exc:
        raise SvgRefused(str(exc), "media.svg_too_complex") from None
    except DefusedXmlException as exc:
        raise SvgRefused(
            f"the SVG declares a DTD or entities, which are not allowed: {exc}",
            "media.svg_forbidden",
        ) from None
    except ET.ParseError as exc:
        raise SvgRefused(f"the SVG is not well-formed XML: {exc}", "media.svg_unreadable") from None
    namespace, tag = _local(root.tag)
    if tag != "svg" or namespace not in ("", SVG_NS):
        raise SvgRefused("the root element is not <svg>", "media.svg_unreadable")
    if _too_deep(root, MAX_DEPTH):
        raise SvgRefused(
            f"elements are nested more than {MAX_DEPTH} levels deep", "media.svg_too_complex"
        )
    if namespace == "":
        # An SVG without its namespace is still an SVG to browsers: adopt the namespace.
        for element in root.iter():
            if not element.tag.startswith("{"):
                element.tag = f"{{{SVG_NS}}}{element.tag}"
    cleaned = _clean(root)
    return bytes(ET.tostring(cleaned, encoding="utf-8", xml_declaration=True))
