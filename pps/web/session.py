"""The signed session cookie, tuned for ``/auth``, which writes a fresh session per request.

Same design as Flask's default (itsdangerous, HMAC, timestamped, refused after
``permanent_session_lifetime``), with two changes that matter on the hot path:

* the signing serializer is built once per app instead of once per request;
* the payload is plain compact JSON, never zlib-compressed. Flask's tagged serializer
  exists to round-trip bytes, tuples and datetimes; pps keeps only strings, numbers and
  dicts in the session, so the tagging walk is pure overhead;
* ``/auth`` writes its ``Set-Cookie`` from a template that Werkzeug's ``dump_cookie`` made
  for the current second (:class:`_CookieTemplate`): the attributes are the same for every
  login, only the value and the expiry second change.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, NamedTuple

from flask import Flask
from flask.sessions import SecureCookieSessionInterface
from itsdangerous import Serializer, URLSafeTimedSerializer
from itsdangerous.encoding import int_to_bytes
from werkzeug.http import dump_cookie

from pps.hmac_sha256 import HmacSha256


class UncompressedSerializer(URLSafeTimedSerializer):
    """Never tries zlib: a session here is a few hundred bytes, compressing them costs more
    than the bytes it saves. Compressed cookies of older versions still load.

    :meth:`dumps` writes exactly what itsdangerous writes (``payload.timestamp.signature``,
    HMAC over the first two with the derived key) but derives the key, and hashes its HMAC
    pads (:class:`~pps.hmac_sha256.HmacSha256`), once instead of for every cookie.
    """

    def dump_payload(self, obj: Any) -> bytes:
        return _urlsafe_b64(Serializer.dump_payload(self, obj))

    @cached_property
    def _mac(self) -> HmacSha256:
        if self.signer_kwargs.get("digest_method") is not hashlib.sha256:
            raise ValueError("pps session cookies are signed with HMAC-SHA256")
        return HmacSha256(self.make_signer().derive_key())

    def dumps(self, obj: Any, salt: str | bytes | None = None) -> str:
        if salt is not None:
            return super().dumps(obj, salt)
        return self.dumps_at(obj, int(time.time()))

    def dumps_at(self, obj: Any, timestamp: int) -> str:
        """:meth:`dumps` signed as of ``timestamp`` (whole seconds since 1970)."""
        value = self.dump_payload(obj) + b"." + _urlsafe_b64(int_to_bytes(timestamp))
        mac = self._mac.digest(value)
        return (value + b"." + _urlsafe_b64(mac)).decode("ascii")


_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _urlsafe_b64(data: bytes) -> bytes:
    """itsdangerous's ``base64_encode`` of bytes, without its three layers of calls."""
    return binascii.b2a_base64(data, newline=False).translate(_TO_URLSAFE).rstrip(b"=")


class CompactJson:
    """The ``dumps``/``loads`` pair itsdangerous expects; one encoder for every cookie
    (``json.dumps`` with options builds a new one per call)."""

    _encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True)

    @staticmethod
    def dumps(value: Any) -> str:
        return CompactJson._encoder.encode(value)

    @staticmethod
    def loads(value: str | bytes) -> Any:
        return json.loads(value)


class PpsSessionInterface(SecureCookieSessionInterface):
    salt = "pps-session"
    digest_method = staticmethod(hashlib.sha256)
    serializer = CompactJson()  # type: ignore[assignment]

    def __init__(self) -> None:
        self._serializers: dict[int, URLSafeTimedSerializer] = {}
        self._templates: dict[int, _CookieTemplate] = {}

    def get_signing_serializer(self, app: Flask) -> URLSafeTimedSerializer | None:
        if not app.secret_key:
            return None
        serializer = self._serializers.get(id(app))
        if serializer is None:
            serializer = UncompressedSerializer(
                app.secret_key,
                salt=self.salt,
                serializer=self.serializer,
                signer_kwargs={"key_derivation": "hmac", "digest_method": self.digest_method},
            )
            self._serializers[id(app)] = serializer
        return serializer

    def fresh_session_cookie(self, app: Flask, data: Mapping[str, Any]) -> str:
        """``Set-Cookie`` of a new permanent session holding ``data``, exactly as
        :meth:`save_session` writes it, for answers made outside Flask's request cycle."""
        serializer = self.get_signing_serializer(app)
        if not isinstance(serializer, UncompressedSerializer):
            raise RuntimeError("a session cookie needs the app's SECRET_KEY")
        now = time.time()
        value = serializer.dumps_at({**data, "_permanent": True}, int(now))
        lifetime = app.permanent_session_lifetime.total_seconds()
        # What dump_cookie writes for expires=now + lifetime: whole seconds, rounded down.
        expires = int(now + lifetime)
        template = self._templates.get(id(app))
        if template is None or template.expires != expires:
            template = self._cookie_template(app, expires)
        cookie = template.prefix + value + template.suffix
        if len(cookie) > app.config["MAX_COOKIE_SIZE"] > 0:
            return self._dump_cookie(app, value, expires)  # dump_cookie warns, as Flask would
        return cookie

    def _cookie_template(self, app: Flask, expires: int) -> _CookieTemplate:
        # A session value (base64url and dots) never needs quoting, so the header is the
        # one dump_cookie writes for an empty value with the value put in after "name=".
        empty = self._dump_cookie(app, "", expires)
        name_part = empty.partition(";")[0]
        template = _CookieTemplate(expires, name_part, empty[len(name_part) :])
        self._templates[id(app)] = template  # one dict store: safe across threads
        return template

    def _dump_cookie(self, app: Flask, value: str, expires: int) -> str:
        return dump_cookie(
            self.get_cookie_name(app),
            value,
            expires=datetime.fromtimestamp(expires, UTC),
            path=self.get_cookie_path(app),
            domain=self.get_cookie_domain(app),
            secure=self.get_cookie_secure(app),
            httponly=self.get_cookie_httponly(app),
            samesite=self.get_cookie_samesite(app),
            partitioned=self.get_cookie_partitioned(app),
            max_size=app.config["MAX_COOKIE_SIZE"],
        )


class _CookieTemplate(NamedTuple):
    """``Set-Cookie`` around the value, for cookies that expire in the second ``expires``."""

    expires: int
    prefix: str
    suffix: str
