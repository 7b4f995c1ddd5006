"""The editor: ``/editor/<draftHash>[/<step>]`` for a user logged in through ``/auth``.

Pages (HTML, for the draft's own user only):

* ``GET /editor/<hash>/edit``: one labelled input per DataKey and a live preview.
* ``POST /editor/<hash>/edit``: save (CSRF token required); ``action`` = ``save``,
  ``preview`` (save, then show the preview step) or ``halt`` (save, then go to
  ``callback_halt``). Invalid values: 422 with the form again and nothing saved.
* ``GET /editor/<hash>/preview``: every page large.
* ``GET /editor/<hash>/`` and ``/editor/<hash>/<step>/``: ``308`` to the address without the
  slash, the query kept.
* ``GET /editor/<hash>/proof``: every page of the print file with the trim marked and the
  "I have checked it" checkbox (required when the client says so); its form finishes.
* ``GET /editor/<hash>/embed``: the edit step for a shop's frame; ``/3d``: a mockup.
  Every step may be framed by the client's allowed origins (:mod:`pps.editor.embed`);
  ``?api_token=`` on any of them is refused with a page that explains the safe way.
* ``POST /editor/<hash>/finish``: (save the sent values and) mark the draft ``finished``,
  then ``303`` to the shop's ``callback``. ``proof_approved`` records the proof approval.

Every form carries ``base_version``, the draft version the page shows: a save made on an
older version gets a ``409`` conflict page instead of overwriting (:mod:`pps.editor.autosave`;
the JSON autosave is :mod:`pps.editor.autosave_web`).
* ``GET /editor/<hash>/page/<n>.png``: a page of the saved draft (cached by version);
  ``POST`` the same URL with the form's values: the page rendered from them, not saved.

Everything works without JavaScript; ``static/editor.js`` only adds the live preview.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from io import BytesIO
from typing import Any
from urllib.parse import urlencode

from flask import Response, jsonify, render_template, request, session, url_for

from pps.acl import remote as acl
from pps.auth.callbacks import CALLBACK_PARAMS, editor_callbacks
from pps.auth.way_back import from_session_entries
from pps.auth.web import SESSION_EDITOR, exchange_handoff, logged_in_as
from pps.editor.autosave import BadBaseVersion, form_base_version
from pps.editor.canvas import Hotspot, guides, hotspots
from pps.editor.csrf import check_csrf, csrf_token
from pps.editor.embed import (
    API_TOKEN_PARAMS,
    CLIENT_MODULE,
    STEPS,
    draft_info,
    frame_ancestors,
    frame_origins,
    step_to_open,
)
from pps.editor.media_hooks import media_problems, submitted_variant
from pps.editor.model import (
    Exit,
    FieldView,
    editor_fields,
    field_views,
    form_action_origins,
    initial_values,
    not_text,
    over_global_limit,
    page_keys,
    remembered,
    resolve_exits,
    submitted_values,
)
from pps.editor.throttle import PreviewLimit, form_save_wait, preview_wait
from pps.files.render_limits import render_budget
from pps.files.rendering import (
    NoUpload,
    RenderPolicy,
    TemplateNotRenderable,
    decoded,
    draft_assets,
    draft_spec,
    render_draft_file,
    render_draft_values_image,
)
from pps.groups.membership import shares_group
from pps.platform.errors import BadRequest, NotFound, PayloadTooLarge, PpsError
from pps.platform.http_headers import PAGE_CSP, TOKEN_URL_HEADERS
from pps.platform.models import DRAFT_STATES, Client, Draft, Template
from pps.platform.repository import VersionConflict
from pps.platform.storage import StoredFile
from pps.preflight import preflight_and_store
from pps.render import (
    Field,
    InvalidValues,
    Problem,
    RenderError,
    TemplateSpec,
    check_values,
    image_size,
    render_file,
    render_page_image,
)
from pps.render.problems import Code, english
from pps.web import bp
from pps.web.common import bodiless_redirect, services
from pps.web.errors import wants_json
from pps.web.i18n import LANGUAGE_NAMES, LOCALES, Translator, normalize_locale
from pps.webhooks.events import DRAFT_FINISHED, DRAFT_UPDATED, draft_payload, emit

#: The template of each step (``embed`` is the edit step meant for a shop's frame).
STEP_TEMPLATES = {
    "edit": "editor_edit.html",
    "preview": "editor_preview.html",
    "proof": "editor_proof.html",
    "embed": "editor_embed.html",
    "3d": "editor_3d.html",
}
#: Steps the step navigation offers; ``embed`` is listed only while it is shown.
NAV_STEPS = ("edit", "preview", "proof", "3d")
#: The proof step's checkbox ("I have checked spelling and layout").
PROOF_FIELD = "proof_approved"
#: Width of the proof's page images (pps.reviews.proof renders them with the trim marked).
PROOF_WIDTH = 1200

#: Pixel widths the page images come in: the edit step's live preview and the large
#: preview. A fixed set keeps a customer from filling storage with one file per width.
EDIT_WIDTH = 960
LARGE_WIDTH = 1600
IMAGE_WIDTHS = (EDIT_WIDTH, LARGE_WIDTH)
#: The live preview as JPEG (when the script asks for it): text stays crisp at 90.
JPEG_QUALITY = 90

#: A form with more fields than this is not one of ours (10 000 DataKeys are refused).
MAX_FORM_FIELDS = 1000
#: Live previews per logged-in user (all drafts and pages together): bursts while typing,
#: a ceiling per minute (:mod:`pps.editor.throttle`); more get 429. The script renders as
#: the customer types, one request in flight per page. Every preview also counts against
#: the client's PPS_RENDERS_PER_MINUTE.
PREVIEW_LIMIT = PreviewLimit()
#: Unsaved previews rendering at once in one process; more wait, then get 503.
_PREVIEW_RENDERS = threading.BoundedSemaphore(2)
_PREVIEW_WAIT_SECONDS = 10.0

log = logging.getLogger(__name__)

SESSION_LOCALE = "locale"
SESSION_NOTICE = "editor_notice"
#: Message codes a notice in the session may name (anything else there is ignored).
_NOTICES = frozenset({"form.saved", "form.finished"})
_CARRIED = (*CALLBACK_PARAMS, "callback_target", "locale")
_TARGET_NAME = frozenset({"_self", "_top", "_parent", "_blank"})


class LoginRequired(PpsError):
    status = 401
    page = "error.logged_out"
    default_message = (
        "You are not logged in for this design (or your login has expired). "
        "Please open the editor from the shop again to log in."
    )


class DesignNotFound(NotFound):
    page = "error.unknown_design"
    default_message = "There is no such design."


class DraftLocked(PpsError):
    """A save or finish on a draft the shop locked (``locked: true``); the pages show it
    read-only, so only a stale page or a hand-made request gets here."""

    status = 409
    default_message = (
        "The shop has locked this design: it can be looked at but no longer changed. "
        "Nothing was saved."
    )


class BadVersionField(BadRequest):
    default_message = "The form's base_version is not a draft version. Reload the editor."


class TooManyFields(PayloadTooLarge):
    default_message = (
        f"The form has more than {MAX_FORM_FIELDS} fields; this editor never sends that many."
    )


class PreviewTooFast(PpsError):
    status = 429
    default_message = "Too many preview requests; wait a moment."

    def __init__(self, retry_after: int = 1) -> None:
        super().__init__(headers={"Retry-After": str(retry_after)})


class SaveTooFast(PpsError):
    status = 429
    default_message = "Too many saves in a short time; wait a moment and save again."

    def __init__(self, retry_after: int) -> None:
        super().__init__(headers={"Retry-After": str(retry_after)})


class PreviewBusy(PpsError):
    status = 503
    default_message = "The preview renderer is busy; try again in a moment."

    def __init__(self) -> None:
        super().__init__(headers={"Retry-After": "2"})


# -- pages -------------------------------------------------------------------------------


@bp.get("/editor/<draft_hash>")
def editor_default(draft_hash: str) -> Response:
    return _refuse_api_token() or _show(draft_hash, None)


# Only the steps match: a catch-all ``<step>`` would also answer ``GET`` on the POST-only
# ``finish``, ``upload`` and ``autosave`` (a 404 instead of the router's 405 with ``Allow``).
_STEP = f"<any({', '.join(map(repr, STEPS))}):step>"


@bp.get(f"/editor/<draft_hash>/{_STEP}")
def editor_step(draft_hash: str, step: str) -> Response:
    return _refuse_api_token() or _show(draft_hash, step)


@bp.get("/editor/<draft_hash>/")
def editor_default_slash(draft_hash: str) -> Response:
    return _without_slash(url_for("web.editor_default", draft_hash=draft_hash))


# The steps only, as above: a catch-all ``<step>/`` made the router answer ``GET`` on
# ``finish`` with a 308 to ``finish/``, where no step address could be built (a 500).
@bp.get(f"/editor/<draft_hash>/{_STEP}/")
def editor_step_slash(draft_hash: str, step: str) -> Response:
    return _without_slash(url_for("web.editor_step", draft_hash=draft_hash, step=step))


def _without_slash(location: str) -> Response:
    """``308`` to the same editor address without the trailing slash, the query kept.

    A login's ``redirect`` may name ``{base}/editor/<hash>/`` (it counts as an editor
    target, :func:`pps.auth.callbacks.editor_target`), and then its handoff code is in
    this query: without an answer here the single-use login would end on a 404.
    """
    query = request.query_string.decode("latin-1")
    return bodiless_redirect(
        f"{location}?{query}" if query else location, status=308, headers=TOKEN_URL_HEADERS
    )


@bp.post("/editor/<draft_hash>/edit")
def editor_save(draft_hash: str) -> Response:
    saved = _save_form(draft_hash, state="edited")
    if isinstance(saved, Response):
        return saved
    ctx, draft = saved
    action = request.form.get("action", "save")
    if action == "proof":
        return _see_other(_step_url(draft.draft_hash, "proof"))
    if action == "halt":
        halt = ctx.exits["callback_halt"]
        if halt.href is not None:
            return _see_other(halt.href)
    elif action == "preview":
        return _see_other(_step_url(draft.draft_hash, "preview"))
    _notify(draft.draft_hash, "form.saved")
    return _see_other(_step_url(draft.draft_hash, "edit"))


@bp.post("/editor/<draft_hash>/finish")
def editor_finish(draft_hash: str) -> Response:
    saved = _save_form(draft_hash, state="finished", approved=bool(request.form.get(PROOF_FIELD)))
    if isinstance(saved, Response):
        return saved
    ctx, draft = saved
    session.pop(SESSION_NOTICE, None)  # an earlier "saved" is stale once finished
    done = ctx.exits["callback"]
    if done.href is not None:
        return _see_other(done.href)
    _notify(draft.draft_hash, "form.finished")
    return _see_other(_step_url(draft.draft_hash, "preview"))


@bp.route("/editor/<draft_hash>/page/<int:page>.png", methods=["GET", "POST"])
def editor_page_image(draft_hash: str, page: int) -> Response:
    ctx = _load(draft_hash)
    text = request.args.get("width", str(EDIT_WIDTH))
    if text not in {str(allowed) for allowed in IMAGE_WIDTHS}:
        raise NotFound(f"Page images come in widths {', '.join(map(str, IMAGE_WIDTHS))}.")
    width = int(text)
    if ctx.spec is None or ctx.template is None or not 0 <= page < ctx.spec.page_count:
        raise NotFound("This design has no such page.")
    if request.method == "POST":
        return _unsaved_preview(ctx, page, width)
    values = {key: ctx.shown_values[key] for key in ctx.spec.data_keys if key in ctx.shown_values}
    try:
        try:
            stored = _saved_page(ctx, values, page, width, allow_missing=False)
        except InvalidValues as exc:
            if not _only_missing(exc.problems):
                raise
            # A required value still empty: show the page without it (the form says what
            # is missing), so every page of the design is visible from the start.
            stored = _saved_page(ctx, values, page, width, allow_missing=True)
        response = _send_stored(stored)
    except InvalidValues as exc:
        return _problem_json(ctx, exc.problems)
    except RenderError as exc:
        return _problem_json(ctx, _template_problem(exc))
    # The URL names the draft's version (?v=), so a changed draft gets a new URL.
    response.headers["Cache-Control"] = "private, max-age=600"
    return response


def _saved_page(
    ctx: EditorContext, values: dict[str, str], page: int, width: int, *, allow_missing: bool
) -> StoredFile:
    """The stored image of a page as the editor shows the draft, rendered when not yet there.

    The draft's own file when its stored values are what the form shows; otherwise (numbers
    among them, or a required value left empty) rendered from the shown text, cached by it.
    """
    assert ctx.spec is not None and ctx.template is not None
    svc = services()
    policy = _policy(ctx)
    if not allow_missing and _renders_as_saved(ctx.draft, values):
        return render_draft_file(
            svc.storage,
            ctx.draft,
            ctx.template,
            "image",
            page=page,
            width=width,
            spec=ctx.spec,
            policy=policy,
        )
    return render_draft_values_image(
        svc.storage,
        ctx.draft,
        ctx.template,
        ctx.spec,
        values,
        page=page,
        width=width,
        policy=policy,
        allow_missing=allow_missing,
    )


@bp.get(f"{bp.static_url_path}/{CLIENT_MODULE}")
def client_module() -> Response:
    """The shops' pages import this module from their own origin: a module script is
    fetched with CORS, and this public file carries no credentials. Its own route (the
    router prefers it to ``/static/<path:filename>``), so no hook runs on every page."""
    response = bp.send_static_file(CLIENT_MODULE)
    response.headers["Access-Control-Allow-Origin"] = "*"
    return response


# -- the request's draft -----------------------------------------------------------------


@dataclass
class EditorContext:
    client: Client
    #: The logged-in user: the draft's own or a member of its user group.
    user: str
    draft: Draft
    template: Template | None
    spec: TemplateSpec | None
    fields: list[Field]
    shown_values: dict[str, str]
    entry: dict[str, Any]
    t: Translator
    exits: dict[str, Exit]


def _load(draft_hash: str) -> EditorContext:
    """The draft of the logged-in user, or a 401/404 page."""
    identity = logged_in_as()
    if identity is None:
        raise LoginRequired()
    client, user_id = identity
    client_id = client.identifier
    svc = services()
    draft = svc.repository.get_draft(client_id, draft_hash)
    if draft is None:
        raise _with_way_back(DesignNotFound(), draft_hash)
    if draft.user_identifier != user_id and not shares_group(
        svc.repository, client_id, user_id, draft
    ):
        raise _with_way_back(LoginRequired(), draft_hash)
    template = svc.repository.get_template(client_id, draft.template_identifier)
    spec = None
    if template is not None:
        try:
            spec = draft_spec(draft, template)
        except (TemplateNotRenderable, NoUpload):
            spec = None
    fields = editor_fields(template, spec, draft)
    entry = _session_entry(draft_hash)
    t = Translator(_locale(user_id, client_id))
    signed = entry.get("callbacks")
    exits = resolve_exits(
        signed={k: v for k, v in signed.items() if isinstance(v, str)}
        if isinstance(signed, dict)
        else None,
        from_query=editor_callbacks(request.args.to_dict(flat=False)),
        base_url=svc.settings.base_url,
        allowed_origins=client.allowed_origins,
        t=t,
    )
    return EditorContext(
        client=client,
        user=user_id,
        draft=draft,
        template=template,
        spec=spec,
        fields=fields,
        shown_values=initial_values(draft, fields),
        entry=entry,
        t=t,
        exits=exits,
    )


def _with_way_back(error: PpsError, draft_hash: str) -> PpsError:
    """``error`` with the way back to the shop that this login's signed callbacks name."""
    error.back_url = from_session_entries(
        session.get(SESSION_EDITOR), base_url=services().settings.base_url, prefer=[draft_hash]
    )
    return error


def _locale(user_id: str, client_id: str) -> str:
    """``?locale=`` (remembered in the session), else the session's, else the user's."""
    asked = normalize_locale(request.args.get("locale"))
    if asked is not None:
        session[SESSION_LOCALE] = asked
        return asked
    remembered = normalize_locale(session.get(SESSION_LOCALE))
    if remembered is not None:
        return remembered
    user = services().repository.get_user(client_id, user_id)
    return normalize_locale(user.locale if user is not None else None) or "en"


def _session_entry(draft_hash: str) -> dict[str, Any]:
    editor = session.get(SESSION_EDITOR)
    entry = editor.get(draft_hash) if isinstance(editor, dict) else None
    return dict(entry) if isinstance(entry, dict) else {}


def _notify(draft_hash: str, key: str) -> None:
    """A notice for the next page of this draft (plain JSON: the session holds no tuples)."""
    session[SESSION_NOTICE] = {"draft": draft_hash, "key": key}


def _take_notices(draft_hash: str) -> list[str]:
    notice = session.pop(SESSION_NOTICE, None)
    if isinstance(notice, dict) and notice.get("draft") == draft_hash:
        key = notice.get("key")
        if isinstance(key, str) and key in _NOTICES:
            return [key]
    return []


def _remember(draft_hash: str, entry: dict[str, Any]) -> None:
    """Keep ``entry`` for the draft; the session remembers a bounded number of drafts."""
    editor = session.get(SESSION_EDITOR)
    session[SESSION_EDITOR] = remembered(
        editor if isinstance(editor, dict) else {}, draft_hash, entry
    )


# -- saving ------------------------------------------------------------------------------


def _check_form() -> None:
    """Size first (413 before anything else is read), then the CSRF token."""
    if len(request.form) > MAX_FORM_FIELDS:
        raise TooManyFields()
    check_csrf()


def _problems(ctx: EditorContext, values: dict[str, str]) -> dict[str, list[Problem]]:
    """What is wrong with ``values`` per DataKey: the renderer's checks, the same it renders by."""
    errors: dict[str, list[Problem]] = {}
    spec = ctx.spec
    if spec is not None:
        assert ctx.template is not None
        assets = draft_assets(
            services().storage,
            ctx.draft,
            ctx.template,
            max_pixels=services().settings.max_image_pixels,
        )
        try:
            errors.update(decoded(lambda: check_values(spec, values, assets)))
        except RenderError as exc:  # a broken font file of the template
            errors.update(_template_problem(exc))
    if spec is not None:  # uploads of another shop, crops outside the image, variants
        errors.update(media_problems(ctx.draft, spec, values, request.form.get("variant")))
    spec_keys = set(ctx.spec.data_keys) if ctx.spec is not None else set()
    errors.update(over_global_limit({k: v for k, v in values.items() if k not in spec_keys}))
    errors.update(not_text(values))  # the root of any other problem the value has
    return errors


def _save_form(
    draft_hash: str, *, state: str, approved: bool = False
) -> tuple[EditorContext, Draft] | Response:
    """Save the posted form's values with ``state``; the form again with ``422`` (nothing
    saved) when they have problems, a ``409`` conflict page when the form was made on an
    older version of the draft, and the proof again with ``422`` when finishing needs the
    proof approved and it was not."""
    ctx = _load(draft_hash)
    # The form's own checks first: a cross-site post without the token never reaches the
    # shop's access control (a request to the shop, in the customer's name), nor the limit.
    _check_form()
    count_form_save(ctx)  # every post, refused or not, before the shop's ACL is asked
    acl.guard(services(), ctx.draft, acl.FINISH if state == "finished" else acl.SAVE, ctx.user)
    if ctx.draft.locked:
        raise DraftLocked()
    try:
        base = form_base_version(request.form)
    except BadBaseVersion:
        raise BadVersionField() from None
    submitted = submitted_values(request.form, ctx.fields)
    if base is not None and base != ctx.draft.version:  # before the proof's approval
        return _conflict_page(ctx, submitted)
    if state == "finished" and not approved and proof_required(ctx.client.identifier):
        if wants_json():
            return _refused_json(ctx.t("proof.not_confirmed"), status=422)
        return _page(ctx, "proof", values=ctx.shown_values, errors={}, status=422, proof_error=True)
    saved = save_form_values(ctx, submitted, base=base, state=state, approved=approved)
    return saved if isinstance(saved, Response) else (ctx, saved)


def save_form_values(
    ctx: EditorContext,
    submitted: dict[str, str],
    *,
    base: int | None,
    state: str,
    approved: bool = False,
) -> Draft | Response:
    """Save a form's ``submitted`` values on version ``base`` of the draft (None: on any),
    as Save does: the ``409`` conflict page when the page showed an older version (also
    when one lands during the save), the form again with ``422`` when a value has a
    problem; else the saved draft. The form's own checks (token, limit, ACL) come first,
    the caller's."""
    if base is not None and base != ctx.draft.version:
        return _conflict_page(ctx, submitted)
    values = {**ctx.shown_values, **submitted}
    errors = _problems(ctx, values)
    if errors:
        if wants_json():
            return _problem_json(ctx, errors)
        return _page(ctx, "edit", values=values, errors=errors, status=422)
    try:
        return _save(ctx, submitted, state=state, base=base, approved=approved)
    except VersionConflict:  # changed between the check above and the write
        return _conflict_page(_load(ctx.draft.draft_hash), submitted)


def count_form_save(ctx: EditorContext) -> None:
    """Count a post of the form against the login's limit; ``429`` past it, with nothing
    checked, asked or written. Refused posts count too: each still checks the values,
    renders the page and asks the shop's remote ACL."""
    wait = form_save_wait(services().ephemeral, ctx.client.identifier, ctx.user)
    if wait:
        raise SaveTooFast(wait)


def proof_required(client: str) -> bool:
    """Whether the client's customers must approve the proof before Finish."""
    return services().integrations.settings(client).proof_required


def _conflict_page(ctx: EditorContext, submitted: dict[str, str]) -> Response:
    """``409``: the draft changed since the page was loaded; nothing was saved. A form with
    values shows them again on the current version, so saving again is an explicit "keep
    mine"; a finish without values shows the current proof to check again. A script that
    asks for JSON first (the embed bridge) gets the autosave's conflict answer."""
    if wants_json():
        return conflict_json(ctx, ctx.draft.version)
    if submitted:
        values = {**ctx.shown_values, **submitted}
        return _page(ctx, "edit", values=values, errors={}, status=409, conflict=True)
    return _page(ctx, "proof", values=ctx.shown_values, errors={}, status=409, conflict=True)


def _save(
    ctx: EditorContext,
    submitted: dict[str, str],
    *,
    state: str,
    base: int | None = None,
    approved: bool = False,
) -> Draft:
    """Store ``submitted`` over the draft's values as a new version (only if the draft is
    still at ``base``, else :class:`VersionConflict`), preflight it, tell the webhooks."""
    values = {**ctx.draft.values, **submitted}
    draft = services().repository.update_draft(
        ctx.client.identifier,
        ctx.draft.draft_hash,
        values=values,
        state=state,
        expected_version=base,
        proof_approved_at=datetime.now(UTC) if approved else None,
        **submitted_variant(ctx.template, ctx.draft, request.form.get("variant")),
    )
    if draft is None:  # deleted by the shop meanwhile
        raise DesignNotFound()
    svc = services()
    draft = preflight_and_store(
        svc.repository, svc.storage, draft, max_pixels=svc.settings.max_image_pixels
    )
    event = DRAFT_FINISHED if state == "finished" else DRAFT_UPDATED
    emit(svc, ctx.client.identifier, event, draft_payload(draft))
    return draft


# -- previews ----------------------------------------------------------------------------


def _policy(ctx: EditorContext) -> RenderPolicy:
    """The editor's widths are a fixed pair already; renders count against the client."""
    svc = services()
    return RenderPolicy(
        max_pixels=svc.settings.max_image_pixels,
        spend=render_budget(svc.ephemeral, ctx.client.identifier, svc.settings.renders_per_minute),
    )


def _template_problem(exc: RenderError) -> dict[str, list[Problem]]:
    """A problem of the template itself (a broken file), shown as a general message."""
    log.warning("cannot render a page of the editor: %s", exc)
    return {"template": [Problem(Code.TEMPLATE_UNRENDERABLE, {"reason": str(exc)})]}


def _renders_as_saved(draft: Draft, values: dict[str, str]) -> bool:
    """Whether the draft's stored values are exactly what the editor shows (then the cached
    draft file is right); numbers or missing keys among them render from the shown text."""
    stored = {**draft.api_default_values, **draft.values}
    # A key the draft lacks renders as the template's default, which is what the form shows.
    return all(stored.get(key, value) == value for key, value in values.items())


def _only_missing(errors: dict[str, list[Problem]]) -> bool:
    """Whether every problem is a required value left empty (a preview draws it empty)."""
    return bool(errors) and all(
        problem.code is Code.VALUE_REQUIRED for found in errors.values() for problem in found
    )


def _unsaved_preview(ctx: EditorContext, page: int, width: int) -> Response:
    started = time.perf_counter()
    _check_form()
    # Per login, over all its drafts and pages.
    wait = preview_wait(services().ephemeral, ctx.client.identifier, ctx.user, PREVIEW_LIMIT)
    if wait:
        raise PreviewTooFast(wait)
    values = {**ctx.shown_values, **submitted_values(request.form, ctx.fields)}
    errors = _problems(ctx, values)
    missing = _only_missing(errors)
    if errors and not missing:
        return _problem_json(ctx, errors)
    checked = time.perf_counter()
    spend = _policy(ctx).spend
    assert spend is not None
    spend()  # the client's renders per minute
    if not _PREVIEW_RENDERS.acquire(timeout=_PREVIEW_WAIT_SECONDS):
        raise PreviewBusy()
    rendering = time.perf_counter()
    # The script asks for JPEG: it encodes several times faster than PNG, and a preview
    # replaced at the next key stroke needs no lossless pixels. Anything else gets PNG.
    jpeg = "image/jpeg" in request.headers.get("Accept", "")
    try:
        body = decoded(lambda: _render(ctx, values, page, width, allow_missing=missing, jpeg=jpeg))
    except InvalidValues as exc:
        return _problem_json(ctx, exc.problems)
    except RenderError as exc:
        return _problem_json(ctx, _template_problem(exc))
    finally:
        _PREVIEW_RENDERS.release()
    done = time.perf_counter()
    response = Response(body, mimetype="image/jpeg") if jpeg else _png(body)
    response.headers["Cache-Control"] = "no-store"
    # The render's own cost beside the round trip the browser sees (bench/keystroke.py).
    response.headers["Server-Timing"] = ", ".join(
        [
            f"check;dur={(checked - started) * 1000:.1f}",
            f"wait;dur={(rendering - checked) * 1000:.1f}",
            f"render;dur={(done - rendering) * 1000:.1f}",
        ]
    )
    if missing:
        # Which fields are drawn empty; the script marks them (ids only: headers are ASCII).
        index = {field.key: position for position, field in enumerate(ctx.fields)}
        response.headers["X-Pps-Missing"] = " ".join(
            f"f-{index[key]}" for key in errors if key in index
        )
    return response


def _render(
    ctx: EditorContext,
    values: dict[str, str],
    page: int,
    width: int,
    *,
    allow_missing: bool = False,
    jpeg: bool = False,
) -> bytes:
    assert ctx.spec is not None
    size = image_size(ctx.spec, width, None)
    assert ctx.template is not None
    assets = draft_assets(
        services().storage,
        ctx.draft,
        ctx.template,
        max_pixels=services().settings.max_image_pixels,
    )
    if jpeg:
        image = render_page_image(
            ctx.spec,
            values,
            assets,
            page,
            size[0],
            size[1],
            allow_missing=allow_missing,
        )
        out = BytesIO()
        image.save(out, "JPEG", quality=JPEG_QUALITY)
        return out.getvalue()
    body, _ = render_file(
        "image",
        ctx.spec,
        values,
        assets,
        page=page,
        width=size[0],
        height=size[1],
        allow_missing=allow_missing,
    )
    return body


def _problem_json(ctx: EditorContext, errors: dict[str, list[Problem]]) -> Response:
    """422 for the script: per field index (as the form numbers them) the translated messages,
    and the same per DataKey in ``fieldsByKey`` (the embed bridge hands those to the shop,
    which knows DataKeys, not the form's ids); ``errors`` per DataKey in English, as the API
    words them."""
    index = {field.key: position for position, field in enumerate(ctx.fields)}
    by_key = {
        key: [ctx.t.problem(problem) for problem in problems]
        for key, problems in errors.items()
        if key in index
    }
    by_field = {f"f-{index[key]}": messages for key, messages in by_key.items()}
    general = [
        ctx.t.problem(problem)
        for key, problems in errors.items()
        if key not in index
        for problem in problems
    ]
    english_errors = {key: [english(problem) for problem in found] for key, found in errors.items()}
    response = jsonify(
        {
            "message": ctx.t("form.errors"),
            "success": False,
            "errors": english_errors,
            "fields": by_field,
            "fieldsByKey": by_key,
            "general": general,
        }
    )
    response.status_code = 422
    response.headers["Cache-Control"] = "no-store"
    return response


def conflict_json(ctx: EditorContext, current: int) -> Response:
    """409 for a script (the autosave, the embed bridge's form posts): the draft is at
    ``current``, not at the version the page showed; nothing was saved."""
    response = jsonify(
        {
            "success": False,
            "conflict": True,
            "message": ctx.t("autosave.conflict"),
            "currentVersion": current,
        }
    )
    response.status_code = 409
    response.headers["Cache-Control"] = "no-store"
    return response


def _refused_json(message: str, *, status: int) -> Response:
    """A refusal of the form's post for a script that asked for JSON: ``message`` only."""
    response = jsonify({"success": False, "message": message})
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    return response


def _png(body: bytes) -> Response:
    return Response(body, mimetype="image/png")


def _send_stored(stored: StoredFile) -> Response:
    """A stored page image (tens of kilobytes: read whole, no file handle left open)."""
    data = services().storage.read(stored.key)
    if data is None:
        raise NotFound("The image is gone; reload the page.")
    response = _png(data)
    response.add_etag()
    response.make_conditional(request)  # 304 when the browser has it (changes it in place)
    return response


# -- rendering the pages -----------------------------------------------------------------


def _show(draft_hash: str, step: str | None) -> Response:
    exchanged = exchange_handoff()
    if exchanged is not None:
        return exchanged
    ctx = _load(draft_hash)
    acl.guard(services(), ctx.draft, acl.EDITOR_OPEN, ctx.user)
    step = step_to_open(step, ctx.entry.get("step"))
    if ctx.entry.get("step") != step:
        _remember(draft_hash, {**ctx.entry, "step": step})
    return _page(ctx, step, values=ctx.shown_values, errors={}, status=200)


def _page(
    ctx: EditorContext,
    step: str,
    *,
    values: dict[str, str],
    errors: dict[str, list[Problem]],
    status: int,
    conflict: bool = False,
    proof_error: bool = False,
) -> Response:
    t = ctx.t
    draft = ctx.draft
    if step == "proof" and not errors and not draft.locked:
        # The proof is the print file, which these values may not make (a required field
        # still empty): then the step says what to fix instead of showing broken images.
        errors = _problems(ctx, values)
    fields = field_views(ctx.fields, values, errors, t)
    known = {field.key for field in ctx.fields}
    general = [
        t.problem(problem)
        for key, problems in errors.items()
        if key not in known
        for problem in problems
    ]
    notice_keys = _take_notices(draft.draft_hash)
    if draft.locked:
        notice_keys = ["form.locked"]
    elif draft.state == "finished" and "form.finished" not in notice_keys:
        notice_keys.append("form.finished")
    notices = [t(key) for key in notice_keys]
    width = EDIT_WIDTH if step in ("edit", "embed") else LARGE_WIDTH
    pages = _proof_views(ctx) if step == "proof" else _page_views(ctx, width)
    exits = ctx.exits
    callback_target = request.args.get("callback_target", "")
    template_name = ctx.template.name if ctx.template is not None else draft.template_identifier
    body = render_template(
        STEP_TEMPLATES[step],
        t=t,
        locale=t.locale,
        draft=draft,
        locked=draft.locked,
        state_label=t(f"state.{draft.state}") if draft.state in DRAFT_STATES else draft.state,
        template_name=template_name,
        fields=fields,
        errors=errors,
        general_errors=general,
        notices=notices,
        step=step,
        steps=[
            (name, t(f"step.{name}"), _step_url(draft.draft_hash, name))
            for name in STEPS
            if name in NAV_STEPS or name == step
        ],
        languages=[
            (code, LANGUAGE_NAMES[code], _step_url(draft.draft_hash, step, locale=code))
            for code in LOCALES
        ],
        pages=pages,
        guides=guides(ctx.spec) if ctx.spec is not None else None,
        exits=exits,
        save_url=_carried_url("web.editor_save", draft.draft_hash),
        finish_url=_carried_url("web.editor_finish", draft.draft_hash),
        csrf_token=csrf_token(),
        target=callback_target if callback_target in _TARGET_NAME else "",
        conflict=conflict,
        proof_error=proof_error,
        proof_required=proof_required(ctx.client.identifier),
        proof_url=_step_url(draft.draft_hash, "proof"),
        autosave_url=url_for("web.editor_autosave", draft_hash=draft.draft_hash),
        embed_origins=" ".join(frame_origins(ctx.client.allowed_origins)),
        embed_info=_draft_info(ctx, step, template_name, fields),
    )
    response = Response(body, status=status, mimetype="text/html")
    response.headers["Content-Security-Policy"] = _editor_csp(
        exits.values(), ctx.client.allowed_origins
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def _draft_info(
    ctx: EditorContext, step: str, template_name: str, fields: list[FieldView]
) -> dict[str, Any]:
    """The draft as the bridge announces it to the shop's page (``EDITOR_LOADED``); each
    DataKey with the label its input has on the page, in the page's language."""
    spec = ctx.spec
    offered = ctx.draft.available_variants
    variants = [
        {
            "id": variant.id,
            "identifier": variant.identifier,
            "name": variant.name,
            "thumbnail": {"type": variant.thumbnail_type, "value": variant.thumbnail_value},
        }
        for variant in (spec.variants if spec is not None else ())
        if offered is None or variant.identifier in offered
    ]
    return draft_info(
        draft_hash=ctx.draft.draft_hash,
        template_name=template_name,
        pages=spec.page_count if spec is not None else 0,
        data_keys=[(field.key, field.label) for field in fields],
        variants=variants,
        active_variant=ctx.draft.variant_identifier,
        step=step,
        version=ctx.draft.version,
        locked=ctx.draft.locked,
        proof_required=proof_required(ctx.client.identifier),
    )


def _refuse_api_token() -> Response | None:
    """``?api_token=`` on an editor URL: a page explaining the safe way (``/auth`` called by
    the shop's server), before anything else is looked at."""
    if not any(name in request.args for name in API_TOKEN_PARAMS):
        return None
    t = Translator(normalize_locale(request.args.get("locale")) or "en")
    body = render_template("editor_api_token.html", t=t, locale=t.locale)
    response = Response(body, status=400, mimetype="text/html")
    response.headers["Cache-Control"] = "no-store"
    return response


@dataclass(frozen=True)
class PageView:
    number: int
    src: str
    render_url: str
    width: int
    height: int
    fields: str
    alt: str
    caption: str
    #: Where each editable text sits on the image (none on a locked draft: read-only).
    hotspots: list[Hotspot]


def _page_views(ctx: EditorContext, width: int) -> list[PageView]:
    if ctx.spec is None:
        return []
    spec = ctx.spec
    total = spec.page_count
    size = image_size(spec, width, None)
    used = page_keys(spec, ctx.fields)
    spots = hotspots(spec, ctx.fields)
    views = []
    for page in range(total):
        url = url_for("web.editor_page_image", draft_hash=ctx.draft.draft_hash, page=page)
        query = urlencode({"width": width, "v": ctx.draft.version})
        views.append(
            PageView(
                number=page + 1,
                src=f"{url}?{query}",
                render_url=f"{url}?{urlencode({'width': width})}",
                width=size[0],
                height=size[1],
                fields=" ".join(f"f-{index}" for index in used[page]),
                alt=ctx.t("preview.alt", page=page + 1, pages=total),
                caption=ctx.t("preview.page", page=page + 1, pages=total),
                hotspots=[] if ctx.draft.locked else spots[page],
            )
        )
    return views


def _proof_views(ctx: EditorContext) -> list[PageView]:
    """The proof's pages: the print file with trim and bleed marked (pps.reviews.proof)."""
    if ctx.spec is None:
        return []
    spec = ctx.spec
    total = spec.page_count
    # The print file's pages are trim plus bleed on every side.
    bleed = 2 * spec.bleed
    size = (PROOF_WIDTH, round(PROOF_WIDTH * (spec.height + bleed) / (spec.width + bleed)))
    views = []
    for page in range(total):
        url = url_for("web.editor_proof_image", draft_hash=ctx.draft.draft_hash, page=page)
        views.append(
            PageView(
                number=page + 1,
                src=f"{url}?{urlencode({'v': ctx.draft.version})}",
                render_url="",
                width=size[0],
                height=size[1],
                fields="",
                alt=ctx.t("proof.alt", page=page + 1, pages=total),
                caption=ctx.t("preview.page", page=page + 1, pages=total),
                hotspots=[],  # the proof is looked at, not edited
            )
        )
    return views


def _carried() -> dict[str, str]:
    """The shop's query parameters, kept on every link and form of the editor."""
    return {name: request.args[name] for name in _CARRIED if name in request.args}


def _carried_url(endpoint: str, draft_hash: str, **extra: str) -> str:
    params: dict[str, Any] = {**_carried(), **extra}
    return url_for(endpoint, draft_hash=draft_hash, **params)


def _step_url(draft_hash: str, step: str, **extra: str) -> str:
    return _carried_url("web.editor_step", draft_hash, step=step, **extra)


def _see_other(location: str) -> Response:
    response = Response(status=303)
    response.headers["Location"] = location
    response.headers["Cache-Control"] = "no-store"
    return response


def _editor_csp(exits: Any, allowed_origins: Any) -> str:
    """The site-wide policy, plus ``blob:`` images (the live preview), the callbacks'
    origins as form targets (Chromium applies ``form-action`` to the redirect after a POST)
    and the client's allowed origins as the only ones that may frame the page."""
    origins = form_action_origins(exits)
    policy = PAGE_CSP.replace("frame-ancestors 'none'", frame_ancestors(allowed_origins))
    policy = policy.replace("img-src 'self' data:", "img-src 'self' data: blob:")
    policy = policy.replace("form-action 'self'", " ".join(["form-action 'self'", *origins]))
    if "connect-src" not in policy:
        policy += "; connect-src 'self'"
    return policy
