"""One request path: every route runs through Flask and its hooks, and the hooks are lean.

A hook registered on the app runs on ``/auth``, every file endpoint, the file links and the
API; only the browser login and the editor open a session; routing redirects never name
the ``Host`` the client sent.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import api_support
import pytest
from conftest import complete_login, session_cookie_name
from flask import Flask, Response, request
from flask.testing import FlaskClient
from test_files import PDF, SPEC, magento_claims, put_draft_file, sign

from pps.platform.models import Client, Draft, Template, User
from pps.platform.repository.sql import SqlRepository
from pps.web.common import bodiless_redirect


@pytest.fixture
def template(repo: SqlRepository, tenant: Client) -> Template:
    return repo.create_template(
        tenant.identifier,
        name="Poster",
        data_keys=["title"],
        custom_attributes={},
        page_count=2,
        spec=SPEC,
    )


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client, user: User, template: Template) -> Draft:
    return api_support.make_draft(
        repo, tenant, user, template, api_default_values={"title": "Hi"}, custom_attributes={}
    )


def login_link(tenant: Client, user: User, draft: Draft) -> dict[str, str]:
    claims = {
        "client": tenant.identifier,
        "user": user.identifier,
        "iat": time.time(),
        "redirect": f"/editor/{draft.draft_hash}/edit",
    }
    return {"jwt": sign(tenant.api_key, claims, jti=uuid.uuid4().hex)}


def file_token(tenant: Client, path: str) -> dict[str, str]:
    claims = magento_claims(tenant, urlPath=path)
    return {"jwt": sign(tenant.api_key, claims, jti=uuid.uuid4().hex)}


def link_path(response: Any) -> str:
    assert response.status_code == 302, response.get_data(as_text=True)
    return str(response.headers["Location"]).removeprefix("http://localhost")


# -- hooks -----------------------------------------------------------------------------


def test_a_new_after_request_hook_runs_on_every_route(
    app: Flask, tenant: Client, user: User, draft: Draft, template: Template
) -> None:
    seen: list[tuple[str, str, int]] = []

    @app.after_request
    def count(response: Response) -> Response:
        seen.append((request.method, request.path, response.status_code))
        response.headers["X-Added-Hook"] = "ran"
        return response

    client = app.test_client()
    put_draft_file(app, draft, "print", PDF)  # one rendered beforehand, the others on request
    answers = [
        client.get("/auth", query_string=login_link(tenant, user, draft)),
        client.get("/auth", query_string={"jwt": "not.a.token"}),
        client.head("/auth", query_string=login_link(tenant, user, draft)),
    ]
    file_endpoints = [
        f"/api-ext/files/draft/{draft.draft_hash}/{kind}" for kind in ("print", "low-res", "image")
    ] + [f"/api-ext/files/template/{template.identifier}/page-preview-thumb"]
    for path in file_endpoints:
        redirect = client.get(path, query_string=file_token(tenant, path))
        link = link_path(redirect)
        answers += [
            redirect,
            client.get(link),
            client.head(link),
            client.get(path, query_string={"jwt": "forged.token.here"}),
            client.head(path, query_string=file_token(tenant, path)),
        ]
    api = {"Authorization": f"Bearer {tenant.api_key}", "Accept": "application/json"}
    answers += [
        client.get(f"/api-ext/user/{user.identifier}", headers=api),
        client.get(f"/api-ext/user/{user.identifier}"),  # no key: 401
    ]

    for response in answers:
        response.close()  # the file links' open files
        assert response.headers.get("X-Added-Hook") == "ran", response.status_code
    assert len(seen) == len(answers)
    statuses = {(method, path): status for method, path, status in seen}
    assert statuses[("GET", "/auth")] in (302, 400)
    assert statuses[("HEAD", "/auth")] == 405
    for path in file_endpoints:
        assert statuses[("HEAD", path)] == 405
    links = [path for method, path, status in seen if path.startswith("/files/")]
    assert len(links) == 2 * len(file_endpoints)
    assert [status for method, path, status in seen if path.startswith("/files/")] == [200] * 8
    assert statuses[("GET", f"/api-ext/user/{user.identifier}")] in (200, 401)
    assert [s for m, p, s in seen if p == f"/api-ext/user/{user.identifier}"] == [200, 401]


def test_every_answer_carries_the_request_id_and_only_its_own_headers(
    client: FlaskClient, tenant: Client
) -> None:
    sent = client.get("/api-ext/user/x", headers={"X-Request-ID": "from-nginx.1"})
    assert sent.headers["X-Request-ID"] == "from-nginx.1"
    assert sent.headers["X-Content-Type-Options"] == "nosniff"
    assert "Content-Security-Policy" not in sent.headers  # JSON, not a page
    page = client.get("/auth")
    assert page.headers["X-Request-ID"]
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]


PAGE_DEFAULTS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'self'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


@pytest.mark.parametrize("name", sorted(PAGE_DEFAULTS))
@pytest.mark.parametrize("spelling", [str, str.lower, str.upper])
def test_a_header_the_view_set_is_kept_whatever_its_spelling(
    app: Flask, name: str, spelling: Any
) -> None:
    """The hook adds a default only where the view set none: the view's own value stays,
    once, however it spelled the name (header names are case-insensitive)."""
    own = "view's own"

    @app.get("/test-own-header")
    def page() -> Response:
        return Response("<p>hi</p>", mimetype="text/html", headers={spelling(name): own})

    response = app.test_client().get("/test-own-header")
    assert response.headers.getlist(name) == [own]
    for other, default in PAGE_DEFAULTS.items():
        if other != name:
            assert len(response.headers.getlist(other)) == 1, other
            assert response.headers[other].startswith(default), other
    assert len(response.headers.getlist("X-Request-ID")) == 1


def test_an_answer_without_content_gets_no_page_defaults(app: Flask) -> None:
    @app.get("/test-no-content")
    def empty() -> Response:
        return bodiless_redirect("/elsewhere")

    response = app.test_client().get("/test-no-content")
    assert response.status_code == 302
    assert set(response.headers.keys()) == {"Location", "Content-Length", "X-Request-ID"}


# -- sessions only where they are used -----------------------------------------------------


def test_api_and_file_routes_never_read_or_set_the_session(
    app: Flask, client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    """A logged-in browser (a permanent session, which Flask refreshes on every request
    where it is open) fetching files and a shop calling the API: no cookie, no Vary."""
    login = client.get("/auth", query_string=login_link(tenant, user, draft))
    assert complete_login(client, login).status_code == 303  # the handoff sets the session
    editor = client.get(f"/editor/{draft.draft_hash}/edit")
    assert editor.status_code == 200 and f"{session_cookie_name()}=" in editor.headers["Set-Cookie"]

    put_draft_file(app, draft, "print", PDF)
    path = f"/api-ext/files/draft/{draft.draft_hash}/print"
    redirect = client.get(path, query_string=file_token(tenant, path))
    api = {"Authorization": f"Bearer {tenant.api_key}", "Accept": "application/json"}
    for response in (
        redirect,
        client.get(link_path(redirect)),
        client.get(path, query_string={"jwt": "forged.token.here"}),
        client.get(f"/api-ext/user/{user.identifier}", headers=api),
        client.get("/api-ext/user/nobody", headers=api),
        client.get("/openapi.json"),
        client.get("/no/such/page"),
        client.get("/auth", query_string={"jwt": "not.a.token"}),  # a refused login
    ):
        response.close()
        assert "Set-Cookie" not in response.headers, response.request.path
        assert "Cookie" not in response.headers.get("Vary", ""), response.request.path
    # The login is still there for the editor.
    assert client.get(f"/editor/{draft.draft_hash}/edit").status_code == 200


# -- redirects name no host ----------------------------------------------------------------

ROUTING_REDIRECTS = [
    ("GET", "//editor//{draft}", "/editor/{draft}"),
    ("GET", "/editor//{draft}/edit", "/editor/{draft}/edit"),
    ("POST", "/api-ext//user", "/api-ext/user"),
    ("GET", "//api-ext//files/draft/{draft}/print", "/api-ext/files/draft/{draft}/print"),
    ("GET", "///files//abc/x.pdf", "/files/abc/x.pdf"),
]


@pytest.mark.parametrize(("method", "sent", "expected"), ROUTING_REDIRECTS)
@pytest.mark.parametrize("host", ["evil.example", "evil.example:8443", "localhost"])
def test_routing_redirects_are_relative_whatever_the_host(
    client: FlaskClient, draft: Draft, method: str, sent: str, expected: str, host: str
) -> None:
    path = sent.format(draft=draft.draft_hash)
    response = client.open(
        "/",
        method=method,
        headers={"Host": host},
        environ_overrides={"PATH_INFO": path, "QUERY_STRING": "jwt=a.b.c&x=1"},
    )
    assert response.status_code == 308
    location = response.headers["Location"]
    assert location == expected.format(draft=draft.draft_hash) + "?jwt=a.b.c&x=1"
    assert "evil" not in location and not location.startswith("//")
    assert response.headers["X-Request-ID"]
    # The Location repeats the token: no cache keeps it, no Referer carries it on.
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Referrer-Policy"] == "no-referrer"
