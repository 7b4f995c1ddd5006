"""Calls of the public clients that pps does not offer: 403 naming the feature (issue 13).

Each call is sent as the client sends it: the PHP SDK (``risscsolutions/printformer-php-sdk``)
and the Magento 2 module (``risscsolutions/printformer-magento-2``); the source is named per
call. The SDK's ``src/Client/BadRequestHandler.php`` maps 403 to
``FeatureNotEnabledException`` and reads ``message``.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from joserfc import jwt
from joserfc.jwk import OctKey

from pps.api.not_offered import NOT_OFFERED
from pps.platform.models import Client
from pps.web.openapi import build_spec

DRAFT = "2138r43r90fojnduewfbnwmcfgre"  # the SDK tests' hash; pps answers before looking
TEMPLATE = "xyzabc12"

#: (feature word in the message, method, path, keyword arguments of the request, source).
#: Bodies are the SDK's: ``Client::post`` sends ``['json' => $data]``, so PHP's ``[]`` is
#: ``[]``; the bearer key and ``Accept: application/json`` come from ConcreteFactory.php.
CALLS: list[tuple[str, str, str, dict[str, Any], str]] = [
    (
        "IDML",
        "POST",
        f"/api-ext/draft/{DRAFT}/request-idml-package",
        {"json": {"callbackURL": "https://my-callback.url"}},
        "SDK tests/Client/Draft/ClientTest.php testRequestIDMLPackage",
    ),
    (
        "IDML",
        "GET",
        f"/api-ext/files/draft/{DRAFT}/idml-package",
        {"jwt": True},
        "Magento Helper/Api.php getIdmlPackage; SDK src/Url/DraftFiles.php idmlPackage",
    ),
    ("3D", "GET", f"/api-ext/files/draft/{DRAFT}/x3d", {"jwt": True}, "SDK DraftFiles x3d"),
    (
        "3D",
        "GET",
        f"/api-ext/files/template/{TEMPLATE}/3d-texture/1",
        {"jwt": True},
        "SDK src/Url/TemplateFiles.php threeDeeTexture",
    ),
    (
        "variant",
        "GET",
        f"/api-ext/files/template/{TEMPLATE}/variant-export?page=1&variant_version_id=3",
        {"jwt": True},
        "SDK src/Url/TemplateFiles.php variantExport, page() and variantVersionID()",
    ),
    (
        "variant",
        "GET",
        f"/api-ext/files/template/{TEMPLATE}/variant-thumb?variant_version_id=3",
        {"jwt": True},
        "SDK src/Url/TemplateFiles.php variantThumb",
    ),
    (
        "photo",
        "GET",
        f"/api-ext/files/template/{TEMPLATE}/photo-thumb",
        {"jwt": True},
        "SDK src/Url/TemplateFiles.php photoThumb",
    ),
    (
        "derivative",
        "GET",
        f"/api-ext/draft/{DRAFT}/derivative?page=1&per_page=25",
        {},
        "SDK src/Client/Derivative/Client.php list, owner a Draft",
    ),
    (
        "derivative",
        "GET",
        f"/api-ext/template/{TEMPLATE}/derivative?page=1&per_page=25",
        {},
        "SDK src/Client/Derivative/Client.php list, owner a MasterTemplate",
    ),
    ("derivative", "GET", "/api-ext/derivative/d3r1v4t1", {}, "SDK Derivative/Client.php show"),
    (
        "derivative",
        "GET",
        "/api-ext/files/derivative/d3r1v4t1/file",
        {"jwt": True},
        "Magento Helper/Api.php getDerivateLink; SDK src/Url/DerivativeFiles.php",
    ),
    (
        "workflow",
        "POST",
        "/api-ext/workflow",
        {
            "json": {
                "definitionIdentifier": "def12345",
                "subject": {"identifier": DRAFT, "type": "draft"},
                "data": [],
            }
        },
        "SDK src/Client/Workflow/Client.php create: compact('definitionIdentifier', ...)",
    ),
    ("workflow", "GET", "/api-ext/workflow/wf123456", {}, "SDK Workflow/Client.php show"),
    (
        "workflow",
        "PUT",
        "/api-ext/workflow/wf123456",
        {"json": {"data": {"step": 2}}},
        "SDK src/Client/Workflow/Client.php update: compact('data')",
    ),
    (
        "declaration",
        "GET",
        "/api-ext/declaration?page=1&per_page=25",
        {},
        "SDK src/Client/Declaration/Client.php list (ListsResources)",
    ),
    ("declaration", "GET", "/api-ext/declaration/zsn83nbr7", {}, "SDK Declaration show"),
    (
        "declaration",
        "GET",
        "/api-ext/ingredient?page=1&per_page=25",
        {},
        "SDK src/Client/Declaration/Ingredient/Client.php list",
    ),
    ("declaration", "GET", "/api-ext/ingredient/ingr1234", {}, "SDK Ingredient show"),
    (
        "product feed",
        "POST",
        "/api-ext/product-feed",
        {"json": {"name": "Feed", "connection": {"type": "polling"}}},
        "SDK src/Client/Feed/Client.php create (FeedBuilder)",
    ),
    (
        "product feed",
        "GET",
        "/api-ext/product-feed/98bv5rjf",
        {},
        "Magento Observer/Admin/Product/GetFeedName.php; SDK Feed/Client.php show",
    ),
    (
        "product feed",
        "PUT",
        "/api-ext/product-feed/98bv5rjf",
        {"json": {"name": "Feed 2"}},
        "SDK src/Client/Feed/Client.php update",
    ),
    ("product feed", "DELETE", "/api-ext/product-feed/98bv5rjf", {}, "SDK Feed destroy"),
    ("page planner", "POST", "/api-ext/draft-setup", {}, "Magento V2 API_DRAFT_SETUP"),
    (
        "page planner",
        "GET",
        "/api-ext/page-planner/approve",
        {"jwt": True},
        "Magento Helper/Api.php closePagePlanner: the approve URL with ?jwt=",
    ),
    (
        "page planner",
        "POST",
        "/api-ext/page-planner/delete",
        {"jwt": True},
        "Magento Helper/Api/Url/V2.php getPagePlannerDeleteUrl",
    ),
    (
        "PDF utility",
        "POST",
        "/api-ext/util/pdf/re-assemble",
        {"json": {"drafts": [DRAFT], "callbackURL": "https://shop.example/cb"}},
        "SDK src/Client/Util/Client.php reAssemble",
    ),
    (
        "PDF utility",
        "POST",
        "/api-ext/util/pdf/optimize",
        {"json": {"file": "f1le1234", "callbackURL": "https://shop.example/cb", "dpi": None}},
        "SDK src/Client/Util/Client.php optimize",
    ),
    (
        "Delivering",
        "POST",
        f"/api-ext/draft/{DRAFT}/deliver",
        {"data": b"[]", "content_type": "application/json"},
        "SDK src/Client/Draft/Client.php deliver: post($path, [])",
    ),
    (
        "product list",
        "GET",
        f"/api-ext/draft/{DRAFT}/products",
        {},
        "SDK src/Client/Draft/Client.php products (Accept: application/json)",
    ),
]


def magento_file_token(tenant: Client) -> str:
    """As Magento's ``Helper/Api.php`` signs file links (getIdmlPackage, getDerivateLink):
    lcobucci/jwt with ``iat``, ``client`` and ``exp`` (floats), no ``urlPath``, no ``jti``."""
    now = time.time()
    claims = {"iat": now, "client": tenant.identifier, "exp": now + 3600}
    return jwt.encode({"alg": "HS256", "typ": "JWT"}, claims, OctKey.import_key(tenant.api_key))


def send(client: FlaskClient, tenant: Client, method: str, path: str, kwargs: dict[str, Any]):  # type: ignore[no-untyped-def]
    options = dict(kwargs)
    if options.pop("jwt", False):
        separator = "&" if "?" in path else "?"
        return client.open(
            f"{path}{separator}jwt={magento_file_token(tenant)}", method=method, **options
        )
    headers = {"Authorization": f"Bearer {tenant.api_key}", "Accept": "application/json"}
    if "json" in options:
        headers["Content-Type"] = "application/json"
    return client.open(path, method=method, headers=headers, **options)


@pytest.mark.parametrize(
    ("word", "method", "path", "kwargs", "source"), CALLS, ids=[c[2] for c in CALLS]
)
def test_each_call_is_403_feature_not_enabled(
    client: FlaskClient,
    tenant: Client,
    word: str,
    method: str,
    path: str,
    kwargs: dict[str, Any],
    source: str,
) -> None:
    response = send(client, tenant, method, path, kwargs)
    assert response.status_code == 403, (source, response.get_data()[:300])
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"message", "success"}
    assert body["success"] is False
    assert isinstance(body["message"], str)
    assert body["message"].endswith(" is not offered by this pps server")
    assert word.lower() in body["message"].lower(), (word, body)


@pytest.mark.parametrize("page", ["-1", "front", "1.5"])
def test_a_call_not_offered_is_403_whatever_its_arguments(
    client: FlaskClient, tenant: Client, page: str
) -> None:
    """The 3D texture of page ``-1`` was a 404 ("nothing at this address"), which its
    reference (403 only) does not list and the SDK reads as a missing template."""
    path = f"/api-ext/files/template/{TEMPLATE}/3d-texture/{page}"
    response = send(client, tenant, "GET", path, {"jwt": True})
    assert response.status_code == 403, response.get_data()[:300]
    assert response.get_json()["message"].startswith("3D rendering")


def test_the_calls_cover_every_declared_one(app: Flask) -> None:
    """Every entry of the table is sent above, and nothing else answers with its rule."""
    adapter = app.url_map.bind("localhost")
    sent = set()
    for _word, method, path, _kwargs, _source in CALLS:
        endpoint, _ = adapter.match(path.split("?")[0], method=method)
        assert "not_offered" in endpoint, (path, endpoint)
        sent.add(endpoint.rsplit(".", 1)[1])
    declared = {f"not_offered_{index}" for index in range(len(NOT_OFFERED))}
    assert sent == declared


def test_bearer_calls_check_the_key_first(client: FlaskClient) -> None:
    """A stranger gets the 401 of every API call, not a list of features."""
    response = client.post(
        "/api-ext/workflow", json={}, headers={"Authorization": "Bearer nope-" + "x" * 40}
    )
    assert response.status_code == 401
    assert response.get_json()["success"] is False


def test_each_is_in_the_reference_as_403(app: Flask) -> None:
    with app.app_context():
        spec = build_spec(app)
    assert any(tag["name"] == "Not offered" for tag in spec["tags"])
    for call in NOT_OFFERED:
        path = "/api-ext" + call.path.replace("<draft_hash:draft_hash>", "{draft_hash}")
        path = path.replace("<identifier>", "{identifier}").replace("<page>", "{page}")
        for method in call.methods:
            operation = spec["paths"][path][method.lower()]
            assert operation["tags"] == ["Not offered"]
            assert call.message in operation["responses"]["403"]["description"]
            assert "ErrorOut" in str(operation["responses"]["403"]["content"])
