"""``GET /auth?jwt=``: log a shop's user in with a token the shop signed, then redirect.

The checks live in :mod:`pps.auth.login`; this view turns a login into a fresh session and a
redirect (or the landing page). The session interface (:mod:`pps.web.session`) gives
``/auth`` a new, empty session: the browser's earlier one is never read.
"""

from __future__ import annotations

import time
from typing import Any

from flask import Response, render_template, request, session, url_for

from pps.auth.access import TokenRejected
from pps.auth.handoff import HANDOFF_PARAM, is_handoff_part, take_handoff
from pps.auth.login import (
    SESSION_CLIENT,
    SESSION_EDITOR,
    SESSION_KEY,
    SESSION_LIFETIME,
    SESSION_LOGIN_AT,
    SESSION_USER,
    Login,
    log_in,
    login_current,
    login_key_current,
)
from pps.auth.way_back import from_redirect
from pps.platform.errors import Unauthorized
from pps.platform.http_headers import TOKEN_URL_HEADERS
from pps.platform.models import Client
from pps.web import bp
from pps.web.common import bodiless_redirect, refuse_head, services, token_redirect
from pps.web.error_pages import page_locale
from pps.web.i18n import Translator

__all__ = ["SESSION_EDITOR", "SESSION_LIFETIME", "exchange_handoff", "logged_in_as", "login"]


@bp.get("/auth", head=False)  # one login per token: a HEAD probe must not spend it
def login() -> Any:
    svc = services()
    try:
        done = log_in(svc, request.args.get("jwt", ""), request_path=request.path)
    except TokenRejected as exc:
        # A used or expired link whose signature was good names the shop's way back.
        signer = exc.token_error.signed_client
        client = svc.clients.get(signer) if signer is not None else None
        exc.back_url = from_redirect(
            exc.token_error.signed_redirect,
            base_url=svc.settings.base_url,
            allowed_origins=client.allowed_origins if client is not None else (),
        )
        raise
    if done.handoff is None:
        _renew_session(done)
    # else: the editor exchanges the code in Location for the session (pps.auth.handoff).
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


def exchange_handoff() -> Response | None:
    """Turn ``?handoff=<code>`` on an editor URL into a fresh session, once (see
    :mod:`pps.auth.handoff`), then ``303`` to the same URL without the code, so that it
    stays out of the history, reloads and ``Referer``. None when the URL carries no code.
    """
    code = request.args.get(HANDOFF_PARAM)
    if code is None:
        return None
    refuse_head("Open this editor link with GET in a browser.")  # one exchange per code
    data = take_handoff(services().ephemeral, code)
    if data is None:
        refused = Unauthorized(
            "This editor link was opened already or is older than two minutes; "
            "go back to the shop and open the editor again."
        )
        refused.page = "error.link_used"  # the shopper's page: a link good for one use
        raise refused
    session.clear()
    session.permanent = True
    session.update(data)
    # The rest of the query exactly as it came (the shop's encoded callbacks included).
    query = request.query_string.decode("ascii", "replace")
    rest = "&".join(part for part in query.split("&") if part and not is_handoff_part(part))
    # The path built again by the router, quoted: request.path is decoded, and a draft hash
    # sent as "%0d%0a" would put a line break into the header (a 500 after the code is used).
    endpoint, view_args = request.endpoint, request.view_args
    assert endpoint is not None and view_args is not None  # called by the editor's views
    location = url_for(endpoint, **view_args) + (f"?{rest}" if rest else "")
    # The URL carried the code: the same headers as a login's redirect.
    return bodiless_redirect(location, status=303, headers=TOKEN_URL_HEADERS)


def logged_in_as() -> tuple[Client, str] | None:
    """(client, user) of the current session, or None; also None once the login is older
    than ``SESSION_LIFETIME``, however recently the session was used (see
    :func:`~pps.auth.login.login_current`), once the client is disabled, and once its API
    key is another than the one its login was checked with
    (:func:`~pps.auth.login.key_tag`)."""
    client = session.get(SESSION_CLIENT)
    user = session.get(SESSION_USER)
    if not (isinstance(client, str) and isinstance(user, str)):
        return None
    if not login_current(session.get(SESSION_LOGIN_AT), now=time.time()):
        return None
    svc = services()
    found = svc.clients.get(client)
    if found is None or not login_key_current(
        session.get(SESSION_KEY), found.api_key, svc.settings.secret_key
    ):
        return None
    return found, user
