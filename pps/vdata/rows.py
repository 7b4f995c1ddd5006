"""Rows of variable data checked as the editor checks values. No Flask.

A record renders with the draft's values overlaid by its row, so a row is checked the same
way (:func:`pps.render.check_values`: required, length, fitting the box, glyphs, QR size).
Problems name the row (counted from 1) and the column as the shop knows it (its header, or
the DataKey for rows sent as JSON).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pps.render import Assets, TemplateSpec, check_values
from pps.render.problems import english
from pps.vdata.tabular import Table

__all__ = ["MAX_REPORTED", "RowProblems", "check_rows", "rows_from_table", "text_values"]

#: Problems listed in one answer; a file with a broken column would otherwise list them all.
MAX_REPORTED = 50
RowProblems = dict[str, list[str]]


def rows_from_table(table: Table, columns: Mapping[str, tuple[int, str]]) -> list[dict[str, str]]:
    """Each data row as DataKey -> cell text (a short row's missing cells are empty)."""
    return [
        {key: (row[index] if index < len(row) else "") for key, (index, _) in columns.items()}
        for row in table.rows
    ]


def text_values(row: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """A JSON row as text: numbers and booleans as JSON writes them, null as empty; lists
    and objects are refused (names of the keys that were)."""
    values: dict[str, str] = {}
    refused: list[str] = []
    for key, value in row.items():
        if value is None:
            values[key] = ""
        elif isinstance(value, bool):
            values[key] = "true" if value else "false"
        elif isinstance(value, int | float | str):
            values[key] = str(value)
        else:
            refused.append(key)
    return values, refused


def check_rows(
    spec: TemplateSpec,
    base: Mapping[str, object],
    rows: Sequence[Mapping[str, str]],
    assets: Assets,
    labels: Mapping[str, str] | None = None,
    *,
    first_row: int = 1,
) -> RowProblems:
    """``"rows.<n>.<column>" -> [messages]`` for every row that would not render."""
    problems: RowProblems = {}
    for offset, row in enumerate(rows):
        number = first_row + offset
        unknown = [key for key in row if key not in spec.data_keys]
        for key in unknown:
            problems[f"rows.{number}.{key}"] = [
                f"Row {number}: {key!r} is not a DataKey of the template."
            ]
        # Only its DataKeys: a choice (``name.color``) is refused above, not checked too.
        known = {key: value for key, value in row.items() if key in spec.data_keys}
        found = check_values(spec, {**base, **known}, assets)
        for key, listed in found.items():
            column = (labels or {}).get(key, key)
            where = f"Row {number}, column {column!r}" + (
                f" (DataKey {key!r})" if column != key else ""
            )
            problems[f"rows.{number}.{column}"] = [
                f"{where}: {english(problem)}" for problem in listed
            ]
        if len(problems) >= MAX_REPORTED:
            break
    return problems
