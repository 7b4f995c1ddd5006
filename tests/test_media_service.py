"""Image DataKeys and choices through the service: the draft API and the editor's forms.

The business card example has a replaceable ``logo`` and lets the customer pick the name's
font and colour. Driven with the Flask test client against real Redis and a real
database; files are real PNG, SVG and CSV bytes; print PDFs are read back with pypdf.
"""

from __future__ import annotations

import html
import io
import json
import re
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from api_support import assert_error
from conftest import ApiClient
from flask import Flask
from flask.testing import FlaskClient
from pypdf import PdfReader
from test_api_variants import FOREST, file_token, print_file
from test_editor import log_in, open_editor
from test_render_media import CARD_DIR, RED_CMYK, quadrants
from test_uploads import fan_out_svg
from vdata_support import multipart
from werkzeug.datastructures import FileStorage, MultiDict
from werkzeug.test import encode_multipart
from window_support import in_one_window

from pps.editor.throttle import UPLOADS_PER_MINUTE
from pps.platform.models import Client, Draft, Template, User
from pps.platform.repository.sql import SqlRepository
from pps.templates.files import import_template, load_template_file

CROP = {"x": 300, "y": 150, "width": 300, "height": 150}


@pytest.fixture
def card(app: Flask, repo: SqlRepository, tenant: Client) -> Template:
    loaded = load_template_file(CARD_DIR / "template.json")
    return import_template(repo, app.extensions["pps"].storage, tenant.identifier, loaded)


def upload(api: ApiClient, data: bytes, name: str = "logo.png") -> str:
    response = api.post(
        "/api-ext/file", data=multipart(name, data), content_type="multipart/form-data"
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    return str(response.get_json()["identifier"])


def new_draft(api: ApiClient, card: Template, user: User, **values: Any) -> Any:
    return api.post(
        "/api-ext/draft",
        json={
            "templateIdentifier": card.identifier,
            "userIdentifier": user.identifier,
            "intent": "customize",
            "apiDefaultValues": values,
        },
    )


def huge_png(width: int = 10_000, height: int = 10_000) -> bytes:
    """A PNG whose header says 100 megapixels (its pixel data is never reached)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 1000))
        + chunk(b"IEND", b"")
    )


def images_of(pdf: bytes) -> list[tuple[int, int]]:
    return [image.image.size for image in PdfReader(io.BytesIO(pdf)).pages[0].images]  # type: ignore[union-attr]


def content_of(pdf: bytes) -> bytes:
    return PdfReader(io.BytesIO(pdf)).pages[0].get_contents().get_data()  # type: ignore[union-attr]


# -- the draft API ------------------------------------------------------------------------


def test_an_uploaded_file_is_an_image_value_of_a_draft(
    client: FlaskClient,
    api: ApiClient,
    card: Template,
    user: User,
    tenant: Client,
    repo: SqlRepository,
) -> None:
    identifier = upload(api, quadrants())
    response = new_draft(
        api,
        card,
        user,
        name="Ada",
        logo={"file": identifier, "crop": CROP},
        **{"name.color": "Red"},
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    data = response.get_json()["data"]
    draft = repo.get_draft(tenant.identifier, data["draftHash"])
    assert draft is not None
    pdf = print_file(client, tenant, draft)
    assert images_of(pdf) == [(600, 300)]
    assert RED_CMYK.encode() in content_of(pdf)
    # A plain identifier (the whole image) is a value too, through PUT.
    updated = api.put(
        f"/api-ext/draft/{draft.draft_hash}", json={"apiDefaultValues": {"logo": identifier}}
    )
    assert updated.status_code == 200, updated.get_data(as_text=True)


def test_foreign_unknown_and_non_image_files_are_422(
    api: ApiClient,
    other_api: ApiClient,
    card: Template,
    user: User,
    repo: SqlRepository,
    tenant: Client,
) -> None:
    foreign = upload(other_api, quadrants())
    csv = upload(api, b"Name\nAda\n", "rows.csv")
    mine = upload(api, quadrants())
    before = len(repo.list_drafts(tenant.identifier, 1, 100).items)
    for value in (
        foreign,
        {"file": foreign},
        "0" * 32,
        csv,
        {"file": mine, "crop": {"x": 500, "y": 0, "width": 300, "height": 150}},  # off the image
        {"file": mine, "crop": {"x": 0}},
        # JSON numbers have no size limit: an integer beyond any float is still a number.
        {"file": mine, "crop": {"x": 10**400, "y": 0, "width": 300, "height": 150}},
        json.dumps({"file": mine, "crop": {"x": 0, "y": 0, "width": 10**400, "height": 1}}),
        ["not", "an", "image"],
    ):
        body = assert_error(new_draft(api, card, user, logo=value), 422, "apiDefaultValues.logo")
        assert "logo" in json.dumps(body)
    assert_error(
        new_draft(api, card, user, **{"name.color": "Pink"}), 422, "apiDefaultValues.name.color"
    )
    assert_error(
        new_draft(api, card, user, **{"name.font": "Courier"}), 422, "apiDefaultValues.name.font"
    )
    assert len(repo.list_drafts(tenant.identifier, 1, 100).items) == before  # nothing written
    created = new_draft(api, card, user, name="Ada")
    draft_hash = created.get_json()["data"]["draftHash"]
    response = api.put(f"/api-ext/draft/{draft_hash}", json={"apiDefaultValues": {"logo": foreign}})
    assert_error(response, 422, "apiDefaultValues.logo")
    stored = repo.get_draft(tenant.identifier, draft_hash)
    assert stored is not None and "logo" not in stored.api_default_values
    response = api.post(
        f"/api-ext/draft/{draft_hash}/replicate", json={"apiDefaultValues": {"logo": foreign}}
    )
    assert_error(response, 422, "apiDefaultValues.logo")


def stored_as_before(app: Flask, tenant: Client, data: bytes, kind: str) -> str:
    """The identifier of ``data`` stored as an upload of ``tenant`` without today's checks
    (as a file accepted under earlier limits is)."""
    services = app.extensions["pps"]
    identifier = services.uploads.new_identifier()
    key = f"uploads/{tenant.identifier}/{identifier}/file.{kind}"
    services.storage.put(key, data)
    services.uploads.create(
        tenant.identifier,
        identifier=identifier,
        kind=kind,
        name=f"before.{kind}",
        size=len(data),
        storage_key=key,
    )
    return str(identifier)


def test_an_svg_stored_before_its_limits_is_a_422_when_rendered(
    app: Flask,
    client: FlaskClient,
    api: ApiClient,
    card: Template,
    user: User,
    tenant: Client,
    repo: SqlRepository,
) -> None:
    """An SVG of ``<use>`` fan-out stored before uploads counted what it expands to: the
    print file is refused with a 422 naming the file, not drawn for seconds on end."""
    identifier = stored_as_before(app, tenant, fan_out_svg(4), "svg")
    created = new_draft(api, card, user, name="Ada", logo=identifier)
    assert created.status_code == 201, created.get_data(as_text=True)
    draft_hash = created.get_json()["data"]["draftHash"]
    response = client.get(
        f"/api-ext/files/draft/{draft_hash}/print", query_string={"jwt": file_token(tenant)}
    )
    error = assert_error(response, 422)
    assert identifier in error["message"] and "expands to more than" in error["message"], error


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (fan_out_svg(4), "expands to more than"),
        (b'<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>', "no size"),
    ],
)
def test_preflight_reports_an_svg_that_cannot_be_drawn(
    app: Flask,
    api: ApiClient,
    card: Template,
    user: User,
    tenant: Client,
    data: bytes,
    words: str,
) -> None:
    """Every file of such a draft is a 422: preflight says so, naming the DataKey and file."""
    identifier = stored_as_before(app, tenant, data, "svg")
    created = new_draft(api, card, user, name="Ada")
    draft_hash = created.get_json()["data"]["draftHash"]
    updated = api.put(
        f"/api-ext/draft/{draft_hash}",
        json={"apiDefaultValues": {"name": "Ada", "logo": identifier}},
    )
    assert updated.status_code == 200, updated.get_data(as_text=True)
    data_out = updated.get_json()["data"]
    errors = [r["message"] for r in data_out["validationResults"] if r["severity"] == "error"]
    assert data_out["preflightStatus"] == 2, data_out["validationResults"]
    assert any(
        "'logo'" in message and identifier in message and words in message for message in errors
    ), errors


@pytest.fixture
def lowered(app: Flask, app_config: dict[str, Any]) -> Iterator[Flask]:
    """A second app on the same database and storage, with ``PPS_MAX_IMAGE_PIXELS``
    lowered to 100,000 (as after a restart with a lower setting)."""
    from pps.app import create_app

    application = create_app({**app_config, "max_image_pixels": 100_000})
    yield application
    application.extensions["pps"].close()


@pytest.mark.parametrize("stored", ["accepted", "before"])
def test_an_upload_over_a_lowered_pixel_limit_is_a_422_and_an_error(
    app: Flask,
    lowered: Flask,
    api: ApiClient,
    card: Template,
    user: User,
    tenant: Client,
    stored: str,
) -> None:
    """A PNG of 180,000 pixels accepted under the default limit, or one whose header says
    64 megapixels stored before any limit (its pixel data is broken: a decode would fail
    otherwise), is refused from its header when drawn, and preflight says so."""
    data = quadrants() if stored == "accepted" else huge_png(8000, 8000)
    identifier = (
        upload(api, data) if stored == "accepted" else stored_as_before(app, tenant, data, "png")
    )
    created = new_draft(api, card, user, name="Ada", logo=identifier)
    assert created.status_code == 201, created.get_data(as_text=True)
    draft_hash = created.get_json()["data"]["draftHash"]
    client = lowered.test_client()
    token = {"jwt": file_token(tenant)}
    for kind in ("print", "image"):
        response = client.get(f"/api-ext/files/draft/{draft_hash}/{kind}", query_string=token)
        error = assert_error(response, 422)
        assert identifier in error["message"] and "PPS_MAX_IMAGE_PIXELS" in error["message"], error
    updated = ApiClient(client, tenant.api_key).put(
        f"/api-ext/draft/{draft_hash}",
        json={"apiDefaultValues": {"name": "Ada", "logo": identifier}},
    )
    data_out = updated.get_json()["data"]
    errors = [r["message"] for r in data_out["validationResults"] if r["severity"] == "error"]
    assert any(
        "'logo'" in message and identifier in message and "PPS_MAX_IMAGE_PIXELS" in message
        for message in errors
    ), data_out["validationResults"]


def test_preflight_reports_a_low_resolution_logo(
    api: ApiClient, card: Template, user: User
) -> None:
    small = upload(api, quadrants(60, 30))
    response = new_draft(api, card, user, name="Ada")
    draft_hash = response.get_json()["data"]["draftHash"]
    updated = api.put(
        f"/api-ext/draft/{draft_hash}", json={"apiDefaultValues": {"name": "Ada", "logo": small}}
    )
    results = updated.get_json()["data"]["validationResults"]
    assert any(
        "dpi" in result["message"] and result["severity"] == "warning" for result in results
    ), results


# -- the editor ---------------------------------------------------------------------------


@pytest.fixture
def draft(api: ApiClient, card: Template, user: User, repo: SqlRepository, tenant: Client) -> Draft:
    response = new_draft(api, card, user, name="Ada Lovelace")
    assert response.status_code == 201, response.get_data(as_text=True)
    found = repo.get_draft(tenant.identifier, response.get_json()["data"]["draftHash"])
    assert found is not None
    return found


def editor(client: FlaskClient, tenant: Client, user: User, draft: Draft) -> tuple[str, str]:
    log_in(client, tenant, user)
    return open_editor(client, f"/editor/{draft.draft_hash}/edit")


def editor_upload(
    client: FlaskClient,
    draft: Draft,
    token: str,
    data: bytes,
    *,
    name: str = "logo.png",
    json_answer: bool = True,
) -> Any:
    return client.post(
        f"/editor/{draft.draft_hash}/upload",
        data={"csrf_token": token, "upload": "logo", "image:logo": (io.BytesIO(data), name)},
        content_type="multipart/form-data",
        headers={"Accept": "application/json" if json_answer else "text/html"},
    )


def test_the_edit_page_offers_upload_choices_and_variants(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    page, _ = editor(client, tenant, user, draft)
    assert 'name="image:logo"' in page and 'type="file"' in page
    assert 'accept="image/png,image/jpeg,image/svg+xml"' in page
    assert 'formenctype="multipart/form-data"' in page  # the upload works without JavaScript
    assert not re.search(r'<input id="f-\d+" name="v:logo" type="text"', page)  # no raw text box
    colours = re.findall(
        r'<input type="radio" id="f-\d+-\d" name="v:name.color" value="([^"]+)"', page
    )
    assert colours == ["Black", "Accent", "Red"]
    assert re.search(r'name="v:name.color" value="Black" checked', page)
    assert re.search(r'<select id="f-\d+" name="v:name.font"', page)
    assert re.findall(r'name="variant" value="([^"]+)"', page) == ["ocean", "forest"]
    assert "editor-media.js" in page
    german, _ = open_editor(client, f"/editor/{draft.draft_hash}/edit?locale=de")
    assert "Bild auswählen" in german and "Farbe" in german


def test_upload_crop_choose_and_save_reach_the_print_pdf(
    client: FlaskClient, tenant: Client, user: User, draft: Draft, repo: SqlRepository
) -> None:
    _, token = editor(client, tenant, user, draft)
    answer = editor_upload(client, draft, token, quadrants())
    assert answer.status_code == 200, answer.get_data(as_text=True)
    body = answer.get_json()
    assert (body["width"], body["height"], body["vector"]) == (600, 300, False)
    value = json.loads(body["value"])
    assert value["file"] == body["identifier"] and value["crop"]["width"] == 600  # whole width
    assert body["dpi"] == round(600 / (24 / 25.4)) and body["dpi"] >= body["minDpi"]
    served = client.get(body["url"])
    assert served.status_code == 200 and served.mimetype == "image/png"
    assert repo.get_draft(tenant.identifier, draft.draft_hash).values.get("logo") is None  # type: ignore[union-attr]
    cropped = json.dumps({"file": body["identifier"], "crop": CROP})
    saved = client.post(
        f"/editor/{draft.draft_hash}/edit",
        data={"csrf_token": token, "v:name": "Ada", "v:logo": cropped, "v:name.color": "Red",
              "v:name.font": "Vera-BoldItalic", "variant": "forest", "action": "save"},
    )  # fmt: skip
    assert saved.status_code == 303, saved.get_data(as_text=True)
    stored = repo.get_draft(tenant.identifier, draft.draft_hash)
    assert stored is not None
    assert stored.values["name.color"] == "Red" and stored.variant_identifier == "forest"
    pdf = print_file(client, tenant, stored)
    assert images_of(pdf) == [(600, 300)]
    assert RED_CMYK.encode() in content_of(pdf)
    assert FOREST.encode() in content_of(pdf)  # the variant's accent
    page, _ = open_editor(client, f"/editor/{draft.draft_hash}/edit")
    assert re.search(r'name="v:name.color" value="Red" checked', page)
    assert re.search(r'value="forest" checked', page)
    # The live preview renders the unsaved choice too.
    preview = client.post(
        f"/editor/{draft.draft_hash}/page/0.png?width=960",
        data={"csrf_token": token, "v:name.color": "Accent", "v:logo": cropped},
    )
    assert preview.status_code == 200 and preview.mimetype == "image/png"


def test_without_javascript_the_upload_saves_the_image(
    client: FlaskClient, tenant: Client, user: User, draft: Draft, repo: SqlRepository
) -> None:
    _, token = editor(client, tenant, user, draft)
    # The whole form goes along (multipart): what was typed is saved with the image.
    response = client.post(
        f"/editor/{draft.draft_hash}/upload",
        data={"csrf_token": token, "upload": "logo", "v:name": "Grace Hopper",
              "v:name.color": "Accent", "image:logo": (io.BytesIO(quadrants()), "logo.png")},
        content_type="multipart/form-data",
    )  # fmt: skip
    assert response.status_code == 303, response.get_data(as_text=True)
    stored = repo.get_draft(tenant.identifier, draft.draft_hash)
    assert stored is not None and json.loads(stored.values["logo"])["crop"]["width"] == 600
    assert stored.values["name"] == "Grace Hopper" and stored.values["name.color"] == "Accent"
    page, _ = open_editor(client, response.headers["Location"])
    assert "dpi" in page and "media-dpi low" not in page
    # Enter in a text field submits the first button, this one: without a file, it saves.
    again = client.post(
        f"/editor/{draft.draft_hash}/upload",
        data={"csrf_token": token, "upload": "logo", "v:name": "Ada", "v:name.color": "Pink"},
        content_type="multipart/form-data",
    )
    assert again.status_code == 422 and 'id="error-summary"' in again.get_data(as_text=True)
    fixed = client.post(
        f"/editor/{draft.draft_hash}/upload",
        data={"csrf_token": token, "upload": "logo", "v:name": "Ada"},
        content_type="multipart/form-data",
    )
    assert fixed.status_code == 303
    stored = repo.get_draft(tenant.identifier, draft.draft_hash)
    assert stored is not None and stored.values["name"] == "Ada" and "logo" in stored.values


def test_a_small_image_warns_under_300_dpi(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    _, token = editor(client, tenant, user, draft)
    body = editor_upload(client, draft, token, quadrants(60, 30)).get_json()
    assert body["dpi"] < 300
    editor_upload(client, draft, token, quadrants(60, 30), json_answer=False)
    page, _ = open_editor(client, f"/editor/{draft.draft_hash}/edit")
    assert 'class="media-dpi low"' in page and "300 dpi" in page


SCRIPTED_SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="10" onload="alert(1)">'
    b'<script>alert(2)</script><rect width="40" height="10" fill="#00ff00"/>'
    b'<image href="http://example.org/track.png" width="1" height="1"/></svg>'
)
ENTITY_SVG = (
    b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    b'<svg xmlns="http://www.w3.org/2000/svg"><text>&x;</text></svg>'
)
#: Groups nested a thousand deep: more than the sanitizer's limit (pps.uploads.svg.MAX_DEPTH).
DEEP_SVG = b'<svg xmlns="http://www.w3.org/2000/svg">' + b"<g>" * 1000 + b"</g>" * 1000 + b"</svg>"


@pytest.mark.parametrize(
    ("data", "name"),
    [
        (b"Name,City\nAda,London\n", "logo.png"),  # not an image, whatever its name says
        (b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF", "logo.pdf"),
        (huge_png(), "huge.png"),
        (b"\x89PNG\r\n\x1a\nbroken", "broken.png"),
        (ENTITY_SVG, "logo.svg"),
        (DEEP_SVG, "deep.svg"),
        # A size svglib reads as NaN or below zero: the crop answered was NaN (not JSON).
        (b'<svg xmlns="http://www.w3.org/2000/svg" width="-10" height="nan"/>', "n.svg"),
        (b"", "empty.png"),
    ],
)
def test_bad_uploads_are_refused_and_nothing_is_kept(
    client: FlaskClient,
    app: Flask,
    tenant: Client,
    user: User,
    draft: Draft,
    data: bytes,
    name: str,
) -> None:
    _, token = editor(client, tenant, user, draft)
    response = editor_upload(client, draft, token, data, name=name)
    assert response.status_code == 422, response.get_data(as_text=True)
    assert response.get_json()["success"] is False and response.get_json()["errors"]["logo"]
    uploads = app.extensions["pps"].storage.root / "uploads"
    assert not uploads.exists() or not any(uploads.rglob("*.*"))
    html = editor_upload(client, draft, token, data, name=name, json_answer=False)
    if data:  # the form again, the reason beside the image
        assert html.status_code == 422 and html.mimetype == "text/html"
        page = html.get_data(as_text=True)
        assert 'id="error-summary"' in page and "cannot be used" in page
    else:  # no file at all is the form's Save (see the test without JavaScript)
        assert html.status_code == 303


#: What the script shows before the reason a file is refused, per language; the form
#: without JavaScript shows the second beside the image.
REFUSED = {"en": "This file cannot be used: ", "de": "Diese Datei kann nicht verwendet werden: "}
FIELD_REFUSED = {"en": "cannot be used: ", "de": "kann nicht verwendet werden: "}
DAMAGED = {
    "en": "the image is damaged or incomplete and cannot be read",
    "de": "das Bild ist beschädigt oder unvollständig und kann nicht gelesen werden",
}
TOO_MANY_PIXELS = {
    "en": "the image has too many pixels (at most 40 megapixels); save it smaller and try again",
    "de": "das Bild hat zu viele Pixel (höchstens 40 Megapixel); speichern Sie es kleiner und "
    "versuchen Sie es noch einmal",
}
SVG_UNREADABLE = {
    "en": "the SVG file is damaged and cannot be read",
    "de": "die SVG-Datei ist beschädigt und kann nicht gelesen werden",
}
SVG_TOO_COMPLEX = {
    "en": "the SVG drawing is too complex to print; simplify it or save it as a PNG",
    "de": "die SVG-Grafik ist zu komplex für den Druck; vereinfachen Sie sie oder speichern Sie "
    "sie als PNG",
}
#: The limits of the ``strict`` app below.
STRICT_UPLOAD_BYTES = 50_000
STRICT_STORAGE_BYTES = 1000
#: Every way the editor refuses an image it was sent, as (file, status, the reason per
#: language, what the API says of the same file in English, unchanged for shop developers,
#: with the same status unless :data:`API_STATUS` says otherwise).
REFUSALS: dict[str, tuple[bytes, int, dict[str, str], str]] = {
    "no PNG header": (b"\x89PNG\r\n\x1a\nbroken", 422, DAMAGED, "cannot be decoded as an image"),
    "truncated PNG": (quadrants()[:400], 422, DAMAGED, "cannot be decoded as an image"),
    "100 megapixels": (huge_png(), 422, TOO_MANY_PIXELS, "has too many pixels"),
    "64 megapixels": (huge_png(8000, 8000), 422, TOO_MANY_PIXELS, "(PPS_MAX_IMAGE_PIXELS)"),
    "too many bytes": (
        b"\x89PNG\r\n\x1a\n" + b"\0" * 60_000,
        422,
        {
            "en": "the file is 59 kB; files of at most 49 kB can be used",
            "de": "die Datei ist 59 kB groß; erlaubt sind höchstens 49 kB",
        },
        "The file has 60008 bytes; files of at most 50000 bytes are accepted "
        "(PPS_MAX_UPLOAD_BYTES).",
    ),
    "DTD": (
        ENTITY_SVG,
        422,
        {
            "en": "the SVG file contains a DTD or entities, which are not allowed; save it "
            "without them",
            "de": "die SVG-Datei enthält eine DTD oder Entitäten, die nicht erlaubt sind; "
            "speichern Sie sie ohne diese",
        },
        "the SVG declares a DTD or entities, which are not allowed",
    ),
    "not XML": (
        b'<svg xmlns="http://www.w3.org/2000/svg"><rect></svg>',
        422,
        SVG_UNREADABLE,
        "the SVG is not well-formed XML: mismatched tag",
    ),
    "no SVG root": (
        b'<html><svg xmlns="http://www.w3.org/2000/svg"/></html>',
        422,
        SVG_UNREADABLE,
        "the root element is not <svg>",
    ),
    "nested deep": (DEEP_SVG, 422, SVG_TOO_COMPLEX, "elements are nested more than 100 levels"),
    "many elements": (
        b'<svg xmlns="http://www.w3.org/2000/svg">' + b"<g/>" * 10_001 + b"</svg>",
        422,
        SVG_TOO_COMPLEX,
        "it has more than 10000 elements",
    ),
    "expanding": (fan_out_svg(6), 422, SVG_TOO_COMPLEX, "it expands to more than 10000 elements"),
    "sizeless": (
        b'<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>',
        422,
        {
            "en": "the SVG drawing has no size; give it a viewBox, or a width and a height",
            "de": "die SVG-Grafik hat keine Größe; geben Sie ihr eine viewBox oder eine Breite "
            "und eine Höhe",
        },
        "it has no size: give its <svg> element a viewBox, or a width and a height",
    ),
    "negative size": (
        b'<svg xmlns="http://www.w3.org/2000/svg" width="-10" height="nan"/>',
        422,
        {
            "en": "the width and height of the SVG drawing must be positive numbers",
            "de": "Breite und Höhe der SVG-Grafik müssen positive Zahlen sein",
        },
        "its width and height (or those of its viewBox) must be positive numbers",
    ),
    "storage budget": (
        quadrants(),
        507,
        {
            "en": "there is no room left to store more images for this shop; nothing was stored",
            "de": "für diesen Shop ist kein Platz für weitere Bilder mehr; es wurde nichts "
            "gespeichert",
        },
        "(PPS_CLIENT_STORAGE_BYTES)",
    ),
}

#: The API reads its file within PPS_MAX_UPLOAD_BYTES itself (pps.uploads.web_body).
API_STATUS = {"too many bytes": 413}


@pytest.fixture
def strict(app: Flask, app_config: dict[str, Any]) -> Iterator[Flask]:
    """A second app on the same database and storage with small upload limits: files of
    at most 50,000 bytes, and 1,000 bytes of uploads per shop."""
    from pps.app import create_app

    application = create_app(
        {
            **app_config,
            "max_upload_bytes": STRICT_UPLOAD_BYTES,
            "client_storage_bytes": STRICT_STORAGE_BYTES,
        }
    )
    yield application
    application.extensions["pps"].close()


def image_error(page: str) -> str:
    """The reason shown beside the image on the edit page."""
    match = re.search(
        r'<fieldset class="media-image[^"]*" id="(f-\d+)-group".*?'
        r'<p class="field-error" id="\1-error">([^<]*)</p>',
        page,
        re.DOTALL,
    )
    assert match is not None, page
    return html.unescape(match.group(2))


@pytest.mark.parametrize("case", list(REFUSALS))
def test_every_refused_image_is_explained_in_the_pages_language(
    strict: Flask, tenant: Client, user: User, draft: Draft, case: str
) -> None:
    """A damaged image, too many pixels or bytes, an SVG refused for its content or size,
    a full storage budget: the customer reads why in the page's language (the script's
    JSON and the form without JavaScript), not the English written for shop developers,
    which ``POST /api-ext/file`` keeps answering for the same file."""
    data, status, reasons, developers = REFUSALS[case]
    client = strict.test_client()
    log_in(client, tenant, user)
    for locale in ("de", "en"):
        _, token = open_editor(client, f"/editor/{draft.draft_hash}/edit?locale={locale}")
        expected = REFUSED[locale] + reasons[locale]
        answer = editor_upload(client, draft, token, data, name="logo")
        assert answer.status_code == status, (locale, answer.get_data(as_text=True))
        body = answer.get_json()
        assert (body["message"], body["errors"]) == (expected, {"logo": [expected]}), locale
        page = editor_upload(client, draft, token, data, name="logo", json_answer=False)
        assert page.status_code == status and page.mimetype == "text/html", locale
        assert image_error(page.get_data(as_text=True)) == FIELD_REFUSED[locale] + reasons[locale]
    api = ApiClient(client, tenant.api_key)
    sent = api.post(
        "/api-ext/file", data=multipart("logo", data), content_type="multipart/form-data"
    )
    error = assert_error(sent, API_STATUS.get(case, status))
    assert developers in error["message"], error
    uploads = strict.extensions["pps"].storage.root / "uploads"
    assert not uploads.exists() or not any(uploads.rglob("*.*"))


@pytest.mark.parametrize(
    ("locale", "expected"),
    [
        ("de", "Diese Datei kann nicht verwendet werden: die Datei ist 300 kB groß; erlaubt sind "
         "höchstens 49 kB"),
        ("en", "This file cannot be used: the file is 300 kB; files of at most 49 kB can be used"),
    ],
)  # fmt: skip
def test_a_body_over_the_upload_limit_is_explained_to_the_script_in_the_pages_language(
    strict: Flask, tenant: Client, user: User, draft: Draft, locale: str, expected: str
) -> None:
    """A file too large to be read at all is a 413 the script can show (JSON in the page's
    language); the form without JavaScript gets the "too large" page, as before."""
    client = strict.test_client()
    log_in(client, tenant, user)
    _, token = open_editor(client, f"/editor/{draft.draft_hash}/edit?locale={locale}")
    # 300 kB with the multipart framing (some hundred bytes) around the file.
    data = b"\x89PNG\r\n\x1a\n" + b"\0" * (300 * 1024 - 512 - 8)
    answer = editor_upload(client, draft, token, data)
    assert answer.status_code == 413 and answer.is_json, answer.get_data(as_text=True)
    assert answer.get_json() == {"message": expected, "success": False, "errors": {}}
    page = editor_upload(client, draft, token, data, json_answer=False)
    assert page.status_code == 413 and 'data-kind="too_large"' in page.get_data(as_text=True)


@pytest.mark.parametrize(
    ("locale", "expected"),
    [
        ("de", "Diese Datei kann nicht verwendet werden: erlaubt sind höchstens 49 kB"),
        ("en", "This file cannot be used: files of at most 49 kB can be used"),
    ],
)
def test_a_chunked_body_over_the_upload_limit_is_explained_to_the_script_too(
    strict: Flask, tenant: Client, user: User, draft: Draft, locale: str, expected: str
) -> None:
    """Without Content-Length the body is found too large only as it is read: the same
    413 in the page's language (its size unknown, the limit named), nothing stored."""
    client = strict.test_client()
    log_in(client, tenant, user)
    _, token = open_editor(client, f"/editor/{draft.draft_hash}/edit?locale={locale}")
    data = b"\x89PNG\r\n\x1a\n" + b"\0" * (300 * 1024)
    boundary, body = encode_multipart(
        MultiDict(
            [
                ("csrf_token", token),
                ("upload", "logo"),
                ("image:logo", FileStorage(io.BytesIO(data), "logo.png")),
            ]
        )
    )
    answer = client.post(
        f"/editor/{draft.draft_hash}/upload",
        input_stream=io.BytesIO(body),
        headers={
            "Transfer-Encoding": "chunked",
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Accept": "application/json",
        },
        environ_overrides={"wsgi.input_terminated": True},  # as gunicorn marks its end
    )
    assert answer.status_code == 413 and answer.is_json, answer.get_data(as_text=True)
    assert answer.get_json() == {"message": expected, "success": False, "errors": {}}
    uploads = strict.extensions["pps"].storage.root / "uploads"
    assert not uploads.exists() or not any(uploads.rglob("*.*"))


def test_an_svg_with_script_or_external_reference_is_kept_clean(
    client: FlaskClient, app: Flask, tenant: Client, user: User, draft: Draft
) -> None:
    _, token = editor(client, tenant, user, draft)
    body = editor_upload(client, draft, token, SCRIPTED_SVG, name="logo.svg").get_json()
    assert body["vector"] is True and body["dpi"] is None
    served = client.get(body["url"])
    assert (
        served.mimetype == "image/svg+xml"
        and "default-src 'none'" in served.headers["Content-Security-Policy"]
    )
    text = served.get_data(as_text=True)
    assert "script" not in text and "onload" not in text and "example.org" not in text
    assert "#00ff00" in text


def test_the_editor_refuses_bad_choices_foreign_files_and_variants(
    client: FlaskClient,
    api: ApiClient,
    other_api: ApiClient,
    tenant: Client,
    user: User,
    draft: Draft,
    repo: SqlRepository,
) -> None:
    _, token = editor(client, tenant, user, draft)
    foreign = upload(other_api, quadrants())
    for data in (
        {"v:name.color": "Pink"},
        {"v:name.font": "Courier"},
        {"v:logo": json.dumps({"file": foreign})},
        {"v:logo": "not an identifier"},
        {"variant": "desert"},
    ):
        response = client.post(
            f"/editor/{draft.draft_hash}/edit", data={"csrf_token": token, "action": "save", **data}
        )
        assert response.status_code == 422, (data, response.status_code)
        assert 'id="error-summary"' in response.get_data(as_text=True)
    stored = repo.get_draft(tenant.identifier, draft.draft_hash)
    assert stored is not None and stored.version == draft.version  # nothing saved
    # Another shop's (or an unknown) upload is not served to this editor either.
    assert client.get(f"/editor/{draft.draft_hash}/image/{foreign}").status_code == 404


def test_uploads_need_the_login_and_the_csrf_token(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    assert editor_upload(client, draft, "x", quadrants()).status_code == 401
    editor(client, tenant, user, draft)
    assert editor_upload(client, draft, "wrong", quadrants()).status_code == 403


def test_uploads_are_rate_limited_per_login(
    client: FlaskClient, app: Flask, tenant: Client, user: User, draft: Draft
) -> None:
    _, token = editor(client, tenant, user, draft)
    image = quadrants()
    # A customer's pace goes through; a script sending image after image gets 429 with
    # Retry-After before the file is checked or stored, as JSON for the script.
    answers = []
    for _ in range(3 * UPLOADS_PER_MINUTE):
        answers.append(editor_upload(client, draft, token, image))
        if answers[-1].status_code == 429:
            break
    statuses = [answer.status_code for answer in answers]
    assert statuses[-1] == 429, statuses
    assert len(statuses) > UPLOADS_PER_MINUTE and set(statuses[:-1]) == {200}
    refused = answers[-1]
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert refused.get_json()["success"] is False and refused.get_json()["errors"]["logo"]
    stored = app.extensions["pps"].storage.root / "uploads"
    assert len(list(stored.rglob("*.*"))) == len(statuses) - 1
    # The form without JavaScript: the "busy" page, nothing saved.
    for _ in range(3 * UPLOADS_PER_MINUTE):
        page = editor_upload(client, draft, token, image, json_answer=False)
        if page.status_code == 429:
            break
    assert page.status_code == 429 and page.mimetype == "text/html"
    assert 'data-kind="busy"' in page.get_data(as_text=True)


@pytest.mark.parametrize(
    ("locale", "expected"),
    [
        ("de", "Sie haben in kurzer Zeit zu viele Bilder hochgeladen. Bitte warten Sie etwas "
         "und versuchen Sie es dann noch einmal."),
        ("en", "You uploaded too many images in a short time. Please wait a little and try "
         "again."),
    ],
)  # fmt: skip
def test_the_upload_rate_limit_is_explained_in_the_pages_language(
    client: FlaskClient, tenant: Client, user: User, draft: Draft, locale: str, expected: str
) -> None:
    """The script shows why the image was not taken, in the page's language."""
    log_in(client, tenant, user)
    _, token = open_editor(client, f"/editor/{draft.draft_hash}/edit?locale={locale}")

    def burst() -> list[Any]:  # refused files count too
        return [editor_upload(client, draft, token, b"") for _ in range(UPLOADS_PER_MINUTE + 1)]

    # The uploads are counted per minute of the clock: all in one.
    *taken, refused = in_one_window(60, burst, needed=15)
    assert [answer.status_code for answer in taken] == [422] * UPLOADS_PER_MINUTE
    assert refused.status_code == 429 and "Retry-After" in refused.headers
    body = refused.get_json()
    assert body == {"message": expected, "success": False, "errors": {"logo": [expected]}}


def test_a_locked_draft_takes_no_upload(
    client: FlaskClient, api: ApiClient, tenant: Client, user: User, draft: Draft, app: Flask
) -> None:
    _, token = editor(client, tenant, user, draft)
    assert api.put(f"/api-ext/draft/{draft.draft_hash}", json={"locked": True}).status_code == 200
    assert editor_upload(client, draft, token, quadrants()).status_code == 409
    locked, _ = open_editor(client, f"/editor/{draft.draft_hash}/edit")
    assert re.search(r'<div class="editor-media"[^>]*>\s*<fieldset disabled>', locked)
    uploads = app.extensions["pps"].storage.root / "uploads"
    assert not uploads.exists() or not any(uploads.rglob("*.*"))


def test_a_stale_form_sent_by_the_upload_button_gets_the_conflict_page(
    client: FlaskClient,
    api: ApiClient,
    tenant: Client,
    user: User,
    draft: Draft,
    repo: SqlRepository,
) -> None:
    # The upload button of the form without JavaScript saves the whole form, so it checks
    # base_version as Save does: another tab's (or the shop's) change is never overwritten.
    page, token = editor(client, tenant, user, draft)
    loaded = re.search(r'name="base_version" value="(\d+)"', page)
    assert loaded is not None
    changed = api.put(f"/api-ext/draft/{draft.draft_hash}", json={"customAttributes": {"o": 1}})
    assert changed.status_code == 200
    current = repo.get_draft(tenant.identifier, draft.draft_hash)
    assert current is not None and current.version > int(loaded.group(1))
    stale = {"csrf_token": token, "upload": "logo", "base_version": loaded.group(1)}
    for extra in ({}, {"image:logo": (io.BytesIO(quadrants()), "logo.png")}):
        response = client.post(
            f"/editor/{draft.draft_hash}/upload",
            data={**stale, "v:name": "Mine", **extra},
            content_type="multipart/form-data",
        )
        assert response.status_code == 409, response.get_data(as_text=True)
        conflict = response.get_data(as_text=True)
        assert 'id="save-conflict"' in conflict and 'value="Mine"' in conflict
        assert f'name="base_version" value="{current.version}"' in conflict
        assert repo.get_draft(tenant.identifier, draft.draft_hash) == current  # nothing saved
    bad = client.post(
        f"/editor/{draft.draft_hash}/upload",
        data={**stale, "base_version": "x", "v:name": "Mine"},
        content_type="multipart/form-data",
    )
    assert bad.status_code == 400
    again = client.post(
        f"/editor/{draft.draft_hash}/upload",
        data={**stale, "base_version": str(current.version), "v:name": "Mine"},
        content_type="multipart/form-data",
    )
    assert again.status_code == 303  # saving on the current version is the explicit choice
    saved = repo.get_draft(tenant.identifier, draft.draft_hash)
    assert saved is not None and saved.values["name"] == "Mine"
