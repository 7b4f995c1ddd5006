"""``POST /editor/<hash>/autosave``: the editor's script saves the form while the customer types.

The body is JSON, ``{"baseVersion": <the version the page shows>, "values": {DataKey: text}}``,
with the page's CSRF token in the ``X-CSRF-Token`` header and the editor's session. The values
are checked exactly as a form save checks them, and stored as a new draft version (state
``edited``; webhooks and preflight as for a save). Answers, always JSON:

* ``200`` ``{"success": true, "version", "state", "changed"}`` (``changed`` false: the values
  were stored already, so no new version was made);
* ``409`` ``{"conflict": true, "currentVersion"}`` when the draft is not at ``baseVersion``
  (changed by the API or another tab): nothing is written; sending again with
  ``baseVersion`` = ``currentVersion`` overwrites explicitly ("keep mine");
* ``422`` per field as the live preview's (``fields``, ``errors``) for values the template
  refuses, or ``errors`` per JSON field for a body of the wrong shape or types;
* ``400`` not JSON, ``415`` not ``application/json``, ``401``/``403``/``429`` as named;
* ``503`` with ``Retry-After`` while the database or Redis is unavailable.
"""

from __future__ import annotations

import time

from flask import Response, jsonify, request

from pps.acl import remote as acl
from pps.editor.autosave import autosave_body
from pps.editor.csrf import check_csrf
from pps.editor.web import (
    MAX_FORM_FIELDS,
    DraftLocked,
    EditorContext,
    _load,
    _problem_json,
    _problems,
    _save,
    conflict_json,
)
from pps.platform import strict_json
from pps.platform.errors import (
    BadRequest,
    PpsError,
    UnsupportedMediaType,
    ValidationFailed,
)
from pps.platform.outages import OUTAGES
from pps.platform.repository import VersionConflict
from pps.web import bp
from pps.web.common import services
from pps.web.errors import json_error_response, outage_error

#: Autosaves per logged-in user per second. The script saves one second after the last
#: change (and on leaving a field), so a customer never gets near it.
AUTOSAVES_PER_SECOND = 3


class AutosaveTooFast(PpsError):
    status = 429
    default_message = "Too many saves; wait a moment."

    def __init__(self) -> None:
        super().__init__(headers={"Retry-After": "1"})


@bp.post("/editor/<draft_hash>/autosave")
def editor_autosave(draft_hash: str) -> Response:
    try:
        return _autosave(draft_hash)
    except PpsError as exc:  # the script reads JSON, never an HTML error page
        return json_error_response(exc)
    except OUTAGES as exc:  # the database or Redis down: the 503 the script waits out
        error = outage_error(exc)
        if error is None:
            raise
        return json_error_response(error)


def _autosave(draft_hash: str) -> Response:
    ctx = _load(draft_hash)
    check_csrf()
    _throttle(ctx)  # before the shop's check: a script must not make pps ask it unbounded
    acl.guard(services(), ctx.draft, acl.SAVE, ctx.user)
    if ctx.draft.locked:
        raise DraftLocked()
    if request.mimetype != "application/json":
        raise UnsupportedMediaType("Send the values as application/json.")
    try:
        data = strict_json.loads(request.get_data(cache=False))
    except ValueError:
        raise BadRequest("The body is not valid JSON.") from None
    body, problems = autosave_body(data, max_values=MAX_FORM_FIELDS)
    if body is None:
        raise ValidationFailed("The autosave body is not as documented.", errors=problems)
    if body.base_version != ctx.draft.version:
        return conflict_json(ctx, ctx.draft.version)
    known = {field.key for field in ctx.fields}
    submitted = {key: value for key, value in body.values.items() if key in known}
    errors = _problems(ctx, {**ctx.shown_values, **submitted})
    if errors:
        return _problem_json(ctx, errors)
    if {**ctx.draft.values, **submitted} == ctx.draft.values:
        return _saved(ctx.draft.version, ctx.draft.state, changed=False)
    try:
        draft = _save(ctx, submitted, state="edited", base=body.base_version)
    except VersionConflict as exc:  # changed between the check above and the write
        return conflict_json(ctx, exc.current)
    return _saved(draft.version, draft.state, changed=True)


def _throttle(ctx: EditorContext) -> None:
    second = int(time.time())
    key = f"pps:autosave:{ctx.client.identifier}:{ctx.user}:{second}"
    if services().ephemeral.count(key, 2) > AUTOSAVES_PER_SECOND:
        raise AutosaveTooFast()


def _saved(version: int, state: str, *, changed: bool) -> Response:
    response = jsonify({"success": True, "version": version, "state": state, "changed": changed})
    response.headers["Cache-Control"] = "no-store"
    return response
