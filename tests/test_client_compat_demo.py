"""The reference product's editor demo (``risscsolutions/printformer-editor-demo``), call by
call, as its server and its page make them.

The demo is a PHP page (``dist/index.php``: Guzzle, lcobucci/jwt 4) around a Vue app
(``index.js``, ``src/``) that drives the editor in an iframe through the editor client:

1. ``POST /api-ext/draft`` with ``form_params`` (``templateIdentifier``, ``user_identifier``,
   ``intent``), ``Accept: application/json`` and the bearer key; reads ``data.draftHash``.
2. A login token: header ``jti`` (``md5(random_bytes(64))``), ``iat``, ``iss`` (the pps
   URL), ``exp`` one week away, ``user``, ``client`` and ``redirect`` =
   ``{PRINTFORMER_URL}/editor/{draftHash}/embed``.
3. ``GET /auth?jwt=...`` from the server, ``allow_redirects: false``; the first
   ``Location`` goes into the page as the iframe's ``src``, for a browser that never saw
   the ``/auth`` answer.
4. When ``EDITOR_LOADED`` says ``configuration.show3DPreview``, a second iframe gets the
   same ``src`` with ``/embed`` replaced by ``/3d``.
5. ``Assets.vue`` lists the image objects (``findEditorObjects({type: BlockTypes.ASSET})``,
   showing each one's ``name``); ``CroppingImage.vue`` crops the shopper's file in the page,
   hands it to ``picture.replaceWithFile(new File([...], name, {type}))`` and then calls
   ``save()``. The editor's script reads the objects from the embed page and sends the file
   through the editor's own upload; here the server's side of that, the calls in Chromium
   are in ``tests/test_embed_browser.py``.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import secrets
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from client_compat_support import lcobucci_token, now_and_in, renderable_template
from conftest import ApiClient, session_cookie_name
from flask import Flask
from PIL import Image
from test_render_media import CARD_DIR

from pps.platform.models import Client, Template, User
from pps.platform.repository.sql import SqlRepository
from pps.templates.files import import_template, load_template_file

PRINTFORMER_URL = "http://localhost"  # the demo's .env: pps's base URL
SHOP = "https://shop-a.example"  # the demo's page, an allowed origin of the client


@pytest.fixture
def template(repo: SqlRepository, tenant: Client) -> Template:
    return renderable_template(repo, tenant)


def create_draft(api: ApiClient, user: User, template: Template, intent: str) -> str:
    form = {
        "templateIdentifier": template.identifier,
        "user_identifier": user.identifier,
        "intent": intent,
    }
    response = api.post("/api-ext/draft", data=form)  # Guzzle form_params: urlencoded
    assert response.status_code == 201, response.get_data(as_text=True)
    data = response.get_json()["data"]
    assert data["templateIdentifier"] == template.identifier and data["intent"] == intent
    return str(data["draftHash"])


def demo_token(tenant: Client, user: User, draft_hash: str) -> str:
    iat, exp = now_and_in(7)
    claims = {
        "iat": iat,
        "iss": PRINTFORMER_URL,
        "exp": exp,
        "user": user.identifier,
        "client": tenant.identifier,
        "redirect": f"{PRINTFORMER_URL}/editor/{draft_hash}/embed",
    }
    jti = hashlib.md5(secrets.token_bytes(64)).hexdigest()  # noqa: S324 (the demo's nonce)
    return lcobucci_token(tenant.api_key, claims, {"jti": jti})


def iframe_src(app: Flask, tenant: Client, user: User, draft_hash: str) -> str:
    """What ``index.php`` puts into ``window.pfURL``."""
    shop_server = app.test_client()
    response = shop_server.get(f"/auth?jwt={demo_token(tenant, user, draft_hash)}")
    assert response.status_code == 302, response.get_data(as_text=True)
    assert session_cookie_name() not in ";".join(response.headers.getlist("Set-Cookie"))
    return str(response.headers["Location"])


def load(browser: Any, url: str, **kwargs: Any) -> Any:
    parts = urlsplit(url)
    return browser.get(parts.path, query_string=parts.query, **kwargs)


@pytest.mark.parametrize("intent", ["customize", "personalize"])
def test_draft_from_form_fields(
    api: ApiClient, user: User, template: Template, intent: str
) -> None:
    create_draft(api, user, template, intent)


def test_the_location_opens_the_embedded_editor_in_a_fresh_browser(
    app: Flask, api: ApiClient, tenant: Client, user: User, template: Template
) -> None:
    draft_hash = create_draft(api, user, template, "customize")
    src = iframe_src(app, tenant, user, draft_hash)
    # An absolute URL: the iframe is on the shop's page, a path would be the shop's.
    assert src.startswith(f"{PRINTFORMER_URL}/editor/{draft_hash}/embed?handoff="), src
    browser = app.test_client()  # the customer's, inside the demo's iframe
    exchanged = load(browser, src, headers={"Sec-Fetch-Dest": "iframe"})
    assert exchanged.status_code == 303
    page = load(browser, exchanged.headers["Location"])
    assert page.status_code == 200, page.get_data(as_text=True)
    policy = page.headers["Content-Security-Policy"]
    assert f"frame-ancestors {SHOP}" in policy and "X-Frame-Options" not in page.headers
    assert 'data-allowed-origins="' in page.get_data(as_text=True)


def test_the_3d_frame_from_the_same_src(
    app: Flask, api: ApiClient, tenant: Client, user: User, template: Template
) -> None:
    """``EditorSection.vue``: ``src.replace(/\\/embed/, '/3d')`` once the editor loaded; the
    editor client's ``setThreeDeeElement`` then drops the used handoff code. The session
    the editor frame got opens the 3d step framed by the shop."""
    draft_hash = create_draft(api, user, template, "customize")
    src = iframe_src(app, tenant, user, draft_hash)
    browser = app.test_client()
    assert load(browser, src).status_code == 303
    three_d = src.replace("/embed", "/3d", 1).split("?", 1)[0]
    page = load(browser, three_d)
    assert page.status_code == 200
    assert f"frame-ancestors {SHOP}" in page.headers["Content-Security-Policy"]


def test_a_second_demo_page_load_needs_a_second_login(
    app: Flask, api: ApiClient, tenant: Client, user: User, template: Template
) -> None:
    """Every load of ``index.php`` creates a draft and logs in with a fresh ``jti``."""
    first = create_draft(api, user, template, "customize")
    second = create_draft(api, user, template, "customize")
    for draft_hash in (first, second):
        browser = app.test_client()
        src = iframe_src(app, tenant, user, draft_hash)
        assert load(browser, src).status_code == 303
        assert load(browser, f"/editor/{draft_hash}/embed").status_code == 200


def test_query_string_token_survives_urlencoding(
    app: Flask, api: ApiClient, tenant: Client, user: User, template: Template
) -> None:
    """The demo appends the raw token (``'/auth?jwt=' . $jwt``); a shop that encodes it
    (``http_build_query``) logs in the same."""
    draft_hash = create_draft(api, user, template, "customize")
    query = urlencode({"jwt": demo_token(tenant, user, draft_hash)})
    assert app.test_client().get(f"/auth?{query}").status_code == 302


def test_assets_find_the_image_objects_and_replace_with_file_uploads_into_one(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    card = import_template(
        repo,
        app.extensions["pps"].storage,
        tenant.identifier,
        load_template_file(CARD_DIR / "template.json"),
    )
    draft_hash = create_draft(api, user, card, "customize")
    browser = app.test_client()
    exchanged = load(browser, iframe_src(app, tenant, user, draft_hash))
    page = load(browser, exchanged.headers["Location"]).get_data(as_text=True)

    # What findEditorObjects answers from: the logo's DataKey, label, page and box.
    group = re.search(r'<fieldset class="media-image[^>]*>', page, re.S)
    assert group is not None, page
    attributes = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', group.group(0)))
    assert attributes["data-key"] == "logo" and attributes["data-label"] == "Your logo"
    assert attributes["data-page"] == "0" and attributes["data-required"] == "false"
    assert (attributes["data-box-width"], attributes["data-box-height"]) == ("24.0", "6.0")

    # replaceWithFile: the cropped canvas as a PNG File named as the shopper's, through the
    # editor's upload; the value then goes into the form and is saved.
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    version = re.search(r'name="base_version" value="(\d+)"', page)
    assert token is not None and version is not None
    canvas = io.BytesIO()
    Image.new("RGB", (480, 120), (200, 30, 30)).save(canvas, "PNG")
    uploaded = browser.post(
        f"/editor/{draft_hash}/upload",
        data={
            "csrf_token": token.group(1),
            "upload": "logo",
            "image:logo": (io.BytesIO(canvas.getvalue()), "Foto vom Urlaub.jpg", "image/png"),
        },
        content_type="multipart/form-data",
        headers={"Accept": "application/json"},
    )
    assert uploaded.status_code == 200, uploaded.get_data(as_text=True)
    placed = uploaded.get_json()
    assert (placed["width"], placed["height"], placed["dpi"]) == (480, 120, 508)
    assert placed["url"] == f"/editor/{draft_hash}/image/{placed['identifier']}"
    saved = browser.post(
        f"/editor/{draft_hash}/autosave",
        data=json.dumps(
            {"baseVersion": int(version.group(1)), "values": {"logo": placed["value"]}}
        ),
        content_type="application/json",
        headers={"X-CSRF-Token": token.group(1)},
    )
    assert saved.status_code == 200, saved.get_data(as_text=True)
    stored = repo.get_draft(tenant.identifier, draft_hash)
    assert stored is not None and json.loads(stored.values["logo"])["file"] == placed["identifier"]

    # A file that is no image: the upload's message, which the promise rejects with.
    refused = browser.post(
        f"/editor/{draft_hash}/upload",
        data={
            "csrf_token": token.group(1),
            "upload": "logo",
            "image:logo": (io.BytesIO(b"%PDF-1.4\n%%EOF\n"), "menu.pdf", "application/pdf"),
        },
        content_type="multipart/form-data",
        headers={"Accept": "application/json"},
    )
    assert refused.status_code == 422
    assert refused.get_json()["errors"]["logo"][0].startswith("This file cannot be used: ")
