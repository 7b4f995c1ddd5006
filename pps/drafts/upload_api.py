"""``POST /api-ext/draft/<hash>/upload``: the customer's own print PDF becomes the draft's.

The PHP SDK does not call this. Two shapes of body:

* ``multipart/form-data`` with the PDF in the field ``file`` (as ``POST /api-ext/file``
  takes files): checked and stored at once, the answer is the draft;
* JSON ``{fileURL, callbackURL}``, what the Magento module's ``uploadPdf``
  (``Helper/Api.php``, for downloadable products after an order) sends, expecting ``204``:
  the URLs are checked and the download recorded as a job; pps fetches the PDF in the
  background, stores it as a multipart upload would be, and then calls ``callbackURL``
  (:mod:`pps.drafts.url_upload`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from flask import Response, request

from pps.api import bp, current_client, resource, services
from pps.api.schemas import DraftResponse
from pps.drafts.pdf_upload import (
    DRAFT_NOT_FOUND,
    DraftGone,
    PdfNotTaken,
    intent_problem,
    store_pdf,
)
from pps.drafts.url_upload import queue_url_upload, url_problems
from pps.platform.errors import NotFound, UnsupportedMediaType, ValidationFailed
from pps.uploads.web_body import allow_upload_body, json_or_form_body, within_upload_limit
from pps.web.common import no_content

blp = resource("draft_upload", "Draft")
F = TypeVar("F", bound=Callable[..., Any])

UPLOAD_BODY = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["fileURL"],
                "properties": {
                    "fileURL": {
                        "type": "string",
                        "format": "uri",
                        "description": "Where pps downloads the PDF (http or https; GET, no "
                        "redirects followed, at most `PPS_MAX_UPLOAD_BYTES`).",
                    },
                    "callbackURL": {
                        "type": "string",
                        "format": "uri",
                        "nullable": True,
                        "description": "Called (POST, JSON `{draftHash, success, message}`, "
                        "the URL unchanged) once the PDF is stored or refused.",
                    },
                },
            }
        },
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "description": "The print PDF: one page per template page, each page "
                        "trim + bleed (or with a TrimBox of the trim size) within ±1 mm, "
                        "every font embedded, not encrypted.",
                    }
                },
            }
        },
    },
}


_document: Callable[[F], F] = blp.doc(requestBody=UPLOAD_BODY)
#: Documents the answer to a JSON body (the view returns it itself).
_queued: Callable[[F], F] = blp.alt_response(
    204,
    success=True,
    description="JSON body: the URLs are valid and the download is queued; the body is empty.",
)


def _text_field(body: dict[str, Any], name: str, required: bool) -> tuple[str | None, str | None]:
    """The field's value and what is wrong with it (None: nothing)."""
    value = body.get(name)
    if value is None:
        return None, ("Missing: the URL of the PDF." if required else None)
    if not isinstance(value, str) or not value.strip():
        return None, "Must be an http:// or https:// URL (a non-empty string)."
    return value, None


def _upload_from_url(client: str, draft_hash: str) -> Response:
    """The JSON body: check both URLs without sending anything, record the job, 204."""
    svc = services()
    # No body under Content-Type: application/json is {} here as on every other endpoint
    # (then a 422 naming fileURL), not malformed JSON.
    body = json_or_form_body()
    file_url, file_problem = _text_field(body, "fileURL", required=True)
    callback_url, callback_problem = _text_field(body, "callbackURL", required=False)
    errors = {
        field: [problem]
        for field, problem in (("fileURL", file_problem), ("callbackURL", callback_problem))
        if problem is not None
    }
    if errors:
        raise ValidationFailed(errors=errors)
    assert file_url is not None
    settings = svc.settings
    errors = url_problems(
        file_url,
        callback_url,
        allow_private=settings.notify_allow_private,
        allowed_hosts=svc.integrations.settings(client).allowed_hosts,
        timeout=settings.notify_timeout,
    )
    if errors:
        raise ValidationFailed(errors=errors)
    queue_url_upload(svc, client, draft_hash, file_url, callback_url)
    return no_content()


@blp.post("/draft/<draft_hash:draft_hash>/upload")
@_document
@blp.response(200, DraftResponse)
@_queued
@blp.errors(400, 404, 413, 415, 422, 507)
def upload_print_pdf(draft_hash: str) -> Any:
    """Upload the customer's print PDF

    For drafts with intent `upload` (the PDF is the print file) or `upload-and-editor`
    (the PDF is the artwork under the template's fields). The PDF is checked against the
    template: a real PDF, not encrypted, the template's page count, each page trim + bleed
    (or a TrimBox of the trim size with the bleed around it) within ±1 mm, every font
    embedded, form XObjects nested at most 100 levels deep and drawn at most 100,000 times
    a page, at most 32 MB of decompressed content a page (forms, tiling patterns and Type3
    glyphs counted each time they are drawn); a `422` names each problem
    under `errors.file`, and nothing changes. An accepted PDF replaces any earlier one
    (and is deleted: of PDFs sent to one draft at once, the last one recorded is the
    draft's and the others are gone), bumps the draft's version and is preflighted:
    the answer is the draft with its `preflightStatus` and `validationResults`. At most
    `PPS_MAX_UPLOAD_BYTES` (64 MiB by default), else `413`; another content type than
    multipart or JSON is `415`. A PDF that would take the client's uploaded files past
    `PPS_CLIENT_STORAGE_BYTES` is `507` and nothing changes (the new PDF needs room beside
    the one it replaces, as both are stored for a moment).

    JSON `{fileURL, callbackURL}` (the Magento module's `uploadPdf`): pps downloads the PDF
    from `fileURL` in the background and answers `204` at once. Both URLs must be http(s)
    and may not point at loopback, private or other special-purpose addresses (unless
    `PPS_NOTIFY_ALLOW_PRIVATE` or the client's allowed hosts say so): else `422` naming the
    field, and nothing is sent. The PDF is checked and stored as above (a refused one
    changes nothing); then `callbackURL`, when given, receives a POST of
    `{draftHash, success, message}` (`success: false` with the reason when the download or
    the check failed). A shop server that cannot be reached, or answers 5xx, 408, 425 or
    429, is tried again (`PPS_NOTIFY_ATTEMPTS`, `PPS_NOTIFY_BACKOFF`).
    """
    svc = services()
    client = current_client().identifier
    draft = svc.repository.get_draft(client, draft_hash)
    if draft is None:
        raise NotFound(DRAFT_NOT_FOUND)
    problem = intent_problem(draft)
    if problem is not None:
        raise ValidationFailed(errors={"intent": [problem]})
    if request.is_json:
        return _upload_from_url(client, draft_hash)
    allow_upload_body()  # before the body is read, as for POST /api-ext/file
    if request.mimetype not in ("multipart/form-data", "") and request.content_length != 0:
        raise UnsupportedMediaType(
            "Send the PDF as multipart/form-data in the field 'file', or JSON with its 'fileURL'."
        )
    upload = request.files.get("file") if request.mimetype == "multipart/form-data" else None
    if upload is None:
        raise ValidationFailed(
            errors={"file": ["Send the PDF as multipart/form-data in the field 'file'."]}
        )
    data = within_upload_limit(upload.read())
    try:
        checked = store_pdf(svc, client, draft, data)
    except PdfNotTaken as exc:
        raise ValidationFailed(str(exc), errors={exc.field: exc.problems}) from exc
    except DraftGone as exc:
        raise NotFound(str(exc)) from exc
    return {"data": checked}


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource
