"""The editor inside the shop's page, through the Flask test client: who may frame which
page, the session cookie a cross-site frame keeps, the steps, the bridge's data and the
refusal of ``?api_token=``. The real browser side is in ``tests/test_embed_browser.py``."""

from __future__ import annotations

import html as html_lib
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from conftest import session_cookie_name
from flask import Flask
from flask.testing import FlaskClient
from test_editor import log_in, make_draft, sign

from app import create_app
from pps.editor.embed import (
    COOKIE_NAME,
    HOST_COOKIE_NAME,
    STEPS,
    cookie_policy,
    frame_ancestors,
    frame_origins,
    step_to_open,
)
from pps.platform.models import Client, Draft, User
from pps.platform.repository.sql import SqlRepository

SHOP_ORIGINS = ["https://shop-a.example", "http://localhost:8080"]


@pytest.fixture
def shop(repo: SqlRepository) -> Client:
    return repo.create_client("Framing shop", allowed_origins=SHOP_ORIGINS)


@pytest.fixture
def shop_user(repo: SqlRepository, shop: Client) -> User:
    return repo.create_user(shop.identifier, {})


@pytest.fixture
def shop_draft(repo: SqlRepository, shop: Client, shop_user: User) -> Draft:
    return make_draft(repo, shop, shop_user)


def frame_directive(csp: str) -> str:
    found = re.findall(r"frame-ancestors[^;]*", csp)
    assert len(found) == 1, csp
    return found[0].strip()


# -- framing -----------------------------------------------------------------------------


@pytest.mark.parametrize("step", STEPS)
def test_every_step_may_be_framed_by_the_clients_allowed_origins_only(
    client: FlaskClient, shop: Client, shop_user: User, shop_draft: Draft, step: str
) -> None:
    log_in(client, shop, shop_user)
    response = client.get(f"/editor/{shop_draft.draft_hash}/{step}")
    assert response.status_code == 200, response.get_data(as_text=True)
    csp = response.headers["Content-Security-Policy"]
    assert frame_directive(csp) == "frame-ancestors https://shop-a.example http://localhost:8080"
    assert "*" not in csp
    assert "X-Frame-Options" not in response.headers
    # The rest of the page policy stays as strict as everywhere.
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp


def test_a_client_without_allowed_origins_keeps_the_editor_unframable(
    client: FlaskClient, repo: SqlRepository
) -> None:
    lonely = repo.create_client("No origins")
    user = repo.create_user(lonely.identifier, {})
    draft = make_draft(repo, lonely, user)
    log_in(client, lonely, user)
    response = client.get(f"/editor/{draft.draft_hash}/embed")
    assert response.status_code == 200
    assert frame_directive(response.headers["Content-Security-Policy"]) == "frame-ancestors 'none'"
    assert response.headers["X-Frame-Options"] == "DENY"
    page = response.get_data(as_text=True)
    assert 'data-allowed-origins=""' in page  # the bridge talks to nobody


def test_pages_other_than_the_editor_steps_keep_deny(
    client: FlaskClient, shop: Client, shop_user: User, shop_draft: Draft
) -> None:
    log_in(client, shop, shop_user)
    logged_out = create_app_client(client)
    for response in [
        client.get("/auth"),  # an error page
        client.get("/docs"),
        logged_out.get(f"/editor/{shop_draft.draft_hash}/embed"),  # 401: no client known
        client.get(f"/editor/{shop_draft.draft_hash}/edit?api_token=x"),
    ]:
        assert response.mimetype == "text/html"
        assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
        assert response.headers["X-Frame-Options"] == "DENY"


def create_app_client(client: FlaskClient) -> FlaskClient:
    """A second browser of the same app, without a session."""
    return client.application.test_client()


def test_origins_are_vetted_before_they_reach_the_header() -> None:
    assert frame_origins(
        [
            "https://Shop.Example:443",
            "https://shop.example",  # the same, once
            "http://localhost:8080/",
            "http://[::1]:9000",
            "*",
            "https://*.example",
            "https://a.example/path",
            "https://a.example; script-src *",
            "javascript:alert(1)",
            "https://user@a.example",
            "null",
            "",
        ]
    ) == ["https://shop.example", "http://localhost:8080", "http://[::1]:9000"]
    assert frame_ancestors([]) == "frame-ancestors 'none'"
    assert frame_ancestors(["*"]) == "frame-ancestors 'none'"


# -- the session cookie --------------------------------------------------------------------


SECURE = ["SameSite=None", "Secure", "Partitioned", "Path=/"]


@pytest.mark.parametrize(
    ("base_url", "name", "attributes", "absent"),
    [
        ("https://pps.example", HOST_COOKIE_NAME, SECURE, ["SameSite=Lax"]),
        # Loopback over http is a secure context for browsers: the development set-up.
        ("http://127.0.0.1:8000", HOST_COOKIE_NAME, SECURE, []),
        # Plain http elsewhere: no cookie survives a cross-site frame; Lax, top-level only,
        # and no __Host- prefix (browsers refuse it without Secure).
        (
            "http://pps.internal",
            COOKIE_NAME,
            ["SameSite=Lax", "Path=/"],
            ["Secure", "Partitioned", "SameSite=None"],
        ),
    ],
)
def test_session_cookie_attributes_follow_the_base_url(
    app_config: dict[str, Any],
    shop: Client,
    shop_user: User,
    shop_draft: Draft,
    base_url: str,
    name: str,
    attributes: list[str],
    absent: list[str],
) -> None:
    assert session_cookie_name(base_url) == name
    with app_for(app_config, base_url) as app:
        browser = app.test_client()
        exchanged = exchange_login(browser, base_url, shop, shop_user, shop_draft)
        cookies = exchanged.headers.getlist("Set-Cookie")
        assert len(cookies) == 1 and cookies[0].startswith(f"{name}="), cookies
        # That cookie opens the editor.
        assert browser.get(f"/editor/{shop_draft.draft_hash}/embed").status_code == 200
        parts = [part.strip() for part in cookies[0].split(";")]
        for attribute in attributes:
            assert attribute in parts, cookies
        for attribute in absent:
            assert attribute not in parts, cookies
        assert "HttpOnly" in parts
        # Host-only: a Domain would share it with every subdomain (and void __Host-).
        assert not any(part.lower().startswith("domain=") for part in parts), cookies


@pytest.mark.parametrize("base_url", ["https://pps.example", "http://127.0.0.1:8000"])
def test_a_session_cookie_tossed_from_a_sibling_subdomain_is_ignored(
    app_config: dict[str, Any],
    repo: SqlRepository,
    shop: Client,
    shop_user: User,
    shop_draft: Draft,
    base_url: str,
) -> None:
    """A page on another subdomain of the site sets ``pps_session=<its own login>;
    Domain=.example; Path=/editor``: the victim's browser sends it before (longer path) the
    victim's own cookie. pps reads only its ``__Host-`` cookie, which no other host can set."""
    attacker = repo.create_user(shop.identifier, {})
    attackers_draft = make_draft(repo, shop, attacker)
    with app_for(app_config, base_url) as app:
        planted = session_value(
            exchange_login(app.test_client(), base_url, shop, attacker, attackers_draft)
        )
        own = session_value(
            exchange_login(app.test_client(), base_url, shop, shop_user, shop_draft)
        )
        victim = app.test_client(use_cookies=False)
        both = {"Cookie": f"{COOKIE_NAME}={planted[1]}; {own[0]}={own[1]}"}
        # The victim edits as the victim: the own draft opens, the attacker's does not.
        mine = victim.get(f"/editor/{shop_draft.draft_hash}/edit", headers=both)
        assert mine.status_code == 200, mine.get_data(as_text=True)
        theirs = victim.get(f"/editor/{attackers_draft.draft_hash}/edit", headers=both)
        assert theirs.status_code == 401
        # The planted cookie alone logs nobody in.
        alone = {"Cookie": f"{COOKIE_NAME}={planted[1]}"}
        assert (
            victim.get(f"/editor/{attackers_draft.draft_hash}/edit", headers=alone).status_code
            == 401
        )


def exchange_login(
    browser: FlaskClient, base_url: str, tenant: Client, user: User, draft: Draft
) -> Any:
    """The editor's answer to the login handoff in /auth's Location: the session cookie."""
    location = login_answer(browser, tenant, user, draft).headers["Location"]
    exchanged = browser.get(location.removeprefix(base_url))
    assert exchanged.status_code == 303
    return exchanged


def session_value(response: Any) -> tuple[str, str]:
    """(name, value) of the one cookie ``response`` sets."""
    cookies = response.headers.getlist("Set-Cookie")
    assert len(cookies) == 1, cookies
    name, _, rest = cookies[0].partition("=")
    return name, rest.split(";", 1)[0]


@contextmanager
def app_for(app_config: dict[str, Any], base_url: str) -> Iterator[Flask]:
    """An app of the same database and Redis with another base URL."""
    app = create_app({**app_config, "base_url": base_url})
    try:
        yield app
    finally:
        app.extensions["pps"].close()


def login_answer(browser: FlaskClient, tenant: Client, user: User, draft: Draft) -> Any:
    claims = {
        "client": tenant.identifier,
        "user": user.identifier,
        "iat": time.time(),
        "redirect": f"/editor/{draft.draft_hash}/embed",
    }
    response = browser.get("/auth", query_string={"jwt": sign(tenant.api_key, claims)})
    assert response.status_code == 302
    return response


def test_cookie_policy_core() -> None:
    assert cookie_policy("https://pps.example").framable
    assert cookie_policy("http://localhost:8000").framable
    assert cookie_policy("http://app.localhost").framable
    assert cookie_policy("http://[::1]:8000").framable
    assert not cookie_policy("http://10.0.0.5:8000").framable
    assert cookie_policy("http://10.0.0.5").samesite == "Lax"


# -- ?api_token= ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/edit", "/embed", "", "/3d"])
def test_an_api_key_in_the_editor_url_is_refused_with_the_safe_way(
    client: FlaskClient, shop: Client, shop_draft: Draft, path: str
) -> None:
    response = client.get(
        f"/editor/{shop_draft.draft_hash}{path}", query_string={"api_token": shop.api_key}
    )
    assert response.status_code == 400
    assert response.mimetype == "text/html"
    assert response.headers["Cache-Control"] == "no-store"
    page = response.get_data(as_text=True)
    assert "This editor link contains an API key" in page
    assert "/auth?jwt=" in html_lib.unescape(page)
    assert shop.api_key not in page  # never echoed back
    assert session_cookie_name() not in "".join(response.headers.getlist("Set-Cookie"))


def test_the_api_token_page_speaks_german(client: FlaskClient, shop_draft: Draft) -> None:
    response = client.get(f"/editor/{shop_draft.draft_hash}/embed?apiToken=k&locale=de")
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    assert '<html lang="de">' in page
    assert "Dieser Editor-Link enthält einen API-Schlüssel" in page


def test_an_api_key_is_refused_even_with_a_valid_session(
    client: FlaskClient, shop: Client, shop_user: User, shop_draft: Draft
) -> None:
    log_in(client, shop, shop_user)
    response = client.get(f"/editor/{shop_draft.draft_hash}/edit?api_token=anything")
    assert response.status_code == 400


# -- steps ---------------------------------------------------------------------------------


def test_without_a_step_the_editor_opens_the_last_visited_one(
    client: FlaskClient, shop: Client, shop_user: User, shop_draft: Draft
) -> None:
    log_in(client, shop, shop_user)
    base = f"/editor/{shop_draft.draft_hash}"
    assert step_shown(client.get(base)) == "edit"  # at first
    for step in ("3d", "embed", "preview", "edit", "3d"):
        assert step_shown(client.get(f"{base}/{step}")) == step
        assert step_shown(client.get(base)) == step


def step_shown(response: Any) -> str:
    assert response.status_code == 200
    info = bridge_info(response.get_data(as_text=True))
    return str(info["step"])


def test_step_core() -> None:
    assert step_to_open(None, "3d") == "3d"
    assert step_to_open(None, "wizard") == "edit"
    assert step_to_open(None, None) == "edit"
    assert step_to_open("preview", "3d") == "preview"


def test_the_3d_step_shows_every_saved_page_on_a_desk(
    client: FlaskClient, shop: Client, shop_user: User, shop_draft: Draft
) -> None:
    log_in(client, shop, shop_user)
    page = client.get(f"/editor/{shop_draft.draft_hash}/3d?locale=de").get_data(as_text=True)
    assert "/static/editor-3d.css" in page
    images = re.findall(r'<img class="page-image mockup-print"[^>]*>', page)
    assert len(images) == 2
    assert f"/editor/{shop_draft.draft_hash}/page/1.png?width=1600" in page
    assert "So wird es aussehen" in page
    assert "style=" not in page
    served = client.get("/static/editor-3d.css")
    assert served.status_code == 200 and served.mimetype == "text/css"
    served.close()


def test_embed_is_the_edit_form_and_is_listed_only_while_shown(
    client: FlaskClient, shop: Client, shop_user: User, shop_draft: Draft
) -> None:
    log_in(client, shop, shop_user)
    embed = client.get(f"/editor/{shop_draft.draft_hash}/embed").get_data(as_text=True)
    assert '<form id="editor-form"' in embed
    assert 'aria-current="step">Embedded editor<' in embed
    edit = client.get(f"/editor/{shop_draft.draft_hash}/edit").get_data(as_text=True)
    assert "Embedded editor" not in edit
    assert ">3D view<" in edit


# -- the bridge's data ---------------------------------------------------------------------


def bridge_info(page: str) -> dict[str, Any]:
    match = re.search(r"<script type=\"module\"[^>]*data-pps-bridge[^>]*data-info='([^']*)'", page)
    assert match is not None, page
    info: dict[str, Any] = json.loads(html_lib.unescape(match.group(1)))
    return info


def test_the_bridge_gets_the_allowed_origins_and_the_draft_never_the_key(
    client: FlaskClient, shop: Client, shop_user: User, shop_draft: Draft
) -> None:
    log_in(client, shop, shop_user)
    page = client.get(f"/editor/{shop_draft.draft_hash}/embed").get_data(as_text=True)
    assert 'data-allowed-origins="https://shop-a.example http://localhost:8080"' in page
    assert '<script type="module" src="/static/editor-bridge.js" data-pps-bridge' in page
    info = bridge_info(page)
    assert info["hash"] == shop_draft.draft_hash
    assert info["templateName"] == "Flyer <A5>"
    assert info["pages"] == 2
    assert [key["name"] for key in info["dataKeys"]] == ["headline", "<b>tagline</b>", "phone"]
    assert info["version"] == shop_draft.version
    assert info["locked"] is False
    assert shop.api_key not in page


def test_the_client_module_is_served_to_other_origins(client: FlaskClient) -> None:
    served = client.get("/static/pps-editor-client.js")
    assert served.status_code == 200
    assert served.mimetype == "text/javascript"
    assert served.headers["Access-Control-Allow-Origin"] == "*"
    text = served.get_data(as_text=True)
    served.close()
    for export in ("export class Connector", "export const Events", "export const CLIENT_VERSION"):
        assert export in text
    bridge = client.get("/static/editor-bridge.js")
    assert "Access-Control-Allow-Origin" not in bridge.headers  # only the shops' module
    bridge.close()
