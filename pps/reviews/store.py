"""Storage of reviews and their reviewers, on the repository's engine (SQLAlchemy Core).

As in :mod:`pps.platform.repository`, every read takes the client first and the query
enforces it: another client's review is simply not found. Writes are guarded by the
review's ``revision`` (``UPDATE ... WHERE revision = <read>``), so two reviewers deciding
at the same moment cannot overwrite each other: the later write sees :class:`StaleReview`
and the service applies its change again to what is stored now.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from pps.platform.repository import Repository
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import review_users, reviews, users
from pps.reviews.model import Review, Reviewer

__all__ = ["ReviewStore", "ReviewTargetGone", "SqlReviewStore", "StaleReview", "open_review_store"]


class StaleReview(Exception):
    """The review changed (or vanished) since it was read, or one of its reviewers was
    deleted since; nothing was written."""


class ReviewTargetGone(Exception):
    """The draft or a reviewer of a new review was deleted after the caller checked it
    (the foreign keys refused the insert); nothing was written."""


class ReviewStore(Protocol):
    def create(self, review: Review) -> None:
        """Insert ``review``; :class:`ReviewTargetGone` when its draft or a reviewer is gone."""
        ...

    def get(self, client: str, review_id: str) -> Review | None: ...

    def save(self, review: Review) -> Review:
        """Write ``review`` over the stored one if that is still at ``review.revision``;
        the stored review (revision bumped), or :class:`StaleReview`."""
        ...


def open_review_store(repository: Repository) -> ReviewStore:
    """The review store beside ``repository``, sharing its engine and connection pool."""
    if not isinstance(repository, SqlRepository):
        raise TypeError("reviews are stored beside the SQL repository")
    return SqlReviewStore(repository.engine)


def _aware(value: datetime | None) -> datetime | None:
    """SQLite returns naive datetimes; every moment pps writes is UTC."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


class SqlReviewStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create(self, review: Review) -> None:
        try:
            self._insert(review)
        except sa.exc.IntegrityError:  # a delete won the race with the caller's checks
            raise ReviewTargetGone(review.review_id) from None

    def _insert(self, review: Review) -> None:
        with self.engine.begin() as conn:
            if not self._hold_reviewers(conn, review):
                raise ReviewTargetGone(review.review_id)
            conn.execute(
                reviews.insert().values(
                    review_id=review.review_id,
                    client_identifier=review.client_identifier,
                    draft_hash=review.draft_hash,
                    state=review.state,
                    close_callback_url=review.close_callback_url,
                    remote_acl=review.remote_acl,
                    pdf_key=review.pdf_key,
                    pdf_count=review.pdf_count,
                    revision=review.revision,
                    created_at=review.created_at,
                    updated_at=review.updated_at,
                    closed_at=review.closed_at,
                )
            )
            self._write_reviewers(conn, review)

    def get(self, client: str, review_id: str) -> Review | None:
        if "\x00" in review_id:  # PostgreSQL text holds no NUL: such an id names nothing
            return None
        with self.engine.connect() as conn:
            row = (
                conn.execute(
                    reviews.select().where(
                        reviews.c.review_id == review_id,
                        reviews.c.client_identifier == client,
                    )
                )
                .mappings()
                .first()
            )
            if row is None:
                return None
            people = conn.execute(
                review_users.select()
                .where(review_users.c.review_id == review_id)
                .order_by(review_users.c.position)
            ).mappings()
            reviewers = tuple(
                Reviewer(
                    user_identifier=person["user_identifier"],
                    decision=person["decision"],
                    comment=person["comment"],
                    draft_version=person["draft_version"],
                    decided_at=_aware(person["decided_at"]),
                )
                for person in people
            )
        created = _aware(row["created_at"])
        updated = _aware(row["updated_at"])
        assert created is not None and updated is not None
        return Review(
            review_id=row["review_id"],
            client_identifier=row["client_identifier"],
            draft_hash=row["draft_hash"],
            state=row["state"],
            reviewers=reviewers,
            close_callback_url=row["close_callback_url"],
            remote_acl=bool(row["remote_acl"]),
            pdf_key=row["pdf_key"],
            pdf_count=row["pdf_count"],
            revision=row["revision"],
            created_at=created,
            updated_at=updated,
            closed_at=_aware(row["closed_at"]),
        )

    def save(self, review: Review) -> Review:
        try:
            self._update(review)
        except sa.exc.IntegrityError:
            # A reviewer was deleted since the review was read (its row went with it): the
            # caller reads the review again, without that reviewer, and retries.
            raise StaleReview(review.review_id) from None
        stored = self.get(review.client_identifier, review.review_id)
        if stored is None:  # deleted with its draft right after the write
            raise StaleReview(review.review_id)
        return stored

    def _update(self, review: Review) -> None:
        with self.engine.begin() as conn:
            if not self._hold_reviewers(conn, review):
                raise StaleReview(review.review_id)
            done = conn.execute(
                reviews.update()
                .where(
                    reviews.c.review_id == review.review_id,
                    reviews.c.client_identifier == review.client_identifier,
                    reviews.c.revision == review.revision,
                )
                .values(
                    state=review.state,
                    pdf_key=review.pdf_key,
                    pdf_count=review.pdf_count,
                    revision=review.revision + 1,
                    updated_at=review.updated_at,
                    closed_at=review.closed_at,
                )
            )
            if done.rowcount != 1:
                raise StaleReview(review.review_id)
            conn.execute(review_users.delete().where(review_users.c.review_id == review.review_id))
            self._write_reviewers(conn, review)

    @staticmethod
    def _hold_reviewers(conn: Connection, review: Review) -> bool:
        """Whether every reviewer of ``review`` exists, each user held (``FOR KEY SHARE``,
        in id order) until the transaction ends, before the review or its draft.

        A delete of a user holds the user, then deletes their drafts and reviewer rows. The
        write of a review took the review (and its draft's key) first and the users' keys
        last, with its reviewer rows' inserts: each waited for the other, a deadlock that
        PostgreSQL answered with a 503 to one of them. Held first, the users make the
        delete wait for the write, or the write for the delete (and then find the user
        gone). SQLite's database-wide write lock serializes the two already.
        """
        wanted = sorted({reviewer.user_identifier for reviewer in review.reviewers})
        if not wanted or conn.dialect.name == "sqlite":
            return True
        found = conn.execute(
            sa.select(users.c.identifier)
            .where(users.c.identifier.in_(wanted))
            .order_by(users.c.identifier)
            .with_for_update(read=True, key_share=True)
        )
        return len(found.all()) == len(wanted)

    @staticmethod
    def _write_reviewers(conn: Connection, review: Review) -> None:
        if not review.reviewers:
            return
        conn.execute(
            review_users.insert(),
            [
                {
                    "review_id": review.review_id,
                    "user_identifier": r.user_identifier,
                    "position": position,
                    "decision": r.decision,
                    "comment": r.comment,
                    "draft_version": r.draft_version,
                    "decided_at": r.decided_at,
                }
                for position, r in enumerate(review.reviewers)
            ],
        )
