"""A real Chromium shows the editor inside a shop's page on another site and drives it
through ``/static/pps-editor-client.js``.

pps runs under gunicorn on ``http://127.0.0.1:<port>``; the shop is served by this test on
``http://localhost:<port>`` (another site: the editor is a cross-site frame there, with a
partitioned session cookie), and a stranger on ``http://localhost:<other port>``, an origin
the client did not allow. Flows:

* the browser follows ``/auth`` itself inside the shop's iframe;
* the shop's server calls ``/auth`` (no redirects followed) and frames the ``Location`` it
  got, in a browser that never saw ``/auth`` (the login handoff);
* a page on an origin the client did not allow cannot frame the editor;
* postMessages from a foreign origin are ignored by both sides;
* a save() or finish() pps refuses (a locked or stale draft, refused values, the save
  limit, a hung Redis on a pps of its own) reaches the shop with pps's message.

Without Chromium or Playwright the tests are skipped locally and fail when ``CI`` is set.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import pytest
from conftest import free_port
from fault_support import RedisProcess
from PIL import Image
from server_support import ROOT, Server, api_json, served, shop_token
from test_browser import HtmlHandler, chromium, pps_server
from test_browser_media import red_pixels
from window_support import in_one_window

from pps.editor.throttle import FORM_SAVES, UPLOADS_PER_MINUTE

__all__ = ["chromium", "pps_server"]  # fixtures shared with test_browser.py

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "test-artifacts"
TEMPLATES = ROOT / "examples" / "templates"
POSTCARD_VALUES = {"recipientName": "Ada Lovelace", "street": "1 Engine Row", "city": "London"}


@dataclass
class Shop:
    pps: str
    client: str
    api_key: str
    postcard: str
    card: str
    origin: str = ""
    stranger: str = ""
    drafts: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return api_json(self.pps, self.api_key, method, path, body)

    def new_draft(self, template: str, values: dict[str, str]) -> tuple[str, str]:
        """(user, draft hash) of a fresh customer and draft."""
        user = self.api("POST", "/api-ext/user", {"firstName": "Ada"})["data"]["identifier"]
        draft = self.api(
            "POST",
            "/api-ext/draft",
            {"templateIdentifier": template, "userIdentifier": user, "apiDefaultValues": values},
        )["data"]["draftHash"]
        self.drafts.append(draft)
        return user, draft

    def callback(self, draft: str) -> str:
        return f"{self.origin}/checkout/done?draft={draft}"

    def login_url(self, user: str, draft: str, step: str = "embed") -> str:
        """``/auth?jwt=`` for the editor step of ``draft``, as the shop signs it."""
        encoded = quote(base64.b64encode(self.callback(draft).encode()).decode(), safe="")
        token = shop_token(
            self.api_key,
            {
                "client": self.client,
                "user": user,
                "redirect": f"{self.pps}/editor/{draft}/{step}?callback={encoded}&locale=en",
                "iat": round(time.time(), 6),
            },
            {"jti": uuid.uuid4().hex},
        )
        return f"{self.pps}/auth?{urlencode({'jwt': token})}"

    def location_from_auth(self, user: str, draft: str) -> str:
        """What the reference's demo does: call /auth from the server, keep the Location."""
        url = self.login_url(user, draft)

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any, **kwargs: Any) -> None:
                return None

        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(url, timeout=30)
        except urllib.error.HTTPError as answer:
            assert answer.code == 302, answer.read()
            location = answer.headers["Location"]
            assert location, "no Location"
            return str(location)
        raise AssertionError("/auth did not redirect")


def shop_page(shop: Shop, iframe_src: str, *, origin_option: bool = False) -> str:
    """The shop's page: the editor's iframe, a stranger's iframe, and the client driving it."""
    options = json.dumps({"origin": shop.pps}) if origin_option else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
<body>
<h1>Design your card</h1>
<iframe id="editor-iframe" title="Editor" src="{iframe_src}" width="1100" height="900"></iframe>
<iframe name="stranger" title="Ad" src="{shop.stranger}/blank" width="10" height="10"></iframe>
<script type="module">
import {{ Connector, Events, CLIENT_VERSION }} from "{shop.pps}/static/pps-editor-client.js";
window.log = [];
window.received = [];
window.Events = Events;
window.clientVersion = CLIENT_VERSION;
addEventListener("message", (event) => {{
  window.received.push({{ origin: event.origin, data: JSON.stringify(event.data) }});
}});
const emitter = {{ emit(name, data) {{ window.log.push({{ name, data }}); }} }};
new Connector({options}).connect(document.getElementById("editor-iframe"), emitter).then(
  (editor) => {{ window.editor = editor; }},
  (error) => {{ window.connectError = String(error); }}
);
</script>
</body></html>"""


class ShopHandler(HtmlHandler):
    shop: Shop

    def do_GET(self) -> None:  # the http.server naming
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        shop = self.shop
        try:
            if parts.path == "/frame-auth":
                user, draft = shop.new_draft(shop.postcard, POSTCARD_VALUES)
                self._send(200, shop_page(shop, shop.login_url(user, draft)))
            elif parts.path == "/frame-server":
                user, draft = shop.new_draft(shop.card, {"name": "Grace"})
                self._send(200, shop_page(shop, shop.location_from_auth(user, draft)))
            elif parts.path == "/frame-start":
                # The iframe starts on the shop's own redirecting route: {origin} is given.
                self._send(200, shop_page(shop, f"{shop.origin}/start", origin_option=True))
            elif parts.path == "/start":
                user, draft = shop.new_draft(shop.postcard, POSTCARD_VALUES)
                self.send_response(302)
                self.send_header("Location", shop.login_url(user, draft))
                self.end_headers()
            elif parts.path == "/blank":
                self._send(200, "<!doctype html><title>blank</title><p>stranger</p>")
            elif parts.path == "/stranger":
                user, draft = shop.new_draft(shop.postcard, POSTCARD_VALUES)
                src = shop.login_url(user, draft, step=query.get("step", ["embed"])[0])
                self._send(
                    200,
                    f'<!doctype html><title>Stranger</title><iframe id="f" src="{src}"></iframe>',
                )
            elif parts.path == "/checkout/done":
                self._send(200, "<!doctype html><title>Thanks</title><h1>Thanks</h1>")
            else:
                self._send(404, "not here")
        except Exception as exc:  # reported by the test, not lost in a thread
            shop.problems.append(f"{parts.path}: {exc!r}")
            self._send(500, "shop error")


@pytest.fixture(scope="module")
def shop(pps_server: Server) -> Iterator[Shop]:
    with shop_of(pps_server) as state:
        yield state


@contextlib.contextmanager
def shop_of(pps_server: Server) -> Iterator[Shop]:
    """A client of ``pps_server`` allowing the shop's origin, its templates, and the shop's
    and the stranger's pages served on localhost."""
    shop_port, stranger_port = free_port(), free_port()
    origin = f"http://localhost:{shop_port}"
    created = pps_server.pps(
        "client", "create", "--name", "Framing shop", "--allow-origin", origin, "--json"
    )
    imported = {
        name: pps_server.pps(
            "template",
            "import",
            str(TEMPLATES / name / "template.json"),
            "--client",
            created["identifier"],
            "--json",
        )["identifier"]
        for name in ("postcard", "business-card")
    }
    state = Shop(
        pps=pps_server.base_url,
        client=created["identifier"],
        api_key=created["apiKey"],
        postcard=imported["postcard"],
        card=imported["business-card"],
        origin=origin,
        stranger=f"http://localhost:{stranger_port}",
    )
    handler = type("Handler", (ShopHandler,), {"shop": state})
    servers = []
    for port in (shop_port, stranger_port):
        httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        servers.append((httpd, thread))
    try:
        yield state
    finally:
        for httpd, thread in servers:
            httpd.shutdown()
            httpd.server_close()
            thread.join(timeout=10)


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 1000}, locale="en-GB")
    browser_page = context.new_page()
    browser_page.console_lines = []  # type: ignore[attr-defined]
    browser_page.on("console", lambda message: browser_page.console_lines.append(message.text))
    try:
        yield browser_page
    finally:
        context.close()


def events(page: Any, name: str) -> list[Any]:
    return [entry["data"] for entry in page.evaluate("window.log") if entry["name"] == name]


def wait_event(page: Any, name: str, count: int = 1) -> list[Any]:
    page.wait_for_function(
        "([name, count]) => window.log.filter((e) => e.name === name).length >= count",
        arg=[name, count],
        timeout=20_000,
    )
    return events(page, name)


def connected(page: Any) -> Any:
    page.wait_for_function(
        "() => window.editor !== undefined || window.connectError !== undefined", timeout=30_000
    )
    assert page.evaluate("window.connectError ?? null") is None
    return page.frame_locator("#editor-iframe")


def editor_frame(page: Any) -> Any:
    frame = page.frame(url=lambda url: "/editor/" in url)
    assert frame is not None, [f.url for f in page.frames]
    return frame


def draft(shop: Shop, draft_hash: str) -> dict[str, Any]:
    data: dict[str, Any] = shop.api("GET", f"/api-ext/draft/{draft_hash}")["data"]
    return data


# -- the tests -----------------------------------------------------------------------------


def test_shop_page_drives_the_framed_editor_through_the_client(
    page: Any,
    shop: Shop,
    pps_server: Server,
) -> None:
    page.goto(f"{shop.origin}/frame-auth")
    connected(page)
    assert shop.problems == []
    draft_hash = shop.drafts[-1]
    assert page.evaluate("window.clientVersion") == "1.2.0"

    # Loaded, with the draft's info.
    loaded = wait_event(page, "editor.loaded")
    assert len(loaded) == 1
    info = loaded[0]["draftInfo"]
    assert info["hash"] == draft_hash
    assert info["templateName"] == "Postcard A6"
    assert info["pages"] == 2
    assert "recipientName" in [key["name"] for key in info["dataKeys"]]
    assert loaded[0]["configuration"]["step"] == "embed"

    # The pager: pages, previews, paging.
    pages = page.evaluate("window.editor.getPager().pages")
    assert [entry["pageNumber"] for entry in pages] == [1, 2]
    first = page.evaluate("window.editor.getPager().getPagePreview(1)")
    assert first.startswith("data:image/png;base64,")
    page.evaluate("window.editor.getPager().showPage(2)")
    paged = wait_event(page, "editor.pages.paged")
    assert paged[-1]["pageNumber"] == 2

    # A value, set from the shop's page: in the form, and in the page's preview.
    frame = editor_frame(page)
    page.evaluate("window.editor.getFormEditor().update('recipientName', 'Grace Hopper')")
    assert frame.locator("[name='v:recipientName'], [name='recipientName']").input_value() == (
        "Grace Hopper"
    )
    changed = wait_event(page, "editor.changed")
    assert changed[-1] == {"key": "recipientName", "value": "Grace Hopper"}
    back = page.evaluate("window.editor.getPager().updatePagePreview(2)")
    assert back.startswith("data:image/png;base64,")
    assert back != page.evaluate("window.editor.getPager().getPagePreview(1)")

    # Focus in the editor: the scope changes.
    frame.locator("[name='v:city'], [name='city']").focus()
    scope = wait_event(page, "editor.scope.changed")
    assert scope[-1]["key"] == "city"
    assert scope[-1]["tdis"] == [
        {
            "identifier": "city",
            "label": "Postcode and town",  # the template's label, as the form shows it
            "type": "text",
            "value": "London",
            "defaultValue": None,
            "is_required": False,
            "is_hidden": False,
            # The reference's demo reads both as arrays for every field (FormField.vue).
            "regex": [],
            "options": [],
        }
    ]

    # An unknown key is refused with a code.
    refused = page.evaluate(
        "window.editor.getFormEditor().update('nope', 'x').then(() => null, (e) => e.code)"
    )
    assert refused == "unknown-key"

    # The loader shows and hides inside the editor.
    page.evaluate("window.editor.getLoader().show('Saving your card')")
    assert frame.get_by_role("status").filter(has_text="Saving your card").is_visible()
    page.evaluate("window.editor.getLoader().hide()")
    assert frame.get_by_text("Saving your card").is_hidden()

    # Save: the draft holds the value; the shop sees the event.
    saved = page.evaluate("window.editor.save()")
    assert saved["version"] > info["version"]
    assert wait_event(page, "editor.saved")[-1]["version"] == saved["version"]
    assert draft(shop, draft_hash)["state"] == "edited"
    # A reload of the frame shows the saved value, and the client connects again.
    frame.goto(frame.url)
    reloaded = wait_event(page, "editor.loaded", count=2)[-1]["draftInfo"]
    assert reloaded["version"] == saved["version"]
    frame = editor_frame(page)
    assert frame.locator("[name='v:recipientName'], [name='recipientName']").input_value() == (
        "Grace Hopper"
    )

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "editor-in-shop.png"), full_page=True)

    # Finish: the shop gets the callback to go to, and the draft is finished.
    finished = page.evaluate("window.editor.finish()")
    assert finished["callback"] == shop.callback(draft_hash)
    assert wait_event(page, "editor.finished")[-1]["callback"] == shop.callback(draft_hash)
    assert draft(shop, draft_hash)["state"] == "finished"
    assert page.url == f"{shop.origin}/frame-auth"  # the shop's page stayed

    # No key ever crossed the frame's border.
    traffic = json.dumps(page.evaluate("window.received"))
    assert shop.api_key not in traffic
    assert all(entry["origin"] == pps_server.base_url for entry in page.evaluate("window.received"))
    assert [line for line in page.console_lines if "Content Security Policy" in line] == []


def test_the_shops_server_calls_auth_and_frames_the_location(
    page: Any,
    shop: Shop,
    pps_server: Server,
) -> None:
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(f"{shop.origin}/frame-server")
    connected(page)
    assert shop.problems == []
    draft_hash = shop.drafts[-1]
    assert not [url for url in asked if urlsplit(url).path == "/auth"]  # never saw /auth
    info = wait_event(page, "editor.loaded")[0]["draftInfo"]
    assert info["hash"] == draft_hash
    assert info["templateName"] == "Business card"
    variants = page.evaluate("window.editor.getVariants().getAll()")
    assert [variant["identifier"] for variant in variants] == ["ocean", "forest"]
    # The frame's URL lost the code (the exchange answered 303 without it).
    src = page.locator("#editor-iframe").get_attribute("src")
    assert src is not None and "handoff=" in src
    assert "handoff=" not in editor_frame(page).url
    page.evaluate("window.editor.getFormEditor().update('name', 'Grace Hopper')")
    page.evaluate("window.editor.save()")
    assert draft(shop, draft_hash)["state"] == "edited"

    # As the reference's demo does: a second iframe on the same URL with /3d for /embed,
    # handed to setThreeDeeElement (the used code dropped, the frame's cookie opens it).
    page.evaluate(
        """() => {
          const frame = document.createElement("iframe");
          frame.id = "three-dee-iframe";
          frame.src = document.getElementById("editor-iframe").src.replace("/embed", "/3d");
          document.body.appendChild(frame);
          window.editor.setThreeDeeElement(frame);
        }"""
    )
    three_dee = page.frame_locator("#three-dee-iframe")
    three_dee.locator("img.mockup-print").first.wait_for(timeout=20_000)
    assert "handoff=" not in (page.locator("#three-dee-iframe").get_attribute("src") or "")

    # Last, as it reloads the editor's frame: the shop switches the colour variant, and
    # the editor saves the draft with it.
    page.evaluate("window.editor.getVariants().apply('forest')")
    deadline = time.monotonic() + 20
    while "forest" not in json.dumps(draft(shop, draft_hash).get("variant")):
        assert time.monotonic() < deadline, draft(shop, draft_hash).get("variant")
        time.sleep(0.2)


def test_the_client_connects_when_the_frame_starts_on_the_shops_redirect(
    page: Any, shop: Shop
) -> None:
    page.goto(f"{shop.origin}/frame-start")
    connected(page)
    assert wait_event(page, "editor.loaded")[0]["draftInfo"]["hash"] == shop.drafts[-1]


@pytest.mark.parametrize("step", ["embed", "edit"])
def test_an_origin_the_client_did_not_allow_cannot_frame_the_editor(
    page: Any, shop: Shop, step: str
) -> None:
    page.goto(f"{shop.stranger}/stranger?step={step}")
    page.wait_for_function("() => document.getElementById('f') !== null", timeout=10_000)
    deadline = time.monotonic() + 15
    refused: list[str] = []
    while time.monotonic() < deadline and not refused:
        refused = [line for line in page.console_lines if "frame-ancestors" in line]
        page.wait_for_timeout(100)
    assert refused, page.console_lines
    frames = [frame for frame in page.frames if frame != page.main_frame]
    assert len(frames) == 1
    # Chromium shows its own error page instead: no editor in it.
    assert frames[0].evaluate("document.getElementById('editor-form') === null")
    assert frames[0].evaluate("document.querySelector('script[data-pps-bridge]') === null")


def test_postmessages_from_a_foreign_origin_are_ignored(page: Any, shop: Shop) -> None:
    page.goto(f"{shop.origin}/frame-auth")
    connected(page)
    wait_event(page, "editor.loaded")
    frame = editor_frame(page)
    field = frame.locator("[name='v:recipientName'], [name='recipientName']")
    before = field.input_value()
    stranger = page.frame(name="stranger")
    assert stranger is not None and stranger.url.startswith(shop.stranger)
    stranger.evaluate(
        """() => {
          const editor = parent.frames[0];
          const base = { protocol: "pps-editor", version: 1 };
          editor.postMessage({ ...base, kind: "connect" }, "*");
          editor.postMessage({ ...base, kind: "request", id: 1, method: "update",
                               params: { key: "recipientName", value: "EVIL" } }, "*");
          editor.postMessage({ ...base, kind: "request", id: 2, method: "finish" }, "*");
          parent.postMessage({ ...base, kind: "event", name: "saved",
                               data: { version: 999 } }, "*");
          parent.postMessage({ ...base, kind: "connected", ok: true }, "*");
        }"""
    )
    page.wait_for_timeout(1000)
    assert field.input_value() == before
    assert all(entry.get("data", {}).get("version") != 999 for entry in page.evaluate("window.log"))
    assert events(page, "editor.saved") == []
    assert events(page, "editor.finished") == []
    assert draft(shop, shop.drafts[-1])["state"] == "init"
    # The connection still works for the shop itself.
    page.evaluate("window.editor.getFormEditor().update('recipientName', 'Still mine')")
    assert field.input_value() == "Still mine"


def test_an_api_key_in_the_editor_url_is_refused_in_the_browser(
    page: Any,
    shop: Shop,
    pps_server: Server,
) -> None:
    response = page.goto(f"{pps_server.base_url}/editor/{'a' * 32}/embed?api_token={shop.api_key}")
    assert response is not None and response.status == 400
    assert page.get_by_role("heading").inner_text() == "This editor link contains an API key"
    assert "/auth?jwt=" in page.content()


def test_the_3d_step_shows_the_card_on_a_desk_in_the_frame(page: Any, shop: Shop) -> None:
    page.goto(f"{shop.origin}/frame-auth")
    connected(page)
    wait_event(page, "editor.loaded")
    frame = editor_frame(page)
    frame.goto(frame.url.replace("/embed?", "/3d?"))
    loaded = wait_event(page, "editor.loaded", count=2)[-1]
    assert loaded["configuration"] == {"show3DPreview": True, "step": "3d"}
    frame = editor_frame(page)
    prints = frame.locator("img.mockup-print")
    assert prints.count() == 2
    for index in range(2):
        frame.wait_for_function(
            "img => img.complete && img.naturalWidth === 1600",
            arg=prints.nth(index).element_handle(),
        )
    # The mockup tilts the card: a 3D transform on it, not a flat image.
    transform = prints.first.evaluate(
        "img => getComputedStyle(img.closest('.mockup-card')).transform"
    )
    assert transform.startswith("matrix3d(")
    # The pager of the client works on this step too.
    preview = page.evaluate("window.editor.getPager().getPagePreview(2)")
    assert preview.startswith("data:image/png;base64,")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "editor-3d-in-shop.png"), full_page=True)


def test_finish_goes_through_the_proof_the_client_requires(
    page: Any,
    shop: Shop,
    pps_server: Server,
) -> None:
    pps_server.pps("client", "proof-approval", shop.client, "--required")
    try:
        page.goto(f"{shop.origin}/frame-auth")
        connected(page)
        info = wait_event(page, "editor.loaded")[0]["draftInfo"]
        draft_hash = shop.drafts[-1]
        assert info["proofRequired"] is True
        finish = "window.editor.finish().then(() => null, (e) => e.code)"
        assert page.evaluate(finish) == "proof-required"

        # The shop shows the proof step in the frame; the customer ticks the checkbox there.
        frame = editor_frame(page)
        frame.goto(frame.url.replace("/embed?", "/proof?"))
        assert wait_event(page, "editor.loaded", count=2)[-1]["configuration"]["step"] == "proof"
        assert page.evaluate(finish) == "proof-not-approved"
        assert draft(shop, draft_hash)["state"] != "finished"
        editor_frame(page).locator("#proof-approved").check()
        finished = page.evaluate("window.editor.finish()")
        assert finished["callback"] == shop.callback(draft_hash)
        stored = draft(shop, draft_hash)
        assert stored["state"] == "finished"
        assert stored["proofApprovedAt"]
    finally:
        pps_server.pps("client", "proof-approval", shop.client, "--optional")


# -- image objects: findEditorObjects and replaceWithFile ------------------------------------

#: An async function run in the shop's page: ``window.editor`` with the reference's calls,
#: and a File made of the bytes handed over (base64), as an <input type=file> would give.
CALL = """async ([script, base64, name, type]) => {
  const bytes = base64 === null ? null : Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const file = bytes === null ? null : new File([bytes], name, { type: type });
  const plain = (value) => JSON.parse(JSON.stringify(value));
  const run = new Function("editor", "file", script);
  try {
    return { ok: true, result: plain(await run(window.editor, file)) };
  } catch (error) {
    return { ok: false, code: error.code, message: error.message, name: error.name };
  }
}"""


def call(page: Any, script: str, data: bytes | None = None, name: str = "logo.png") -> Any:
    """Run ``script`` (the body of ``async (editor, file) => ...``) in the shop's page."""
    encoded = None if data is None else base64.b64encode(data).decode()
    kind = "image/png" if name.endswith(".png") else "text/plain"
    return page.evaluate(CALL, [f"return (async () => {{ {script} }})();", encoded, name, kind])


def png(width: int, height: int, mode: str = "RGB", colour: Any = (255, 0, 0)) -> bytes:
    image = Image.new(mode, (width, height), colour)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def uploads_seen(page: Any) -> list[str]:
    seen: list[str] = []
    page.on(
        "request", lambda request: seen.append(request.url) if "/upload" in request.url else None
    )
    return seen


def test_the_shop_lists_the_image_objects_and_puts_a_file_into_one(
    page: Any, shop: Shop, pps_server: Server
) -> None:
    """Assets.vue and CroppingImage.vue of the reference's editor demo, call by call."""
    uploads = uploads_seen(page)
    page.goto(f"{shop.origin}/frame-server")
    connected(page)
    draft_hash = shop.drafts[-1]
    wait_event(page, "editor.loaded")
    frame = editor_frame(page)

    # findEditorObjects({type: BlockTypes.ASSET}): the card's logo box, nothing placed yet.
    found = call(
        page,
        "const list = await editor.findEditorObjects({ type: 'asset' });"
        "return list.map((o) => ({ ...o, replaces: typeof o.replaceWithFile }));",
    )
    assert found["ok"], found
    assert found["result"] == [
        {
            "id": "logo",
            "type": "asset",
            "blockType": "asset",
            "assetType": "image",
            "name": "logo",
            "title": "Your logo",
            "label": "Your logo",
            "dataKey": "logo",
            "pageNumber": 1,
            "width": 24,
            "height": 6,
            "unit": "mm",
            "required": False,
            "file": None,
            "previewUrl": None,
            "imageWidth": None,
            "imageHeight": None,
            "dpi": None,
            "restrictions": {"dpi": {"perfect": 300, "error": 300}},
            "replaces": "function",
        }
    ]
    # Other filters: "image" means the same; texts by their type; a type pps has none of.
    assert call(page, "return (await editor.findEditorObjects({ type: 'image' })).length;") == {
        "ok": True,
        "result": 1,
    }
    texts = call(
        page, "return (await editor.findEditorObjects({ type: 'text' })).map((o) => o.id);"
    )
    assert texts["result"] == ["name", "title", "phone", "email", "url"]
    assert (
        call(page, "return (await editor.findEditorObjects({ type: 'shape' })).length;")["result"]
        == 0
    )
    everything = call(page, "return (await editor.findEditorObjects()).map((o) => o.id);")
    assert everything["result"] == ["logo", "name", "title", "phone", "email", "url"]
    single = call(
        page, "return (await editor.findEditorObject({ type: 'asset', name: 'logo' })).id;"
    )
    assert single["result"] == "logo"
    assert shop.problems == []

    before = page.evaluate("window.editor.getPager().getPagePreview(1)")
    assert red_pixels(before) == 0

    # picture.replaceWithFile(new File(...)), then save() and the previews, as the demo does.
    replaced = call(
        page,
        "const [picture] = await editor.findEditorObjects({ type: 'asset' });"
        "await editor.getLoader().show('Loading...');"
        "const placed = await picture.replaceWithFile(file);"
        "const saved = await editor.save();"
        "await editor.getPager().updatePagePreview(1);"
        "const preview = await editor.getPager().getPagePreview(1);"
        "await editor.getLoader().hide();"
        "return { placed, saved, preview };",
        png(480, 120),
    )
    assert replaced["ok"], replaced
    placed = replaced["result"]["placed"]
    assert placed["id"] == "logo" and placed["imageWidth"] == 480 and placed["imageHeight"] == 120
    assert placed["file"] and placed["previewUrl"] == (
        f"{pps_server.base_url}/editor/{draft_hash}/image/{placed['file']}"
    )
    assert placed["dpi"] == 508  # 480 px over 24 mm
    assert len(uploads) == 1 and uploads[0].endswith(f"/editor/{draft_hash}/upload")
    # In the editor's form, as the customer's own upload puts it; the shop heard of it.
    value = json.loads(frame.locator("input[name='v:logo']").input_value())
    assert value["file"] == placed["file"]
    assert {"key": "logo", "value": frame.locator("input[name='v:logo']").input_value()} in events(
        page, "editor.changed"
    )
    # The page shows the red logo now.
    assert red_pixels(replaced["result"]["preview"]) > 500
    # Saved: the draft's stored values hold it (a reload of the frame shows them).
    assert draft(shop, draft_hash)["state"] == "edited"
    frame.goto(frame.url)
    wait_event(page, "editor.loaded", count=2)
    frame = editor_frame(page)
    assert json.loads(frame.locator("input[name='v:logo']").input_value())["file"] == placed["file"]
    again = call(page, "return (await editor.findEditorObjects({ type: 'asset' }))[0];")
    assert again["result"]["file"] == placed["file"]
    assert again["result"]["imageWidth"] == 480


def test_a_file_put_into_an_image_is_autosaved(page: Any, shop: Shop) -> None:
    page.goto(f"{shop.origin}/frame-server")
    connected(page)
    draft_hash = shop.drafts[-1]
    version = wait_event(page, "editor.loaded")[0]["draftInfo"]["version"]
    placed = call(
        page,
        "const [picture] = await editor.findEditorObjects({ type: 'asset' });"
        "return await picture.replaceWithFile(file);",
        png(480, 120),
    )
    assert placed["ok"], placed
    # No save() by the shop: the editor's autosave stores it, as the customer's own change.
    saved = wait_event(page, "editor.saved")
    assert saved[-1]["version"] > version
    assert draft(shop, draft_hash)["state"] == "edited"
    frame = editor_frame(page)
    frame.goto(frame.url)
    wait_event(page, "editor.loaded", count=2)
    stored = editor_frame(page).locator("input[name='v:logo']").input_value()
    assert json.loads(stored)["file"] == placed["result"]["file"]


def test_replace_with_file_rejects_what_the_editor_would_not_take(page: Any, shop: Shop) -> None:
    uploads = uploads_seen(page)
    page.goto(f"{shop.origin}/frame-server")
    connected(page)
    wait_event(page, "editor.loaded")
    frame = editor_frame(page)
    logo = frame.locator("input[name='v:logo']")
    before = logo.input_value()

    def refused(script: str, data: bytes | None = png(40, 10), name: str = "logo.png") -> Any:
        answer = call(page, script, data, name)
        assert answer["ok"] is False, answer
        assert answer["name"] == "EditorError"
        return answer

    # An object the design does not have, and a text: no upload is made.
    unknown = refused(
        "const [picture] = await editor.findEditorObjects({ type: 'asset' });"
        "picture.id = 'nope'; return await picture.replaceWithFile(file);"
    )
    assert unknown["code"] == "unknown-object"
    assert unknown["message"] == 'The design has no object "nope".'
    text = refused(
        "const [name] = await editor.findEditorObjects({ type: 'text' });"
        "return await name.replaceWithFile(file);"
    )
    assert text["code"] == "wrong-type"
    assert text["message"] == (
        'The object "name" is a text, not an image: only images take a file.'
    )
    nothing = refused(
        "const [picture] = await editor.findEditorObjects({ type: 'asset' });"
        "return await picture.replaceWithFile('logo.png');"
    )
    assert nothing["code"] == "bad-request"
    assert uploads == []

    # Files the upload refuses: its message, beside the image in the editor too.
    not_image = refused(
        "const [picture] = await editor.findEditorObjects({ type: 'asset' });"
        "return await picture.replaceWithFile(file);",
        b"just some words\n",
        "notes.txt",
    )
    assert not_image["code"] == "invalid"
    assert not_image["message"].startswith("This file cannot be used: ")
    assert (
        frame.locator("#f-5-error, .media-image .field-error").first.inner_text()
        == (not_image["message"])
    )
    huge = refused(
        "const [picture] = await editor.findEditorObjects({ type: 'asset' });"
        "return await picture.replaceWithFile(file);",
        png(6400, 6400, mode="1", colour=1),  # 41 million pixels, over PPS_MAX_IMAGE_PIXELS
    )
    assert huge["code"] == "invalid"
    assert "pixels" in huge["message"], huge
    assert len(uploads) == 2
    assert logo.input_value() == before


def test_replace_with_file_keeps_to_the_editors_upload_rate_limit(page: Any, shop: Shop) -> None:
    page.goto(f"{shop.origin}/frame-server")
    connected(page)
    wait_event(page, "editor.loaded")

    def uploads() -> Any:
        return call(
            page,
            "const [picture] = await editor.findEditorObjects({ type: 'asset' });"
            "for (let count = 1; count <= 40; count += 1) {"
            "  try { await picture.replaceWithFile(file); }"
            "  catch (error) { return { count, code: error.code, message: error.message }; }"
            "}"
            "return null;",
            png(48, 12),
        )

    # The uploads are counted per minute of the clock: the burst and the refused one in one.
    answer = in_one_window(60, uploads, needed=20)
    assert answer["ok"], answer
    refusal = answer["result"]
    assert refusal is not None
    assert refusal["count"] == UPLOADS_PER_MINUTE + 1  # the burst first, then the editor's 429
    assert refusal["code"] == "http-429"
    assert refusal["message"]


def test_image_object_messages_from_a_foreign_origin_are_ignored(page: Any, shop: Shop) -> None:
    uploads = uploads_seen(page)
    page.goto(f"{shop.origin}/frame-server")
    connected(page)
    wait_event(page, "editor.loaded")
    frame = editor_frame(page)
    logo = frame.locator("input[name='v:logo']")
    before = logo.input_value()
    stranger = page.frame(name="stranger")
    assert stranger is not None and stranger.url.startswith(shop.stranger)
    heard = stranger.evaluate(
        """async (base64) => {
          const heard = [];
          addEventListener("message", (event) => heard.push(JSON.stringify(event.data)));
          const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
          const file = new File([bytes], "evil.png", { type: "image/png" });
          const editor = parent.frames[0];
          const base = { protocol: "pps-editor", version: 1 };
          editor.postMessage({ ...base, kind: "connect" }, "*");
          editor.postMessage({ ...base, kind: "request", id: 1, method: "findObjects",
                               params: { type: "asset" } }, "*");
          editor.postMessage({ ...base, kind: "request", id: 2, method: "replaceWithFile",
                               params: { id: "logo", file: file } }, "*");
          await new Promise((resolve) => setTimeout(resolve, 1000));
          return heard;
        }""",
        base64.b64encode(png(48, 12)).decode(),
    )
    assert heard == []
    assert uploads == []
    assert logo.input_value() == before
    assert events(page, "editor.changed") == []
    # The shop itself still gets its answers.
    found = call(page, "return (await editor.findEditorObjects({ type: 'asset' })).length;")
    assert found == {"ok": True, "result": 1}


# -- pps's own message when it refuses a save or finish ------------------------------------

#: A call of the shop's page, settled: what the shop's code sees of a refusal.
SETTLED = """(script) => new Function("editor", "return " + script)(window.editor).then(
  () => null,
  (error) => ({
    name: error.name, code: error.code, message: error.message, retryAfter: error.retryAfter,
    fields: error.fields,
  })
)"""

#: pps's message beside the postcard's recipientName for 400 characters.
TOO_LONG = "must be at most 60 characters (now 400)"


def test_finish_of_a_draft_the_shop_locked_reports_pps_message(page: Any, shop: Shop) -> None:
    """A PpsError of the form's view (here the shop's lock) reaches the shop in pps's words,
    not as the status text of the HTML error page."""
    page.goto(f"{shop.origin}/frame-auth")
    connected(page)
    wait_event(page, "editor.loaded")
    draft_hash = shop.drafts[-1]
    shop.api("PUT", f"/api-ext/draft/{draft_hash}", {"locked": True})  # after the page loaded
    refused = page.evaluate(SETTLED, "editor.finish()")
    assert refused == {
        "name": "EditorError",
        "code": "http-409",
        "message": "The shop has locked this design: it can be looked at but no longer changed. "
        "Nothing was saved.",
        "retryAfter": None,
        "fields": {},
    }
    assert draft(shop, draft_hash)["state"] != "finished"


def test_finish_over_the_save_limit_reports_pps_message_and_retry_after(
    page: Any, shop: Shop
) -> None:
    page.goto(f"{shop.origin}/frame-auth")
    connected(page)
    wait_event(page, "editor.loaded")
    draft_hash = shop.drafts[-1]

    def burst_then_finish() -> dict[str, Any]:
        # The customer's own posts of the form (as the no-JavaScript Save sends them), a
        # burst over the limit, then the shop's finish() in the same counting window.
        editor_frame(page).evaluate(
            """async (count) => {
              const form = document.getElementById("editor-form");
              const posts = [];
              for (let i = 0; i < count; i += 1) {
                const body = new URLSearchParams(new FormData(form));
                body.set("action", "save");
                posts.push(fetch(form.getAttribute("action"), {
                  method: "POST", body: body, credentials: "same-origin", redirect: "manual",
                }));
              }
              await Promise.all(posts);
            }""",
            FORM_SAVES.burst + 2,
        )
        refused: dict[str, Any] = page.evaluate(SETTLED, "editor.finish()")
        return refused

    refused = in_one_window(FORM_SAVES.burst_seconds, burst_then_finish)
    assert refused["code"] == "http-429", refused
    assert refused["message"] == "Too many saves in a short time; wait a moment and save again."
    assert isinstance(refused["retryAfter"], int) and refused["retryAfter"] > 0
    assert draft(shop, draft_hash)["state"] != "finished"


def test_save_on_a_draft_changed_elsewhere_reports_pps_message(page: Any, shop: Shop) -> None:
    """The autosave's 409 conflict reaches the shop with pps's message, not "conflict"."""
    page.goto(f"{shop.origin}/frame-auth")
    connected(page)
    wait_event(page, "editor.loaded")
    draft_hash = shop.drafts[-1]
    shop.api("PUT", f"/api-ext/draft/{draft_hash}", {"apiDefaultValues": {"city": "Paris"}})
    page.evaluate("window.editor.getFormEditor().update('recipientName', 'Grace Hopper')")
    refused = page.evaluate(SETTLED, "editor.save()")
    conflict_text = editor_frame(page).locator("#autosave-conflict-text").inner_text()
    assert refused == {
        "name": "EditorError",
        "code": "http-409",
        "message": conflict_text,
        "retryAfter": None,
        "fields": {},
    }
    assert "changed" in conflict_text


def test_finish_of_a_draft_changed_elsewhere_or_with_refused_values_reports_pps_message(
    page: Any, shop: Shop
) -> None:
    """The form's own refusals (a stale page, values the template refuses) reach the shop
    in pps's words too, and the draft is not finished."""
    page.goto(f"{shop.origin}/frame-auth")
    connected(page)
    wait_event(page, "editor.loaded")
    draft_hash = shop.drafts[-1]
    frame = editor_frame(page)
    # A value too long for its box, set in the form without the autosave seeing it.
    frame.locator("[name='v:recipientName']").evaluate(
        "(input) => { input.value = 'W'.repeat(400); }"
    )
    invalid = page.evaluate(SETTLED, "editor.finish()")
    assert invalid["code"] == "invalid", invalid
    assert invalid["message"].startswith("Please correct the marked fields. Nothing was saved.")
    # Which field, in the editor's words, by the DataKey the shop's page knows.
    assert invalid["fields"] == {"recipientName": [TOO_LONG]}, invalid

    frame.locator("[name='v:recipientName']").evaluate("(input) => { input.value = 'Grace'; }")
    shop.api("PUT", f"/api-ext/draft/{draft_hash}", {"apiDefaultValues": {"city": "Paris"}})
    stale = page.evaluate(SETTLED, "editor.finish()")
    assert stale == {
        "name": "EditorError",
        "code": "http-409",
        "message": "This design was changed elsewhere (by the shop or in another window) since "
        "you opened it, so your latest changes are not saved yet. Reload to see the other "
        "changes, or keep yours and replace them.",
        "retryAfter": None,
        "fields": {},
    }
    stored = draft(shop, draft_hash)
    assert stored["state"] != "finished"
    assert stored["apiDefaultValues"]["city"] == "Paris"


def test_save_with_refused_values_reports_each_fields_message(page: Any, shop: Shop) -> None:
    """save() (the autosave's) refused for a value the template refuses names the field by
    its DataKey, in the editor's words, as finish() does; nothing is saved."""
    page.goto(f"{shop.origin}/frame-auth")
    connected(page)
    wait_event(page, "editor.loaded")
    draft_hash = shop.drafts[-1]
    before = draft(shop, draft_hash)["apiDefaultValues"]
    editor_frame(page).locator("[name='v:recipientName']").evaluate(
        "(input) => { input.value = 'W'.repeat(400); }"
    )
    refused = page.evaluate(SETTLED, "editor.save()")
    assert refused == {
        "name": "EditorError",
        "code": "invalid",
        "message": "Please correct the marked fields. Nothing was saved.",
        "retryAfter": None,
        "fields": {"recipientName": [TOO_LONG]},
    }
    assert draft(shop, draft_hash)["apiDefaultValues"] == before


@pytest.fixture(scope="module")
def frail(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Shop, RedisProcess]]:
    """A shop on a pps of its own, whose private Redis a test may hang (SIGSTOP)."""
    tmp = tmp_path_factory.mktemp("embed-outage")
    redis_process = RedisProcess(tmp)
    try:
        with (
            served(
                tmp, redis_process.url, PPS_WORKERS="1", PPS_THREADS="8", PPS_ACCESS_LOG=""
            ) as server,
            shop_of(server) as state,
        ):
            yield state, redis_process
    finally:
        redis_process.close()


def test_save_and_finish_while_redis_hangs_report_pps_message_and_retry_after(
    page: Any, frail: tuple[Shop, RedisProcess]
) -> None:
    """The 503 of pps's error handler (a hung Redis) reaches the shop as pps's message with
    its Retry-After, for the autosave's save() and the bridge's own finish() alike."""
    shop, redis_process = frail
    page.goto(f"{shop.origin}/frame-auth")
    connected(page)
    wait_event(page, "editor.loaded")
    draft_hash = shop.drafts[-1]
    page.evaluate("window.editor.getFormEditor().update('recipientName', 'Grace Hopper')")
    redis_process.freeze()
    try:
        refusals = [page.evaluate(SETTLED, call) for call in ("editor.save()", "editor.finish()")]
    finally:
        redis_process.thaw()
    for refused in refusals:
        assert refused["name"] == "EditorError", refused
        assert refused["code"] == "http-503", refused
        assert "unavailable" in refused["message"], refused
        assert "SERVICE UNAVAILABLE" not in refused["message"], refused
        assert isinstance(refused["retryAfter"], int) and refused["retryAfter"] > 0, refused
        assert refused["fields"] == {}, refused
    assert draft(shop, draft_hash)["state"] != "finished"
