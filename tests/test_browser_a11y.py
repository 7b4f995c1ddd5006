"""axe-core finds nothing on any page a shopper, a reviewer or a shop's developer opens.

A real Chromium (Debian's, never a downloaded one) opens every editor step (edit, the
form with errors, preview, proof, embed, 3d), the reviewer's proof page
(``/review/<id>``), every kind of error page and the API reference (``/docs``, Swagger
UI), at desktop (1280 px) and phone (390 px) width, in English and German, and runs
axe-core on each: zero violations. axe-core comes from the PyPI package
``axe-playwright-python`` (a dev dependency that ships ``axe.min.js``), injected through
Playwright, so nothing is fetched at test time. The page's own CSP stays in force.

A second test goes through the whole flow with the keyboard alone (``keyboard.press``
and typing, no clicks): edit, save, preview, finish, and lands on the shop's callback.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from server_support import Server
from test_browser import ARTIFACTS, ShopState, chromium, pps_server, shop, shop_draft

pytestmark = pytest.mark.slow

__all__ = ["chromium", "pps_server", "shop"]  # fixtures used by the tests below

WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
LOCALES = ("en", "de")


@pytest.fixture(scope="module")
def axe() -> Any:
    try:
        from axe_playwright_python.sync_playwright import Axe
    except ImportError:
        from conftest import missing_service

        missing_service("axe-playwright-python is not installed (make install)")
    return Axe()


def violations(axe: Any, page: Any) -> list[str]:
    """Every violation axe-core reports on the page as it is now, one line each."""
    results = axe.run(page)
    found = []
    for violation in results.response["violations"]:
        targets = [", ".join(node["target"]) for node in violation["nodes"]][:5]
        found.append(f"{violation['id']} ({violation['impact']}): {targets}")
    return found


def settle(page: Any) -> None:
    """Wait until the page's images have loaded (axe checks contrast over them)."""
    page.wait_for_load_state("load")
    page.wait_for_function("() => [...document.images].every(img => img.complete)", timeout=20_000)


def login_url(shop: ShopState, redirect: str) -> str:
    token = shop.sign(
        {
            "client": shop.client,
            "user": shop.user,
            "redirect": redirect,
            "iat": round(time.time(), 6),
        },
        {"jti": uuid.uuid4().hex},
    )
    return f"{shop.pps}/auth?jwt={token}"


@pytest.fixture
def context(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport=WIDTHS["desktop"], locale="de-DE")
    try:
        yield context
    finally:
        context.close()


def pages_to_check(shop: ShopState, context: Any, pps: str) -> Iterator[tuple[str, Any]]:
    """(name, page) for every page, each loaded and settled, in the current locale."""
    page = context.new_page()
    page.goto(f"{shop.base_url}/start")  # the shop logs the customer in: the edit step
    draft = shop.draft_hash
    for locale in LOCALES:
        page.goto(f"{pps}/editor/{draft}/edit?locale={locale}")
        settle(page)
        yield f"edit/{locale}", page
        # The form with problems: the required name emptied, then saved.
        name = page.locator("#f-0")
        name.fill("")
        with page.expect_navigation():
            page.evaluate("document.getElementById('editor-form').noValidate = true")
            page.locator("button[value=save]").click()
        settle(page)
        assert page.locator(".error-summary").count() == 1
        yield f"edit-errors/{locale}", page
        page.goto(f"{pps}/editor/{draft}/preview?locale={locale}")
        settle(page)
        yield f"preview/{locale}", page
        page.goto(f"{pps}/editor/{draft}/proof?locale={locale}")
        settle(page)
        yield f"proof-step/{locale}", page
        for step in ("embed", "3d"):
            page.goto(f"{pps}/editor/{draft}/{step}?locale={locale}")
            settle(page)
            yield f"{step}-step/{locale}", page

    # The proof page: a review of this draft with the customer as its reviewer.
    review_id = shop.api(
        "POST",
        "/api-ext/review",
        {"draftId": draft, "user": [shop.user], "closeCallbackURL": "", "remoteAcl": False},
    )["data"]["reviewId"]
    page.goto(login_url(shop, f"{pps}/review/{review_id}"))
    for locale in LOCALES:
        page.goto(f"{pps}/review/{review_id}?locale={locale}")
        settle(page)
        yield f"review/{locale}", page

    # Error pages: a used link, an invalid one, an unknown design, a logged-out visit.
    used = login_url(shop, f"{pps}/editor/{draft}/edit")
    page.goto(used)
    for locale in LOCALES:
        page.goto(f"{used}&locale={locale}")
        yield f"error-used-link/{locale}", page
        page.goto(f"{pps}/auth?jwt=not-a-token&locale={locale}")
        yield f"error-invalid-link/{locale}", page
        page.goto(f"{pps}/editor/nosuchdesign/edit?locale={locale}")
        page.locator("summary").first.click()  # the details open, too
        yield f"error-unknown-design/{locale}", page
        page.goto(f"{pps}/no/such/page?locale={locale}")
        yield f"error-not-found/{locale}", page
        page.goto(f"{pps}/editor/{draft}/edit?api_token=secret&locale={locale}")
        yield f"error-api-token/{locale}", page
    context.clear_cookies()
    for locale in LOCALES:
        page.goto(f"{pps}/editor/{draft}/edit?locale={locale}")
        yield f"error-logged-out/{locale}", page

    # The API reference, once Swagger UI has drawn the operations.
    page.goto(f"{pps}/docs")
    page.wait_for_selector(".opblock", timeout=30_000)
    yield "docs", page
    # Operations opened, one ready to be tried out (its body and parameters editable).
    post = page.locator(".opblock-post").first
    post.locator(".opblock-summary").click()
    post.locator(".try-out__btn").click()
    post.locator(".execute").wait_for(timeout=10_000)
    get = page.locator(".opblock-get").nth(1)
    get.locator(".opblock-summary").click()
    get.locator(".opblock-body").wait_for(timeout=10_000)
    yield "docs-operations", page
    page.close()


def test_axe_finds_no_violations_on_any_page_at_desktop_and_phone_width(
    axe: Any, shop: ShopState, context: Any, pps_server: Server
) -> None:
    found: dict[str, list[str]] = {}
    checked = []
    (ARTIFACTS / "a11y").mkdir(parents=True, exist_ok=True)
    for name, page in pages_to_check(shop, context, pps_server.base_url):
        for width, size in WIDTHS.items():
            page.set_viewport_size(size)
            problems = violations(axe, page)
            checked.append(f"{name}@{width}")
            shot = ARTIFACTS / "a11y" / f"{name.replace('/', '-')}-{width}.png"
            page.screenshot(path=str(shot), full_page=True)
            if problems:
                found[f"{name}@{width}"] = problems
        page.set_viewport_size(WIDTHS["desktop"])
    assert len(checked) == 2 * (6 * 2 + 2 + 5 * 2 + 2 + 2)
    assert found == {}, "\n".join(f"{k}: {v}" for k, v in found.items())


def test_the_whole_flow_works_with_the_keyboard_alone(
    shop: ShopState, context: Any, pps_server: Server
) -> None:
    page = context.new_page()
    page.goto(f"{shop.base_url}/start")
    draft = shop.draft_hash
    assert page.url.startswith(f"{pps_server.base_url}/editor/{draft}/edit?")

    def focused() -> dict[str, str]:
        info: dict[str, str] = page.evaluate(
            "() => ({tag: document.activeElement.tagName, id: document.activeElement.id,"
            " text: (document.activeElement.innerText || '').trim(),"
            " href: document.activeElement.getAttribute('href') || '',"
            " key: document.activeElement.dataset.key || ''})"
        )
        return info

    def tab_to(matches: Any, limit: int = 60) -> None:
        for _ in range(limit):
            page.keyboard.press("Tab")
            if matches(focused()):
                return
        raise AssertionError(f"never reached by Tab; last focused {focused()}")

    # The skip link comes first, and leads to the editor's main part.
    page.keyboard.press("Tab")
    assert focused()["href"] == "#editor-main"
    # Into the name field; type over the default.
    tab_to(lambda f: f["key"] == "name")
    page.keyboard.press("Control+A")
    page.keyboard.type("Grace Hopper", delay=10)
    tab_to(lambda f: f["key"] == "email")
    page.keyboard.press("Control+A")
    page.keyboard.type("grace@example.org", delay=10)
    # Save with Enter in a field: the form's first button is Save.
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert shop_draft(shop)["state"] == "edited"
    # To the preview step: Tab to its link, Enter.
    tab_to(lambda f: f["tag"] == "A" and "/preview" in f["href"])
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert f"/editor/{draft}/preview" in page.url
    # Finish: Tab to the button, Space presses it, and the shop's callback opens.
    tab_to(lambda f: f["tag"] == "BUTTON" and f["text"] == "Finish and return to shop")
    with page.expect_navigation(url=shop.callback_url()):
        page.keyboard.press("Space")
    assert page.url == shop.callback_url()
    assert shop_draft(shop)["state"] == "finished"
    values = shop_draft(shop)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "keyboard-finished.png"))
    assert values["state"] == "finished"
