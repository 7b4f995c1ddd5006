"""Logging a shop's user in with a token the shop signed. Plain Python: no Flask.

Order of checks: the token (signature, times, ``urlPath``), its age (``iat`` within
``PPS_NONCE_TTL``, see :func:`pps.auth.tokens.check_login_age`), the ``user`` and ``jti`` claims,
the user, the redirect target, and only then, last, the nonce. A token refused for any
reason before the nonce is claimed is not used up. What a successful login grants is a
:class:`Login`; the web layer turns it into a fresh session cookie and a redirect.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pps.auth.access import check_token, claim_jti, claim_jti_and_put, token_error
from pps.auth.callbacks import EditorTarget, editor_target, query_callbacks
from pps.auth.handoff import HANDOFF_TTL, encode_grant, new_code, with_handoff
from pps.auth.redirects import RedirectRefused, check_redirect_target
from pps.auth.tokens import InvalidClaim, MissingClaim, TokenError, check_login_age
from pps.platform.ephemeral import handoff_key
from pps.platform.errors import BadRequest
from pps.platform.services import Services

__all__ = [
    "SESSION_CLIENT",
    "SESSION_EDITOR",
    "SESSION_KEY",
    "SESSION_LIFETIME",
    "SESSION_LOGIN_AT",
    "SESSION_USER",
    "Login",
    "key_tag",
    "log_in",
    "login_current",
    "login_key_current",
]

#: How long a login lasts, counted from the login itself (:func:`login_current`). The
#: session cookie is also signed with a timestamp and older cookies are refused by the
#: server, so this is enforced by the server, not only by the cookie.
SESSION_LIFETIME = timedelta(hours=8)

SESSION_CLIENT = "client"
SESSION_USER = "user"
SESSION_LOGIN_AT = "login_at"
SESSION_KEY = "key"
"""The :func:`key_tag` of the API key the login's token was checked with."""
SESSION_EDITOR = "editor"
"""``{draftHash: {"callbacks": {...}, "step": ...}}`` for the drafts this login may open."""

_MAX_SHOWN_TARGET = 200


@dataclass(frozen=True)
class Login:
    """A login that passed every check; handed out only once its token's ``jti`` is used up."""

    client: str
    user: str
    at: int
    location: str | None
    """Where to send the browser (ready for ``Location``), or None for the landing page."""
    key: str = field(repr=False)
    """:func:`key_tag` of the client's API key at the login."""
    editor: dict[str, Any] = field(repr=False)
    """The editor grants: the callbacks of the editor URL in the signed ``redirect``, by
    draft (see :data:`SESSION_EDITOR`); empty when the redirect is not to the editor."""
    handoff: str | None = field(default=None, repr=False)
    """The handoff code in ``location`` (editor redirects on pps's origin), or None: then
    the web layer sets the session cookie itself (see :mod:`pps.auth.handoff`)."""

    def session_data(self) -> dict[str, Any]:
        """Everything the new session holds; nothing of an earlier session survives."""
        return {
            SESSION_CLIENT: self.client,
            SESSION_USER: self.user,
            SESSION_LOGIN_AT: self.at,
            SESSION_KEY: self.key,
            SESSION_EDITOR: self.editor,
        }


def key_tag(api_key: str, secret_key: str) -> str:
    """A short tag of ``api_key``, keyed with pps's secret key: a session records which of
    its client's keys signed its login, so that rotating a key (after a leak, say) ends the
    sessions its logins made. The cookie can be read by whoever holds it, so the key's own
    hash is not put there; 64 bits of an HMAC tell two keys apart and say nothing of either.
    """
    return hmac.new(secret_key.encode(), api_key.encode(), hashlib.sha256).hexdigest()[:16]


def login_key_current(tag: object, api_key: str, secret_key: str) -> bool:
    """Whether a session's :data:`SESSION_KEY` ``tag`` is that of the client's key now."""
    return isinstance(tag, str) and hmac.compare_digest(tag, key_tag(api_key, secret_key))


def login_current(login_at: object, *, now: float) -> bool:
    """Whether a session whose login was at ``login_at`` (:data:`SESSION_LOGIN_AT`) still
    stands for that login: for :data:`SESSION_LIFETIME` after it.

    The cookie's own signed timestamp does not bound a login: Flask signs a permanent
    session's cookie again at every answer (``SESSION_REFRESH_EACH_REQUEST``), so that
    timestamp only measures how long the browser was idle, and an editor kept busy (or a
    copied cookie sent now and then) would stay logged in for good. Every login writes
    ``login_at``; a session without a number there is no login's.
    """
    if isinstance(login_at, bool) or not isinstance(login_at, int | float):
        return False
    return now - login_at <= SESSION_LIFETIME.total_seconds()


def log_in(svc: Services, raw: str, *, request_path: str) -> Login:
    """Check the login token ``raw`` and use it up; raise a
    :class:`~pps.platform.errors.PpsError`."""
    if not raw:
        raise BadRequest(
            "This login link has no token: the shop must send the browser to "
            "/auth?jwt=<signed token>."
        )
    checked = check_token(svc, raw, request_path=request_path, login=True)
    token, client = checked.token, checked.client
    try:
        check_login_age(
            token, now=checked.now, leeway=svc.settings.jwt_leeway, max_age=svc.settings.nonce_ttl
        )
    except TokenError as exc:
        raise token_error(exc, login=True) from exc
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

    redirect = None
    if token.redirect is not None:
        try:
            redirect = check_redirect_target(
                token.redirect,
                base_url=svc.settings.base_url,
                allowed_origins=client.allowed_origins,
            )
        except RedirectRefused as exc:
            raise BadRequest(
                f"After logging in you would have been sent to {_shown(token.redirect)}, "
                f"but that target is refused: {exc.reason}."
            ) from exc

    location = target = code = None
    if redirect is not None:
        location = redirect.location
        target = editor_target(redirect, svc.settings.base_url)
        if target is not None:
            # An editor on pps's origin gets its session through a handoff code.
            code = new_code()
            location = with_handoff(location, code)
    login = Login(
        client=client.identifier,
        user=token.user,
        at=int(checked.now),
        key=key_tag(client.api_key, svc.settings.secret_key),
        location=location,
        editor=_editor_grants(target),
        handoff=code,
    )
    # Last: nothing above may burn the token.
    if code is None:
        claim_jti(svc, checked, login=True)
    else:
        claim_jti_and_put(
            svc,
            checked,
            login=True,
            link=handoff_key(code),
            value=encode_grant(login.session_data()),
            link_ttl=HANDOFF_TTL,
        )
    return login


def _editor_grants(target: EditorTarget | None) -> dict[str, Any]:
    if target is None:
        return {}
    # These came inside the signed redirect claim, so the editor may trust them.
    return {target.draft_hash: {"callbacks": query_callbacks(target.query)}}


def _shown(target: str) -> str:
    text = repr(target)
    return text if len(text) <= _MAX_SHOWN_TARGET else text[: _MAX_SHOWN_TARGET - 3] + "..."
