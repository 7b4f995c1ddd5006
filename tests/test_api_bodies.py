"""Request bodies as the clients encode them, through the one webargs location loader.

Lone UTF-16 surrogates never get past it (4xx with the JSON error, nothing written), PHP's
``a[]=x`` and repeated keys mean the same list, a 422 names a field as the client spelled
it, and ``/api-ext/draft/claim`` is only ``POST``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from api_support import assert_error, make_draft, make_template, make_user, snapshot
from conftest import ApiClient
from flask import Flask
from test_api_errors import POST_OR_PUT, endpoint_id, url, valid_body
from werkzeug.exceptions import MethodNotAllowed

from pps.platform.models import Client
from pps.platform.repository.sql import SqlRepository
from pps.web.openapi import api_of

#: The endpoints that read a JSON or form body if one is sent (close-review too, though the
#: PHP SDK sends none); upload reads multipart only and answers any other body with 415
#: (test_upload_takes_no_json_or_form_body).
TEXT_BODIES = [e for e in POST_OR_PUT if not e[1].endswith("/upload")]


@pytest.fixture
def world(app: Flask, repo: SqlRepository, tenant: Client) -> dict[str, str]:
    user = make_user(repo, tenant, first_name="Mine")
    source = make_user(repo, tenant, first_name="Also mine")
    template = make_template(repo, tenant, "TPLmine1")
    draft = make_draft(repo, tenant, user, template)
    review = app.extensions["pps.reviews"].create(
        tenant.identifier,
        draft_id=draft.draft_hash,
        users=[user.identifier],
        close_callback_url=None,
        remote_acl=False,
    )
    return {
        "user": user.identifier,
        "source": source.identifier,
        "template": template.identifier,
        "draft": draft.draft_hash,
        "processing": "0123456789abcdef0123456789abcdef",
        "review": review.review_id,
    }


def _with_surrogate(method: str, path: str, world: dict[str, str]) -> list[bytes]:
    """The endpoint's valid body as JSON text, with a lone surrogate put in three places:
    a new field, a map value and a map key (as JSON escapes, as a client's encoder writes
    them)."""
    body = valid_body(method, path, world) or {}
    fields = ", ".join(f'"{key}": {_json(value)}' for key, value in body.items())
    prefix = f"{{{fields}, " if fields else "{"
    return [
        f'{prefix}"firstName": "x\\ud800y"}}'.encode(),
        f'{prefix}"customAttributes": {{"k": "\\udfff"}}}}'.encode(),
        f'{prefix}"apiDefaultValues": {{"\\ud83d": "x"}}}}'.encode(),
        # the same surrogate, UTF-8 encoded as raw bytes (not valid UTF-8)
        prefix.encode() + b'"firstName": "\xed\xa0\x80"}',
    ]


def _json(value: Any) -> str:
    return json.dumps(value)


@pytest.mark.parametrize("endpoint", TEXT_BODIES, ids=endpoint_id)
def test_lone_surrogates_in_json_are_4xx_and_write_nothing(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], endpoint: tuple[str, str]
) -> None:
    method, path = endpoint
    before = snapshot(repo)
    for raw in _with_surrogate(method, path, world):
        response = api.request(method, url(path, world), data=raw, content_type="application/json")
        assert response.status_code in (400, 422), (raw, response.get_data()[:300])
        body = assert_error(response, response.status_code)
        if response.status_code == 422:
            messages = [m for problems in body["errors"].values() for m in problems]
            assert "surrogate" in " ".join(messages), body
    assert snapshot(repo) == before


@pytest.mark.parametrize("endpoint", TEXT_BODIES, ids=endpoint_id)
def test_a_key_twice_in_a_json_object_is_400_and_writes_nothing(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], endpoint: tuple[str, str]
) -> None:
    """The last value won: a proxy or log reading the first saw another body than pps."""
    method, path = endpoint
    before = snapshot(repo)
    for raw in (b'{"firstName": "a", "firstName": "b"}', b'{"customAttributes": {"k": 1, "k": 2}}'):
        response = api.request(method, url(path, world), data=raw, content_type="application/json")
        body = assert_error(response, 400)
        assert "appears twice" in body["message"], body
    assert snapshot(repo) == before


@pytest.mark.parametrize("endpoint", TEXT_BODIES, ids=endpoint_id)
def test_lone_surrogates_in_form_fields_are_4xx_and_write_nothing(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], endpoint: tuple[str, str]
) -> None:
    method, path = endpoint
    before = snapshot(repo)
    bodies = [
        b"firstName=%ED%A0%80&source_user_identifier=%ED%A0%80",  # a surrogate, percent-encoded
        b"customAttributes[k]=%ED%B0%80&drafts[]=%ED%A0%80&draftIds[]=%ED%A0%80",
        b"customAttributes[%ED%A0%80]=x",  # in a key
        b"firstName=\xed\xa0\x80",  # raw bytes
    ]
    for raw in bodies:
        response = api.request(
            method, url(path, world), data=raw, content_type="application/x-www-form-urlencoded"
        )
        assert_error(response, 400)
        assert "UTF-8" in response.get_json()["message"]
    assert snapshot(repo) == before


#: The endpoints whose multipart body is read as form fields; the file uploads read theirs
#: as a file (test_uploads.py, test_variable_data.py).
MULTIPART_FIELDS = [
    e
    for e in TEXT_BODIES
    if e not in (("POST", "/api-ext/file"), ("POST", "/api-ext/draft/{draft}/variable-data"))
]


def _part(name: bytes, value: bytes) -> bytes:
    return b'--b\r\nContent-Disposition: form-data; name="' + name + b'"\r\n\r\n' + value + b"\r\n"


def _multipart(valid: dict[str, Any] | None, bad: bytes) -> bytes:
    """The endpoint's valid body as multipart fields (lists as PHP's ``name[]``), then the
    ``bad`` part."""
    parts = [
        _part(f"{key}[]".encode(), str(item).encode())
        if isinstance(value, list)
        else _part(key.encode(), str(value).encode())
        for key, value in (valid or {}).items()
        for item in (value if isinstance(value, list) else [value])
    ]
    return b"".join(parts) + bad + b"--b--\r\n"


@pytest.mark.parametrize("endpoint", MULTIPART_FIELDS, ids=endpoint_id)
def test_multipart_fields_that_are_not_utf8_are_400_and_write_nothing(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], endpoint: tuple[str, str]
) -> None:
    """Werkzeug's form parser would read such a field with replacement characters, or drop
    the whole form when a part's name is not UTF-8; either stores what was not sent."""
    method, path = endpoint
    before = snapshot(repo)
    bad_parts = [
        _part(b"firstName", b"\xed\xa0\x80"),  # a lone surrogate, UTF-8 encoded
        _part(b"customAttributes[k]", b"\xff\xfe"),
        _part(b"customAttributes[\xed\xa0\x80]", b"x"),  # in a part's name
        _part(b"firstName", b"\xc3\x28"),
    ]
    for bad in bad_parts:
        response = api.request(
            method,
            url(path, world),
            data=_multipart(valid_body(method, path, world), bad),
            content_type="multipart/form-data; boundary=b",
        )
        body = assert_error(response, 400)
        assert "UTF-8" in body["message"], body
    assert snapshot(repo) == before


def test_multipart_without_a_usable_boundary_is_400(api: ApiClient, repo: SqlRepository) -> None:
    before = snapshot(repo)
    body = _multipart({"firstName": "Eve"}, b"")
    for content_type in (
        "multipart/form-data",
        'multipart/form-data; boundary=""',
        "multipart/form-data; boundary*=utf-8''%E2%9C%93",  # RFC 2231, not Latin-1
    ):
        assert_error(api.post("/api-ext/user", data=body, content_type=content_type), 400)
    assert snapshot(repo) == before


@pytest.mark.parametrize("path", ["/api-ext/file", "/api-ext/draft/{draft}/variable-data"])
def test_a_file_part_whose_headers_are_not_utf8_is_400_not_a_missing_part(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], path: str
) -> None:
    """Werkzeug drops the whole multipart body when a part's headers are not UTF-8 (here a
    Latin-1 file name): the upload then looked as if it had no part 'file' at all (422)."""
    before = snapshot(repo)
    latin1_name = (
        b'--b\r\nContent-Disposition: form-data; name="file"; filename="M\xfcller.csv"\r\n'
        b"Content-Type: text/csv\r\n\r\nname\r\nAda\r\n--b--\r\n"
    )
    response = api.post(
        url(path, world), data=latin1_name, content_type="multipart/form-data; boundary=b"
    )
    body = assert_error(response, 400)
    assert "UTF-8" in body["message"], body
    assert snapshot(repo) == before


def test_multipart_fields_in_utf8_are_read(api: ApiClient) -> None:
    response = api.post(
        "/api-ext/user",
        data=_multipart({"firstName": "Zo\u00eb \u2713"}, _part(b"customAttributes[k]", b"v")),
        content_type="multipart/form-data; boundary=b",
    )
    assert response.status_code == 201, response.get_data()
    user = response.get_json()["data"]
    assert user["profile"]["firstName"] == "Zo\u00eb \u2713"
    assert user["customAttributes"] == {"k": "v"}


def test_upload_takes_no_json_or_form_body(
    api: ApiClient, repo: SqlRepository, tenant: Client, world: dict[str, str]
) -> None:
    """The bodies above, sent to the upload of a draft that takes one: JSON (the shape
    that names a ``fileURL``) refused as a bad body, a form a 415 naming multipart, and
    nothing written."""
    user = repo.get_user(tenant.identifier, world["user"])
    template = repo.get_template(tenant.identifier, world["template"])
    draft = make_draft(repo, tenant, user, template, intent="upload")
    before = snapshot(repo)
    path = url("/api-ext/draft/{draft}/upload", world, draft=draft.draft_hash)
    sent = [
        *(
            (raw, "application/json")
            for raw in _with_surrogate("PUT", "/api-ext/draft/{draft}", world)
        ),
        (b"firstName=%ED%A0%80&file=%ED%A0%80", "application/x-www-form-urlencoded"),
        (b"file=\xed\xa0\x80", "application/x-www-form-urlencoded"),
    ]
    for raw, content_type in sent:
        response = api.post(path, data=raw, content_type=content_type)
        if content_type == "application/json":
            assert response.status_code in (400, 422), response.get_data(as_text=True)
            assert_error(response, response.status_code)
            continue
        body = assert_error(response, 415)
        assert "multipart/form-data" in body["message"], body
    assert snapshot(repo) == before


def test_get_put_and_delete_on_claim_are_405(
    api: ApiClient, repo: SqlRepository, world: dict[str, str]
) -> None:
    before = snapshot(repo)
    for method in ("GET", "DELETE", "PUT", "PATCH"):
        response = api.request(method, "/api-ext/draft/claim", json={"drafts": [world["draft"]]})
        body = assert_error(response, 405)
        assert "draft" not in body["message"].lower()  # not "no such draft"
        # pps's shape, not flask-smorest's code/status
        assert set(body) == {"message", "success"}
        assert "POST" in response.headers["Allow"]
    # HEAD answers like GET, without a body
    assert api.request("HEAD", "/api-ext/draft/claim").status_code == 405
    # a draft whose hash merely starts with "claim" is still a draft path
    assert_error(api.get("/api-ext/draft/claimed00"), 404)
    assert snapshot(repo) == before


@pytest.mark.parametrize(
    "form",
    [
        lambda user, drafts: {"user_identifier": user, "drafts[]": drafts},
        lambda user, drafts: {"userIdentifier": user, "drafts": drafts},
    ],
    ids=["php-brackets", "repeated-keys"],
)
def test_form_lists_in_both_encodings(
    api: ApiClient, repo: SqlRepository, tenant: Client, world: dict[str, str], form: Any
) -> None:
    claimer = make_user(repo, tenant)
    other = make_draft(repo, tenant)
    drafts = [world["draft"], other.draft_hash, "nope"]
    response = api.post(
        "/api-ext/draft/claim", data={**form(claimer.identifier, drafts), "dryRun": "1"}
    )
    assert response.status_code == 200, response.get_data()
    assert response.get_json() == {world["draft"]: True, other.draft_hash: True, "nope": False}


def test_a_single_form_value_for_a_list_is_a_list_of_one(
    api: ApiClient, world: dict[str, str]
) -> None:
    response = api.post(
        "/api-ext/draft/claim",
        data={"user_identifier": world["user"], "drafts": world["draft"], "dryRun": "true"},
    )
    assert response.status_code == 200, response.get_data()
    assert response.get_json() == {world["draft"]: True}


def test_422_names_fields_as_the_client_spelled_them(api: ApiClient, world: dict[str, str]) -> None:
    """Issue 13: ``errors`` keys are spelled as sent, once (the PHP SDK's ValidationException
    hands them to its caller as they are)."""
    response = api.post(
        "/api-ext/draft", json={"user_identifier": "nobody00", "templateIdentifier": "nope"}
    )
    body = assert_error(response, 422, "user_identifier", "templateIdentifier")
    assert set(body["errors"]) == {"user_identifier", "templateIdentifier"}
    response = api.post(f"/api-ext/user/{world['user']}/merge", json={"source_user_identifier": 5})
    body = assert_error(response, 422, "source_user_identifier")
    assert set(body["errors"]) == {"source_user_identifier"}
    response = api.get("/api-ext/draft?per_page=1001")
    body = assert_error(response, 422, "per_page")
    assert set(body["errors"]) == {"per_page"}
    # sent in camelCase: named once
    response = api.post(
        "/api-ext/draft", json={"userIdentifier": "nobody00", "templateIdentifier": "nope"}
    )
    body = assert_error(response, 422, "userIdentifier", "templateIdentifier")
    assert set(body["errors"]) == {"userIdentifier", "templateIdentifier"}


def test_replicate_lays_the_values_sent_over_the_sources(
    api: ApiClient, repo: SqlRepository, tenant: Client
) -> None:
    stored = make_draft(
        repo, tenant, api_default_values={"Name": "Ada", "City": "London"}, custom_attributes={}
    )
    response = api.post(
        f"/api-ext/draft/{stored.draft_hash}/replicate",
        json={"apiDefaultValues": {"City": "Paris"}, "customAttributes": {"order": "18"}},
    )
    assert response.status_code == 200, response.get_data()
    copy = response.get_json()["data"]
    assert copy["apiDefaultValues"] == {"Name": "Ada", "City": "Paris"}
    assert copy["customAttributes"] == {"order": "18"}
    assert repo.get_draft(tenant.identifier, stored.draft_hash) == stored


def test_flask_smorests_error_handler_answers_in_pps_shape(app: Flask) -> None:
    """Whichever HTTPException handler Flask picks, the body is pps's, never ``code``/``status``."""
    with app.test_request_context("/api-ext/draft/claim", method="GET"):
        response = api_of(app).handle_http_exception(MethodNotAllowed(valid_methods=["POST"]))
    assert response.status_code == 405
    assert response.get_json() == {"message": "This method is not allowed here.", "success": False}
    assert response.headers["Allow"] == "POST"


# -- PHP's indexed and nested form keys (http_build_query, Guzzle's form_params) ----------

FORM = "application/x-www-form-urlencoded"


def test_claim_with_indexed_drafts_claims_both(
    api: ApiClient, repo: SqlRepository, tenant: Client, world: dict[str, str]
) -> None:
    """``http_build_query(['drafts' => [$a, $b]])`` writes ``drafts%5B0%5D=..&drafts%5B1%5D=..``."""
    claimer = make_user(repo, tenant)
    other = make_draft(repo, tenant)
    raw = (
        f"user_identifier={claimer.identifier}"
        f"&drafts%5B0%5D={world['draft']}&drafts%5B1%5D={other.draft_hash}"
    )
    response = api.post("/api-ext/draft/claim", data=raw.encode(), content_type=FORM)
    assert response.status_code == 200, response.get_data()
    assert response.get_json() == {world["draft"]: True, other.draft_hash: True}
    for draft_hash in (world["draft"], other.draft_hash):
        stored = repo.get_draft(tenant.identifier, draft_hash)
        assert stored is not None and stored.user_identifier == claimer.identifier


def test_indexed_keys_that_are_not_a_list_are_not_a_list(
    api: ApiClient, repo: SqlRepository, world: dict[str, str]
) -> None:
    """``drafts[1]`` alone is a map, as PHP's json_encode would send it: refused, not read."""
    before = snapshot(repo)
    raw = f"user_identifier={world['user']}&drafts[1]={world['draft']}".encode()
    response = api.post("/api-ext/draft/claim", data=raw, content_type=FORM)
    assert_error(response, 422, "drafts")
    assert snapshot(repo) == before


def test_a_bracketed_list_for_a_single_value_is_422_not_its_last_item(
    api: ApiClient, repo: SqlRepository, world: dict[str, str]
) -> None:
    before = snapshot(repo)
    raw = f"user_identifier[]=nobody00&user_identifier[]={world['user']}&drafts[]=x".encode()
    response = api.post("/api-ext/draft/claim", data=raw, content_type=FORM)
    body = assert_error(response, 422, "user_identifier")
    assert set(body["errors"]) == {"user_identifier"}
    assert snapshot(repo) == before


def test_user_update_stores_nested_custom_attributes(
    api: ApiClient, repo: SqlRepository, tenant: Client, world: dict[str, str]
) -> None:
    raw = (
        b"customAttributes%5Bsize%5D%5Bw%5D=10&customAttributes%5Bsize%5D%5Bh%5D=20"
        b"&customAttributes%5Btags%5D%5B0%5D=a&customAttributes%5Btags%5D%5B1%5D=b"
    )
    response = api.put(f"/api-ext/user/{world['user']}", data=raw, content_type=FORM)
    assert response.status_code == 200, response.get_data()
    expected = {"size": {"w": "10", "h": "20"}, "tags": ["a", "b"]}
    assert response.get_json()["data"]["customAttributes"] == expected
    stored = repo.get_user(tenant.identifier, world["user"])
    assert stored is not None and stored.custom_attributes == expected


def test_a_php_map_with_an_appended_item_follows_php(api: ApiClient, world: dict[str, str]) -> None:
    """``a[]=1&a[x]=2`` is ``{"0": "1", "x": "2"}`` in PHP, and so here."""
    raw = b"customAttributes[]=1&customAttributes[x]=2"
    response = api.put(f"/api-ext/user/{world['user']}", data=raw, content_type=FORM)
    assert response.status_code == 200, response.get_data()
    assert response.get_json()["data"]["customAttributes"] == {"0": "1", "x": "2"}


def test_draft_update_stores_nested_default_values(
    api: ApiClient, repo: SqlRepository, tenant: Client, world: dict[str, str]
) -> None:
    """``apiDefaultValues`` takes any JSON value per DataKey, so a nested one is stored."""
    raw = b"apiDefaultValues[Name][x]=1&apiDefaultValues[City]=Paris"
    response = api.put(f"/api-ext/draft/{world['draft']}", data=raw, content_type=FORM)
    assert response.status_code == 200, response.get_data()
    expected = {"Name": {"x": "1"}, "City": "Paris"}
    assert response.get_json()["data"]["apiDefaultValues"] == expected
    stored = repo.get_draft(tenant.identifier, world["draft"])
    assert stored is not None and stored.api_default_values == expected


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        # a value and nested keys at one place: PHP keeps the later and drops the other
        (b"apiDefaultValues[Name][x]=1&apiDefaultValues[Name]=Ada", "apiDefaultValues"),
        (b"customAttributes[a]=1&customAttributes[a][b]=2", "customAttributes"),
        (b"custom_attributes[a][]=1&custom_attributes[a]=2", "custom_attributes"),
        # deeper than MAX_DEPTH
        (b"customAttributes" + b"%5Bk%5D" * 40 + b"=1", "customAttributes"),
    ],
    ids=["value-after-map", "map-after-value", "snake-case", "too-deep"],
)
@pytest.mark.parametrize("path", ["/api-ext/user/{user}", "/api-ext/draft/{draft}"])
def test_shapes_that_would_lose_a_value_are_422(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], raw: bytes, field: str, path: str
) -> None:
    before = snapshot(repo)
    response = api.put(url(path, world), data=raw, content_type=FORM)
    body = assert_error(response, 422, field)
    assert set(body["errors"]) == {field}
    assert snapshot(repo) == before


def test_multipart_fields_nest_as_forms_do(api: ApiClient, world: dict[str, str]) -> None:
    body = _multipart(
        None,
        _part(b"customAttributes[size][w]", b"10") + _part(b"customAttributes[list][0]", b"a"),
    )
    response = api.put(
        f"/api-ext/user/{world['user']}",
        data=body,
        content_type="multipart/form-data; boundary=b",
    )
    assert response.status_code == 200, response.get_data()
    assert response.get_json()["data"]["customAttributes"] == {"size": {"w": "10"}, "list": ["a"]}


@pytest.mark.parametrize("endpoint", MULTIPART_FIELDS, ids=endpoint_id)
def test_a_multipart_part_without_a_name_is_400_and_writes_nothing(
    api: ApiClient, repo: SqlRepository, world: dict[str, str], endpoint: tuple[str, str]
) -> None:
    """A text part whose Content-Disposition names no field cannot be filed under any; it
    was a 500 (the part's name was None)."""
    method, path = endpoint
    before = snapshot(repo)
    for disposition in (b"form-data", b'form-data; nme="x"'):
        nameless = b"--b\r\nContent-Disposition: " + disposition + b"\r\n\r\nv\r\n"
        response = api.request(
            method,
            url(path, world),
            data=_multipart(valid_body(method, path, world), nameless),
            content_type="multipart/form-data; boundary=b",
        )
        body = assert_error(response, 400)
        assert "name" in body["message"], body
    assert snapshot(repo) == before
