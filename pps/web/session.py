"""The signed session cookie: Flask's own cookie session, opened only where a page needs it.

Signing, timestamps, compression and the ``Set-Cookie`` header are Flask's and
itsdangerous's (:class:`~flask.sessions.SecureCookieSessionInterface`); pps sets three things:

* HMAC-SHA256 and the salt ``pps-session`` (cookies signed before this module used Flask's
  writer, plain JSON with the same key, salt and digest, still load);
* plain compact JSON as the serializer (:class:`PlainJson`) instead of Flask's tagged JSON:
  pps keeps only strings, numbers, booleans, lists and objects in the session, which both
  write alike, and the tagging walk cost about a third of signing a login's cookie;
* the signing serializer is built once per app and secret key instead of once per request;
* where a session exists at all. Only the browser login (``/auth``), the editor
  (``/editor/...``) and the reviewer's page (``/review/...``) use one. Everything else
  (the API, the file endpoints and file links, the API reference, static files) gets a
  read-only empty session: the cookie is not verified, no ``Set-Cookie`` and no
  ``Vary: Cookie`` go out, and a write fails loudly.
  ``/auth`` starts a fresh session without reading the one before it: a login replaces
  whatever the browser held (no fixation), and a refused login leaves it alone.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, NoReturn

from flask import Flask, Request
from flask.json.tag import TaggedJSONSerializer
from flask.sessions import NullSession, SecureCookieSession, SecureCookieSessionInterface
from itsdangerous import URLSafeTimedSerializer

__all__ = ["LOGIN_PATH", "SESSION_PREFIXES", "PlainJson", "PpsSessionInterface", "Sessionless"]

#: The login writes a new session and never reads the old one.
LOGIN_PATH = "/auth"
#: Paths whose pages read and write the session.
SESSION_PREFIXES = ("/editor/", "/review/")

_SERIALIZER = "pps.session_serializer"


class Sessionless(NullSession):
    """The session of a path that has none: reads see an empty session, writes raise."""

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise RuntimeError(
            "This path has no session: only /auth and the editor use one "
            "(pps.web.session.SESSION_PREFIXES)."
        )

    __setitem__ = __delitem__ = clear = pop = popitem = update = setdefault = _refuse


class PlainJson(TaggedJSONSerializer):
    """The session's serializer: JSON values only, written compactly (no tags).

    Flask's default tags tuples, bytes, Markup, UUIDs and datetimes so that they come back
    as such; pps stores none of them (a tuple would come back as a list, a datetime fails
    loudly), and for plain JSON values the tagged form is this one.
    """

    def dumps(self, value: Any) -> str:
        return json.dumps(value, separators=(",", ":"))

    def loads(self, value: str) -> Any:
        return json.loads(value)


class PpsSessionInterface(SecureCookieSessionInterface):
    salt = "pps-session"
    digest_method = staticmethod(hashlib.sha256)
    null_session_class = Sessionless
    serializer = PlainJson()

    def get_signing_serializer(self, app: Flask) -> URLSafeTimedSerializer | None:
        """Flask's serializer, kept per app while the secret keys stay the same."""
        keys = (app.secret_key, tuple(app.config.get("SECRET_KEY_FALLBACKS") or ()))
        cached = app.extensions.get(_SERIALIZER)
        if cached is not None and cached[0] == keys:
            return cached[1]  # type: ignore[no-any-return]
        serializer = super().get_signing_serializer(app)
        app.extensions[_SERIALIZER] = (keys, serializer)
        return serializer

    def open_session(self, app: Flask, request: Request) -> SecureCookieSession | None:
        path = request.path
        if path == LOGIN_PATH:
            return self.session_class() if app.secret_key else None
        if not path.startswith(SESSION_PREFIXES):
            return self.make_null_session(app)
        return super().open_session(app, request)
