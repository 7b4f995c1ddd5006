"""``/api-ext/draft`` as a shop, the Magento module and the editor demo call it."""

from __future__ import annotations

from typing import Any

import pytest
from api_support import (
    DRAFT_HASH,
    DRAFT_NEVER_NULL,
    assert_error,
    counts,
    make_draft,
    make_template,
    make_user,
    snapshot,
)

from pps.platform.models import Client, Template, User
from pps.platform.repository.sql import SqlRepository

DRAFT_KEYS = {
    "draftHash",
    "userIdentifier",
    "userGroupIdentifier",
    "templateIdentifier",
    "activeGroupTemplateIdentifier",
    "intent",
    "state",
    "setupStatus",
    "personalizations",
    "preflightStatus",
    "variant",
    "apiDefaultValues",
    "customAttributes",
    "validationResults",
    "locked",
    "disablePreflight",
    "remoteAcl",
    "draftVersion",
    "proofApprovedAt",
    "proofApprovedVersion",
}


def assert_draft(draft: dict[str, Any]) -> dict[str, Any]:
    assert set(draft) == DRAFT_KEYS
    for name in DRAFT_NEVER_NULL:
        assert draft[name] is not None, name
    assert DRAFT_HASH.match(draft["draftHash"])
    assert draft["userGroupIdentifier"] is None
    assert draft["activeGroupTemplateIdentifier"] is None
    assert draft["state"] in ("init", "edited", "finished")
    assert isinstance(draft["personalizations"]["amount"], int)
    assert set(draft["personalizations"]) == {"amount"}
    # The SDK's Variant of a draft: {id: int|null, identifier: string, version: int|null}.
    assert set(draft["variant"]) == {"id", "identifier", "version"}
    assert isinstance(draft["variant"]["identifier"], str)
    assert all(
        draft["variant"][key] is None or type(draft["variant"][key]) is int
        for key in ("id", "version")
    )
    # issue 13: an int preflightStatus; the stored draft options as booleans
    assert isinstance(draft["preflightStatus"], int)
    assert not isinstance(draft["preflightStatus"], bool)
    for name in ("locked", "disablePreflight", "remoteAcl"):
        assert isinstance(draft[name], bool), name
    assert isinstance(draft["apiDefaultValues"], dict)
    assert isinstance(draft["customAttributes"], dict)
    # The SDK's ValidationResult (src/Client/Draft/ValidationResult.php): int|null row,
    # int page, string message and severity. Tests of what preflight finds: test_preflight.py.
    assert isinstance(draft["preflightStatus"], int)
    for result in draft["validationResults"]:
        assert set(result) == {"row", "page", "message", "severity"}
        assert result["row"] is None or isinstance(result["row"], int)
        assert isinstance(result["page"], int) and isinstance(result["message"], str)
        assert result["severity"] in ("error", "warning")
    return draft


def one_draft(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.get_data()[:500]
    body = response.get_json()
    assert set(body) == {"data"}
    return assert_draft(body["data"])


@pytest.fixture
def user(repo: SqlRepository, tenant: Client) -> User:
    return make_user(repo, tenant)


@pytest.fixture
def template(repo: SqlRepository, tenant: Client) -> Template:
    return make_template(repo, tenant, "TPLcard1")


# -- create -------------------------------------------------------------------------------


@pytest.mark.parametrize("user_key", ["userIdentifier", "user_identifier"])
def test_create_draft_with_json(
    api: Any, repo: SqlRepository, tenant: Client, user: User, template: Template, user_key: str
) -> None:
    before = counts(repo)
    response = api.post(
        "/api-ext/draft",
        json={
            "templateIdentifier": template.identifier,
            user_key: user.identifier,
            "apiDefaultValues": {"Name": "Ada", "City": "", "Zip": 1234},
            "customAttributes": {"orderLine": 3, "nested": {"a": [1, 2]}},
        },
    )
    draft = one_draft(response, 201)
    assert draft["userIdentifier"] == user.identifier
    assert draft["templateIdentifier"] == template.identifier
    assert draft["intent"] == "customize"
    assert draft["state"] == "init"
    assert draft["apiDefaultValues"] == {"Name": "Ada", "City": "", "Zip": 1234}
    assert draft["customAttributes"] == {"orderLine": 3, "nested": {"a": [1, 2]}}
    assert draft["personalizations"] == {"amount": 1}  # records: 1 without variable data
    # No variant chosen: the SDK's fixture for "no variant" (printformer-php-sdk,
    # tests/Client/Draft/ClientTest.php), with the identifier as a string.
    assert draft["variant"] == {"id": None, "identifier": "", "version": None}
    assert counts(repo)["drafts"] == before["drafts"] + 1
    stored = repo.get_draft(tenant.identifier, draft["draftHash"])
    assert stored is not None and stored.user_identifier == user.identifier


def test_create_draft_with_minimal_json(api: Any, user: User, template: Template) -> None:
    response = api.post(
        "/api-ext/draft",
        json={"templateIdentifier": template.identifier, "userIdentifier": user.identifier},
    )
    draft = one_draft(response, 201)
    assert draft["apiDefaultValues"] == {}
    assert draft["customAttributes"] == {}
    assert draft["personalizations"] == {"amount": 1}  # records: 1 without variable data


def test_create_draft_with_php_style_form(api: Any, user: User, template: Template) -> None:
    """The editor demo posts form fields, nesting values the way PHP does."""
    response = api.post(
        "/api-ext/draft",
        data={
            "templateIdentifier": template.identifier,
            "user_identifier": user.identifier,
            "intent": "upload",
            "apiDefaultValues[Name]": "Ada Lovelace",
            "apiDefaultValues[City]": "London",
            "customAttributes[orderId]": "100042",
        },
    )
    draft = one_draft(response, 201)
    assert draft["intent"] == "upload"
    assert draft["apiDefaultValues"] == {"Name": "Ada Lovelace", "City": "London"}
    assert draft["customAttributes"] == {"orderId": "100042"}
    assert draft["userIdentifier"] == user.identifier


@pytest.mark.parametrize("empty", [[], None])
def test_create_draft_with_php_empty_maps(
    api: Any, user: User, template: Template, empty: Any
) -> None:
    """PHP encodes an empty array as ``[]``; an unset typed property may come as null."""
    response = api.post(
        "/api-ext/draft",
        json={
            "templateIdentifier": template.identifier,
            "userIdentifier": user.identifier,
            "apiDefaultValues": empty,
            "customAttributes": empty,
        },
    )
    draft = one_draft(response, 201)
    assert draft["apiDefaultValues"] == {}
    assert draft["customAttributes"] == {}


def test_create_draft_needs_template_and_user(api: Any, repo: SqlRepository) -> None:
    before = snapshot(repo)
    body = assert_error(api.post("/api-ext/draft"), 422, "templateIdentifier", "userIdentifier")
    assert body["message"]
    assert_error(api.post("/api-ext/draft", json={"intent": "sell"}), 422, "intent")
    assert snapshot(repo) == before


def test_create_draft_with_unknown_user_and_template(api: Any, repo: SqlRepository) -> None:
    before = snapshot(repo)
    response = api.post(
        "/api-ext/draft", json={"templateIdentifier": "nothing1", "userIdentifier": "nobody01"}
    )
    assert_error(response, 422, "templateIdentifier", "userIdentifier")
    assert snapshot(repo) == before


# -- list ---------------------------------------------------------------------------------


def test_list_drafts_pages_with_meta(
    api: Any,
    repo: SqlRepository,
    tenant: Client,
    other_tenant: Client,
    user: User,
    template: Template,
) -> None:
    made = [make_draft(repo, tenant, user, template).draft_hash for _ in range(30)]
    make_draft(repo, other_tenant)

    response = api.get("/api-ext/draft")
    assert response.status_code == 200
    body = response.get_json()
    assert set(body) == {"data", "meta"}
    assert body["meta"] == {"currentPage": 1, "lastPage": 2, "perPage": 25, "total": 30}
    assert len(body["data"]) == 25
    for draft in body["data"]:
        assert_draft(draft)

    seen: list[str] = []
    for page in (1, 2, 3):
        response = api.get("/api-ext/draft", query_string={"page": page, "per_page": 10})
        assert response.status_code == 200
        body = response.get_json()
        assert body["meta"] == {"currentPage": page, "lastPage": 3, "perPage": 10, "total": 30}
        seen += [draft["draftHash"] for draft in body["data"]]
    assert sorted(seen) == sorted(made)

    camel = api.get("/api-ext/draft?page=2&perPage=20").get_json()
    assert camel["meta"] == {"currentPage": 2, "lastPage": 2, "perPage": 20, "total": 30}
    assert len(camel["data"]) == 10
    beyond = api.get("/api-ext/draft?page=4&per_page=10").get_json()
    assert beyond["data"] == [] and beyond["meta"]["total"] == 30


def test_list_drafts_of_one_user(
    api: Any, repo: SqlRepository, tenant: Client, user: User, template: Template
) -> None:
    mine = make_draft(repo, tenant, user, template)
    make_draft(repo, tenant, make_user(repo, tenant), template)
    for name in ("user_identifier", "userIdentifier"):
        body = api.get("/api-ext/draft", query_string={name: user.identifier}).get_json()
        assert [d["draftHash"] for d in body["data"]] == [mine.draft_hash]
        assert body["meta"]["total"] == 1


def test_list_drafts_when_there_are_none(api: Any) -> None:
    body = api.get("/api-ext/draft").get_json()
    assert body == {
        "data": [],
        "meta": {"currentPage": 1, "lastPage": 1, "perPage": 25, "total": 0},
    }


# -- show, update, delete -----------------------------------------------------------------


def test_show_draft(api: Any, repo: SqlRepository, tenant: Client) -> None:
    stored = make_draft(repo, tenant)
    draft = one_draft(api.get(f"/api-ext/draft/{stored.draft_hash}"))
    assert draft["draftHash"] == stored.draft_hash
    assert draft["apiDefaultValues"] == stored.api_default_values
    assert draft["customAttributes"] == stored.custom_attributes


def test_update_draft_replaces_only_what_is_sent(
    api: Any, repo: SqlRepository, tenant: Client
) -> None:
    stored = make_draft(
        repo, tenant, api_default_values={"Name": "Ada"}, custom_attributes={"o": "1"}
    )
    draft = one_draft(
        api.put(f"/api-ext/draft/{stored.draft_hash}", json={"apiDefaultValues": {"City": "X"}})
    )
    assert draft["apiDefaultValues"] == {"City": "X"}
    assert draft["customAttributes"] == {"o": "1"}
    # the edit counter is the draft's own, no longer shown as a variant version (issue 13)
    assert repo.get_draft(tenant.identifier, stored.draft_hash).version == stored.version + 1

    draft = one_draft(
        api.put(f"/api-ext/draft/{stored.draft_hash}", data={"customAttributes[o]": "2"})
    )
    assert draft["customAttributes"] == {"o": "2"}
    assert draft["apiDefaultValues"] == {"City": "X"}
    after = repo.get_draft(tenant.identifier, stored.draft_hash)
    assert after is not None
    assert after.api_default_values == {"City": "X"} and after.custom_attributes == {"o": "2"}


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"data": b"[]", "content_type": "application/json"}, {"json": {"apiDefaultValues": None}}],
    ids=["no-body", "php-empty", "null"],
)
def test_update_draft_without_changes(
    api: Any, repo: SqlRepository, tenant: Client, kwargs: dict[str, Any]
) -> None:
    stored = make_draft(repo, tenant)
    draft = one_draft(api.put(f"/api-ext/draft/{stored.draft_hash}", **kwargs))
    assert draft["apiDefaultValues"] == stored.api_default_values
    assert draft["customAttributes"] == stored.custom_attributes


def test_delete_draft(api: Any, repo: SqlRepository, tenant: Client) -> None:
    stored = make_draft(repo, tenant)
    response = api.delete(f"/api-ext/draft/{stored.draft_hash}")
    assert response.status_code == 204
    assert response.get_data() == b""
    assert "Content-Type" not in response.headers  # nothing to describe
    assert repo.get_draft(tenant.identifier, stored.draft_hash) is None
    assert_error(api.get(f"/api-ext/draft/{stored.draft_hash}"), 404)
    assert_error(api.delete(f"/api-ext/draft/{stored.draft_hash}"), 404)


# -- replicate ----------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_replicate_draft(api: Any, repo: SqlRepository, tenant: Client, method: str) -> None:
    stored = make_draft(repo, tenant, api_default_values={"Name": "Ada"})
    before = counts(repo)
    draft = one_draft(api.request(method, f"/api-ext/draft/{stored.draft_hash}/replicate"))
    assert draft["draftHash"] != stored.draft_hash
    assert draft["userIdentifier"] == stored.user_identifier
    assert draft["templateIdentifier"] == stored.template_identifier
    assert draft["apiDefaultValues"] == {"Name": "Ada"}
    assert draft["customAttributes"] == stored.custom_attributes
    assert counts(repo)["drafts"] == before["drafts"] + 1
    assert repo.get_draft(tenant.identifier, stored.draft_hash) == stored
    assert repo.get_draft(tenant.identifier, draft["draftHash"]) is not None


def test_head_on_replicate_is_405_and_copies_nothing(
    api: Any, repo: SqlRepository, tenant: Client
) -> None:
    """Flask answers HEAD with the GET view; here GET writes, so a probe must not."""
    stored = make_draft(repo, tenant)
    before = counts(repo)
    response = api.request("HEAD", f"/api-ext/draft/{stored.draft_hash}/replicate")
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET, OPTIONS, POST"
    assert counts(repo) == before
    # Nor does any answer of the route advertise HEAD.
    options = api.request("OPTIONS", f"/api-ext/draft/{stored.draft_hash}/replicate")
    assert sorted(options.headers["Allow"].split(", ")) == ["GET", "OPTIONS", "POST"]
    wrong = api.request("PUT", f"/api-ext/draft/{stored.draft_hash}/replicate")
    assert wrong.status_code == 405 and wrong.headers["Allow"] == "GET, OPTIONS, POST"


# -- claim --------------------------------------------------------------------------------


def test_claim_dry_run_changes_nothing(api: Any, repo: SqlRepository, tenant: Client) -> None:
    owner = make_user(repo, tenant)
    claimer = make_user(repo, tenant)
    drafts = [make_draft(repo, tenant, owner).draft_hash for _ in range(2)]
    before = snapshot(repo)
    response = api.post(
        "/api-ext/draft/claim",
        json={"user_identifier": claimer.identifier, "drafts": drafts, "dryRun": True},
    )
    assert response.status_code == 200
    assert response.get_json() == dict.fromkeys(drafts, True)
    assert snapshot(repo) == before


def test_claim_moves_drafts(api: Any, repo: SqlRepository, tenant: Client) -> None:
    owner = make_user(repo, tenant)
    claimer = make_user(repo, tenant)
    drafts = [make_draft(repo, tenant, owner).draft_hash for _ in range(2)]
    response = api.post(
        "/api-ext/draft/claim",
        json={"userIdentifier": claimer.identifier, "drafts": [*drafts, "unknown"]},
    )
    assert response.status_code == 200
    assert response.get_json() == {drafts[0]: True, drafts[1]: True, "unknown": False}
    for draft_hash in drafts:
        stored = repo.get_draft(tenant.identifier, draft_hash)
        assert stored is not None and stored.user_identifier == claimer.identifier


@pytest.mark.parametrize("dry_run", ["1", "true", "0", "false"])
def test_claim_with_form_fields(
    api: Any, repo: SqlRepository, tenant: Client, dry_run: str
) -> None:
    owner = make_user(repo, tenant)
    claimer = make_user(repo, tenant)
    drafts = [make_draft(repo, tenant, owner).draft_hash for _ in range(2)]
    response = api.post(
        "/api-ext/draft/claim",
        data={"user_identifier": claimer.identifier, "drafts[]": drafts, "dryRun": dry_run},
    )
    assert response.status_code == 200
    assert response.get_json() == dict.fromkeys(drafts, True)
    expected_owner = owner if dry_run in ("1", "true") else claimer
    for draft_hash in drafts:
        stored = repo.get_draft(tenant.identifier, draft_hash)
        assert stored is not None and stored.user_identifier == expected_owner.identifier


def test_claim_nothing(api: Any, repo: SqlRepository, tenant: Client) -> None:
    claimer = make_user(repo, tenant)
    response = api.post(
        "/api-ext/draft/claim", json={"user_identifier": claimer.identifier, "drafts": []}
    )
    assert response.status_code == 200
    assert response.get_json() == {}


def test_claim_for_an_unknown_user(api: Any, repo: SqlRepository, tenant: Client) -> None:
    draft = make_draft(repo, tenant)
    before = snapshot(repo)
    response = api.post(
        "/api-ext/draft/claim",
        json={"user_identifier": "nobody01", "drafts": [draft.draft_hash]},
    )
    assert_error(response, 422, "user_identifier")  # named as sent (issue 13)
    assert snapshot(repo) == before


def test_claim_needs_user_and_drafts(api: Any, repo: SqlRepository) -> None:
    before = snapshot(repo)
    assert_error(api.post("/api-ext/draft/claim"), 422, "userIdentifier", "drafts")
    assert snapshot(repo) == before
