"""GET /auth: JWT login as shops' clients sign it, against real Redis and a real database."""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import re
import threading
import time
import uuid
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import quote

import pytest
from api_support import make_draft
from conftest import complete_login, session_cookie_name
from flask import Flask
from flask.testing import FlaskClient
from joserfc import jwt
from joserfc.jwk import OctKey
from joserfc.jws import JWSRegistry
from werkzeug.http import parse_date

from pps.auth.login import SESSION_LIFETIME, key_tag
from pps.platform.ephemeral import nonce_key
from pps.platform.models import Client, User
from pps.platform.repository.sql import SqlRepository
from pps.web.session import PpsSessionInterface

# -- signing as the shops do -------------------------------------------------------------


def sign(
    key: str,
    claims: dict[str, Any],
    *,
    jti: str | None = None,
    jti_in: str = "header",
    header: dict[str, Any] | None = None,
) -> str:
    """A token signed by joserfc; ``jti`` goes in the header, the payload or both."""
    hdr: dict[str, Any] = {"alg": "HS256", "typ": "JWT", **(header or {})}
    payload = dict(claims)
    if jti is not None and jti_in in ("header", "both"):
        hdr["jti"] = jti
    if jti is not None and jti_in in ("payload", "both"):
        payload["jti"] = jti
    registry = JWSRegistry(algorithms=[hdr["alg"]], strict_check_header=False)
    return jwt.encode(hdr, payload, OctKey.import_key(key), registry=registry)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def craft(header: dict[str, Any], payload: dict[str, Any], key: str | None) -> str:
    """Hand-made token for shapes joserfc refuses to produce (alg none)."""
    h = _b64(json.dumps(header).encode())
    p = _b64(json.dumps(payload).encode())
    if key is None:
        return f"{h}.{p}."
    mac = hmac.new(key.encode(), f"{h}.{p}".encode(), hashlib.sha256).digest()
    return f"{h}.{p}.{_b64(mac)}"


def iat() -> float:
    """lcobucci/jwt 4 writes iat as a float with microseconds."""
    return round(time.time(), 6)


def b64_url(url: str) -> str:
    """An editor callback as shops encode it: standard base64 with padding, URL-encoded."""
    return quote(base64.b64encode(url.encode()).decode(), safe="")


def fresh_jti() -> str:
    return uuid.uuid4().hex


# -- fixtures ----------------------------------------------------------------------------


@pytest.fixture
def user(repo: SqlRepository, tenant: Client) -> User:
    return repo.create_user(tenant.identifier, {"first_name": "Ada"})


@pytest.fixture
def draft_hash(repo: SqlRepository, tenant: Client, user: User) -> str:
    template = repo.create_template(
        tenant.identifier,
        name="Business card",
        data_keys=["name", "email"],
        custom_attributes={},
        page_count=1,
        spec={},
    )
    draft = make_draft(
        repo,
        tenant,
        user,
        template,
        api_default_values={"name": "Ada Lovelace", "email": "ada@example.com"},
        custom_attributes={},
    )
    return draft.draft_hash


def login_claims(tenant: Client, user: User, **extra: Any) -> dict[str, Any]:
    return {"client": tenant.identifier, "user": user.identifier, "iat": iat(), **extra}


def login_token(tenant: Client, user: User, **extra: Any) -> str:
    """A single-use login token for ``user`` (a fresh ``jti`` in the header)."""
    return sign(tenant.api_key, login_claims(tenant, user, **extra), jti=fresh_jti())


def set_cookie(response: Any) -> str:
    return ";".join(response.headers.getlist("Set-Cookie"))


def assert_error_page(response: Any, status: int) -> str:
    """An HTML error page with the request id, and no session handed out."""
    assert response.status_code == status
    assert response.mimetype == "text/html"
    body: str = response.get_data(as_text=True)
    request_id = response.headers["X-Request-ID"]
    assert request_id and request_id in body
    assert session_cookie_name() not in set_cookie(response)
    return body


# -- the happy path ----------------------------------------------------------------------


HANDOFF = re.compile(r"[?&]handoff=([A-Za-z0-9_-]{43})$")


def handoff_code(location: str, redirect: str) -> str:
    """The handoff code /auth appended to ``redirect``; fails when anything else changed."""
    assert location.startswith(redirect), (location, redirect)
    found = HANDOFF.fullmatch(location[len(redirect) :])
    assert found, location
    return found.group(1)


def test_login_hands_off_to_the_editor_which_sets_the_session(
    client: FlaskClient, tenant: Client, user: User, draft_hash: str
) -> None:
    callback = "https://shop-a.example/checkout/cart?item=1&x=<y>"
    editor = f"/editor/{draft_hash}/edit?callback={b64_url(callback)}&locale=de"
    redirect = f"http://localhost{editor}"
    token = login_token(tenant, user, redirect=redirect)

    response = client.get(f"/auth?jwt={token}")

    assert response.status_code == 302
    code = handoff_code(response.headers["Location"], redirect)
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert session_cookie_name() not in set_cookie(response)  # the editor sets it, on its origin

    exchanged = client.get(f"{editor}&handoff={code}")
    assert exchanged.status_code == 303
    assert exchanged.headers["Location"] == editor  # the code leaves the address bar
    assert exchanged.headers["Cache-Control"] == "no-store"
    assert exchanged.headers["Referrer-Policy"] == "no-referrer"
    cookie = set_cookie(exchanged)
    assert f"{session_cookie_name()}=" in cookie
    assert "HttpOnly" in cookie
    # http://localhost is a secure context for browsers: the cookie a shop's frame keeps.
    assert "SameSite=None" in cookie
    assert "Secure" in cookie
    assert "Partitioned" in cookie
    assert "Expires=" in cookie  # a permanent session with a lifetime

    page = client.get(editor)
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "Business card" in text
    assert 'value="Ada Lovelace"' in text
    assert 'value="ada@example.com"' in text
    assert ">Name</label>" in text and ">Email</label>" in text
    assert 'href="https://shop-a.example/checkout/cart?item=1&amp;x=&lt;y&gt;"' in text
    assert '<html lang="de">' in text


def test_relative_redirect_is_kept_relative(
    client: FlaskClient, tenant: Client, user: User, draft_hash: str
) -> None:
    redirect = f"/editor/{draft_hash}"
    token = login_token(tenant, user, redirect=redirect)
    response = client.get("/auth", query_string={"jwt": token})
    assert response.status_code == 302
    code = handoff_code(response.headers["Location"], redirect)
    assert client.get(redirect, query_string={"handoff": code}).headers["Location"] == redirect
    assert client.get(redirect).status_code == 200


@pytest.mark.parametrize("step", ["", "edit/", "preview/"])
def test_an_editor_redirect_with_a_trailing_slash_opens_the_editor(
    client: FlaskClient, tenant: Client, user: User, draft_hash: str, step: str
) -> None:
    """``/editor/<hash>/`` counts as an editor target (the login hands off and sets no
    cookie), so the editor must answer it: a 404 there would spend the single-use login on
    a "page not found" and leave the customer logged out."""
    redirect = f"/editor/{draft_hash}/{step}"
    query = "?locale=de&callback=" + b64_url("https://shop-a.example/cart")
    token = login_token(tenant, user, redirect=redirect + query)
    response = client.get("/auth", query_string={"jwt": token})
    assert response.status_code == 302
    code = handoff_code(response.headers["Location"], redirect + query)

    slashed = client.get(f"{redirect}{query}&handoff={code}")
    assert slashed.status_code == 308
    canonical = redirect.rstrip("/")
    assert slashed.headers["Location"] == f"{canonical}{query}&handoff={code}"
    assert slashed.headers["Cache-Control"] == "no-store"  # the URL carries the code
    assert slashed.headers["Referrer-Policy"] == "no-referrer"
    assert session_cookie_name() not in set_cookie(slashed)

    exchanged = client.get(slashed.headers["Location"])
    assert exchanged.status_code == 303
    assert exchanged.headers["Location"] == canonical + query
    assert client.get(canonical + query).status_code == 200


def test_redirect_to_allowed_shop_origin(client: FlaskClient, tenant: Client, user: User) -> None:
    redirect = "https://shop-a.example/account?tab=designs"
    token = login_token(tenant, user, redirect=redirect)
    response = client.get("/auth", query_string={"jwt": token})
    assert response.status_code == 302
    assert response.headers["Location"] == redirect


def test_without_redirect_a_landing_page_says_logged_in(
    client: FlaskClient, tenant: Client, user: User
) -> None:
    token = login_token(tenant, user)
    response = client.get("/auth", query_string={"jwt": token})
    assert response.status_code == 200
    assert "logged in" in response.get_data(as_text=True)
    assert f"{session_cookie_name()}=" in set_cookie(response)
    assert response.headers["Cache-Control"] == "no-store"
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]


@pytest.mark.parametrize("jti_in", ["header", "payload", "both"])
def test_compat_token_shapes(client: FlaskClient, tenant: Client, user: User, jti_in: str) -> None:
    """jti anywhere, float iat, no exp, no typ, an extra iss, or an exp 30 days away."""
    claims = login_claims(tenant, user, iss="https://shop-a.example")
    if jti_in == "both":
        claims["exp"] = iat() + 30 * 24 * 3600
    token = sign(tenant.api_key, claims, jti=fresh_jti(), jti_in=jti_in)
    assert client.get("/auth", query_string={"jwt": token}).status_code == 200


def test_login_renews_the_session(client: FlaskClient, tenant: Client, user: User) -> None:
    # Only the editor's paths (and /auth) have a session; seen from there.
    with client.session_transaction("/editor/") as sess:
        sess["planted"] = "by an attacker"
        sess["user"] = "someone-else"
    token = login_token(tenant, user)
    assert client.get("/auth", query_string={"jwt": token}).status_code == 200
    with client.session_transaction("/editor/") as sess:
        assert "planted" not in sess
        assert sess["user"] == user.identifier
        assert sess["client"] == tenant.identifier
        assert isinstance(sess["login_at"], int)


def test_a_login_ends_after_its_lifetime_however_busy_the_session(
    app: Flask, tenant: Client, user: User, draft_hash: str
) -> None:
    """Every answer signs the cookie afresh, so only the login's own time can end it."""
    browser = app.test_client()
    token = login_token(tenant, user, redirect=f"/editor/{draft_hash}/edit")
    complete_login(browser, browser.get("/auth", query_string={"jwt": token}))
    editor = f"/editor/{draft_hash}/edit"
    lifetime = SESSION_LIFETIME.total_seconds()

    with browser.session_transaction("/editor/") as sess:
        sess["login_at"] = int(time.time() - lifetime + 60)
    assert browser.get(editor).status_code == 200

    with browser.session_transaction("/editor/") as sess:
        sess["login_at"] = int(time.time() - lifetime - 60)
    refused = browser.get(editor)
    assert refused.status_code == 401 and refused.mimetype == "text/html"
    assert f"{session_cookie_name()}=" in set_cookie(refused)  # signed afresh, and still refused

    with browser.session_transaction("/editor/") as sess:
        del sess["login_at"]
    assert browser.get(editor).status_code == 401


# -- one use only ------------------------------------------------------------------------


def test_replayed_token_is_refused_without_a_session(
    app: Flask, tenant: Client, user: User, draft_hash: str
) -> None:
    token = login_token(tenant, user, redirect=f"/editor/{draft_hash}/edit")
    assert app.test_client().get("/auth", query_string={"jwt": token}).status_code == 302

    second = app.test_client()
    body = assert_error_page(second.get("/auth", query_string={"jwt": token}), 401)
    assert "used already" in body
    assert second.get(f"/editor/{draft_hash}/edit").status_code == 401


def test_concurrent_uses_of_one_token_log_in_exactly_once(
    app: Flask, tenant: Client, user: User, draft_hash: str
) -> None:
    token = login_token(tenant, user, redirect=f"/editor/{draft_hash}/edit")
    workers = 20
    barrier = threading.Barrier(workers)
    statuses: list[int] = []
    handoffs: list[bool] = []
    lock = threading.Lock()

    def use() -> None:
        own_client = app.test_client()
        barrier.wait()
        response = own_client.get("/auth", query_string={"jwt": token})
        with lock:
            statuses.append(response.status_code)
            handoffs.append("handoff=" in response.headers.get("Location", ""))

    threads = [threading.Thread(target=use) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert len(statuses) == workers
    assert statuses.count(302) == 1
    assert statuses.count(401) == workers - 1
    assert handoffs.count(True) == 1


# -- refused tokens ----------------------------------------------------------------------


def _forged(tenant: Client, other: Client, user: User) -> str:
    return sign("x" * 48, login_claims(tenant, user), jti=fresh_jti())


def _other_clients_key(tenant: Client, other: Client, user: User) -> str:
    return sign(other.api_key, login_claims(tenant, user), jti=fresh_jti())


def _expired(tenant: Client, other: Client, user: User) -> str:
    claims = login_claims(tenant, user, exp=time.time() - 3600)
    return sign(tenant.api_key, claims, jti=fresh_jti())


def _not_yet_valid(tenant: Client, other: Client, user: User) -> str:
    claims = login_claims(tenant, user, nbf=time.time() + 3600)
    return sign(tenant.api_key, claims, jti=fresh_jti())


def _alg_none(tenant: Client, other: Client, user: User) -> str:
    return craft({"alg": "none", "jti": fresh_jti()}, login_claims(tenant, user), None)


def _alg_hs512(tenant: Client, other: Client, user: User) -> str:
    return sign(
        tenant.api_key, login_claims(tenant, user), jti=fresh_jti(), header={"alg": "HS512"}
    )


def _missing_user(tenant: Client, other: Client, user: User) -> str:
    return sign(tenant.api_key, {"client": tenant.identifier, "iat": iat()}, jti=fresh_jti())


def _missing_jti(tenant: Client, other: Client, user: User) -> str:
    return sign(tenant.api_key, login_claims(tenant, user))


def _unknown_user(tenant: Client, other: Client, user: User) -> str:
    claims = {"client": tenant.identifier, "user": "Nobody12", "iat": iat()}
    return sign(tenant.api_key, claims, jti=fresh_jti())


def _unknown_client(tenant: Client, other: Client, user: User) -> str:
    claims = {"client": "Unknown1", "user": user.identifier, "iat": iat()}
    return sign(tenant.api_key, claims, jti=fresh_jti())


def _url_path_mismatch(tenant: Client, other: Client, user: User) -> str:
    claims = login_claims(tenant, user, urlPath="/api-ext/files/draft/x/print")
    return sign(tenant.api_key, claims, jti=fresh_jti())


def _malformed(tenant: Client, other: Client, user: User) -> str:
    return "not-a-jwt"


REFUSED = {
    "forged signature": (_forged, 401, "signature"),
    "other client's key": (_other_clients_key, 401, "signature"),
    "expired": (_expired, 401, "expired"),
    "not yet valid": (_not_yet_valid, 401, "not valid before"),
    "alg none": (_alg_none, 401, "HS256"),
    "alg HS512": (_alg_hs512, 401, "HS256"),
    "missing user": (_missing_user, 401, "'user'"),
    "missing jti": (_missing_jti, 401, "jti"),
    "unknown user": (_unknown_user, 401, "Nobody12"),
    "unknown client": (_unknown_client, 401, "Unknown1"),
    "urlPath mismatch": (_url_path_mismatch, 401, "urlPath"),
    "malformed": (_malformed, 400, "segments"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_tokens_show_an_error_page_and_log_nobody_in(
    client: FlaskClient, tenant: Client, other_tenant: Client, user: User, case: str
) -> None:
    make, status, reason = REFUSED[case]
    response = client.get("/auth", query_string={"jwt": make(tenant, other_tenant, user)})
    body = assert_error_page(response, status)
    assert reason in html.unescape(body)
    assert response.headers["Cache-Control"] == "no-store"
    with client.session_transaction("/editor/") as sess:
        assert "user" not in sess


def test_user_of_another_client_is_refused(
    client: FlaskClient, repo: SqlRepository, tenant: Client, other_tenant: Client
) -> None:
    stranger = repo.create_user(other_tenant.identifier, {})
    claims = {"client": tenant.identifier, "user": stranger.identifier, "iat": iat()}
    response = client.get("/auth", query_string={"jwt": sign(tenant.api_key, claims, jti="j1")})
    assert_error_page(response, 401)


def test_missing_jwt_parameter_is_a_400_page(client: FlaskClient) -> None:
    body = assert_error_page(client.get("/auth"), 400)
    assert "no token" in body
    assert_error_page(client.get("/auth?jwt="), 400)


def test_url_path_auth_is_accepted(client: FlaskClient, tenant: Client, user: User) -> None:
    token = login_token(tenant, user, urlPath="/auth")
    assert client.get("/auth", query_string={"jwt": token}).status_code == 200


def test_refused_token_does_not_burn_its_jti(
    app: Flask, client: FlaskClient, tenant: Client, user: User
) -> None:
    """A failed check leaves the nonce unclaimed: a corrected token with the same jti works."""
    jti = fresh_jti()
    bad = {"client": tenant.identifier, "user": "Nobody12", "iat": iat()}
    assert_error_page(
        client.get("/auth", query_string={"jwt": sign(tenant.api_key, bad, jti=jti)}), 401
    )
    expired = login_claims(tenant, user, exp=time.time() - 3600)
    assert_error_page(
        client.get("/auth", query_string={"jwt": sign(tenant.api_key, expired, jti=jti)}), 401
    )
    good = sign(tenant.api_key, login_claims(tenant, user), jti=jti)
    assert client.get("/auth", query_string={"jwt": good}).status_code == 200
    # And now it is claimed, under the client's namespace.
    assert app.extensions["pps"].ephemeral.claim(nonce_key(tenant.identifier, jti), 60) is False


def test_same_jti_of_two_clients_are_independent(
    client: FlaskClient, repo: SqlRepository, tenant: Client, other_tenant: Client, user: User
) -> None:
    other_user = repo.create_user(other_tenant.identifier, {})
    jti = "shared-jti"
    first = sign(tenant.api_key, login_claims(tenant, user), jti=jti)
    second = sign(
        other_tenant.api_key,
        {"client": other_tenant.identifier, "user": other_user.identifier, "iat": iat()},
        jti=jti,
    )
    assert client.get("/auth", query_string={"jwt": first}).status_code == 200
    assert client.get("/auth", query_string={"jwt": second}).status_code == 200


# -- open redirects ----------------------------------------------------------------------

OPEN_REDIRECTS = [
    "https://evil.example/",
    "https://evil.example",
    "//evil.example/path",
    "///evil.example",
    "/\\evil.example",
    "\\\\evil.example",
    "/\t/evil.example",
    "https:evil.example",
    "https:/evil.example",
    "https://shop-a.example@evil.example/",
    "https://shop-a.example.evil.example/",
    "http://shop-a.example/",  # allowed origin is https only
    "https://shop-a.example:8443/",
    "javascript:alert(document.cookie)",
    "JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "ftp://shop-a.example/",
    "evil.example",
    " https://evil.example",
    "https://evil.example\r\nSet-Cookie: x=y",
    "",
]


@pytest.mark.parametrize("target", OPEN_REDIRECTS)
def test_open_redirects_are_refused_and_do_not_burn_the_nonce(
    client: FlaskClient, tenant: Client, user: User, target: str
) -> None:
    jti = fresh_jti()
    token = sign(tenant.api_key, login_claims(tenant, user, redirect=target), jti=jti)
    response = client.get("/auth", query_string={"jwt": token})
    body = assert_error_page(response, 400)
    assert "Location" not in response.headers
    assert "refused" in body
    # The page says where it could not go, escaped.
    assert "<script>alert" not in body

    corrected = sign(
        tenant.api_key, login_claims(tenant, user, redirect="https://shop-a.example/"), jti=jti
    )
    assert client.get("/auth", query_string={"jwt": corrected}).status_code == 302


# -- Redis down --------------------------------------------------------------------------


def test_redis_down_is_503_and_nobody_is_logged_in(
    app_without_redis: Flask, tenant: Client, user: User, draft_hash: str
) -> None:
    browser = app_without_redis.test_client()
    token = login_token(tenant, user, redirect=f"/editor/{draft_hash}/edit")
    response = browser.get("/auth", query_string={"jwt": token})
    assert_error_page(response, 503)
    assert "Location" not in response.headers
    assert browser.get(f"/editor/{draft_hash}/edit").status_code == 401


def test_error_page_has_security_headers(client: FlaskClient) -> None:
    response = client.get("/auth")
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    assert response.headers["X-Frame-Options"] == "DENY"
    assert re.search(r"<style", response.get_data(as_text=True)) is None


def test_head_probe_does_not_use_up_the_login(
    client: FlaskClient, tenant: Client, user: User
) -> None:
    token = login_token(tenant, user)
    probe = client.head("/auth", query_string={"jwt": token})
    assert probe.status_code == 405
    assert probe.headers["Allow"] == "GET, OPTIONS"
    assert session_cookie_name() not in set_cookie(probe)
    # Nor does any answer of /auth advertise HEAD.
    assert sorted(client.options("/auth").headers["Allow"].split(", ")) == ["GET", "OPTIONS"]
    assert client.post("/auth").headers["Allow"] == "GET, OPTIONS"
    assert client.get("/auth", query_string={"jwt": token}).status_code == 200


# -- the login's answer, header by header --------------------------------------------------

#: Every header of the bodiless 302 of a login or file link: no Content-Type, and none of
#: the page headers (CSP, X-Frame-Options, nosniff), which govern a body it does not have.
TOKEN_REDIRECT = {"Content-Length", "Location", "Cache-Control", "Referrer-Policy", "X-Request-ID"}


def header_names(response: Any) -> set[str]:
    names = [name for name, _value in response.headers]
    assert len(names) == len(set(names)), names
    return set(names)


def session_cookie(app: Flask, response: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(session data without its timestamp, cookie attributes) of a login answer."""
    cookies = response.headers.getlist("Set-Cookie")
    assert len(cookies) == 1, cookies
    # http.cookies learns the Partitioned attribute only in Python 3.14.
    partitioned = "; Partitioned" in cookies[0]
    morsel = SimpleCookie(cookies[0].replace("; Partitioned", ""))[session_cookie_name()]
    interface = app.session_interface
    assert isinstance(interface, PpsSessionInterface)
    serializer = interface.get_signing_serializer(app)
    assert serializer is not None
    data = serializer.loads(morsel.value)
    login_at = data.pop("login_at")
    assert abs(login_at - time.time()) < 5
    attributes = {key: morsel[key] for key in morsel if morsel[key]}
    if partitioned:
        attributes["partitioned"] = True
    expires = parse_date(attributes.pop("expires"))
    assert expires is not None
    assert abs(expires.timestamp() - (time.time() + 8 * 3600)) < 5
    return data, attributes


EDITOR_TARGET = "/editor/{draft}/edit?callback=" + b64_url("https://shop-a.example/cart?x=1&y=<2>")
LOGINS = {
    "editor path": EDITOR_TARGET,
    "editor URL": "http://localhost" + EDITOR_TARGET,
    "allowed origin": "https://shop-a.example/back?é=ü",
}


@pytest.mark.parametrize("case", LOGINS)
def test_login_answer_is_a_bodiless_redirect_with_a_fresh_session(
    app: Flask, client: FlaskClient, tenant: Client, user: User, draft_hash: str, case: str
) -> None:
    redirect = LOGINS[case].replace("{draft}", draft_hash)
    response = client.get(
        "/auth", query_string={"jwt": login_token(tenant, user, redirect=redirect)}
    )
    assert response.status_code == 302
    # Browsers follow Location; without a body the answer goes out in one write.
    assert response.headers["Content-Length"] == "0"
    assert response.get_data() == b""
    if case == "allowed origin":
        assert "handoff" not in response.headers["Location"]  # not pps's own editor
        granted = response
    else:  # the editor's exchange of the handoff code hands out the session
        assert header_names(response) == TOKEN_REDIRECT
        code = handoff_code(response.headers["Location"], redirect)
        granted = client.get(EDITOR_TARGET.replace("{draft}", draft_hash) + f"&handoff={code}")
        assert granted.status_code == 303 and granted.get_data() == b""
    assert header_names(granted) == TOKEN_REDIRECT | {"Set-Cookie", "Vary"}
    assert granted.headers["Vary"] == "Cookie"
    data, attributes = session_cookie(app, granted)
    grants = (
        {draft_hash: {"callbacks": {"callback": "https://shop-a.example/cart?x=1&y=<2>"}}}
        if case != "allowed origin"
        else {}
    )
    assert data == {
        "_permanent": True,
        "client": tenant.identifier,
        "user": user.identifier,
        "key": key_tag(tenant.api_key, app.extensions["pps"].settings.secret_key),
        "editor": grants,
    }
    assert attributes == {
        "path": "/",
        "httponly": True,
        "samesite": "None",
        "secure": True,
        "partitioned": True,
    }


REFUSED_BEFORE_THE_CLAIM: dict[str, tuple[dict[str, Any], int]] = {
    "other origin": ({"redirect": "https://evil.example/"}, 400),
    "protocol-relative": ({"redirect": "//evil.example/"}, 400),
    "unknown user": ({"user": "nobody"}, 401),
    "expired": ({"exp": time.time() - 3600}, 401),
    "urlPath": ({"urlPath": "/elsewhere"}, 401),
    "user as number": ({"user": 17}, 401),
}


@pytest.mark.parametrize("case", REFUSED_BEFORE_THE_CLAIM)
def test_a_refused_login_keeps_its_jti_for_a_fixed_token(
    client: FlaskClient, tenant: Client, user: User, case: str
) -> None:
    extra, status = REFUSED_BEFORE_THE_CLAIM[case]
    jti = fresh_jti()
    refused = sign(tenant.api_key, {**login_claims(tenant, user), **extra}, jti=jti)
    assert_error_page(client.get("/auth", query_string={"jwt": refused}), status)
    fixed = sign(tenant.api_key, login_claims(tenant, user), jti=jti)
    assert client.get("/auth", query_string={"jwt": fixed}).status_code == 200


@pytest.mark.parametrize(
    "query",
    [{}, {"jwt": ""}, {"jwt": "not.a.token"}, {"jwt": "a" * 9000}],
    ids=["no jwt", "empty", "malformed", "too long"],
)
def test_malformed_login_links_are_error_pages(client: FlaskClient, query: dict[str, str]) -> None:
    response = client.get("/auth", query_string=query)
    assert response.status_code in (400, 401)
    assert_error_page(response, response.status_code)


def test_landing_page_login_uses_the_token_up(
    client: FlaskClient, tenant: Client, user: User
) -> None:
    token = sign(tenant.api_key, login_claims(tenant, user), jti="once")
    assert client.get("/auth", query_string={"jwt": token}).status_code == 200
    assert_error_page(client.get("/auth", query_string={"jwt": token}), 401)


def test_escaped_query_strings_are_read_as_werkzeug_decodes_them(
    client: FlaskClient, tenant: Client, user: User, draft_hash: str
) -> None:
    token = login_token(tenant, user, redirect=f"/editor/{draft_hash}/edit")
    assert client.get(f"/auth?utm=%C3%A9&jwt={token}").status_code == 302


def test_post_is_405_and_leaves_the_token_unused(
    client: FlaskClient, tenant: Client, user: User, draft_hash: str
) -> None:
    token = login_token(tenant, user, redirect=f"/editor/{draft_hash}/edit")
    refused = client.post("/auth", query_string={"jwt": token})
    assert refused.status_code == 405
    assert session_cookie_name() not in set_cookie(refused)
    assert client.get("/auth", query_string={"jwt": token}).status_code == 302


# -- the login handoff: an editor that never saw the /auth answer --------------------------


def shop_calls_auth(app: Flask, tenant: Client, user: User, draft_hash: str) -> str:
    """As the reference's editor demo does: the shop's server calls /auth (its own HTTP
    client, no browser) and keeps the Location for an iframe."""
    shop_server = app.test_client()
    redirect = f"/editor/{draft_hash}/edit?locale=de"
    response = shop_server.get(
        "/auth", query_string={"jwt": login_token(tenant, user, redirect=redirect)}
    )
    assert response.status_code == 302 and session_cookie_name() not in set_cookie(response)
    handoff_code(response.headers["Location"], redirect)
    return str(response.headers["Location"])


def test_a_browser_that_never_saw_the_login_opens_the_editor_with_its_location(
    app: Flask, tenant: Client, user: User, draft_hash: str
) -> None:
    location = shop_calls_auth(app, tenant, user, draft_hash)
    framed = app.test_client()  # the customer's browser, inside the shop's iframe
    exchanged = framed.get(location)
    assert exchanged.status_code == 303
    assert exchanged.headers["Location"] == f"/editor/{draft_hash}/edit?locale=de"
    assert f"{session_cookie_name()}=" in set_cookie(exchanged)
    page = framed.get(exchanged.headers["Location"])
    assert page.status_code == 200 and 'value="Ada Lovelace"' in page.get_data(as_text=True)


def test_rotating_the_api_key_ends_the_sessions_of_earlier_logins(
    app: Flask, repo: SqlRepository, tenant: Client, user: User, draft_hash: str
) -> None:
    """A shop that rotates a leaked key ends every session a login signed with it made;
    a login signed with the new key opens the editor again."""
    browser = app.test_client()
    exchanged = browser.get(shop_calls_auth(app, tenant, user, draft_hash))
    editor = exchanged.headers["Location"]
    assert browser.get(editor).status_code == 200
    rotated = repo.rotate_api_key(tenant.identifier)
    assert rotated is not None
    refused = browser.get(editor)
    assert refused.status_code == 401 and refused.mimetype == "text/html"
    fresh = app.test_client()
    exchanged = fresh.get(shop_calls_auth(app, rotated, user, draft_hash))
    assert fresh.get(exchanged.headers["Location"]).status_code == 200
    assert browser.get(editor).status_code == 401  # the old session stays ended


@pytest.mark.parametrize("stale", ["handoff=old", "hand%6Fff=old&handoff=older"])
def test_a_handoff_in_the_signed_redirect_is_replaced_by_the_new_one(
    app: Flask, tenant: Client, user: User, draft_hash: str, stale: str
) -> None:
    """A shop that signs a Location an earlier login answered: the editor reads the first
    handoff of the query, so a stale one left in front would spend the login on a "link
    used" page."""
    redirect = f"/editor/{draft_hash}/edit?{stale}&locale=de"
    response = app.test_client().get(
        "/auth", query_string={"jwt": login_token(tenant, user, redirect=redirect)}
    )
    assert response.status_code == 302
    location = response.headers["Location"]
    found = HANDOFF.search(location)
    assert found is not None and location.count("handoff=") == 1, location
    assert "old" not in location
    browser = app.test_client()
    exchanged = browser.get(location)
    assert exchanged.status_code == 303
    assert exchanged.headers["Location"] == f"/editor/{draft_hash}/edit?locale=de"
    assert browser.get(exchanged.headers["Location"]).status_code == 200


def test_a_handoff_code_works_once(app: Flask, tenant: Client, user: User, draft_hash: str) -> None:
    location = shop_calls_auth(app, tenant, user, draft_hash)
    assert app.test_client().get(location).status_code == 303
    eve = app.test_client()
    body = assert_error_page(eve.get(location), 401)
    assert "opened already or is older than two minutes" in body
    assert eve.get(f"/editor/{draft_hash}/edit").status_code == 401  # and no session


def test_a_handoff_code_is_useless_after_its_time(
    app: Flask, tenant: Client, user: User, draft_hash: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pps.auth.login.HANDOFF_TTL", 1)  # two minutes in production
    location = shop_calls_auth(app, tenant, user, draft_hash)
    time.sleep(1.5)
    assert_error_page(app.test_client().get(location), 401)


def test_head_does_not_use_up_a_handoff_code(
    app: Flask, tenant: Client, user: User, draft_hash: str
) -> None:
    """A link scanner probing the iframe's URL must not take the customer's login."""
    location = shop_calls_auth(app, tenant, user, draft_hash)
    probe = app.test_client().head(location)
    assert probe.status_code == 405 and probe.headers["Allow"] == "GET"
    assert app.test_client().get(location).status_code == 303


@pytest.mark.parametrize(
    "path", ["/editor/%0d%0aX:%20y/edit", "/editor/%E2%80%A8", "/editor/%C3%BC%25/preview"]
)
def test_a_handoff_on_any_editor_path_answers_a_quoted_location(
    app: Flask, tenant: Client, user: User, draft_hash: str, path: str
) -> None:
    """The 303 names the path as the router quotes it, never the decoded one: a line break
    in a header would be a 500 (with the code already used)."""
    found = HANDOFF.search(shop_calls_auth(app, tenant, user, draft_hash))
    assert found is not None
    code = found.group(1)
    browser = app.test_client()
    response = browser.get(f"{path}?handoff={code}&locale=de")
    assert response.status_code == 303, response.get_data(as_text=True)
    location = response.headers["Location"]
    assert location == path.replace("%0d%0a", "%0D%0A") + "?locale=de"
    assert browser.get(location).status_code == 404  # no such design, for the logged-in user


@pytest.mark.parametrize("code", ["", "short", "A" * 43, "A" * 42 + "!", "Ü" * 43])
def test_made_up_handoff_codes_are_refused(client: FlaskClient, draft_hash: str, code: str) -> None:
    response = client.get(f"/editor/{draft_hash}/edit", query_string={"handoff": code})
    assert_error_page(response, 401)


def test_concurrent_exchanges_of_one_code_log_in_exactly_once(
    app: Flask, tenant: Client, user: User, draft_hash: str
) -> None:
    location = shop_calls_auth(app, tenant, user, draft_hash)
    barrier = threading.Barrier(12)
    statuses: list[int] = []

    def exchange() -> None:
        browser = app.test_client()
        barrier.wait()
        statuses.append(browser.get(location).status_code)

    threads = [threading.Thread(target=exchange) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(statuses) == [303] + [401] * 11


def test_a_handoff_replaces_an_earlier_session(
    app: Flask, repo: SqlRepository, tenant: Client, user: User, draft_hash: str
) -> None:
    """A browser logged in as someone else gets exactly the handed-off login, nothing more."""
    browser = app.test_client()
    other = repo.create_user(tenant.identifier, {})
    complete_login(browser, browser.get("/auth", query_string={"jwt": login_token(tenant, other)}))
    assert browser.get(f"/editor/{draft_hash}/edit").status_code == 401
    assert browser.get(shop_calls_auth(app, tenant, user, draft_hash)).status_code == 303
    assert browser.get(f"/editor/{draft_hash}/edit").status_code == 200


def test_the_exchange_fails_closed_when_the_store_is_down(
    app: Flask, app_without_redis: Flask, tenant: Client, user: User, draft_hash: str
) -> None:
    location = shop_calls_auth(app, tenant, user, draft_hash)
    down = app_without_redis.test_client().get(location)
    assert down.status_code == 503 and "Retry-After" in down.headers
    assert session_cookie_name() not in set_cookie(down)
    assert app.test_client().get(location).status_code == 303  # the code was not used up
