"""What a client's uploads take in file storage, and room held for one being written.

Counted from the database: uploaded files (``uploads.size``), drafts' print PDFs
(``drafts.upload_size``) and reservations of uploads in progress. A reservation is taken
under the client's lock (:mod:`pps.platform.repository.client_lock`), so two uploads at
once cannot both fit into the room for one; the lock is held for the check and the insert
only, never while a file is written. A reservation is released once the file's own row
holds its size; one left behind by a process that died counts no more after
:data:`RESERVATION_TTL`.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from pps.platform.repository.client_lock import lock_client
from pps.platform.repository.tables import drafts, storage_reservations, uploads

__all__ = ["RESERVATION_TTL", "BudgetExceeded", "SqlStorageBudget"]

#: Far longer than writing the largest upload takes; only a dead process's room waits this.
RESERVATION_TTL = timedelta(minutes=15)


class BudgetExceeded(Exception):
    """``size`` more bytes would take the client past ``budget``; it holds ``used``."""

    def __init__(self, used: int, size: int, budget: int) -> None:
        super().__init__(f"{used} + {size} bytes > {budget}")
        self.used, self.size, self.budget = used, size, budget


class SqlStorageBudget:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def used(self, client: str) -> int:
        """Bytes the client's uploads take now, reservations included."""
        with self.engine.connect() as conn:
            return self._used(conn, client, datetime.now(UTC))

    def reserve(self, client: str, size: int, budget: int) -> str:
        """Hold ``size`` bytes for the client; the reservation's id, for :meth:`release`.

        Raises :class:`BudgetExceeded` (and holds nothing) when they do not fit in ``budget``.
        """
        now = datetime.now(UTC)
        identifier = secrets.token_hex(16)
        with self.engine.begin() as conn:
            lock_client(conn, client)
            conn.execute(
                storage_reservations.delete().where(
                    storage_reservations.c.client_identifier == client,
                    storage_reservations.c.expires_at <= now,
                )
            )
            used = self._used(conn, client, now)
            if used + size > budget:
                raise BudgetExceeded(used, size, budget)
            conn.execute(
                storage_reservations.insert().values(
                    identifier=identifier,
                    client_identifier=client,
                    size=size,
                    expires_at=now + RESERVATION_TTL,
                )
            )
        return identifier

    def release(self, identifier: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                storage_reservations.delete().where(storage_reservations.c.identifier == identifier)
            )

    @staticmethod
    def _used(conn: Connection, client: str, now: datetime) -> int:
        """One statement, so one snapshot: an upload whose row is written and whose
        reservation is released in between is counted once or twice, never not at all
        (PostgreSQL's READ COMMITTED gives each statement a snapshot of its own)."""
        sums = [
            sa.select(sa.func.coalesce(sa.func.sum(uploads.c.size), 0))
            .where(uploads.c.client_identifier == client)
            .scalar_subquery(),
            sa.select(sa.func.coalesce(sa.func.sum(drafts.c.upload_size), 0))
            .where(drafts.c.client_identifier == client)
            .scalar_subquery(),
            sa.select(sa.func.coalesce(sa.func.sum(storage_reservations.c.size), 0))
            .where(
                storage_reservations.c.client_identifier == client,
                storage_reservations.c.expires_at > now,
            )
            .scalar_subquery(),
        ]
        row = conn.execute(sa.select(*sums)).one()
        return sum(int(value) for value in row)
