"""``POST /api-ext/draft/<hash>/upload``: the customer's own print PDF becomes the draft's.

The PHP SDK does not call this. The Magento module does (``Helper/Api.php uploadPdf``, for
downloadable products after an order): JSON ``{fileURL, callbackURL}``, expecting ``204``
and, later, a request to its ``callbackURL``. pps does not fetch PDFs from a shop's URL: it
would need an outbound GET of up to ``PPS_MAX_UPLOAD_BYTES`` from a shop and a callback
sent after the answer (the shop's callback calls pps back), so that body is a ``415`` that
says so. The shape pps takes: ``multipart/form-data`` with the PDF in the field ``file``,
as ``POST /api-ext/file`` takes files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from flask import request

from pps.api import bp, current_client, resource, services
from pps.api.schemas import DraftResponse
from pps.files.rendering import TemplateNotRenderable, decoded, template_spec
from pps.files.uploaded import upload_key
from pps.platform.errors import NotFound, UnsupportedMediaType, ValidationFailed
from pps.platform.models import UPLOAD_INTENTS
from pps.preflight import PdfRefused, accept_pdf, preflight_and_store
from pps.render import AssetError
from pps.uploads.budget import room_for
from pps.webhooks.events import DRAFT_UPDATED, draft_payload, emit

blp = resource("draft_upload", "Draft")
F = TypeVar("F", bound=Callable[..., Any])

DRAFT_NOT_FOUND = "No draft with this hash exists for this client."
UPLOAD_BODY = {
    "required": True,
    "content": {
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
        }
    },
}


_document: Callable[[F], F] = blp.doc(requestBody=UPLOAD_BODY)


@blp.post("/draft/<draft_hash:draft_hash>/upload")
@_document
@blp.response(200, DraftResponse)
@blp.errors(400, 404, 413, 415, 422, 507)
def upload_print_pdf(draft_hash: str) -> dict[str, Any]:
    """Upload the customer's print PDF

    For drafts with intent `upload` (the PDF is the print file) or `upload-and-editor`
    (the PDF is the artwork under the template's fields). The PDF is checked against the
    template: a real PDF, not encrypted, the template's page count, each page trim + bleed
    (or a TrimBox of the trim size with the bleed around it) within ±1 mm, every font
    embedded, form XObjects nested at most 100 levels deep and drawn at most 100,000 times
    a page, at most 32 MB of decompressed content a page (forms, tiling patterns and Type3
    glyphs counted each time they are drawn); a `422` names each problem
    under `errors.file`, and nothing changes. An accepted PDF replaces any earlier one,
    bumps the draft's version and is preflighted:
    the answer is the draft with its `preflightStatus` and `validationResults`. At most
    `PPS_MAX_UPLOAD_BYTES` (64 MiB by default), else `413`; another content type than
    multipart is `415`. A PDF that would take the client's uploaded files past
    `PPS_CLIENT_STORAGE_BYTES` is `507` and nothing changes (the new PDF needs room beside
    the one it replaces, as both are stored for a moment).
    """
    svc = services()
    client = current_client().identifier
    draft = svc.repository.get_draft(client, draft_hash)
    if draft is None:
        raise NotFound(DRAFT_NOT_FOUND)
    if draft.intent not in UPLOAD_INTENTS:
        raise ValidationFailed(
            errors={
                "intent": [
                    f"Only drafts with intent {' or '.join(UPLOAD_INTENTS)} take a print PDF; "
                    f"this draft's intent is {draft.intent!r}."
                ]
            }
        )
    request.max_content_length = svc.settings.max_upload_bytes
    if request.mimetype not in ("multipart/form-data", "") and request.content_length != 0:
        if request.is_json:
            raise UnsupportedMediaType(
                "pps does not fetch the PDF from a 'fileURL' and calls no 'callbackURL'; "
                "send the PDF itself as multipart/form-data in the field 'file'."
            )
        raise UnsupportedMediaType("Send the PDF as multipart/form-data in the field 'file'.")
    upload = request.files.get("file") if request.mimetype == "multipart/form-data" else None
    if upload is None:
        raise ValidationFailed(
            errors={"file": ["Send the PDF as multipart/form-data in the field 'file'."]}
        )
    data = upload.read()
    template = svc.repository.get_template(client, draft.template_identifier)
    if template is None:
        raise NotFound("The draft's template no longer exists.")
    try:
        spec = template_spec(template)
        accepted = decoded(lambda: accept_pdf(data, spec))
    except PdfRefused as exc:
        raise ValidationFailed(
            f"The PDF cannot be the print file: {exc}", errors={"file": exc.problems}
        ) from exc
    except AssetError as exc:  # pikepdf or pdfium gave up on the file part-way
        raise ValidationFailed(
            "The PDF cannot be read.", errors={"file": [f"The PDF cannot be read: {exc}"]}
        ) from exc
    except TemplateNotRenderable as exc:
        raise ValidationFailed(str(exc), errors={"template": [str(exc)]}) from exc
    key = upload_key(client, draft_hash, accepted.data)
    size = len(accepted.data)
    with room_for(svc.uploads.budget, client, size, svc.settings.client_storage_bytes):
        svc.storage.put(key, accepted.data)
        try:
            updated = svc.repository.update_draft(
                client, draft_hash, upload_key=key, upload_size=size
            )
        except Exception:
            # Not recorded: no budget counts the file and no sweep finds it. The same PDF
            # sent again has the key of the one the draft keeps, which stays.
            if key != draft.upload_key:
                svc.storage.delete(key)
            raise
        if updated is None:  # deleted meanwhile
            svc.storage.delete(key)
            raise NotFound(DRAFT_NOT_FOUND)
    if draft.upload_key is not None and draft.upload_key != key:
        svc.storage.delete(draft.upload_key)
    checked = preflight_and_store(
        svc.repository, svc.storage, updated, max_pixels=svc.settings.max_image_pixels
    )
    emit(svc, client, DRAFT_UPDATED, draft_payload(checked))
    return {"data": checked}


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource
