"""``/api-ext/files/*``: a JWT in the query buys a short-lived link to a rendered file.

These endpoints live under ``/api-ext`` (so errors are JSON) but in a blueprint of their
own: they authenticate with the shop's JWT, not with the bearer key of the rest of the API,
and they do not insist on ``Accept: application/json`` because PDF viewers, ``<img>`` tags
and PHP's stream wrappers follow these URLs with whatever Accept header they like.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from flask import Blueprint, Response, request

from pps import ids
from pps.ephemeral import link_key
from pps.errors import Forbidden, NotFound, PpsError
from pps.file_keys import (
    DRAFT_FILE_KINDS,
    content_type_for,
    draft_file_key,
    draft_file_name,
    template_preview_name,
)
from pps.openapi import operation
from pps.web.common import CheckedToken, check_token, claim_jti, services

files_api = Blueprint("files_api", __name__, url_prefix="/api-ext/files")


class TokenMissing(PpsError):
    status = 401
    default_message = (
        "A file URL needs a token: add ?jwt=<token signed with your API key> to the URL."
    )


_JWT_PARAMETER = {
    "name": "jwt",
    "in": "query",
    "required": True,
    "schema": {"type": "string"},
    "description": (
        "HS256 JWT signed with the client's API key: `client` (required), optional `exp`, "
        "`urlPath` (must then equal this path), `user` (must then own the draft) and `jti` "
        "(the token is then good for one use)."
    ),
}
_IGNORED_PARAMETERS = [
    {
        "name": name,
        "in": "query",
        "required": False,
        "schema": {"type": "integer"},
        "description": "Accepted for compatibility; not used yet.",
    }
    for name in ("width", "height", "page")
]
_REDIRECT_HEADERS = {
    "Location": {
        "description": "`{base_url}/files/<link>/<filename>`, valid for PPS_FILE_LINK_TTL seconds.",
        "schema": {"type": "string"},
    },
}
_FILE_ERRORS = (400, 401, 403, 404, 503)


@files_api.get("/draft/<draft_hash>/<kind>")
@operation(
    tags=["Files"],
    summary="Redirect to a file rendered from a draft",
    description=(
        "`kind` is `print` (print PDF), `low-res` (low-resolution PDF) or `image` (PNG). "
        "The answer is a `302` to a short-lived URL of the file itself, which can be fetched "
        "(also with HEAD and Range) until it expires. `404` with a `message` when the draft "
        "is not the token's client's or the file has not been rendered yet; `403` when the "
        "token's `user` does not own the draft; `401` for a token that fails verification or "
        "was used before."
    ),
    status=302,
    security="jwt",
    parameters=[_JWT_PARAMETER, *_IGNORED_PARAMETERS],
    errors=_FILE_ERRORS,
    response_description="Redirect to the file.",
    response_headers=_REDIRECT_HEADERS,
)
def draft_file(draft_hash: str, kind: str) -> Response:
    file_kind = DRAFT_FILE_KINDS.get(kind)
    if file_kind is None:
        raise NotFound(
            f"There is no file kind {kind!r}; use one of: {', '.join(DRAFT_FILE_KINDS)}."
        )
    checked = _checked_token()
    svc = services()
    client = checked.client.identifier
    draft = svc.repository.get_draft(client, draft_hash)
    if draft is None:
        raise NotFound("No such draft.")
    if checked.token.user is not None and checked.token.user != draft.user_identifier:
        raise Forbidden("The token's user does not own this draft.")
    key = draft_file_key(client, draft.draft_hash, draft.version, kind)
    if svc.storage.stat(key) is None:
        raise NotFound(f"The {file_kind.label} of this draft has not been rendered yet.")
    return _link_to(
        checked,
        key=key,
        filename=draft_file_name(draft.draft_hash, kind),
        content_type=file_kind.content_type,
    )


@files_api.get("/template/<template_id>/page-preview-thumb")
@operation(
    tags=["Files"],
    summary="Redirect to the preview thumbnail of a template",
    description=(
        "A `302` to a short-lived URL of the template's preview image. `404` with a "
        "`message` when the template is not the token's client's or has no preview."
    ),
    status=302,
    security="jwt",
    parameters=[_JWT_PARAMETER, *_IGNORED_PARAMETERS],
    errors=_FILE_ERRORS,
    response_description="Redirect to the image.",
    response_headers=_REDIRECT_HEADERS,
)
def template_preview(template_id: str) -> Response:
    checked = _checked_token()
    svc = services()
    client = checked.client.identifier
    template = svc.repository.get_template(client, template_id)
    if template is None:
        raise NotFound("No such template.")
    user = checked.token.user
    if user is not None and svc.repository.get_user(client, user) is None:
        raise Forbidden("The token's user is not a user of this client.")
    key = template.preview_key
    if not key or svc.storage.stat(key) is None:
        raise NotFound("This template has no preview image yet.")
    return _link_to(
        checked,
        key=key,
        filename=template_preview_name(template.identifier, key),
        content_type=content_type_for(key),
    )


def _checked_token() -> CheckedToken:
    raw = request.args.get("jwt", "")
    if not raw:
        raise TokenMissing()
    return check_token(raw, request_path=request.path, login=False)


def _link_to(checked: CheckedToken, *, key: str, filename: str, content_type: str) -> Response:
    """Use up the token's ``jti`` (if any), store a fresh link and redirect to it."""
    svc = services()
    claim_jti(checked, login=False)  # last check: a refused request leaves the jti unused
    token = ids.link_token()
    link: dict[str, Any] = {
        "key": key,
        "filename": filename,
        "contentType": content_type,
        "client": checked.client.identifier,
    }
    svc.ephemeral.put_link(link_key(token), json.dumps(link), svc.settings.file_link_ttl)
    response = Response(status=302)
    response.headers["Location"] = f"{svc.settings.base_url}/files/{token}/{quote(filename)}"
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
