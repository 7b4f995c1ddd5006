"""Everything a shop can get wrong, and everything another tenant must not reach.

Each refusal is checked three ways: the status, the JSON body clients read (``message``, and
``errors`` per field on 422), and the database, which must be exactly as it was.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import re
from typing import Any

import pytest
from api_support import (
    assert_error,
    counts,
    disable,
    make_draft,
    make_template,
    make_user,
    snapshot,
)
from conftest import ApiClient
from flask import Flask
from vdata_support import card_draft, card_template

from pps.platform.models import Client
from pps.platform.repository.integrations import SqlIntegrationStore
from pps.platform.repository.sql import SqlRepository

#: Every endpoint of the api blueprint, as (method, path with {placeholders}).
ENDPOINTS = [
    ("GET", "/api-ext/client"),
    ("POST", "/api-ext/user"),
    ("GET", "/api-ext/user/{user}"),
    ("PUT", "/api-ext/user/{user}"),
    ("DELETE", "/api-ext/user/{user}"),
    ("POST", "/api-ext/user/{user}/merge"),
    ("POST", "/api-ext/draft"),
    ("GET", "/api-ext/draft"),
    ("POST", "/api-ext/draft/claim"),
    ("GET", "/api-ext/draft/{draft}"),
    ("PUT", "/api-ext/draft/{draft}"),
    ("DELETE", "/api-ext/draft/{draft}"),
    ("POST", "/api-ext/draft/{draft}/replicate"),
    ("GET", "/api-ext/draft/{draft}/replicate"),
    ("POST", "/api-ext/draft/{draft}/upload"),
    ("GET", "/api-ext/template"),
    ("GET", "/api-ext/template/{template}"),
    ("POST", "/api-ext/pdf-processing"),
    ("GET", "/api-ext/pdf-processing/{processing}"),
    ("POST", "/api-ext/file"),
    ("DELETE", "/api-ext/file/{file}"),
    ("GET", "/api-ext/draft/{draft}/variable-data"),
    ("POST", "/api-ext/draft/{draft}/variable-data"),
    ("PUT", "/api-ext/draft/{draft}/variable-data"),
    ("GET", "/api-ext/draft/{draft}/{usage}/page-info"),
    ("POST", "/api-ext/webhook"),
    ("GET", "/api-ext/webhook"),
    ("GET", "/api-ext/webhook/{webhook}"),
    ("DELETE", "/api-ext/webhook/{webhook}"),
    ("GET", "/api-ext/variant"),
    ("GET", "/api-ext/theme"),
    ("POST", "/api-ext/user-group"),
    ("GET", "/api-ext/user-group/{user}"),  # any identifier but a group's: 404
    ("POST", "/api-ext/review"),
    ("POST", "/api-ext/review/{review}/add-user"),
    ("POST", "/api-ext/review/{review}/delete-user"),
    ("POST", "/api-ext/review/{review}/close-review"),
    ("POST", "/api-ext/review/{review}/create-review-pdf"),
]
WITH_ID = [e for e in ENDPOINTS if "{" in e[1]]
#: A processing of another tenant would start a background job; the resources here do not.
OF_OTHER_TENANT = [e for e in WITH_ID if "{processing}" not in e[1]]
#: Endpoints that read a JSON or form body. Replicate takes none (the Magento module even sends
#: GET), nor does close-review (the PHP SDK sends none); upload takes a multipart PDF only (its
#: limits and refusals: test_preflight.py).
WITH_BODY = [
    e
    for e in ENDPOINTS
    if e[0] in ("POST", "PUT") and not e[1].endswith(("/replicate", "/close-review", "/upload"))
]
POST_OR_PUT = [e for e in ENDPOINTS if e[0] in ("POST", "PUT")]


@pytest.fixture
def world(app: Flask, repo: SqlRepository, tenant: Client, other_tenant: Client) -> dict[str, str]:
    """Identifiers of the caller's records and of another tenant's."""
    user = make_user(repo, tenant, first_name="Mine")
    source = make_user(repo, tenant, first_name="Also mine")
    template = make_template(repo, tenant, "TPLmine1")
    draft = make_draft(repo, tenant, user, template)
    other_user = make_user(repo, other_tenant, first_name="Theirs")
    other_template = make_template(repo, other_tenant, "TPLtheir")
    other_draft = make_draft(repo, other_tenant, other_user, other_template)
    # Subscribed to an event these tests never cause, so nothing is delivered.
    webhook = (
        SqlIntegrationStore(repo.engine)
        .create_webhook(tenant.identifier, "review.closed", "http://127.0.0.1:9/hook")
        .webhook
    )
    other_webhook = (
        SqlIntegrationStore(repo.engine)
        .create_webhook(other_tenant.identifier, "review.closed", "http://127.0.0.1:9/hook")
        .webhook
    )
    services = app.extensions["pps"]
    file, other_file = (
        services.uploads.create(
            owner.identifier,
            identifier=services.uploads.new_identifier(),
            kind="csv",
            name="rows.csv",
            size=4,
            storage_key=f"uploads/{owner.identifier}/rows.csv",
        ).identifier
        for owner in (tenant, other_tenant)
    )
    reviews = app.extensions["pps.reviews"]
    review, other_review = (
        reviews.create(
            owner.identifier,
            draft_id=on.draft_hash,
            users=[by.identifier],
            close_callback_url=None,
            remote_acl=False,
        )
        for owner, on, by in ((tenant, draft, user), (other_tenant, other_draft, other_user))
    )
    return {
        "webhook": webhook.identifier,
        "other_webhook": other_webhook.identifier,
        "user": user.identifier,
        "source": source.identifier,
        "template": template.identifier,
        "draft": draft.draft_hash,
        "other_user": other_user.identifier,
        "other_template": other_template.identifier,
        "other_draft": other_draft.draft_hash,
        "processing": "0123456789abcdef0123456789abcdef",
        "usage": "print",
        "review": review.review_id,
        "other_review": other_review.review_id,
        "file": file,
        "other_file": other_file,
    }


def valid_body(method: str, path: str, world: dict[str, str]) -> dict[str, Any] | None:
    """A body the endpoint would accept, so a refusal is due to what the test varies."""
    bodies: dict[tuple[str, str], dict[str, Any]] = {
        ("POST", "/api-ext/user"): {"firstName": "Eve"},
        ("PUT", "/api-ext/user/{user}"): {"firstName": "Eve"},
        ("POST", "/api-ext/user/{user}/merge"): {"source_user_identifier": world["source"]},
        ("POST", "/api-ext/draft"): {
            "templateIdentifier": world["template"],
            "userIdentifier": world["user"],
        },
        ("PUT", "/api-ext/draft/{draft}"): {"apiDefaultValues": {"Name": "Eve"}},
        ("POST", "/api-ext/draft/claim"): {
            "user_identifier": world["user"],
            "drafts": [world["draft"]],
        },
        ("POST", "/api-ext/pdf-processing"): {"draftIds": [world["draft"]]},
        ("PUT", "/api-ext/draft/{draft}/variable-data"): {"data": []},
        ("POST", "/api-ext/webhook"): {"event": "review.closed", "url": "http://127.0.0.1:9/"},
        ("POST", "/api-ext/review"): {
            "draftId": world["draft"],
            "user": [world["user"]],
            "closeCallbackURL": "",
        },
        ("POST", "/api-ext/review/{review}/add-user"): {"userIdentifier": world["user"]},
        ("POST", "/api-ext/review/{review}/delete-user"): {"userIdentifier": world["user"]},
        ("POST", "/api-ext/review/{review}/create-review-pdf"): {"notifyCallbackURL": ""},
    }
    return bodies.get((method, path))


def url(path: str, world: dict[str, str], **ids: str) -> str:
    return path.format(**{**world, **ids})


def endpoint_id(endpoint: tuple[str, str]) -> str:
    return f"{endpoint[0]} {endpoint[1]}"


def test_the_endpoint_list_is_complete(app: Flask) -> None:
    """A new /api-ext endpoint must be added to ENDPOINTS, so every test here covers it."""
    routed = set()
    for rule in app.url_map.iter_rules():
        # The calls not offered answer 403 to everything; tests/test_not_offered.py has them.
        if rule.endpoint.startswith("api.") and not rule.endpoint.startswith("api.not_offered."):
            path = re.sub(r"<[a-z_]+:([a-z_]+)>", r"<\1>", rule.rule)  # converters
            path = path.replace("<draft_hash>", "{draft}")
            path = path.replace("<processing_id>", "{processing}")
            path = path.replace("<usage>", "{usage}")
            path = path.replace("<review_id>", "{review}")
            kind = next((k for k in ("template", "webhook", "file") if k in path), "user")
            path = path.replace("<identifier>", f"{{{kind}}}")
            for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}:
                routed.add((method, path))
    assert routed == set(ENDPOINTS)


# -- authentication -----------------------------------------------------------------------


def auth_variants(repo: SqlRepository, tenant: Client) -> dict[str, dict[str, str]]:
    return {
        "no header": {},
        "empty bearer": {"Authorization": "Bearer "},
        "unknown key": {"Authorization": "Bearer " + "k" * 48},
        "key with other case": {"Authorization": "Bearer " + tenant.api_key.swapcase()},
        "key prefix": {"Authorization": "Bearer " + tenant.api_key[:-1]},
        "basic scheme": {"Authorization": "Basic " + tenant.api_key},
        "bare key": {"Authorization": tenant.api_key},
        "key as query": {},
    }


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=endpoint_id)
def test_bad_credentials_are_401(
    client: Any,
    repo: SqlRepository,
    tenant: Client,
    world: dict[str, str],
    endpoint: tuple[str, str],
) -> None:
    method, path = endpoint
    before = snapshot(repo)
    for name, headers in auth_variants(repo, tenant).items():
        query = {"api_key": tenant.api_key} if name == "key as query" else {}
        response = client.open(
            url(path, world),
            method=method,
            headers={"Accept": "application/json", **headers},
            json=valid_body(method, path, world),
            query_string=query,
        )
        assert_error(response, 401)
        assert response.headers["WWW-Authenticate"].startswith("Bearer"), name
    assert snapshot(repo) == before


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=endpoint_id)
def test_disabled_and_rotated_keys_are_401(
    client: Any,
    repo: SqlRepository,
    tenant: Client,
    other_tenant: Client,
    world: dict[str, str],
    endpoint: tuple[str, str],
) -> None:
    method, path = endpoint
    old_key = other_tenant.api_key
    assert repo.rotate_api_key(other_tenant.identifier) is not None
    disable(repo, tenant)
    before = snapshot(repo)
    for key in (tenant.api_key, old_key):
        response = ApiClient(client, key).request(
            method, url(path, world), json=valid_body(method, path, world)
        )
        assert_error(response, 401)
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert snapshot(repo) == before


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=endpoint_id)
def test_accept_without_json_is_406(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], endpoint: tuple[str, str]
) -> None:
    method, path = endpoint
    before = snapshot(repo)
    for accept in ("text/html", "application/xml", "image/png, text/*"):
        response = api.request(
            method,
            url(path, world),
            headers={"Accept": accept},
            json=valid_body(method, path, world),
        )
        assert_error(response, 406)
    assert snapshot(repo) == before


@pytest.mark.parametrize(
    "accept", ["*/*", "application/*", "text/html, application/json;q=0.1", "", " "]
)
def test_accept_that_allows_json_is_served(api: ApiClient, accept: str) -> None:
    response = api.post("/api-ext/user", headers={"Accept": accept})
    assert response.status_code == 201
    response = api.get("/api-ext/client", headers={"Accept": accept})
    assert response.status_code == 200


def test_no_accept_header_is_served(client: Any, tenant: Client) -> None:
    response = client.get("/api-ext/client", headers={"Authorization": f"Bearer {tenant.api_key}"})
    assert response.status_code == 200
    assert response.get_json()["data"]["identifier"] == tenant.identifier


# -- malformed and mistyped bodies --------------------------------------------------------


MALFORMED = [b"{", b'{"firstName": }', b"{'a': 1}", b'{"a": 1,}', b"nope", b'{"a": NaN}', b"\xff"]


@pytest.mark.parametrize("endpoint", WITH_BODY, ids=endpoint_id)
def test_malformed_json_is_400(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], endpoint: tuple[str, str]
) -> None:
    method, path = endpoint
    before = snapshot(repo)
    for raw in MALFORMED:
        response = api.request(method, url(path, world), data=raw, content_type="application/json")
        assert_error(response, 400)
    assert snapshot(repo) == before


@pytest.mark.parametrize("endpoint", WITH_BODY, ids=endpoint_id)
def test_json_that_is_not_an_object_is_422(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], endpoint: tuple[str, str]
) -> None:
    method, path = endpoint
    before = snapshot(repo)
    for raw in (b"5", b'"text"', b"[1, 2]", b'[{"firstName": "x"}]', b"null", b"true"):
        response = api.request(method, url(path, world), data=raw, content_type="application/json")
        assert_error(response, 422, "_body")
    assert snapshot(repo) == before


WRONG_TYPES = [
    ("POST", "/api-ext/user", {"email": 5}, "email"),
    ("POST", "/api-ext/user", {"email": "not an address"}, "email"),
    ("POST", "/api-ext/user", {"email": "a" * 320 + "@example.com"}, "email"),
    ("POST", "/api-ext/user", {"customAttributes": "x"}, "customAttributes"),
    ("POST", "/api-ext/user", {"customAttributes": [1]}, "customAttributes"),
    ("POST", "/api-ext/user", {"firstName": ["Ada"]}, "firstName"),
    ("POST", "/api-ext/user", {"firstName": "x" * 201}, "firstName"),
    ("POST", "/api-ext/user", {"locale": "not a locale"}, "locale"),
    ("PUT", "/api-ext/user/{user}", {"email": 5}, "email"),
    ("PUT", "/api-ext/user/{user}", {"customAttributes": "x"}, "customAttributes"),
    ("POST", "/api-ext/user/{user}/merge", {"source_user_identifier": 5}, "source_user_identifier"),
    ("POST", "/api-ext/draft", {"apiDefaultValues": [1]}, "apiDefaultValues"),
    ("POST", "/api-ext/draft", {"customAttributes": "x"}, "customAttributes"),
    ("POST", "/api-ext/draft", {"intent": "sell"}, "intent"),
    ("POST", "/api-ext/draft", {"templateIdentifier": 5}, "templateIdentifier"),
    ("PUT", "/api-ext/draft/{draft}", {"apiDefaultValues": [1]}, "apiDefaultValues"),
    ("PUT", "/api-ext/draft/{draft}", {"customAttributes": "x"}, "customAttributes"),
    ("POST", "/api-ext/draft/claim", {"dryRun": "maybe"}, "dryRun"),
    ("POST", "/api-ext/draft/claim", {"drafts": "abc"}, "drafts"),
    ("POST", "/api-ext/draft/claim", {"drafts": [5]}, "drafts.0"),
]


@pytest.mark.parametrize(
    ("method", "path", "fields", "field"),
    WRONG_TYPES,
    ids=[f"{m} {p} {f}" for m, p, _, f in WRONG_TYPES],
)
def test_wrong_types_are_422(
    api: ApiClient,
    repo: SqlRepository,
    world: dict[str, str],
    method: str,
    path: str,
    fields: dict[str, Any],
    field: str,
) -> None:
    body = {**(valid_body(method, path, world) or {}), **fields}
    before = snapshot(repo)
    assert_error(api.request(method, url(path, world), json=body), 422, field)
    assert snapshot(repo) == before


def test_too_many_values_are_422(
    api: ApiClient, repo: SqlRepository, world: dict[str, str]
) -> None:
    before = snapshot(repo)
    body = {
        "templateIdentifier": world["template"],
        "userIdentifier": world["user"],
        "apiDefaultValues": {f"k{i}": "v" for i in range(1001)},
    }
    assert_error(api.post("/api-ext/draft", json=body), 422, "apiDefaultValues")
    assert snapshot(repo) == before


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("page=abc", "page"),
        ("page=0", "page"),
        ("page=-1", "page"),
        ("per_page=1001", "per_page"),
        ("per_page=0", "per_page"),
        ("per_page=x", "per_page"),
        ("perPage=1001", "perPage"),
        # int() reads these; a query string's number is ASCII digits.
        ("page=%D9%A2", "page"),
        ("page=1_000", "page"),
        ("per_page=%205", "per_page"),
    ],
)
@pytest.mark.parametrize("path", ["/api-ext/draft", "/api-ext/template"])
def test_bad_page_arguments_are_422(
    api: ApiClient, world: dict[str, str], path: str, query: str, field: str
) -> None:
    if path == "/api-ext/template" and not query.startswith("page"):
        query += "&page=1"
    error = assert_error(api.get(f"{path}?{query}"), 422, field)
    if query.startswith(("page=0", "page=-1")):  # a number out of range, said so
        assert "greater than or equal to 1" in error["errors"][field][0], error


def test_body_over_the_limit_is_413(
    api: ApiClient, repo: SqlRepository, world: dict[str, str]
) -> None:
    before = snapshot(repo)
    big_json = json.dumps({"firstName": "Ada", "customAttributes": {"blob": "x" * 5_000_000}})
    big_form = {"firstName": "Ada", "customAttributes[blob]": "x" * 5_000_000}
    for method, path in WITH_BODY:
        target = url(path, world)
        response = api.request(method, target, data=big_json, content_type="application/json")
        assert_error(response, 413)
        assert_error(api.request(method, target, data=big_form), 413)
    assert snapshot(repo) == before


def chunked(api: ApiClient, method: str, path: str, body: bytes, content_type: str) -> Any:
    """``body`` without a Content-Length, as a server hands a chunked upload to the app
    (gunicorn marks its end with ``wsgi.input_terminated``)."""
    return api.request(
        method,
        path,
        input_stream=io.BytesIO(body),
        headers={"Transfer-Encoding": "chunked", "Content-Type": content_type},
        environ_overrides={"wsgi.input_terminated": True},
    )


def test_chunked_body_over_the_limit_is_413_not_truncated(
    app: Flask, api: ApiClient, repo: SqlRepository, world: dict[str, str]
) -> None:
    """A form field past the limit must not vanish while the rest is processed."""
    limit = app.config["MAX_CONTENT_LENGTH"]
    before = snapshot(repo)
    padding = "x" * limit
    form = f"firstName=Ada&customAttributes[pad]={padding}&customAttributes[late]=1".encode()
    big_json = json.dumps({"firstName": "Ada", "customAttributes": {"pad": padding}}).encode()
    for method, path in WITH_BODY:
        target = url(path, world)
        for body, content_type in (
            (form, "application/x-www-form-urlencoded"),
            (big_json, "application/json"),
            (b"{}" + b" " * (limit - 1), "application/json"),  # one byte over
        ):
            assert_error(chunked(api, method, target, body, content_type), 413)
    assert snapshot(repo) == before


def test_chunked_body_at_the_limit_is_read_whole(app: Flask, api: ApiClient) -> None:
    limit = app.config["MAX_CONTENT_LENGTH"]
    body = json.dumps({"firstName": "Ada", "lastName": "Lovelace"}).encode()
    padded = body + b" " * (limit - len(body))
    response = chunked(api, "POST", "/api-ext/user", padded, "application/json")
    assert response.status_code == 201, response.get_data(as_text=True)
    assert response.get_json()["data"]["profile"]["lastName"] == "Lovelace"


@pytest.mark.parametrize("coding", ["gzip", "deflate, gzip", "br"])
def test_encoded_body_is_415_and_changes_nothing(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], coding: str
) -> None:
    """pps decodes no Content-Encoding: a body claiming one is refused, not read as plain."""
    before = snapshot(repo)
    plain = json.dumps({"firstName": "Ada"}).encode()
    for method, path in WITH_BODY:
        target = url(path, world)
        for body in (plain, gzip.compress(plain)):
            response = api.request(
                method,
                target,
                data=body,
                headers={"Content-Encoding": coding, "Content-Type": "application/json"},
            )
            error = assert_error(response, 415)
            assert "Content-Encoding" in error["message"], error
            assert response.headers["Accept-Encoding"] == "identity"
    assert snapshot(repo) == before


def test_identity_coding_and_empty_encoded_body_are_read(api: ApiClient) -> None:
    body = json.dumps({"firstName": "Ada"})
    response = api.post(
        "/api-ext/user",
        data=body,
        headers={"Content-Encoding": "identity", "Content-Type": "application/json"},
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    # No body: nothing is encoded, so nothing to refuse.
    response = api.post("/api-ext/user", headers={"Content-Encoding": "gzip"})
    assert response.status_code == 201, response.get_data(as_text=True)


@pytest.mark.parametrize("endpoint", WITH_BODY, ids=endpoint_id)
def test_unsupported_content_type_is_415(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], endpoint: tuple[str, str]
) -> None:
    method, path = endpoint
    body = json.dumps(valid_body(method, path, world) or {"a": 1})
    before = snapshot(repo)
    for content_type in ("text/plain", "application/xml", "image/png"):
        response = api.request(method, url(path, world), data=body, content_type=content_type)
        assert_error(response, 415)
    assert snapshot(repo) == before


# -- unknown and foreign identifiers ------------------------------------------------------

UNKNOWN_IDS = ["unknown1", "x" * 300, "%00", "%FF%FE", "a%20b", "%2e%2e"]


@pytest.mark.parametrize("endpoint", WITH_ID, ids=endpoint_id)
def test_unknown_identifiers_are_404(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], endpoint: tuple[str, str]
) -> None:
    """Identifiers are not length-checked: whatever the shape, unknown is 404."""
    method, path = endpoint
    before = snapshot(repo)
    for unknown in UNKNOWN_IDS:
        target = url(
            path,
            world,
            user=unknown,
            draft=unknown,
            template=unknown,
            processing=unknown,
            webhook=unknown,
            review=unknown,
            file=unknown,
        )
        response = api.request(method, target, json=valid_body(method, path, world))
        assert_error(response, 404)
    assert snapshot(repo) == before


@pytest.mark.parametrize("endpoint", OF_OTHER_TENANT, ids=endpoint_id)
def test_other_tenants_identifiers_are_404(
    api: ApiClient,
    repo: SqlRepository,
    world: dict[str, str],
    endpoint: tuple[str, str],
) -> None:
    method, path = endpoint
    before = snapshot(repo)
    target = url(
        path,
        world,
        user=world["other_user"],
        draft=world["other_draft"],
        template=world["other_template"],
        webhook=world["other_webhook"],
        review=world["other_review"],
        file=world["other_file"],
    )
    response = api.request(method, target, json=valid_body(method, path, world))
    assert_error(response, 404)
    assert "other" not in response.get_json()["message"].lower()
    assert snapshot(repo) == before


def test_merge_with_another_tenants_source_is_404(
    api: ApiClient, repo: SqlRepository, world: dict[str, str]
) -> None:
    before = snapshot(repo)
    response = api.post(
        f"/api-ext/user/{world['user']}/merge",
        json={"source_user_identifier": world["other_user"]},
    )
    assert_error(response, 404)
    assert snapshot(repo) == before


def test_claiming_another_tenants_draft_is_false(
    api: ApiClient, repo: SqlRepository, world: dict[str, str]
) -> None:
    before = snapshot(repo)
    for dry_run in (True, False):
        response = api.post(
            "/api-ext/draft/claim",
            json={
                "user_identifier": world["user"],
                "drafts": [world["other_draft"]],
                "dryRun": dry_run,
            },
        )
        assert response.status_code == 200
        assert response.get_json() == {world["other_draft"]: False}
    assert snapshot(repo) == before


def test_claim_for_another_tenants_user_is_422(
    api: ApiClient, repo: SqlRepository, world: dict[str, str]
) -> None:
    before = snapshot(repo)
    response = api.post(
        "/api-ext/draft/claim",
        json={"user_identifier": world["other_user"], "drafts": [world["draft"]]},
    )
    assert_error(response, 422, "user_identifier")  # named as sent (issue 13)
    assert snapshot(repo) == before


@pytest.mark.parametrize(
    ("user", "template", "fields"),
    [
        ("other_user", "template", ["userIdentifier"]),
        ("user", "other_template", ["templateIdentifier"]),
        ("other_user", "other_template", ["userIdentifier", "templateIdentifier"]),
    ],
)
def test_draft_for_another_tenants_user_or_template_is_422(
    api: ApiClient,
    repo: SqlRepository,
    world: dict[str, str],
    user: str,
    template: str,
    fields: list[str],
) -> None:
    before = snapshot(repo)
    response = api.post(
        "/api-ext/draft",
        json={"userIdentifier": world[user], "templateIdentifier": world[template]},
    )
    body = assert_error(response, 422, *fields)
    assert set(body["errors"]) == set(fields)
    assert snapshot(repo) == before


def test_lists_hold_only_the_callers_records(api: ApiClient, world: dict[str, str]) -> None:
    drafts = api.get("/api-ext/draft").get_json()["data"]
    assert [d["draftHash"] for d in drafts] == [world["draft"]]
    templates = api.get("/api-ext/template").get_json()["data"]
    assert [t["identifier"] for t in templates] == [world["template"]]
    filtered = api.get(f"/api-ext/draft?user_identifier={world['other_user']}").get_json()
    assert filtered["data"] == [] and filtered["meta"]["total"] == 0


# -- routing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/api-ext/nope", "/api-ext/", "/api-ext/user/a/b/c", "/api-ext/draft/a/b", "/api-ext/users"],
)
@pytest.mark.parametrize("authenticated", [True, False])
def test_unknown_routes_are_404_json(
    api: ApiClient, client: Any, repo: SqlRepository, path: str, authenticated: bool
) -> None:
    before = counts(repo)
    for method in ("GET", "POST"):
        if authenticated:
            response = api.request(method, path, json={"a": 1})
        else:
            response = client.open(path, method=method, json={"a": 1})
        assert_error(response, 404)
    assert counts(repo) == before


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/api-ext/user"),
        ("GET", "/api-ext/user"),
        ("PATCH", "/api-ext/user/{user}"),
        ("GET", "/api-ext/user/{user}/merge"),
        ("POST", "/api-ext/template"),
        ("DELETE", "/api-ext/template/{template}"),
        ("POST", "/api-ext/draft/{draft}"),
        ("PATCH", "/api-ext/draft/{draft}"),
        ("GET", "/api-ext/draft/claim/x"),
        ("PUT", "/api-ext/draft/{draft}/replicate"),
        ("DELETE", "/api-ext/client"),
    ],
)
def test_wrong_methods_are_405_json(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], method: str, path: str
) -> None:
    before = snapshot(repo)
    response = api.request(method, url(path, world), json={"firstName": "x"})
    if path.endswith("/claim/x"):
        assert_error(response, 404)
        return
    assert_error(response, 405)
    assert response.headers.get("Allow")
    assert snapshot(repo) == before


# -- no 500, whatever arrives -------------------------------------------------------------

_rng = random.Random(20240601)
_DEEP = 990
GARBAGE: list[tuple[str | None, bytes]] = [
    ("application/json", _rng.randbytes(2048)),
    (None, _rng.randbytes(512)),
    ("application/x-www-form-urlencoded", _rng.randbytes(2048)),
    ("multipart/form-data", _rng.randbytes(1024)),
    ("multipart/form-data; boundary=xyz", b"--xyz\r\nContent-Disposition: form-data\r\n\r\n"),
    ("application/octet-stream", _rng.randbytes(256)),
    ("application/json", b"[" * 100_000),
    ("application/json", b'{"a":' * 100_000),
    ("application/json", b'{"customAttributes": {"a": ' + b"[" * _DEEP + b"]" * _DEEP + b"}}"),
    (
        "application/json",
        b'{"userIdentifier": "@USER@", "templateIdentifier": "@TEMPLATE@", "customAttributes": '
        + b'{"a": '
        + b'{"b": ' * 200
        + b"1"
        + b"}" * 200
        + b"}}",
    ),
    ("application/json", b"1" * 100_000),
    ("application/json", b"-" + b"9" * 5000),
    (
        "application/json",
        b'{"apiDefaultValues": {"Name": 1e999}, "customAttributes": {"n": -1e400}}',
    ),
    (
        "application/json",
        b'{"userIdentifier": "@USER@", "templateIdentifier": "@TEMPLATE@", '
        b'"apiDefaultValues": {"n": ' + b"9" * 4000 + b'}, "customAttributes": {"f": 1e308}}',
    ),
    ("application/json", b'{"customAttributes": {"n": NaN, "m": Infinity, "o": -Infinity}}'),
    ("application/json", b'{"email": "\xff\xfe\xfd", "firstName": "\xc3\x28"}'),
    (
        "application/json",
        b'{"firstName": "\xed\xa0\x80", "source_user_identifier": "\xed\xbf\xbf"}',
    ),
    (
        "application/json",
        b'{"firstName": "\\ud800", "userIdentifier": "\\udfff", "drafts": ["\\ud800"], '
        b'"templateIdentifier": "@TEMPLATE@", "source_user_identifier": "\\udbff"}',
    ),
    (
        "application/json",
        b'{"firstName": "a\\u0000b", "source_user_identifier": "@SOURCE@\\u0000", '
        b'"drafts": ["@DRAFT@\\u0000"], "user_identifier": "@USER@", '
        b'"templateIdentifier": "@TEMPLATE@\\u0000"}',
    ),
    (
        "application/json",
        b'{"userIdentifier": "@USER@", "templateIdentifier": "@TEMPLATE@", '
        b'"apiDefaultValues": {"Name": "a\\u0000", "\\u0000": "x"}, '
        b'"customAttributes": {"k\\u0000": "\\ud800"}}',
    ),
    (
        "application/x-www-form-urlencoded",
        b"firstName=%00&customAttributes[a%00]=b&drafts[]=%00&user_identifier=@USER@%00"
        b"&source_user_identifier=%00&templateIdentifier=@TEMPLATE@&userIdentifier=@USER@"
        b"&apiDefaultValues[Name]=%00",
    ),
    (
        "application/x-www-form-urlencoded",
        b"email=%ff%fe&a[b][c]=d&apiDefaultValues[x][y]=1&drafts[][]=x&drafts=y&dryRun[]=1"
        b"&customAttributes=5&apiDefaultValues=&customAttributes[]=1",
    ),
    ("application/json", b"\xef\xbb\xbf{}"),
    ("application/json", b"\x00\x00\x00{"),
    ("application/json", '{"firstName": "x"}'.encode("utf-16")),
    ("application/json", '{"firstName": "x"}'.encode("utf-32")),
    (
        "application/json",
        b'{"drafts": "abc", "apiDefaultValues": "x", "customAttributes": 5, "dryRun": {}, '
        b'"email": [], "locale": {}, "intent": null, "userIdentifier": null}',
    ),
    ("application/json", b'{"templateIdentifier": {"$ne": null}, "userIdentifier": ["a"]}'),
    (
        "application/json",
        b'{"user_identifier": "@USER@", "drafts": ' + json.dumps(["d"] * 5000).encode() + b"}",
    ),
    ("application/json", b'{"' + b"k" * 100_000 + b'": 1, "customAttributes": {"": 1}}'),
    ("application/json; charset=latin-1", b'{"firstName": "\xe9"}'),
    ("text/plain", b"hello"),
]


def _fill(raw: bytes, world: dict[str, str]) -> bytes:
    for name in ("user", "source", "template", "draft"):
        raw = raw.replace(f"@{name.upper()}@".encode(), world[name].encode())
    return raw


@pytest.mark.parametrize(
    ("content_type", "raw"), GARBAGE, ids=[str(i) for i in range(len(GARBAGE))]
)
def test_garbage_bodies_never_cause_a_500(
    api: ApiClient,
    world: dict[str, str],
    content_type: str | None,
    raw: bytes,
) -> None:
    body = _fill(raw, world)
    for method, path in POST_OR_PUT:
        headers = {"Content-Type": content_type} if content_type else {}
        response = api.request(method, url(path, world), data=body, headers=headers)
        where = f"{method} {path}: {response.status_code} {response.get_data()[:300]!r}"
        assert response.status_code < 500, where
        if response.status_code == 204:  # the review calls that answer an empty body
            assert response.get_data() == b"", where
            continue
        assert response.mimetype == "application/json", where
        payload = response.get_json()
        if response.status_code >= 400:
            assert isinstance(payload, dict) and payload.get("message"), where
        else:
            # Whatever was accepted must come back as strict JSON (no NaN, no Infinity).
            json.loads(response.get_data(), parse_constant=_no_constants)


def _no_constants(name: str) -> Any:
    raise AssertionError(f"{name} in a JSON answer")


def test_rows_for_a_template_that_cannot_be_rendered_are_422(
    api: ApiClient, repo: SqlRepository, world: dict[str, str]
) -> None:
    """``PUT .../variable-data`` checks rows against the template, as ``POST`` does: one
    that cannot be rendered (a row without a file, a draft whose variant a new import of the
    template dropped) is a 422 naming ``template``, not a 500."""
    before = snapshot(repo)
    path = url("/api-ext/draft/{draft}/variable-data", world)
    for rows in ([{"Name": "Ada"}], []):
        response = api.put(path, json={"data": rows})
        body = assert_error(response, 422, "template")
        assert "cannot be rendered" in body["message"], body
    assert snapshot(repo) == before


@pytest.mark.parametrize("index", ["99999999999999999999", "1" * 5000, "\u00b2", "\u0660"])
def test_variable_data_row_indexes_no_row_can_have_are_422(
    api: ApiClient, repo: SqlRepository, tenant: Client, index: str
) -> None:
    """A row index past any 64-bit integer, longer than ``int`` reads, or made of digits
    that are not ASCII (``"²".isdigit()``; ``int("\\u0660")`` is 0) names no row: 422, and the
    rows stay as they were."""
    draft = card_draft(repo, tenant, card_template(repo, tenant))
    path = f"/api-ext/draft/{draft.draft_hash}/variable-data"
    assert api.put(path, json={"data": [{"name": "Ada"}]}).status_code == 204
    raw = f'{{"data": {{"{index}": {{"name": "Eve"}}}}}}'.encode()
    response = api.put(path, data=raw, content_type="application/json")
    assert_error(response, 422, "data")
    assert api.get(path).get_json()["data"] == [{"name": "Ada"}]


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/api-ext/draft/{draft}/variable-data", "limit"),
        ("/api-ext/draft/{draft}/variable-data", "offset"),
        ("/api-ext/draft/{draft}/{usage}/page-info", "row"),
    ],
)
@pytest.mark.parametrize("value", ["%D9%A1", "1_0", "%201%20", "%C2%B2"])
def test_row_numbers_in_the_query_are_ascii_digits(
    api: ApiClient, world: dict[str, str], path: str, name: str, value: str
) -> None:
    """``limit``, ``offset`` and ``row`` are read as ``page`` is: ASCII digits only. Before,
    ``int()`` read the Arabic-Indic one as 1, ``1_0`` as 10 and `` 1 `` as 1."""
    response = api.get(url(path, world) + f"?{name}={value}")
    body = assert_error(response, 422, name)
    assert body["errors"][name] == ["Not a valid integer."], body


@pytest.mark.parametrize("offset", ["9223372036854775808", "99999999999999999999"])
def test_variable_data_offset_past_any_row_is_422(
    api: ApiClient, world: dict[str, str], offset: str
) -> None:
    response = api.get(
        url("/api-ext/draft/{draft}/variable-data", world), query_string={"offset": offset}
    )
    assert_error(response, 422, "offset")


#: Every endpoint whose query parameters a schema reads.
WITH_QUERY = [
    "/api-ext/draft",
    "/api-ext/template",
    "/api-ext/variant",
    "/api-ext/theme",
    "/api-ext/webhook",
    "/api-ext/draft/{draft}/variable-data",
    "/api-ext/draft/{draft}/{usage}/page-info",
]


@pytest.mark.parametrize("path", WITH_QUERY)
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("user_identifier=@USER@%00", "user_identifier"),
        ("userGroupIdentifier=%00", "userGroupIdentifier"),
        ("page=1&per_page=5&unit=mm&note=a%00b", "note"),
    ],
)
def test_a_nul_in_a_query_parameter_is_a_422_naming_it(
    api: ApiClient, world: dict[str, str], path: str, query: str, field: str
) -> None:
    """As in a body: a NUL is refused with a 422 naming the parameter as sent, on every
    database, rather than read as a filter that names nothing (an empty list)."""
    target = url(path, world) + "?" + query.replace("@USER@", world["user"])
    body = assert_error(api.get(target), 422, field)
    assert "NUL" in body["errors"][field][0], body


@pytest.mark.parametrize("path", WITH_QUERY)
@pytest.mark.parametrize(
    "query", ["user_identifier=%FF", "userGroupIdentifier=%ED%A0%80", "a%C0=1"]
)
def test_a_query_string_that_is_not_utf8_is_a_400(
    api: ApiClient, world: dict[str, str], path: str, query: str
) -> None:
    """As a form body: Werkzeug read ``%FF`` as U+FFFD, so a list was filtered by a value
    the client never sent; now the client hears of it."""
    body = assert_error(api.get(url(path, world) + "?" + query), 400)
    assert "query string is not valid UTF-8" in body["message"], body


def test_a_draft_list_filtered_by_a_user_still_answers(
    api: ApiClient, world: dict[str, str]
) -> None:
    listed = api.get(f"/api-ext/draft?user_identifier={world['user']}&page=1&per_page=5&x=%C3%A9")
    assert listed.status_code == 200, listed.get_data()
    assert [d["draftHash"] for d in listed.get_json()["data"]] == [world["draft"]]


@pytest.mark.parametrize(
    "query",
    [
        "page=%00",
        "per_page=%00",
        "page=1e400",
        "page=99999999999999999999999",
        "user_identifier=%00",
        "userIdentifier=" + "x" * 5000,
        "page=1&page=abc",
        "page=%ff%fe",
        "per_page=-0",
    ],
)
@pytest.mark.parametrize("path", ["/api-ext/draft", "/api-ext/template"])
def test_garbage_query_strings_never_cause_a_500(
    api: ApiClient, world: dict[str, str], path: str, query: str
) -> None:
    response = api.get(f"{path}?{query}")
    assert response.status_code < 500, response.get_data()[:300]
    assert response.mimetype == "application/json"
    if response.status_code >= 400:
        assert response.get_json()["message"]
