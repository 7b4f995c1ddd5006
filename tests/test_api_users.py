"""``/api-ext/user`` as a shop calls it: JSON, form fields, no body, PHP's ``[]``."""

from __future__ import annotations

from typing import Any

import pytest
from api_support import USER_ID, assert_error, counts, make_draft, make_template, make_user

from pps.platform.models import Client
from pps.platform.repository.sql import SqlRepository

USER_KEYS = {"identifier", "locale", "profile", "customAttributes", "userGroupIdentifier"}
PROFILE_KEYS = {"salutation", "title", "firstName", "lastName", "email"}


def assert_user(body: dict[str, Any]) -> dict[str, Any]:
    assert set(body) == {"data"}
    user = body["data"]
    assert set(user) == USER_KEYS
    assert set(user["profile"]) == PROFILE_KEYS
    assert isinstance(user["identifier"], str) and USER_ID.match(user["identifier"])
    assert isinstance(user["customAttributes"], dict)
    return user  # type: ignore[no-any-return]


# -- create -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"data": b"", "content_type": "application/json"},
        {"data": b"  \n", "content_type": "application/json"},
        {"data": b"[]", "content_type": "application/json"},
        {"json": {}},
        {"data": b"", "content_type": "application/x-www-form-urlencoded"},
    ],
    ids=["no-body", "empty-json", "blank-json", "php-empty-array", "empty-object", "empty-form"],
)
def test_create_user_without_fields(
    api: Any, repo: SqlRepository, tenant: Client, kwargs: dict[str, Any]
) -> None:
    before = counts(repo)
    response = api.post("/api-ext/user", **kwargs)
    assert response.status_code == 201
    user = assert_user(response.get_json())
    assert user["profile"] == dict.fromkeys(PROFILE_KEYS)
    assert user["locale"] is None
    assert user["customAttributes"] == {}
    assert counts(repo)["users"] == before["users"] + 1
    stored = repo.get_user(tenant.identifier, user["identifier"])
    assert stored is not None and stored.client_identifier == tenant.identifier


FULL = {
    "email": "ada@example.com",
    "title": "Countess",
    "salutation": "Ms",
    "locale": "en_GB",
    "customAttributes": {"tier": "gold", "points": 12},
}


@pytest.mark.parametrize("spelling", ["camel", "snake"])
def test_create_user_with_json_fields(
    api: Any, repo: SqlRepository, tenant: Client, spelling: str
) -> None:
    names = (
        {"firstName": "Ada", "lastName": "Lovelace"}
        if spelling == "camel"
        else {"first_name": "Ada", "last_name": "Lovelace"}
    )
    response = api.post("/api-ext/user", json={**FULL, **names, "unknownExtra": 1})
    assert response.status_code == 201
    user = assert_user(response.get_json())
    assert user["profile"] == {
        "salutation": "Ms",
        "title": "Countess",
        "firstName": "Ada",
        "lastName": "Lovelace",
        "email": "ada@example.com",
    }
    assert user["locale"] == "en_GB"
    assert user["customAttributes"] == {"tier": "gold", "points": 12}
    stored = repo.get_user(tenant.identifier, user["identifier"])
    assert stored is not None and stored.first_name == "Ada" and stored.last_name == "Lovelace"


def test_camel_case_wins_when_both_spellings_are_sent(api: Any) -> None:
    response = api.post("/api-ext/user", json={"first_name": "snake", "firstName": "camel"})
    assert response.status_code == 201
    assert response.get_json()["data"]["profile"]["firstName"] == "camel"


def test_create_user_with_form_fields(api: Any) -> None:
    response = api.post(
        "/api-ext/user",
        data={
            "first_name": "Ada",
            "lastName": "Lovelace",
            "email": "ada@example.com",
            "customAttributes[tier]": "gold",
        },
    )
    assert response.status_code == 201
    user = assert_user(response.get_json())
    assert user["profile"]["firstName"] == "Ada"
    assert user["profile"]["lastName"] == "Lovelace"
    assert user["customAttributes"] == {"tier": "gold"}


def test_create_user_with_php_empty_custom_attributes(api: Any) -> None:
    response = api.post("/api-ext/user", json={"firstName": "Ada", "customAttributes": []})
    assert response.status_code == 201
    assert response.get_json()["data"]["customAttributes"] == {}


# -- show, update, delete -----------------------------------------------------------------


def test_show_user(api: Any, repo: SqlRepository, tenant: Client) -> None:
    stored = make_user(repo, tenant, first_name="Ada", custom_attributes={"a": 1})
    response = api.get(f"/api-ext/user/{stored.identifier}")
    assert response.status_code == 200
    user = assert_user(response.get_json())
    assert user["identifier"] == stored.identifier
    assert user["profile"]["firstName"] == "Ada"
    assert user["customAttributes"] == {"a": 1}


def test_update_user_changes_only_the_fields_sent(
    api: Any, repo: SqlRepository, tenant: Client
) -> None:
    stored = make_user(repo, tenant, first_name="Ada", last_name="Byron", email="a@example.com")
    response = api.put(
        f"/api-ext/user/{stored.identifier}", json={"last_name": "Lovelace", "locale": "de"}
    )
    assert response.status_code == 200
    user = assert_user(response.get_json())
    assert user["profile"]["firstName"] == "Ada"
    assert user["profile"]["lastName"] == "Lovelace"
    assert user["profile"]["email"] == "a@example.com"
    assert user["locale"] == "de"
    after = repo.get_user(tenant.identifier, stored.identifier)
    assert after is not None and after.last_name == "Lovelace" and after.first_name == "Ada"


def test_update_user_with_form_and_empty_email(
    api: Any, repo: SqlRepository, tenant: Client
) -> None:
    stored = make_user(repo, tenant, email="a@example.com")
    response = api.put(f"/api-ext/user/{stored.identifier}", data={"email": "", "title": "Dr"})
    assert response.status_code == 200
    profile = response.get_json()["data"]["profile"]
    assert profile["email"] is None
    assert profile["title"] == "Dr"


def test_update_user_with_empty_body_changes_nothing_visible(
    api: Any, repo: SqlRepository, tenant: Client
) -> None:
    stored = make_user(repo, tenant, first_name="Ada")
    response = api.put(
        f"/api-ext/user/{stored.identifier}", data=b"[]", content_type="application/json"
    )
    assert response.status_code == 200
    assert response.get_json()["data"]["profile"]["firstName"] == "Ada"


def test_delete_user_is_204_and_deletes_drafts(
    api: Any, repo: SqlRepository, tenant: Client
) -> None:
    user = make_user(repo, tenant)
    drafts = [make_draft(repo, tenant, user) for _ in range(2)]
    response = api.delete(f"/api-ext/user/{user.identifier}")
    assert response.status_code == 204
    assert response.get_data() == b""
    assert "Content-Type" not in response.headers  # nothing to describe
    assert repo.get_user(tenant.identifier, user.identifier) is None
    for draft in drafts:
        assert repo.get_draft(tenant.identifier, draft.draft_hash) is None
    assert_error(api.get(f"/api-ext/user/{user.identifier}"), 404)
    assert_error(api.delete(f"/api-ext/user/{user.identifier}"), 404)


# -- merge --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "encode",
    [
        lambda source: {"json": {"source_user_identifier": source}},
        lambda source: {"json": {"sourceUserIdentifier": source}},
        lambda source: {"data": {"source_user_identifier": source}},
    ],
    ids=["json-snake", "json-camel", "form"],
)
def test_merge_users(api: Any, repo: SqlRepository, tenant: Client, encode: Any) -> None:
    target = make_user(repo, tenant)
    source = make_user(repo, tenant)
    template = make_template(repo, tenant)
    own = make_draft(repo, tenant, target, template)
    moved = [make_draft(repo, tenant, source, template) for _ in range(2)]

    response = api.post(f"/api-ext/user/{target.identifier}/merge", **encode(source.identifier))

    assert response.status_code == 200
    assert response.get_json() == {"success": True}
    assert repo.get_user(tenant.identifier, source.identifier) is None
    for draft in [own, *moved]:
        now = repo.get_draft(tenant.identifier, draft.draft_hash)
        assert now is not None and now.user_identifier == target.identifier
    assert_error(api.get(f"/api-ext/user/{source.identifier}"), 404)


def test_merge_into_itself_is_refused(api: Any, repo: SqlRepository, tenant: Client) -> None:
    user = make_user(repo, tenant)
    before = counts(repo)
    response = api.post(
        f"/api-ext/user/{user.identifier}/merge", json={"source_user_identifier": user.identifier}
    )
    assert_error(response, 422, "source_user_identifier")  # named as sent (issue 13)
    assert counts(repo) == before


def test_merge_without_a_source_is_refused(api: Any, repo: SqlRepository, tenant: Client) -> None:
    user = make_user(repo, tenant)
    before = counts(repo)
    assert_error(api.post(f"/api-ext/user/{user.identifier}/merge"), 422, "sourceUserIdentifier")
    assert counts(repo) == before


def test_merge_with_unknown_users_is_404(api: Any, repo: SqlRepository, tenant: Client) -> None:
    user = make_user(repo, tenant)
    make_draft(repo, tenant, user)
    before = counts(repo)
    response = api.post(
        "/api-ext/user/nobody00/merge", json={"source_user_identifier": user.identifier}
    )
    assert_error(response, 404)
    response = api.post(
        f"/api-ext/user/{user.identifier}/merge", json={"source_user_identifier": "nobody00"}
    )
    assert_error(response, 404)
    assert counts(repo) == before


def test_the_reference_says_email_is_an_address_or_empty(api: Any) -> None:
    """``email`` is checked as an address (``""`` clears it): the reference said only "a
    string of at most 320 characters", so a client reading it could send one that is a 422."""
    reference = api.get("/openapi.json").get_json()
    email = reference["components"]["schemas"]["UserInput"]["properties"]["email"]
    assert email["anyOf"] == [{"format": "email"}, {"enum": [""]}]
    assert email["maxLength"] == 320 and email["nullable"] is True
    assert api.post("/api-ext/user", json={"email": ""}).status_code == 201
    assert api.post("/api-ext/user", json={"email": "ada@example.com"}).status_code == 201
    assert_error(api.post("/api-ext/user", json={"email": "\u00fd\u00af"}), 422, "email")
