"""The hot routes (pps.web.hot) answer exactly as the Flask views do, and really answer.

Every case is sent twice with equivalent tokens (each its own ``jti``): once through the app
as deployed (hot routes in front) and once straight to the Flask app behind them. The
answers must agree in status, headers and body, apart from what is fresh per request (the
request id, the file link, the cookie's signature and timestamp). A recorder on the
fallback shows which requests the hot routes answered themselves.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl

import pytest
from flask import Flask
from test_auth import b64_url, fresh_jti, iat, sign
from test_files import PDF, put_draft_file
from werkzeug.datastructures import MultiDict
from werkzeug.http import parse_date
from werkzeug.test import Client as WsgiClient
from werkzeug.test import TestResponse

from pps.models import Client, Draft, User
from pps.repository.sql import SqlRepository
from pps.web.hot import HotRoutes, _jwt_parameter
from pps.web.session import PpsSessionInterface

Claims = Callable[[Client, User, str], dict[str, Any]]

#: Fresh for every request, so never compared.
_PER_REQUEST = {"X-Request-ID", "Set-Cookie"}


class Recorder:
    """Wraps the Flask app behind the hot routes and notes each path that reaches it."""

    def __init__(self, hot: HotRoutes) -> None:
        self.paths: list[str] = []
        self._inner = hot.fallback
        hot.fallback = self

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        self.paths.append(environ["PATH_INFO"])
        return self._inner(environ, start_response)


@pytest.fixture
def hot(app: Flask) -> HotRoutes:
    assert isinstance(app.wsgi_app, HotRoutes), "create_app must put the hot routes in front"
    return app.wsgi_app


@pytest.fixture
def reached_flask(hot: HotRoutes) -> Recorder:
    return Recorder(hot)


@pytest.fixture
def deployed(app: Flask) -> WsgiClient:
    return WsgiClient(app, use_cookies=False)


@pytest.fixture
def flask_only(app: Flask) -> WsgiClient:
    """The Flask app alone, as if the hot routes were not there (and never recorded)."""
    return WsgiClient(lambda environ, start: Flask.wsgi_app(app, environ, start), use_cookies=False)


@dataclass
class Twin:
    """One tenant, user and draft, and the two ways to reach the app."""

    deployed: WsgiClient
    flask_only: WsgiClient
    reached_flask: Recorder
    tenant: Client
    user: User
    draft: Draft

    def claims(self, build: Claims) -> dict[str, Any]:
        return build(self.tenant, self.user, self.draft.draft_hash)

    def login_both(
        self, claims: dict[str, Any], jti: str | None = None
    ) -> tuple[TestResponse, TestResponse]:
        """The same login deployed (with ``jti``) and through Flask alone (another jti)."""
        hot, plain = (
            client.get("/auth", query_string={"jwt": sign(self.tenant.api_key, claims, jti=j)})
            for client, j in ((self.deployed, jti or fresh_jti()), (self.flask_only, fresh_jti()))
        )
        return hot, plain


@pytest.fixture
def twin(
    deployed: WsgiClient,
    flask_only: WsgiClient,
    reached_flask: Recorder,
    tenant: Client,
    user: User,
    draft: Draft,
) -> Twin:
    return Twin(deployed, flask_only, reached_flask, tenant, user, draft)


@pytest.fixture
def user(repo: SqlRepository, tenant: Client) -> User:
    return repo.create_user(tenant.identifier, {})


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client, user: User) -> Draft:
    template = repo.create_template(
        tenant.identifier,
        name="Card",
        data_keys=["name"],
        custom_attributes={},
        page_count=1,
        spec={},
    )
    record = repo.create_draft(
        tenant.identifier,
        user_identifier=user.identifier,
        template_identifier=template.identifier,
        intent="customize",
        api_default_values={"name": "Ada"},
        custom_attributes={},
    )
    assert record is not None
    return record


def comparable(response: TestResponse, *, drop: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Status, headers and body of an answer, without what differs per request."""
    skip = _PER_REQUEST | drop
    headers = sorted((name, value) for name, value in response.headers if name not in skip)
    body = response.get_data(as_text=True)
    request_id = response.headers.get("X-Request-ID")
    if request_id:
        body = body.replace(request_id, "<request id>")
    return {"status": response.status_code, "headers": headers, "body": body}


#: Every header of the bodiless 302 of a login or file link: no Content-Type, and none of
#: the page headers (CSP, X-Frame-Options, nosniff), which govern a body it does not have.
TOKEN_REDIRECT = {"Content-Length", "Location", "Cache-Control", "Referrer-Policy", "X-Request-ID"}


def header_names(response: TestResponse) -> set[str]:
    names = [name for name, _value in response.headers]
    assert len(names) == len(set(names)), names
    return set(names)


def session_cookie(app: Flask, response: TestResponse) -> tuple[dict[str, Any], dict[str, Any]]:
    """(session data without its timestamp, cookie attributes) of a login answer."""
    cookies = response.headers.getlist("Set-Cookie")
    assert len(cookies) == 1, cookies
    morsel = SimpleCookie(cookies[0])["pps_session"]
    interface = app.session_interface
    assert isinstance(interface, PpsSessionInterface)
    serializer = interface.get_signing_serializer(app)
    assert serializer is not None
    data = serializer.loads(morsel.value)
    login_at = data.pop("login_at")
    assert abs(login_at - time.time()) < 5
    attributes = {key: morsel[key] for key in morsel if morsel[key]}
    expires = parse_date(attributes.pop("expires"))
    assert expires is not None
    assert abs(expires.timestamp() - (time.time() + 8 * 3600)) < 5
    return data, attributes


# -- /auth ---------------------------------------------------------------------------------


def _claims(**extra: Any) -> Claims:
    def build(tenant: Client, user: User, draft_hash: str) -> dict[str, Any]:
        claims = {"client": tenant.identifier, "user": user.identifier, "iat": iat(), **extra}
        for name, value in claims.items():
            if isinstance(value, str):
                claims[name] = value.replace("{draft}", draft_hash)
        return claims

    return build


EDITOR = "/editor/{draft}/edit?callback=" + b64_url("https://shop-a.example/cart?x=1&y=<2>")
LOGINS: dict[str, Claims] = {
    "editor path": _claims(redirect=EDITOR),
    "editor URL": _claims(redirect="http://localhost" + EDITOR),
    "allowed origin": _claims(redirect="https://shop-a.example/back?é=ü"),
}
REFUSED: dict[str, tuple[Claims, int]] = {
    "other origin": (_claims(redirect="https://evil.example/"), 400),
    "protocol-relative": (_claims(redirect="//evil.example/"), 400),
    "unknown user": (_claims(user="nobody"), 401),
    "expired": (_claims(exp=time.time() - 3600), 401),
    "urlPath": (_claims(urlPath="/elsewhere"), 401),
    "user as number": (_claims(user=17), 401),
}


@pytest.mark.parametrize("case", LOGINS)
def test_login_is_answered_by_the_hot_route_as_flask_would(
    app: Flask, twin: Twin, case: str
) -> None:
    hot, plain = twin.login_both(twin.claims(LOGINS[case]))
    assert twin.reached_flask.paths == [], "a successful login must not need Flask"
    assert hot.status_code == 302
    assert comparable(hot) == comparable(plain)
    assert session_cookie(app, hot) == session_cookie(app, plain)
    # Browsers follow Location; without a body the answer goes out in one write.
    assert hot.headers["Content-Length"] == "0"
    assert hot.get_data() == b""
    assert header_names(hot) == header_names(plain) == TOKEN_REDIRECT | {"Set-Cookie", "Vary"}


def test_the_hot_login_cookie_opens_the_editor(
    app: Flask, tenant: Client, user: User, draft: Draft
) -> None:
    browser = app.test_client()
    token = sign(tenant.api_key, LOGINS["editor path"](tenant, user, draft.draft_hash), jti="j1")
    assert browser.get("/auth", query_string={"jwt": token}).status_code == 302
    page = browser.get(f"/editor/{draft.draft_hash}/edit")
    assert page.status_code == 200
    # The callback from the signed redirect claim reached the session.
    assert "https://shop-a.example/cart?x=1&amp;y=&lt;2&gt;" in page.get_data(as_text=True)


@pytest.mark.parametrize("case", REFUSED)
def test_refused_logins_are_rendered_by_flask_alike(twin: Twin, case: str) -> None:
    build, status = REFUSED[case]
    jti = fresh_jti()
    hot, plain = twin.login_both(twin.claims(build), jti)
    assert twin.reached_flask.paths == ["/auth"]
    assert hot.status_code == status
    assert comparable(hot) == comparable(plain)
    # Refused before the claim: the jti is not used up, so a fixed token with it works.
    fixed = sign(twin.tenant.api_key, twin.claims(_claims()), jti=jti)
    assert twin.deployed.get("/auth", query_string={"jwt": fixed}).status_code == 200


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"jwt": ""},
        {"jwt": "not.a.token"},
        {"jwt": "a" * 9000},
    ],
    ids=["no jwt", "empty", "malformed", "too long"],
)
def test_malformed_logins_alike(
    deployed: WsgiClient, flask_only: WsgiClient, query: dict[str, str]
) -> None:
    hot, plain = (
        deployed.get("/auth", query_string=query),
        flask_only.get("/auth", query_string=query),
    )
    assert hot.status_code in (400, 401)
    assert comparable(hot) == comparable(plain)


def test_wrong_key_and_replay_alike(
    deployed: WsgiClient, flask_only: WsgiClient, tenant: Client, user: User, draft: Draft
) -> None:
    claims = LOGINS["editor path"](tenant, user, draft.draft_hash)
    forged = sign("not-the-key-" + "x" * 32, claims, jti=fresh_jti())
    assert comparable(deployed.get("/auth", query_string={"jwt": forged})) == comparable(
        flask_only.get("/auth", query_string={"jwt": forged})
    )
    answers = []
    for client in (deployed, flask_only):
        jti = fresh_jti()
        token = sign(tenant.api_key, claims, jti=jti)
        assert client.get("/auth", query_string={"jwt": token}).status_code == 302
        replayed = comparable(client.get("/auth", query_string={"jwt": token}))
        answers.append({**replayed, "body": replayed["body"].replace(jti, "<jti>")})
        # A token used on one path is used up on the other too.
        other = flask_only if client is deployed else deployed
        assert other.get("/auth", query_string={"jwt": token}).status_code == 401
    assert answers[0]["status"] == 401
    assert answers[0] == answers[1]


def test_login_without_redirect_is_finished_by_flask(app: Flask, twin: Twin) -> None:
    claims = twin.claims(_claims())
    hot, plain = twin.login_both(claims, "once")
    assert twin.reached_flask.paths == ["/auth"]
    assert hot.status_code == 200 and "logged in" in hot.get_data(as_text=True)
    assert comparable(hot) == comparable(plain)
    assert session_cookie(app, hot) == session_cookie(app, plain)
    # Handed over after the claim: Flask did not claim the jti a second time.
    again = sign(twin.tenant.api_key, claims, jti="once")
    assert twin.deployed.get("/auth", query_string={"jwt": again}).status_code == 401


def test_escaped_query_strings_are_left_to_flask(
    deployed: WsgiClient, reached_flask: Recorder, tenant: Client, user: User, draft: Draft
) -> None:
    token = sign(tenant.api_key, LOGINS["editor path"](tenant, user, draft.draft_hash), jti="e")
    response = deployed.get(f"/auth?utm=%C3%A9&jwt={token}")
    assert response.status_code == 302
    assert reached_flask.paths == ["/auth"]


def test_head_and_post_are_left_to_flask(
    deployed: WsgiClient, tenant: Client, user: User, draft: Draft
) -> None:
    token = sign(tenant.api_key, LOGINS["editor path"](tenant, user, draft.draft_hash), jti="h")
    assert deployed.head("/auth", query_string={"jwt": token}).status_code == 405
    assert deployed.post("/auth", query_string={"jwt": token}).status_code == 405
    assert deployed.get("/auth", query_string={"jwt": token}).status_code == 302


def test_store_down_is_a_503_page_on_both_paths(
    app_without_redis: Flask, tenant: Client, user: User, draft: Draft
) -> None:
    hot_routes = app_without_redis.wsgi_app
    assert isinstance(hot_routes, HotRoutes)
    claims = LOGINS["editor path"](tenant, user, draft.draft_hash)
    answers = [
        WsgiClient(wsgi, use_cookies=False).get(
            "/auth", query_string={"jwt": sign(tenant.api_key, claims, jti=fresh_jti())}
        )
        for wsgi in (app_without_redis, hot_routes.fallback)
    ]
    assert answers[0].status_code == 503
    assert "Set-Cookie" not in answers[0].headers
    assert comparable(answers[0]) == comparable(answers[1])


# -- file URLs -------------------------------------------------------------------------


def file_token(tenant: Client, *, jti: str | None = None, **extra: Any) -> str:
    """A file token as the Magento module signs it: client, iat and exp, plus ``extra``."""
    now = int(time.time())
    claims = {"client": tenant.identifier, "iat": now, "exp": now + 300, **extra}
    return sign(tenant.api_key, claims, jti=jti)


def test_rendered_pdf_link_is_answered_by_the_hot_route_as_flask_would(
    app: Flask, twin: Twin
) -> None:
    deployed, flask_only, tenant, draft = twin.deployed, twin.flask_only, twin.tenant, twin.draft
    put_draft_file(app, draft, "print", PDF)
    path = f"/api-ext/files/draft/{draft.draft_hash}/print"
    claims = {"urlPath": path, "user": twin.user.identifier}
    hot = deployed.get(path, query_string={"jwt": file_token(tenant, **claims)})
    plain = flask_only.get(path, query_string={"jwt": file_token(tenant, **claims)})
    assert twin.reached_flask.paths == []
    assert hot.status_code == 302
    assert comparable(hot, drop=frozenset({"Location"})) == comparable(
        plain, drop=frozenset({"Location"})
    )
    pattern = rf"http://localhost/files/[A-Za-z0-9_-]+/{draft.draft_hash}-print\.pdf"
    for response in (hot, plain):
        location = response.headers["Location"]
        assert re.fullmatch(pattern, location), location
        with deployed.get(location.removeprefix("http://localhost")) as served:
            assert served.status_code == 200 and served.data == PDF
    assert hot.headers["Location"] != plain.headers["Location"]
    assert header_names(hot) == header_names(plain) == TOKEN_REDIRECT
    assert hot.headers["Cache-Control"] == "no-store"
    assert hot.headers["Referrer-Policy"] == "no-referrer"


def test_unrendered_file_is_left_to_flask_untouched(
    app: Flask, deployed: WsgiClient, reached_flask: Recorder, tenant: Client, draft: Draft
) -> None:
    path = f"/api-ext/files/draft/{draft.draft_hash}/low-res"
    token = file_token(tenant, jti="single")
    response = deployed.get(path, query_string={"jwt": token})
    assert reached_flask.paths == [path]
    # Flask rendered (or refused to render) it after the hot route had claimed nothing.
    assert response.status_code in (302, 422)
    if response.status_code == 302:
        assert deployed.get(path, query_string={"jwt": token}).status_code == 401


@pytest.mark.parametrize(
    ("case", "status"),
    [
        ("other tenant", 404),
        ("unknown draft", 404),
        ("other user", 403),
        ("wrong urlPath", 401),
        ("forged", 401),
        ("expired", 401),
        ("replay", 401),
    ],
)
def test_refused_file_links_alike(
    app: Flask,
    deployed: WsgiClient,
    flask_only: WsgiClient,
    reached_flask: Recorder,
    repo: SqlRepository,
    tenant: Client,
    other_tenant: Client,
    draft: Draft,
    case: str,
    status: int,
) -> None:
    put_draft_file(app, draft, "print", PDF)
    draft_hash = "nope" if case == "unknown draft" else draft.draft_hash
    path = f"/api-ext/files/draft/{draft_hash}/print"
    signer = other_tenant if case == "other tenant" else tenant
    stranger = repo.create_user(tenant.identifier, {})
    extra: dict[str, Any] = {
        "other user": {"user": stranger.identifier},
        "wrong urlPath": {"urlPath": "/api-ext/files/draft/x/print"},
        "expired": {"exp": int(time.time()) - 3600},
    }.get(case, {})

    answers = []
    for client in (deployed, flask_only):
        jti = fresh_jti()
        if case == "forged":
            jwt = sign("forged-" + "k" * 40, {"client": tenant.identifier}, jti=jti)
        else:
            jwt = file_token(signer, jti=jti, **extra)
        if case == "replay":
            assert client.get(path, query_string={"jwt": jwt}).status_code == 302
        response = client.get(path, query_string={"jwt": jwt})
        assert response.is_json
        answer = comparable(response)
        answers.append({**answer, "body": answer["body"].replace(jti, "<jti>")})
    assert answers[0]["status"] == status
    assert answers[0] == answers[1]
    assert path in reached_flask.paths


@pytest.mark.parametrize(
    "query",
    [
        "",
        "jwt=a.b.c",
        "jwt=",
        "jwt",
        "x=1&jwt=a.b.c&jwt=d.e.f",
        "&&jwt=a.b.c&",
        "jwtx=1&xjwt=2",
        "x=y=z&jwt=a=b",
        "JWT=a.b.c",
        ";jwt=a.b.c",
    ],
)
def test_jwt_parameter_is_what_werkzeug_reads(query: str) -> None:
    """Where the hot route reads the token itself, it reads what ``request.args`` would."""
    found = _jwt_parameter({"QUERY_STRING": query})  # type: ignore[typeddict-item]
    assert found == MultiDict(parse_qsl(query, keep_blank_values=True)).get("jwt", "")


@pytest.mark.parametrize("query", ["jwt=a%2Eb", "jwt=a+b", "jwt=\u00e9", "x=%ZZ&jwt=a.b.c"])
def test_escaped_query_strings_are_left_to_werkzeug(query: str) -> None:
    assert _jwt_parameter({"QUERY_STRING": query}) is None  # type: ignore[typeddict-item]
