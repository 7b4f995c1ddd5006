"""User groups: ``/api-ext/user-group``, users and drafts in a group, and what a group grants
(the list and claim filters, the editor). Shaped as the PHP SDK sends the calls."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from api_support import snapshot
from flask.testing import FlaskClient
from joserfc import jwt
from joserfc.jwk import OctKey
from joserfc.jws import JWSRegistry

from pps.platform.models import Client, Template, User
from pps.platform.repository.sql import SqlRepository

GROUP_ID = r"^[A-Za-z0-9]{8}$"


@pytest.fixture
def template(repo: SqlRepository, tenant: Client) -> Template:
    return repo.create_template(
        tenant.identifier,
        name="Card",
        data_keys=["name"],
        custom_attributes={},
        page_count=1,
        spec={"name": "Card", "dataKeys": ["name"], "pageCount": 1},
    )


def new_group(api: Any) -> str:
    """printformer-php-sdk tests/Client/UserGroup/ClientTest.php: POST user-group, no body."""
    response = api.post("/api-ext/user-group")
    assert response.status_code == 201
    data = response.get_json()["data"]
    assert set(data) == {"identifier"} and isinstance(data["identifier"], str)
    return data["identifier"]  # type: ignore[no-any-return]


def new_user(api: Any, **fields: Any) -> dict[str, Any]:
    response = api.post("/api-ext/user", json=fields)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["data"]  # type: ignore[no-any-return]


def new_draft(api: Any, user: str, template: Template, **options: Any) -> dict[str, Any]:
    response = api.post(
        "/api-ext/draft",
        json={"user_identifier": user, "templateIdentifier": template.identifier, **options},
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()["data"]  # type: ignore[no-any-return]


def test_create_and_show_as_the_sdk_does(api: Any, other_api: Any) -> None:
    """tests/Client/UserGroup/ClientTest.php: create() then show('<id>'), `data` wrapper."""
    import re

    group = new_group(api)
    assert re.fullmatch(GROUP_ID, group)
    shown = api.get(f"/api-ext/user-group/{group}")
    assert shown.status_code == 200 and shown.get_json() == {"data": {"identifier": group}}
    # Another client's group does not exist for this one.
    missing = other_api.get(f"/api-ext/user-group/{group}")
    assert missing.status_code == 404 and missing.get_json()["message"]
    assert api.get("/api-ext/user-group/nope1234").status_code == 404


def test_users_and_their_new_drafts_belong_to_the_group(api: Any, template: Template) -> None:
    group = new_group(api)
    member = new_user(api, firstName="Ada", userGroupIdentifier=group)
    assert member["userGroupIdentifier"] == group
    loner = new_user(api)
    assert loner["userGroupIdentifier"] is None
    draft = new_draft(api, member["identifier"], template)
    assert draft["userGroupIdentifier"] == group  # the user's group by default
    assert new_draft(api, loner["identifier"], template)["userGroupIdentifier"] is None
    named = new_draft(api, loner["identifier"], template, userGroupIdentifier=group)
    assert named["userGroupIdentifier"] == group

    out = api.put(f"/api-ext/draft/{named['draftHash']}", json={"userGroupIdentifier": ""})
    assert out.get_json()["data"]["userGroupIdentifier"] is None
    left = api.put(f"/api-ext/user/{member['identifier']}", json={"userGroupIdentifier": None})
    assert left.get_json()["data"]["userGroupIdentifier"] is None


def test_a_group_of_another_client_is_422_and_nothing_is_written(
    api: Any, other_api: Any, repo: SqlRepository, tenant: Client, template: Template
) -> None:
    foreign = new_group(other_api)
    user = new_user(api)
    before = snapshot(repo)
    for response in (
        api.post("/api-ext/user", json={"userGroupIdentifier": foreign}),
        api.put(f"/api-ext/user/{user['identifier']}", json={"userGroupIdentifier": foreign}),
        api.post(
            "/api-ext/draft",
            json={
                "user_identifier": user["identifier"],
                "templateIdentifier": template.identifier,
                "userGroupIdentifier": foreign,
            },
        ),
    ):
        assert response.status_code == 422
        assert response.get_json()["errors"]["userGroupIdentifier"]
    assert snapshot(repo) == before


def test_the_group_filter_lists_the_groups_drafts(api: Any, template: Template) -> None:
    group = new_group(api)
    ada = new_user(api, userGroupIdentifier=group)["identifier"]
    bob = new_user(api, userGroupIdentifier=group)["identifier"]
    eve = new_user(api)["identifier"]
    mine = {new_draft(api, ada, template)["draftHash"], new_draft(api, bob, template)["draftHash"]}
    new_draft(api, eve, template)
    listed = api.get(f"/api-ext/draft?userGroupIdentifier={group}&per_page=25").get_json()
    assert {draft["draftHash"] for draft in listed["data"]} == mine
    assert listed["meta"]["total"] == 2
    only_bob = api.get(f"/api-ext/draft?userGroupIdentifier={group}&user_identifier={bob}")
    assert [d["userIdentifier"] for d in only_bob.get_json()["data"]] == [bob]


def test_claim_within_a_group_moves_only_the_groups_drafts(
    api: Any, repo: SqlRepository, tenant: Client, template: Template
) -> None:
    """DraftClient::claim sends user_identifier, drafts, dryRun; a group narrows it."""
    group = new_group(api)
    ada = new_user(api, userGroupIdentifier=group)["identifier"]
    bob = new_user(api, userGroupIdentifier=group)["identifier"]
    eve = new_user(api)["identifier"]
    shared = new_draft(api, ada, template)["draftHash"]
    private = new_draft(api, eve, template)["draftHash"]
    body = {"user_identifier": bob, "drafts": [shared, private], "dryRun": False}
    result = api.post("/api-ext/draft/claim", json={**body, "userGroupIdentifier": group})
    assert result.get_json() == {shared: True, private: False}
    moved = repo.get_draft(tenant.identifier, shared)
    kept = repo.get_draft(tenant.identifier, private)
    assert moved is not None and moved.user_identifier == bob
    assert kept is not None and kept.user_identifier == eve

    outsider = {"user_identifier": eve, "drafts": [shared], "userGroupIdentifier": group}
    refused = api.post("/api-ext/draft/claim", json=outsider)
    assert refused.status_code == 422 and refused.get_json()["errors"]["user_identifier"]


def log_in(client: FlaskClient, tenant: Client, user: str) -> None:
    claims = {"client": tenant.identifier, "user": user, "iat": round(time.time(), 6)}
    header = {"alg": "HS256", "typ": "JWT", "jti": uuid.uuid4().hex}
    registry = JWSRegistry(algorithms=["HS256"], strict_check_header=False)
    token = jwt.encode(header, claims, OctKey.import_key(tenant.api_key), registry=registry)
    assert client.get("/auth", query_string={"jwt": token}).status_code in (200, 302)


def test_members_open_each_others_drafts_in_the_editor(
    client: FlaskClient, api: Any, tenant: Client, template: Template, repo: SqlRepository
) -> None:
    group = new_group(api)
    ada = new_user(api, userGroupIdentifier=group)["identifier"]
    bob = new_user(api, userGroupIdentifier=group)["identifier"]
    eve = new_user(api)["identifier"]
    draft = new_draft(api, ada, template)["draftHash"]
    log_in(client, tenant, bob)
    assert client.get(f"/editor/{draft}/edit").status_code == 200
    log_in(client, tenant, eve)
    assert client.get(f"/editor/{draft}/edit").status_code == 401
    user: User | None = repo.get_user(tenant.identifier, bob)
    assert user is not None and user.user_group_identifier == group
