"""Drafts created for a user while the user is merged into another.

A create that answers 201 made a draft that exists afterwards: it was made before the
merge (and moved to the target) or the merge came first (and the create is a 422, the user
being gone). On PostgreSQL the foreign key check of the draft's INSERT takes only a KEY
SHARE lock on the user's row, which the merge's lock did not block: a draft inserted
between the merge's move of the drafts and its delete of the source was deleted by the
cascade after its create had answered 201. Real SQLite and PostgreSQL, real threads.
"""

from __future__ import annotations

import threading
from typing import Any

import sqlalchemy as sa
from api_support import make_template, make_user
from conftest import ApiClient
from flask import Flask

from pps.platform.models import Client
from pps.platform.repository.sql import SqlRepository


def held_before(repo: SqlRepository, prefix: str, thread: list[threading.Thread]) -> Any:
    """A cursor hook that holds ``thread[0]`` just before its first statement starting with
    ``prefix``, until ``resume`` is set; ``(hook, held, resume)``."""
    held, resume = threading.Event(), threading.Event()

    def hold(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        mine = threading.current_thread() is thread[0]
        if mine and statement.lstrip().upper().startswith(prefix) and not held.is_set():
            held.set()
            assert resume.wait(30)

    return hold, held, resume


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

    merger: list[threading.Thread] = [threading.Thread(target=merge)]
    hook, held, resume = held_before(repo, "DELETE FROM USERS", merger)
    creator = threading.Thread(target=create)
    sa.event.listen(repo.engine, "before_cursor_execute", hook)
    try:
        merger[0].start()
        assert held.wait(30)  # the source's drafts are moved, the source not yet deleted
        creator.start()
        # Done at once, or waiting for the merge's locks: less than the 2 s statement timeout
        # of the default PPS_DATABASE_TIMEOUT, which would answer the wait with a 503.
        creator.join(1)
        resume.set()
        merger[0].join(30)
        creator.join(30)
    finally:
        resume.set()
        sa.event.remove(repo.engine, "before_cursor_execute", hook)
    assert answers["merge"] == 200
    status, body = answers["create"]
    assert status in (201, 422), body
    if status == 201:
        draft = repo.get_draft(tenant.identifier, body["data"]["draftHash"])
        assert draft is not None, "the create answered 201 for a draft that is gone"
        assert draft.user_identifier == target.identifier
    assert repo.get_user(tenant.identifier, source.identifier) is None
