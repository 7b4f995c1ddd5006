"""CSRF protection for the editor's forms: a random token kept in the session.

The session cookie is signed by Flask, so the token cannot be read or forged by another site;
every state-changing form carries it in a hidden field and the server compares the two in
constant time. The token is the line of defence against cross-site POSTs: the cookie is
``SameSite=None`` wherever the editor may be framed by a shop (:mod:`pps.editor.embed`),
so a browser sends it along with another site's POST; only plain http on a non-loopback
host keeps ``SameSite=Lax``.
"""

from __future__ import annotations

import hmac

from flask import request, session

from pps.platform.errors import BadRequest, Forbidden
from pps.platform.ids import secret_token

__all__ = ["FIELD", "CsrfMismatch", "CsrfMissing", "check_csrf", "csrf_token"]

FIELD = "csrf_token"
HEADER = "X-CSRF-Token"
_SESSION_KEY = "csrf"


class CsrfMissing(BadRequest):
    page = "error.stale_form"
    default_message = (
        "This form was sent without its security token. Reload the editor and try again."
    )


class CsrfMismatch(Forbidden):
    page = "error.stale_form"
    default_message = (
        "This form's security token is not valid for your login (it may be from an older "
        "page or another login). Reload the editor and try again; nothing was saved."
    )


def csrf_token() -> str:
    """The session's token, created on first use. A new login (``/auth``) starts a new one."""
    token = session.get(_SESSION_KEY)
    if not isinstance(token, str) or len(token) < 32:
        token = secret_token(32)
        session[_SESSION_KEY] = token
    return token


def check_csrf() -> None:
    """Raise 400 when the request carries no token, 403 when it is not the session's."""
    sent = request.form.get(FIELD) or request.headers.get(HEADER, "")
    if not sent:
        raise CsrfMissing()
    expected = session.get(_SESSION_KEY)
    if not isinstance(expected, str) or not hmac.compare_digest(
        sent.encode("utf-8", "surrogateescape"), expected.encode("utf-8")
    ):
        raise CsrfMismatch()
