"""Every call the Magento 2 module (``risscsolutions/printformer-magento-2``, v101.7.3) makes,
in the shape it sends, with the fields it reads.

Sources, per test: ``Helper/Api.php`` (users, drafts, page info, replicate, claim, merge,
pdf-processing, thumbnails, file links, editor login), ``Helper/Api/Url/V2.php`` (paths, the
editor URL and its callbacks, file links of the admin, the review login),
``Gateway/User/Draft.php`` (its Guzzle client sends ``Content-Type: application/json`` on
every request, bodies or not), ``Gateway/Admin/Product.php`` (the template sync),
``Controller/Adminhtml/Product/Sync.php`` and ``Observer/Config/Save.php`` (the client's
name), ``Helper/Media.php`` (gallery images: page info, then one image a page),
``Helper/ConfigurableProduct.php`` with ``draftProcess`` and ``updateColorVariant`` (colour
variants: a variant version per product, as a string).
Its HTTP client is Guzzle with ``Accept: application/json`` and ``Authorization: Bearer``;
``['json' => ...]`` bodies are JSON, ``[]`` sends no body at all.
"""

from __future__ import annotations

import dataclasses
import secrets
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from api_support import snapshot
from client_compat_support import lcobucci_token, now_and_in, php_base64, renderable_template
from conftest import ApiClient, complete_login
from flask import Flask
from flask.testing import FlaskClient
from preflight_support import print_pdf
from shop_support import Served, running_shop, wait_until
from test_editor import links

from pps.platform.models import Client, Template
from pps.platform.repository.sql import SqlRepository
from pps.templates.files import import_template, load_template_file

BASE = "http://localhost"  # the module's "printformer URL" setting: pps's base URL
SHOP = "https://shop-a.example"
ORDER_ID_KEY = "pf-ca-orderid"  # etc/config.xml draft_update_order_id
#: Files are fetched for drafts the customer filled in the editor; values stand for that.
EDITED = {"headline": "Summer sale", "phone": "+49 30 1234"}
CARD = Path(__file__).resolve().parent.parent / "examples" / "templates" / "business-card"


@pytest.fixture
def template(repo: SqlRepository, tenant: Client) -> Template:
    return renderable_template(repo, tenant)


@pytest.fixture
def colours(app: Flask, repo: SqlRepository, tenant: Client) -> Template:
    """The business card example, its two colour variants each with a version of its own, as
    the module's products name them (``printformer_color_variation``): ocean 1, forest 2."""
    loaded = load_template_file(CARD / "template.json")
    variants = [
        {**variant, "version": number}
        for number, variant in enumerate(loaded.spec["variants"], start=1)
    ]
    loaded = dataclasses.replace(loaded, spec={**loaded.spec, "variants": variants})
    return import_template(repo, app.extensions["pps"].storage, tenant.identifier, loaded)


def create_user(api: ApiClient, **options: Any) -> str:
    """``Helper/Api.php createUser``: JSON with the customer's names, or no body at all."""
    response = api.post("/api-ext/user", **options)
    assert response.status_code == 201, response.get_data(as_text=True)
    identifier = response.get_json()["data"]["identifier"]
    assert isinstance(identifier, str) and identifier
    return str(identifier)


def create_draft(api: ApiClient, user_id: str, template: Template, **params: Any) -> dict[str, Any]:
    """``Helper/Api.php createDraftHash``: user_identifier, templateIdentifier, then params."""
    body = {"user_identifier": user_id, "templateIdentifier": template.identifier, **params}
    response = api.post("/api-ext/draft", json=body)
    assert response.status_code == 201, response.get_data(as_text=True)
    data: dict[str, Any] = response.get_json()["data"]
    assert isinstance(data["draftHash"], str)
    return data


def file_token(tenant: Client, user: str | None = None) -> str:
    """``getThumbnail`` (with ``user``), ``getPdfLink``, ``getAdminPDF``: iat, client, exp."""
    iat, exp = now_and_in(30)
    claims: dict[str, Any] = {"iat": iat, "client": tenant.identifier}
    if user is not None:
        claims["user"] = user
    claims["exp"] = exp
    return lcobucci_token(tenant.api_key, claims)


def login_url(tenant: Client, user: str, redirect: str) -> str:
    """``getEditorWebtokenUrl`` / ``getReviewEditAuth``: jti in payload and header."""
    jti = secrets.token_hex(16)
    iat, exp = now_and_in(30)
    claims = {
        "iat": iat,
        "client": tenant.identifier,
        "user": user,
        "jti": jti,
        "redirect": redirect,
        "exp": exp,
    }
    return "/auth?" + urlencode({"jwt": lcobucci_token(tenant.api_key, claims, {"jti": jti})})


# -- users -------------------------------------------------------------------------------


def test_create_user_without_a_body(api: ApiClient) -> None:
    """A guest: ``post($url, [])`` sends no body and no Content-Type."""
    create_user(api)


def test_create_user_with_an_empty_json_content_type(api: ApiClient) -> None:
    """``Gateway/User/Draft.php createUser``: ``post($url)`` on a client whose default
    headers say ``Content-Type: application/json``."""
    create_user(api, headers={"Content-Type": "application/json"})


def test_customer_user_is_created_checked_and_completed(api: ApiClient) -> None:
    """``createUser($customer)`` then ``checkUserData``: GET, and PUT the names when empty."""
    user_id = create_user(api, json={"firstName": "Ada", "lastName": "", "email": "a@b.example"})
    shown = api.get(f"/api-ext/user/{user_id}")
    assert shown.status_code == 200
    profile = shown.get_json()["data"]["profile"]
    assert profile["firstName"] == "Ada" and profile["lastName"] in ("", None)
    body = {"firstName": "Ada", "lastName": "Lovelace", "email": "a@b.example"}
    updated = api.put(f"/api-ext/user/{user_id}", json=body)
    assert updated.status_code == 200
    assert updated.get_json()["data"]["profile"]["lastName"] == "Lovelace"


def test_merge_users(api: ApiClient, template: Template) -> None:
    """``userMerge`` / ``mergeUsers``: the guest's drafts go to the logged-in customer."""
    customer, guest = create_user(api), create_user(api)
    draft = create_draft(api, guest, template, intent="customize")
    merged = api.post(f"/api-ext/user/{customer}/merge", json={"source_user_identifier": guest})
    assert merged.status_code == 200 and merged.get_json() == {"success": True}
    moved = api.get(f"/api-ext/draft/{draft['draftHash']}").get_json()["data"]
    assert moved["userIdentifier"] == customer


def test_claim_drafts(api: ApiClient, template: Template) -> None:
    """``migrateDrafts``: the answer is decoded as ``{hash: bool}``."""
    owner, guest = create_user(api), create_user(api)
    draft = create_draft(api, guest, template, intent="customize")
    body = {"user_identifier": owner, "drafts": [draft["draftHash"], "0" * 32], "dryRun": True}
    response = api.post("/api-ext/draft/claim", json=body)
    assert response.status_code == 200
    assert response.get_json() == {draft["draftHash"]: True, "0" * 32: False}


# -- drafts ------------------------------------------------------------------------------


@pytest.mark.parametrize("intent", ["customize", "personalize", "upload-and-editor"])
def test_create_draft_as_draft_process(api: ApiClient, template: Template, intent: str) -> None:
    """``draftProcess``: ``intent`` from the template's ``intents`` (the synced catalogue)."""
    user_id = create_user(api)
    data = create_draft(api, user_id, template, intent=intent)
    assert data["userIdentifier"] == user_id and data["intent"] == intent
    assert data["templateIdentifier"] == template.identifier


def test_create_upload_draft_with_the_order_id(api: ApiClient, template: Template) -> None:
    """``uploadDraftProcess``: intent ``upload`` and the order's increment id."""
    user_id = create_user(api)
    data = create_draft(
        api, user_id, template, intent="upload", customAttributes={ORDER_ID_KEY: "000000012"}
    )
    assert data["intent"] == "upload"
    assert data["customAttributes"] == {ORDER_ID_KEY: "000000012"}


def test_order_id_is_written_on_the_draft(api: ApiClient, template: Template) -> None:
    """``updateDraftHash``: PUT customAttributes, then reads ``data.draftHash``."""
    draft = create_draft(api, create_user(api), template, intent="customize")
    body = {"customAttributes": {ORDER_ID_KEY: "000000012"}}
    response = api.put(f"/api-ext/draft/{draft['draftHash']}", json=body)
    assert response.status_code == 200
    data = response.get_json()["data"]
    assert data["draftHash"] == draft["draftHash"]
    assert data["customAttributes"][ORDER_ID_KEY] == "000000012"


def test_show_draft_has_the_variant_version(api: ApiClient, template: Template) -> None:
    """``getPrintformerDraft`` caches ``data``; ``updateColorVariant`` reads
    ``data.variant.version``."""
    draft = create_draft(api, create_user(api), template, intent="customize")
    response = api.get(f"/api-ext/draft/{draft['draftHash']}")
    assert response.status_code == 200
    data = response.get_json()["data"]
    assert data["draftHash"] == draft["draftHash"] and "version" in data["variant"]


def get_draft(api: ApiClient, draft_hash: str) -> dict[str, Any]:
    """``getPrintformerDraft``: GET, caches ``data`` under ``data.draftHash``."""
    response = api.get(f"/api-ext/draft/{draft_hash}")
    assert response.status_code == 200, response.get_data(as_text=True)
    data: dict[str, Any] = response.get_json()["data"]
    assert data["draftHash"] == draft_hash
    return data


def update_color_variant(api: ApiClient, draft_hash: str, color_variant: str) -> Any:
    """``updateColorVariant``: reads ``data.variant.version``, compares it loosely (``!=``)
    with the product's colour (a string) and PUTs ``{"version": <that string>}`` when they
    differ; ``updatePrintformerDraft`` counts only a 200 as done."""
    if str(get_draft(api, draft_hash)["variant"]["version"]) == color_variant:
        return None
    return api.put(f"/api-ext/draft/{draft_hash}", json={"version": color_variant})


def assert_variant(data: dict[str, Any], id_: int, identifier: str, version: int) -> None:
    """The draft's ``variant`` as the module reads it and the PHP SDK types it (ints)."""
    assert data["variant"] == {"id": id_, "identifier": identifier, "version": version}
    assert type(data["variant"]["id"]) is int and type(data["variant"]["version"]) is int


def test_draft_of_a_configurable_product_offers_its_colours(
    api: ApiClient, repo: SqlRepository, tenant: Client, colours: Template
) -> None:
    """``draftProcess``: ``availableVariantVersions`` are the ``printformer_color_variation``
    values of the product's children, strings; they are the colours the editor offers."""
    draft = create_draft(
        api, create_user(api), colours, intent="customize", availableVariantVersions=["2"]
    )
    assert_variant(draft, 2, "forest", 2)
    assert_variant(get_draft(api, draft["draftHash"]), 2, "forest", 2)
    stored = repo.get_draft(tenant.identifier, draft["draftHash"])
    assert stored is not None and stored.available_variants == ("forest",)

    both = create_draft(
        api, create_user(api), colours, intent="customize", availableVariantVersions=["1", "2"]
    )
    assert_variant(both, 1, "ocean", 1)


def test_update_color_variant_switches_by_version(
    api: ApiClient, repo: SqlRepository, tenant: Client, colours: Template
) -> None:
    """``updateColorVariant`` sends the version alone, as a string: the draft takes the
    variant of that version, and its files are drawn in it."""
    draft = create_draft(
        api, create_user(api), colours, intent="customize", availableVariantVersions=["1", "2"]
    )
    response = update_color_variant(api, draft["draftHash"], "2")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert_variant(response.get_json()["data"], 2, "forest", 2)
    assert_variant(get_draft(api, draft["draftHash"]), 2, "forest", 2)
    stored = repo.get_draft(tenant.identifier, draft["draftHash"])
    assert stored is not None and stored.variant is not None
    assert stored.variant.identifier == "forest"
    assert update_color_variant(api, draft["draftHash"], "2") is None  # nothing to change
    back = update_color_variant(api, draft["draftHash"], "1")
    assert back.status_code == 200
    assert_variant(back.get_json()["data"], 1, "ocean", 1)


def test_update_color_variant_of_a_draft_without_one(api: ApiClient, colours: Template) -> None:
    """A simple product's draft has no variant (``version`` null, ``null != "2"``): the
    module's PUT gives it the variant of that version."""
    draft = create_draft(api, create_user(api), colours, intent="customize")
    assert draft["variant"] == {"id": None, "identifier": "", "version": None}
    response = update_color_variant(api, draft["draftHash"], "2")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert_variant(response.get_json()["data"], 2, "forest", 2)


@pytest.mark.parametrize(
    ("version", "named"),
    [
        ("3", "3"),  # no variant has it
        (3, "3"),
        ("1", "1"),  # ocean's, but the draft offers forest only
        ("forest", "version"),
        ("", "version"),
        (" 2", "version"),
        ("2.0", "version"),
        (2.0, "version"),
        (True, "version"),
        (["2"], "version"),
        ({"version": "2"}, "version"),
        ("9" * 5000, "version"),
    ],
)
def test_bad_color_variant_is_a_422_naming_version(
    api: ApiClient, repo: SqlRepository, colours: Template, version: Any, named: str
) -> None:
    draft = create_draft(
        api, create_user(api), colours, intent="customize", availableVariantVersions=["2"]
    )
    before = snapshot(repo)
    response = api.put(f"/api-ext/draft/{draft['draftHash']}", json={"version": version})
    assert response.status_code == 422, response.get_data(as_text=True)
    body = response.get_json()
    assert body["success"] is False and isinstance(body["message"], str)
    assert list(body["errors"]) == ["version"]
    assert named in " ".join(body["errors"]["version"])
    assert snapshot(repo) == before
    assert_variant(get_draft(api, draft["draftHash"]), 2, "forest", 2)


def test_unknown_product_colour_on_create_is_a_422(
    api: ApiClient, repo: SqlRepository, colours: Template
) -> None:
    user_id = create_user(api)
    before = snapshot(repo)
    body = {"user_identifier": user_id, "templateIdentifier": colours.identifier}
    response = api.post("/api-ext/draft", json={**body, "availableVariantVersions": ["2", "7"]})
    assert response.status_code == 422
    assert "7" in response.get_json()["errors"]["availableVariantVersions"][0]
    assert snapshot(repo) == before


def test_replicate_with_get(api: ApiClient, template: Template) -> None:
    """``getReplicateDraftId``: GET, no body; reads ``data.draftHash``."""
    draft = create_draft(api, create_user(api), template, intent="customize")
    response = api.get(f"/api-ext/draft/{draft['draftHash']}/replicate")
    assert response.status_code == 200, response.get_data(as_text=True)
    copy = response.get_json()["data"]
    assert isinstance(copy["draftHash"], str) and copy["draftHash"] != draft["draftHash"]


@pytest.mark.parametrize("usage", ["preview", "print"])
def test_page_info_as_the_gallery_reads_it(api: ApiClient, template: Template, usage: str) -> None:
    """``getDraftUsagePageInfo``: no query; ``Helper/Media.php`` reads ``data.pages``."""
    draft = create_draft(api, create_user(api), template, intent="customize")
    response = api.get(f"/api-ext/draft/{draft['draftHash']}/{usage}/page-info")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["data"]["pages"] == 2


def test_upload_by_url_downloads_the_pdf_and_calls_the_shop_back(
    api: ApiClient, template: Template, repo: SqlRepository, tenant: Client
) -> None:
    """``uploadPdf``: JSON ``{fileURL, callbackURL}``, 204 expected. ``fileURL`` is the
    shop's temporary copy under ``pub/media/tmp/upload/<draft>/``; ``callbackURL`` is
    ``getUrl('printformer/process/draft', ['draft_id' => ...])`` with ``?filepath=`` the
    copy's media path appended. ``Controller/Process/Draft.php`` reads ``draft_id`` and
    ``filepath`` from that URL (its CSRF skip, ``Plugin/CsrfValidatorSkip.php``, is for a
    POST), deletes the copy and orders the print file through ``setAsyncOrdered``."""
    draft = create_draft(api, create_user(api), template, intent="upload")
    draft_hash = draft["draftHash"]
    media_path = f"tmp/upload/{draft_hash}/print.pdf"
    with running_shop() as shop:
        file_url = shop.serve(f"/pub/media/{media_path}", Served(print_pdf(2)))
        callback = f"{shop.base}/printformer/process/draft/draft_id/{draft_hash}/"
        body = {"fileURL": file_url, "callbackURL": f"{callback}?filepath={media_path}"}
        response = api.post(f"/api-ext/draft/{draft_hash}/upload", json=body)
        assert response.status_code == 204 and response.get_data() == b""
        posts = wait_until(lambda: shop.requests("POST"))
    (called,) = posts
    assert called.path == f"/printformer/process/draft/draft_id/{draft_hash}/?filepath={media_path}"
    assert called.json()["success"] is True
    stored = repo.get_draft(tenant.identifier, draft_hash)
    assert stored is not None and stored.upload_key is not None
    # What the callback does next: the print file of the draft, through pdf-processing.
    processing = api.post("/api-ext/pdf-processing", json={"draftIds": [draft_hash]})
    assert processing.status_code == 201


def test_pdf_processing(api: ApiClient, template: Template) -> None:
    """``setAsyncOrdered``: draftIds and the shop's REST callback; reads ``processingId``."""
    draft = create_draft(api, create_user(api), template, intent="customize")
    body = {
        "draftIds": [draft["draftHash"]],
        # The shop's own URL; the test's shop is on 127.0.0.1 (no DNS in tests).
        "stateChangedNotifyUrl": "http://127.0.0.1:9/rest/V1/printformer/callbackOrderedStatus",
    }
    response = api.post("/api-ext/pdf-processing", json=body)
    assert response.status_code == 201, response.get_data(as_text=True)
    processing_id = response.get_json()["processingId"]
    assert isinstance(processing_id, str) and processing_id


# -- templates and client -----------------------------------------------------------------


def test_template_sync_reads_the_whole_catalogue(
    api: ApiClient, repo: SqlRepository, tenant: Client
) -> None:
    """``getProductsFromPrintformerApi``: one GET, no page; ``success`` must not be false;
    ``_syncProducts`` reads identifier, name, intents and ``strtotime(updatedAt)``."""
    made = {renderable_template(repo, tenant, f"Card {n}").identifier for n in range(30)}
    response = api.get("/api-ext/template")
    assert response.status_code == 200
    body = response.get_json()
    assert body.get("success", True) is not False
    assert {item["identifier"] for item in body["data"]} == made
    for item in body["data"]:
        assert isinstance(item["name"], str) and item["intents"]
        assert all(isinstance(intent, str) for intent in item["intents"])
        datetime.fromisoformat(item["updatedAt"].replace("Z", "+00:00"))


def test_client_name(api: ApiClient, tenant: Client) -> None:
    """``Sync.php`` / ``Observer/Config/Save.php``: ``data.name`` of /api-ext/client."""
    response = api.get("/api-ext/client")
    assert response.status_code == 200 and response.get_json()["data"]["name"] == tenant.name


# -- files -------------------------------------------------------------------------------


def follow(client: FlaskClient, response: Any, headers: dict[str, str]) -> tuple[int, str, bytes]:
    """Guzzle follows the redirect with the same headers: status, Content-Type, bytes."""
    assert response.status_code == 302, response.get_data(as_text=True)
    location = urlsplit(response.headers["Location"])
    with client.get(location.path, query_string=location.query, headers=headers) as served:
        return served.status_code, served.headers["Content-Type"], served.get_data()


@pytest.mark.parametrize("page", [1, 2])
def test_thumbnail_as_the_gallery_fetches_it(
    client: FlaskClient, api: ApiClient, tenant: Client, template: Template, page: int
) -> None:
    """``getThumbnail``: ``Accept: application/json`` (no key), jwt with client, user, iat,
    exp; width, height and page in the query; reads Content-Type and the bytes, which
    ``imagecreatefromstring`` must decode."""
    user_id = create_user(api)
    draft = create_draft(api, user_id, template, intent="customize", apiDefaultValues=EDITED)
    query = {
        "jwt": file_token(tenant, user=user_id),
        "width": 150,
        "height": 150,
        "page": page,
    }
    headers = {"Accept": "application/json"}
    path = f"/api-ext/files/draft/{draft['draftHash']}/image"
    first = client.get(f"{path}?{urlencode(query)}", headers=headers)
    status, content_type, data = follow(client, first, headers)
    assert status == 200 and content_type in ("image/png", "image/jpeg")
    assert data.startswith((b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff"))


@pytest.mark.parametrize("kind", ["print", "low-res"])
def test_pdf_links_of_the_shop_and_the_admin(
    client: FlaskClient, api: ApiClient, tenant: Client, template: Template, kind: str
) -> None:
    """``getPdfLink``, ``getAdminPDF``, ``getAdminPreviewPDF``: a link a browser opens."""
    draft = create_draft(
        api, create_user(api), template, intent="customize", apiDefaultValues=EDITED
    )
    path = f"/api-ext/files/draft/{draft['draftHash']}/{kind}"
    first = client.get(f"{path}?{urlencode({'jwt': file_token(tenant)})}")
    status, content_type, data = follow(client, first, {})
    assert status == 200 and content_type == "application/pdf" and data.startswith(b"%PDF-")


# -- the editor and the review, through /auth ------------------------------------------------


def test_editor_login_with_callbacks(
    app: Flask, api: ApiClient, tenant: Client, template: Template
) -> None:
    """``getEditorWebtokenUrl`` with ``V2::getEditor``: no step, ``callback`` and
    ``callback_cancel`` base64-encoded then ``http_build_query``-encoded."""
    user_id = create_user(api)
    draft = create_draft(api, user_id, template, intent="customize")
    save = f"{SHOP}/printformer/editor/save/product_id/5/draft_process/7/store_id/1/"
    cancel = f"{SHOP}/checkout/cart/configure/id/3/product_id/5/"
    query = urlencode({"callback": php_base64(save), "callback_cancel": php_base64(cancel)})
    redirect = f"{BASE}/editor/{draft['draftHash']}?{query}"
    browser = app.test_client()
    response = complete_login(browser, browser.get(login_url(tenant, user_id, redirect)))
    opened = browser.get(urlsplit(response.headers["Location"]).path)
    assert opened.status_code == 200, opened.get_data(as_text=True)
    assert cancel in links(opened.get_data(as_text=True)).values()


def test_review_login_with_the_trailing_slash(
    app: Flask, api: ApiClient, tenant: Client, template: Template, repo: SqlRepository
) -> None:
    """``getReviewEditAuth``: ``V2::API_REVIEW_EDIT`` is ``/review/{reviewId}/`` (with the
    slash), with ``redirect-url`` and ``submit-callback-url`` base64-encoded."""
    owner, reviewer = create_user(api), create_user(api)
    draft = create_draft(api, owner, template, intent="customize")
    started = api.post("/api-ext/review", json={"draftId": draft["draftHash"], "user": [reviewer]})
    assert started.status_code == 201, started.get_data(as_text=True)
    review_id = started.get_json()["data"]["reviewId"]  # (the module does not start reviews)
    query = urlencode(
        {
            "redirect-url": php_base64(f"{SHOP}/customer/account/"),
            "submit-callback-url": php_base64(f"{SHOP}/review/submitted"),
        }
    )
    redirect = f"{BASE}/review/{review_id}/?{query}"
    browser = app.test_client()
    response = browser.get(login_url(tenant, reviewer, redirect))
    assert response.status_code == 302, response.get_data(as_text=True)
    location = urlsplit(response.headers["Location"])
    page = browser.get(location.path, query_string=location.query, follow_redirects=True)
    assert page.status_code == 200, page.get_data(as_text=True)[:500]
    assert page.mimetype == "text/html"


@pytest.mark.parametrize(
    "path",
    [
        "/review/%2F%2Fevil.example/",
        "/review//evil.example/",
        "/review/%5Cevil.example/",
        "/review/%5C%5Cevil.example/",
        "/review/evil.example%2F/?next=//evil.example",
        "/review/x//",
    ],
)
def test_the_trailing_slash_redirect_stays_on_the_review_pages(app: Flask, path: str) -> None:
    """Whatever stands where the review id goes, the redirect is a path of pps's own
    review pages: never a scheme-relative ``//host`` or a backslash a browser reads as one."""
    answered = app.test_client().get(path)
    assert answered.status_code == 308
    location = answered.headers["Location"]
    assert location.startswith("/review/") and "\\" not in location, location
    assert not location.startswith("//") and urlsplit(location).netloc == "", location
