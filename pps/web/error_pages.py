"""What an HTML error page tells a shopper: plain words from the catalogue, a way back.

The shopper reads what happened and what to do in their language (``error.<kind>.title``
and ``.text``); the technical reason (the error's ``message``, written for the shop's
developer, in English) and the request id sit in a collapsed ``<details>``. The way back to
the shop is offered only when the shop named it in a signed place (see
:mod:`pps.auth.way_back`); otherwise there is no link.

The language: ``?locale=``, else the one the editor's session remembers, else the browser's
``Accept-Language``, else English.
"""

from __future__ import annotations

from typing import Any

from flask import request, session

from pps.platform.errors import PpsError
from pps.web.i18n import LOCALES, Translator, normalize_locale

__all__ = ["KINDS", "error_page_context", "page_locale"]

#: Every kind of error page; each has ``error.<kind>.title`` and ``error.<kind>.text``.
KINDS = (
    "link_used",
    "link_expired",
    "link_invalid",
    "logged_out",
    "unknown_design",
    "stale_form",
    "not_found",
    "forbidden",
    "bad_request",
    "conflict",
    "too_large",
    "busy",
    "internal",
)
_BY_STATUS = {
    401: "logged_out",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    413: "too_large",
    429: "busy",
    503: "busy",
}
#: Paths whose pages keep the editor's session (and its remembered language).
_SESSION_PATHS = ("/editor/", "/review/")
#: The session key the editor keeps its language under (see :mod:`pps.editor.web`).
SESSION_LOCALE = "locale"


def page_locale() -> str:
    """The language of an error page for the current request."""
    asked = normalize_locale(request.args.get("locale"))
    if asked is not None:
        return asked
    if request.path.startswith(_SESSION_PATHS):
        remembered = normalize_locale(session.get(SESSION_LOCALE))
        if remembered is not None:
            return remembered
    best = request.accept_languages.best_match(LOCALES)
    return normalize_locale(best) or LOCALES[0]


def _kind(error: PpsError) -> str:
    page = error.page
    if page is not None and page.startswith("error.") and page[6:] in KINDS:
        return page[6:]
    if error.status in _BY_STATUS:
        return _BY_STATUS[error.status]
    return "internal" if error.status >= 500 else "bad_request"


def error_page_context(error: PpsError, request_id: str) -> dict[str, Any]:
    """Everything ``error.html`` shows for ``error``."""
    t = Translator(page_locale())
    kind = _kind(error)
    return {
        "t": t,
        "locale": t.locale,
        "kind": kind,
        "title": t(f"error.{kind}.title"),
        "text": t(f"error.{kind}.text"),
        "status": error.status,
        "message": error.message,
        "request_id": request_id,
        "back_url": error.back_url,
    }
