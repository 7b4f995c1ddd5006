"""The editor entry: who may open a draft, what the page shows, where its links go."""

from __future__ import annotations

import base64
import re
import time
import uuid
from typing import Any
from urllib.parse import quote

import pytest
from flask.testing import FlaskClient
from joserfc import jwt
from joserfc.jwk import OctKey
from joserfc.jws import JWSRegistry

from pps.models import Client, Draft, User
from pps.repository.sql import SqlRepository


def sign(key: str, claims: dict[str, Any]) -> str:
    """A login token as the PHP SDK signs it: jti in the header, float iat, no exp."""
    header = {"alg": "HS256", "typ": "JWT", "jti": uuid.uuid4().hex}
    registry = JWSRegistry(algorithms=["HS256"], strict_check_header=False)
    return jwt.encode(header, claims, OctKey.import_key(key), registry=registry)


def b64_url(url: str) -> str:
    return quote(base64.b64encode(url.encode()).decode(), safe="")


def log_in(client: FlaskClient, tenant: Client, user: User, redirect: str | None = None) -> None:
    claims: dict[str, Any] = {
        "client": tenant.identifier,
        "user": user.identifier,
        "iat": round(time.time(), 6),
    }
    if redirect is not None:
        claims["redirect"] = redirect
    response = client.get("/auth", query_string={"jwt": sign(tenant.api_key, claims)})
    assert response.status_code in (200, 302), response.get_data(as_text=True)


@pytest.fixture
def user(repo: SqlRepository, tenant: Client) -> User:
    return repo.create_user(tenant.identifier, {})


def make_draft(repo: SqlRepository, client: Client, user: User, **values: Any) -> Draft:
    template = repo.create_template(
        client.identifier,
        name="Flyer <A5>",
        data_keys=["headline", "<b>tagline</b>", "phone"],
        custom_attributes={},
        page_count=1,
        spec={},
    )
    draft = repo.create_draft(
        client.identifier,
        user_identifier=user.identifier,
        template_identifier=template.identifier,
        intent="customize",
        api_default_values={"headline": "Default headline", "phone": 12345, **values},
        custom_attributes={},
    )
    assert draft is not None
    return draft


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client, user: User) -> Draft:
    return make_draft(repo, tenant, user)


def links(html: str) -> dict[str, str]:
    """Link text -> href of the callback links."""
    return {
        text: href.replace("&amp;", "&")
        for href, text in re.findall(
            r'<a href="([^"]*)"[^>]*rel="noopener noreferrer">([^<]*)</a>', html
        )
    }


# -- who may open it ---------------------------------------------------------------------


def test_without_session_is_401_page(client: FlaskClient, draft: Draft) -> None:
    response = client.get(f"/editor/{draft.draft_hash}/edit")
    assert response.status_code == 401
    assert response.mimetype == "text/html"
    body = response.get_data(as_text=True)
    assert "log in" in body
    assert response.headers["X-Request-ID"] in body


def test_another_users_session_is_401(
    client: FlaskClient, repo: SqlRepository, tenant: Client, draft: Draft
) -> None:
    someone_else = repo.create_user(tenant.identifier, {})
    log_in(client, tenant, someone_else)
    assert client.get(f"/editor/{draft.draft_hash}/edit").status_code == 401
    assert client.get(f"/editor/{draft.draft_hash}").status_code == 401


def test_another_clients_draft_is_404(
    client: FlaskClient, repo: SqlRepository, other_tenant: Client, draft: Draft
) -> None:
    stranger = repo.create_user(other_tenant.identifier, {})
    log_in(client, other_tenant, stranger)
    response = client.get(f"/editor/{draft.draft_hash}/edit")
    assert response.status_code == 404
    assert response.mimetype == "text/html"


def test_unknown_draft_and_step_are_404(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    assert client.get("/editor/doesnotexist0000000000000000000/edit").status_code == 404
    response = client.get(f"/editor/{draft.draft_hash}/embed")
    assert response.status_code == 404
    assert response.mimetype == "text/html"
    assert client.get(f"/editor/{draft.draft_hash}/<script>").status_code == 404


# -- what it shows -----------------------------------------------------------------------


def test_shows_template_datakeys_and_values_escaped(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    draft = make_draft(repo, tenant, user, headline='"><script>alert(1)</script>')
    repo.update_draft(tenant.identifier, draft.draft_hash, values={"phone": "+49 30 1234"})
    log_in(client, tenant, user)

    response = client.get(f"/editor/{draft.draft_hash}/edit")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert "Flyer &lt;A5&gt;" in html
    assert "<script>alert(1)" not in html
    assert "&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;tagline&lt;/b&gt;</label>" in html
    assert 'value="+49 30 1234"' in html  # values win over apiDefaultValues
    assert re.search(r'<label for="datakey-0">headline</label>', html)
    assert "readonly" in html


def test_no_step_opens_edit_then_the_last_visited_step(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    first = client.get(f"/editor/{draft.draft_hash}").get_data(as_text=True)
    assert "<h2>Edit</h2>" in first
    assert client.get(f"/editor/{draft.draft_hash}/preview").status_code == 200
    again = client.get(f"/editor/{draft.draft_hash}").get_data(as_text=True)
    assert "<h2>Preview</h2>" in again


def test_security_headers(client: FlaskClient, tenant: Client, user: User, draft: Draft) -> None:
    log_in(client, tenant, user)
    response = client.get(f"/editor/{draft.draft_hash}/edit")
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Cache-Control"] == "no-store"
    html = response.get_data(as_text=True)
    assert "<script" not in html
    assert " on" not in re.sub(r">[^<]*<", "><", html)  # no inline event handlers
    with client.get("/static/pps.css") as css:
        assert css.status_code == 200
        assert css.mimetype == "text/css"


# -- callbacks ---------------------------------------------------------------------------


def test_signed_callbacks_are_linked_with_defaults(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    """callback_cancel defaults to callback, callback_halt to callback_cancel."""
    # Not an allowed origin of the client: trusted because it was inside the signed claim.
    callback = "https://partner.example/done?order=7"
    redirect = f"/editor/{draft.draft_hash}/edit?callback={b64_url(callback)}"
    log_in(client, tenant, user, redirect)
    html = client.get(redirect).get_data(as_text=True)
    assert links(html) == {
        "Back to shop": callback,
        "Cancel and return to shop": callback,
        "Continue later (back to shop)": callback,
    }


def test_all_three_signed_callbacks(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    done, cancel, halt = (f"https://shop-a.example/{name}" for name in ("done", "cancel", "halt"))
    redirect = (
        f"http://localhost/editor/{draft.draft_hash}/edit?callback={b64_url(done)}"
        f"&callback_cancel={b64_url(cancel)}&callback_halt={b64_url(halt)}"
        "&callback_target=_top&locale=fr"
    )
    log_in(client, tenant, user, redirect)
    response = client.get(redirect.removeprefix("http://localhost"))
    html = response.get_data(as_text=True)
    assert links(html) == {
        "Back to shop": done,
        "Cancel and return to shop": cancel,
        "Continue later (back to shop)": halt,
    }
    assert 'target="_top"' in html


def test_signed_callbacks_win_over_the_query(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    signed = "https://partner.example/done"
    log_in(client, tenant, user, f"/editor/{draft.draft_hash}?callback={b64_url(signed)}")
    tampered = f"/editor/{draft.draft_hash}/edit?callback={b64_url('https://shop-a.example/x')}"
    assert links(client.get(tampered).get_data(as_text=True))["Back to shop"] == signed


def test_unsigned_callbacks_need_an_allowed_origin(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)  # no redirect: nothing signed for this draft
    allowed = "https://shop-a.example/cart"
    html = client.get(
        f"/editor/{draft.draft_hash}/edit?callback={b64_url(allowed)}"
        f"&callback_cancel={b64_url('https://evil.example/phish')}"
    ).get_data(as_text=True)
    # The refused callback_cancel falls back to callback, and callback_halt follows it.
    assert links(html) == {
        "Back to shop": allowed,
        "Cancel and return to shop": allowed,
        "Continue later (back to shop)": allowed,
    }
    assert "evil.example" not in html


@pytest.mark.parametrize(
    "callback",
    ["javascript:alert(1)", "data:text/html,hi", "//evil.example", "https://a@evil.example/"],
)
def test_dangerous_callbacks_are_never_linked_even_signed(
    client: FlaskClient, tenant: Client, user: User, draft: Draft, callback: str
) -> None:
    redirect = f"/editor/{draft.draft_hash}/edit?callback={b64_url(callback)}"
    log_in(client, tenant, user, redirect)
    html = client.get(redirect).get_data(as_text=True)
    assert links(html) == {}
    assert "javascript:" not in html


def test_undecodable_callback_is_ignored(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    redirect = f"/editor/{draft.draft_hash}/edit?callback=%%%not-base64"
    log_in(client, tenant, user, redirect)
    response = client.get(redirect)
    assert response.status_code == 200
    assert links(response.get_data(as_text=True)) == {}


def test_overlong_callback_is_dropped_and_the_session_still_fits(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    long = "https://shop-a.example/" + "x" * 1100
    short = "https://shop-a.example/ok"
    redirect = (
        f"/editor/{draft.draft_hash}/edit?callback={b64_url(short)}"
        f"&callback_cancel={b64_url(long)}&callback_halt={b64_url(long)}"
    )
    log_in(client, tenant, user, redirect)
    html = client.get(redirect).get_data(as_text=True)
    assert set(links(html).values()) == {short}
