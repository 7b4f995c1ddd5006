"""``GET /auth?jwt=``: log a shop's user in with a token the shop signed, then redirect.

Order of checks: the token (signature, times, ``urlPath``), the ``user`` and ``jti`` claims,
the user, the redirect target, and only then, last, the nonce. A token refused for any
reason before the nonce is claimed is not used up. The session is renewed (cleared and
written afresh) only after the claim succeeded, so a store outage never logs anyone in.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from flask import Response, render_template, request, session
from markupsafe import escape

from pps.errors import BadRequest, MethodNotAllowed
from pps.openapi import operation
from pps.redirects import RedirectRefused, safe_redirect_target
from pps.tokens import InvalidClaim, MissingClaim
from pps.web import bp
from pps.web.callbacks import editor_callbacks, parse_editor_target
from pps.web.common import CheckedToken, check_token, claim_jti, services, token_error

#: How long a login lasts. Flask signs the session cookie with a timestamp and refuses
#: older cookies itself, so this is enforced by the server, not only by the cookie's expiry.
SESSION_LIFETIME = timedelta(hours=8)

SESSION_CLIENT = "client"
SESSION_USER = "user"
SESSION_LOGIN_AT = "login_at"
SESSION_EDITOR = "editor"
"""``{draftHash: {"callbacks": {...}, "step": ...}}`` for the drafts this login may open."""

_MAX_SHOWN_TARGET = 200

_AUTH_DESCRIPTION = """\
Browser entry point. The shop signs a JWT (HS256, its API key as the key) with `client`,
`user` (a user of that client), `jti` (header or payload; every token logs in once) and
optionally `redirect`, `exp`, `nbf` and `urlPath` (which must then be `/auth`).

On success the user is logged in (a fresh session cookie, HttpOnly, SameSite=Lax, 8 hours)
and the answer is `302` to the `redirect` claim: a path on this service or an absolute URL on
this service's origin or one of the client's allowed origins. Without `redirect` a page says
the user is logged in.

Errors are HTML pages with a request id: `400` for a missing or malformed token or a refused
redirect target, `401` for a bad signature, unknown client or user, expired token, missing
`user`/`jti`, or a token used before; `503` when the session store is unavailable (nobody is
logged in then). A refused token's `jti` is not used up.
"""


@bp.get("/auth")
@operation(
    tags=["Auth"],
    summary="Log a user in with a signed JWT and redirect",
    description=_AUTH_DESCRIPTION,
    status=302,
    security="jwt",
    errors=(),
    response_description="Logged in; redirect to the `redirect` claim.",
    response_headers={"Location": {"schema": {"type": "string"}}},
    content_type="text/html",
)
def login() -> Any:
    if request.method == "HEAD":
        # Flask answers HEAD with the GET view; link scanners in mail and chat clients probe
        # URLs that way. A probe must not use up the one login the token is good for.
        raise MethodNotAllowed(
            "Open this login link with GET in a browser.", headers={"Allow": "GET"}
        )
    raw = request.args.get("jwt", "")
    if not raw:
        raise BadRequest(
            "This login link has no token: the shop must send the browser to "
            "/auth?jwt=<signed token>."
        )
    checked = check_token(raw, request_path=request.path, login=True)
    token, client = checked.token, checked.client
    svc = services()

    if not token.user:
        raise token_error(
            MissingClaim("the token has no 'user' claim; a login needs the user identifier"),
            login=True,
        )
    if token.jti is None:
        raise token_error(
            MissingClaim("the token has no 'jti'; a login token needs a fresh nonce"),
            login=True,
        )
    if not svc.repository.user_exists(client.identifier, token.user):
        raise token_error(
            InvalidClaim(f"{token.user!r} is not a user of client {client.identifier!r}"),
            login=True,
        )

    location = None
    if token.redirect is not None:
        try:
            location = safe_redirect_target(
                token.redirect,
                base_url=svc.settings.base_url,
                allowed_origins=client.allowed_origins,
            )
        except RedirectRefused as exc:
            raise BadRequest(
                f"After logging in you would have been sent to {_shown(token.redirect)}, "
                f"but that target is refused: {exc.reason}."
            ) from exc

    claim_jti(checked, login=True)  # last: nothing above may burn the token
    _renew_session(checked, location)

    if location is None:
        response = Response(render_template("logged_in.html"), mimetype="text/html")
    else:
        # A fixed one-line body: browsers follow the Location; this is for humans with curl.
        link = escape(location)
        response = Response(
            f'<!doctype html><title>Redirecting</title><a href="{link}">Continue</a>',
            status=302,
            mimetype="text/html",
        )
        response.headers["Location"] = location
    # The URL carries the token: keep it out of caches and out of the next site's Referer.
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def _renew_session(checked: CheckedToken, location: str | None) -> None:
    """A new session for this login: nothing of an earlier one survives (no fixation)."""
    session.clear()
    session.permanent = True
    session[SESSION_CLIENT] = checked.client.identifier
    session[SESSION_USER] = checked.token.user
    session[SESSION_LOGIN_AT] = int(time.time())
    editor: dict[str, Any] = {}
    if location is not None:
        target = parse_editor_target(location, services().settings.base_url)
        if target is not None:
            # These came inside the signed redirect claim, so the editor may trust them.
            editor[target.draft_hash] = {"callbacks": editor_callbacks(target.query)}
    session[SESSION_EDITOR] = editor


def logged_in_as() -> tuple[str, str] | None:
    """(client, user) of the current session, or None."""
    client = session.get(SESSION_CLIENT)
    user = session.get(SESSION_USER)
    if isinstance(client, str) and isinstance(user, str):
        return client, user
    return None


def _shown(target: str) -> str:
    text = repr(target)
    return text if len(text) <= _MAX_SHOWN_TARGET else text[: _MAX_SHOWN_TARGET - 3] + "..."
