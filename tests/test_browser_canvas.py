"""The card in a real Chromium: click a text on it, type, see the preview follow; zoom,
guides, the page switcher, the phone layout, locked drafts and the postcard whose required
field is still empty.

pps runs under gunicorn (the deploy config, a real Redis); the test creates the client,
imports the example templates with the ``pps`` CLI, creates users and drafts through the
API and logs the browser in through ``/auth`` with a token signed as shops sign it.
Screenshots at desktop and phone width go to ``test-artifacts/``. Without Chromium or
Playwright the tests are skipped locally and fail when ``CI`` is set.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
from server_support import ROOT, Server, api_json, shop_token
from test_browser import (
    ARTIFACTS,
    SHOWN_PIXELS,
    chromium,
    pps_server,
    watch_csp,
    watch_refusals,
)

pytestmark = pytest.mark.slow

__all__ = ["chromium", "pps_server"]  # fixtures shared with test_browser.py

EXAMPLES = ROOT / "examples" / "templates"
MM = 96 / 25.4  # CSS pixels per millimetre

#: Every pps:* event the page dispatches, in order (an init script: it runs before the
#: page's own scripts and is not subject to the page's CSP).
RECORD_EVENTS = """
window.__events = [];
for (const name of ["pps:loaded", "pps:paged", "pps:scope-changed", "pps:changed"]) {
  document.addEventListener(name, e => window.__events.push([name, e.detail]));
}
"""

#: The image shows the latest values: its data-seq caught up with the form's.
CAUGHT_UP = """img => img.src.startsWith('blob:') && img.complete && img.naturalWidth > 0
  && img.getAttribute('data-seq')
     === document.getElementById('editor-form').getAttribute('data-seq')"""


#: The autosave stored everything on the page (static/editor-autosave.js's status).
AUTOSAVED = """() => document.getElementById('autosave-status')
  .getAttribute('data-state') === 'saved'"""


@dataclass
class Shop:
    server: Server
    client: str
    api_key: str
    templates: dict[str, str]

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return api_json(self.server.base_url, self.api_key, method, path, body)

    def editor_login(self, template: str, **draft: Any) -> tuple[str, str]:
        """(login URL that lands in the editor, draft hash) for a new user and draft."""
        user = self.api("POST", "/api-ext/user", {"firstName": "Grace"})["data"]["identifier"]
        body = {"templateIdentifier": self.templates[template], "userIdentifier": user, **draft}
        draft_hash = self.api("POST", "/api-ext/draft", body)["data"]["draftHash"]
        base = self.server.base_url
        claims = {
            "client": self.client,
            "user": user,
            "redirect": f"{base}/editor/{draft_hash}/edit?locale=en",
            "iat": round(time.time(), 6),
        }
        token = shop_token(self.api_key, claims, {"jti": uuid.uuid4().hex})
        return f"{base}/auth?{urlencode({'jwt': token})}", draft_hash


@pytest.fixture(scope="module")
def shop(pps_server: Server) -> Shop:
    created = pps_server.pps("client", "create", "--name", "Canvas shop", "--json")
    templates = {}
    for name in ("business-card", "postcard"):
        imported = pps_server.pps(
            "template",
            "import",
            str(EXAMPLES / name / "template.json"),
            "--client",
            created["identifier"],
            "--json",
        )
        templates[name] = imported["identifier"]
    return Shop(pps_server, created["identifier"], created["apiKey"], templates)


@pytest.fixture
def desktop(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    context.add_init_script(RECORD_EVENTS)
    try:
        yield context
    finally:
        context.close()


def events(page: Any, name: str) -> list[Any]:
    return [detail for event, detail in page.evaluate("window.__events") if event == name]


def box(locator: Any) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None
    return dict(found)


def wait_loaded(page: Any, selector: str = "img.page-image") -> None:
    page.wait_for_function(
        "sel => [...document.querySelectorAll(sel)].every(i => i.complete && i.naturalWidth > 0)",
        arg=selector,
        timeout=20_000,
    )


def test_click_a_text_on_the_card_type_and_the_preview_follows(desktop: Any, shop: Shop) -> None:
    login, draft_hash = shop.editor_login("business-card")
    page = desktop.new_page()
    csp = watch_csp(page)
    page.goto(login)
    assert page.url.startswith(f"{shop.server.base_url}/editor/{draft_hash}/edit")
    wait_loaded(page)
    image = page.locator("img.page-image").first
    before = image.evaluate(SHOWN_PIXELS)
    loaded = events(page, "pps:loaded")
    assert len(loaded) == 1
    assert loaded[0]["hash"] == draft_hash and loaded[0]["pages"] == 1
    assert [key["name"] for key in loaded[0]["dataKeys"]] == [
        "name",
        "title",
        "phone",
        "email",
        "url",
        "logo",
    ]
    assert page.evaluate("ppsEditor.pageCount()") == 1

    # The name's hotspot sits on the name's box (x 12, y 8, 68 x 8 mm of 85 x 55).
    spot = page.locator(".hotspot[data-key='name']")
    card, where = box(image), box(spot)
    assert abs(where["x"] - (card["x"] + card["width"] * 12 / 85)) < 2
    assert abs(where["y"] - (card["y"] + card["height"] * 8 / 55)) < 2
    assert abs(where["width"] - card["width"] * 68 / 85) < 2

    # Click it: an input over the text, holding the value; typing edits the form field.
    spot.click()
    inplace = page.locator("input.inplace")
    assert inplace.is_visible()
    assert inplace.evaluate("el => el === document.activeElement")
    assert inplace.input_value() == "Alex Example"
    assert page.locator("#preview-status").inner_text() == (
        "Editing “Your name”. Enter or Escape returns to the card."  # the template's label
    )
    page.keyboard.press("Control+A")
    page.keyboard.type("Grace Hopper", delay=20)
    assert page.locator("#f-0").input_value() == "Grace Hopper"
    page.wait_for_function(CAUGHT_UP, arg=image.element_handle(), timeout=20_000)
    assert image.evaluate(SHOWN_PIXELS) != before
    assert page.locator("#preview-status").inner_text() == "Preview updated."
    assert events(page, "pps:changed")[-1] == {"key": "name", "value": "Grace Hopper"}
    assert {"key": "name"} in events(page, "pps:scope-changed")
    # Enter leaves the card's input and returns to the hotspot.
    page.keyboard.press("Enter")
    assert inplace.count() == 0
    assert page.evaluate("document.activeElement.getAttribute('data-key')") == "name"

    # Keyboard only: Tab to the next text, Enter edits it, Escape goes back.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('data-key')") == "title"
    assert page.locator(".field[data-key='title']").evaluate(
        "el => el.classList.contains('active')"
    )
    page.keyboard.press("Enter")
    assert page.locator("input.inplace").input_value() == "Print Production Manager"
    page.keyboard.press("Escape")
    assert page.locator("input.inplace").count() == 0

    # The form beside the card is the same value; a script can set one too.
    assert page.evaluate("ppsEditor.update('title', 'Rear Admiral')") is True
    assert page.locator("#f-1").input_value() == "Rear Admiral"
    assert events(page, "pps:changed")[-1] == {"key": "title", "value": "Rear Admiral"}
    page.wait_for_function(CAUGHT_UP, arg=image.element_handle(), timeout=20_000)
    assert page.evaluate("ppsEditor.update('no such key', 'x')") is False

    # Zoom: 100 % is the print size on screen, 200 % twice that; fit fills the column.
    frame = page.locator(".page-frame").first
    page.get_by_role("button", name="200 %").click()
    assert abs(box(frame)["width"] - 2 * 85 * MM) < 2
    assert page.get_by_role("button", name="200 %").get_attribute("aria-pressed") == "true"
    page.get_by_role("button", name="100 %").click()
    assert abs(box(frame)["width"] - 85 * MM) < 2
    page.get_by_role("button", name="Fit").click()
    stage = box(page.locator("#canvas-stage"))
    assert box(frame)["width"] > 85 * MM
    assert box(frame)["width"] <= stage["width"]

    # Guides: trim on the image's edge, bleed 3 mm outside, safe area 3 mm inside.
    assert not page.locator(".guide-trim").first.is_visible()
    page.get_by_label("Show trim, bleed and safe area").check()
    card = box(image)
    scale = card["width"] / 85
    trim, bleed, safe = (
        box(page.locator(f".guide-{name}").first) for name in ("trim", "bleed", "safe")
    )
    assert abs(trim["x"] - card["x"]) < 2 and abs(trim["width"] - card["width"]) < 2
    assert abs(bleed["x"] - (card["x"] - 3 * scale)) < 2
    assert abs(bleed["height"] - (card["height"] + 6 * scale)) < 2
    assert abs(safe["y"] - (card["y"] + 3 * scale)) < 2
    assert page.locator("#guides-legend").is_visible()

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "editor-canvas.png"), full_page=True)

    # The autosave stores what was typed on the card a second after the last change (when
    # the steps above took that long, it has already), and the Save button saves it too.
    # That previews alone never save is test_editor's
    # test_live_preview_renders_unsaved_values_without_saving.
    page.wait_for_function(AUTOSAVED, timeout=20_000)
    assert shop.api("GET", f"/api-ext/draft/{draft_hash}")["data"]["state"] == "edited"
    page.reload()
    assert page.locator("#f-0").input_value() == "Grace Hopper"
    assert page.locator("#f-1").input_value() == "Rear Admiral"
    with page.expect_navigation():
        page.get_by_role("button", name="Save", exact=True).click()
    saved = shop.api("GET", f"/api-ext/draft/{draft_hash}")["data"]
    assert saved["state"] == "edited"
    assert csp == []


def test_phone_keeps_the_card_in_view_with_one_primary_action(chromium: Any, shop: Shop) -> None:
    login, _ = shop.editor_login("business-card")
    context = chromium.new_context(
        viewport={"width": 390, "height": 844}, locale="en-GB", has_touch=True
    )
    try:
        page = context.new_page()
        csp = watch_csp(page)
        page.goto(login)
        wait_loaded(page)
        # One primary action; the others in a closed menu.
        assert page.get_by_role("button", name="Save", exact=True).is_visible()
        finish = page.get_by_role("button", name="Finish and return to shop")
        assert not finish.is_visible()
        menu = page.locator(".more-actions > summary")
        assert menu.is_visible() and menu.inner_text() == "More actions"

        # Type into the last field: the card stays on screen above it.
        url_field = page.locator("#f-4")
        url_field.scroll_into_view_if_needed()
        url_field.fill("")
        url_field.press_sequentially("https://grace.example", delay=20)
        image = page.locator("img.page-image").first
        page.wait_for_function(CAUGHT_UP, arg=image.element_handle(), timeout=20_000)
        card, field = box(image), box(url_field)
        assert card["y"] >= -1 and card["y"] + card["height"] <= 844
        assert field["y"] >= card["y"] + card["height"] - 1  # not hidden under the card
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=str(ARTIFACTS / "editor-canvas-phone.png"))

        menu.click()
        assert finish.is_visible()
        # Touch targets: every visible control of the editor is at least 44 px tall.
        small = page.evaluate(
            """() => [...document.querySelectorAll(
                 '#editor a, #editor button, #editor input, #editor textarea, #editor summary')]
               .filter(el => !el.classList.contains('hotspot') && !el.classList.contains('skip'))
               .filter(el => el.type !== 'hidden' && el.getClientRects().length)
               // A checkbox or radio is the size of its label: the label is what is tapped.
               .map(el => [el.tagName + '.' + el.className + '#' + el.id,
                           (['checkbox', 'radio'].includes(el.type) ? el.closest('label') : el)
                             .getBoundingClientRect().height])
               .filter(([, height]) => height < 44)"""
        )
        assert small == []
        page.screenshot(path=str(ARTIFACTS / "editor-canvas-phone-menu.png"), full_page=True)
        assert csp == []
    finally:
        context.close()


def test_postcard_with_an_empty_required_field_shows_and_updates_both_pages(
    desktop: Any, shop: Shop
) -> None:
    login, _ = shop.editor_login("postcard")  # recipientName is required and left empty
    page = desktop.new_page()
    csp = watch_csp(page)
    page.goto(login)
    wait_loaded(page)  # both pages, not broken images
    wait_loaded(page, "img[data-thumb]")
    front, back = page.locator("img.page-image").nth(0), page.locator("img.page-image").nth(1)
    assert front.is_visible() and not back.is_visible()  # one page at a time

    # The page switcher shows the back; its thumbnail says which page is current.
    page.get_by_role("button", name="Show page 2 of 2").click()
    assert back.is_visible() and not front.is_visible()
    assert page.evaluate("ppsEditor.currentPage()") == 1
    assert events(page, "pps:paged") == [{"page": 1}]
    assert page.get_by_role("button", name="Show page 2 of 2").get_attribute("aria-current")

    # Filling the required field updates the back; the front follows its own field, and
    # focusing that field brings the front into view.
    recipient = page.locator("[name='v:recipientName']")
    recipient.click()
    recipient.press_sequentially("Jo Example", delay=20)
    page.wait_for_function(CAUGHT_UP, arg=back.element_handle(), timeout=20_000)
    headline = page.locator("[name='v:headline']")
    headline.click()
    assert front.is_visible() and page.evaluate("ppsEditor.currentPage()") == 0
    headline.fill("Hello from the coast")
    page.wait_for_function(CAUGHT_UP, arg=front.element_handle(), timeout=20_000)
    assert page.evaluate(
        "[...document.querySelectorAll('img.page-image')].map(i => i.naturalWidth)"
    ) == [960, 960]
    assert page.locator("img[data-thumb='0']").get_attribute("src") == front.get_attribute("src")

    # Emptied again: still an image (drawn without it), and the field says it is missing.
    recipient.fill("")
    page.wait_for_function(CAUGHT_UP, arg=back.element_handle(), timeout=20_000)
    assert "Still empty" in page.locator(f"#{recipient.get_attribute('id')}-error").inner_text()
    page.screenshot(path=str(ARTIFACTS / "editor-canvas-postcard.png"), full_page=True)
    assert csp == []


def test_proof_of_a_postcard_with_an_empty_required_field_says_what_to_fix(
    desktop: Any, shop: Shop
) -> None:
    """The proof is the print file, which a missing required value keeps from rendering:
    the proof step (its tab is always there) says which field to fill, with a link to it,
    instead of showing broken images and a button to approve them."""
    login, draft_hash = shop.editor_login("postcard")  # recipientName is required and empty
    page = desktop.new_page()
    refused = watch_refusals(page)
    page.goto(login)
    wait_loaded(page)
    with page.expect_navigation():
        page.get_by_role("link", name="Proof", exact=True).click()
    assert f"/editor/{draft_hash}/proof" in page.url
    summary = page.get_by_role("alert")
    assert "Recipient's name" in summary.inner_text()
    assert page.locator("img.proof-image").count() == 0
    assert page.get_by_role("button", name="Approve the proof and finish").count() == 0
    assert refused == []
    with page.expect_navigation():
        summary.get_by_role("link").first.click()
    assert f"/editor/{draft_hash}/edit" in page.url
    assert page.url.endswith("#" + page.get_by_label("Recipient's name").get_attribute("id"))

    # Filled in, the proof shows both pages again.
    page.get_by_label("Recipient's name").fill("Jo Example")
    with page.expect_navigation():
        page.get_by_role("button", name="Save", exact=True).click()
    with page.expect_navigation():
        page.get_by_role("link", name="Proof", exact=True).click()
    wait_loaded(page, "img.proof-image")
    assert page.locator("img.proof-image").count() == 2
    assert page.get_by_role("alert").count() == 0
    assert refused == []


def test_locked_draft_is_read_only_in_the_browser(desktop: Any, shop: Shop) -> None:
    login, _ = shop.editor_login("business-card", locked=True)
    page = desktop.new_page()
    page.goto(login)
    wait_loaded(page)
    assert page.get_by_text("This design is read-only.").first.is_visible()
    assert page.locator(".hotspot").count() == 0
    assert page.locator("#f-0").is_disabled()
    assert page.evaluate("ppsEditor.update('name', 'x')") is False
    assert page.evaluate("ppsEditor.info().locked") is True
    page.locator("img.page-image").click()
    assert page.locator(".inplace").count() == 0
    assert page.get_by_role("button", name="Save", exact=True).count() == 0
