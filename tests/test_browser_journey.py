"""One customer's whole journey in a real Chromium, from the shop and back (issue 14, Tests).

The shop (the server of :mod:`test_browser`, whose fixtures these tests use) creates the
user and a business card draft and sends the browser through ``/auth`` into the editor.
There the customer edits a text on the card, uploads a logo (a PNG drawn here with Pillow),
crops it, picks a colour, undoes that and redoes it, reloads (nothing is lost), opens the
proof, approves it and finishes, landing on the shop's callback. The shop then fetches the
print PDF through ``/api-ext/files/draft/<hash>/print?jwt=...`` and the test finds every
change in it: the typed text, the logo as an image of its own size, the colour.

Every step is photographed at desktop (1280 x 900) and phone (390 x 844) width into
``test-artifacts/journey/`` (the viewport is resized for the phone shot, then back).
With ``PPS_UPDATE_DOC_SCREENSHOTS=1`` the run also writes the README's two pictures,
``docs/img/editor-desktop.png`` and ``docs/img/editor-phone.png`` (``docs/screenshots.py``).
Skipped locally without Chromium or Playwright; fails when ``CI`` is set.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw
from server_support import ROOT, Server
from test_browser import (
    ARTIFACTS,
    ShopState,
    chromium,
    first_page_bitmap,
    pps_server,
    shop,
    shop_draft,
)
from test_render_media import RED_CMYK

__all__ = ["chromium", "pps_server", "shop"]  # fixtures, used by name

pytestmark = pytest.mark.slow

SHOTS = ARTIFACTS / "journey"
DOC_IMAGES = ROOT / "docs" / "img"
DOC_IMAGE_BUDGET = 250_000  # bytes per README picture
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
LOGO_SIZE = (960, 320)
TYPED = "Ada Lovelace"
SAVED = "All changes saved."
#: Resolves once the page has laid itself out and painted (after a viewport change).
TWO_FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"

#: The image shows the latest values: its data-seq caught up with the form's, no render open.
CAUGHT_UP = """img => img.src.startsWith('blob:') && img.complete && img.naturalWidth > 0
  && !img.closest('figure').hasAttribute('aria-busy')
  && img.getAttribute('data-seq')
     === document.getElementById('editor-form').getAttribute('data-seq')"""


def logo_png() -> bytes:
    """A logo as a customer might have one: a dark band, an orange disc, white bars."""
    image = Image.new("RGB", LOGO_SIZE, (20, 40, 90))
    draw = ImageDraw.Draw(image)
    draw.ellipse((40, 40, 280, 280), fill=(245, 130, 20))
    for row in range(3):
        top = 80 + row * 70
        draw.rectangle((330, top, 900 - row * 120, top + 36), fill=(255, 255, 255))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def shots(page: Any, step: str) -> None:
    """The page at desktop and at phone width (full page), then desktop again.

    At phone width nothing may stick out sideways (the crop frame clips its photo)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{step}-desktop.png"), full_page=True)
    page.set_viewport_size(PHONE)
    page.evaluate(TWO_FRAMES)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), step
    page.screenshot(path=str(SHOTS / f"{step}-phone.png"), full_page=True)
    page.set_viewport_size(DESKTOP)
    page.evaluate(TWO_FRAMES)


def doc_screenshots(page: Any) -> None:
    """The README's pictures: the viewport only, PNG optimized (palette if still too big)."""
    DOC_IMAGES.mkdir(parents=True, exist_ok=True)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    for name, viewport in (("editor-desktop.png", DESKTOP), ("editor-phone.png", PHONE)):
        page.set_viewport_size(viewport)
        page.evaluate("window.scrollTo(0, 0)")
        page.evaluate(TWO_FRAMES)
        image = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
        target = DOC_IMAGES / name
        image.save(target, "PNG", optimize=True)
        if target.stat().st_size > DOC_IMAGE_BUDGET:
            image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
                target, "PNG", optimize=True
            )
        assert target.stat().st_size <= DOC_IMAGE_BUDGET, (name, target.stat().st_size)
    page.set_viewport_size(DESKTOP)


def wait_preview(page: Any) -> None:
    image = page.locator("img.page-image").first
    page.wait_for_function(CAUGHT_UP, arg=image.element_handle(), timeout=20_000)


def wait_saved(page: Any) -> None:
    page.wait_for_function(
        "() => { const s = document.getElementById('autosave-status');"
        f" return s.dataset.state === 'saved' && s.textContent === {SAVED!r}; }}",
        timeout=20_000,
    )


def name_value(page: Any) -> str:
    value: str = page.locator("input[name='v:name']").input_value()
    return value


def logo_value(page: Any) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(page.locator("input[name='v:logo']").input_value())
    return value


def upload_logo(page: Any) -> dict[str, Any]:
    """Choose the logo in the file picker; the script uploads it and shows the crop view."""
    page.locator("input[name='image:logo']").set_input_files(
        files=[{"name": "logo.png", "mimeType": "image/png", "buffer": logo_png()}]
    )
    page.locator(".media-frame").wait_for(state="visible", timeout=20_000)
    page.wait_for_function(
        "() => document.querySelector(\"input[name='v:logo']\").value.includes('crop')",
        timeout=20_000,
    )
    return logo_value(page)


def test_the_whole_journey_from_the_shop_to_the_print_pdf(
    chromium: Any, shop: ShopState, pps_server: Server
) -> None:
    from pypdf import PdfReader

    pps_server.pps("client", "proof-approval", shop.client, "--required")
    context = chromium.new_context(viewport=DESKTOP, locale="en-GB")
    page = context.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda message: problems.append(message.text) if message.type == "error" else None,
    )
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    failed: list[str] = []
    page.on(
        "response",
        lambda response: (
            failed.append(f"{response.status} {response.url}") if response.status >= 400 else None
        ),
    )
    red = page.get_by_role("radio", name="Red", exact=True)
    try:
        # The shop creates user and draft and sends the browser through /auth.
        page.goto(f"{shop.base_url}/start")
        assert shop.problems == []
        assert page.url.startswith(f"{pps_server.base_url}/editor/{shop.draft_hash}/edit?")
        page.wait_for_function(
            "() => [...document.querySelectorAll('img.page-image')]"
            ".every(i => i.complete && i.naturalWidth > 0)",
            timeout=20_000,
        )
        assert page.locator("#autosave-status").inner_text() == SAVED
        shots(page, "01-edit")

        # Edit on the card: click the name's hotspot, type over the text.
        page.locator(".hotspot[data-key='name']").click()
        inplace = page.locator("input.inplace")
        assert inplace.evaluate("el => el === document.activeElement")
        page.keyboard.press("Control+A")
        page.keyboard.type(TYPED, delay=15)
        assert name_value(page) == TYPED
        wait_preview(page)
        shots(page, "02-card-edit")
        if inplace.count():
            inplace.press("Enter")
        assert inplace.count() == 0
        wait_saved(page)

        # Upload a logo with the file picker, then crop it: zoom and move.
        uploaded = upload_logo(page)
        frame = page.locator(".media-frame")
        # The whole width at the box's shape (24 x 6 mm): 960 x 240 px, centred.
        assert uploaded["crop"] == {"x": 0, "y": 40, "width": 960, "height": 240}
        page.get_by_role("slider", name="Zoom").fill("1.5")
        assert logo_value(page)["crop"]["width"] == 640
        frame.focus()
        page.keyboard.press("ArrowLeft")  # towards the disc on the left
        area = frame.bounding_box()
        assert area is not None
        middle = (area["x"] + area["width"] / 2, area["y"] + area["height"] / 2)
        page.mouse.move(*middle)
        page.mouse.down()
        page.mouse.move(middle[0] + 30, middle[1] + 10, steps=5)
        page.mouse.up()
        cropped = logo_value(page)
        assert cropped["file"] == uploaded["file"]
        assert cropped["crop"]["width"] == 640 and cropped["crop"]["x"] < 160
        assert "dpi" in page.locator(".media-dpi").inner_text()
        wait_preview(page)
        wait_saved(page)
        shots(page, "03-upload-crop")
        assert logo_value(page) == cropped  # resizing the page does not move the crop

        # Pick a colour for the name.
        assert not red.is_checked()
        red.check()
        wait_preview(page)
        wait_saved(page)
        assert shop_draft(shop)["state"] == "edited"
        shots(page, "04-colour")
        if os.environ.get("PPS_UPDATE_DOC_SCREENSHOTS") == "1":
            doc_screenshots(page)

        # Undo the colour, then redo it: each is autosaved.
        undo = page.get_by_role("button", name="Undo", exact=True)
        redo = page.get_by_role("button", name="Redo", exact=True)
        undo.click()
        assert not red.is_checked()
        assert logo_value(page) == cropped  # only the last change went
        assert name_value(page) == TYPED
        wait_preview(page)
        wait_saved(page)
        shots(page, "05-undo")
        assert not redo.is_disabled()
        redo.click()
        assert red.is_checked()
        wait_preview(page)
        wait_saved(page)
        shots(page, "06-redo")

        # Reload: nothing lost (values, image and crop, choice).
        page.reload()
        assert name_value(page) == TYPED
        assert logo_value(page) == cropped
        assert red.is_checked()
        assert page.locator("#autosave-status").inner_text() == SAVED
        photo = page.locator(".media-photo")
        assert photo.is_visible()
        photo.evaluate("img => img.decode()")
        assert photo.evaluate("img => [img.naturalWidth, img.naturalHeight]") == list(LOGO_SIZE)
        page.wait_for_function(
            "() => [...document.querySelectorAll('img.page-image')]"
            ".every(i => i.complete && i.naturalWidth > 0)",
            timeout=20_000,
        )
        shots(page, "07-reload")

        # The proof step: every page with its trim; approve, finish.
        with page.expect_navigation():
            page.get_by_role("button", name="Check the proof and finish").click()
        assert f"/editor/{shop.draft_hash}/proof" in page.url
        page.wait_for_function(
            "() => [...document.querySelectorAll('img.proof-image')]"
            ".every(img => img.complete && img.naturalWidth === 1200)",
            timeout=30_000,
        )
        page.get_by_label("I have checked the spelling and the layout of every page").check()
        shots(page, "08-proof")
        with page.expect_navigation(url=shop.callback_url()):
            page.get_by_role("button", name="Approve the proof and finish").click()
        assert page.get_by_role("heading").inner_text() == "Thank you for your order"
        shots(page, "09-finished")
        assert shop.callback_hits == [shop.callback_url()]
        assert shop.problems == []
        # Browsers ask every site for /favicon.ico; nothing else may fail.
        assert [url for url in failed if not url.endswith("/favicon.ico")] == []
        assert [p for p in problems if "404" not in p] == []
    finally:
        context.close()

    done = shop_draft(shop)
    assert done["state"] == "finished"
    assert done["proofApprovedAt"] is not None
    assert done["proofApprovedVersion"] == done["draftVersion"]

    # The print PDF the shop fetched holds every change.
    assert shop.pdf.startswith(b"%PDF-")
    reader = PdfReader(io.BytesIO(shop.pdf))
    assert TYPED in reader.pages[0].extract_text()
    sizes = [image.image.size for image in reader.pages[0].images if image.image is not None]
    assert sizes == [LOGO_SIZE]
    content = reader.pages[0].get_contents().get_data()  # type: ignore[union-attr]
    assert RED_CMYK.encode() in content
    # The logo as cropped: rasterized, the box's centre shows the logo, not the white card.
    bitmap = first_page_bitmap(shop.pdf)
    mm = 72 / 25.4 * 4  # points -> pixels at scale 4; box 12..36 x 25.5..31.5 mm, 3 mm bleed
    assert bitmap.getpixel((round((3 + 24) * mm), round((3 + 28.5) * mm))) != (255, 255, 255)


def test_undo_and_redo_of_a_crop_move_the_crop_view_with_the_value(
    chromium: Any, shop: ShopState, pps_server: Server
) -> None:
    context = chromium.new_context(viewport=DESKTOP, locale="en-GB")
    page = context.new_page()
    try:
        page.goto(f"{shop.base_url}/start")
        assert page.url.startswith(f"{pps_server.base_url}/editor/{shop.draft_hash}/edit?")
        whole = upload_logo(page)
        assert whole["crop"]["width"] == 960
        wait_saved(page)
        slider = page.get_by_role("slider", name="Zoom")
        slider.fill("2")
        assert logo_value(page)["crop"]["width"] == 480
        wait_saved(page)
        status = page.locator(".media-dpi")
        assert "508 dpi" in status.inner_text()

        # Undo the zoom: the slider and the resolution follow the value.
        page.get_by_role("button", name="Undo", exact=True).click()
        assert logo_value(page) == whole
        assert float(slider.input_value()) == pytest.approx(1)
        assert "1016 dpi" in status.inner_text()
        # So the next move starts from the value shown, not from the zoom undone.
        page.locator(".media-frame").focus()
        page.keyboard.press("ArrowUp")
        moved = logo_value(page)
        assert moved["crop"]["width"] == 960 and moved["crop"]["y"] < whole["crop"]["y"]
        wait_saved(page)

        # Undo back to before the upload: no image, no crop view; redo brings both back.
        undo = page.get_by_role("button", name="Undo", exact=True)
        undo.click()
        assert logo_value(page) == whole
        undo.click()
        assert page.locator("input[name='v:logo']").input_value() == ""
        assert page.locator(".media-crop").is_hidden()
        page.get_by_role("button", name="Redo", exact=True).click()
        assert logo_value(page) == whole
        page.locator(".media-crop").wait_for(state="visible")
        page.wait_for_function(
            "() => document.querySelector('.media-dpi').textContent.includes('1016 dpi')",
            timeout=20_000,
        )
        wait_saved(page)
        assert shop_draft(shop)["state"] == "edited"
    finally:
        context.close()


def test_doc_screenshots_are_in_the_readme() -> None:
    """The README's editor section shows the pictures the journey writes, and they exist."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in ("editor-desktop.png", "editor-phone.png"):
        assert f"(docs/img/{name})" in readme
        path: Path = DOC_IMAGES / name
        assert path.stat().st_size <= DOC_IMAGE_BUDGET
        with Image.open(path) as image:
            assert image.format == "PNG"
    with Image.open(DOC_IMAGES / "editor-phone.png") as phone:
        assert phone.width == PHONE["width"]
