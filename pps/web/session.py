"""The signed session cookie, tuned for ``/auth``, which writes a fresh session per request.

Same design as Flask's default (itsdangerous, HMAC, timestamped, refused after
``permanent_session_lifetime``), with two changes that matter on the hot path:

* the signing serializer is built once per app instead of once per request;
* the payload is plain compact JSON, never zlib-compressed. Flask's tagged serializer
  exists to round-trip bytes, tuples and datetimes; pps keeps only strings, numbers and
  dicts in the session, so the tagging walk is pure overhead.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from flask import Flask
from flask.sessions import SecureCookieSessionInterface
from itsdangerous import Serializer, URLSafeTimedSerializer
from itsdangerous.encoding import base64_encode, int_to_bytes
from werkzeug.http import dump_cookie


class UncompressedSerializer(URLSafeTimedSerializer):
    """Never tries zlib: a session here is a few hundred bytes, compressing them costs more
    than the bytes it saves. Compressed cookies of older versions still load.

    :meth:`dumps` writes exactly what itsdangerous writes (``payload.timestamp.signature``,
    HMAC over the first two with the derived key) but derives the key once instead of
    building a signer and deriving it again for every cookie.
    """

    def dump_payload(self, obj: Any) -> bytes:
        return base64_encode(Serializer.dump_payload(self, obj))

    @cached_property
    def _signing_key(self) -> bytes:
        return self.make_signer().derive_key()

    def dumps(self, obj: Any, salt: str | bytes | None = None) -> str:
        if salt is not None:
            return super().dumps(obj, salt)
        value = self.dump_payload(obj) + b"." + base64_encode(int_to_bytes(int(time.time())))
        mac = hmac.new(self._signing_key, value, self.signer_kwargs["digest_method"])
        return (value + b"." + base64_encode(mac.digest())).decode("ascii")


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
        if serializer is None:
            raise RuntimeError("a session cookie needs the app's SECRET_KEY")
        return dump_cookie(
            self.get_cookie_name(app),
            serializer.dumps({**data, "_permanent": True}),
            expires=datetime.now(UTC) + app.permanent_session_lifetime,
            path=self.get_cookie_path(app),
            domain=self.get_cookie_domain(app),
            secure=self.get_cookie_secure(app),
            httponly=self.get_cookie_httponly(app),
            samesite=self.get_cookie_samesite(app),
            partitioned=self.get_cookie_partitioned(app),
            max_size=app.config["MAX_COOKIE_SIZE"],
        )
