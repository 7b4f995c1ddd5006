"""The edit step's card: hotspot geometry, guides, the page's hooks for the scripts, locked
drafts, the preview's limits and timing, and the postcard with an empty required field.

Geometry is checked as plain Python against the example templates; the pages through the
Flask test client with real Redis and a real database, templates imported with the ``pps``
CLI and drafts created through the API, as a shop does.
"""

from __future__ import annotations

import html as html_lib
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ApiClient
from flask import Flask
from flask.testing import FlaskClient
from test_editor import PNG, _png_size, form, log_in, open_editor

from pps.editor.canvas import SAFE_MARGIN_MM, guides, hotspots
from pps.editor.throttle import PreviewLimit, preview_wait
from pps.platform.models import Client, User
from pps.render import TemplateSpec, parse_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "templates"


def example_spec(name: str) -> TemplateSpec:
    folder = EXAMPLES / name
    return parse_spec(json.loads((folder / "template.json").read_text()), folder)


# -- geometry ----------------------------------------------------------------------------


def test_hotspots_are_the_template_boxes_in_percent_of_the_page() -> None:
    spec = example_spec("business-card")  # 85 x 55 mm
    fields = list(spec.fields)
    pages = hotspots(spec, fields)
    assert len(pages) == 1
    by_key = {(spot.key, spot.kind): spot for spot in pages[0]}
    name = by_key["name", "text"]  # box x 12, y 8, 68 x 8 mm
    assert name.field_id == f"f-{[f.key for f in fields].index('name')}"
    assert name.left == pytest.approx(12 / 85 * 100)
    assert name.top == pytest.approx(8 / 55 * 100)
    assert name.width == pytest.approx(68 / 85 * 100)
    assert name.height == pytest.approx(8 / 55 * 100)
    assert name.box == "14.1176 14.5455 80 14.5455"
    # One DataKey drawn twice (URL as text and QR code): two hotspots, one field.
    assert by_key["url", "text"].field_id == by_key["url", "qr"].field_id
    # Fixed elements (rect, line) are not editable.
    assert {spot.key for spot in pages[0]} == {"name", "title", "phone", "email", "url"}


def test_hotspots_per_page_of_the_postcard_with_multiline_marked() -> None:
    spec = example_spec("postcard")
    pages = hotspots(spec, list(spec.fields))
    assert [[spot.key for spot in page] for page in pages] == [
        ["headline"],
        ["message", "sender", "recipientName", "street", "city"],
    ]
    assert [spot.multiline for spot in pages[1]] == [True, False, False, False, False]
    assert all(spot.page == 1 for spot in pages[1])


def test_hotspots_only_for_fields_the_form_has() -> None:
    spec = example_spec("postcard")
    only_headline = [field for field in spec.fields if field.key == "headline"]
    assert hotspots(spec, only_headline) == [[hotspots(spec, list(spec.fields))[0][0]], []]


def test_guides_are_bleed_and_safe_area_in_percent() -> None:
    spec = example_spec("postcard")  # 148 x 105 mm, bleed 3
    found = guides(spec)
    assert found.bleed_x == pytest.approx(3 / 148 * 100)
    assert found.bleed_y == pytest.approx(3 / 105 * 100)
    assert found.safe_x == pytest.approx(SAFE_MARGIN_MM / 148 * 100)
    assert (found.width_mm, found.height_mm) == (148, 105)
    assert found.data.split(" ")[0] == "2.027"


@pytest.mark.parametrize(
    ("given", "expected"),
    [(5, 5.0), (-1, 3.0), ("x", 3.0), (True, 3.0), pytest.param(10**400, 55 / 3, id="10**400")],
)
def test_a_template_may_set_its_safe_margin(given: Any, expected: float) -> None:
    spec = example_spec("business-card")
    custom = TemplateSpec(**{**spec.__dict__, "custom_attributes": {"safeMargin": given}})
    assert guides(custom).safe_x == pytest.approx(expected / 85 * 100)


# -- the preview's limit -----------------------------------------------------------------


def test_preview_limit_allows_a_burst_then_waits(app: Flask) -> None:
    store = app.extensions["pps"].ephemeral
    limit = PreviewLimit(burst=5, burst_seconds=2, per_minute=8)
    now = 1_000_000.5  # the start of a two-second window, inside a minute
    clock = lambda: now  # noqa: E731
    user = f"u{time.time_ns()}"
    assert [preview_wait(store, "C", user, limit, clock) for _ in range(5)] == [0] * 5
    assert preview_wait(store, "C", user, limit, clock) == 2  # burst spent: wait the window
    now += 2  # the next window: a new burst, until the minute's ceiling
    assert [preview_wait(store, "C", user, limit, clock) for _ in range(3)] == [0, 0, 0]
    assert preview_wait(store, "C", user, limit, clock) == 60 - int(now % 60)
    # Another login is counted apart.
    assert preview_wait(store, "C", user + "x", limit, clock) == 0


# -- the edit page -----------------------------------------------------------------------


def import_example(app: Flask, tenant: Client, name: str) -> str:
    path = str(EXAMPLES / name / "template.json")
    result = app.test_cli_runner().invoke(
        args=["pps", "template", "import", path, "--client", tenant.identifier, "--json"]
    )
    assert result.exit_code == 0, result.output
    return str(json.loads(result.output)["identifier"])


def create_draft(api: ApiClient, user: User, template: str, **body: Any) -> str:
    response = api.post(
        "/api-ext/draft",
        json={"templateIdentifier": template, "userIdentifier": user.identifier, **body},
    )
    assert response.status_code in (200, 201), response.get_data(as_text=True)
    return str(response.get_json()["data"]["draftHash"])


def hotspot_tags(page: str) -> list[str]:
    return re.findall(r'<button type="button" class="hotspot[^>]*>', page)


def attr(tag: str, name: str) -> str:
    match = re.search(rf'\s{name}="([^"]*)"', tag)
    assert match is not None, (name, tag)
    return html_lib.unescape(match.group(1))


def test_edit_page_has_the_card_with_hotspots_and_the_script_hooks(
    app: Flask, client: FlaskClient, api: ApiClient, tenant: Client, user: User
) -> None:
    template = import_example(app, tenant, "business-card")
    draft_hash = create_draft(api, user, template)
    log_in(client, tenant, user)
    page, _ = open_editor(client, f"/editor/{draft_hash}/edit")
    root = re.search(r'<div class="editor" id="editor"[^>]*>', page)
    assert root is not None
    assert attr(root.group(0), "data-draft-hash") == draft_hash
    assert attr(root.group(0), "data-template-name") == "Business card"
    assert attr(root.group(0), "data-pages") == "1"
    assert attr(root.group(0), "data-locked") == "false"
    assert attr(root.group(0), "data-step") == "edit"
    assert '<form id="editor-form"' in page
    assert re.search(r'<figure class="page current" id="page-0" data-page="0">', page)
    assert re.search(r'<img class="page-image" [^>]*data-page="0"', page)
    spots = hotspot_tags(page)
    assert len(spots) == 6  # five texts and the QR code
    name = next(tag for tag in spots if attr(tag, "data-key") == "name")
    assert attr(name, "data-box") == "14.1176 14.5455 80 14.5455"
    field_id = attr(name, "data-field")
    assert re.search(rf'<input id="{field_id}" name="v:name"', page)
    assert re.search(
        r'<button type="button" class="hotspot hotspot-text" data-field="f-0" data-key="name"'
        r'[^>]*><span class="vh">Edit “name” on page 1</span></button>',
        page,
    )
    canvas = re.search(r'<section class="canvas[^>]*>', page)
    assert canvas is not None
    assert attr(canvas.group(0), "data-guides") == "3.5294 5.4545 3.5294 5.4545"
    assert attr(canvas.group(0), "data-size-mm") == "85.0 55.0"
    # Zoom and guides controls; one page: no switcher. No inline style anywhere (CSP).
    assert 'data-zoom="fit"' in page and 'data-zoom="2"' in page
    assert 'id="guides-toggle"' in page
    assert "page-switcher" not in page
    assert " style=" not in page
    # One primary action, the rest in a menu.
    primary = r'<div class="actions">\s*<button type="submit" name="action" value="save" class='
    assert re.search(primary + '"primary">', page)
    assert '<details class="more-actions" open>' in page


def test_multi_page_template_gets_a_page_switcher_with_thumbnails(
    app: Flask, client: FlaskClient, api: ApiClient, tenant: Client, user: User
) -> None:
    template = import_example(app, tenant, "postcard")
    draft_hash = create_draft(api, user, template, apiDefaultValues={"recipientName": "Jo"})
    log_in(client, tenant, user)
    page, _ = open_editor(client, f"/editor/{draft_hash}/edit?locale=de")
    thumbs = re.findall(r'<button type="button" class="page-thumb"[^>]*>', page)
    assert [attr(tag, "data-show-page") for tag in thumbs] == ["0", "1"]
    assert attr(thumbs[1], "aria-label") == "Seite 2 von 2 zeigen"
    assert len(re.findall(r'<img src="[^"]+" alt="" [^>]*data-thumb="\d"', page)) == 2
    assert [attr(tag, "data-key") for tag in hotspot_tags(page)][:2] == ["headline", "message"]
    assert "Schnitt, Beschnitt und sicheren Bereich zeigen" in page


def test_locked_draft_opens_read_only_without_hotspots(
    app: Flask, client: FlaskClient, api: ApiClient, tenant: Client, user: User
) -> None:
    template = import_example(app, tenant, "business-card")
    draft_hash = create_draft(api, user, template, locked=True)
    log_in(client, tenant, user)
    page, token = open_editor(client, f"/editor/{draft_hash}/edit")
    assert 'data-locked="true"' in page
    assert hotspot_tags(page) == []
    assert '<fieldset disabled aria-describedby="locked-hint">' in page
    assert "This design is read-only." in page
    assert "The shop has locked this design" in page
    assert 'value="save"' not in page and "more-actions" not in page
    # A hand-made save or preview changes nothing.
    saved = client.post(f"/editor/{draft_hash}/edit", data=form(token, name="Changed"))
    assert saved.status_code == 409
    shown = api.get(f"/api-ext/draft/{draft_hash}").get_json()["data"]
    assert shown["state"] == "init"
    german, _ = open_editor(client, f"/editor/{draft_hash}/edit?locale=de")
    assert "Dieses Design kann nur angesehen werden." in german


# -- the postcard with an empty required field -------------------------------------------


def test_postcard_with_an_empty_required_field_shows_both_pages_and_both_update(
    app: Flask, client: FlaskClient, api: ApiClient, tenant: Client, user: User
) -> None:
    template = import_example(app, tenant, "postcard")
    draft_hash = create_draft(api, user, template)  # recipientName (required) left empty
    log_in(client, tenant, user)
    page, token = open_editor(client, f"/editor/{draft_hash}/edit")
    sources = [
        html_lib.unescape(src) for src in re.findall(r'<img class="page-image" src="([^"]+)"', page)
    ]
    assert len(sources) == 2
    before = []
    for src in sources:
        response = client.get(src)
        assert response.status_code == 200, response.get_data(as_text=True)
        assert response.data.startswith(PNG)
        assert _png_size(response.data) == (960, 681)
        before.append(response.data)
        assert client.get(src).data == response.data  # cached: the same file again

    # The live preview of the empty field draws it empty and names the field.
    render_urls = [html_lib.unescape(url) for url in re.findall(r'data-render-url="([^"]+)"', page)]
    empty = client.post(render_urls[1], data=form(token, recipientName=""))
    assert empty.status_code == 200 and empty.data.startswith(PNG)
    recipient_id = attr(
        next(t for t in hotspot_tags(page) if attr(t, "data-key") == "recipientName"),
        "data-field",
    )
    assert empty.headers["X-Pps-Missing"] == recipient_id

    # Filled in: both pages render, page 2 now with the name.
    filled = [
        client.post(url, data=form(token, recipientName="Jo Example", headline="Hello"))
        for url in render_urls
    ]
    assert [r.status_code for r in filled] == [200, 200]
    assert all("X-Pps-Missing" not in r.headers for r in filled)
    assert filled[0].data != before[0]  # the new headline
    assert filled[1].data != before[1]  # the recipient's name

    # Saving still refuses the empty required field: previews only draw it empty.
    refused = client.post(f"/editor/{draft_hash}/edit", data=form(token, recipientName=""))
    assert refused.status_code == 422


def test_a_value_that_is_wrong_not_just_missing_still_gets_no_image(
    app: Flask, client: FlaskClient, api: ApiClient, tenant: Client, user: User
) -> None:
    template = import_example(app, tenant, "postcard")
    draft_hash = create_draft(api, user, template)
    log_in(client, tenant, user)
    _, token = open_editor(client, f"/editor/{draft_hash}/edit")
    url = f"/editor/{draft_hash}/page/1.png?width=960"
    response = client.post(url, data=form(token, recipientName="", city="x" * 61))
    assert response.status_code == 422
    assert set(response.get_json()["errors"]) == {"recipientName", "city"}


def test_preview_reports_its_render_time(
    app: Flask, client: FlaskClient, api: ApiClient, tenant: Client, user: User
) -> None:
    template = import_example(app, tenant, "business-card")
    draft_hash = create_draft(api, user, template)
    log_in(client, tenant, user)
    _, token = open_editor(client, f"/editor/{draft_hash}/edit")
    response = client.post(
        f"/editor/{draft_hash}/page/0.png?width=960", data=form(token, name="Ada")
    )
    assert response.status_code == 200
    timing = dict(
        re.fullmatch(r"(\w+);dur=([\d.]+)", part.strip()).groups()  # type: ignore[union-attr]
        for part in response.headers["Server-Timing"].split(",")
    )
    assert set(timing) == {"check", "wait", "render"}
    assert 0 < float(timing["render"]) < 10_000


def test_the_script_gets_its_preview_as_jpeg_others_as_png(
    app: Flask, client: FlaskClient, api: ApiClient, tenant: Client, user: User
) -> None:
    template = import_example(app, tenant, "business-card")
    draft_hash = create_draft(api, user, template)
    log_in(client, tenant, user)
    _, token = open_editor(client, f"/editor/{draft_hash}/edit")
    url = f"/editor/{draft_hash}/page/0.png?width=960"
    accept = "image/jpeg, image/png;q=0.9, application/json;q=0.8"  # what editor.js sends
    jpeg = client.post(url, data=form(token, name="Ada"), headers={"Accept": accept})
    assert jpeg.status_code == 200 and jpeg.mimetype == "image/jpeg"
    assert jpeg.data.startswith(b"\xff\xd8\xff")
    png = client.post(url, data=form(token, name="Ada"))
    assert png.mimetype == "image/png" and png.data.startswith(PNG)
    assert _png_size(png.data) == (960, 621)


def test_the_pdf_behind_a_page_image_is_left_uncompressed_and_draws_the_same() -> None:
    """Deflating a PDF that only pdfium reads, in this process, took over half of the
    composing time of a live preview; the print PDF stays compressed."""
    from pps.render import DirectoryAssets, render_file
    from pps.render.assets import as_loader
    from pps.render.pdf import render_page_pdf

    folder = EXAMPLES / "business-card"
    spec = example_spec("business-card")
    values = {"name": "Zoë Example"}
    page_pdf = render_page_pdf(spec, values, as_loader(DirectoryAssets(folder)), 0)
    assert b"/FlateDecode" not in page_pdf
    printed, _ = render_file("print", spec, values, DirectoryAssets(folder))
    assert b"/FlateDecode" in printed
