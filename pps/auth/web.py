"""``GET /auth?jwt=``: log a shop's user in with a token the shop signed, then redirect.

The checks live in :mod:`pps.auth.login`; this view turns a login into a fresh session and a
redirect (or the landing page). The session interface (:mod:`pps.web.session`) gives
``/auth`` a new, empty session: the browser's earlier one is never read.
"""

from __future__ import annotations

from typing import Any

from flask import Response, render_template, request, session

from pps.auth.access import TokenRejected
from pps.auth.login import (
    SESSION_CLIENT,
    SESSION_EDITOR,
    SESSION_LIFETIME,
    SESSION_USER,
    Login,
    log_in,
)
from pps.auth.way_back import from_redirect
from pps.platform.errors import MethodNotAllowed
from pps.platform.http_headers import TOKEN_URL_HEADERS
from pps.web import bp
from pps.web.common import services, token_redirect
from pps.web.error_pages import page_locale
from pps.web.i18n import Translator

__all__ = ["SESSION_EDITOR", "SESSION_LIFETIME", "logged_in_as", "login"]


@bp.get("/auth")
def login() -> Any:
    if request.method == "HEAD":
        # Flask answers HEAD with the GET view; link scanners in mail and chat clients probe
        # URLs that way. A probe must not use up the one login the token is good for.
        raise MethodNotAllowed(
            "Open this login link with GET in a browser.", headers={"Allow": "GET"}
        )
    svc = services()
    try:
        done = log_in(svc, request.args.get("jwt", ""), request_path=request.path)
    except TokenRejected as exc:
        # A used or expired link whose signature was good names the shop's way back.
        exc.back_url = from_redirect(
            exc.token_error.signed_redirect, base_url=svc.settings.base_url
        )
        raise
    _renew_session(done)
    if done.location is not None:
        # No body: browsers follow Location, and an empty 302 goes out in one write.
        return token_redirect(done.location)
    t = Translator(page_locale())
    response = Response(
        render_template("logged_in.html", t=t, locale=t.locale), mimetype="text/html"
    )
    response.headers.extend(TOKEN_URL_HEADERS)  # the URL carried the token
    return response


def _renew_session(done: Login) -> None:
    """A new session for this login: nothing of an earlier one survives (no fixation)."""
    session.clear()
    session.permanent = True
    session.update(done.session_data())


def logged_in_as() -> tuple[str, str] | None:
    """(client, user) of the current session, or None."""
    client = session.get(SESSION_CLIENT)
    user = session.get(SESSION_USER)
    if isinstance(client, str) and isinstance(user, str):
        return client, user
    return None
