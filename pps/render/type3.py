"""The glyph procedures a Type3 font draws for the text shown in it.

A Type3 glyph is PDF content (a ``CharProc`` stream) that pdfium draws anew for every
glyph shown: a kilobyte of text in a font whose one glyph holds a hundred kilobytes of
path operators draws a hundred megabytes. :func:`glyph_procedures` says which procedures
a string draws and how often, so :mod:`pps.render.pdf_budget` can count them as it counts
forms. A code the font's ``/Differences`` do not name is drawn by its base encoding, which
is not read here: it counts as the font's largest procedure, never less than it draws.
"""

from __future__ import annotations

from collections import Counter

import pikepdf

__all__ = ["Type3Font", "type3_font"]


class Type3Font:
    """A Type3 font's procedures by character code, read once per font."""

    def __init__(self, font: pikepdf.Dictionary, procedures: pikepdf.Dictionary) -> None:
        self.resources = font.get("/Resources")
        self.by_code: dict[int, pikepdf.Stream] = {}
        encoding = font.get("/Encoding")
        differences = (
            encoding.get("/Differences") if isinstance(encoding, pikepdf.Dictionary) else None
        )
        code = 0
        for item in differences if isinstance(differences, pikepdf.Array) else ():
            if isinstance(item, int):
                code = item
            elif isinstance(item, pikepdf.Name):
                procedure = procedures.get(item)
                if isinstance(procedure, pikepdf.Stream) and 0 <= code < 256:
                    self.by_code[code] = procedure
                code += 1
        streams = [value for value in procedures.values() if isinstance(value, pikepdf.Stream)]
        # The largest stands in for codes drawn by the base encoding.
        self.largest = max(streams, key=lambda stream: stream.get("/Length", 0), default=None)

    def draws(self, text: bytes) -> list[tuple[pikepdf.Stream, int]]:
        """Each procedure showing ``text`` (one byte a glyph) draws, with how many times."""
        drawn: dict[tuple[int, int], tuple[pikepdf.Stream, int]] = {}
        for code, times in Counter(text).items():
            procedure = self.by_code.get(code, self.largest)
            if procedure is not None:
                _, before = drawn.get(procedure.objgen, (procedure, 0))
                drawn[procedure.objgen] = (procedure, before + times)
        return list(drawn.values())


def type3_font(font: object) -> Type3Font | None:
    """``font`` read as a Type3 font, or None when it is another kind (or no font)."""
    if not isinstance(font, pikepdf.Dictionary) or font.get("/Subtype") != "/Type3":
        return None
    procedures = font.get("/CharProcs")
    if not isinstance(procedures, pikepdf.Dictionary):
        return None
    return Type3Font(font, procedures)
