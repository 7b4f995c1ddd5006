"""Error pages for shoppers: what happened in plain words, the way back, the details folded.

A used or expired login link, a login that ended, an unknown design: each page says so in
the reader's language (``?locale=``, the editor's session, ``Accept-Language``), links back
to the shop only when the shop named the way in a signed place (the login's ``redirect``
claim, kept in the session or read from the token), and keeps the technical reason, in
English and marked ``lang="en"``, with the request id inside ``<details>``.
"""

from __future__ import annotations

import html as html_lib
import re
import time
from typing import Any

import pytest
from flask.testing import FlaskClient
from test_editor import b64_url, log_in, make_draft, sign

from pps.platform.models import Client, User
from pps.platform.repository.sql import SqlRepository
from pps.translations import LOCALES
from pps.web.error_pages import KINDS
from pps.web.i18n import Translator

SHOP = "https://shop.example"
DONE = f"{SHOP}/cart/add?sku=card"
CANCEL = f"{SHOP}/product/card?cancelled=1"
GERMAN = {"Accept-Language": "de-DE,de;q=0.9,en;q=0.5"}


def token(tenant: Client, user: User, **claims: Any) -> str:
    """A login token as the PHP SDK signs it (``jti`` in the header)."""
    body: dict[str, Any] = {
        "client": tenant.identifier,
        "user": user.identifier,
        "iat": round(time.time(), 6),
        **claims,
    }
    return sign(tenant.api_key, body)


def page_parts(body: str) -> dict[str, Any]:
    """The visible page: heading, first paragraph, the way back, the folded details."""
    heading = re.search(r"<h1>([^<]*)</h1>", body)
    back = re.search(
        r'<a class="button primary" href="([^"]*)"[^>]*data-way-back>([^<]*)</a>', body
    )
    details = re.search(r"<details[^>]*>(.*?)</details>", body, re.S)
    reason = re.search(r'<p lang="en">([^<]*)</p>', body)
    return {
        "kind": re.search(r'data-kind="([^"]+)"', body).group(1),  # type: ignore[union-attr]
        "title": html_lib.unescape(heading.group(1)) if heading else None,
        "back": html_lib.unescape(back.group(1)) if back else None,
        "back_text": back.group(2) if back else None,
        "details": details.group(1) if details else "",
        "reason": html_lib.unescape(reason.group(1)) if reason else None,
        "lang": re.search(r'<html lang="([^"]+)"', body).group(1),  # type: ignore[union-attr]
    }


def test_a_used_login_link_says_so_and_leads_back_to_the_shops_cancel_address(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    draft = make_draft(repo, tenant, user)
    redirect = (
        f"http://localhost/editor/{draft.draft_hash}/edit"
        f"?callback={b64_url(DONE)}&callback_cancel={b64_url(CANCEL)}"
    )
    jwt = token(tenant, user, redirect=redirect)
    assert client.get("/auth", query_string={"jwt": jwt}).status_code == 302

    response = client.get("/auth", query_string={"jwt": jwt}, headers=GERMAN)
    assert response.status_code == 401
    assert response.mimetype == "text/html"
    body = response.get_data(as_text=True)
    parts = page_parts(body)
    assert parts["kind"] == "link_used"
    assert parts["lang"] == "de"
    assert parts["title"] == "Dieser Link wurde schon benutzt"
    assert parts["back"] == CANCEL  # the shop's way back, never the cart callback
    assert parts["back_text"] == "Zurück zum Shop"
    # The technical reason for the shop's developer, folded away with the request id.
    assert "was used already" in parts["reason"]
    assert "Technische Details" in parts["details"]
    request_id = response.headers["X-Request-ID"]
    assert f"<code>{request_id}</code>" in parts["details"]


def test_an_expired_login_link_leads_to_the_shops_start_page_without_a_cancel_address(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    draft = make_draft(repo, tenant, user)
    redirect = f"http://localhost/editor/{draft.draft_hash}/edit?callback={b64_url(DONE)}"
    now = int(time.time())
    jwt = token(tenant, user, redirect=redirect, iat=now - 600, exp=now - 300)

    body = client.get("/auth", query_string={"jwt": jwt}).get_data(as_text=True)
    parts = page_parts(body)
    assert parts["kind"] == "link_expired"
    assert parts["lang"] == "en"
    assert parts["title"] == "This link has expired"
    assert parts["back"] == f"{SHOP}/"  # the shop's origin, not its "add to cart" URL
    assert parts["back_text"] == "Back to the shop"


@pytest.mark.parametrize(
    ("redirect", "back"),
    [
        ("https://shop-a.example/after-login", "https://shop-a.example/"),  # allowed (conftest)
        ("https://evil.example/phish", None),
        # Not a URL at all (an IPv6 host whose bracket is never closed): no way back, and
        # the page still says the link expired (it was a 500).
        ("https://[shop-a.example/after-login", None),
        ("http://[::1/editor/x/edit?callback=aHR0cHM6Ly9zaG9wLWEuZXhhbXBsZS8=", None),
    ],
)
def test_an_expired_link_to_a_shop_page_leads_back_only_to_an_allowed_origin(
    client: FlaskClient, tenant: Client, user: User, redirect: str, back: str | None
) -> None:
    """The way back follows the rule of the redirect itself: a valid token sending the
    browser to an origin the client does not allow is refused, so its expired twin must not
    link there either."""
    now = int(time.time())
    jwt = token(tenant, user, redirect=redirect, iat=now - 600, exp=now - 300)
    response = client.get("/auth", query_string={"jwt": jwt})
    assert response.status_code == 401
    parts = page_parts(response.get_data(as_text=True))
    assert parts["kind"] == "link_expired"
    assert parts["back"] == back


def test_a_link_with_a_bad_signature_names_no_way_back(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    claims = {
        "client": tenant.identifier,
        "user": user.identifier,
        "iat": time.time(),
        "redirect": f"{SHOP}/evil",
    }
    forged = sign("not the client's key at all, but long enough", claims)
    response = client.get("/auth", query_string={"jwt": forged, "locale": "de"})
    parts = page_parts(response.get_data(as_text=True))
    assert response.status_code == 401
    assert parts["kind"] == "link_invalid"
    assert parts["title"] == "Dieser Link funktioniert nicht"
    assert parts["back"] is None  # an unsigned redirect is never offered


def test_logged_out_without_a_session_no_link(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    draft = make_draft(repo, tenant, user)
    response = client.get(f"/editor/{draft.draft_hash}/edit?locale=de")
    assert response.status_code == 401
    parts = page_parts(response.get_data(as_text=True))
    assert parts["kind"] == "logged_out"
    assert parts["title"] == "Sie sind abgemeldet"
    assert parts["back"] is None


def test_another_users_design_and_an_unknown_design_lead_back_through_the_session(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    mine = make_draft(repo, tenant, user)
    stranger = repo.create_user(tenant.identifier, {})
    theirs = make_draft(repo, tenant, stranger)
    log_in(
        client,
        tenant,
        user,
        redirect=f"http://localhost/editor/{mine.draft_hash}/edit"
        f"?callback={b64_url(DONE)}&callback_cancel={b64_url(CANCEL)}&locale=de",
    )
    assert client.get(f"/editor/{mine.draft_hash}/edit?locale=de").status_code == 200

    response = client.get(f"/editor/{theirs.draft_hash}/edit")
    assert response.status_code == 401
    parts = page_parts(response.get_data(as_text=True))
    assert (parts["kind"], parts["lang"]) == ("logged_out", "de")  # the session's language
    assert parts["back"] == CANCEL

    response = client.get("/editor/nosuchdesign0000000000000000000/preview")
    assert response.status_code == 404
    parts = page_parts(response.get_data(as_text=True))
    assert parts["kind"] == "unknown_design"
    assert parts["title"] == "Dieses Design wurde nicht gefunden"
    assert parts["back"] == CANCEL
    assert parts["reason"] == "There is no such design."


def test_pages_without_a_shopper_story_follow_the_status(client: FlaskClient) -> None:
    response = client.get("/no/such/page", headers=GERMAN)
    assert response.status_code == 404
    parts = page_parts(response.get_data(as_text=True))
    assert (parts["kind"], parts["title"]) == ("not_found", "Seite nicht gefunden")
    assert parts["back"] is None
    parts = page_parts(client.get("/no/such/page").get_data(as_text=True))
    assert (parts["kind"], parts["lang"], parts["title"]) == ("not_found", "en", "Page not found")


@pytest.mark.parametrize("locale", LOCALES)
def test_every_kind_of_page_has_its_words_in_every_locale(locale: str) -> None:
    t = Translator(locale)
    english = Translator("en")
    for kind in KINDS:
        for part in ("title", "text"):
            code = f"error.{kind}.{part}"
            assert t.knows(code), code
            if locale != "en":
                assert t(code) != english(code), f"{code} is not translated into {locale}"


def test_a_form_from_an_older_login_says_the_page_is_out_of_date(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    draft = make_draft(repo, tenant, user)
    log_in(client, tenant, user)
    response = client.post(
        f"/editor/{draft.draft_hash}/edit?locale=de",
        data={"csrf_token": "from-another-login", "v:headline": "Hallo", "action": "save"},
    )
    assert response.status_code == 403
    parts = page_parts(response.get_data(as_text=True))
    assert (parts["kind"], parts["title"]) == ("stale_form", "Diese Seite ist veraltet")
    assert "security token" in parts["reason"]
    assert repo.get_draft(tenant.identifier, draft.draft_hash).values == {}  # type: ignore[union-attr]


def test_the_way_back_is_only_ever_a_plain_shop_address() -> None:
    from pps.auth.way_back import from_callbacks, from_redirect, from_session_entries

    base = "http://localhost"
    allowed = [SHOP]
    assert from_redirect(f"{SHOP}/after-login?x=1", base_url=base, allowed_origins=allowed) == (
        f"{SHOP}/"
    )
    # An origin the login itself would have refused is no way back either.
    assert from_redirect(f"{SHOP}/after-login", base_url=base, allowed_origins=()) is None
    assert from_redirect("https://evil.example/x", base_url=base, allowed_origins=allowed) is None
    assert from_redirect(None, base_url=base, allowed_origins=allowed) is None
    # An editor URL without callbacks names none.
    assert from_redirect(f"{base}/editor/abc/edit", base_url=base, allowed_origins=allowed) is None
    # A callback_cancel that is not a web address is never followed; the shop's origin is.
    assert from_callbacks(
        {"callback_cancel": "javascript:alert(1)", "callback": DONE}, base_url=base
    ) == (f"{SHOP}/")
    assert from_callbacks({"callback_cancel": CANCEL}, base_url=base) == CANCEL
    assert from_callbacks({}, base_url=base) is None
    entries = {
        "a": {"step": "edit"},
        "b": {"callbacks": {"callback_cancel": "https://other.example/back"}},
        "c": {"callbacks": {"callback_cancel": CANCEL}},
    }
    assert from_session_entries(entries, base_url=base, prefer=["c"]) == CANCEL
    assert from_session_entries(entries, base_url=base) == "https://other.example/back"
    assert from_session_entries("garbage", base_url=base) is None


def test_the_details_are_folded_until_opened(client: FlaskClient) -> None:
    body = client.get("/no/such/page").get_data(as_text=True)
    assert '<details class="error-details">' in body  # no ``open``: collapsed
    assert "<summary>Technical details</summary>" in body
