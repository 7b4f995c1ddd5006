"""JWT verification for login and file tokens, as the reference product's clients sign them.

Plain inputs, plain outputs: no Flask here. Views call :func:`verify_token` and turn a
:class:`TokenError` into a response; ``reason`` is written for the shop developer whose
client signed the token.

Only compact-serialised JWS with HS256 is accepted. The order of the checks is deliberate:
format, ``alg``/``crit`` and the ``client`` claim first (they are needed to find the key),
then the signature, and only then the remaining claims. A token nobody signed with a real
API key therefore never learns anything about timing, ``jti`` or ``urlPath`` rules.
"""

from __future__ import annotations

import binascii
import hmac
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pps import strict_json
from pps.hmac_sha256 import hmac_sha256_for

__all__ = [
    "MAX_JTI_LENGTH",
    "MAX_NONCE_TTL",
    "MAX_TOKEN_LENGTH",
    "ConflictingJti",
    "ExpiredToken",
    "InvalidClaim",
    "InvalidSignature",
    "MalformedToken",
    "MissingClaim",
    "NotYetValid",
    "ReplayedToken",
    "TokenError",
    "UnknownClient",
    "UnsupportedAlgorithm",
    "UnsupportedCritical",
    "UrlPathMismatch",
    "VerifiedToken",
    "remaining_lifetime",
    "verify_token",
]

#: Longest token accepted, in characters. Real login tokens are well under 1 KB; the limit
#: bounds the work an anonymous caller can make us do before the signature is checked.
MAX_TOKEN_LENGTH = 8192
#: Longest ``jti`` accepted; it becomes part of a Redis key.
MAX_JTI_LENGTH = 256
#: Upper bound for :func:`remaining_lifetime`, in seconds (about 68 years). Keeps the nonce
#: TTL a value every store accepts even for an absurd ``exp``; such a nonce is as good as
#: permanent.
MAX_NONCE_TTL = 2**31 - 1

_ALGORITHM = "HS256"
_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_B64URL_BYTES = _B64URL.encode("ascii")
_ACCEPTED_TYP = frozenset({"jwt", "application/jwt"})
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


@dataclass(frozen=True)
class VerifiedToken:
    """A token whose signature and claims passed every check."""

    client: str
    user: str | None
    redirect: str | None
    url_path: str | None
    jti: str | None
    exp: float | None
    claims: dict[str, Any]


class TokenError(Exception):
    """Root of every token failure; ``reason`` says what to fix, ``status`` the HTTP status."""

    status: int = 401

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class MalformedToken(TokenError):
    """Not a compact JWS: segments, base64url, JSON or size are wrong."""

    status = 400


class UnsupportedAlgorithm(TokenError):
    """``alg`` is missing or anything but HS256."""


class UnsupportedCritical(TokenError):
    """The header has ``crit``: we implement no extensions, so we must refuse (RFC 7515 4.1.11)."""


class InvalidClaim(TokenError):
    """A claim or header parameter has the wrong type or value."""


class MissingClaim(TokenError):
    """A required claim is absent (``client`` here; callers use it for ``user`` and ``jti``)."""


class UnknownClient(TokenError):
    """The ``client`` claim names no client with a usable key, or a disabled one."""


class InvalidSignature(TokenError):
    """The signature does not verify with the client's API key."""


class ExpiredToken(TokenError):
    """``exp`` lies in the past by more than the leeway."""


class NotYetValid(TokenError):
    """``nbf`` lies in the future by more than the leeway."""


class ConflictingJti(TokenError):
    """``jti`` is in both header and payload, with different values."""


class UrlPathMismatch(TokenError):
    """The ``urlPath`` claim is not the path of the request carrying the token."""


class ReplayedToken(TokenError):
    """The token's ``jti`` was already used. Raised by callers after claiming the nonce."""


def verify_token(
    token: str,
    lookup_key: Callable[[str], str | None],
    *,
    now: float | None = None,
    leeway: float = 30,
    request_path: str | None = None,
) -> VerifiedToken:
    """Verify ``token`` and return its claims, or raise a :class:`TokenError` subclass.

    ``lookup_key(client)`` returns the API key of an active client, or None for an unknown
    or disabled one; exceptions it raises (a database outage) propagate unchanged. For any
    input string, every other failure is a :class:`TokenError`. ``urlPath`` is compared with
    ``request_path`` only when ``request_path`` is given.
    """
    if not isinstance(token, str):
        raise MalformedToken("the token must be a string")
    if len(token) > MAX_TOKEN_LENGTH:
        raise MalformedToken(
            f"the token is {len(token)} characters long; the limit is {MAX_TOKEN_LENGTH}"
        )
    segments = token.split(".")
    if len(segments) != 3:
        raise MalformedToken(
            "a JWT has three dot-separated segments (header.payload.signature), "
            f"got {len(segments)}"
        )
    header_b64, payload_b64, signature_b64 = segments
    header = _decode_json(header_b64, "header")
    payload = _decode_json(payload_b64, "payload")
    signature = _decode_segment(signature_b64, "signature")

    # HS256 only: the API key is a secret shared with the shop, so HMAC is the only family
    # that makes sense. Accepting anything else invites algorithm confusion (an RS256/ES256
    # "public key" that is really our HMAC secret, or "none" with no signature at all).
    if "alg" not in header:
        raise UnsupportedAlgorithm(f"the header has no 'alg'; it must be {_ALGORITHM!r}")
    if header["alg"] != _ALGORITHM:
        raise UnsupportedAlgorithm(f"alg must be {_ALGORITHM}, got {_show(header['alg'])}")
    if "crit" in header:
        raise UnsupportedCritical(
            f"the header lists critical extensions {_show(header['crit'])}; none are supported"
        )

    if "client" not in payload:
        raise MissingClaim("the payload has no 'client' claim; set it to your client identifier")
    client = payload["client"]
    if not isinstance(client, str) or not client:
        raise InvalidClaim(f"'client' must be a non-empty string, got {_show(client)}")
    key = lookup_key(client)
    if not key:
        raise UnknownClient(f"no active client {_show(client)}")

    signing_input = f"{header_b64}.{payload_b64}".encode("ascii")
    expected = hmac_sha256_for(_key_bytes(key)).digest(signing_input)
    if not hmac.compare_digest(expected, signature):
        raise InvalidSignature(
            f"the signature does not verify: sign with HS256 over the UTF-8 bytes of the "
            f"API key of client {_show(client)}"
        )

    # Everything below is only reported to callers holding a real key.
    _check_typ(header)
    jti = _jti(header, payload)
    user = _optional_str(payload, "user")
    redirect = _optional_str(payload, "redirect")
    url_path = _optional_str(payload, "urlPath")
    exp = _optional_time(payload, "exp")
    nbf = _optional_time(payload, "nbf")
    # iat must be a number when present, but it never rejects a token: clients' clocks
    # drift and lcobucci/PyJWT disagree about future iat. exp and nbf carry the validity.
    _optional_time(payload, "iat")

    current = time.time() if now is None else now
    if exp is not None and current > exp + leeway:
        raise ExpiredToken(f"token expired at {_when(exp)} (leeway {leeway:g} s)")
    if nbf is not None and current < nbf - leeway:
        raise NotYetValid(f"token not valid before {_when(nbf)} (leeway {leeway:g} s)")
    if url_path is not None and request_path is not None and url_path != request_path:
        raise UrlPathMismatch(
            f"urlPath {_show(url_path)} does not match the request path {_show(request_path)}"
        )

    return VerifiedToken(
        client=client,
        user=user,
        redirect=redirect,
        url_path=url_path,
        jti=jti,
        exp=exp,
        claims=payload,
    )


def remaining_lifetime(token: VerifiedToken, now: float, leeway: float, default_ttl: int) -> int:
    """Seconds a nonce for ``token`` must be remembered: until it can no longer pass ``exp``.

    Without ``exp`` the token never expires, so ``default_ttl`` is the operator's choice.
    """
    if token.exp is None:
        return default_ttl
    remaining = token.exp - now + leeway
    if not remaining < MAX_NONCE_TTL:  # also catches +inf
        return MAX_NONCE_TTL
    return max(1, math.ceil(remaining))


def _decode_segment(segment: str, name: str) -> bytes:
    """Strict base64url: optional correct padding, canonical trailing bits, nothing else.

    Canonical encoding means one token has exactly one spelling, which keeps any cache or log
    keyed by the token string honest.
    """
    body = segment.rstrip("=")
    padding = len(segment) - len(body)
    if padding and (padding > 2 or (len(body) + padding) % 4):
        raise MalformedToken(f"the {name} segment has wrong base64url padding")
    # Deleting every alphabet byte must leave nothing: one pass in C, unlike a regex.
    data = body.encode("ascii") if body.isascii() else b"?"
    if data.translate(None, _B64URL_BYTES):
        raise MalformedToken(
            f"the {name} segment contains characters outside the base64url alphabet"
        )
    remainder = len(data) % 4
    if remainder == 1:
        raise MalformedToken(f"the {name} segment has an impossible base64url length")
    if remainder:
        unused_bits = 0x0F if remainder == 2 else 0x03
        if _B64URL.index(body[-1]) & unused_bits:
            raise MalformedToken(f"the {name} segment is not canonical base64url")
    try:
        # What base64.urlsafe_b64decode does, without its layers of argument coercion.
        return binascii.a2b_base64((data + b"=" * (-remainder % 4)).translate(_FROM_URLSAFE))
    except (binascii.Error, ValueError):  # pragma: no cover - excluded by the checks above
        raise MalformedToken(f"the {name} segment is not valid base64url") from None


def _decode_json(segment: str, name: str) -> dict[str, Any]:
    raw = _decode_segment(segment, name)
    try:
        value = strict_json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        # ValueError covers invalid UTF-8 and invalid JSON (both subclass it).
        raise MalformedToken(f"the {name} is not valid UTF-8 JSON") from None
    if not isinstance(value, dict):
        raise MalformedToken(f"the {name} must be a JSON object, got {type(value).__name__}")
    return value


def _key_bytes(key: str) -> bytes:
    try:
        return key.encode("utf-8")
    except UnicodeEncodeError:
        # A stored key with lone surrogates cannot be what any client signed with.
        raise UnknownClient("the client's API key is unusable; ask the operator") from None


def _check_typ(header: dict[str, Any]) -> None:
    # RFC 7519 5.1: typ is optional and compared case-insensitively; clients send "JWT".
    if "typ" not in header:
        return
    typ = header["typ"]
    if not isinstance(typ, str) or typ.lower() not in _ACCEPTED_TYP:
        raise InvalidClaim(f"typ must be 'JWT' when present, got {_show(typ)}")


def _jti(header: dict[str, Any], payload: dict[str, Any]) -> str | None:
    """``jti`` from the JOSE header (documented), the payload, or both with the same value."""
    values = [
        _valid_jti(source["jti"], where)
        for source, where in ((header, "header"), (payload, "payload"))
        if "jti" in source
    ]
    if len(values) == 2 and values[0] != values[1]:
        raise ConflictingJti(
            f"jti differs between header ({_show(values[0])}) and payload ({_show(values[1])})"
        )
    return values[0] if values else None


def _valid_jti(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidClaim(f"jti in the {where} must be a non-empty string, got {_show(value)}")
    if len(value) > MAX_JTI_LENGTH:
        raise InvalidClaim(
            f"jti in the {where} is {len(value)} characters; the limit is {MAX_JTI_LENGTH}"
        )
    return value


def _optional_str(payload: dict[str, Any], name: str) -> str | None:
    # PHP clients write withClaim('redirect', null) for "none"; null means absent here.
    value = payload.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidClaim(f"{name!r} must be a string, got {_show(value)}")
    return value


def _optional_time(payload: dict[str, Any], name: str) -> float | None:
    """A NumericDate: int or float seconds since the epoch. bool is not a number here."""
    if name not in payload:
        return None
    value = payload[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidClaim(f"{name!r} must be a number of seconds since 1970, got {_show(value)}")
    try:
        return float(value)
    except OverflowError:
        raise InvalidClaim(f"{name!r} is out of range") from None


def _when(timestamp: float) -> str:
    try:
        return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError, OSError):
        return f"{timestamp:g} (seconds since 1970)"


def _show(value: object) -> str:
    """repr() of a caller-supplied value, short enough for an error message."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # absurdly nested JSON, or an int too long to print
        return f"a {type(value).__name__} too deep to show"
    return text if len(text) <= 80 else text[:77] + "..."
