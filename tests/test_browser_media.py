"""A real Chromium uploads a logo, crops it, picks a colour, saves and finishes; the shop's
print PDF holds the cropped logo and the colour.

The same set-up as ``test_browser.py`` (its fixtures: pps under gunicorn with a real Redis,
a shop server that creates the draft and receives the callback, Debian's ``chromium``).
Without Chromium or Playwright the test is skipped locally and fails when ``CI`` is set.
Screenshots at desktop and phone width are kept in ``test-artifacts/``.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from PIL import Image
from server_support import Server
from test_browser import (  # noqa: F401  (fixtures are found by name)
    ARTIFACTS,
    SHOWN_PIXELS,
    ShopState,
    chromium,
    first_page_bitmap,
    pps_server,
    shop,
)
from test_render_media import RED_CMYK, quadrants

pytestmark = pytest.mark.slow


def red_pixels(data_url: str) -> int:
    """Strongly red pixels of an image given as a PNG data URL."""
    image = Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1]))).convert("RGB")
    data = image.tobytes()
    return sum(
        1
        for index in range(0, len(data), 3)
        if data[index] > 180 and data[index + 1] < 80 and data[index + 2] < 80
    )


def crop_of(page: Any) -> dict[str, float]:
    value = page.locator("input[name='v:logo']").input_value()
    return dict(json.loads(value)["crop"])


def test_customer_uploads_crops_picks_a_colour_and_the_print_pdf_follows(
    chromium: Any,  # noqa: F811
    shop: ShopState,  # noqa: F811
    pps_server: Server,  # noqa: F811
) -> None:
    from pypdf import PdfReader

    context = chromium.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    page = context.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda message: problems.append(message.text) if message.type == "error" else None,
    )
    page.on("pageerror", lambda error: problems.append(str(error)))
    missing: list[str] = []
    page.on(
        "response",
        lambda response: missing.append(response.url) if response.status >= 400 else None,
    )
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        page.goto(f"{shop.base_url}/start")
        assert page.url.startswith(f"{pps_server.base_url}/editor/{shop.draft_hash}/edit?")
        preview = page.locator("img.page-image").first
        page.wait_for_function(
            "img => img.complete && img.naturalWidth > 0", arg=preview.element_handle()
        )
        before = preview.evaluate(SHOWN_PIXELS)

        # Upload with the file picker: the script sends it at once and shows the crop view.
        page.locator("input[name='image:logo']").set_input_files(
            files=[{"name": "logo.png", "mimeType": "image/png", "buffer": quadrants(1200, 600)}]
        )
        frame = page.locator(".media-frame")
        frame.wait_for(state="visible", timeout=20_000)
        page.wait_for_function(
            "() => document.querySelector(\"input[name='v:logo']\").value.includes('crop')",
            timeout=20_000,
        )
        # The whole width at the box's shape (24 x 6 mm): 1200 x 300 px, 1270 dpi.
        assert crop_of(page) == {"x": 0, "y": 150, "width": 1200, "height": 300}
        status = page.locator(".media-dpi")
        assert "1270 dpi" in status.inner_text()
        assert "low" not in (status.get_attribute("class") or "")

        # Zoom with the slider, then move with the keyboard and by dragging.
        page.get_by_label("Zoom the image").fill("2")
        assert crop_of(page)["width"] == 600
        frame.focus()
        page.keyboard.press("ArrowRight")
        after_keys = crop_of(page)
        assert after_keys["x"] > 300
        box = frame.bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.down()
        page.mouse.move(
            box["x"] + box["width"] / 2 - 40, box["y"] + box["height"] / 2 - 30, steps=5
        )
        page.mouse.up()
        dragged = crop_of(page)
        assert dragged["x"] > after_keys["x"] and dragged["y"] > after_keys["y"]
        # Zoomed far in, the placed resolution drops under 300 dpi: a warning.
        page.get_by_label("Zoom the image").fill("5")
        assert "Warning" in status.inner_text() and "low" in (status.get_attribute("class") or "")
        page.get_by_label("Zoom the image").fill("2")
        assert "Warning" not in status.inner_text()
        page.screenshot(path=str(ARTIFACTS / "editor-media-crop.png"), full_page=True)

        # Pick a colour for the name: the preview follows without saving.
        settled = (
            "img => img.src.startsWith('blob:') && img.complete && img.naturalWidth > 0"
            " && !img.closest('figure').hasAttribute('aria-busy')"
        )
        page.wait_for_function(settled, arg=preview.element_handle(), timeout=20_000)
        page.wait_for_timeout(600)  # a render the crop scheduled (400 ms debounce) has started
        page.wait_for_function(settled, arg=preview.element_handle(), timeout=20_000)
        with_logo = preview.evaluate(SHOWN_PIXELS)
        assert with_logo != before
        shown = preview.get_attribute("src")
        page.get_by_role("radio", name="Red", exact=True).check()
        page.wait_for_function(
            "([img, old]) => img.src !== old && img.complete && img.naturalWidth > 0",
            arg=[preview.element_handle(), shown],
            timeout=20_000,
        )
        red = preview.evaluate(SHOWN_PIXELS)
        assert red != with_logo
        # The name is drawn in red now: many more red pixels than the logo alone had.
        assert red_pixels(red) > red_pixels(with_logo) + 500
        page.screenshot(path=str(ARTIFACTS / "editor-media.png"), full_page=True)

        page.set_viewport_size({"width": 390, "height": 844})
        # Nothing sticks out, but the photo inside the crop frame (which clips it).
        too_wide = page.evaluate(
            "[...document.querySelectorAll('.editor-media *:not(.media-photo)')]"
            ".filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)"
            ".map(e => e.tagName + '.' + e.className)"
        )
        assert too_wide == []
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=str(ARTIFACTS / "editor-media-phone.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 900})

        # Save: the crop and the colour are kept.
        kept = crop_of(page)
        with page.expect_navigation():
            page.get_by_role("button", name="Save", exact=True).click()
        assert page.get_by_role("status").filter(has_text="Your changes are saved.").count() == 1
        assert crop_of(page) == kept
        assert page.get_by_role("radio", name="Red", exact=True).is_checked()
        page.locator(".media-photo").evaluate("img => img.decode()")

        with page.expect_navigation(url=shop.callback_url()):
            page.get_by_role("button", name="Finish and return to shop").click()
        assert shop.problems == []
        # Browsers ask every site for /favicon.ico; nothing else may be missing.
        assert [url for url in missing if not url.endswith("/favicon.ico")] == []
        assert [p for p in problems if "404" not in p] == []
    finally:
        context.close()

    pdf = PdfReader(io.BytesIO(shop.pdf))
    images = list(pdf.pages[0].images)
    assert [image.image.size for image in images if image.image is not None] == [(1200, 600)]
    content = pdf.pages[0].get_contents().get_data()  # type: ignore[union-attr]
    assert RED_CMYK.encode() in content
    # The logo as placed: rasterize the print page and find the crop's colours in the box.
    bitmap = first_page_bitmap(shop.pdf)
    assert isinstance(bitmap, Image.Image)
    # Box 12..36 x 25.5..31.5 mm from the trim, 3 mm bleed; points -> pixels at scale 4.
    mm = 72 / 25.4 * 4
    centre = (round((3 + 24) * mm), round((3 + 28.5) * mm))
    red, green, blue = bitmap.getpixel(centre)  # type: ignore[misc]
    assert max(red, blue) > 150 and green < 80  # part of the uploaded logo, not the white card


def test_without_javascript_the_upload_button_places_the_image_and_no_dead_crop_view_shows(
    chromium: Any,  # noqa: F811
    shop: ShopState,  # noqa: F811
    pps_server: Server,  # noqa: F811
) -> None:
    """The editor works without JavaScript (docs/editor.md): "Upload image" saves the form
    with the image. The crop view only works with the script (its frame takes the box's
    shape, the drag and the Zoom slider are the script's), so without it none is shown: no
    empty frame, no slider that does nothing, no hint to drag; the resolution is."""
    context = chromium.new_context(
        viewport={"width": 1280, "height": 900}, locale="en-GB", java_script_enabled=False
    )
    page = context.new_page()
    try:
        page.goto(f"{shop.base_url}/start")
        assert page.url.startswith(f"{pps_server.base_url}/editor/{shop.draft_hash}/edit?")
        page.locator("input[name='image:logo']").set_input_files(
            files=[{"name": "logo.png", "mimeType": "image/png", "buffer": quadrants(1200, 600)}]
        )
        with page.expect_navigation():
            page.get_by_role("button", name="Upload image").click()
        value = json.loads(page.locator("input[name='v:logo']").input_value())
        assert value["crop"] == {"x": 0, "y": 150, "width": 1200, "height": 300}
        assert "1270 dpi" in page.locator(".media-dpi").inner_text()
        assert page.locator(".media-crop").is_hidden()
        assert page.get_by_label("Zoom the image").is_hidden()
        # Another image can still be chosen and uploaded.
        assert page.locator("input[name='image:logo']").is_visible()
        assert page.get_by_role("button", name="Upload image").is_visible()
    finally:
        context.close()


#: What customers pick by mistake: a photo in WebP (binary, not UTF-8 text), a Word file
#: (a ZIP archive), a PDF, a text file.
NOT_IMAGES = [
    ("photo.webp", "image/webp", b"RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00\xd0\x01\x9d"),
    ("letter.docx", "application/octet-stream", b"PK\x03\x04\x14\x00\x00\x00\x08\x00words"),
    ("menu.pdf", "application/pdf", b"%PDF-1.4\n%%EOF\n"),
    ("notes.png", "image/png", b"just some words\n"),
]
NOT_AN_IMAGE_DE = (
    ": kein PNG-, JPEG- oder SVG-Bild"  # after "(Diese Datei) kann nicht verwendet werden"
)
#: Images the upload check refuses, and the end of what a German page says of them.
REFUSED_IMAGES_DE = [
    (
        "cut.png",
        "image/png",
        quadrants()[:400],
        ": das Bild ist beschädigt oder unvollständig und kann nicht gelesen werden",
    ),
    (
        "logo.svg",
        "image/svg+xml",
        b'<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>',
        ": die SVG-Grafik hat keine Größe; geben Sie ihr eine viewBox oder eine Breite und "
        "eine Höhe",
    ),
]


@pytest.mark.parametrize("javascript", [True, False], ids=["script", "no-script"])
def test_a_file_that_is_no_image_is_refused_in_the_pages_language(
    chromium: Any,  # noqa: F811
    shop: ShopState,  # noqa: F811
    pps_server: Server,  # noqa: F811
    javascript: bool,
) -> None:
    """The reason beside the image is the customer's, in German on a German page: not the
    upload check's English words for the shop's developer ("it is not UTF-8 text ...: save
    CSV files as 'CSV UTF-8'", "a ZIP archive that is not an XLSX workbook")."""
    context = chromium.new_context(
        viewport={"width": 1280, "height": 900}, locale="de-DE", java_script_enabled=javascript
    )
    page = context.new_page()
    try:
        page.goto(f"{shop.base_url}/start")
        assert page.url.startswith(f"{pps_server.base_url}/editor/{shop.draft_hash}/edit?")
        with page.expect_navigation():
            page.get_by_role("link", name="Deutsch").click()
        error = page.locator(".media-image .field-error")
        refused = [(*item, NOT_AN_IMAGE_DE) for item in NOT_IMAGES] + REFUSED_IMAGES_DE
        for name, mime, data, reason in refused:
            page.locator("input[name='image:logo']").set_input_files(
                files=[{"name": name, "mimeType": mime, "buffer": data}]
            )
            if javascript:
                page.wait_for_function(
                    "el => el.textContent !== ''", arg=error.element_handle(), timeout=20_000
                )
            else:
                with page.expect_navigation():
                    page.get_by_role("button", name="Bild hochladen").click()
            assert error.inner_text().endswith(reason), (name, error.inner_text())
            if javascript:
                page.evaluate("el => { el.textContent = ''; }", error.element_handle())
    finally:
        context.close()
