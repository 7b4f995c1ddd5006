"""The reviewer's page in the reader's language: every text from the gettext catalogues
(``review.*`` codes in ``pps/translations/{en,de}``), the locale from ``?locale=`` (kept
through the decision form and its redirect), else the reviewer's own, else English.

Logs in as the PHP SDK's review URL does (``src/Url/Review.php``: ``/auth`` with
``redirect`` = ``{base}/review/{id}``), see ``test_reviews_api``.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from conftest import ApiClient
from flask.testing import FlaskClient
from processing_support import card_draft, card_template
from test_reviews_api import create, csrf_of, log_in, version_of

import pps.reviews.web
from pps.platform.models import Client, Draft, User
from pps.platform.repository.sql import SqlRepository
from pps.translations import LOCALES, catalog
from pps.web.i18n import Translator

REVIEWS = Path(pps.reviews.web.__file__).resolve().parent
TEMPLATE = REVIEWS / "templates" / "review.html"


def codes_asked() -> set[str]:
    asked = set(re.findall(r"\bt\('(review\.[\w.]+)'", TEMPLATE.read_text()))
    for module in ("web.py", "model.py"):
        asked.update(re.findall(r'"(review\.[\w.]+)"', (REVIEWS / module).read_text()))
    return {code for code in asked if not code.endswith(".html")}  # the template's name


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client) -> Draft:
    return card_draft(repo, tenant, card_template(repo, tenant), "Ada Lovelace")


def open_page(
    client: FlaskClient, tenant: Client, user: User, review_id: str, query: str = ""
) -> str:
    assert log_in(client, tenant, user, review_id).status_code == 302
    page = client.get(f"/review/{review_id}{query}")
    assert page.status_code == 200, page.get_data(as_text=True)
    return page.get_data(as_text=True)


def test_every_code_of_the_page_is_in_both_catalogues_and_translated() -> None:
    asked = codes_asked()
    assert len(asked) >= 25
    for locale in LOCALES:
        known = {str(message.id) for message in catalog(locale) if message.id}
        assert asked - known == set(), locale
    english, german = Translator("en"), Translator("de")
    for code in asked:
        assert german.knows(code)
        if code != "review.state_heading":  # "Review:" vs "Freigabe:" differ anyway
            assert german(code) != english(code) or "%(" in english(code), code


def test_the_template_has_no_text_of_its_own() -> None:
    """Outside Jinja expressions, tags and comments, only punctuation is left: every word a
    reader sees comes from a catalogue."""
    source = TEMPLATE.read_text()
    source = re.sub(r"\{#.*?#\}|\{\{.*?\}\}|\{%.*?%\}", " ", source, flags=re.S)
    source = re.sub(r"<[^>]*>", " ", source)
    leftover = html.unescape(source).split()
    assert [word for word in leftover if re.search(r"[A-Za-z]", word)] == []


def test_locale_from_the_query_is_kept_through_the_form_and_the_redirect(
    client: FlaskClient, api: ApiClient, tenant: Client, draft: Draft, repo: SqlRepository
) -> None:
    reviewer = repo.create_user(tenant.identifier, {})
    review_id = create(api, draft.draft_hash, [reviewer.identifier])
    page = open_page(client, tenant, reviewer, review_id, "?locale=de-DE")
    assert '<html lang="de">' in page
    for text in (
        "Korrekturabzug: Business card",
        "Noch nicht entschieden",
        "Freigeben",
        "Ablehnen",
        "Seite 1 von 1",
        "Ihre Entscheidung",
    ):
        assert text in html.unescape(page), text
    assert "Approve" not in page and "Decisions" not in page
    action = html.unescape(re.search(r'<form method="post" action="([^"]+)"', page).group(1))  # type: ignore[union-attr]
    assert action == f"/review/{review_id}?locale=de"
    form = {"csrf_token": csrf_of(page), "version": version_of(page), "decision": "reject"}
    refused = client.post(action, data=form)
    assert refused.status_code == 422
    assert "Eine Ablehnung braucht einen Kommentar" in html.unescape(refused.get_data(as_text=True))
    done = client.post(action, data={**form, "decision": "approve"})
    assert done.status_code == 303
    assert done.headers["Location"].endswith(f"/review/{review_id}?locale=de")
    after = html.unescape(client.get(done.headers["Location"]).get_data(as_text=True))
    assert "Diese Freigabe ist beendet (Von allen Prüfenden freigegeben)" in after


def test_the_reviewers_own_locale_and_english_otherwise(
    client: FlaskClient, api: ApiClient, tenant: Client, draft: Draft, repo: SqlRepository
) -> None:
    german = repo.create_user(tenant.identifier, {"locale": "de"})
    english = repo.create_user(tenant.identifier, {})
    review_id = create(api, draft.draft_hash, [german.identifier, english.identifier])
    page = html.unescape(open_page(client, tenant, german, review_id))
    assert "Entscheidungen" in page and f"{german.identifier} (Sie)" in page
    assert "Approve" in open_page(client, tenant, german, review_id, "?locale=en")
    other = client.application.test_client()
    page = html.unescape(open_page(other, tenant, english, review_id, "?locale=fr"))
    assert '<html lang="en">' in page
    assert "Proof: Business card" in page and "Not decided yet" in page
    assert f"{english.identifier} (you)" in page
