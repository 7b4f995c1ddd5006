"""The editor's image uploads and the data for ``editor_media.html`` (routes on ``bp``).

* ``POST /editor/<hash>/upload``: multipart with ``csrf_token``, ``upload`` (the image
  DataKey) and the file in the part ``image:<DataKey>``. Checked by :mod:`pps.uploads`
  (PNG, JPEG, SVG cleaned; size and pixel limits), then stored as the client's upload.
  With ``Accept: application/json`` (the script) it answers the new value, its pixel size
  and effective resolution, and saves nothing; the form without JavaScript saves the value
  on the draft and returns to the edit step. Refused files: 422 (JSON or the form again);
  507 the same way when the client's uploads would exceed ``PPS_CLIENT_STORAGE_BYTES``;
  the reason in the page's language, from the refusal's message code and parameters
  (:class:`~pps.uploads.store.UploadRefused`), never its English for shop developers.
  A body over ``PPS_MAX_UPLOAD_BYTES`` is a 413 read no further: JSON for the script, also
  when it comes without Content-Length (chunked) and is found too large as it is read.
* ``GET /editor/<hash>/image/<identifier>``: an image the draft's client uploaded, for
  the crop view (the draft's own user only).
"""

from __future__ import annotations

from flask import Response, jsonify, request, url_for

from pps.acl import remote as acl
from pps.editor import web as editor
from pps.editor.autosave import BadBaseVersion, form_base_version
from pps.editor.media import (
    MIN_DPI,
    MediaView,
    box_of,
    default_crop,
    effective_dpi,
    image_kind_problem,
    image_value,
    media_view,
    refusal_reason,
)
from pps.editor.model import FieldView, submitted_values
from pps.editor.throttle import upload_wait
from pps.files.rendering import NoUpload, TemplateNotRenderable, draft_spec
from pps.platform.errors import ClientStorageFull, NotFound, PayloadTooLarge, PpsError
from pps.platform.models import Draft
from pps.render.problems import Code, Problem
from pps.uploads.images import IMAGE_KINDS, image_size
from pps.uploads.store import UploadLimits, UploadRefused, accept_upload
from pps.uploads.web_body import allow_upload_body
from pps.web import bp
from pps.web.common import services
from pps.web.i18n import Translator
from pps.web.page_docs import _LOCATION, PAGES, _binary, _page

_MIME = {"png": "image/png", "jpeg": "image/jpeg", "svg": "image/svg+xml"}


class UploadTooFast(PpsError):
    status = 429
    default_message = "Too many images uploaded in a short time; wait a moment."

    def __init__(self, retry_after: int) -> None:
        super().__init__(headers={"Retry-After": str(retry_after)})


@bp.app_template_global("editor_media")
def editor_media(draft: Draft, fields: list[FieldView], t: Translator) -> MediaView | None:
    """What ``editor_media.html`` shows for the draft (None without a renderable template)."""
    svc = services()
    template = svc.repository.get_template(draft.client_identifier, draft.template_identifier)
    if template is None:
        return None
    try:
        spec = draft_spec(draft, template)
    except (TemplateNotRenderable, NoUpload):
        return None
    return media_view(spec, draft, fields, svc.storage, svc.uploads, t)


@bp.post("/editor/<draft_hash>/upload")
def editor_upload(draft_hash: str) -> Response:
    wants_json = request.accept_mimetypes.best == "application/json"
    try:
        allow_upload_body()  # before the body is read: uploads may exceed the form limit
    except PayloadTooLarge:
        if not wants_json:
            raise  # the "too large" page
        return _too_large(editor._load(draft_hash))
    ctx = editor._load(draft_hash)
    try:  # a body without Content-Length (chunked) is found too large as it is read
        editor._check_form()  # at most MAX_FORM_FIELDS fields, then the CSRF token
    except PayloadTooLarge:
        if not wants_json:
            raise
        return _too_large(ctx)
    key = request.form.get("upload", "")
    part = request.files.get(f"image:{key}")
    data = part.read() if part is not None else b""
    # The form without JavaScript sent here by Enter in a field (this button comes first in
    # the form) or without a file is saved as the Save button would save it.
    form_save = not data and not wants_json
    # Every post counts, refused or not, before the shop's ACL is asked: a form save as the
    # form's saves do, anything else as an upload (each is checked and stored for good).
    if form_save:
        editor.count_form_save(ctx)
    else:
        wait = upload_wait(services().ephemeral, ctx.client.identifier, ctx.user)
        if wait:
            return _too_fast(ctx, key, wait, wants_json=wants_json)
    acl.guard(services(), ctx.draft, acl.SAVE, ctx.user)  # after the token, as a save
    if ctx.draft.locked:
        raise editor.DraftLocked()
    field = next((f for f in ctx.fields if f.key == key and f.kind == "image"), None)
    if field is None or ctx.spec is None:
        raise NotFound("This design has no such image.")
    try:  # the form is saved as Save saves it: on the version the page showed
        base = form_base_version(request.form)
    except BadBaseVersion:
        raise editor.BadVersionField() from None
    if form_save:
        return _save_form(ctx, key, None, base)
    svc = services()
    code = image_kind_problem(data)
    problem = ctx.t(code) if code is not None else None
    record, status = None, 422
    if problem is None:
        try:
            record = accept_upload(
                svc.storage,
                svc.uploads,
                ctx.client.identifier,
                part.filename or "" if part is not None else "",
                data,
                UploadLimits(
                    max_bytes=svc.settings.max_upload_bytes,
                    max_pixels=svc.settings.max_image_pixels,
                    client_bytes=svc.settings.client_storage_bytes,
                ),
            )
        except UploadRefused as exc:  # its words are for a shop's developer, in English
            problem = refusal_reason(ctx.t, exc.code, exc.params)
        except ClientStorageFull as exc:  # the shop's budget: nothing the customer can fix
            problem, status = ctx.t("media.no_room"), exc.status
    if record is None or record.kind not in IMAGE_KINDS:
        message = ctx.t("media.refused", reason=problem or "")
        if wants_json:
            response = jsonify({"message": message, "success": False, "errors": {key: [message]}})
            response.status_code = status
            return response
        # The form again, the reason beside the image, nothing saved.
        values = {**ctx.shown_values, **submitted_values(request.form, ctx.fields)}
        refused = Problem(Code.VALUE_IMAGE_REFUSED, {"reason": problem or ""})
        return editor._page(ctx, "edit", values=values, errors={key: [refused]}, status=status)
    stored = svc.storage.read(record.storage_key) or b""
    size = image_size(stored) or (1.0, 1.0)
    box = box_of(ctx.spec, key)
    assert box is not None
    crop = default_crop(size, box)
    value = image_value(record.identifier, crop)
    vector = record.kind == "svg"
    dpi = None if vector else effective_dpi(crop["width"], box)
    if wants_json:
        return jsonify(
            {
                "key": key,
                "identifier": record.identifier,
                "value": value,
                "width": size[0],
                "height": size[1],
                "vector": vector,
                "dpi": dpi,
                "minDpi": MIN_DPI,
                "url": url_for(
                    "web.editor_uploaded_image",
                    draft_hash=draft_hash,
                    identifier=record.identifier,
                ),
            }
        )
    return _save_form(ctx, key, value, base)


def _too_large(ctx: editor.EditorContext) -> Response:
    """``413`` for the script, in JSON in the page's language: a body over
    ``PPS_MAX_UPLOAD_BYTES`` is refused unread (one without Content-Length as soon as it
    goes past the limit), so its DataKey is unknown and the script shows ``message``."""
    limit = services().settings.max_upload_bytes
    size = request.content_length
    if size is None:  # chunked: its whole size is never known
        reason = refusal_reason(ctx.t, "media.over_limit", {"limit_bytes": limit})
    else:
        reason = refusal_reason(
            ctx.t, "media.too_large", {"size_bytes": size, "limit_bytes": limit}
        )
    response = jsonify(
        {"message": ctx.t("media.refused", reason=reason), "success": False, "errors": {}}
    )
    response.status_code = PayloadTooLarge.status
    response.headers["Cache-Control"] = "no-store"
    return response


def _too_fast(ctx: editor.EditorContext, key: str, wait: int, *, wants_json: bool) -> Response:
    """``429`` with ``Retry-After``: JSON for the script (it shows ``errors.<DataKey>``
    beside the image), the "busy" page for the form without JavaScript."""
    refused = UploadTooFast(wait)
    if not wants_json:
        raise refused
    message = ctx.t("media.too_fast")
    response = jsonify({"message": message, "success": False, "errors": {key: [message]}})
    response.status_code = refused.status
    response.headers.update(refused.headers)
    response.headers["Cache-Control"] = "no-store"
    return response


def _save_form(
    ctx: editor.EditorContext, key: str, value: str | None, base: int | None
) -> Response:
    """Save the whole form (its texts and choices) with the new image value, as Save does:
    the ``409`` conflict page (with the new image in the form) when the page showed an
    older version than ``base``, the form again with 422 when a value has a problem, else
    back to the edit step."""
    submitted = submitted_values(request.form, ctx.fields)
    if value is not None:
        submitted[key] = value
    draft = editor.save_form_values(ctx, submitted, base=base, state="edited")
    if isinstance(draft, Response):
        return draft
    editor._notify(draft.draft_hash, "form.saved")
    return editor._see_other(editor._step_url(draft.draft_hash, "edit"))


@bp.get("/editor/<draft_hash>/image/<identifier>")
def editor_uploaded_image(draft_hash: str, identifier: str) -> Response:
    ctx = editor._load(draft_hash)
    svc = services()
    record = svc.uploads.get(ctx.client.identifier, identifier)
    data = svc.storage.read(record.storage_key) if record is not None else None
    if record is None or data is None or record.kind not in _MIME:
        raise NotFound("There is no such image.")
    response = Response(data, mimetype=_MIME[record.kind])
    # An SVG opened on its own runs nothing (it is cleaned, and this forbids it anyway).
    response.headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "private, max-age=3600"
    return response


_UPLOAD_DOC = """\
An image for an image DataKey of the draft, sent by the editor (multipart): `csrf_token`,
`upload` (the DataKey) and the file in the part `image:<DataKey>`. PNG, JPEG and SVG only,
recognised by their content and checked as `POST /api-ext/file` checks them (an SVG is
stored cleaned; more pixels than `PPS_MAX_IMAGE_PIXELS` are refused). With
`Accept: application/json` the answer is `{key, identifier, value, width, height, vector,
dpi, minDpi, url}` and nothing is saved (the script puts `value` into the form); without,
the value is saved on the draft and the answer is `303` back to the edit step (`409`, the
form again and nothing saved, when its `base_version` is not the draft's version, as for
Save; `409` too for a locked draft). A refused
file: `422` (JSON with `errors.<DataKey>`, or an HTML page); `507` alike, nothing stored,
when the shop's uploaded files would take more than `PPS_CLIENT_STORAGE_BYTES`. The reason
is in the page's language. A body over `PPS_MAX_UPLOAD_BYTES`, with or without a
Content-Length: `413`, as JSON with `message` when JSON is asked for, nothing stored. More
than 20 uploads a minute or 120 an hour from one login: `429` with `Retry-After`, nothing
stored.
"""

PAGES.update(
    {
        "web.editor_upload": {
            "post": _page(
                "Upload an image for an image DataKey of the design",
                _UPLOAD_DOC,
                {
                    "200": {"description": "JSON: the uploaded image and the value to use."},
                    "303": {"description": "Saved; back to the form.", "headers": _LOCATION},
                },
                (400, 401, 403, 404, 409, 413, 422, 429, 503, 507),
            )
        },
        "web.editor_uploaded_image": {
            "get": _page(
                "An image uploaded for the design, for the crop view",
                "The image's bytes (PNG, JPEG or cleaned SVG), for the draft's user only.",
                {"200": _binary("image/png", "The image.")},
                (401, 404, 503),
            )
        },
    }
)
