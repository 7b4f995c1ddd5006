"""A review (proof approval) and the rules it moves by. Plain Python: no Flask, no SQL.

A review asks some of a client's users (the reviewers) to look at a draft's proof and
approve or reject it, each with an optional comment (a rejection needs one: the shop must
know what to fix). States::

    open --(every reviewer approved)--> approved
    open --(a reviewer rejected)------> rejected
    open --(the shop closed it)-------> closed

Every state but ``open`` is final: a closed review takes no more decisions or reviewers,
and closing it again changes nothing. A rejection closes the review at once (the proof
must be corrected whatever the others say); an approval closes it when it is the last one
missing. While the review is open a reviewer may change their mind (the later decision
replaces the earlier). Removing a reviewer may complete it (the others have all approved).

The functions here return a new :class:`Review` (or the same one when nothing changes) and
never write anything; :mod:`pps.reviews.service` stores the result.
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pps.platform.storable_text import text_problem

__all__ = [
    "APPROVE",
    "APPROVED",
    "CLOSED",
    "DECISIONS",
    "FINAL_STATES",
    "MAX_COMMENT",
    "MAX_REVIEWERS",
    "OPEN",
    "REJECT",
    "REJECTED",
    "STATES",
    "Review",
    "ReviewClosed",
    "ReviewRuleBroken",
    "Reviewer",
    "add_reviewer",
    "close",
    "decide",
    "new_review_id",
    "remove_reviewer",
]

OPEN = "open"
APPROVED = "approved"
REJECTED = "rejected"
CLOSED = "closed"
STATES = (OPEN, APPROVED, REJECTED, CLOSED)
FINAL_STATES = frozenset({APPROVED, REJECTED, CLOSED})

APPROVE = "approve"
REJECT = "reject"
#: A form's ``decision`` -> what is stored and reported.
DECISIONS = {APPROVE: "approved", REJECT: "rejected"}
#: Longest comment kept, in characters.
MAX_COMMENT = 2000
#: Reviewers on one review.
MAX_REVIEWERS = 100


class ReviewRuleBroken(ValueError):
    """The change is not allowed in the review's state; the message says why (in English),
    ``code`` and ``params`` name it for the reviewer's page in the reader's language."""

    def __init__(self, message: str, code: str = "", **params: object) -> None:
        super().__init__(message)
        self.code = code
        self.params = params


class ReviewClosed(ReviewRuleBroken):
    """The review is closed: no more decisions or reviewers."""


@dataclass(frozen=True)
class Reviewer:
    user_identifier: str
    decision: str | None = None
    """``approved``, ``rejected`` or None while undecided."""
    comment: str | None = None
    draft_version: int | None = None
    """The version of the draft the reviewer looked at when deciding."""
    decided_at: datetime | None = None


@dataclass(frozen=True)
class Review:
    review_id: str
    client_identifier: str
    draft_hash: str
    state: str
    reviewers: tuple[Reviewer, ...]
    close_callback_url: str | None
    remote_acl: bool
    pdf_key: str | None
    pdf_count: int
    revision: int
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None = None

    @property
    def is_open(self) -> bool:
        return self.state == OPEN

    def reviewer(self, user_identifier: str) -> Reviewer | None:
        return next((r for r in self.reviewers if r.user_identifier == user_identifier), None)

    def status(self) -> dict[str, Any]:
        """The review as the shop hears of it (close callback and PDF notification)."""
        return {
            "reviewId": self.review_id,
            "draftId": self.draft_hash,
            "state": self.state,
            "closedAt": _iso(self.closed_at),
            "reviewers": [
                {
                    "userIdentifier": r.user_identifier,
                    "decision": r.decision,
                    "comment": r.comment,
                    "draftVersion": r.draft_version,
                    "decidedAt": _iso(r.decided_at),
                }
                for r in self.reviewers
            ],
        }


def new_review_id() -> str:
    """32 lowercase hex digits: unguessable, since it is part of the reviewer's URL."""
    return secrets.token_hex(16)


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def _open(review: Review) -> None:
    if not review.is_open:
        raise ReviewClosed(f"The review is {review.state}; it takes no more changes.")


def _settled(review: Review, now: datetime) -> Review:
    """``approved`` once every reviewer (at least one) has approved; else unchanged."""
    reviewers = review.reviewers
    if review.is_open and reviewers and all(r.decision == APPROVED for r in reviewers):
        return dataclasses.replace(review, state=APPROVED, closed_at=now, updated_at=now)
    return review


def decide(
    review: Review,
    user_identifier: str,
    decision: str,
    comment: str,
    *,
    draft_version: int,
    now: datetime,
) -> Review:
    """Record a reviewer's ``approve`` or ``reject``; the review may close with it."""
    _open(review)
    if review.reviewer(user_identifier) is None:
        raise ReviewRuleBroken(
            "You are not a reviewer of this proof.", "review.problem.not_reviewer"
        )
    if decision not in DECISIONS:
        raise ReviewRuleBroken("Choose approve or reject.", "review.problem.choose")
    text = comment.strip()
    if len(text) > MAX_COMMENT:
        raise ReviewRuleBroken(
            f"The comment must be at most {MAX_COMMENT} characters long.",
            "review.problem.comment_too_long",
            limit=MAX_COMMENT,
        )
    if text_problem(text) is not None:
        # PostgreSQL's text holds no NUL: stored, such a comment failed there (and only there).
        raise ReviewRuleBroken(
            "The comment must be plain text: it must not contain NUL characters.",
            "review.problem.comment_not_text",
        )
    if decision == REJECT and not text:
        raise ReviewRuleBroken(
            "Say what must change: a rejection needs a comment.", "review.problem.comment_needed"
        )
    stored = DECISIONS[decision]
    reviewers = tuple(
        Reviewer(user_identifier, stored, text or None, draft_version, now)
        if r.user_identifier == user_identifier
        else r
        for r in review.reviewers
    )
    changed = dataclasses.replace(review, reviewers=reviewers, updated_at=now)
    if stored == REJECTED:
        return dataclasses.replace(changed, state=REJECTED, closed_at=now)
    return _settled(changed, now)


def add_reviewer(review: Review, user_identifier: str, *, now: datetime) -> Review:
    """Add a reviewer to an open review; adding one twice changes nothing."""
    _open(review)
    if review.reviewer(user_identifier) is not None:
        return review
    reviewers = (*review.reviewers, Reviewer(user_identifier))
    return dataclasses.replace(review, reviewers=reviewers, updated_at=now)


def remove_reviewer(review: Review, user_identifier: str, *, now: datetime) -> Review:
    """Take a reviewer off an open review; the others' approvals may then complete it."""
    _open(review)
    if review.reviewer(user_identifier) is None:
        return review
    reviewers = tuple(r for r in review.reviewers if r.user_identifier != user_identifier)
    return _settled(dataclasses.replace(review, reviewers=reviewers, updated_at=now), now)


def close(review: Review, *, now: datetime) -> Review:
    """The shop ends the review; a review closed already stays as it is."""
    if not review.is_open:
        return review
    return dataclasses.replace(review, state=CLOSED, closed_at=now, updated_at=now)
