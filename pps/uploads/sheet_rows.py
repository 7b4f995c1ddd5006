"""What one row of an XLSX sheet makes openpyxl build, counted from a stream of its XML. No Flask.

openpyxl's reader collects a ``<row>`` element whole and turns every child into a cell
(about 450 bytes each) before ``iter_rows(max_col=...)`` trims the row: a sheet of one row
of millions of ``<c/>``, a few hundred kilobytes of ZIP, took 2.2 GB and 40 s. It also
parses a row numbered at or below an earlier one and skips it silently, keeping its element:
millions of ``<row r="2"/>`` took 460 MB and 40 s. So every part of the archive is read as
a stream first (openpyxl opens sheets by relationship, under any name; a part that is not
XML stops at its first byte), and a row is refused while it is still being read.

Parsed with :mod:`pyexpat`, the parser openpyxl's own goes through, with defusedxml's
defaults set on it by hand (no entity declarations, no external references):
``defusedxml.ElementTree.XMLParser`` is the pure-Python parser, 3.7 times slower here
(0.33 s instead of 0.09 s for a sheet of 10,000 rows of 8 cells).
"""

from __future__ import annotations

import zipfile
from typing import NoReturn
from xml.parsers import expat

__all__ = ["MAX_ROW_CELLS", "MAX_ROW_ELEMENTS", "MAX_WORKBOOK_CELLS", "rows_problem"]

#: Cells in one row: a sheet has at most 16,384 columns (A to XFD), so no real row has more.
MAX_ROW_CELLS = 16_384
#: XML elements inside one row (cells, values, formulas, rich-text runs): 8 per cell.
MAX_ROW_ELEMENTS = 8 * MAX_ROW_CELLS
#: Cells in all rows of all parts together. Legal rows alone do not bound the work: 800 rows
#: of 16,384 styled empty cells (394 KB of ZIP) took openpyxl 137 s to read. Variable data
#: is at most ``PPS_MAX_VARIABLE_ROWS`` (10,000) records of 1,000 columns read; 2 million
#: cells hold 10,000 records of 200 columns, and take openpyxl about 15 s at most.
MAX_WORKBOOK_CELLS = 2_000_000
#: The tag openpyxl reads as a row, as expat names it with ``}`` between namespace and name.
_ROW = "http://schemas.openxmlformats.org/spreadsheetml/2006/main}row"
_CHUNK = 64 * 1024


class _Refused(Exception):
    """Raised from a parser's handler to stop reading a part; its text is the problem."""


def rows_problem(archive: zipfile.ZipFile) -> str | None:
    """Why a row of some part, or the cells of all parts together, would cost openpyxl too
    much (a phrase), or None."""
    total = _CellTotal()
    for info in archive.infolist():
        if info.is_dir():
            continue
        try:
            _scan(archive, info, total)
        except _Refused as refused:
            return str(refused)
    return None


class _CellTotal:
    """Cells counted so far in the whole workbook (:data:`MAX_WORKBOOK_CELLS`)."""

    def __init__(self) -> None:
        self.cells = 0


def _scan(archive: zipfile.ZipFile, info: zipfile.ZipInfo, total: _CellTotal) -> None:
    """Feed one part to a counting parser; a part that is not well-formed XML ends the
    scan where openpyxl's parser (the same expat) would fail too."""
    counter = _RowCounter(info.filename, total)
    parser = expat.ParserCreate(namespace_separator="}")  # as ElementTree's XMLParser
    parser.StartElementHandler = counter.start
    parser.EndElementHandler = counter.end
    parser.EntityDeclHandler = counter.entity
    parser.ExternalEntityRefHandler = counter.external
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(_CHUNK):
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
    except (expat.ExpatError, NotImplementedError, RuntimeError):
        return  # not XML, or a compression or encryption zipfile cannot read


class _RowCounter:
    """Counts children and elements of the open row; checks that row numbers increase."""

    def __init__(self, part: str, total: _CellTotal) -> None:
        self.part = part
        self.total = total
        self.depth = 0
        self.row_depth = 0  # depth of the open row; 0 outside rows
        self.row = 0  # number of the open (or last) row, as openpyxl counts them
        self.cells = 0
        self.elements = 0

    def start(self, name: str, attributes: dict[str, str]) -> None:
        self.depth += 1
        if self.row_depth:
            self.elements += 1
            if self.depth == self.row_depth + 1:
                self.cells += 1  # openpyxl makes a cell of every child
                self.total.cells += 1
                if self.total.cells > MAX_WORKBOOK_CELLS:
                    self._refuse(
                        f"takes the workbook past {MAX_WORKBOOK_CELLS} cells in all "
                        "(variable data is at most 10,000 records; remove unused columns "
                        "and rows)"
                    )
                if self.cells > MAX_ROW_CELLS:
                    self._refuse(
                        f"has more than {MAX_ROW_CELLS} cells (a sheet has at most "
                        f"{MAX_ROW_CELLS} columns, A to XFD)"
                    )
            if self.elements > MAX_ROW_ELEMENTS:
                self._refuse(f"holds more than {MAX_ROW_ELEMENTS} XML elements")
        elif name == _ROW:
            self.row_depth, self.cells, self.elements = self.depth, 0, 0
            previous, number = self.row, _row_number(attributes.get("r"))
            self.row = previous + 1 if number is None else number
            if number is not None and number <= previous:
                self._refuse(f"comes after row {previous}; rows must be in ascending order")

    def end(self, name: str) -> None:
        if self.depth == self.row_depth:
            self.row_depth = 0
        self.depth -= 1

    def entity(self, name: str, *_: object) -> NoReturn:
        raise _Refused(f"its part {self.part} declares the XML entity {name[:40]!r}")

    def external(self, *_: object) -> NoReturn:
        raise _Refused(f"its part {self.part} refers to an external XML entity")

    def _refuse(self, what: str) -> NoReturn:
        raise _Refused(f"row {self.row} of its part {self.part} {what}")


def _row_number(text: str | None) -> int | None:
    """A row's ``r`` as openpyxl reads it (``2`` or ``2.0``); None if absent or unreadable
    (openpyxl then counts on, or refuses the sheet itself)."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() else None
