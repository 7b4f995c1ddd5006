"""Token checks shared by ``/auth`` and the file URLs. Plain Python: no Flask.

:func:`check_token` verifies a shop-signed JWT against the key of the client it names;
:func:`claim_jti` uses up its ``jti``. Both raise :class:`TokenRejected`, which the web
layer renders as an HTML page on ``/auth`` and as JSON on ``/api-ext/files``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pps.auth.tokens import (
    ExpiredToken,
    ReplayedToken,
    TokenError,
    VerifiedToken,
    remaining_lifetime,
    verify_token,
)
from pps.platform.ephemeral import nonce_key
from pps.platform.errors import PpsError
from pps.platform.models import Client
from pps.platform.services import Services

__all__ = [
    "CheckedToken",
    "TokenRejected",
    "check_token",
    "claim_jti",
    "claim_jti_and_put",
    "token_error",
]


class TokenRejected(PpsError):
    """A :class:`~pps.auth.tokens.TokenError` on its way to the error handler.

    Carries the token error's status (400 for a malformed token, 401 for the rest) and its
    ``reason``, which is written for the developer whose shop signed the token.
    """

    def __init__(self, error: TokenError, *, prefix: str) -> None:
        super().__init__(f"{prefix}: {error.reason}")
        self.status = error.status
        self.token_error = error
        # What a shopper's page says (a login link in a browser); the reason stays technical.
        if isinstance(error, ReplayedToken):
            self.page = "error.link_used"
        elif isinstance(error, ExpiredToken):
            self.page = "error.link_expired"
        else:
            self.page = "error.link_invalid"


def token_error(error: TokenError, *, login: bool) -> TokenRejected:
    """The one converter from token failures to HTTP errors, for ``/auth`` and file URLs."""
    prefix = "This login link cannot be used" if login else "The file token cannot be used"
    return TokenRejected(error, prefix=prefix)


@dataclass(frozen=True)
class CheckedToken:
    token: VerifiedToken
    client: Client
    now: float


def check_token(svc: Services, raw: str, *, request_path: str, login: bool) -> CheckedToken:
    """Verify ``raw`` against the key of the client it names; raise :class:`TokenRejected`."""
    found: dict[str, Client] = {}

    def lookup_key(identifier: str) -> str | None:
        client = svc.clients.get(identifier)
        if client is None:
            return None
        found[identifier] = client
        return client.api_key

    now = time.time()
    try:
        token = verify_token(
            raw,
            lookup_key,
            now=now,
            leeway=svc.settings.jwt_leeway,
            request_path=request_path,
        )
    except TokenError as exc:
        raise token_error(exc, login=login) from exc
    return CheckedToken(token=token, client=found[token.client], now=now)


def claim_jti(svc: Services, checked: CheckedToken, *, login: bool) -> None:
    """Use the token's ``jti`` up, or raise a 401 if it was used before.

    Called last, after every other check passed, so a token refused for any other reason
    (unknown user, refused redirect, missing file) is not burned and the shop can retry with
    a corrected token carrying the same ``jti``. One atomic command (SET NX) makes concurrent
    uses of one token safe: exactly one wins. Login and file tokens share one namespace per
    client, ``pps:jti:<client>:<jti>``: a ``jti`` is good for one use, whatever the use.
    The nonce is kept for as long as the token could still pass its ``exp`` check.
    """
    token = checked.token
    if token.jti is None:
        return
    key, ttl = _nonce(svc, checked)
    if not svc.ephemeral.claim(key, ttl):
        raise _replayed(checked, login=login)


def claim_jti_and_put(
    svc: Services, checked: CheckedToken, *, login: bool, link: str, value: str, link_ttl: int
) -> None:
    """:func:`claim_jti`, storing ``value`` under ``link`` in the same atomic step
    (``EphemeralStore.claim_and_put``), one round trip: the link exists exactly when the
    token was used up for it. A token without ``jti`` (a reusable file token) only stores
    the link; a login token always has one (:func:`pps.auth.login.log_in` checks it first).
    """
    token = checked.token
    if token.jti is None:
        svc.ephemeral.put_link(link, value, link_ttl)
        return
    key, ttl = _nonce(svc, checked)
    if not svc.ephemeral.claim_and_put(key, ttl, link, value, link_ttl):
        raise _replayed(checked, login=login)


def _nonce(svc: Services, checked: CheckedToken) -> tuple[str, int]:
    """The nonce key of the token's ``jti`` and how long it must be kept."""
    token = checked.token
    assert token.jti is not None
    leeway = svc.settings.jwt_leeway
    ttl = remaining_lifetime(token, checked.now, leeway, svc.settings.nonce_ttl)
    return nonce_key(checked.client.identifier, token.jti), ttl


def _replayed(checked: CheckedToken, *, login: bool) -> TokenRejected:
    token = checked.token
    replayed = ReplayedToken(
        f"the token with jti {token.jti!r} was used already; every token is good for "
        "one use only, so sign a new one with a fresh jti",
        signed_redirect=token.redirect,
        signed_client=checked.client.identifier,
    )
    return token_error(replayed, login=login)
