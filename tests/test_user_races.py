"""Drafts created for a user while the user is merged into another.

A create that answers 201 made a draft that exists afterwards: it was made before the
merge (and moved to the target) or the merge came first (and the create is a 422, the user
being gone). On PostgreSQL the foreign key check of the draft's INSERT takes only a KEY
SHARE lock on the user's row, which the merge's lock did not block: a draft inserted
between the merge's move of the drafts and its delete of the source was deleted by the
cascade after its create had answered 201. Real SQLite and PostgreSQL, real threads.
"""

from __future__ import annotations

from typing import Any

from api_support import make_template, make_user
from conftest import ApiClient
from flask import Flask
from race_support import briefly, hold_then_race

from pps.platform.models import Client
from pps.platform.repository.sql import SqlRepository


def test_a_draft_created_for_the_source_of_a_merge_is_moved_or_refused(
    app: Flask, repo: SqlRepository, tenant: Client
) -> None:
    template = make_template(repo, tenant, "TPLrace1")
    target = make_user(repo, tenant, first_name="Target")
    source = make_user(repo, tenant, first_name="Source")
    answers: dict[str, Any] = {}

    def merge() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        path = f"/api-ext/user/{target.identifier}/merge"
        body = {"sourceUserIdentifier": source.identifier}
        answers["merge"] = mine.post(path, json=body).status_code

    def create() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        body = {"templateIdentifier": template.identifier, "user_identifier": source.identifier}
        response = mine.post("/api-ext/draft", json=body)
        answers["create"] = (response.status_code, response.get_json())

    # Held with the source's drafts moved, the source not yet deleted; the create is done
    # at once meanwhile, or waits for the merge's locks.
    hold_then_race(repo, merge, "DELETE FROM USERS", create, wait=briefly)
    assert answers["merge"] == 200
    status, body = answers["create"]
    assert status in (201, 422), body
    if status == 201:
        draft = repo.get_draft(tenant.identifier, body["data"]["draftHash"])
        assert draft is not None, "the create answered 201 for a draft that is gone"
        assert draft.user_identifier == target.identifier
    assert repo.get_user(tenant.identifier, source.identifier) is None
