"""Reading an uploaded file from a multipart request, within ``PPS_MAX_UPLOAD_BYTES``.

Upload endpoints take bodies far larger than ``PPS_MAX_BODY_BYTES`` (1 MiB): the limit is
raised for this request only, before the body is touched, and a body over it is refused
with a 413 that names the limit instead of Werkzeug's bare one. Werkzeug spools file parts
over 500 KB to a temporary file, so a large upload is not held in memory twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import current_app, request
from werkzeug.datastructures import FileStorage as UploadedPart

from pps.api.blueprint import Blueprint, F
from pps.api.parser import check_storable, json_object_body, php_form, urlencoded_pairs
from pps.platform.errors import PayloadTooLarge, ValidationFailed
from pps.web.request_body import too_large_message

__all__ = [
    "MULTIPART_FRAMING",
    "allow_upload_body",
    "json_or_form_body",
    "request_body",
    "uploaded_part",
    "within_upload_limit",
]


#: Bytes an upload's body may have beyond ``PPS_MAX_UPLOAD_BYTES``: the multipart framing
#: (boundaries and part headers, a few hundred bytes) around a file of the largest size.
#: deploy/nginx.conf's upload location allows the same (64m + 64k = 65600k).
MULTIPART_FRAMING = 64 * 1024


def json_or_form_body() -> dict[str, Any]:
    """A body that is not multipart, read by the rules of every other body: JSON (400 when
    malformed, 422 when not an object, ``[]`` is ``{}``), a form, or nothing; 415 else."""
    raw = request.get_data(cache=True)  # within PPS_MAX_BODY_BYTES: 413 beyond
    if not raw.strip():
        return {}
    mimetype = request.mimetype
    if mimetype == "application/x-www-form-urlencoded":
        # Strictly UTF-8, keys nested as PHP nests them, as for every other form body (400, 422).
        form = php_form(urlencoded_pairs(raw))
        check_storable(form)
        return form
    return json_object_body(raw, mimetype)


def request_body(blp: Blueprint, body: dict[str, Any]) -> Callable[[F], F]:
    """Document a body the view reads itself (multipart, or either of two encodings)."""
    document = blp.doc(requestBody=body)

    def decorate(view: F) -> F:
        return document(view)  # type: ignore[no-any-return]

    return decorate


def allow_upload_body() -> int:
    """Raise the body limit of this request to ``PPS_MAX_UPLOAD_BYTES`` and the multipart
    framing around the file (the limit is the file's); a body that says it is larger is 413."""
    limit: int = current_app.extensions["pps.settings"].max_upload_bytes
    body_limit = limit + MULTIPART_FRAMING
    request.max_content_length = body_limit
    accepted = f"files of at most {limit} bytes are accepted (PPS_MAX_UPLOAD_BYTES)."
    if request.content_length is not None and request.content_length > body_limit:
        raise PayloadTooLarge(f"The upload has {request.content_length} bytes; {accepted}")
    # A body without Content-Length (chunked) is refused as it is read, with the same words.
    too_large_message(request, f"The upload has more than {body_limit} bytes; {accepted}")
    return limit


def uploaded_part(field: str = "file") -> tuple[str, bytes]:
    """``(file name, bytes)`` of the multipart part ``field``; 422 when it is missing.

    Only a multipart body may be as large as ``PPS_MAX_UPLOAD_BYTES``; any other body is
    read by the ordinary rules (and limit) first, then refused for lacking the file.
    """
    if request.mimetype != "multipart/form-data":
        json_or_form_body()
        raise ValidationFailed(
            "Send the file as multipart/form-data.",
            errors={field: ["Send the file as a multipart/form-data part named 'file'."]},
        )
    allow_upload_body()
    part: UploadedPart | None = request.files.get(field)
    if part is None:
        raise ValidationFailed(
            f"The multipart body has no file part named {field!r}.",
            errors={field: [f"Missing: send the file as the multipart part {field!r}."]},
        )
    return part.filename or "", within_upload_limit(part.read())


def within_upload_limit(data: bytes) -> bytes:
    """``data``, an uploaded file; 413 (as for a larger body) when it is over the limit."""
    limit: int = current_app.extensions["pps.settings"].max_upload_bytes
    if len(data) > limit:
        raise PayloadTooLarge(
            f"The file has {len(data)} bytes; files of at most {limit} bytes are accepted "
            "(PPS_MAX_UPLOAD_BYTES)."
        )
    return data
