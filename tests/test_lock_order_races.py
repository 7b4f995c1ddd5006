"""Requests that take several drafts at once, against each other, on PostgreSQL.

An ``UPDATE`` or ``DELETE`` of several drafts locks them in the order of its plan: a claim
(by hash) in hash order, a delete or a merge of their owner (by user) in the order the rows
lie in the table. When the two orders differed, each held a draft the other waited for,
and PostgreSQL aborted one of them: a 503. Now every transaction that takes several drafts
takes them in hash order first. Each race is pinned: a third request holds the draft both
take first (a variable-data upload, held at its statement), the claim and the change wait
for it, and it lets go. A review's write and a delete of one of its reviewers take the
user, then the review's rows, in one order too. SQLite is not run: its database-wide
write lock serializes writers, so there is no order to get wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from api_support import make_draft, make_user
from conftest import ApiClient
from flask import Flask
from race_support import for_locks, hold_then_race, nth
from vdata_support import card_template

from pps.platform import ids
from pps.platform.models import Client, Draft, Template, User
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import drafts


@pytest.fixture
def database_url(postgres_url: str) -> str:
    return postgres_url


@pytest.fixture
def planned_as_in_production(repo: SqlRepository) -> Iterator[None]:
    """The app's connections plan as on a table of many drafts, by index: a claim by the
    primary key (in hash order), a user's drafts by the index on the user (in the order
    they lie in the table). With the handful of rows of a test PostgreSQL reads the whole
    table, or a claim goes by the client's index (in the order of creation), and both
    orders are one."""

    def by_index(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cursor:
            cursor.execute("SET enable_seqscan = off")
            cursor.execute("SET enable_bitmapscan = off")
        dbapi_connection.commit()

    repo.engine.dispose()
    sa.event.listen(repo.engine, "connect", by_index)
    yield
    sa.event.remove(repo.engine, "connect", by_index)
    repo.engine.dispose()


def many_drafts(repo: SqlRepository, tenant: Client, template: Template) -> None:
    """Drafts of another user of the client, and the statistics that count them: a claim
    of two drafts then goes by their hashes, not by the client (checked here)."""
    now = datetime.now(UTC)
    other = make_user(repo, tenant)
    row = {
        "client_identifier": tenant.identifier,
        "user_identifier": other.identifier,
        "template_identifier": template.identifier,
        "intent": "personalize",
        "state": "init",
        "values": {},
        "api_default_values": {},
        "custom_attributes": {},
        "version": 1,
        "created_at": now,
        "updated_at": now,
    }
    with repo.engine.begin() as conn:
        conn.execute(drafts.insert(), [{**row, "draft_hash": ids.draft_hash()} for _ in range(500)])
    with repo.engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE drafts")
        claim = (
            "EXPLAIN UPDATE drafts SET updated_at = now()"
            " WHERE client_identifier = %(client)s AND draft_hash IN ('a', 'b')"
        )
        found = conn.exec_driver_sql(claim, {"client": tenant.identifier})
        plan = "\n".join(found.scalars())
    assert "pk_drafts" in plan, plan


def card_draft_of(repo: SqlRepository, tenant: Client, owner: User) -> Draft:
    """A draft of the business card for ``owner``, with nothing personalized yet."""
    template = card_template(repo, tenant)
    return make_draft(
        repo,
        tenant,
        owner,
        template,
        intent="personalize",
        api_default_values={},
        custom_attributes={},
    )


def crossed_pair(repo: SqlRepository, tenant: Client, owner: User, template: Template) -> list[str]:
    """Two of ``owner``'s drafts in hash order, the second lying before the first in the
    table: drafts are made until there are such two."""
    while True:
        made = repo.create_draft(
            tenant.identifier,
            user_identifier=owner.identifier,
            template_identifier=template.identifier,
            intent="personalize",
            api_default_values={},
            custom_attributes={},
        )
        assert made is not None
        with repo.engine.connect() as conn:
            laid = list(
                conn.execute(
                    sa.select(drafts.c.draft_hash)
                    .where(drafts.c.user_identifier == owner.identifier)
                    .order_by(sa.literal_column("ctid"))
                ).scalars()
            )
        for index, later in enumerate(laid):
            earlier = [h for h in laid[:index] if h > later]
            if earlier:
                return [later, earlier[0]]


def delete_owner(api: ApiClient, owner: User, _target: User) -> int:
    return int(api.delete(f"/api-ext/user/{owner.identifier}").status_code)


def merge_owner(api: ApiClient, owner: User, target: User) -> int:
    path = f"/api-ext/user/{target.identifier}/merge"
    return int(api.post(path, json={"sourceUserIdentifier": owner.identifier}).status_code)


Change = Callable[[ApiClient, User, User], int]


@pytest.mark.usefixtures("planned_as_in_production")
@pytest.mark.parametrize("change", [delete_owner, merge_owner], ids=["delete", "merge"])
def test_a_claim_and_a_change_of_the_drafts_owner_take_them_in_one_order(
    app: Flask, repo: SqlRepository, tenant: Client, change: Change
) -> None:
    """Both wait for the draft first in hash order. Before, the delete (or merge) of the
    owner took the other draft meanwhile, and once the first was free the claim took it
    and waited for the other: a deadlock, one of them a 503. Now the claim takes both
    first, and the change then applies to the owner's drafts that are left."""
    template = card_template(repo, tenant)
    many_drafts(repo, tenant, template)
    owner, claimer, target = (make_user(repo, tenant) for _ in range(3))
    pair = crossed_pair(repo, tenant, owner, template)
    answers: dict[str, Any] = {}

    def client() -> ApiClient:
        return ApiClient(app.test_client(), tenant.api_key)

    def put_rows() -> None:
        path = f"/api-ext/draft/{pair[0]}/variable-data"
        answers["put"] = client().put(path, json={"data": [{"name": "Ada"}]}).status_code

    def claim() -> None:
        body = {"user_identifier": claimer.identifier, "drafts": pair, "dryRun": False}
        answers["claim"] = client().post("/api-ext/draft/claim", json=body)

    def run_change() -> None:
        answers["change"] = change(client(), owner, target)

    # The upload holds pair[0]; the claim, then the change, wait for it.
    hold_then_race(repo, put_rows, "DELETE FROM VARIABLE_ROWS", claim, run_change, wait=for_locks)
    claimed = answers["claim"]
    assert claimed.status_code == 200, claimed.get_data(as_text=True)
    assert answers["change"] == (204 if change is delete_owner else 200)
    assert answers["put"] == 204
    # Which of the two waiting requests PostgreSQL lets go first is its choice: the claim
    # (then the drafts are the claimer's) or the change (then the claim found them gone,
    # or moved to the merge's target). Either way nothing deadlocked and each answer
    # says what happened.
    outcome = claimed.get_json()
    assert set(outcome) == set(pair)
    for draft_hash, was_claimed in outcome.items():
        draft = repo.get_draft(tenant.identifier, draft_hash)
        if was_claimed:
            assert draft is not None and draft.user_identifier == claimer.identifier
        elif change is delete_owner:
            assert draft is None
        else:
            assert draft is not None and draft.user_identifier == target.identifier
    assert repo.get_user(tenant.identifier, owner.identifier) is None


def test_a_copy_of_rows_and_a_delete_of_their_user_take_the_drafts_in_one_order(
    app: Flask, repo: SqlRepository, tenant: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replicate copies the source's rows to the copy holding both drafts; the delete
    of their user takes them in hash order, the copy (drawn before the source here) first.
    Had the replicate taken the source first, it would wait for the copy the delete holds
    while the delete waits for the source: a deadlock, one of them a 503. It takes them in
    hash order too: the delete waits, and then deletes both."""
    owner = make_user(repo, tenant)
    source = card_draft_of(repo, tenant, owner)
    api = ApiClient(app.test_client(), tenant.api_key)
    rows = {"data": [{"name": "Ada"}, {"name": "Grace"}]}
    assert (
        api.put(f"/api-ext/draft/{source.draft_hash}/variable-data", json=rows).status_code == 204
    )
    copy_hash = "0" * 8 + ids.draft_hash()[8:]
    assert copy_hash < source.draft_hash
    monkeypatch.setattr(ids, "draft_hash", lambda: copy_hash)
    answers: dict[str, Any] = {}

    def replicate() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        answers["replicate"] = mine.post(f"/api-ext/draft/{source.draft_hash}/replicate", json={})

    def delete() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        answers["delete"] = mine.delete(f"/api-ext/user/{owner.identifier}").status_code

    # Held holding one draft, about to lock the other; the delete waits for it.
    locking = nth(2, lambda statement: "FOR UPDATE" in statement)
    hold_then_race(repo, replicate, locking, delete, wait=for_locks)
    assert answers["delete"] == 204
    replicated = answers["replicate"]
    assert replicated.status_code in (200, 201, 404), replicated.get_data(as_text=True)
    assert repo.get_draft(tenant.identifier, source.draft_hash) is None
    assert repo.get_draft(tenant.identifier, copy_hash) is None


def test_a_review_written_while_a_reviewer_is_deleted_is_no_deadlock(
    app: Flask, repo: SqlRepository, tenant: Client
) -> None:
    """Closing a review writes its reviewers' rows anew: the old rows deleted, the new
    ones inserted, each checking its user's foreign key (a KEY SHARE lock on the user).
    The delete of one reviewer locks the user, then deletes their rows and waits for the
    old row the close deleted; the close's insert then waited for the user: a deadlock,
    one of them a 503. Now the write holds its reviewers' users first, so the delete waits
    for it, and then takes the reviewer out of the closed review."""
    draft = card_draft_of(repo, tenant, make_user(repo, tenant))
    reviewer, other = make_user(repo, tenant), make_user(repo, tenant)
    api = ApiClient(app.test_client(), tenant.api_key)
    body = {"draftId": draft.draft_hash, "user": [reviewer.identifier, other.identifier]}
    review_id = api.post("/api-ext/review", json=body).get_json()["data"]["reviewId"]
    answers: dict[str, Any] = {}

    def close() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        answers["close"] = mine.post(f"/api-ext/review/{review_id}/close-review")

    def delete() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        answers["delete"] = mine.delete(f"/api-ext/user/{reviewer.identifier}").status_code

    # Held with the old rows deleted, the new ones not yet written; the delete waits.
    hold_then_race(repo, close, "INSERT INTO REVIEW_USERS", delete, wait=for_locks)
    closed = answers["close"]
    assert closed.status_code == 204, closed.get_data(as_text=True)
    assert answers["delete"] == 204
    stored = app.extensions["pps.reviews"].store.get(tenant.identifier, review_id)
    assert stored.state == "closed"
    assert [r.user_identifier for r in stored.reviewers] == [other.identifier]


def test_a_review_created_while_its_drafts_owner_and_reviewer_is_deleted_is_no_deadlock(
    app: Flask, repo: SqlRepository, tenant: Client
) -> None:
    """The new review's row checks its draft's key (a KEY SHARE lock on the draft), its
    reviewer rows then their users'. The delete of the draft's owner, a reviewer too,
    locks the user, then waits for the draft; the review's reviewer row then waited for
    the user: a deadlock, one of them a 503. Now the review holds its reviewers first: the
    delete waits for it, and then deletes the draft with its review."""
    owner = make_user(repo, tenant)
    draft = card_draft_of(repo, tenant, owner)
    answers: dict[str, Any] = {}

    def create() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        body = {"draftId": draft.draft_hash, "user": [owner.identifier]}
        answers["create"] = mine.post("/api-ext/review", json=body)

    def delete() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        answers["delete"] = mine.delete(f"/api-ext/user/{owner.identifier}").status_code

    # Held with the review's row written, its reviewer's not yet; the delete waits.
    hold_then_race(repo, create, "INSERT INTO REVIEW_USERS", delete, wait=for_locks)
    created = answers["create"]
    assert created.status_code == 201, created.get_data(as_text=True)
    assert answers["delete"] == 204
    review_id = created.get_json()["data"]["reviewId"]
    assert app.extensions["pps.reviews"].store.get(tenant.identifier, review_id) is None
