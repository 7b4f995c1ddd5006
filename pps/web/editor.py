"""The editor entry: ``/editor/<draftHash>[/<step>]`` for a user logged in through ``/auth``.

Editing itself comes later; for now the page shows the template, the draft's DataKeys with
their current values, the step and the way back to the shop.
"""

from __future__ import annotations

from typing import Any

from flask import Response, render_template, request, session

from pps.errors import NotFound, PpsError
from pps.models import Draft
from pps.openapi import operation
from pps.web import bp
from pps.web.auth import SESSION_EDITOR, logged_in_as
from pps.web.callbacks import editor_callbacks, vetted_callbacks, with_defaults
from pps.web.common import services

#: Steps this editor serves. ``embed`` (the editor framed by the shop) is not offered yet:
#: every page here forbids framing.
STEPS = ("edit", "preview")
DEFAULT_STEP = "edit"

_CALLBACK_LABELS = {
    "callback": "Back to shop",
    "callback_cancel": "Cancel and return to shop",
    "callback_halt": "Continue later (back to shop)",
}


class LoginRequired(PpsError):
    status = 401
    default_message = (
        "You are not logged in for this design (or your login has expired). "
        "Please open the editor from the shop again to log in."
    )


_EDITOR_DESCRIPTION = """\
Browser page, for the user logged in through `/auth`. `step` is `edit` or `preview`; without
a step the editor opens at the step last visited (`edit` at first). Query parameters as the
shop sends them: `callback`, `callback_cancel`, `callback_halt` (standard base64 of a URL,
URL-encoded), `callback_target`, `locale`. Callbacks that came inside the signed `redirect`
claim of the login are used as they are; others only when their origin is one of the
client's allowed origins.

HTML errors: `401` without a login for this draft's user, `404` for an unknown draft or step.
"""


@bp.get("/editor/<draft_hash>")
@operation(
    tags=["Auth"],
    summary="Open the editor at the last visited step",
    description=_EDITOR_DESCRIPTION,
    security=None,
    errors=(),
    response_description="The editor page.",
    content_type="text/html",
)
def editor_default(draft_hash: str) -> Response:
    return _editor(draft_hash, None)


@bp.get("/editor/<draft_hash>/<step>")
@operation(
    tags=["Auth"],
    summary="Open the editor at a step",
    description=_EDITOR_DESCRIPTION,
    security=None,
    errors=(),
    response_description="The editor page.",
    content_type="text/html",
)
def editor_step(draft_hash: str, step: str) -> Response:
    if step not in STEPS:
        raise NotFound(f"The editor has no step {step!r}; use one of: {', '.join(STEPS)}.")
    return _editor(draft_hash, step)


def _editor(draft_hash: str, step: str | None) -> Response:
    identity = logged_in_as()
    if identity is None:
        raise LoginRequired()
    client_id, user_id = identity
    svc = services()
    draft = svc.repository.get_draft(client_id, draft_hash)
    if draft is None:
        raise NotFound("There is no such design.")
    if draft.user_identifier != user_id:
        raise LoginRequired()
    client = svc.clients.get(client_id)
    if client is None:  # disabled since the login
        raise LoginRequired()

    entry = _session_entry(draft_hash)
    if step is None:
        remembered = entry.get("step")
        step = remembered if remembered in STEPS else DEFAULT_STEP
    if entry.get("step") != step:
        _remember(draft_hash, {**entry, "step": step})

    signed = entry.get("callbacks")
    if isinstance(signed, dict) and signed:
        callbacks = vetted_callbacks(
            {k: v for k, v in signed.items() if isinstance(v, str)},
            base_url=svc.settings.base_url,
            allowed_origins=client.allowed_origins,
            signed=True,
        )
    else:
        callbacks = vetted_callbacks(
            editor_callbacks(request.args.to_dict(flat=False)),
            base_url=svc.settings.base_url,
            allowed_origins=client.allowed_origins,
            signed=False,
        )

    template = svc.repository.get_template(client_id, draft.template_identifier)
    data_keys = template.data_keys if template is not None else tuple(_all_keys(draft))
    fields = [
        {"id": f"datakey-{index}", "key": key, "value": _display(_value(draft, key))}
        for index, key in enumerate(data_keys)
    ]
    callbacks = with_defaults(callbacks)
    links = [
        {"name": name, "label": _CALLBACK_LABELS[name], "href": callbacks[name]}
        for name in _CALLBACK_LABELS
        if name in callbacks
    ]
    response = Response(
        render_template(
            "editor.html",
            draft=draft,
            template=template,
            template_name=template.name if template is not None else draft.template_identifier,
            fields=fields,
            step=step,
            steps=STEPS,
            links=links,
            callback_target=request.args.get("callback_target", ""),
            locale=_locale(request.args.get("locale", "")),
        ),
        mimetype="text/html",
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def _session_entry(draft_hash: str) -> dict[str, Any]:
    editor = session.get(SESSION_EDITOR)
    entry = editor.get(draft_hash) if isinstance(editor, dict) else None
    return dict(entry) if isinstance(entry, dict) else {}


def _remember(draft_hash: str, entry: dict[str, Any]) -> None:
    editor = session.get(SESSION_EDITOR)
    editor = dict(editor) if isinstance(editor, dict) else {}
    editor[draft_hash] = entry
    session[SESSION_EDITOR] = editor


def _value(draft: Draft, key: str) -> Any:
    if key in draft.values:
        return draft.values[key]
    return draft.api_default_values.get(key)


def _all_keys(draft: Draft) -> list[str]:
    return sorted({*draft.api_default_values, *draft.values})


def _display(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _locale(value: str) -> str:
    """A language tag for ``<html lang>``; anything odd falls back to English."""
    cleaned = value.replace("_", "-")
    if 2 <= len(cleaned) <= 12 and all(part.isalnum() for part in cleaned.split("-")):
        return cleaned
    return "en"
