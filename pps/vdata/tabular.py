"""CSV and XLSX files -> rows of DataKey values, through a column mapping. No Flask.

The first row of a file is its header. ``columnMapping`` maps each DataKey to a column,
either by its index (counted from 0, as the PHP SDK documents it: "column name to column
index") or by its header text. Cells are kept as text exactly as written: a formula such as
``=HYPERLINK("http://...")`` is never evaluated and stays that literal text (openpyxl reads
formulas as their source when ``data_only`` is off, array formulas and data tables as
objects, written back as Excel shows them; CSV has no formulas). Numbers become
their shortest text (``12`` not ``12.0``), dates ISO 8601, empty cells an empty string.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pps.uploads.kinds import decode_text
from pps.uploads.workbook import workbook_problem

__all__ = [
    "MAX_BLANK_ROWS",
    "MAX_COLUMNS",
    "MAX_HEADER_CELL",
    "SNIFF_SAMPLE",
    "ColumnMapping",
    "Table",
    "TableError",
    "column_list",
    "pick_dialect",
    "read_table",
    "resolve_mapping",
    "sniff_sample",
]

ColumnMapping = Mapping[str, int | str]
#: Longest cell kept; longer ones are refused (no DataKey takes more than the renderer's cap).
MAX_CELL = 10_000
#: Longest header cell: a header names a column in every error message about it.
MAX_HEADER_CELL = 255
#: Columns read; cells beyond them are ignored (no mapping can name them). openpyxl pads
#: an XLSX row to its last cell, up to column XFD (16,384), so it is asked for no more.
MAX_COLUMNS = 1_000
#: Blank rows read (CSV lines, XLSX rows, and the gaps between numbered XLSX rows, which
#: openpyxl fills with empty rows): with the row limit, this bounds the rows walked.
MAX_BLANK_ROWS = 10_000
#: Characters of the first line :class:`csv.Sniffer` sees: its time grows with the square
#: of its input (seconds for 50 KB), and a few KB show the delimiter.
SNIFF_SAMPLE = 2048
#: Column names one message lists, each cut to :data:`LISTED_NAME` characters.
LISTED_COLUMNS = 20
LISTED_NAME = 40
#: Characters of a reader's exception kept in a message (it may quote the whole cell).
_REASON = 200
_LINE_END = re.compile(r"[\r\n]")


class TableError(ValueError):
    """The file or the mapping cannot be used; ``field`` is the request field to name."""

    def __init__(self, message: str, field: str = "file") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Table:
    """A header and the data rows below it, each as a list of cell texts."""

    header: list[str]
    rows: list[list[str]]


def read_table(kind: str, data: bytes, max_rows: int) -> Table:
    if kind == "csv":
        return _read_csv(data, max_rows)
    if kind == "xlsx":
        return _read_xlsx(data, max_rows)
    raise TableError(f"Variable data must be a CSV or XLSX file, this file is {kind.upper()}.")


def sniff_sample(text: str) -> str:
    """The start of the first line, at most :data:`SNIFF_SAMPLE` characters.

    Only the first SNIFF_SAMPLE characters are looked at, so a file without line ends
    (or with ``\\r`` ones only) costs no more than one with a short header.
    """
    return _LINE_END.split(text[:SNIFF_SAMPLE], maxsplit=1)[0]


def pick_dialect(text: str) -> Any:
    """The CSV dialect of ``text``, guessed from :func:`sniff_sample` (Excel's otherwise)."""
    try:
        return csv.Sniffer().sniff(sniff_sample(text), delimiters=",;\t|")
    except csv.Error:
        return csv.excel


def _read_csv(data: bytes, max_rows: int) -> Table:
    try:
        text = decode_text(data)
    except UnicodeDecodeError as exc:
        raise TableError(
            f"The CSV file is not UTF-8 (byte {exc.start} is not valid UTF-8); save it as "
            "'CSV UTF-8' (or UTF-16 with a byte-order mark)."
        ) from None
    source = io.StringIO(text, newline="")
    # Strict: a quote left open would otherwise swallow every later line into one value.
    reader = csv.reader(source, pick_dialect(text), strict=True)
    row_ends = [0]  # the line the last row read ended on
    try:
        return _collect(_rows_ending(reader, row_ends), max_rows, reader.dialect.delimiter)
    except csv.Error as exc:
        if not source.read(1):  # the text ran out inside a quoted value
            raise TableError(
                f"The CSV file cannot be read: the quoted value that starts on line "
                f"{row_ends[0] + 1} is never closed (a quote inside a quoted value is "
                'written twice: "").'
            ) from None
        raise TableError(f"The CSV file cannot be read: line {reader.line_num}: {exc}.") from None


def _rows_ending(reader: Any, row_ends: list[int]) -> Iterator[list[str]]:
    """``reader``'s rows, noting in ``row_ends[0]`` the line each one ended on."""
    for row in reader:
        yield row
        row_ends[0] = reader.line_num


def _read_xlsx(data: bytes, max_rows: int) -> Table:
    """The first sheet; any failure of openpyxl while reading is the file's, a 422."""
    from openpyxl import load_workbook

    problem = workbook_problem(data)  # the same check as an upload's
    if problem is not None:
        raise TableError(f"The XLSX file cannot be used: {problem}.")
    try:
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=False)
    except Exception as exc:  # openpyxl raises many kinds (KeyError, zip, XML errors)
        raise TableError(f"The XLSX file cannot be read: {_reason(exc)}.") from None
    try:
        sheet = workbook.worksheets[0]
        sheet.reset_dimensions()  # pad rows to their cells, not to a declared <dimension>
        return _collect(sheet.iter_rows(max_col=MAX_COLUMNS, values_only=True), max_rows)
    except TableError:
        raise
    except Exception as exc:  # a cell or row openpyxl cannot parse: ValueError, IndexError...
        raise TableError(f"The XLSX file cannot be read: {_reason(exc)}.") from None
    finally:
        workbook.close()


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= _REASON else text[:_REASON] + "..."


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, str | int | float):
        return str(value)
    return _formula_text(value)


def _formula_text(value: object) -> str:
    """An array formula's or a data table's text as Excel shows it in the formula bar.

    openpyxl reads these as objects, not as the formula's text: ``str()`` of one is its
    Python repr (``<openpyxl...ArrayFormula object at 0x...>``), which was printed.
    """
    from openpyxl.worksheet.formula import ArrayFormula, DataTableFormula

    if isinstance(value, ArrayFormula):
        return str(value.text or "")
    if isinstance(value, DataTableFormula):
        # r1 is the row input cell of a two-way table, else the one input cell (a row
        # input with dtr, else a column input); the other argument stays empty.
        r1, r2 = value.r1 or "", value.r2 or ""
        if _xml_true(value.dt2D):
            return f"=TABLE({r1},{r2})"
        return f"=TABLE({r1},)" if _xml_true(value.dtr) else f"=TABLE(,{r1})"
    return str(value)


def _xml_true(flag: object) -> bool:
    """An XML boolean attribute as openpyxl keeps it (the text ``"1"``, or a bool)."""
    return str(flag).lower() in ("1", "true")


def _texts(row: Sequence[object], width: int) -> list[str]:
    """The first ``width`` cells as text: a row is kept only as wide as what can be mapped."""
    return ["" if value is None else _cell_text(value) for value in row[:width]]


def _header(row: Sequence[object]) -> list[str]:
    """The first row's texts, without the empty cells openpyxl pads it with (None)."""
    width = min(len(row), MAX_COLUMNS)
    while width and row[width - 1] is None:
        width -= 1
    header = [cell.strip() for cell in _texts(row, width)]
    for index, name in enumerate(header):
        if len(name) > MAX_HEADER_CELL:
            raise TableError(
                f"The header of column {index} has {len(name)} characters; at most "
                f"{MAX_HEADER_CELL} are accepted."
            )
    return header


def _collect(
    rows: Iterable[Sequence[object]], max_rows: int, delimiter: str | None = None
) -> Table:
    """Header (its first :data:`MAX_COLUMNS` cells) and data rows (as wide as the header:
    the columns a mapping can name); at most ``max_rows`` data and :data:`MAX_BLANK_ROWS`
    blank rows are walked, so a sheet's declared size or row numbers cost nothing more.

    With a CSV's ``delimiter``, a row with values past the header's columns is refused: it
    is a value holding the delimiter without quotes, whose end would be dropped or land in
    the next column (``Smith, John`` printed as ``Smith``). A sheet's cells are cells.
    """
    header: list[str] | None = None
    cut = False  # the header row has more than MAX_COLUMNS cells: those are not read
    body: list[list[str]] = []
    blank = 0
    for raw in rows:
        if header is None:
            header, cut = _header(raw), len(raw) > MAX_COLUMNS
            continue
        row = [] if raw.count(None) == len(raw) else _texts(raw, len(header))
        if not any(cell.strip() for cell in row):
            blank += 1  # blank lines (and Excel's trailing empty rows) are no records
            if blank > MAX_BLANK_ROWS:
                raise TableError(
                    f"The file has more than {MAX_BLANK_ROWS} empty rows; delete them."
                )
            continue
        if len(body) >= max_rows:
            raise TableError(f"The file has more than {max_rows} data rows; at most {max_rows}.")
        if delimiter is not None and not cut and not all(map(_blank, raw[len(header) :])):
            count = max(number for number, cell in enumerate(raw, 1) if not _blank(cell))
            raise TableError(
                f"Row {len(body) + 1} has {count} values, more than the {len(header)} columns "
                f"of the header: a value that holds the delimiter {delimiter!r} must be in "
                'double quotes ("Smith, John").'
            )
        longest = max(map(len, row), default=0)
        if longest > MAX_CELL:
            raise TableError(
                f"Row {len(body) + 1} has a cell of {longest} characters; "
                f"at most {MAX_CELL} are accepted."
            )
        body.append(row)
    if header is None or not any(header):
        raise TableError("The file is empty: the first row must name the columns.")
    if not body:
        raise TableError("The file has a header but no data rows.")
    return Table(header=header, rows=body)


def _blank(cell: object) -> bool:
    return cell is None or not str(cell).strip()


def column_list(header: Sequence[str]) -> str:
    """The first :data:`LISTED_COLUMNS` column names for a message, each shortened."""
    names = [_shortened(name) for name in header[:LISTED_COLUMNS]]
    more = len(header) - LISTED_COLUMNS
    listed = ", ".join(names) + (f" and {more} more" if more > 0 else "")
    if len(header) >= MAX_COLUMNS:
        listed += f"; only the first {MAX_COLUMNS} columns are read"
    return listed


def _shortened(name: str) -> str:
    return name if len(name) <= LISTED_NAME else name[:LISTED_NAME] + "..."


def resolve_mapping(
    mapping: ColumnMapping, header: Sequence[str], data_keys: Sequence[str]
) -> dict[str, tuple[int, str]]:
    """DataKey -> (column index, column label); :class:`TableError` naming what is wrong.

    An empty mapping maps every header that equals a DataKey to it.
    """
    if not mapping:
        found = {key: (header.index(key), key) for key in data_keys if key in header}
        if not found:
            raise TableError(
                "columnMapping is empty and no column header equals a DataKey of the "
                f"template ({', '.join(data_keys)}); map DataKeys to columns.",
                "columnMapping",
            )
        return found
    resolved: dict[str, tuple[int, str]] = {}
    problems: list[str] = []
    for key, column in mapping.items():
        if key not in data_keys:
            problems.append(f"{_shortened(key)!r} is not a DataKey of the template")
        elif isinstance(column, bool) or not isinstance(column, int | str):
            problems.append(f"{key!r}: a column is an index (from 0) or a header text")
        elif isinstance(column, int):
            if not 0 <= column < len(header):
                problems.append(
                    f"{key!r}: the file has no column {column} (it has columns 0 to "
                    f"{len(header) - 1}: {column_list(header)})"
                )
            else:
                resolved[key] = (column, header[column] or f"column {column}")
        elif column.strip() not in header:
            problems.append(
                f"{key!r}: the file has no column {_shortened(column)!r} "
                f"(its columns: {column_list(header)})"
            )
        else:
            resolved[key] = (header.index(column.strip()), column.strip())
    if problems:
        more = len(problems) - LISTED_COLUMNS
        listed = "; ".join(problems[:LISTED_COLUMNS]) + (f"; and {more} more" if more > 0 else "")
        raise TableError(f"columnMapping: {listed}.", "columnMapping")
    return resolved
