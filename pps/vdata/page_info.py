"""What ``page-info`` tells about a draft's pages: how many, and each one's size. No Flask.

Every record (row of variable data) has the template's pages, so ``row`` chooses a record
but not the sizes; it is checked so that a shop asking for row 12 of a 10-row draft hears
of it. ``print`` describes the print file's pages (trim size plus the bleed around it);
the other usages show the trim size without bleed, as the proof and the images do.
"""

from __future__ import annotations

from typing import Literal

from pps.render import TemplateSpec

__all__ = ["UNITS", "USAGES", "page_info"]

Unit = Literal["mm", "pt", "px"]
#: Millimetres per unit: pt are PostScript points (1/72 inch), px CSS pixels (1/96 inch).
UNITS: dict[str, float] = {"mm": 1.0, "pt": 25.4 / 72, "px": 25.4 / 96}
#: Usages the reference's clients send (``print``, ``preview``) and pps's own file kinds.
USAGES = ("print", "preview", "low-res", "image", "thumbnail")


def _in(unit: str, mm: float) -> float:
    return round(mm / UNITS[unit], 3)


def page_info(spec: TemplateSpec, usage: str, unit: str) -> dict[str, object]:
    bleed = spec.bleed if usage == "print" else 0.0
    page = {
        "width": _in(unit, spec.width),
        "height": _in(unit, spec.height),
        "bleed": _in(unit, bleed),
        "unit": unit,
    }
    return {"pages": len(spec.pages), "dimensions": [dict(page) for _ in spec.pages]}
