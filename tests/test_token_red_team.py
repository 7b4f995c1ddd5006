"""Tokens found bad by a red-team pass: lone surrogates and login tokens past the nonce TTL.

Through the real app (``GET /auth``, a ``/api-ext/files/...`` endpoint) with real Redis and a
real database, and at the level of :mod:`pps.auth.tokens`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import time
import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from test_auth import assert_error_page, sign
from test_files import assert_json_error, file_url, make_draft, put_draft_file

from pps.auth.tokens import (
    ExpiredToken,
    MalformedToken,
    MissingClaim,
    VerifiedToken,
    check_login_age,
    remaining_lifetime,
    verify_token,
)
from pps.platform.models import Client, Draft, Template, User
from pps.platform.repository.sql import SqlRepository

LONE = "\ud800"  # a high surrogate with no low one after it; json.dumps writes "\ud800"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def craft(header: dict[str, Any], payload: dict[str, Any], key: str) -> str:
    """Signed over JSON with ``\\ud800`` escapes, which every JOSE library writes as given."""
    h = _b64(json.dumps(header).encode("ascii"))
    p = _b64(json.dumps(payload).encode("ascii"))
    mac = hmac.new(key.encode(), f"{h}.{p}".encode(), hashlib.sha256).digest()
    return f"{h}.{p}.{_b64(mac)}"


def surrogate_cases(client: str, user: str) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """(header, payload) pairs with a lone surrogate in each place a token can carry one."""
    header = {"alg": "HS256", "typ": "JWT"}
    payload = {"client": client, "user": user, "iat": time.time()}
    jti = uuid.uuid4().hex
    return {
        "header jti": ({**header, "jti": LONE}, payload),
        "header kid": ({**header, "kid": "k" + LONE, "jti": jti}, payload),
        "header alg": ({**header, "alg": LONE, "jti": jti}, payload),
        "header typ": ({**header, "typ": LONE, "jti": jti}, payload),
        "header name": ({**header, LONE: 1, "jti": jti}, payload),
        "client": ({**header, "jti": jti}, {**payload, "client": client + LONE}),
        "user": ({**header, "jti": jti}, {**payload, "user": LONE}),
        "payload jti": (header, {**payload, "jti": "j" + LONE}),
        "redirect": ({**header, "jti": jti}, {**payload, "redirect": "/editor/" + LONE}),
        "urlPath": ({**header, "jti": jti}, {**payload, "urlPath": "/auth" + LONE}),
        "nested claim": ({**header, "jti": jti}, {**payload, "x": {"y": [LONE]}}),
        "claim name": ({**header, "jti": jti}, {**payload, LONE: "x"}),
        "low surrogate": ({**header, "jti": jti}, {**payload, "user": "\udc00"}),
        "reversed pair": ({**header, "jti": jti}, {**payload, "user": "\udc00\ud800"}),
    }


CASES = list(surrogate_cases("c", "u"))


@pytest.fixture
def template(repo: SqlRepository, tenant: Client) -> Template:
    return repo.create_template(
        tenant.identifier,
        name="Card",
        data_keys=["title"],
        custom_attributes={},
        page_count=1,
        spec={},
    )


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client, user: User, template: Template) -> Draft:
    return make_draft(repo, tenant, user, template, title="Hello")


# -- lone surrogates through the app ---------------------------------------------------------


#: Signed with the tenant's own key (the signature would verify), and by a stranger for the
#: claims read before the signature is checked.
APP_CASES = [(case, "tenant") for case in CASES] + [
    ("client", "stranger"),
    ("header jti", "stranger"),
]


@pytest.mark.parametrize(("case", "signed_by"), APP_CASES)
def test_lone_surrogate_in_a_login_token_is_a_400_page(
    client: FlaskClient, tenant: Client, user: User, case: str, signed_by: str
) -> None:
    header, payload = surrogate_cases(tenant.identifier, user.identifier)[case]
    key = tenant.api_key if signed_by == "tenant" else "s" * 48
    response = client.get("/auth", query_string={"jwt": craft(header, payload, key)})
    body = html.unescape(assert_error_page(response, 400))
    assert "surrogate" in body
    with client.session_transaction() as sess:
        assert "user" not in sess


@pytest.mark.parametrize(("case", "signed_by"), APP_CASES)
def test_lone_surrogate_in_a_file_token_is_a_json_400(
    app: Flask, client: FlaskClient, tenant: Client, draft: Draft, case: str, signed_by: str
) -> None:
    put_draft_file(app, draft, "print", b"%PDF-1.7\n%%EOF\n")
    header, payload = surrogate_cases(tenant.identifier, draft.user_identifier)[case]
    key = tenant.api_key if signed_by == "tenant" else "s" * 48
    response = client.get(file_url(draft), query_string={"jwt": craft(header, payload, key)})
    assert "surrogate" in assert_json_error(response, 400)
    assert "Location" not in response.headers


def test_a_proper_surrogate_pair_still_works(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    """An emoji is written ``\\ud83d\\ude00`` by JSON encoders; that is valid UTF-16."""
    payload = {"client": tenant.identifier, "user": user.identifier, "iat": time.time()}
    token = craft(
        {"alg": "HS256", "jti": uuid.uuid4().hex}, {**payload, "note": "😀"}, tenant.api_key
    )
    assert "\\ud83d\\ude00" in base64.urlsafe_b64decode(token.split(".")[1] + "==").decode()
    assert client.get("/auth", query_string={"jwt": token}).status_code == 200


# -- lone surrogates at the token level ------------------------------------------------------

KEY = "k" * 40


@pytest.mark.parametrize("case", CASES)
def test_verify_token_refuses_lone_surrogates_as_malformed(case: str) -> None:
    header, payload = surrogate_cases("Ab3dEf9h", "u")[case]
    seen: list[str] = []

    def lookup(client: str) -> str:
        seen.append(client)
        return KEY

    with pytest.raises(MalformedToken, match="surrogate") as info:
        verify_token(craft(header, payload, KEY), lookup)
    assert info.value.status == 400
    assert seen == []  # refused before any key was looked up
    assert LONE not in info.value.reason and "\udc00" not in info.value.reason
    info.value.reason.encode("utf-8")  # printable in any page or log


def test_lone_surrogate_in_the_token_string_itself() -> None:
    token = craft({"alg": "HS256"}, {"client": "Ab3dEf9h"}, KEY)
    for broken in (token[:5] + LONE + token[5:], token + LONE, LONE):
        with pytest.raises(MalformedToken):
            verify_token(broken, lambda _c: KEY)


# -- login tokens older than the nonce TTL ---------------------------------------------------

NOW = 1_712_345_678.0
TTL = 30 * 24 * 3600


def verified(**claims: Any) -> VerifiedToken:
    token = craft({"alg": "HS256", "jti": "n"}, {"client": "Ab3dEf9h", **claims}, KEY)
    return verify_token(token, lambda _c: KEY, now=NOW)


def test_login_token_issued_longer_ago_than_the_nonce_ttl_is_refused() -> None:
    token = verified(iat=NOW - TTL - 31)
    with pytest.raises(ExpiredToken, match="issued at 2024-03-06T19:34:07Z") as info:
        check_login_age(token, now=NOW, leeway=30, max_age=TTL)
    assert "30 days" in info.value.reason and "PPS_NONCE_TTL" in info.value.reason
    assert info.value.status == 401
    # Also with an exp still ahead: a login token is used within seconds of signing.
    with pytest.raises(ExpiredToken):
        check_login_age(verified(iat=NOW - TTL - 31, exp=NOW + 60), now=NOW, leeway=30, max_age=TTL)


def test_login_token_within_the_nonce_ttl_or_from_the_future_passes() -> None:
    for iat in (NOW - TTL - 29, NOW - 5, NOW, NOW + 10 * 365 * 86400):
        check_login_age(verified(iat=iat), now=NOW, leeway=30, max_age=TTL)
    check_login_age(verified(exp=NOW + 60), now=NOW, leeway=30, max_age=TTL)


def test_login_token_without_exp_and_iat_is_refused() -> None:
    with pytest.raises(MissingClaim, match="'iat'") as info:
        check_login_age(verified(), now=NOW, leeway=30, max_age=TTL)
    assert "PPS_NONCE_TTL" in info.value.reason


def test_nonce_of_a_token_without_exp_outlives_its_acceptance() -> None:
    """The jti is remembered at least until the iat check refuses the token by itself."""
    assert remaining_lifetime(verified(iat=NOW), NOW, 30, TTL) == TTL + 30
    future = verified(iat=NOW + 3600)
    assert remaining_lifetime(future, NOW, 30, TTL) == TTL + 3600 + 30
    assert remaining_lifetime(verified(iat=NOW - 3600), NOW, 30, TTL) == TTL
    assert remaining_lifetime(verified(), NOW, 30, TTL) == TTL


def _login(tenant: Client, user: User, **claims: Any) -> str:
    payload = {"client": tenant.identifier, "user": user.identifier, **claims}
    return sign(tenant.api_key, payload, jti=uuid.uuid4().hex)


def test_app_refuses_a_login_token_older_than_the_nonce_ttl(
    app: Flask, client: FlaskClient, tenant: Client, user: User
) -> None:
    ttl = app.extensions["pps"].settings.nonce_ttl
    old = _login(tenant, user, iat=time.time() - ttl - 3600)
    body = html.unescape(assert_error_page(client.get("/auth", query_string={"jwt": old}), 401))
    assert "issued at" in body and "PPS_NONCE_TTL" in body
    without_times = _login(tenant, user)
    body = html.unescape(
        assert_error_page(client.get("/auth", query_string={"jwt": without_times}), 401)
    )
    assert "'iat'" in body
    recent = _login(tenant, user, iat=time.time() - ttl + 3600)
    assert client.get("/auth", query_string={"jwt": recent}).status_code == 200
    with_exp_only = _login(tenant, user, exp=time.time() + 300)
    assert client.get("/auth", query_string={"jwt": with_exp_only}).status_code == 200


def test_file_tokens_are_not_refused_for_their_age(
    app: Flask, client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    """Only logins are limited: the Magento module's file tokens carry no jti and are reused."""
    put_draft_file(app, draft, "print", b"%PDF-1.7\n%%EOF\n")
    ttl = app.extensions["pps"].settings.nonce_ttl
    old = sign(tenant.api_key, {"client": tenant.identifier, "iat": time.time() - 2 * ttl})
    assert client.get(file_url(draft), query_string={"jwt": old}).status_code == 302


# -- a claim named twice -----------------------------------------------------------------------


def test_a_claim_named_twice_is_malformed_before_any_key_is_looked_up() -> None:
    """``{"client": "A", "client": "B"}``: a log or a proxy that reads the first value would
    name another client than the one whose key verified it."""
    h = _b64(json.dumps({"alg": "HS256", "jti": "n"}).encode())
    p = _b64(b'{"client": "Other123", "client": "Ab3dEf9h", "iat": 1712345678}')
    token = f"{h}.{p}.{_b64(hmac.new(KEY.encode(), f'{h}.{p}'.encode(), hashlib.sha256).digest())}"
    seen: list[str] = []

    def lookup(client: str) -> str:
        seen.append(client)
        return KEY

    with pytest.raises(MalformedToken, match="'client' appears twice") as info:
        verify_token(token, lookup, now=NOW)
    assert info.value.status == 400 and seen == []
