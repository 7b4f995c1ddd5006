"""JWT verification for login and file tokens, as the reference product's clients sign them.

Plain inputs, plain outputs: no Flask here. Views call :func:`verify_token` and turn a
:class:`TokenError` into a response; ``reason`` is written for the shop developer whose
client signed the token.

PyJWT does the JOSE work: :class:`jwt.PyJWS` splits the compact serialisation, decodes its
three segments as strict base64url (alphabet, padding, canonical trailing bits), reads the
header as a JSON object and applies its header rules (``kid`` a string, ``crit``, ``b64``);
its HS256 algorithm object checks the MAC in constant time. What PyJWT does not do stays here,
in plain Python: the size limit, the payload read as strict JSON (no ``NaN``, ``Infinity`` or
``1e999``), refusing lone UTF-16 surrogates, HS256 as the only algorithm, no ``crit`` at all,
``typ``, ``jti`` from header or payload, the claim types, and the time checks. PyJWT's own
``exp``/``nbf``/``iat`` checks are not used: they read the system clock (callers pass ``now``),
take ``int()`` of the claim (so ``"1712345678"`` and ``true`` pass and microseconds are cut
off), count ``exp == now - leeway`` as expired and refuse an ``iat`` in the future, which
COMPAT.md forbids. PyJWT's exceptions never leave this module: :func:`_refusal` maps each one
onto a :class:`TokenError` with the reason pps has always given.

The order of the checks is deliberate: format, ``alg``/``crit`` and the ``client`` claim first
(they are needed to find the key), then the signature, and only then the remaining claims. A
token nobody signed with a real API key therefore never learns anything about timing, ``jti``
or ``urlPath`` rules.
"""

from __future__ import annotations

import base64
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import jwt
from jwt.types import SigOptions

from pps.platform import strict_json

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
    "check_login_age",
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
_SEGMENT_NAMES = ("header", "payload", "signature")

#: Knows HS256 alone, so no header can select another algorithm object.
_JWS = jwt.PyJWS(algorithms=[_ALGORITHM])
#: Reading the token before its key is known (see :func:`verify_token`).
_UNVERIFIED: SigOptions = {"verify_signature": False, "enforce_minimum_key_length": False}
_HS256 = _JWS.get_algorithm_by_name(_ALGORITHM)
#: Decoded tokens kept per process (:func:`_decoded`); at most 8 KB each (2 MB in all).
_DECODED_CACHE_SIZE = 256


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
    #: The token's signed ``redirect`` claim, when the signature verified before the
    #: failure (an expired or used-up login link): the error page's way back to the shop.
    signed_redirect: str | None = None
    #: The client whose key signed it, whose allowed origins that way back must be on.
    signed_client: str | None = None

    def __init__(
        self,
        reason: str,
        *,
        signed_redirect: str | None = None,
        signed_client: str | None = None,
    ) -> None:
        self.reason = reason
        self.signed_redirect = signed_redirect
        self.signed_client = signed_client
        super().__init__(reason)


class MalformedToken(TokenError):
    """Not a compact JWS: segments, base64url, JSON, Unicode or size are wrong."""

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
    """``exp`` lies in the past by more than the leeway, or a login token is too old."""


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

    Order, and why: the key depends on the ``client`` claim, which PyJWT cannot know of. So
    first ``PyJWS.decode_complete`` runs without verifying the signature: it splits the
    token, decodes the three segments and reads and checks the header, and hands back the
    payload bytes and the signature. pps reads the payload, checks ``alg`` and ``crit``, and
    asks ``lookup_key`` for the key of the named ``client``. Then PyJWT's HS256 algorithm
    (the only one ``_JWS`` knows, fixed here, never chosen by the header) verifies
    ``header.payload`` against that signature with the key. Not a second
    ``decode_complete(key=...)``: that would decode every segment and prepare the key again,
    41 µs against 18 µs for a 265-character token (timeit, 2-core VM). Keys are prepared
    once per key (:func:`_prepared_key`), and a token seen again (a reusable file token) is
    not decoded again (:func:`_decoded`); its signature is verified every time.
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
    header, payload, signature = _decoded(token)

    # HS256 only: the API key is a secret shared with the shop, so HMAC is the only family
    # that makes sense. Accepting anything else invites algorithm confusion (an RS256/ES256
    # "public key" that is really our HMAC secret, or "none" with no signature at all).
    _check_alg(header)
    if "crit" in header:  # PyJWS lets crit ["b64"] through; pps supports no extension
        raise _unsupported_critical(header)

    if "client" not in payload:
        raise MissingClaim("the payload has no 'client' claim; set it to your client identifier")
    client = payload["client"]
    if not isinstance(client, str) or not client:
        raise InvalidClaim(f"'client' must be a non-empty string, got {_show(client)}")
    key = lookup_key(client)
    if not key:
        raise UnknownClient(f"no active client {_show(client)}")

    signing_input = token[: token.rindex(".")].encode("ascii")
    if not _HS256.verify(signing_input, _prepared_key(key), signature):
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
    # iat must be a number when present, but it never rejects a token here: clients' clocks
    # drift and lcobucci/PyJWT disagree about future iat. exp and nbf carry the validity;
    # logins add check_login_age.
    _optional_time(payload, "iat")

    current = time.time() if now is None else now
    if exp is not None and current > exp + leeway:
        raise ExpiredToken(
            f"token expired at {_when(exp)} (leeway {leeway:g} s)",
            signed_redirect=redirect,
            signed_client=client,
        )
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
        claims=dict(payload),  # a copy: the decoded payload is shared through the cache
    )


def check_login_age(token: VerifiedToken, *, now: float, leeway: float, max_age: int) -> None:
    """Refuse a login token issued more than ``max_age`` (``PPS_NONCE_TTL``) seconds ago.

    A used ``jti`` is remembered until the token's ``exp`` passes, or for ``max_age`` seconds
    when it has none. After that the nonce is gone, so a login token must stop being good by
    itself: by its ``iat``, and a login token with neither ``exp`` nor ``iat`` can never be
    known to be old, so it is refused. Every known client sends ``iat`` (the PHP SDK and
    lcobucci/jwt always; the Magento module also sends ``exp``). A future ``iat`` (a shop
    clock running ahead) is accepted; :func:`remaining_lifetime` keeps its nonce long enough.
    """
    iat = _issued_at(token)
    if iat is None:
        if token.exp is None:
            raise MissingClaim(
                "a login token needs 'iat' (or 'exp'): a used login token is remembered for "
                f"{_duration(max_age)} (PPS_NONCE_TTL) only, so without either it could log "
                "in again after that; set 'iat' to the time of signing"
            )
        return
    if now - leeway > iat + max_age:
        raise ExpiredToken(
            f"the login token was issued at {_when(iat)}, more than {_duration(max_age)} "
            "ago: a used login token is remembered that long only (PPS_NONCE_TTL), so older "
            "ones are refused; sign a fresh one for each login",
            signed_redirect=token.redirect,
            signed_client=token.client,
        )


def remaining_lifetime(token: VerifiedToken, now: float, leeway: float, default_ttl: int) -> int:
    """Seconds a nonce for ``token`` must be remembered: until it can no longer pass ``exp``.

    Without ``exp`` the token never expires by itself, so ``default_ttl`` is the operator's
    choice; with an ``iat`` the nonce lasts at least until :func:`check_login_age` refuses
    the token (``iat + default_ttl + leeway``), which matters when the shop's clock is ahead.
    """
    if token.exp is None:
        iat = _issued_at(token)
        if iat is None:
            return default_ttl
        remaining = max(float(default_ttl), iat + default_ttl + leeway - now)
    else:
        remaining = token.exp - now + leeway
    if not remaining < MAX_NONCE_TTL:  # also catches +inf
        return MAX_NONCE_TTL
    return max(1, math.ceil(remaining))


@lru_cache(maxsize=_DECODED_CACHE_SIZE)
def _decoded(token: str) -> tuple[dict[str, Any], dict[str, Any], bytes]:
    """(header, payload, signature) of a compact JWS (three segments), read by PyJWS.

    Nothing here depends on a key: the signature is verified by the caller at every use.
    Kept for the last few hundred tokens (a refusal is not kept) because file tokens are
    reusable: a shop puts one thumbnail URL into a product page that every visitor loads,
    and decoding (PyJWS checks each base64url character in Python) costs more than the rest
    of the check. Callers must not change the dicts.
    """
    segments = token.split(".")
    if not token.isascii():  # PyJWS would fail to encode a lone surrogate in the string
        raise _refusal(segments, None)
    try:
        decoded = _JWS.decode_complete(token, options=_UNVERIFIED)
    except jwt.InvalidTokenError as exc:
        raise _refusal(segments, exc) from None
    header: dict[str, Any] = decoded["header"]
    _check_unicode(header, "header")
    payload = _parse_json(decoded["payload"], "payload")
    signature: bytes = decoded["signature"]
    return header, payload, signature


@lru_cache(maxsize=256)
def _prepared_key(key: str) -> bytes:
    """PyJWT's HS256 key for ``key``, kept for the few keys a process verifies with.

    ``prepare_key`` checks that the secret is not PEM, SSH, DER or JWK material; that costs
    more than the MAC (6 µs), and clients' API keys change only by rotation, so a bounded
    cache keyed by the key itself serves every token of a client after its first.
    """
    try:
        prepared: bytes = _HS256.prepare_key(key.encode("utf-8"))
    except (UnicodeEncodeError, jwt.InvalidKeyError):
        # A stored key with lone surrogates, or one PyJWT will not use as an HMAC secret,
        # cannot be what any client signed with.
        raise UnknownClient("the client's API key is unusable; ask the operator") from None
    return prepared


def _refusal(segments: list[str], error: jwt.InvalidTokenError | None) -> TokenError:
    """Why PyJWS refused the token (``error``), in the words pps has always used.

    Runs only for refused tokens. PyJWT says "Invalid header padding" for every base64url
    fault and leaves ``crit`` values out of its message, so the segments are examined again
    here to tell the shop which segment is wrong and how.
    """
    for segment, name in zip(segments, _SEGMENT_NAMES, strict=True):
        problem = _base64url_problem(segment)
        if problem is not None:
            return MalformedToken(f"the {name} segment {problem}")
    try:
        header = _parse_json(base64.urlsafe_b64decode(_padded(segments[0])), "header")
        _check_alg(header)
    except TokenError as exc:
        return exc
    if "crit" in header:
        return _unsupported_critical(header)
    if "kid" in header and not isinstance(header["kid"], str):
        return InvalidClaim(f"kid must be a string when present, got {_show(header['kid'])}")
    if "b64" in header:
        return MalformedToken(
            f"the header sets 'b64' to {_show(header['b64'])}; an unencoded payload "
            "(RFC 7797) is not supported, leave 'b64' out"
        )
    return MalformedToken(f"the token is not a compact JWS: {error}")


def _base64url_problem(segment: str) -> str | None:
    """What is wrong with ``segment`` as strict base64url, or None when nothing is."""
    body = segment.rstrip("=")
    padding = len(segment) - len(body)
    if padding and (padding > 2 or (len(body) + padding) % 4):
        return "has wrong base64url padding"
    if not body.isascii() or body.encode("ascii").translate(None, _B64URL_BYTES):
        return "contains characters outside the base64url alphabet"
    remainder = len(body) % 4
    if remainder == 1:
        return "has an impossible base64url length"
    if remainder and _B64URL.index(body[-1]) & (0x0F if remainder == 2 else 0x03):
        return "is not canonical base64url"
    return None


def _padded(segment: str) -> str:
    body = segment.rstrip("=")
    return body + "=" * (-len(body) % 4)


def _parse_json(raw: bytes, name: str) -> dict[str, Any]:
    """Strict JSON (:mod:`pps.platform.strict_json`) in UTF-8, an object, every string
    valid Unicode."""
    try:
        value = strict_json.loads(raw.decode("utf-8"))
    except strict_json.DuplicateKey as exc:  # which of the two would a reader take?
        raise MalformedToken(f"the {name} is not valid: {exc}") from None
    except ValueError:
        # Invalid UTF-8, invalid JSON and JSON too deep to decode all subclass it.
        raise MalformedToken(f"the {name} is not valid UTF-8 JSON") from None
    if not isinstance(value, dict):
        raise MalformedToken(f"the {name} must be a JSON object, got {type(value).__name__}")
    if b"\\u" in raw:  # a surrogate can only come from a \u escape: skip the walk otherwise
        _check_unicode(value, name)
    return value


def _check_unicode(value: object, name: str) -> None:
    """Refuse lone UTF-16 surrogates and non-finite numbers anywhere in ``value``.

    JSON lets ``"\\ud800"`` through as an escape, and Python then holds a string no UTF-8
    encoder accepts: the database, Redis, a ``Location`` header and the log would each fail
    on it with a 500. RFC 8259 8.2 calls such strings unpredictable; pps refuses them while
    parsing, before any key is looked up. PyJWS reads the header with ``json.loads``, which
    also takes ``NaN`` and ``Infinity``; :mod:`pps.platform.strict_json` refuses those in the
    payload, this walk in the header. (``json.loads`` also reads a header in UTF-16/32 or behind a
    UTF-8 BOM, which pps refused before; the MAC covers those bytes, so only the spelling is
    looser.) A loop, not recursion: the nesting is as deep as the JSON.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    raise MalformedToken(
                        f"the {name} is not valid UTF-8 JSON: it holds a lone UTF-16 "
                        "surrogate (a \\ud800-\\udfff escape without its pair)"
                    ) from None
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise MalformedToken(f"the {name} is not valid UTF-8 JSON")
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def _check_alg(header: dict[str, Any]) -> None:
    if "alg" not in header:
        raise UnsupportedAlgorithm(f"the header has no 'alg'; it must be {_ALGORITHM!r}")
    if header["alg"] != _ALGORITHM:
        raise UnsupportedAlgorithm(f"alg must be {_ALGORITHM}, got {_show(header['alg'])}")


def _unsupported_critical(header: dict[str, Any]) -> UnsupportedCritical:
    return UnsupportedCritical(
        f"the header lists critical extensions {_show(header['crit'])}; none are supported"
    )


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


def _issued_at(token: VerifiedToken) -> float | None:
    """The ``iat`` of a verified token (already checked to be a number in range)."""
    return _optional_time(token.claims, "iat")


def _duration(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    if days and not rest:
        return f"{days} day" if days == 1 else f"{days} days"
    return f"{seconds} s"


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
