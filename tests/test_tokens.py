"""pps.auth.tokens against tokens signed by joserfc (valid shapes) and by hand (malformed ones)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import random
import string
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import OctKey
from joserfc.jws import JWSRegistry

from pps.auth import tokens
from pps.auth.tokens import (
    ConflictingJti,
    ExpiredToken,
    InvalidClaim,
    InvalidSignature,
    MalformedToken,
    MissingClaim,
    NotYetValid,
    ReplayedToken,
    TokenError,
    UnknownClient,
    UnsupportedAlgorithm,
    UnsupportedCritical,
    UrlPathMismatch,
    VerifiedToken,
    remaining_lifetime,
    verify_token,
)

CLIENT = "Ab3dEf9h"
API_KEY = "k3Y-ÄPI-secret-with-more-than-32-characters-xyz"  # non-ASCII: UTF-8 bytes are signed
KEYS = {CLIENT: API_KEY, "Other123": "another-secret-that-is-long-enough-to-sign"}
NOW = 1_712_345_678.0


def lookup(client: str) -> str | None:
    return KEYS.get(client)


def sign(
    claims: dict[str, Any],
    header: dict[str, Any] | None = None,
    *,
    key: str = API_KEY,
    typ: str | None = "JWT",
) -> str:
    """A token as a real client signs it, via joserfc (not our code)."""
    hdr = {"alg": "HS256", **(header or {})}
    return jwt.encode(
        hdr,
        claims,
        OctKey.import_key(key),
        # Header jti is documented by the reference product; joserfc wants it allowed.
        registry=JWSRegistry(algorithms=[hdr["alg"]], strict_check_header=False),
        default_type=typ,
    )


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def craft(header: Any, payload: Any, *, key: str = API_KEY, raw: bool = False) -> str:
    """Hand-made token for shapes joserfc refuses to produce; HMAC from the stdlib."""
    h = header if raw else b64(json.dumps(header).encode())
    p = payload if raw else b64(json.dumps(payload).encode())
    mac = hmac.new(key.encode(), f"{h}.{p}".encode(), hashlib.sha256).digest()
    return f"{h}.{p}.{b64(mac)}"


def verify(token: str, **kwargs: Any) -> VerifiedToken:
    kwargs.setdefault("now", NOW)
    return verify_token(token, lookup, **kwargs)


# --- valid tokens in the shapes real clients send -------------------------------------------


def test_login_token_from_lcobucci_with_microsecond_floats() -> None:
    claims = {
        "client": CLIENT,
        "user": "Us3rAbcd",
        "redirect": "/editor/abc",
        "iat": 1712345678.123456,
        "nbf": 1712345678.123456,
        "exp": 1712345978.654321,
        "jti": "n-1",
    }
    result = verify(sign(claims))
    assert result == VerifiedToken(
        client=CLIENT,
        user="Us3rAbcd",
        redirect="/editor/abc",
        url_path=None,
        jti="n-1",
        exp=1712345978.654321,
        claims=claims,
    )


def test_jti_only_in_header_and_no_exp_and_absent_typ() -> None:
    result = verify(sign({"client": CLIENT, "user": "u"}, {"jti": "hdr"}, typ=None))
    assert result.jti == "hdr"
    assert result.exp is None


def test_jti_in_header_and_payload_with_same_value() -> None:
    assert verify(sign({"client": CLIENT, "jti": "same"}, {"jti": "same"})).jti == "same"


def test_extra_iss_and_kid_are_ignored() -> None:
    token = sign({"client": CLIENT, "iss": "https://shop.example"}, {"kid": "whatever"})
    assert verify(token).claims["iss"] == "https://shop.example"


@pytest.mark.parametrize("typ", ["JWT", "jwt", "application/jwt"])
def test_typ_variants_accepted(typ: str) -> None:
    assert verify(sign({"client": CLIENT}, typ=typ)).client == CLIENT


def test_iat_far_in_the_future_is_accepted() -> None:
    assert verify(sign({"client": CLIENT, "iat": NOW + 10 * 365 * 86400})).client == CLIENT


def test_magento_file_token_and_thirty_day_exp() -> None:
    token = sign({"client": CLIENT, "iat": int(NOW), "exp": int(NOW) + 30 * 86400})
    result = verify(token, request_path="/api-ext/files/draft/x/print")
    assert result.url_path is None
    assert result.jti is None


def test_padded_segments_accepted() -> None:
    h, p, _s = sign({"client": CLIENT, "x": "ab"}).split(".")
    padded = [seg + "=" * (-len(seg) % 4) for seg in (h, p)]
    mac = hmac.new(API_KEY.encode(), ".".join(padded).encode(), hashlib.sha256).digest()
    token = ".".join([*padded, base64.urlsafe_b64encode(mac).decode()])
    assert verify(token).client == CLIENT


def test_verified_without_now_uses_the_clock() -> None:
    assert verify_token(sign({"client": CLIENT}), lookup).client == CLIENT


# --- algorithms and header ------------------------------------------------------------------


@pytest.mark.parametrize("alg", ["HS384", "HS512"])
def test_other_hmac_algorithms_refused(alg: str) -> None:
    with pytest.raises(UnsupportedAlgorithm, match=alg):
        verify(sign({"client": CLIENT}, {"alg": alg}))


@pytest.mark.parametrize("alg", ["none", "None", "RS256", "ES256", "hs256", 256, None, ["HS256"]])
def test_alg_confusion_refused(alg: Any) -> None:
    with pytest.raises(UnsupportedAlgorithm, match="alg must be HS256"):
        verify(craft({"alg": alg, "typ": "JWT"}, {"client": CLIENT}))


def test_alg_none_with_empty_signature_refused() -> None:
    h = b64(json.dumps({"alg": "none"}).encode())
    p = b64(json.dumps({"client": CLIENT}).encode())
    with pytest.raises(UnsupportedAlgorithm, match="'none'"):
        verify(f"{h}.{p}.")


def test_missing_alg_refused() -> None:
    with pytest.raises(UnsupportedAlgorithm, match="no 'alg'"):
        verify(craft({"typ": "JWT"}, {"client": CLIENT}))


@pytest.mark.parametrize("crit", [["exp"], [], "b64", None])
def test_any_crit_refused(crit: Any) -> None:
    with pytest.raises(UnsupportedCritical):
        verify(craft({"alg": "HS256", "crit": crit, "exp": 1}, {"client": CLIENT}))


@pytest.mark.parametrize("typ", ["JWS", "", 1, None, "at+jwt"])
def test_wrong_typ_refused(typ: Any) -> None:
    with pytest.raises(InvalidClaim, match="typ"):
        verify(craft({"alg": "HS256", "typ": typ}, {"client": CLIENT}))


def test_kid_must_be_a_string() -> None:
    """PyJWS refuses a non-string ``kid``; the shop sees it as a claim error."""
    with pytest.raises(InvalidClaim, match="kid must be a string"):
        verify(craft({"alg": "HS256", "kid": 7}, {"client": CLIENT}))


def test_crit_that_pyjwt_understands_is_still_refused() -> None:
    with pytest.raises(UnsupportedCritical, match="b64"):
        verify(craft({"alg": "HS256", "b64": True, "crit": ["b64"]}, {"client": CLIENT}))


@pytest.mark.parametrize("payload", ['{"client": "Ab3dEf9h"}', ""])
def test_unencoded_payload_refused(payload: str) -> None:
    h = b64(json.dumps({"alg": "HS256", "b64": False}).encode())
    p = b64(payload.encode())
    mac = hmac.new(API_KEY.encode(), f"{h}.{p}".encode(), hashlib.sha256).digest()
    with pytest.raises(MalformedToken, match="b64"):
        verify(f"{h}.{p}.{b64(mac)}")
    h = b64(json.dumps({"alg": "HS256", "b64": False, "crit": ["b64"]}).encode())
    with pytest.raises(UnsupportedCritical):
        verify(f"{h}.{p}.{b64(mac)}")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", '[1, {"a": NaN}]'])
def test_header_with_non_finite_numbers_refused(value: str) -> None:
    header = b64(f'{{"alg": "HS256", "x": {value}}}'.encode())
    with pytest.raises(MalformedToken, match="header"):
        verify(craft(header, b64(b'{"client": "Ab3dEf9h"}'), raw=True))


# --- format ---------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["", "a", "a.b", "a.b.c.d", "a.b.c.d.e", "...."])
def test_wrong_segment_count(token: str) -> None:
    with pytest.raises(MalformedToken) as info:
        verify(token)
    assert info.value.status == 400


def test_four_segments_of_a_valid_token() -> None:
    with pytest.raises(MalformedToken, match="three"):
        verify(sign({"client": CLIENT}) + ".x")


@pytest.mark.parametrize(
    "mangle",
    [
        lambda h, p, s: f"{h}+.{p}.{s}",  # standard base64 alphabet
        lambda h, p, s: f"{h}.{p}/.{s}",
        lambda h, p, s: f"{h}.{p}.{s}!",
        lambda h, p, s: f"{h} .{p}.{s}",
        lambda h, p, s: f"{h}.{p}.{s}\n",
        lambda h, p, s: f"{h}.{p}.{s}{'A' * ((1 - len(s)) % 4)}",  # length 4n+1
        lambda h, p, s: f"{h}=.{p}.{s}" if len(h) % 4 == 0 else f"{h}===.{p}.{s}",
        lambda h, p, s: f"{h}.{p}.{s}é",
    ],
)
def test_bad_base64url(mangle: Any) -> None:
    h, p, s = sign({"client": CLIENT}).split(".")
    with pytest.raises(MalformedToken):
        verify(mangle(h, p, s))


def test_non_canonical_base64_signature_refused() -> None:
    token = sign({"client": CLIENT})
    h, p, s = token.split(".")
    assert len(s) % 4 == 3  # 32 bytes -> 43 characters; the last carries 2 unused bits
    alphabet = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"
    twin = alphabet[alphabet.index(s[-1]) ^ 1]
    assert base64.urlsafe_b64decode(s + "=") == base64.urlsafe_b64decode(s[:-1] + twin + "=")
    with pytest.raises(MalformedToken, match="canonical"):
        verify(f"{h}.{p}.{s[:-1]}{twin}")


@pytest.mark.parametrize(
    "header",
    [b"", b"[]", b"1", b'"HS256"', b"null", b"{", b"\xff\xfe{}", b'{"alg": NaN}'],
)
def test_header_not_a_json_object(header: bytes) -> None:
    with pytest.raises(MalformedToken, match="header"):
        verify(craft(b64(header), b64(b'{"client": "Ab3dEf9h"}'), raw=True))


@pytest.mark.parametrize(
    "payload",
    [
        b"[]",
        b'["client"]',
        b"3.5",
        b"true",
        b'{"client": "Ab3dEf9h", "exp": Infinity}',
        b'{"client": "Ab3dEf9h", "exp": -Infinity}',
        b'{"client": "Ab3dEf9h", "exp": 1e999}',
        b'{"client": "Ab3dEf9h"} trailing',
        '{"client": "Ab3dEf9h"}'.encode("utf-16"),
        b"\xc3\x28",
        b"[" * 3000 + b"]" * 3000,
        b'{"a":' * 1000 + b"1" + b"}" * 1000,
    ],
)
def test_payload_not_a_json_object(payload: bytes) -> None:
    header = b64(b'{"alg":"HS256"}')
    with pytest.raises(MalformedToken, match="payload"):
        verify(craft(header, b64(payload), raw=True))


def test_oversize_token_refused_before_parsing() -> None:
    big = sign({"client": CLIENT, "pad": "x" * 7000})
    assert len(big) > tokens.MAX_TOKEN_LENGTH
    with pytest.raises(MalformedToken, match="8192"):
        verify(big)
    with pytest.raises(MalformedToken, match="limit"):
        verify("." * 10_000)


def test_token_just_under_the_limit_is_parsed() -> None:
    base = sign({"client": CLIENT, "pad": ""})
    pad = "x" * ((tokens.MAX_TOKEN_LENGTH - len(base)) * 3 // 4)
    token = sign({"client": CLIENT, "pad": pad})
    while len(token) < tokens.MAX_TOKEN_LENGTH:
        pad += "x"
        token = sign({"client": CLIENT, "pad": pad})
    if len(token) > tokens.MAX_TOKEN_LENGTH:
        token = sign({"client": CLIENT, "pad": pad[:-1]})
    assert len(token) <= tokens.MAX_TOKEN_LENGTH
    assert verify(token).client == CLIENT


# --- client, key and signature --------------------------------------------------------------


def test_missing_client() -> None:
    with pytest.raises(MissingClaim, match="client"):
        verify(sign({"user": "u"}))


@pytest.mark.parametrize("client", [5, "", None, ["Ab3dEf9h"], {"id": 1}, True])
def test_client_of_wrong_type(client: Any) -> None:
    with pytest.raises(InvalidClaim, match="client"):
        verify(sign({"client": client}))


def test_unknown_client() -> None:
    with pytest.raises(UnknownClient, match="Nobody12"):
        verify(sign({"client": "Nobody12"}))


def test_disabled_client_whose_lookup_returns_none_or_empty() -> None:
    token = sign({"client": CLIENT})
    with pytest.raises(UnknownClient):
        verify_token(token, lambda _c: None, now=NOW)
    with pytest.raises(UnknownClient):
        verify_token(token, lambda _c: "", now=NOW)


@pytest.mark.parametrize(
    "key",
    [
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYI\n-----END PUBLIC KEY-----",
        '{"kty": "oct", "k": "c2VjcmV0"}',
        "key-with-a-lone-surrogate-\ud800",
    ],
)
def test_stored_key_unusable_as_an_hmac_secret(key: str) -> None:
    """PyJWT will not use key material of another kind as an HMAC secret; nor will pps."""
    token = craft({"alg": "HS256"}, {"client": CLIENT}, key=key.encode("utf-8", "replace").decode())
    with pytest.raises(UnknownClient, match="unusable"):
        verify_token(token, lambda _c: key, now=NOW)


def test_every_token_of_a_key_is_checked_with_that_key() -> None:
    """The per-key cache never lets one key's token pass with another's."""
    for _round in range(2):
        assert verify(sign({"client": CLIENT})).client == CLIENT
        assert verify(sign({"client": "Other123"}, key=KEYS["Other123"])).client == "Other123"
        with pytest.raises(InvalidSignature):
            verify(sign({"client": "Other123"}, key=API_KEY))


def test_a_token_seen_before_is_verified_again_with_the_current_key() -> None:
    """Decoded tokens are kept for reuse; their signature and claims are checked every time."""
    token = sign({"client": CLIENT, "exp": NOW + 60, "urlPath": "/a"})
    first = verify(token, request_path="/a")
    first.claims["client"] = "changed by a caller"
    again = verify(token, request_path="/a")
    assert again.client == CLIENT and again.claims["client"] == CLIENT
    with pytest.raises(InvalidSignature):  # the key was rotated since
        verify_token(token, lambda _c: KEYS["Other123"], now=NOW)
    with pytest.raises(ExpiredToken):
        verify(token, now=NOW + 3600, request_path="/a")
    with pytest.raises(UrlPathMismatch):
        verify(token, request_path="/b")


def test_wrong_key() -> None:
    with pytest.raises(InvalidSignature) as info:
        verify(sign({"client": CLIENT}, key="some-other-key-of-sufficient-length!!"))
    assert info.value.status == 401


def test_key_of_another_client() -> None:
    with pytest.raises(InvalidSignature):
        verify(sign({"client": CLIENT}, key=KEYS["Other123"]))


def test_latin1_encoded_key_is_not_accepted() -> None:
    h, p = sign({"client": CLIENT}).split(".")[:2]
    mac = hmac.new(API_KEY.encode("latin-1"), f"{h}.{p}".encode(), hashlib.sha256).digest()
    with pytest.raises(InvalidSignature):
        verify(f"{h}.{p}.{b64(mac)}")


def test_tampered_payload() -> None:
    h, _p, s = sign({"client": CLIENT, "user": "alice"}).split(".")
    forged = b64(json.dumps({"client": CLIENT, "user": "admin"}).encode())
    with pytest.raises(InvalidSignature):
        verify(f"{h}.{forged}.{s}")


def test_tampered_header() -> None:
    """The MAC covers the header too: a jti swapped in the header breaks it."""
    _h, p, s = sign({"client": CLIENT}, {"jti": "one"}).split(".")
    forged = b64(json.dumps({"alg": "HS256", "typ": "JWT", "jti": "two"}).encode())
    with pytest.raises(InvalidSignature):
        verify(f"{forged}.{p}.{s}")


@pytest.mark.parametrize("signature", ["", "AA", b64(b"\x00" * 32), b64(b"\x00" * 64)])
def test_empty_or_garbage_signature(signature: str) -> None:
    h, p, _s = sign({"client": CLIENT}).split(".")
    with pytest.raises(InvalidSignature):
        verify(f"{h}.{p}.{signature}")


def test_unsigned_token_learns_nothing_about_expiry() -> None:
    token = sign({"client": CLIENT, "exp": NOW - 3600}, key="not-the-key-not-the-key-not-the-key")
    with pytest.raises(InvalidSignature):
        verify(token)


def test_lookup_key_receives_the_client_claim() -> None:
    seen: list[str] = []

    def record(client: str) -> str | None:
        seen.append(client)
        return API_KEY

    verify_token(sign({"client": CLIENT}), record, now=NOW)
    assert seen == [CLIENT]


# --- time -----------------------------------------------------------------------------------


def test_expired_beyond_leeway() -> None:
    with pytest.raises(ExpiredToken, match=r"expired at 2024-04-05T19:34:07Z \(leeway 30 s\)"):
        verify(sign({"client": CLIENT, "exp": NOW - 31}))


def test_expired_within_leeway_accepted() -> None:
    assert verify(sign({"client": CLIENT, "exp": NOW - 29.5})).exp == NOW - 29.5


def test_custom_leeway() -> None:
    token = sign({"client": CLIENT, "exp": NOW - 5})
    with pytest.raises(ExpiredToken, match="leeway 0 s"):
        verify(token, leeway=0)
    assert verify(token, leeway=10).client == CLIENT


def test_nbf_in_the_future() -> None:
    with pytest.raises(NotYetValid, match="not valid before"):
        verify(sign({"client": CLIENT, "nbf": NOW + 120}))
    assert verify(sign({"client": CLIENT, "nbf": NOW + 20})).client == CLIENT


@pytest.mark.parametrize("value", [1e308, -1e308, -1, 0, 10**30, -(10**400), 2**63])
def test_extreme_times_do_not_crash(value: float) -> None:
    for claim in ("exp", "nbf"):
        with contextlib.suppress(ExpiredToken, NotYetValid, InvalidClaim):
            verify(sign({"client": CLIENT, claim: value}))
    if abs(value) <= 10**308:  # representable as a float
        assert verify(sign({"client": CLIENT, "iat": value})).client == CLIENT


def test_huge_exp_is_accepted_and_ttl_capped() -> None:
    result = verify(sign({"client": CLIENT, "exp": 1e308}))
    assert remaining_lifetime(result, NOW, 30, 3600) == tokens.MAX_NONCE_TTL


def test_exp_beyond_float_range() -> None:
    with pytest.raises(InvalidClaim, match="out of range"):
        verify(sign({"client": CLIENT, "exp": 10**400}))


@pytest.mark.parametrize("claim", ["exp", "nbf", "iat"])
@pytest.mark.parametrize("value", [[], "x", "1712345678", True, False, None, {}])
def test_time_claims_must_be_numbers(claim: str, value: Any) -> None:
    with pytest.raises(InvalidClaim, match=claim):
        verify(sign({"client": CLIENT, claim: value}))


# --- jti, urlPath and string claims ---------------------------------------------------------


def test_conflicting_jti() -> None:
    with pytest.raises(ConflictingJti):
        verify(sign({"client": CLIENT, "jti": "a"}, {"jti": "b"}))


@pytest.mark.parametrize("jti", [7, "", None, ["a"], True, "x" * 257])
@pytest.mark.parametrize("where", ["header", "payload"])
def test_invalid_jti(jti: Any, where: str) -> None:
    header = {"jti": jti} if where == "header" else {}
    claims = {"client": CLIENT, **({"jti": jti} if where == "payload" else {})}
    with pytest.raises(InvalidClaim, match="jti"):
        verify(sign(claims, header))


def test_jti_of_max_length_accepted() -> None:
    assert verify(sign({"client": CLIENT, "jti": "x" * 256})).jti == "x" * 256


def test_url_path_match() -> None:
    path = "/api-ext/files/draft/abc/print"
    assert verify(sign({"client": CLIENT, "urlPath": path}), request_path=path).url_path == path


@pytest.mark.parametrize(
    "request_path",
    [
        "/api-ext/files/draft/abc/low-res",
        "/api-ext/files/draft/abc/print/",
        "/API-EXT/files/draft/abc/print",
        "",
    ],
)
def test_url_path_mismatch(request_path: str) -> None:
    token = sign({"client": CLIENT, "urlPath": "/api-ext/files/draft/abc/print"})
    with pytest.raises(UrlPathMismatch):
        verify(token, request_path=request_path)


def test_url_path_not_checked_without_request_path() -> None:
    assert verify(sign({"client": CLIENT, "urlPath": "/x"})).url_path == "/x"


@pytest.mark.parametrize("claim", ["user", "redirect", "urlPath"])
@pytest.mark.parametrize("value", [{}, 5, ["a"], True])
def test_string_claims_of_wrong_type(claim: str, value: Any) -> None:
    with pytest.raises(InvalidClaim, match=claim):
        verify(sign({"client": CLIENT, claim: value}))


@pytest.mark.parametrize("claim", ["user", "redirect", "urlPath"])
def test_null_string_claims_count_as_absent(claim: str) -> None:
    """PHP clients write ``withClaim('redirect', null)``; that must not break the token."""
    attribute = {"urlPath": "url_path"}.get(claim, claim)
    assert getattr(verify(sign({"client": CLIENT, claim: None})), attribute) is None


# --- errors and helpers ---------------------------------------------------------------------


def test_error_hierarchy_and_status() -> None:
    for cls in (
        UnsupportedAlgorithm,
        UnsupportedCritical,
        InvalidClaim,
        MissingClaim,
        UnknownClient,
        InvalidSignature,
        ExpiredToken,
        NotYetValid,
        ConflictingJti,
        UrlPathMismatch,
        ReplayedToken,
    ):
        assert issubclass(cls, TokenError)
        assert cls("why").status == 401
        assert cls("why").reason == "why"
    assert MalformedToken("x").status == 400


def test_remaining_lifetime() -> None:
    token = verify(sign({"client": CLIENT, "exp": NOW + 100.2}))
    assert remaining_lifetime(token, NOW, 30, 3600) == 131
    expired_in_leeway = verify(sign({"client": CLIENT, "exp": NOW - 30}))
    assert remaining_lifetime(expired_in_leeway, NOW, 30, 3600) == 1
    no_exp = verify(sign({"client": CLIENT}))
    assert remaining_lifetime(no_exp, NOW, 30, 3600) == 3600


def test_long_values_are_shortened_in_reasons() -> None:
    with pytest.raises(UnknownClient) as info:
        verify(sign({"client": "c" * 500}))
    assert len(info.value.reason) < 120


# --- fuzz -----------------------------------------------------------------------------------

_JSON_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    1e308,
    -1e308,
    10**40,
    "",
    "x",
    "HS256",
    CLIENT,
    [],
    {},
    [1, [2]],
    {"a": {}},
    "\ud800",
]
_KEYS = ["alg", "typ", "crit", "jti", "kid", "client", "user", "redirect", "urlPath"]
_KEYS += ["exp", "nbf", "iat", "x"]


def _random_json(rng: random.Random) -> Any:
    shape = rng.random()
    if shape < 0.7:
        obj: dict[str, Any] = {}
        for key in rng.sample(_KEYS, rng.randint(0, len(_KEYS))):
            obj[key] = rng.choice(_JSON_VALUES)
        if rng.random() < 0.5:
            obj["alg"] = "HS256"
        if rng.random() < 0.5:
            obj["client"] = CLIENT
        return obj
    return rng.choice(_JSON_VALUES)


def _random_segment(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.4:
        return b64(json.dumps(_random_json(rng)).encode("utf-8", "surrogatepass"))
    if kind < 0.6:
        return b64(rng.randbytes(rng.randint(0, 40)))
    alphabet = string.printable + "=é\x00\ud800"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))


def test_fuzz_only_token_errors_escape() -> None:
    rng = random.Random(20240405)
    outcomes: dict[str, int] = {}
    for i in range(3000):
        if i % 3 == 0:
            token = rng.randbytes(rng.randint(0, 80)).decode("latin-1")
        elif i % 3 == 1:
            token = ".".join(_random_segment(rng) for _ in range(rng.choice([2, 3, 3, 3, 4])))
        else:
            header, payload = _random_json(rng), _random_json(rng)
            try:
                token = craft(header, payload)
            except (TypeError, ValueError):
                continue
        try:
            verify(token, request_path=rng.choice([None, "/x"]))
            outcomes["ok"] = outcomes.get("ok", 0) + 1
        except TokenError as exc:
            assert isinstance(exc.reason, str) and exc.reason
            outcomes[type(exc).__name__] = outcomes.get(type(exc).__name__, 0) + 1
    # The generator reaches deep into the checks, not only the parser.
    assert {"MalformedToken", "InvalidClaim", "UnsupportedAlgorithm"} <= outcomes.keys()
