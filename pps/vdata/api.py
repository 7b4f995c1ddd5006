"""``/api-ext/draft/<hash>/variable-data`` and ``/api-ext/draft/<hash>/<usage>/page-info``."""

from __future__ import annotations

from typing import Any

from flask import Response, jsonify, request
from marshmallow import Schema, ValidationError, fields, validate

from pps.api import bp, current_client, resource, services
from pps.api.parser import flatten
from pps.api.schemas import Input, QueryNumber
from pps.files.rendering import TemplateNotRenderable, template_spec
from pps.platform import strict_json
from pps.platform.errors import NotFound, ValidationFailed
from pps.platform.models import Draft, Template
from pps.uploads.kinds import UnknownKind, sniff
from pps.uploads.store import UploadRefused, read_upload
from pps.uploads.web_body import json_or_form_body, request_body, uploaded_part
from pps.vdata.page_info import UNITS, USAGES, page_info
from pps.vdata.service import MAX_ROW_INDEX, DraftGone, RowsRefused, import_table, put_rows
from pps.vdata.tabular import TableError
from pps.web.common import no_content
from pps.webhooks.events import DRAFT_UPDATED, draft_payload, emit

blp = resource("variable_data", "Draft")

DRAFT_NOT_FOUND = "No draft with this hash exists for this client."
#: Rows one GET answers at most (``limit``), and without ``limit``.
MAX_LIMIT = 1000
DEFAULT_LIMIT = 25


def _announce_update(draft_hash: str) -> None:
    """The ``draft.updated`` webhook event: its records (and version) changed."""
    svc = services()
    client = current_client().identifier
    draft = svc.repository.get_draft(client, draft_hash)
    if draft is not None:
        emit(svc, client, DRAFT_UPDATED, draft_payload(draft))


def _draft_and_template(draft_hash: str) -> tuple[Draft, Template]:
    svc = services()
    client = current_client().identifier
    draft = svc.repository.get_draft(client, draft_hash)
    if draft is None:
        raise NotFound(DRAFT_NOT_FOUND)
    template = svc.repository.get_template(client, draft.template_identifier)
    if template is None:  # deleted templates delete their drafts; a race at most
        raise NotFound(DRAFT_NOT_FOUND)
    return draft, template


class RowsArgs(Schema):
    limit = QueryNumber(
        load_default=DEFAULT_LIMIT,
        validate=validate.Range(min=1, max=MAX_LIMIT),
        metadata={"description": f"Rows to answer, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT})."},
    )
    offset = QueryNumber(
        load_default=0,
        validate=validate.Range(min=0, max=MAX_ROW_INDEX),
        metadata={
            "description": f"Rows to skip, counted from 0 (default 0), at most {MAX_ROW_INDEX}."
        },
    )


class RowsMeta(Schema):
    amountOfRows = fields.Integer(required=True)


class RowsOut(Schema):
    data = fields.List(fields.Dict(keys=fields.String(), values=fields.String()), required=True)
    _meta = fields.Nested(RowsMeta, required=True, data_key="_meta")


@blp.get("/draft/<draft_hash:draft_hash>/variable-data")
@blp.query(RowsArgs)
@blp.response(200, RowsOut)
@blp.errors(404)
def list_rows(args: dict[str, Any], draft_hash: str) -> Response:
    """List a draft's variable-data rows

    `{"data": [rows], "_meta": {"amountOfRows": n}}`: each row maps DataKeys to text, in
    record order from `offset` (counted from 0). A draft without variable data has no rows.
    """
    draft, _ = _draft_and_template(draft_hash)
    rows, total = services().variable_data.page(draft.draft_hash, args["offset"], args["limit"])
    return jsonify({"data": rows, "_meta": {"amountOfRows": total}})


class FileImportInput(Input):
    """The JSON body of ``POST .../variable-data``: a file uploaded before, by identifier.
    It validates the body and documents it, so the two cannot drift apart."""

    file = fields.String(
        required=True,
        validate=validate.Length(min=1),
        metadata={"description": "Identifier of an uploaded file (`POST /api-ext/file`)."},
    )
    columnMapping = fields.Raw(  # read by _mapping: a JSON text in multipart, PHP's [] too
        allow_none=True,
        metadata={
            "type": "object",
            "additionalProperties": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        },
    )


_POST_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {"type": "string", "format": "binary"},
                    "columnMapping": {
                        "type": "string",
                        "description": "JSON object: DataKey -> column index (from 0) or "
                        "column header text.",
                    },
                },
            }
        },
        "application/json": {"schema": FileImportInput},
    },
}


def _mapping(raw: Any) -> dict[str, int | str]:
    if raw is None or raw == [] or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = strict_json.loads(raw)
        except ValueError as exc:
            raise ValidationFailed(
                "columnMapping is not valid JSON.", errors={"columnMapping": [str(exc)]}
            ) from None
        if raw == []:
            return {}
    if not isinstance(raw, dict):
        raise ValidationFailed(
            "columnMapping must be an object of DataKey to column.",
            errors={"columnMapping": ["Must be an object of DataKey to column index or header."]},
        )
    return {str(key): value for key, value in raw.items()}


@blp.post("/draft/<draft_hash:draft_hash>/variable-data")
@request_body(blp, _POST_BODY)
@blp.response(204, description="Stored; the body is empty.")
@blp.errors(400, 404, 413, 415, 422)
def import_rows(draft_hash: str) -> Response:
    """Set a draft's variable data from a CSV or XLSX file

    Either multipart (the file in the part `file`, `columnMapping` as a JSON text) or JSON
    `{"file": "<identifier from POST /api-ext/file>", "columnMapping": {...}}`. The file's
    first row is its header; `columnMapping` maps each DataKey to a column by index (from
    0) or header text (empty: headers equal to DataKeys). Every row replaces the draft's
    rows, one record each, in file order; `personalizations.amount` becomes the number of
    rows. Cells are text as written (formulas are never evaluated). Each row is checked
    like the editor's values over the draft's own: a `422` names row (from 1) and column
    (`rows.3.E-Mail`), and nothing is stored. Files: UTF-8 CSV (`,` `;` tab or `|`) or
    XLSX (first sheet), at most `PPS_MAX_UPLOAD_BYTES` bytes and `PPS_MAX_VARIABLE_ROWS`
    rows. Answers `204` with an empty body.
    """
    draft, template = _draft_and_template(draft_hash)
    svc = services()
    if request.mimetype == "multipart/form-data":
        _, data = uploaded_part()
        mapping = _mapping(request.form.get("columnMapping"))
    else:
        body = json_or_form_body()
        try:
            identifier = FileImportInput().load(body)["file"]
        except ValidationError as exc:
            raise ValidationFailed(
                "file is required: an uploaded file's identifier, or send the file as multipart.",
                errors=flatten(exc.messages),
            ) from None
        mapping = _mapping(body.get("columnMapping"))
        record = svc.uploads.get(current_client().identifier, identifier)
        if record is None:
            raise ValidationFailed(
                "No uploaded file with this identifier exists for this client.",
                errors={"file": ["No uploaded file with this identifier exists for this client."]},
            )
        try:
            data = read_upload(svc.storage, record)
        except UploadRefused as exc:
            raise ValidationFailed(str(exc), errors={"file": [str(exc)]}) from None
    try:
        kind = sniff(data)
        import_table(svc, draft, template, kind, data, mapping)
    except UnknownKind as exc:
        message = f"Variable data must be a CSV or XLSX file: this file is {exc}."
        raise ValidationFailed(message, errors={"file": [message]}) from None
    except TableError as exc:
        raise ValidationFailed(str(exc), errors={exc.field: [str(exc)]}) from None
    except RowsRefused as exc:
        raise ValidationFailed(str(exc), errors=exc.errors) from None
    except TemplateNotRenderable as exc:
        raise ValidationFailed(str(exc), errors={"template": [str(exc)]}) from None
    except DraftGone:  # deleted while the file was read
        raise NotFound(DRAFT_NOT_FOUND) from None
    _announce_update(draft_hash)
    return no_content()


class RowsInput(Schema):
    data = fields.Raw(
        required=True,
        metadata={
            "description": "A list of rows (replaces every row), or an object of row index "
            "(from 0) to row (updates those rows); a row maps DataKeys to text or numbers.",
            "oneOf": [
                {"type": "array", "items": {"type": "object"}},
                {"type": "object", "additionalProperties": {"type": "object"}},
            ],
        },
    )


@blp.put("/draft/<draft_hash:draft_hash>/variable-data")
@blp.body(RowsInput)
@blp.response(204, description="Stored; the body is empty.")
@blp.errors(404)
def replace_rows(data: dict[str, Any], draft_hash: str) -> Response:
    """Change a draft's variable-data rows

    `{"data": [rows]}` replaces every row; `{"data": {"2": {...}}}` (what PHP sends for a
    sparse array) updates the rows at those indexes (from 0), key by key. Rows are checked
    as in `POST`; a `422` names row (from 1) and column, and nothing is stored. `204`.
    """
    draft, template = _draft_and_template(draft_hash)
    rows = data["data"]
    if not isinstance(rows, list | dict):
        raise ValidationFailed(
            "data must be a list of rows or an object of row index to row.",
            errors={"data": ["Must be a list of rows or an object of row index to row."]},
        )
    try:
        done = put_rows(services(), draft, template, rows)
    except TableError as exc:
        raise ValidationFailed(str(exc), errors={exc.field: [str(exc)]}) from None
    except RowsRefused as exc:
        raise ValidationFailed(str(exc), errors=exc.errors) from None
    except TemplateNotRenderable as exc:  # rows are checked against it, as in POST
        raise ValidationFailed(str(exc), errors={"template": [str(exc)]}) from None
    except DraftGone:  # deleted while the rows were checked
        raise NotFound(DRAFT_NOT_FOUND) from None
    if not done:
        message = "data names a row index the draft does not have; send a list to replace rows."
        raise ValidationFailed(message, errors={"data": [message]})
    _announce_update(draft_hash)
    return no_content()


class PageInfoArgs(Schema):
    row = QueryNumber(
        load_default=None,
        validate=validate.Range(min=1),
        metadata={"description": "A record (variable-data row), counted from 1."},
    )
    unit = fields.String(
        load_default="mm",
        validate=validate.OneOf(list(UNITS)),
        metadata={"description": "mm (default), pt (1/72 in) or px (CSS pixels, 1/96 in)."},
    )


class Dimension(Schema):
    width = fields.Float(required=True)
    height = fields.Float(required=True)
    bleed = fields.Float(required=True)
    unit = fields.String(required=True)


class PageInfoData(Schema):
    pages = fields.Integer(required=True)
    dimensions = fields.List(fields.Nested(Dimension), required=True)


class PageInfoOut(Schema):
    data = fields.Nested(PageInfoData, required=True)


@blp.get(
    "/draft/<draft_hash:draft_hash>/<usage>/page-info",
    parameters=[
        {
            "in": "path",
            "name": "usage",
            "required": True,
            "schema": {"type": "string", "enum": list(USAGES)},
            "description": "Which file's pages: another word is a 422 naming `usage`.",
        }
    ],
)
@blp.query(PageInfoArgs)
@blp.response(200, PageInfoOut)
@blp.errors(404)
def draft_page_info(args: dict[str, Any], draft_hash: str, usage: str) -> dict[str, Any]:
    """Pages of a draft and their sizes

    `{"data": {"pages": n, "dimensions": [{width, height, bleed, unit}, ...]}}`, one
    dimension per page of one record: `width` and `height` are the trim size, `bleed` the
    bleed around it (`print`; 0 for `preview`, `low-res`, `image` and `thumbnail`).
    The print file of a draft with variable data holds `pages` pages per record,
    `personalizations.amount` records. `row` (from 1) must be one of its records.
    A draft that exists and a known usage never get a 404.
    """
    draft, template = _draft_and_template(draft_hash)
    if usage not in USAGES:
        raise ValidationFailed(
            f"usage must be one of {', '.join(USAGES)}.",
            errors={"usage": [f"Must be one of {', '.join(USAGES)}, got {usage!r}."]},
        )
    amount = max(1, draft.record_count)
    if args["row"] is not None and args["row"] > amount:
        raise ValidationFailed(
            f"row must be from 1 to {amount}: the draft has {amount} "
            f"{'record' if amount == 1 else 'records'}.",
            errors={"row": [f"Must be from 1 to {amount}."]},
        )
    try:
        spec = template_spec(template, draft.variant_identifier)  # the pages it renders
    except TemplateNotRenderable as exc:
        raise ValidationFailed(str(exc), errors={"template": [str(exc)]}) from None
    return {"data": page_info(spec, usage, args["unit"])}


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource
