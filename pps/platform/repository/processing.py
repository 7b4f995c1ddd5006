"""Storage of batch print-file processings (``/api-ext/pdf-processing``) and their drafts' states.

A small seam of its own beside :mod:`pps.platform.repository`, on the same engine. As there, every
method takes the client first and the queries enforce it: another client's processing is
simply not found.

State changes are guarded in SQL (``UPDATE ... WHERE state IN (...)``), so a job that runs
twice (a retried RQ job, a second worker) cannot move a draft backwards or finish it twice.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from pps.platform import ids
from pps.platform.repository.tables import drafts, processing_drafts, processings

__all__ = [
    "FAILED",
    "FINAL_STATES",
    "IN_PROCESS",
    "PENDING",
    "PROCESSED",
    "STATES",
    "DraftState",
    "Processing",
    "ProcessingStore",
    "SqlProcessingStore",
]

PENDING = "pending"
IN_PROCESS = "in-process"
PROCESSED = "processed"
FAILED = "failed"
STATES = (PENDING, IN_PROCESS, PROCESSED, FAILED)
FINAL_STATES = frozenset({PROCESSED, FAILED})
#: Longest failure message kept; renderer messages are short, tracebacks are never stored.
MAX_MESSAGE = 2000


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class DraftState:
    """One draft of a processing; ``position`` is its place in the submitted list."""

    position: int
    draft_hash: str
    state: str
    message: str | None = None
    file_key: str | None = None

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES


@dataclass(frozen=True)
class Processing:
    processing_id: str
    client_identifier: str
    notify_url: str | None
    drafts: tuple[DraftState, ...]
    created_at: datetime
    updated_at: datetime

    @property
    def finished(self) -> bool:
        return all(item.final for item in self.drafts)

    def status(self) -> dict[str, Any]:
        """The JSON of ``GET /api-ext/pdf-processing/<id>``, also POSTed to the notify URL."""
        return {
            "processingId": self.processing_id,
            "draftStates": [
                {"draftId": item.draft_hash, "state": item.state, "message": item.message}
                for item in self.drafts
            ],
        }


class ProcessingStore(Protocol):
    def known_drafts(self, client: str, draft_hashes: Iterable[str]) -> set[str]:
        """Those of ``draft_hashes`` that are drafts of ``client``."""
        ...

    def create(
        self, client: str, draft_hashes: Sequence[str], notify_url: str | None
    ) -> Processing:
        """A new processing with every draft ``pending``."""
        ...

    def get(self, client: str, processing_id: str) -> Processing | None: ...

    def delete(self, client: str, processing_id: str) -> bool: ...

    def set_state(
        self,
        client: str,
        processing_id: str,
        position: int,
        state: str,
        *,
        allowed_from: Collection[str],
        message: str | None = None,
        file_key: str | None = None,
    ) -> bool:
        """Move one draft to ``state`` if it is in one of ``allowed_from``; True if it moved."""
        ...

    def fail_unfinished(self, client: str, processing_id: str, message: str) -> int:
        """Mark every draft that is not final as ``failed``; how many were."""
        ...

    def unfinished(self, changed_before: datetime, limit: int) -> list[Processing]:
        """Processings of any client with a draft not final and no change since
        ``changed_before``, the longest unchanged first: those a lost job may have left."""
        ...

    def claim(self, client: str, processing_id: str, changed_before: datetime) -> bool:
        """Mark the processing as changed now if it was not changed since ``changed_before``;
        True for the one caller that did (of several processes that found it at once)."""
        ...


def _impossible(*values: str) -> bool:
    """PostgreSQL text holds no NUL; such an identifier from a URL names nothing."""
    return any("\x00" in value for value in values)


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


class SqlProcessingStore:
    """:class:`ProcessingStore` on SQLAlchemy Core; share the repository's engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def known_drafts(self, client: str, draft_hashes: Iterable[str]) -> set[str]:
        wanted = sorted({h for h in draft_hashes if not _impossible(h)})
        if not wanted:
            return set()
        query = sa.select(drafts.c.draft_hash).where(
            drafts.c.client_identifier == client, drafts.c.draft_hash.in_(wanted)
        )
        with self.engine.connect() as conn:
            return {row[0] for row in conn.execute(query)}

    def create(
        self, client: str, draft_hashes: Sequence[str], notify_url: str | None
    ) -> Processing:
        now = utcnow()
        processing_id = ids.processing_id()
        with self.engine.begin() as conn:
            conn.execute(
                processings.insert().values(
                    processing_id=processing_id,
                    client_identifier=client,
                    notify_url=notify_url,
                    created_at=now,
                    updated_at=now,
                )
            )
            conn.execute(
                processing_drafts.insert(),
                [
                    {
                        "processing_id": processing_id,
                        "position": position,
                        "draft_hash": draft_hash,
                        "state": PENDING,
                        "message": None,
                        "file_key": None,
                        "updated_at": now,
                    }
                    for position, draft_hash in enumerate(draft_hashes)
                ],
            )
            found = self._load(conn, client, processing_id)
        assert found is not None
        return found

    def get(self, client: str, processing_id: str) -> Processing | None:
        if _impossible(client, processing_id):
            return None
        with self.engine.connect() as conn:
            return self._load(conn, client, processing_id)

    def delete(self, client: str, processing_id: str) -> bool:
        if _impossible(client, processing_id):
            return False
        with self.engine.begin() as conn:
            if not self._owned(conn, client, processing_id):
                return False
            # Rows first: SQLite enforces the cascade only with foreign keys on.
            conn.execute(
                processing_drafts.delete().where(processing_drafts.c.processing_id == processing_id)
            )
            conn.execute(processings.delete().where(processings.c.processing_id == processing_id))
        return True

    def set_state(
        self,
        client: str,
        processing_id: str,
        position: int,
        state: str,
        *,
        allowed_from: Collection[str],
        message: str | None = None,
        file_key: str | None = None,
    ) -> bool:
        if state not in STATES:
            raise ValueError(f"unknown processing state {state!r}")
        now = utcnow()
        with self.engine.begin() as conn:
            if not self._owned(conn, client, processing_id):
                return False
            result = conn.execute(
                processing_drafts.update()
                .where(
                    processing_drafts.c.processing_id == processing_id,
                    processing_drafts.c.position == position,
                    processing_drafts.c.state.in_(list(allowed_from)),
                )
                .values(
                    state=state,
                    message=message[:MAX_MESSAGE] if message else None,
                    file_key=file_key,
                    updated_at=now,
                )
            )
            if not result.rowcount:
                return False
            self._touch(conn, processing_id, now)
        return True

    def fail_unfinished(self, client: str, processing_id: str, message: str) -> int:
        now = utcnow()
        with self.engine.begin() as conn:
            if not self._owned(conn, client, processing_id):
                return 0
            result = conn.execute(
                processing_drafts.update()
                .where(
                    processing_drafts.c.processing_id == processing_id,
                    processing_drafts.c.state.not_in(list(FINAL_STATES)),
                )
                .values(state=FAILED, message=message[:MAX_MESSAGE], updated_at=now)
            )
            if result.rowcount:
                self._touch(conn, processing_id, now)
            return int(result.rowcount)

    def unfinished(self, changed_before: datetime, limit: int) -> list[Processing]:
        # Found through the few unfinished rows (index of migration 0014), not the many
        # finished ones the retention keeps.
        waiting = (
            sa.select(processing_drafts.c.processing_id)
            .where(processing_drafts.c.state.in_([PENDING, IN_PROCESS]))
            .distinct()
        )
        query = (
            sa.select(processings.c.client_identifier, processings.c.processing_id)
            .where(
                processings.c.processing_id.in_(waiting),
                processings.c.updated_at < changed_before,
            )
            .order_by(processings.c.updated_at)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            found = [
                self._load(conn, client, processing_id)
                for client, processing_id in conn.execute(query).all()
            ]
        return [item for item in found if item is not None]

    def claim(self, client: str, processing_id: str, changed_before: datetime) -> bool:
        with self.engine.begin() as conn:
            result = conn.execute(
                processings.update()
                .where(
                    processings.c.processing_id == processing_id,
                    processings.c.client_identifier == client,
                    processings.c.updated_at < changed_before,
                )
                .values(updated_at=utcnow())
            )
        return bool(result.rowcount)

    # -- helpers ---------------------------------------------------------------------------

    @staticmethod
    def _owned(conn: Connection, client: str, processing_id: str) -> bool:
        query = sa.select(processings.c.processing_id).where(
            processings.c.processing_id == processing_id,
            processings.c.client_identifier == client,
        )
        return conn.execute(query).first() is not None

    @staticmethod
    def _touch(conn: Connection, processing_id: str, now: datetime) -> None:
        conn.execute(
            processings.update()
            .where(processings.c.processing_id == processing_id)
            .values(updated_at=now)
        )

    @staticmethod
    def _load(conn: Connection, client: str, processing_id: str) -> Processing | None:
        head = (
            conn.execute(
                processings.select().where(
                    processings.c.processing_id == processing_id,
                    processings.c.client_identifier == client,
                )
            )
            .mappings()
            .first()
        )
        if head is None:
            return None
        rows = conn.execute(
            processing_drafts.select()
            .where(processing_drafts.c.processing_id == processing_id)
            .order_by(processing_drafts.c.position)
        ).mappings()
        return Processing(
            processing_id=head["processing_id"],
            client_identifier=head["client_identifier"],
            notify_url=head["notify_url"],
            drafts=tuple(
                DraftState(
                    position=row["position"],
                    draft_hash=row["draft_hash"],
                    state=row["state"],
                    message=row["message"],
                    file_key=row["file_key"],
                )
                for row in rows
            ),
            created_at=_aware(head["created_at"]),
            updated_at=_aware(head["updated_at"]),
        )
