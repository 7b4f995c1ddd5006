"""A real Chromium never loses the customer's work and approves the proof (issue 14, 5 and 6).

pps under gunicorn and a shop server, as in :mod:`test_browser` (whose fixtures these tests
use): typing is autosaved (the state is shown), a reload keeps it, undo and redo work across
the reload, leaving with unsaved changes asks first, a change made through the shop's API is
a conflict rather than an overwrite, and with the client's proof approval required the
customer approves the proof and lands on the shop's callback. Screenshots go to
``test-artifacts/``. Skipped locally without Chromium; fails when ``CI`` is set.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from server_support import Server
from test_browser import (
    ARTIFACTS,
    ShopState,
    chromium,
    pps_server,
    shop,
    shop_draft,
    watch_csp,
)

__all__ = ["chromium", "pps_server", "shop"]  # fixtures, used by name

pytestmark = pytest.mark.slow

SAVED = "All changes saved."


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    tab = context.new_page()
    problems = watch_csp(tab)
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    try:
        yield tab
        assert problems == []
    finally:
        context.close()


def wait_saved(page: Any) -> None:
    page.wait_for_function(
        "() => { const s = document.getElementById('autosave-status');"
        f" return s.dataset.state === 'saved' && s.textContent === {SAVED!r}; }}",
        timeout=20_000,
    )


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def replace_text(page: Any, label: str, text: str) -> None:
    field = page.get_by_label(label)
    field.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(text, delay=10)


def test_typing_is_autosaved_kept_over_a_reload_and_undone_and_redone(
    page: Any, shop: ShopState, pps_server: Server
) -> None:
    page.goto(f"{shop.base_url}/start")
    assert page.url.startswith(f"{pps_server.base_url}/editor/{shop.draft_hash}/edit?")
    status = page.locator("#autosave-status")
    assert status.is_visible()
    assert status.get_attribute("role") == "status"
    assert status.get_attribute("aria-live") == "polite"
    assert status.inner_text() == SAVED
    undo, redo = page.get_by_role("button", name="Undo"), page.get_by_role("button", name="Redo")
    assert undo.is_disabled() and redo.is_disabled()
    page.evaluate(
        "window.savedVersions = [];"
        "document.addEventListener('pps:saved', e => window.savedVersions.push(e.detail.version))"
    )
    start_version = shop_draft(shop)["draftVersion"]

    replace_text(page, "name", "Grace Hopper")
    assert status.get_attribute("data-state") in ("unsaved", "saving", "saved")
    wait_saved(page)
    after_typing = shop_draft(shop)
    assert after_typing["state"] == "edited"
    assert page.locator("#draft-state").inner_text() == "edited"  # the header follows
    assert after_typing["draftVersion"] > start_version
    assert page.evaluate("window.savedVersions").count(after_typing["draftVersion"]) == 1
    assert page.locator("input[name='base_version']").input_value() == str(
        after_typing["draftVersion"]
    )
    shot(page, "autosave-saved.png")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.locator("#autosave-status").is_visible()
    shot(page, "autosave-phone.png")
    page.set_viewport_size({"width": 1280, "height": 900})

    # A reload of the tab: nothing lost, no warning (everything is saved).
    page.reload()
    assert page.get_by_label("name").input_value() == "Grace Hopper"
    assert status.inner_text() == SAVED
    assert not undo.is_disabled()  # the history came back from sessionStorage

    # Undo (button) and redo (keyboard) across the reload; each is saved too.
    undo.click()
    assert page.get_by_label("name").input_value() == "Alex Example"
    wait_saved(page)
    assert shop_draft(shop)["draftVersion"] == after_typing["draftVersion"] + 1
    assert not redo.is_disabled()
    page.get_by_label("title").focus()
    page.keyboard.press("Control+Shift+Z")
    assert page.get_by_label("name").input_value() == "Grace Hopper"
    wait_saved(page)
    page.keyboard.press("Control+Z")
    assert page.get_by_label("name").input_value() == "Alex Example"
    page.keyboard.press("Control+Y")
    assert page.get_by_label("name").input_value() == "Grace Hopper"
    wait_saved(page)
    shot(page, "autosave-undo-redo.png")

    # Leaving with unsaved changes asks first; staying keeps the text, which is then saved.
    dialogs: list[str] = []

    def stay(dialog: Any) -> None:
        dialogs.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", stay)
    replace_text(page, "title", "Rear Admiral")
    page.close(run_before_unload=True)
    page.wait_for_timeout(300)
    assert dialogs == ["beforeunload"]
    assert not page.is_closed()
    wait_saved(page)
    page.reload()
    assert page.get_by_label("title").input_value() == "Rear Admiral"


def test_a_change_through_the_api_is_a_conflict_not_an_overwrite(
    page: Any, shop: ShopState, pps_server: Server
) -> None:
    page.goto(f"{shop.base_url}/start")
    replace_text(page, "title", "Saved first")
    wait_saved(page)

    # The shop changes the draft meanwhile (its API), then the customer types on.
    changed = shop.api(
        "PUT",
        f"/api-ext/draft/{shop.draft_hash}",
        {"customAttributes": {"orderId": "A-1"}},
    )["data"]
    replace_text(page, "title", "Mine")
    conflict = page.locator("#autosave-conflict")
    conflict.wait_for(state="visible", timeout=20_000)
    assert conflict.get_attribute("role") == "alert"
    assert "changed elsewhere" in conflict.inner_text()
    assert page.locator("#autosave-status").get_attribute("data-state") == "conflict"
    assert page.locator("#autosave-status").inner_text() == "Changed elsewhere."
    assert shop_draft(shop)["draftVersion"] == changed["draftVersion"]  # not overwritten
    shot(page, "autosave-conflict.png")

    # "Reload to see theirs": the stored title, and undo brings "Mine" back.
    page.get_by_role("button", name="Reload to see the other changes").click()
    page.wait_for_load_state()
    page.get_by_label("title").wait_for()
    assert page.get_by_label("title").input_value() == "Saved first"
    page.get_by_role("button", name="Undo").click()
    assert page.get_by_label("title").input_value() == "Mine"
    wait_saved(page)

    # Again, and this time "keep mine": an explicit overwrite of the shop's version.
    again = shop.api(
        "PUT", f"/api-ext/draft/{shop.draft_hash}", {"customAttributes": {"orderId": "A-2"}}
    )["data"]
    replace_text(page, "title", "Mine again")
    conflict.wait_for(state="visible", timeout=20_000)
    page.get_by_role("button", name="Keep mine (replace the other changes)").click()
    wait_saved(page)
    assert conflict.is_hidden()
    kept = shop_draft(shop)
    assert kept["draftVersion"] == again["draftVersion"] + 1
    assert kept["customAttributes"] == {"orderId": "A-2"}  # the shop's change stays
    page.reload()
    assert page.get_by_label("title").input_value() == "Mine again"


def test_the_customer_approves_the_proof_finishes_and_lands_on_the_callback(
    page: Any, shop: ShopState, pps_server: Server
) -> None:
    from pypdf import PdfReader

    pps_server.pps("client", "proof-approval", shop.client, "--required")
    page.goto(f"{shop.base_url}/start")
    replace_text(page, "name", "Katherine Johnson")

    # Finish leads to the proof step (the form saves on the way).
    with page.expect_navigation():
        page.get_by_role("button", name="Check the proof and finish").click()
    assert f"/editor/{shop.draft_hash}/proof" in page.url
    assert page.get_by_role("heading", name="Check your proof").is_visible()
    page.wait_for_function(
        "() => [...document.querySelectorAll('img.proof-image')]"
        ".every(img => img.complete && img.naturalWidth === 1200)",
        timeout=30_000,
    )
    shot(page, "proof-desktop.png")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "proof-phone.png")
    page.set_viewport_size({"width": 1280, "height": 900})

    # Without the confirmation the browser does not send the form (the server refuses too).
    finish = page.get_by_role("button", name="Approve the proof and finish")
    finish.click()
    page.wait_for_timeout(300)
    assert f"/editor/{shop.draft_hash}/proof" in page.url
    assert page.locator("#proof-approved").evaluate("el => el.validity.valueMissing")
    assert shop_draft(shop)["state"] == "edited"

    # Keyboard: tick the box, then finish.
    page.locator("#proof-approved").focus()
    page.keyboard.press("Space")
    with page.expect_navigation(url=shop.callback_url()):
        finish.click()
    assert page.get_by_role("heading").inner_text() == "Thank you for your order"
    assert shop.callback_hits == [shop.callback_url()]
    assert shop.problems == []
    done = shop_draft(shop)
    assert done["state"] == "finished"
    assert done["proofApprovedAt"] is not None
    assert done["proofApprovedVersion"] == done["draftVersion"]

    assert shop.pdf.startswith(b"%PDF-")
    text = " ".join(p.extract_text() for p in PdfReader(io.BytesIO(shop.pdf)).pages)
    assert "Katherine Johnson" in text
