"""Where each text of a page sits on its preview image: the editor's hotspots and guides.

The page images show the trim area, so a box in millimetres from the trim's top-left corner
becomes percentages of the image by dividing by the page size. Percentages (not pixels) keep
the hotspots on their text at every zoom and width. The page's CSP forbids style attributes,
so the numbers travel as ``data-*`` attributes and the script sets them as CSS custom
properties. Plain Python: no Flask here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pps.render import Field, TemplateSpec
from pps.render.model import Box, QrElement, TextElement

__all__ = ["SAFE_MARGIN_MM", "Guides", "Hotspot", "guides", "hotspots"]

#: Text should stay this far inside the trim: cutting tolerates about 1 mm, and text
#: closer to the edge looks cut off even when it is not. A template may set its own
#: ``customAttributes.safeMargin`` (mm).
SAFE_MARGIN_MM = 3.0


@dataclass(frozen=True)
class Hotspot:
    """One DataKey's box on one page, in percent of the page image (may reach past 0..100
    when the template places a box in the bleed; the overlay clips it)."""

    page: int
    key: str
    #: The form field's id (``f-<index>``), so a hotspot can focus its field.
    field_id: str
    left: float
    top: float
    width: float
    height: float
    multiline: bool
    #: "text" or "qr": a QR code edits the same value as its text, but shows no caret.
    kind: str

    @property
    def box(self) -> str:
        """``left top width height`` in percent, as the ``data-box`` attribute carries it."""
        return " ".join(_pct(value) for value in (self.left, self.top, self.width, self.height))


@dataclass(frozen=True)
class Guides:
    """Bleed outside the trim and the safe area inside it, in percent of the page's width
    (``x``) and height (``y``): what the guides overlay draws."""

    bleed_x: float
    bleed_y: float
    safe_x: float
    safe_y: float
    width_mm: float
    height_mm: float

    @property
    def data(self) -> str:
        """``bleed_x bleed_y safe_x safe_y`` in percent, for the ``data-guides`` attribute."""
        return " ".join(_pct(v) for v in (self.bleed_x, self.bleed_y, self.safe_x, self.safe_y))


def hotspots(spec: TemplateSpec, fields: Sequence[Field]) -> list[list[Hotspot]]:
    """Per page, a hotspot for each element bound to a DataKey the form has a field for.

    Several elements showing one DataKey (a URL as text and as QR code) each get one; they
    all edit the same field. Elements without a DataKey (fixed texts) are not editable.
    """
    index = {field.key: position for position, field in enumerate(fields)}
    by_key = {field.key: field for field in fields}
    pages: list[list[Hotspot]] = []
    for page_number, page in enumerate(spec.pages):
        found = []
        for element in page.elements:
            if not isinstance(element, TextElement | QrElement) or element.data_key is None:
                continue
            key = element.data_key
            if key not in index:
                continue
            left, top, width, height = _percent(element.box, spec.width, spec.height)
            found.append(
                Hotspot(
                    page=page_number,
                    key=key,
                    field_id=f"f-{index[key]}",
                    left=left,
                    top=top,
                    width=width,
                    height=height,
                    multiline=by_key[key].multiline,
                    kind="qr" if isinstance(element, QrElement) else "text",
                )
            )
        pages.append(found)
    return pages


def guides(spec: TemplateSpec) -> Guides:
    """The bleed and safe-area insets of ``spec`` as percentages of its trim size."""
    margin = spec.custom_attributes.get("safeMargin", SAFE_MARGIN_MM)
    if isinstance(margin, bool) or not isinstance(margin, int | float) or margin < 0:
        margin = SAFE_MARGIN_MM
    # Never more than a third of a side: the safe area must stay an area.
    safe = float(min(margin, spec.width / 3, spec.height / 3))  # float(10**400) overflows
    return Guides(
        bleed_x=spec.bleed / spec.width * 100,
        bleed_y=spec.bleed / spec.height * 100,
        safe_x=safe / spec.width * 100,
        safe_y=safe / spec.height * 100,
        width_mm=spec.width,
        height_mm=spec.height,
    )


def _percent(box: Box, width: float, height: float) -> tuple[float, float, float, float]:
    return (
        box.x / width * 100,
        box.y / height * 100,
        box.width / width * 100,
        box.height / height * 100,
    )


def _pct(value: float) -> str:
    """Four decimals: a ten-thousandth of a percent is far below a pixel at any zoom."""
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text
