"""A claim within a user group while the claiming user leaves the group.

``POST /api-ext/draft/claim`` with ``userGroupIdentifier`` gives the group's drafts only to
a member. The membership was checked before the claim's transaction: a user moved to
another group, taken out of it, deleted or merged into another user between the check and
the claim still received the group's drafts. Now the claim checks the membership after it
holds the user, so it sees every change made before and holds off every change after:
the racing claim is the documented 422 with nothing changed, or it came first and the
change then applies. Each race is pinned: the claim is held just before it locks the
user (or just after), and the change runs meanwhile. Real SQLite and PostgreSQL, real
threads.

A ``PUT /api-ext/draft/<hash>`` that moves the claimed draft to another group at the same
moment (on PostgreSQL, where the two can interleave; SQLite's write lock runs one writer
after the other): whichever takes the draft's row first goes first, the other waits for
it or sees what it wrote. Each answer then says what became of the draft: the claim's
true exactly when the draft is the member's, the PUT's the owner and group stored, and
neither write is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from api_support import assert_error, make_template, make_user
from conftest import ApiClient
from flask import Flask
from race_support import briefly, for_locks, hold_then_race, to_the_end

from pps.platform.models import Client
from pps.platform.repository.sql import SqlRepository

NOT_A_MEMBER = "The user is not a member of this user group."
NO_USER = "No user with this identifier exists for this client."


class Groups:
    """Two groups of the tenant; in the first a draft of its owner and a member to claim
    it; a user of no group."""

    def __init__(self, api: ApiClient, repo: SqlRepository, tenant: Client) -> None:
        self.group = api.post("/api-ext/user-group").get_json()["data"]["identifier"]
        self.other = api.post("/api-ext/user-group").get_json()["data"]["identifier"]
        self.owner = make_user(repo, tenant, user_group_identifier=self.group)
        self.member = make_user(repo, tenant, user_group_identifier=self.group)
        self.outsider = make_user(repo, tenant)
        template = make_template(repo, tenant, "TPLclaim")
        draft = repo.create_draft(
            tenant.identifier,
            user_identifier=self.owner.identifier,
            template_identifier=template.identifier,
            intent="customize",
            api_default_values={},
            custom_attributes={},
            user_group_identifier=self.group,
        )
        assert draft is not None
        self.draft = draft

    def claim_body(self) -> dict[str, Any]:
        return {
            "user_identifier": self.member.identifier,
            "drafts": [self.draft.draft_hash],
            "dryRun": False,
            "userGroupIdentifier": self.group,
        }


def move_to_other(api: ApiClient, groups: Groups) -> int:
    path = f"/api-ext/user/{groups.member.identifier}"
    return int(api.put(path, json={"userGroupIdentifier": groups.other}).status_code)


def take_out(api: ApiClient, groups: Groups) -> int:
    path = f"/api-ext/user/{groups.member.identifier}"
    return int(api.put(path, json={"userGroupIdentifier": ""}).status_code)


def delete(api: ApiClient, groups: Groups) -> int:
    return int(api.delete(f"/api-ext/user/{groups.member.identifier}").status_code)


def merge_away(api: ApiClient, groups: Groups) -> int:
    path = f"/api-ext/user/{groups.outsider.identifier}/merge"
    return int(api.post(path, json={"sourceUserIdentifier": groups.member.identifier}).status_code)


Change = Callable[[ApiClient, Groups], int]

#: Each way the API lets a user stop being a member: the change, its status, and the
#: claim's message when the change came first.
CHANGES: dict[str, tuple[Change, int, str]] = {
    "moved to another group": (move_to_other, 200, NOT_A_MEMBER),
    "taken out of the group": (take_out, 200, NOT_A_MEMBER),
    "deleted": (delete, 204, NO_USER),
    "merged into another user": (merge_away, 200, NO_USER),
}


def race(
    app: Flask, repo: SqlRepository, tenant: Client, groups: Groups, hold_at: str, change: Change
) -> tuple[Any, int]:
    """The claim's response and the change's status, the claim held just before its first
    statement starting with ``hold_at`` while the change runs."""
    answers: dict[str, Any] = {}

    def claim() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        answers["claim"] = mine.post("/api-ext/draft/claim", json=groups.claim_body())

    def run_change() -> None:
        answers["change"] = change(ApiClient(app.test_client(), tenant.api_key), groups)

    # The change is done at once, or waits for the claim's lock.
    hold_then_race(repo, claim, hold_at, run_change, wait=briefly)
    return answers["claim"], answers["change"]


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_user_who_leaves_the_group_before_the_claim_gets_nothing(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, name: str
) -> None:
    """The claim has checked the membership (before the fix) and is held just before it
    locks the user; the user leaves the group meanwhile. The claim is a 422 and the draft
    stays its owner's."""
    change, status, message = CHANGES[name]
    groups = Groups(api, repo, tenant)
    claimed, changed = race(app, repo, tenant, groups, "UPDATE USERS", change)
    assert changed == status
    body = assert_error(claimed, 422, "user_identifier")
    assert body["errors"]["user_identifier"] == [message]
    draft = repo.get_draft(tenant.identifier, groups.draft.draft_hash)
    assert draft is not None and draft.user_identifier == groups.owner.identifier


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_user_who_leaves_the_group_while_the_claim_holds_it_claims_first(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, name: str
) -> None:
    """The claim holds the user (held just before it reads the drafts); the change waits
    for it, without a deadlock (a 503), and applies after the claim, to the claimed draft
    too."""
    change, status, _message = CHANGES[name]
    groups = Groups(api, repo, tenant)
    claimed, changed = race(app, repo, tenant, groups, "SELECT DRAFTS.DRAFT_HASH", change)
    assert claimed.status_code == 200, claimed.get_data(as_text=True)
    assert claimed.get_json() == {groups.draft.draft_hash: True}
    assert changed == status
    member = repo.get_user(tenant.identifier, groups.member.identifier)
    draft = repo.get_draft(tenant.identifier, groups.draft.draft_hash)
    if change is delete:
        assert member is None and draft is None  # deleted with its user
        return
    assert draft is not None
    if change is merge_away:
        assert member is None and draft.user_identifier == groups.outsider.identifier
        return
    assert draft.user_identifier == groups.member.identifier
    assert member is not None
    assert member.user_group_identifier == (groups.other if change is move_to_other else None)


def put_to_other(api: ApiClient, groups: Groups) -> Any:
    """The PUT of the draft into the other group."""
    path = f"/api-ext/draft/{groups.draft.draft_hash}"
    return api.put(path, json={"userGroupIdentifier": groups.other})


#: (held request, where it is held, at the commit after it, whether the other request
#: then waits for the held one's lock, and the expected outcome: the claim's answer and
#: the draft's owner, "owner" or "member"; the draft ends in the other group each time).
PUT_RACES: dict[str, tuple[str, str, bool, bool, bool, str]] = {
    # The PUT has moved the draft, uncommitted: the claim waits, then finds it gone from
    # the group.
    "the PUT holds the draft": ("put", "UPDATE DRAFTS", True, True, False, "owner"),
    # The claim holds the draft: the PUT waits, then moves the claimed draft.
    "the claim holds the draft": ("claim", "UPDATE DRAFTS", False, True, True, "member"),
    # The PUT read the draft before the claim's write and writes after its commit: it
    # answers with the claimed owner, not the one it read.
    "the PUT read it before the claim": ("put", "UPDATE DRAFTS", False, False, True, "member"),
    # The claim holds the user, not yet the draft; the PUT moves the draft meanwhile.
    "the claim checked before the PUT": ("claim", "SELECT DRAFTS", False, False, False, "owner"),
}


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
@pytest.mark.parametrize("name", list(PUT_RACES))
def test_a_claim_and_a_put_of_its_draft_each_answer_what_became_of_it(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, name: str
) -> None:
    """One of them is held at its statement, the other runs to its end or until it waits
    for the held one's lock; then both finish. The outcome is the one of the two run one
    after the other in the order they took the draft, and each answer says so."""
    who, prefix, at_commit, waits, claimed_it, owner = PUT_RACES[name]
    groups = Groups(api, repo, tenant)
    answers: dict[str, Any] = {}

    def claim() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        answers["claim"] = mine.post("/api-ext/draft/claim", json=groups.claim_body())

    def put() -> None:
        answers["put"] = put_to_other(ApiClient(app.test_client(), tenant.api_key), groups)

    runs = {"claim": claim, "put": put}
    other = runs["put" if who == "claim" else "claim"]
    wait = for_locks if waits else to_the_end
    hold_then_race(repo, runs[who], prefix, other, wait=wait, at_commit=at_commit)
    claimed, moved = answers["claim"], answers["put"]
    assert claimed.status_code == 200, claimed.get_data(as_text=True)
    assert claimed.get_json() == {groups.draft.draft_hash: claimed_it}
    assert moved.status_code == 200, moved.get_data(as_text=True)
    expected = groups.member if owner == "member" else groups.owner
    draft = repo.get_draft(tenant.identifier, groups.draft.draft_hash)
    assert draft is not None
    assert (draft.user_identifier, draft.user_group_identifier) == (
        expected.identifier,
        groups.other,
    )
    answered = moved.get_json()["data"]
    assert (answered["userIdentifier"], answered["userGroupIdentifier"]) == (
        draft.user_identifier,
        draft.user_group_identifier,
    )
