"""The review's state machine (pure) and the store's guard against lost updates."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from flask import Flask
from processing_support import card_draft, card_template

from pps.platform.models import Client
from pps.platform.repository.sql import SqlRepository
from pps.reviews import model
from pps.reviews.model import Review, ReviewClosed, Reviewer, ReviewRuleBroken
from pps.reviews.store import StaleReview

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def review(*users: str) -> Review:
    return Review(
        review_id=model.new_review_id(),
        client_identifier="c",
        draft_hash="d",
        state=model.OPEN,
        reviewers=tuple(Reviewer(user) for user in users),
        close_callback_url=None,
        remote_acl=False,
        pdf_key=None,
        pdf_count=0,
        revision=0,
        created_at=NOW,
        updated_at=NOW,
    )


def test_approved_when_every_reviewer_approved() -> None:
    r = model.decide(review("a", "b"), "a", "approve", "", draft_version=1, now=NOW)
    assert r.state == model.OPEN and r.reviewer("a").decision == "approved"  # type: ignore[union-attr]
    r = model.decide(r, "b", "approve", " ok ", draft_version=1, now=NOW)
    assert r.state == model.APPROVED and r.closed_at == NOW
    assert r.reviewer("b").comment == "ok"  # type: ignore[union-attr]


def test_one_rejection_closes_and_needs_a_comment() -> None:
    with pytest.raises(ReviewRuleBroken, match="needs a comment"):
        model.decide(review("a", "b"), "a", "reject", "  ", draft_version=1, now=NOW)
    r = model.decide(review("a", "b"), "a", "reject", "Wrong logo", draft_version=1, now=NOW)
    assert r.state == model.REJECTED
    with pytest.raises(ReviewClosed):
        model.decide(r, "b", "approve", "", draft_version=1, now=NOW)
    with pytest.raises(ReviewClosed):
        model.add_reviewer(r, "c", now=NOW)
    assert model.close(r, now=NOW) is r  # closing a finished review changes nothing


def test_rules_for_reviewers() -> None:
    with pytest.raises(ReviewRuleBroken, match="not a reviewer"):
        model.decide(review("a"), "z", "approve", "", draft_version=1, now=NOW)
    with pytest.raises(ReviewRuleBroken, match="approve or reject"):
        model.decide(review("a"), "a", "maybe", "", draft_version=1, now=NOW)
    with pytest.raises(ReviewRuleBroken, match="at most"):
        model.decide(
            review("a"), "a", "approve", "x" * (model.MAX_COMMENT + 1), draft_version=1, now=NOW
        )
    r = review("a")
    assert model.add_reviewer(r, "a", now=NOW) is r
    assert model.remove_reviewer(r, "z", now=NOW) is r
    # Nobody left is not "everybody approved".
    assert model.remove_reviewer(r, "a", now=NOW).state == model.OPEN
    assert model.close(r, now=NOW).state == model.CLOSED


def test_a_write_from_a_stale_read_is_refused(
    app: Flask, repo: SqlRepository, tenant: Client
) -> None:
    draft = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    user = repo.create_user(tenant.identifier, {})
    store = app.extensions["pps.reviews"].store
    created = dataclasses.replace(
        review(user.identifier), client_identifier=tenant.identifier, draft_hash=draft.draft_hash
    )
    store.create(created)
    read = store.get(tenant.identifier, created.review_id)
    assert read == created
    first = store.save(model.decide(read, user.identifier, "approve", "", draft_version=1, now=NOW))
    assert first.revision == 1 and first.state == model.APPROVED
    with pytest.raises(StaleReview):
        store.save(model.close(read, now=NOW))  # based on revision 0
    assert store.get(tenant.identifier, created.review_id) == first
    assert store.get("another client", created.review_id) is None
