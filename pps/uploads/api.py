"""``/api-ext/file``: a shop uploads files to use in drafts, and deletes them."""

from __future__ import annotations

from flask import Response, jsonify
from marshmallow import Schema, fields

from pps.api import bp, current_client, resource, services
from pps.platform.errors import NotFound, ValidationFailed
from pps.uploads.store import UploadLimits, UploadRefused, accept_upload
from pps.uploads.web_body import request_body, uploaded_part
from pps.web.common import no_content

blp = resource("uploads", "File")

FILE_NOT_FOUND = "No uploaded file with this identifier exists for this client."


class FileOut(Schema):
    identifier = fields.String(
        required=True, metadata={"description": "The file's identifier (32 characters)."}
    )


_MULTIPART = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {"file": {"type": "string", "format": "binary"}},
            }
        }
    },
}


@blp.post("/file")
@request_body(blp, _MULTIPART)
@blp.response(201, FileOut)
@blp.errors(400, 413, 415, 422, 507)
def upload_file() -> Response:
    """Upload a file

    Multipart, the file in the part `file`. Accepted: PNG, JPEG, PDF, SVG, CSV and XLSX,
    recognised by their content (the name and Content-Type are not trusted). Images are
    decoded completely and may have at most `PPS_MAX_IMAGE_PIXELS` pixels, PDFs must open
    and not be encrypted (even without a user password), an SVG is stored cleaned (no
    scripts, event handlers, styles sheets or references outside the file), a CSV must
    be UTF-8 (or UTF-16 with a BOM), an XLSX must open.
    At most `PPS_MAX_UPLOAD_BYTES` bytes (413 beyond). Answers `201` with
    `{"identifier": "..."}` without a `data` wrapper, as the PHP SDK's `File::fromArray`
    reads it. A file that would take the client's uploaded files (these, and drafts' print
    PDFs) past `PPS_CLIENT_STORAGE_BYTES` is `507`, and nothing is stored. Use the
    identifier as `file` of `POST /api-ext/draft/{hash}/variable-data`.
    """
    name, data = uploaded_part()
    svc = services()
    try:
        record = accept_upload(
            svc.storage,
            svc.uploads,
            current_client().identifier,
            name,
            data,
            UploadLimits(
                max_bytes=svc.settings.max_upload_bytes,
                max_pixels=svc.settings.max_image_pixels,
                client_bytes=svc.settings.client_storage_bytes,
            ),
        )
    except UploadRefused as exc:
        raise ValidationFailed(str(exc), errors={"file": [str(exc)]}) from None
    response = jsonify({"identifier": record.identifier})
    response.status_code = 201
    return response


@blp.delete("/file/<identifier>")
@blp.response(204, description="Deleted; the body is empty.")
@blp.errors(404)
def delete_file(identifier: str) -> Response:
    """Delete an uploaded file

    The file's bytes and record go, and its size no longer counts against the client's
    `PPS_CLIENT_STORAGE_BYTES`. Drafts whose image value names it have an unknown image
    from then on (their files are a `422` until another image is chosen); variable data
    read from it stays. Another client's file, or one deleted already, is a `404`.
    """
    svc = services()
    client = current_client().identifier
    record = svc.uploads.get(client, identifier)
    if record is None:
        raise NotFound(FILE_NOT_FOUND)
    # The bytes first: should the storage fail, the record stays and a retry deletes both;
    # bytes left behind a deleted record would be counted by no budget and found by no one.
    svc.storage.delete(record.storage_key)
    if not svc.uploads.delete(client, identifier):
        raise NotFound(FILE_NOT_FOUND)  # deleted meanwhile by another request
    return no_content()


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource
