"""``/api-ext/files/*``: a JWT in the query buys a short-lived link to a rendered file.

These endpoints live under ``/api-ext`` (so errors are JSON) but in a blueprint of their
own: they authenticate with the shop's JWT, not with the bearer key of the rest of the API,
and they do not insist on ``Accept: application/json`` because PDF viewers, ``<img>`` tags
and PHP's stream wrappers follow these URLs with whatever Accept header they like.

Only ``GET``: a ``HEAD`` (link scanners in mail and chat clients probe URLs that way) is a
405 before the token is even read, as on ``/auth``, so a probe never uses up a single-use
token. The short-lived links these redirect to (``/files/<link>/...``) answer ``HEAD``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from flask import Response, request

from pps.acl import remote as acl
from pps.api.blueprint import Blueprint, F
from pps.auth.access import CheckedToken, check_token
from pps.files.image_sizes import IMAGE_STEPS
from pps.files.keys import (
    DRAFT_FILE_KINDS,
    content_type_for,
    draft_file_name,
    template_preview_name,
)
from pps.files.links import issue_link, owned_draft
from pps.files.render_limits import render_budget
from pps.files.rendering import (
    RenderPolicy,
    TemplateNotRenderable,
    render_draft_file,
    rendered_draft_pdf,
    template_preview_file,
    variable_rows,
)
from pps.files.sweep import delete_draft_files
from pps.platform.errors import Forbidden, NotFound, PpsError, ValidationFailed
from pps.platform.models import DraftRef, Template
from pps.platform.storage import StoredFile
from pps.render import MAX_PIXELS, AssetError, InvalidValues, RenderError
from pps.web.common import services, token_redirect

log = logging.getLogger(__name__)

#: ``page`` in file URLs counts from 1 (the first page), as people and shop code count;
#: the renderer counts from 0.
FIRST_PAGE = 1
_DIGITS = re.compile(r"[0-9]{1,9}")


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
        "`urlPath` (must then equal this path), `user` (must then own the draft, or for a "
        "template's preview be a user of the client) and `jti` (the token is then good for "
        "one use)."
    ),
}
_IMAGE_PARAMETERS = [
    {
        "name": name,
        "in": "query",
        "required": False,
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PIXELS},
        "description": (
            f"Image {name} in pixels, 1 to {MAX_PIXELS}. With one of width and height the "
            "other follows the page's aspect ratio; with both the image fits inside them. "
            "The image's longer side is then rounded up to the next of "
            f"{', '.join(map(str, IMAGE_STEPS))} (at most {IMAGE_STEPS[-1]}). "
            "Without either, pages are rendered at 150 dpi. Only for images."
        ),
    }
    for name in ("width", "height")
] + [
    {
        "name": "page",
        "in": "query",
        "required": False,
        "schema": {"type": "integer", "minimum": FIRST_PAGE, "default": FIRST_PAGE},
        "description": (
            f"The page to show, counted from {FIRST_PAGE}; a page the template does not have "
            "is a 422. Only for images."
        ),
    }
]
_REDIRECT_HEADERS = {
    "Location": {
        "description": "`{base_url}/files/<link>/<filename>`, valid for PPS_FILE_LINK_TTL seconds.",
        "schema": {"type": "string"},
    },
}
_GET_ONLY = (
    " A `jwt` that is not a JWT at all (not three base64url segments of JSON) is a `400` whose "
    "`message` says what is wrong."
    " `HEAD` is refused with `405` (`Allow: GET, OPTIONS`) and leaves the token unused; the file "
    "link itself answers `HEAD`."
)
_FILE_ERRORS = (400, 401, 403, 404, 405, 422, 429, 503)


files_api = Blueprint(
    "files_api",
    __name__,
    url_prefix="/api-ext/files",
    tag="Files",
    security=[{"jwt": []}],
    always=_FILE_ERRORS,
    head=False,  # a HEAD probe would use a single-use token up
)


def _file_operation(*, summary: str, description: str) -> dict[str, Any]:
    """The OpenAPI entry of a file endpoint: a JWT in the query (see ``Blueprint.route``'s
    ``document``); each view documents its ``302`` with :func:`_redirects`."""
    return {
        "summary": summary,
        "description": description + _GET_ONLY,
        "parameters": [_JWT_PARAMETER, *_IMAGE_PARAMETERS],
    }


def _redirects(description: str) -> Callable[[F], F]:
    """The ``302`` to a file link. Documentation only: the view returns its redirect
    itself, and no schema serialises it, so no response wrapper runs at every request."""
    document: Callable[[F], F] = files_api.alt_response(
        302, success=True, description=description, headers=_REDIRECT_HEADERS
    )
    return document


@files_api.get(
    "/draft/<draft_hash:draft_hash>/<kind>",
    document=_file_operation(
        summary="Redirect to a file rendered from a draft",
        description=(
            "`kind` is `print` (print PDF with bleed, TrimBox and BleedBox), `low-res` "
            "(low-resolution proof PDF at trim size) or `image` (PNG of one page). The file is "
            "rendered from the draft's current values (`apiDefaultValues` overlaid by what the "
            "customer saved) on the first request and kept for the draft's version: any change "
            "to the draft makes new files. The answer is a `302` to a short-lived URL of the "
            "file itself, which can be fetched (also with HEAD and Range) until it expires. "
            "`422` with `errors` for a bad `width`, `height` or `page`, or when the draft's "
            "values cannot be rendered (the DataKey is named); `404` when the draft is not the "
            "token's client's; `403` when the token's `user` does not own the draft; `401` for "
            "a token that fails verification or was used before."
        ),
    ),
)
@_redirects("Redirect to the file.")
def draft_file(draft_hash: str, kind: str) -> Response:
    file_kind = DRAFT_FILE_KINDS.get(kind)
    if file_kind is None:
        raise NotFound(
            f"There is no file kind {kind!r}; use one of: {', '.join(DRAFT_FILE_KINDS)}."
        )
    checked = _checked_token()
    svc = services()
    draft = owned_draft(svc, checked, draft_hash)
    acl.guard(svc, draft, acl.FILES_FETCH, checked.token.user)
    stored = rendered_draft_pdf(svc.storage, draft, kind) or _render_for_draft(
        draft, kind, file_kind.label
    )
    return _link_to(
        checked,
        key=stored.key,
        filename=draft_file_name(draft.draft_hash, kind),
        content_type=file_kind.content_type,
    )


def _render_for_draft(ref: DraftRef, kind: str, label: str) -> StoredFile:
    svc = services()
    draft = svc.repository.get_draft(ref.client_identifier, ref.draft_hash)
    if draft is None:  # deleted since the token was checked
        raise NotFound("No such draft.")
    template = svc.repository.get_template(draft.client_identifier, draft.template_identifier)
    if template is None:
        raise NotFound("The draft's template no longer exists.")
    page, width, height = 0, None, None
    if kind == "image":
        page, width, height = _image_options(template.page_count)
    stored = _rendered(
        lambda: render_draft_file(
            svc.storage,
            draft,
            template,
            kind,
            page=page,
            width=width,
            height=height,
            policy=_policy(draft.client_identifier),
            records=variable_rows(draft, svc.variable_data.stream),
        ),
        what=f"{label} of draft {draft.draft_hash}",
    )
    if svc.repository.get_draft_ref(draft.client_identifier, draft.draft_hash) is None:
        # Deleted while it rendered: its delete of the draft's files may have come before
        # this one was stored, which would stay, holding the customer's values, for no draft.
        delete_draft_files(svc.storage, draft.client_identifier, draft.draft_hash)
        raise NotFound("No such draft.")
    return stored


@files_api.get(
    "/template/<template_id>/page-preview-thumb",
    document=_file_operation(
        summary="Redirect to the preview thumbnail of a template",
        description=(
            "A `302` to a short-lived URL of the template's preview image: the one imported "
            "with the template (resized when `width` or `height` is given), or else a PNG "
            "rendered from the template's defaults. Other pages than the first are always "
            "rendered. `422` with `errors` for a bad `width`, `height` or `page`; `404` with a "
            "`message` when the template is not the token's client's; `403` when the token names "
            "a `user` that is not a user of that client."
        ),
    ),
)
@_redirects("Redirect to the image.")
def template_preview(template_id: str) -> Response:
    checked = _checked_token()
    svc = services()
    client = checked.client.identifier
    # Pages and preview key only: the spec is read when a picture must be rendered.
    template = svc.repository.get_template_ref(client, template_id)
    if template is None:
        raise NotFound("No such template.")
    user = checked.token.user
    if user is not None and not svc.repository.user_exists(client, user):
        raise Forbidden("The token's user is not a user of this client.")
    page, width, height = _image_options(template.page_count)

    def load_template() -> Template:
        full = svc.repository.get_template(client, template_id)
        if full is None:  # deleted since the lookup above
            raise NotFound("No such template.")
        return full

    stored = _rendered(
        lambda: template_preview_file(
            svc.storage,
            template,
            page=page,
            width=width,
            height=height,
            policy=_policy(client),
            load_template=load_template,
        ),
        what=f"preview of template {template.identifier}",
    )
    return _link_to(
        checked,
        key=stored.key,
        filename=template_preview_name(template.identifier, stored.key),
        content_type=content_type_for(stored.key),
    )


def _policy(client: str) -> RenderPolicy:
    """Sizes from the short list, the image pixel limit and the client's render budget."""
    svc = services()
    settings = svc.settings
    return RenderPolicy(
        steps=IMAGE_STEPS,
        max_pixels=settings.max_image_pixels,
        spend=render_budget(svc.ephemeral, client, settings.renders_per_minute),
    )


def _image_options(page_count: int) -> tuple[int, int | None, int | None]:
    """``(page counted from 0, width, height)`` from the query; a 422 naming each bad one.

    Checked before anything is rendered or the token's ``jti`` is used up. An empty value
    counts as absent (some HTTP clients send ``width=`` for an unset option).
    """
    errors: dict[str, list[str]] = {}
    pixels = f"must be a whole number of pixels from 1 to {MAX_PIXELS}"
    width = _number("width", 1, MAX_PIXELS, pixels, errors)
    height = _number("height", 1, MAX_PIXELS, pixels, errors)
    last = FIRST_PAGE + page_count - 1
    pages = f"page {FIRST_PAGE}" if page_count == 1 else f"pages {FIRST_PAGE} to {last}"
    page = _number("page", FIRST_PAGE, last, f"must be a page of the template ({pages})", errors)
    if errors:
        details = "; ".join(f"{name} {problems[0]}" for name, problems in errors.items())
        raise ValidationFailed(f"Invalid file options: {details}.", errors=errors)
    return (0 if page is None else page - FIRST_PAGE), width, height


def _number(
    name: str, low: int, high: int, message: str, errors: dict[str, list[str]]
) -> int | None:
    """Query parameter ``name`` as a whole number from ``low`` to ``high``; None if absent."""
    raw = request.args.get(name, "")
    if raw == "":
        return None
    if not _DIGITS.fullmatch(raw) or not low <= int(raw) <= high:
        errors[name] = [message]
        return None
    return int(raw)


def _rendered(render: Callable[[], StoredFile], *, what: str) -> StoredFile:
    """Run ``render``, turning the renderer's refusals into 422s a shop developer can act on."""
    try:
        return render()
    except InvalidValues as exc:
        raise ValidationFailed(
            f"The draft's values cannot be rendered: {exc}", errors=exc.errors
        ) from exc
    except (AssetError, TemplateNotRenderable) as exc:
        # The template, not the request, is at fault: the operator should hear of it.
        log.warning("cannot render the %s: %s", what, exc)
        raise ValidationFailed(
            f"The template cannot be rendered: {exc}", errors={"template": [str(exc)]}
        ) from exc
    except RenderError as exc:
        raise ValidationFailed(f"The file cannot be rendered: {exc}") from exc


def _checked_token() -> CheckedToken:
    raw = request.args.get("jwt", "")
    if not raw:
        raise TokenMissing()
    return check_token(services(), raw, request_path=request.path, login=False)


def _link_to(checked: CheckedToken, *, key: str, filename: str, content_type: str) -> Response:
    """Use up the token's ``jti`` (if any), store a fresh link and redirect to it."""
    location = issue_link(
        services(), checked, key=key, filename=filename, content_type=content_type
    )
    return token_redirect(location)
