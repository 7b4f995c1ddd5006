"""Reviews against a delete that lands between the service's checks and its write.

A shop may delete a draft or a user while another of its requests creates or changes a
review of them. The foreign keys then refuse the write; that must read as the draft or user
being gone (404 / 422, nothing written), or as a retry on what is stored now, never a 500.
Each race is pinned by letting one check see the world as it was just before the delete.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from api_support import assert_error
from conftest import ApiClient
from flask import Flask
from processing_support import card_draft, card_template

from pps.platform.models import Client, Draft, User
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import review_users, reviews


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client) -> Draft:
    return card_draft(repo, tenant, card_template(repo, tenant), "Ada Lovelace")


@pytest.fixture
def reviewer(repo: SqlRepository, tenant: Client) -> User:
    return repo.create_user(tenant.identifier, {})


def stale_once(monkeypatch: pytest.MonkeyPatch, target: Any, name: str, answer: Any) -> None:
    """``target.name`` answers ``answer`` once (the world before the delete), then as it is."""
    real: Callable[..., Any] = getattr(target, name)
    calls = {"n": 0}

    def first_stale(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        return answer if calls["n"] == 1 else real(*args, **kwargs)

    monkeypatch.setattr(target, name, first_stale)


def review_rows(repo: SqlRepository, client: Client) -> tuple[int, int]:
    """The client's reviews and reviewer rows (the PostgreSQL database is the run's)."""
    ids = sa.select(reviews.c.review_id).where(reviews.c.client_identifier == client.identifier)
    with repo.engine.connect() as conn:
        count = sa.select(sa.func.count())
        return (
            int(conn.execute(count.select_from(ids.subquery())).scalar_one()),
            int(
                conn.execute(
                    count.select_from(review_users).where(review_users.c.review_id.in_(ids))
                ).scalar_one()
            ),
        )


def test_a_draft_deleted_after_the_check_is_404_and_no_review(
    api: ApiClient,
    repo: SqlRepository,
    tenant: Client,
    draft: Draft,
    reviewer: User,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ref = repo.get_draft_ref(tenant.identifier, draft.draft_hash)
    assert repo.delete_draft(tenant.identifier, draft.draft_hash)
    stale_once(monkeypatch, repo, "get_draft_ref", ref)
    response = api.post(
        "/api-ext/review", json={"draftId": draft.draft_hash, "user": [reviewer.identifier]}
    )
    body = assert_error(response, 404)
    assert body["message"] == "No draft with this hash exists for this client."
    assert review_rows(repo, tenant) == (0, 0)


def test_a_reviewer_deleted_after_the_check_is_422_naming_user(
    api: ApiClient,
    repo: SqlRepository,
    tenant: Client,
    draft: Draft,
    reviewer: User,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert repo.delete_user(tenant.identifier, reviewer.identifier)
    stale_once(monkeypatch, repo, "user_exists", True)
    response = api.post(
        "/api-ext/review", json={"draftId": draft.draft_hash, "user": [reviewer.identifier]}
    )
    assert_error(response, 422, "user")
    assert review_rows(repo, tenant) == (0, 0)


def test_adding_a_user_deleted_after_the_check_is_422(
    api: ApiClient,
    repo: SqlRepository,
    tenant: Client,
    draft: Draft,
    reviewer: User,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    created = api.post("/api-ext/review", json={"draftId": draft.draft_hash, "user": []})
    review_id = created.get_json()["data"]["reviewId"]
    assert repo.delete_user(tenant.identifier, reviewer.identifier)
    stale_once(monkeypatch, repo, "user_exists", True)
    response = api.post(
        f"/api-ext/review/{review_id}/add-user", json={"userIdentifier": reviewer.identifier}
    )
    assert_error(response, 422, "userIdentifier")
    assert review_rows(repo, tenant) == (1, 0)


def test_a_change_after_a_reviewer_was_deleted_applies_to_what_is_stored(
    app: Flask,
    api: ApiClient,
    repo: SqlRepository,
    tenant: Client,
    draft: Draft,
    reviewer: User,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The review is read with its reviewer, the reviewer is deleted (their row goes with
    them), then the review is closed: written again without them, not a 500."""
    other = repo.create_user(tenant.identifier, {})
    created = api.post(
        "/api-ext/review",
        json={"draftId": draft.draft_hash, "user": [reviewer.identifier, other.identifier]},
    )
    review_id = created.get_json()["data"]["reviewId"]
    store = app.extensions["pps.reviews"].store
    before = store.get(tenant.identifier, review_id)
    assert repo.delete_user(tenant.identifier, reviewer.identifier)
    stale_once(monkeypatch, store, "get", before)
    response = api.post(f"/api-ext/review/{review_id}/close-review")
    assert response.status_code == 204, response.get_data(as_text=True)
    closed = store.get(tenant.identifier, review_id)
    assert closed.state == "closed"
    assert [r.user_identifier for r in closed.reviewers] == [other.identifier]
