"""A real Chromium goes from a shop through /auth into the editor and back to the shop.

Debian's ``chromium`` (``/usr/bin/chromium``) is driven by Playwright; no browser is ever
downloaded. pps runs under gunicorn with the deploy config and a real Redis; a small shop
server, started here, creates the user and the draft through the API, signs the login JWT
(joserfc) and, when the browser lands on its callback, fetches the print PDF through the
file endpoint. The test then finds what was typed in that PDF.

Without Chromium or Playwright the test is skipped locally and fails when ``CI`` is set.
A screenshot of the editor is kept in ``test-artifacts/``.
"""

from __future__ import annotations

import base64
import io
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import pypdfium2 as pdfium
import pytest
from conftest import free_port, missing_service
from PIL import Image
from server_support import ROOT, Server, api_json, served, shop_token

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TEMPLATE = ROOT / "examples" / "templates" / "business-card" / "template.json"

TYPED = {
    "name": "Ada Lovelace",
    "title": "Analyst <Engines> & Co",
    "email": "ada@example.org",
}


# -- pps under gunicorn ------------------------------------------------------------------


@pytest.fixture(scope="module")
def pps_server(
    tmp_path_factory: pytest.TempPathFactory, redis_server: tuple[str, bool]
) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("browser-pps")
    with served(
        tmp, redis_server[0], PPS_WORKERS="1", PPS_THREADS="8", PPS_ACCESS_LOG=""
    ) as server:
        yield server


# -- the shop ----------------------------------------------------------------------------


@dataclass
class ShopState:
    pps: str
    client: str
    api_key: str
    template: str
    base_url: str = ""
    draft_hash: str = ""
    user: str = ""
    callback_hits: list[str] = field(default_factory=list)
    pdf: bytes = b""
    problems: list[str] = field(default_factory=list)

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return api_json(self.pps, self.api_key, method, path, body)

    def sign(self, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
        return shop_token(self.api_key, claims, header)

    def callback_url(self) -> str:
        return f"{self.base_url}/checkout/done?draft={self.draft_hash}&qty=1"


class HtmlHandler(BaseHTTPRequestHandler):
    """What the test shops' handlers share: an HTML answer, and no request log."""

    def _send(self, status: int, body: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep the test output clean


def first_page_bitmap(pdf: bytes, scale: float = 4) -> Image.Image:
    """Page 1 of ``pdf`` rasterized by pdfium, as RGB (``scale`` pixels per point)."""
    document = pdfium.PdfDocument(pdf)
    try:
        return document[0].render(scale=scale).to_pil().convert("RGB")
    finally:
        document.close()


class ShopHandler(HtmlHandler):
    """``/start``: user, draft, login token, off to pps. ``/checkout/done``: the callback."""

    state: ShopState

    def do_GET(self) -> None:  # the http.server naming
        path = urlsplit(self.path).path
        try:
            if path == "/start":
                self._start()
            elif path == "/checkout/done":
                self._done()
            else:
                self._send(404, "not here")
        except Exception as exc:  # reported by the test, not lost in a thread
            self.state.problems.append(f"{path}: {exc!r}")
            self._send(500, "shop error")

    def _start(self) -> None:
        state = self.state
        state.user = state.api("POST", "/api-ext/user", {"firstName": "Ada"})["data"]["identifier"]
        draft = state.api(
            "POST",
            "/api-ext/draft",
            {
                "templateIdentifier": state.template,
                "userIdentifier": state.user,
                "apiDefaultValues": {"phone": "+44 20 7946 0000"},
            },
        )["data"]
        state.draft_hash = draft["draftHash"]
        callback = quote(base64.b64encode(state.callback_url().encode()).decode(), safe="")
        redirect = f"{state.pps}/editor/{state.draft_hash}/edit?callback={callback}&locale=en"
        token = state.sign(
            {
                "client": state.client,
                "user": state.user,
                "redirect": redirect,
                "iat": round(time.time(), 6),
            },
            {"jti": uuid.uuid4().hex},
        )
        self.send_response(302)
        self.send_header("Location", f"{state.pps}/auth?{urlencode({'jwt': token})}")
        self.end_headers()

    def _done(self) -> None:
        state = self.state
        state.callback_hits.append(f"{state.base_url}{self.path}")
        # As a shop backend does: a file token, the file endpoint, the redirect followed.
        path = f"/api-ext/files/draft/{state.draft_hash}/print"
        now = int(time.time())
        token = state.sign({"client": state.client, "iat": now, "exp": now + 300, "urlPath": path})
        with urllib.request.urlopen(f"{state.pps}{path}?jwt={token}", timeout=60) as response:
            state.pdf = response.read()
        self._send(200, "<!doctype html><title>Thanks</title><h1>Thank you for your order</h1>")


@pytest.fixture
def shop(pps_server: Server) -> Iterator[ShopState]:
    created = pps_server.pps("client", "create", "--name", "Browser shop", "--json")
    imported = pps_server.pps(
        "template", "import", str(TEMPLATE), "--client", created["identifier"], "--json"
    )
    state = ShopState(
        pps=pps_server.base_url,
        client=created["identifier"],
        api_key=created["apiKey"],
        template=imported["identifier"],
    )
    handler = type("Handler", (ShopHandler,), {"state": state})
    httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


# -- the browser -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    if not CHROMIUM.exists():
        missing_service("Chromium is not installed at /usr/bin/chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing_service("playwright is not installed (pip install playwright)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def watch_csp(page: Any) -> list[str]:
    """The console messages of ``page`` about its Content Security Policy, as they come."""
    found: list[str] = []
    page.on(
        "console",
        lambda message: (
            found.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    return found


def watch_refusals(page: Any) -> list[str]:
    """``"<status> <url>"`` of every answer of 400 or more ``page`` gets, as they come;
    browsers ask every site for /favicon.ico, which is left out."""
    found: list[str] = []
    page.on(
        "response",
        lambda response: (
            found.append(f"{response.status} {response.url}")
            if response.status >= 400 and not response.url.endswith("/favicon.ico")
            else None
        ),
    )
    return found


#: The pixels an <img> shows, as a PNG data URL (through a canvas: the page's CSP lets
#: images, not fetches, load blob: URLs, and a test must not need a looser policy).
# The editor may swap the image's src again (a later keystroke's preview) between a wait and
# this read: wait until whatever it shows now is decoded, so a swap never reads as no pixels.
SHOWN_PIXELS = """async img => {
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      await img.decode();
      if (img.naturalWidth > 0) break;
    } catch (swapped) {
      await new Promise(resolve => setTimeout(resolve, 50));
    }
  }
  const canvas = document.createElement("canvas");
  canvas.width = img.naturalWidth;
  canvas.height = img.naturalHeight;
  canvas.getContext("2d").drawImage(img, 0, 0);
  return canvas.toDataURL("image/png");
}"""


def test_customer_personalizes_previews_finishes_and_the_shop_gets_the_pdf(
    chromium: Any, shop: ShopState, pps_server: Server
) -> None:
    from pypdf import PdfReader

    context = chromium.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    page = context.new_page()
    csp_violations = watch_csp(page)
    try:
        # The shop sends the browser through /auth into the editor.
        page.goto(f"{shop.base_url}/start")
        assert shop.problems == []
        assert page.url.startswith(f"{pps_server.base_url}/editor/{shop.draft_hash}/edit?")
        assert page.title() == "Business card · pps"

        image = page.locator("img.page-image").first
        page.wait_for_function(
            "img => img.complete && img.naturalWidth > 0", arg=image.element_handle()
        )
        src_before = image.get_attribute("src")
        assert src_before is not None and src_before.startswith(
            f"/editor/{shop.draft_hash}/page/0.png"
        )
        pixels_before = image.evaluate(SHOWN_PIXELS)

        # Labelled inputs, pre-filled from apiDefaultValues and the template's defaults.
        assert page.get_by_label("phone").input_value() == "+44 20 7946 0000"
        name = page.get_by_label("name")
        assert name.input_value() == "Alex Example"

        # Type like a customer: keyboard only, field to field with Tab.
        name.click()
        page.keyboard.press("Control+A")
        page.keyboard.type(TYPED["name"], delay=15)
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == page.get_by_label(
            "title"
        ).get_attribute("id")
        page.keyboard.press("Control+A")
        page.keyboard.type(TYPED["title"], delay=15)
        email = page.get_by_label("email")
        email.fill("")
        email.press_sequentially(TYPED["email"], delay=15)

        # The preview follows the typing: a new image, with different bytes.
        page.wait_for_function(
            "img => img.src.startsWith('blob:') && img.complete && img.naturalWidth > 0",
            arg=image.element_handle(),
            timeout=20_000,
        )
        page.wait_for_function(
            "() => document.getElementById('preview-status').textContent === 'Preview updated.'",
            timeout=20_000,
        )
        assert image.get_attribute("src") != src_before
        pixels_after = image.evaluate(SHOWN_PIXELS)
        assert pixels_after.startswith("data:image/png;base64,")
        assert pixels_after != pixels_before
        # Autosaved while typing (static/editor-autosave.js).
        page.wait_for_function(
            "() => document.getElementById('autosave-status').dataset.state === 'saved'",
            timeout=20_000,
        )
        assert shop_draft(shop)["state"] == "edited"

        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "editor.png"), full_page=True)

        # Phone width: one column, nothing wider than the screen.
        page.set_viewport_size({"width": 375, "height": 800})
        too_wide = page.evaluate(
            "[...document.querySelectorAll('body *')]"
            ".filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)"
            ".map(e => e.tagName + '.' + e.className + '#' + e.id)"
        )
        assert too_wide == []
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=str(ARTIFACTS / "editor-phone.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 900})

        # Save with the keyboard: Enter in a field submits the form (Save is its default).
        with page.expect_navigation():
            email.press("Enter")
        assert page.get_by_role("status").filter(has_text="Your changes are saved.").count() == 1
        assert page.get_by_label("title").input_value() == TYPED["title"]
        saved = shop_draft(shop)
        assert saved["state"] == "edited"
        assert saved["personalizations"]["amount"] == 1  # one record: no variable data

        # Every page large on the preview step.
        page.get_by_role("link", name="Preview").click()
        page.wait_for_url(f"**/editor/{shop.draft_hash}/preview**")
        large = page.locator(".pages-large img")
        assert large.count() == 1
        page.wait_for_function(
            "() => [...document.querySelectorAll('.pages-large img')]"
            ".every(img => img.complete && img.naturalWidth === 1600)"
        )

        # Finish: back at the shop's callback URL, unchanged.
        with page.expect_navigation(url=shop.callback_url()):
            page.get_by_role("button", name="Finish and return to shop").click()
        assert page.url == shop.callback_url()
        assert page.get_by_role("heading").inner_text() == "Thank you for your order"
        assert shop.callback_hits == [shop.callback_url()]
        assert shop.problems == []
        assert shop_draft(shop)["state"] == "finished"
        assert csp_violations == []
    finally:
        context.close()

    # The shop's print PDF holds what the customer typed, literally.
    assert shop.pdf.startswith(b"%PDF-")
    text = " ".join(page.extract_text() for page in PdfReader(io.BytesIO(shop.pdf)).pages)
    for value in TYPED.values():
        assert value in text, (value, text)
    assert "+44 20 7946 0000" in text


def shop_draft(shop: ShopState) -> dict[str, Any]:
    try:
        data: dict[str, Any] = shop.api("GET", f"/api-ext/draft/{shop.draft_hash}")["data"]
    except urllib.error.HTTPError as exc:  # pragma: no cover - shown on failure
        raise AssertionError(exc.read()) from exc
    return data
