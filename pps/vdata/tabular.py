"""CSV and XLSX files -> rows of DataKey values, through a column mapping. No Flask.

The first row of a file is its header. ``columnMapping`` maps each DataKey to a column,
either by its index (counted from 0, as the PHP SDK documents it: "column name to column
index") or by its header text. Cells are kept as text exactly as written: a formula such as
``=HYPERLINK("http://...")`` is never evaluated and stays that literal text (openpyxl reads
formulas as their source when ``data_only`` is off; CSV has no formulas). Numbers become
their shortest text (``12`` not ``12.0``), dates ISO 8601, empty cells an empty string.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pps.uploads.kinds import decode_text

__all__ = ["ColumnMapping", "Table", "TableError", "read_table", "resolve_mapping"]

ColumnMapping = Mapping[str, int | str]
#: Longest cell kept; longer ones are refused (no DataKey takes more than the renderer's cap).
MAX_CELL = 10_000


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


def _read_csv(data: bytes, max_rows: int) -> Table:
    try:
        text = decode_text(data)
    except UnicodeDecodeError as exc:
        raise TableError(
            f"The CSV file is not UTF-8 (byte {exc.start} is not valid UTF-8); save it as "
            "'CSV UTF-8' (or UTF-16 with a byte-order mark)."
        ) from None
    first_line = text.split("\n", 1)[0]
    try:
        dialect: Any = csv.Sniffer().sniff(first_line, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    try:
        return _collect(([str(cell) for cell in row] for row in reader), max_rows)
    except csv.Error as exc:
        raise TableError(f"The CSV file cannot be read: line {reader.line_num}: {exc}.") from None


def _read_xlsx(data: bytes, max_rows: int) -> Table:
    from openpyxl import load_workbook

    try:
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=False)
    except Exception as exc:  # openpyxl raises many kinds (KeyError, zip, XML errors)
        raise TableError(f"The XLSX file cannot be read: {exc}.") from None
    try:
        sheet = workbook.worksheets[0]
        rows = ([_cell_text(value) for value in row] for row in sheet.iter_rows(values_only=True))
        return _collect(rows, max_rows)
    finally:
        workbook.close()


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return str(value)


def _collect(rows: Iterator[list[str]], max_rows: int) -> Table:
    header: list[str] | None = None
    body: list[list[str]] = []
    for row in rows:
        if header is None:
            header = [cell.strip() for cell in row]
            continue
        if not any(cell.strip() for cell in row):
            continue  # blank lines (and Excel's trailing empty rows) are no records
        if len(body) >= max_rows:
            raise TableError(f"The file has more than {max_rows} data rows; at most {max_rows}.")
        for cell in row:
            if len(cell) > MAX_CELL:
                raise TableError(
                    f"Row {len(body) + 1} has a cell of {len(cell)} characters; "
                    f"at most {MAX_CELL} are accepted."
                )
        body.append(row)
    if header is None or not any(header):
        raise TableError("The file is empty: the first row must name the columns.")
    if not body:
        raise TableError("The file has a header but no data rows.")
    return Table(header=header, rows=body)


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
            problems.append(f"{key!r} is not a DataKey of the template")
        elif isinstance(column, bool) or not isinstance(column, int | str):
            problems.append(f"{key!r}: a column is an index (from 0) or a header text")
        elif isinstance(column, int):
            if not 0 <= column < len(header):
                problems.append(
                    f"{key!r}: the file has no column {column} (it has columns 0 to "
                    f"{len(header) - 1}: {', '.join(header)})"
                )
            else:
                resolved[key] = (column, header[column] or f"column {column}")
        elif column.strip() not in header:
            problems.append(
                f"{key!r}: the file has no column {column!r} (its columns: {', '.join(header)})"
            )
        else:
            resolved[key] = (header.index(column.strip()), column.strip())
    if problems:
        raise TableError("columnMapping: " + "; ".join(problems) + ".", "columnMapping")
    return resolved
