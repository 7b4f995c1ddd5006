"""One gettext catalogue per locale, complete, and nothing English on a German page.

Every catalogue found under ``pps/translations`` holds exactly the codes of the English
one; every page template asks only for codes they have; and every page a shopper or a
reviewer can see (the editor's steps, a form with errors, a locked design, the proof page
and every kind of error page), rendered under ``de``, shows no English text of the
catalogue and no raw message code. Only the technical reason of an error page, marked
``lang="en"`` and folded away, is English on purpose.
"""

from __future__ import annotations

import re
import shutil
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import ApiClient
from flask.testing import FlaskClient
from test_editor import b64_url, form, log_in, make_draft, open_editor, sign
from test_reviews_api import create, log_in_and_open

from pps.platform.models import Client, User
from pps.platform.repository.sql import SqlRepository
from pps.translations import DEFAULT_LOCALE, LOCALES, catalog, catalog_path, found_locales

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE_DIRS = [ROOT / "pps" / "web" / "templates", ROOT / "pps" / "reviews" / "templates"]
_PLACEHOLDER = re.compile(r"%\((\w+)\)[-#0 +]*\d*(?:\.\d+)?[sdgf]")
#: English the interface once had hard-coded, which must never come back on a German page.
ENGLISH = [
    "Something went wrong",
    "Request id",
    "Quote it",
    "Back to the shop",
    "Not decided yet",
    "You are logged",
    "Your decision",
]


def messages(locale: str) -> dict[tuple[str | None, str], str]:
    return {(m.context, str(m.id)): str(m.string) for m in catalog(locale) if m.id}


# -- the catalogues ----------------------------------------------------------------------


def test_english_and_german_are_found_and_hold_the_same_codes() -> None:
    assert LOCALES[0] == DEFAULT_LOCALE == "en"
    assert "de" in LOCALES
    english = messages("en")
    for locale in LOCALES:
        found = messages(locale)
        assert set(found) == set(english), locale
        for key, text in found.items():
            assert text.strip(), f"{key} is empty in {locale}"
            assert _PLACEHOLDER.findall(text) == _PLACEHOLDER.findall(english[key]) or sorted(
                _PLACEHOLDER.findall(text)
            ) == sorted(_PLACEHOLDER.findall(english[key])), (locale, key)


def test_adding_a_locale_is_adding_a_catalogue_file(tmp_path: Path) -> None:
    root = tmp_path / "translations"
    for locale in LOCALES:
        target = root / locale / "LC_MESSAGES"
        target.mkdir(parents=True)
        shutil.copy(catalog_path(locale), target / "messages.po")
    assert found_locales(root) == LOCALES
    french = root / "fr" / "LC_MESSAGES"
    french.mkdir(parents=True)
    shutil.copy(catalog_path("de"), french / "messages.po")
    assert found_locales(root) == (*LOCALES, "fr")
    (root / "it").mkdir()  # a folder without a catalogue is no locale
    assert found_locales(root) == (*LOCALES, "fr")


def test_every_page_template_asks_only_for_codes_the_catalogues_have() -> None:
    known = {code for context, code in messages("en") if context is None}
    asked: dict[str, str] = {}
    for folder in TEMPLATE_DIRS:
        for template in folder.glob("*.html"):
            for code in re.findall(r"\bt\('([\w.]+)'", template.read_text()):
                asked[code] = template.name
    assert len(asked) > 40
    assert {code: name for code, name in asked.items() if code not in known} == {}


def test_shopper_and_reviewer_pages_have_no_hard_coded_english() -> None:
    """Text between tags in the page templates comes from ``t()`` or from the data."""
    for folder in TEMPLATE_DIRS:
        for template in folder.glob("*.html"):
            if template.name in {"home.html", "docs.html"}:  # the operator's pages
                continue
            source = re.sub(
                r"\{#.*?#\}|\{%.*?%\}|\{\{.*?\}\}", " ", template.read_text(), flags=re.S
            )
            source = re.sub(r"<[^>]*>", " ", source)
            words = [w for w in re.findall(r"[A-Za-z][a-z]{2,}", source) if w not in {"pps"}]
            assert words == [], (template.name, words)


# -- pages rendered under de -------------------------------------------------------------


class _Text(HTMLParser):
    """Visible text and the attributes people read, outside ``lang="en"`` and user values."""

    SHOWN_ATTRS = ("alt", "title", "aria-label", "placeholder", "summary")
    SKIP_TAGS = frozenset({"script", "style", "textarea", "code"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._stack: list[tuple[str, bool]] = []

    def _skipping(self) -> bool:
        return any(skip for _, skip in self._stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        skip = values.get("lang") == "en" or tag in self.SKIP_TAGS
        if not self._skipping() and not skip:
            self.parts.extend(v for k, v in attrs if v and (k in self.SHOWN_ATTRS))
            self.parts.extend(v for k, v in attrs if v and k.startswith("data-msg-"))
            if tag in {"input", "button"} and values.get("type") in {"submit", "button"}:
                self.parts.append(values.get("value") or "")
        if tag not in {"input", "img", "meta", "link", "br", "hr"}:
            self._stack.append((tag, skip))

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            if self._stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if not self._skipping() and data.strip():
            self.parts.append(data.strip())


def shown_text(page: str) -> str:
    parser = _Text()
    parser.feed(page)
    return "\n".join(parser.parts)


def english_fragments() -> list[str]:
    """Pieces of every English message that German words differently (8+ characters)."""
    german = messages("de")
    fragments = set()
    for key, text in messages("en").items():
        if german.get(key) == text:
            continue
        for piece in _PLACEHOLDER.split(text):
            piece = piece.strip(" .:,()")
            if len(piece) >= 8 and piece not in german[key]:
                fragments.add(piece)
    return sorted(fragments)


def assert_german(page: str, where: str) -> None:
    text = shown_text(page)
    assert text, where
    codes = {code for _, code in messages("en") if "." in code}
    raw = [code for code in codes if re.search(rf"(?<![\w.]){re.escape(code)}(?![\w.])", text)]
    assert raw == [], (where, raw)
    english = [piece for piece in english_fragments() + ENGLISH if piece in text]
    assert english == [], (where, english, text)
    assert '<html lang="de">' in page, where


def test_every_editor_page_under_de_comes_from_the_catalogue(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    draft = make_draft(repo, tenant, user)
    shop = "https://shop.example"
    log_in(
        client,
        tenant,
        user,
        redirect=f"http://localhost/editor/{draft.draft_hash}/edit"
        f"?callback={b64_url(shop + '/done')}&locale=de",
    )
    english, _ = open_editor(client, f"/editor/{draft.draft_hash}/edit?locale=en")
    relabelled = english.replace('lang="en"', 'lang="de"')
    with pytest.raises(AssertionError):  # the check itself sees English
        assert_german(relabelled, "English edit")
    assert "Save and preview" in shown_text(relabelled)
    edit, token = open_editor(client, f"/editor/{draft.draft_hash}/edit?locale=de")
    assert_german(edit, "edit")
    assert "Speichern" in shown_text(edit)
    assert_german(client.get(f"/editor/{draft.draft_hash}/preview").get_data(as_text=True), "pre")

    # A form with problems: every message beside its field, and the summary.
    invalid = client.post(
        f"/editor/{draft.draft_hash}/edit",
        data={**form(token, headline="", phone="x" * 31), "action": "save"},
    )
    assert invalid.status_code == 422
    assert_german(invalid.get_data(as_text=True), "edit with errors")

    # Saved and finished notices.
    saved = client.post(
        f"/editor/{draft.draft_hash}/edit", data={**form(token, headline="Hallo"), "action": "save"}
    )
    assert saved.status_code == 303
    assert_german(client.get(saved.headers["Location"]).get_data(as_text=True), "saved")

    # The proof step, and a form made on a version that changed meanwhile (a conflict).
    proof = client.get(f"/editor/{draft.draft_hash}/proof")
    assert proof.status_code == 200
    assert_german(proof.get_data(as_text=True), "proof")
    stale = client.post(
        f"/editor/{draft.draft_hash}/edit",
        data={**form(token, headline="Alt"), "action": "save", "base_version": "1"},
    )
    assert stale.status_code == 409
    assert_german(stale.get_data(as_text=True), "conflict")

    # A locked design, read-only with its message, and a query callback that is refused.
    repo.update_draft(tenant.identifier, draft.draft_hash, flags={"locked": True})
    for step in ("edit", "preview", "proof", "embed", "3d"):
        page = client.get(
            f"/editor/{draft.draft_hash}/{step}?callback_cancel={b64_url('https://evil.example/')}"
        ).get_data(as_text=True)
        assert_german(page, f"locked {step}")


def test_every_error_page_under_de_comes_from_the_catalogue(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    german = {"Accept-Language": "de"}
    draft = make_draft(repo, tenant, user)
    claims: dict[str, Any] = {
        "client": tenant.identifier,
        "user": user.identifier,
        "iat": round(time.time(), 6),
    }
    used = sign(tenant.api_key, claims)
    client.get("/auth", query_string={"jwt": used})
    now = int(time.time())
    pages = {
        "used": client.get("/auth", query_string={"jwt": used}, headers=german),
        "expired": client.get(
            "/auth",
            query_string={"jwt": sign(tenant.api_key, {**claims, "exp": now - 300})},
            headers=german,
        ),
        "invalid": client.get("/auth?jwt=abc", headers=german),
        "no token": client.get("/auth", headers=german),
        "unknown design": client.get("/editor/nosuchdesign/edit", headers=german),
        "not found": client.get("/nowhere", headers=german),
        "method": client.post("/", headers=german),
        "step": client.get(f"/editor/{draft.draft_hash}/nostep", headers=german),
        "api token": client.get(f"/editor/{draft.draft_hash}/edit?api_token=k&locale=de"),
    }
    for name, response in pages.items():
        assert response.status_code >= 400, name
        assert_german(response.get_data(as_text=True), name)
    fresh = client.application.test_client()
    logged_out = fresh.get(f"/editor/{draft.draft_hash}/edit?locale=de")
    assert logged_out.status_code == 401
    assert_german(logged_out.get_data(as_text=True), "logged out")
    landing = fresh.get("/auth", query_string={"jwt": sign(tenant.api_key, claims)}, headers=german)
    assert landing.status_code == 200
    assert_german(landing.get_data(as_text=True), "logged in")


def test_the_review_page_under_de_comes_from_the_catalogue(
    client: FlaskClient, api: ApiClient, repo: SqlRepository, tenant: Client
) -> None:
    from processing_support import card_draft, card_template

    draft = card_draft(repo, tenant, card_template(repo, tenant), "Ada Lovelace")
    reviewer = repo.create_user(tenant.identifier, {})
    review_id = create(api, draft.draft_hash, [reviewer.identifier])
    log_in_and_open(client, tenant, reviewer, review_id)
    page = client.get(f"/review/{review_id}?locale=de").get_data(as_text=True)
    assert_german(page, "review")
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    version = re.search(r'name="version" value="([0-9]+)"', page).group(1)  # type: ignore[union-attr]
    rejected = client.post(
        f"/review/{review_id}?locale=de",
        data={"csrf_token": csrf, "version": version, "decision": "reject", "comment": ""},
    )
    assert rejected.status_code == 422
    body = rejected.get_data(as_text=True)
    assert "Eine Ablehnung braucht einen Kommentar" in body
    assert_german(body, "review with a problem")
