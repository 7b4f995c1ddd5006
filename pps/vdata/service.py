"""Variable data of a draft, end to end below the web layer: read a file through its column
mapping, check every row against the template, then store the rows. No Flask.

Nothing is stored unless every row passes, so a 422 leaves the draft's rows as they were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pps.files.rendering import StorageAssets, draft_values, template_spec
from pps.platform.models import Draft, Template
from pps.platform.services import Services
from pps.vdata.rows import RowProblems, check_rows, rows_from_table, text_values
from pps.vdata.tabular import ColumnMapping, TableError, read_table, resolve_mapping

__all__ = ["MAX_ROW_INDEX", "DraftGone", "RowsRefused", "copy_rows", "import_table", "put_rows"]

#: The largest row index (``PUT``) or offset (``GET``) a client may name. No draft has that
#: many rows (``PPS_MAX_VARIABLE_ROWS``); a larger number would overflow the databases'
#: 64-bit integers in the query instead of naming no row.
MAX_ROW_INDEX = 2**31 - 1


class DraftGone(LookupError):
    """The draft was deleted after it was read and before its rows were stored: nothing
    was stored, and the caller answers as for a draft that does not exist."""


class RowsRefused(ValueError):
    """Rows that would not render; ``errors`` names row and column of each problem."""

    def __init__(self, errors: RowProblems) -> None:
        self.errors = errors
        first = next(iter(errors.values()))[0]
        more = len(errors) - 1
        super().__init__(first + (f" (and {more} more problems)" if more else ""))


def _check(
    svc: Services,
    draft: Draft,
    template: Template,
    rows: Sequence[Mapping[str, str]],
    labels: Mapping[str, str] | None = None,
    first_row: int = 1,
) -> None:
    spec = template_spec(template, draft.variant_identifier)  # what the records render with
    assets = StorageAssets(
        svc.storage, draft.client_identifier, template.identifier,
        max_pixels=svc.settings.max_image_pixels,
    )  # fmt: skip
    problems = check_rows(spec, draft_values(draft), rows, assets, labels, first_row=first_row)
    if problems:
        raise RowsRefused(problems)


def import_table(
    svc: Services,
    draft: Draft,
    template: Template,
    kind: str,
    data: bytes,
    mapping: ColumnMapping,
) -> int:
    """Replace the draft's rows with the file's; the number of rows stored.

    Raises :class:`TableError` (file or mapping), :class:`RowsRefused` or
    :class:`DraftGone`.
    """
    table = read_table(kind, data, svc.settings.max_variable_rows)
    columns = resolve_mapping(
        mapping, table.header, template_spec(template, draft.variant_identifier).data_keys
    )
    rows = rows_from_table(table, columns)
    _check(svc, draft, template, rows, {key: label for key, (_, label) in columns.items()})
    if not svc.variable_data.replace(draft.client_identifier, draft.draft_hash, rows):
        raise DraftGone(draft.draft_hash)
    return len(rows)


def _row_index(key: str) -> int:
    """The row a key of ``data`` names; TableError unless it is ASCII digits (``isdigit`` is
    true of "²", which ``int`` refuses). A number past MAX_ROW_INDEX names no row, and
    reading it whole would hit ``int``'s limit of 4300 digits."""
    if not (key.isascii() and key.isdigit()):
        raise TableError(f"data: {key!r} is not a row index (0, 1, ...).", "data")
    digits = key.lstrip("0")
    return int(digits or "0") if len(digits) <= len(str(MAX_ROW_INDEX)) else MAX_ROW_INDEX + 1


def put_rows(
    svc: Services, draft: Draft, template: Template, data: Sequence[Any] | Mapping[str, Any]
) -> bool:
    """PUT's ``data``: a list replaces every row; an object keyed by row index (counted
    from 0, as the rows are listed) updates those rows key by key. False when an index
    has no row. Raises :class:`TableError` for a malformed row, :class:`RowsRefused`,
    :class:`DraftGone`."""
    changes: dict[int, dict[str, str]] = {}
    items: list[tuple[str, Any]]
    if isinstance(data, Mapping):
        items = [(str(key), row) for key, row in data.items()]
    else:
        items = [(str(index), row) for index, row in enumerate(data)]
    for key, row in items:
        index = _row_index(key)
        if not isinstance(row, dict):
            raise TableError(f"data.{key}: a row is an object of DataKey to value.", "data")
        values, refused = text_values(row)
        if refused:
            raise TableError(
                f"data.{key}: {', '.join(map(repr, refused))} must be text or a number.", "data"
            )
        changes[index] = values
    if len(changes) > svc.settings.max_variable_rows:
        raise TableError(f"data: at most {svc.settings.max_variable_rows} rows.", "data")
    if isinstance(data, list):
        rows = [changes[index] for index in range(len(changes))]
        _check(svc, draft, template, rows)
        if not svc.variable_data.replace(draft.client_identifier, draft.draft_hash, rows):
            raise DraftGone(draft.draft_hash)
        return True
    for index, values in sorted(changes.items()):
        if index > MAX_ROW_INDEX:  # no such row, and the query could not hold the index
            return False
        stored = svc.variable_data.row(draft.draft_hash, index)
        if stored is None:
            if svc.repository.get_draft_ref(draft.client_identifier, draft.draft_hash) is None:
                raise DraftGone(draft.draft_hash)  # its rows went with it
            return False
        _check(svc, draft, template, [{**stored, **values}], first_row=index + 1)
    updated = svc.variable_data.update(draft.client_identifier, draft.draft_hash, changes)
    if updated is None:
        raise DraftGone(draft.draft_hash)
    return updated


def copy_rows(svc: Services, source: Draft, target_hash: str) -> int:
    """Give a copy of ``source`` (replicate) the source's rows; how many were copied.

    The rows are not checked again: the copy has the source's template and variant, and a
    row renders over the copy's values as it does over the source's (the request's
    ``apiDefaultValues`` fill only what a row leaves empty or unmapped).
    """
    if source.record_count == 0:
        return 0
    copied = svc.variable_data.copy(source.client_identifier, source.draft_hash, target_hash)
    return copied or 0
