"""Draft, template and user calls as the PHP SDK and the Magento module send them, with the
response types the SDK's typed properties enforce (issue 13, items 1 and 3).

Sources: PHP SDK ``src/Builder/DraftBuilder.php`` and ``tests/Builder/DraftBuilderTest.php``
(bodies), ``src/Client/Draft/Draft.php``, ``src/Client/Draft/ValidationResult.php``,
``src/Client/MasterTemplate/MasterTemplate.php``, ``AvailTemplate.php``, ``GroupMember.php``,
``src/Client/User/User.php`` (types), ``src/Client/ListsResources.php`` (``page``,
``per_page``); Magento ``Helper/Api.php`` (createDraftHash, updateDraftHash,
getReplicateDraftId).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from api_support import assert_error, make_template, make_user, snapshot
from flask.testing import FlaskClient
from test_editor import log_in, open_editor
from test_editor import make_draft as make_editor_draft

from pps.platform.models import Client, Template, User
from pps.platform.repository.sql import SqlRepository
from pps.render.text import as_text


def assert_sdk_draft(draft: dict[str, Any]) -> None:
    """``Draft::__construct``'s typed properties (no strict_types: only these types pass)."""
    for name in ("userIdentifier", "templateIdentifier", "draftHash", "state"):
        assert isinstance(draft[name], str), name
    for name in ("userGroupIdentifier", "activeGroupTemplateIdentifier", "setupStatus"):
        assert draft[name] is None or isinstance(draft[name], str), name
    assert type(draft["preflightStatus"]) is int
    assert draft["preflightStatus"] in (-1, 0, 1, 2)
    assert type(draft["personalizations"]["amount"]) is int
    variant = draft["variant"]
    assert isinstance(variant, dict)
    assert all(variant[k] is None or type(variant[k]) is int for k in ("id", "version"))
    assert isinstance(variant["identifier"], str)
    assert isinstance(draft["apiDefaultValues"], dict)
    assert isinstance(draft["customAttributes"], dict)
    assert isinstance(draft["validationResults"], list)
    for result in draft["validationResults"]:  # ValidationResult::fromArray
        assert result["row"] is None or type(result["row"]) is int
        assert type(result["page"]) is int
        assert isinstance(result["message"], str) and isinstance(result["severity"], str)


@pytest.fixture
def user(repo: SqlRepository, tenant: Client) -> User:
    return make_user(repo, tenant)


@pytest.fixture
def template(repo: SqlRepository, tenant: Client) -> Template:
    return make_template(repo, tenant, "poiuzt12")


def minimal_builder_body(user: User, template: Template) -> dict[str, Any]:
    """``DraftBuilderTest::testMinimal``: what ``DraftBuilder::create`` sends (array_filter
    drops only nulls, so the false flags and PHP's empty arrays are always there)."""
    return {
        "intent": "customize",
        "user_identifier": user.identifier,
        "templateIdentifier": template.identifier,
        "apiDefaultValues": [],
        "customAttributes": [],
        "pagePlanner": False,
        "remoteAcl": False,
        "locked": False,
        "disablePreflight": False,
    }


def test_draft_builder_minimal(api: Any, user: User, template: Template) -> None:
    response = api.post("/api-ext/draft", json=minimal_builder_body(user, template))
    assert response.status_code == 201, response.get_data()
    draft = response.get_json()["data"]
    assert_sdk_draft(draft)
    assert draft["preflightStatus"] == -1  # not checked, as the SDK's fixtures
    # No variant: the SDK's fixture ({id: null, version: null}) with the identifier its
    # typed Variant property needs as a string.
    assert draft["variant"] == {"id": None, "identifier": "", "version": None}
    assert draft["validationResults"] == []
    assert (draft["locked"], draft["disablePreflight"], draft["remoteAcl"]) == (False,) * 3
    for method in ("GET",):  # show and list answer the same types
        shown = api.request(method, f"/api-ext/draft/{draft['draftHash']}").get_json()["data"]
        assert_sdk_draft(shown)
    listed = api.get("/api-ext/draft?page=1&per_page=25").get_json()
    for item in listed["data"]:
        assert_sdk_draft(item)


def test_draft_builder_full_names_every_unsupported_option(
    api: Any, repo: SqlRepository, user: User, template: Template
) -> None:
    """``DraftBuilderTest::testFull`` verbatim: each option pps does not offer is named."""
    body = {
        "intent": "customize",
        "user_identifier": user.identifier,
        "templateIdentifier": template.identifier,
        "userGroupIdentifier": "loikujzh",
        "feedIdentifier": "98bv5rjf",
        "declarationIdentifier": "zsn83nbr7",
        "defaultGroupTemplate": "arhjtuk5",
        "variant": 23,
        "availableVariants": [23, 5],
        "version": 23,
        "availableVariantVersions": [23, 5],
        "availableCatalogTemplates": ["vgzuhb89", "56rdzg78"],
        "unit": "mm",
        "theme": "aw3n4h8H",
        "apiDefaultValues": {"a": "b"},
        "customAttributes": {"pf-ca-c": "d"},
        "pageDimensions": [
            {"width": 230, "height": 50},
            {"width": 200.0, "height": 100.0},
            {"width": 230, "height": 50},
        ],
        "bleedAdditions": {"top": 10, "left": 15, "bottom": 20, "right": 25},
        "pagePlanner": True,
        "remoteAcl": True,
        "locked": True,
        "disablePreflight": True,
        "spineWidth": 10.0,
        "pageFillColor": "#ff0000",
        "containerContentPreFilling": [
            {"page": 1, "containerIdentifier": "bottom-left", "catalogTemplateIdentifier": "v"},
        ],
    }
    before = snapshot(repo)
    error = assert_error(api.post("/api-ext/draft", json=body), 422)
    assert set(error["errors"]) == {
        "feedIdentifier",
        "declarationIdentifier",
        "defaultGroupTemplate",
        "availableCatalogTemplates",
        "pageDimensions",
        "bleedAdditions",
        "pagePlanner",
        "spineWidth",
        "pageFillColor",
        "containerContentPreFilling",
    }
    assert "product feeds" in error["errors"]["feedIdentifier"][0]
    assert snapshot(repo) == before


@pytest.mark.parametrize(
    "defaults",
    [
        {"feedIdentifier": None, "pageDimensions": None, "bleedAdditions": None},
        {"pageDimensions": [], "bleedAdditions": {"top": 0, "left": 0, "bottom": 0, "right": 0}},
        {"pageFillColor": "", "spineWidth": 0, "pagePlanner": False, "unit": "mm"},
        {"containerContentPreFilling": [], "availableCatalogTemplates": [], "draftParameter": {}},
    ],
)
def test_unsupported_options_at_their_defaults_are_accepted(
    api: Any, user: User, template: Template, defaults: dict[str, Any]
) -> None:
    body = {**minimal_builder_body(user, template), **defaults}
    response = api.post("/api-ext/draft", json=body)
    assert response.status_code == 201, response.get_data()
    assert_sdk_draft(response.get_json()["data"])


def test_options_sent_as_a_php_form(api: Any, user: User, template: Template) -> None:
    """``http_build_query`` writes false as ``0`` and true as ``1`` (the editor demo posts
    forms): defaults pass, a flag is stored, a real value is refused."""
    form = {
        "user_identifier": user.identifier,
        "templateIdentifier": template.identifier,
        "pagePlanner": "0",
        "pageFillColor": "",
        "locked": "1",
    }
    response = api.post("/api-ext/draft", data=form)
    assert response.status_code == 201, response.get_data()
    assert response.get_json()["data"]["locked"] is True
    form.pop("pageFillColor")
    response = api.post("/api-ext/draft", data={**form, "page_fill_color": "#ff0000"})
    assert set(assert_error(response, 422)["errors"]) == {"page_fill_color"}


def test_options_are_stored_updated_and_copied(api: Any, user: User, template: Template) -> None:
    body = {**minimal_builder_body(user, template), "locked": True, "disablePreflight": True}
    body["remoteAcl"] = True
    created = api.post("/api-ext/draft", json=body).get_json()["data"]
    assert (created["locked"], created["disablePreflight"], created["remoteAcl"]) == (True,) * 3
    hash_ = created["draftHash"]
    # Magento updateDraftHash: the order id into customAttributes of the (locked) draft
    response = api.put(f"/api-ext/draft/{hash_}", json={"customAttributes": {"order_id": 17}})
    assert response.status_code == 200
    shown = response.get_json()["data"]
    assert shown["customAttributes"] == {"order_id": 17} and shown["locked"] is True
    # a replicate starts unlocked but keeps how the draft is checked and guarded
    copy = api.post(f"/api-ext/draft/{hash_}/replicate", json={}).get_json()["data"]
    assert_sdk_draft(copy)
    assert (copy["locked"], copy["disablePreflight"], copy["remoteAcl"]) == (False, True, True)
    # the shop lifts the lock; null leaves an option as it is
    lifted = api.put(f"/api-ext/draft/{hash_}", json={"locked": False, "remoteAcl": None})
    data = lifted.get_json()["data"]
    assert (data["locked"], data["remoteAcl"]) == (False, True)
    assert_error(
        api.put(f"/api-ext/draft/{hash_}", json={"feedIdentifier": "f"}), 422, "feedIdentifier"
    )


def test_magento_create_and_replicate(api: Any, user: User, template: Template) -> None:
    """Magento ``Helper/Api.php`` createDraftHash (``user_identifier``, templateIdentifier,
    intent, availableVariantVersions) and getReplicateDraftId (GET without a body)."""
    response = api.post(
        "/api-ext/draft",
        json={
            "user_identifier": user.identifier,
            "templateIdentifier": template.identifier,
            "intent": "customize",
            "availableVariantVersions": ["3", "4"],
        },
    )
    assert response.status_code == 201, response.get_data()
    hash_ = response.get_json()["data"]["draftHash"]
    copy = api.get(f"/api-ext/draft/{hash_}/replicate")
    assert copy.status_code == 200
    assert_sdk_draft(copy.get_json()["data"])
    # mergeFeedIdentifier adds the product's feed: a feature pps does not have
    response = api.post(
        "/api-ext/draft",
        json={
            "user_identifier": user.identifier,
            "templateIdentifier": template.identifier,
            "intent": "customize",
            "feedIdentifier": "98bv5rjf",
        },
    )
    assert set(assert_error(response, 422)["errors"]) == {"feedIdentifier"}


def test_sdk_replicate_lays_values_over_and_refuses_draft_parameters(
    api: Any, user: User, template: Template
) -> None:
    """SDK ``tests/Client/Draft/ClientTest.php`` testReplicate, plus the ``draftParameter``
    and ``pagePlanner`` COMPAT.md says the SDK may send."""
    body = {**minimal_builder_body(user, template), "apiDefaultValues": {"Name": "Ada"}}
    hash_ = api.post("/api-ext/draft", json=body).get_json()["data"]["draftHash"]
    copy = api.post(
        f"/api-ext/draft/{hash_}/replicate",
        json={"customAttributes": {"pf-ca-test": 123}, "apiDefaultValues": {"City": 5}},
    ).get_json()["data"]
    assert copy["customAttributes"] == {"pf-ca-test": 123}
    assert copy["apiDefaultValues"] == {"Name": "Ada", "City": 5}
    refused = api.post(
        f"/api-ext/draft/{hash_}/replicate",
        json={"draftParameter": {"pages": 4}, "pagePlanner": True},
    )
    assert set(assert_error(refused, 422)["errors"]) == {"draftParameter", "pagePlanner"}


def test_api_default_values_of_any_json_type(api: Any, user: User, template: Template) -> None:
    values = {"Name": "Ada", "Zip": 1234, "Rate": 2.5, "Flag": True, "List": [1, "a"]}
    values |= {"Obj": {"a": 1}, "Nil": None}
    body = {**minimal_builder_body(user, template), "apiDefaultValues": values}
    draft = api.post("/api-ext/draft", json=body).get_json()["data"]
    assert draft["apiDefaultValues"] == values  # stored as sent
    texts = {key: as_text(value) for key, value in values.items()}
    assert texts == {
        "Name": "Ada",
        "Zip": "1234",
        "Rate": "2.5",
        "Flag": "true",
        "List": '[1,"a"]',
        "Obj": '{"a":1}',
        "Nil": None,
    }
    too_long = {"Long": ["x" * 10_000]}
    response = api.put(f"/api-ext/draft/{draft['draftHash']}", json={"apiDefaultValues": too_long})
    assert_error(response, 422, "apiDefaultValues")


def test_non_string_defaults_print_as_text(
    client: FlaskClient, repo: SqlRepository, tenant: Client
) -> None:
    """The editor shows a number default as its text and the print file renders it."""
    owner = repo.create_user(tenant.identifier, {})
    draft = make_editor_draft(repo, tenant, owner, headline=2024, phone=[1, 2])
    log_in(client, tenant, owner)
    page, _ = open_editor(client, f"/editor/{draft.draft_hash}/edit")
    assert 'value="2024"' in page and 'value="[1,2]"' in page


@pytest.mark.parametrize(("sent", "shown"), [(1, "1"), ("Herr", "Herr"), (None, None)])
def test_salutation_as_int_or_string(api: Any, sent: Any, shown: str | None) -> None:
    response = api.post("/api-ext/user", json={"salutation": sent, "firstName": "Ada"})
    assert response.status_code == 201, response.get_data()
    profile = response.get_json()["data"]["profile"]
    assert profile["salutation"] == shown  # User::$salutation is ?string


def test_templates_in_the_sdks_shapes_and_pages(
    api: Any, repo: SqlRepository, tenant: Client
) -> None:
    """MasterTemplate::fromArray (availTemplate null or {name, pageCount}, groupMembers a
    list of {identifier, name}), and ListsResources asking per_page=200 then lastPage."""
    for index in range(5):
        make_template(repo, tenant, f"TPL{index:05d}")
    page = api.get("/api-ext/template?page=1&per_page=200").get_json()
    assert page["meta"] == {"currentPage": 1, "lastPage": 1, "perPage": 200, "total": 5}
    for item in page["data"]:
        assert item["availTemplate"] is None and item["correctionTemplate"] is None
        assert item["groupMembers"] == []
        assert type(item["pageCount"]) is int
        assert item["previewUrl"] is None or isinstance(item["previewUrl"], str)
    pages = api.get("/api-ext/template?page=1&per_page=2").get_json()["meta"]
    assert pages["lastPage"] == 3
    last = api.get("/api-ext/template?page=3&per_page=2").get_json()
    assert len(last["data"]) == 1
    assert len(api.get("/api-ext/template").get_json()["data"]) == 5  # the whole catalogue
    assert api.get("/api-ext/template?page=1&per_page=1000").status_code == 200
    assert api.get("/api-ext/draft?page=1&per_page=1000").status_code == 200


def test_locked_draft_is_read_only_in_the_editor(
    client: FlaskClient, repo: SqlRepository, tenant: Client
) -> None:
    owner = repo.create_user(tenant.identifier, {})
    draft = make_editor_draft(repo, tenant, owner)
    repo.update_draft(tenant.identifier, draft.draft_hash, flags={"locked": True})
    log_in(client, tenant, owner)
    page, token = open_editor(client, f"/editor/{draft.draft_hash}/edit")
    assert re.search(r"<fieldset disabled[ >]", page)
    assert 'value="save"' not in page and "/finish" not in page
    assert "locked this design" in page
    preview = client.get(f"/editor/{draft.draft_hash}/preview")
    assert preview.status_code == 200
    assert 'id="finish-form"' not in preview.get_data(as_text=True)
    before = repo.get_draft(tenant.identifier, draft.draft_hash)
    for path in ("edit", "finish"):
        response = client.post(
            f"/editor/{draft.draft_hash}/{path}",
            data={"csrf_token": token, "f-0": "Changed", "action": "save"},
        )
        assert response.status_code == 409
        assert "locked" in response.get_data(as_text=True)
    assert repo.get_draft(tenant.identifier, draft.draft_hash) == before
    # unlocked again: saving works
    repo.update_draft(tenant.identifier, draft.draft_hash, flags={"locked": False})
    page, token = open_editor(client, f"/editor/{draft.draft_hash}/edit")
    assert re.search(r"<fieldset>", page)


def test_nginx_error_pages_say_success_false() -> None:
    """The JSON bodies nginx answers itself (400, 403-405, 412-416, 431, 500-505)
    carry success: false."""
    import json
    from pathlib import Path

    conf = (Path(__file__).parent.parent / "deploy" / "nginx.conf").read_text()
    answers = re.findall(r"return (\d{3}) '(\{.*\})\\n';", conf)
    statuses = {int(status) for status, _ in answers}
    assert statuses == {400, 404, 405, 412, 413, 414, 416, 431, 500, 501, 502, 505}
    for _, body in answers:
        parsed = json.loads(body)
        assert parsed["success"] is False and parsed["message"]


@pytest.mark.parametrize("spelling", [0, 1, 0.0, 1.0, "0", "1", "true", "false", ""])
def test_json_flags_are_true_or_false_only(
    api: Any, user: User, template: Template, spelling: Any
) -> None:
    """The SDK's ``DraftBuilder``, ``Draft\\Client::claim`` and ``Review\\Client::create`` send
    PHP bools through Guzzle's ``json``: JSON ``true``/``false``, as /openapi.json says
    (``type: boolean``). A number or a string in JSON is a 422 naming the field, not a
    flag set by what marshmallow makes of it; forms keep PHP's ``"0"``/``"1"``."""
    created = api.post("/api-ext/draft", json=minimal_builder_body(user, template))
    hash_ = created.get_json()["data"]["draftHash"]
    flags = {"locked": spelling, "disablePreflight": spelling, "remoteAcl": spelling}
    response = api.post(f"/api-ext/draft/{hash_}/replicate", json=flags)
    assert set(assert_error(response, 422)["errors"]) == set(flags)
    response = api.put(f"/api-ext/draft/{hash_}", json={"locked": spelling})
    assert set(assert_error(response, 422)["errors"]) == {"locked"}
    claim = {"user_identifier": user.identifier, "drafts": [hash_], "dryRun": spelling}
    assert set(assert_error(api.post("/api-ext/draft/claim", json=claim), 422)["errors"]) == {
        "dryRun"
    }


@pytest.mark.parametrize(
    ("spelling", "stored"), [("1", True), ("0", False), ("true", True), ("false", False)]
)
def test_form_flags_keep_their_string_spellings(
    api: Any, user: User, template: Template, spelling: str, stored: bool
) -> None:
    """``http_build_query`` writes true as ``1`` and false as ``0``; forms read them as before."""
    created = api.post("/api-ext/draft", json=minimal_builder_body(user, template))
    hash_ = created.get_json()["data"]["draftHash"]
    flags = {"locked": spelling, "disablePreflight": spelling, "remoteAcl": spelling}
    response = api.post(f"/api-ext/draft/{hash_}/replicate", data=flags)
    assert response.status_code == 200, response.get_data()
    data = response.get_json()["data"]
    assert (data["disablePreflight"], data["remoteAcl"]) == (stored, stored)
    response = api.put(f"/api-ext/draft/{hash_}", data={"locked": spelling})
    assert response.status_code == 200, response.get_data()
    assert response.get_json()["data"]["locked"] is stored
    claim = {"user_identifier": user.identifier, "drafts": [hash_], "dryRun": spelling}
    response = api.post("/api-ext/draft/claim", data=claim)
    assert response.status_code == 200, response.get_data()
