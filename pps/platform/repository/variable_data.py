"""Variable-data rows of a draft (``/api-ext/draft/<hash>/variable-data``).

Rows are kept in order (``position`` from 0). Every write replaces or updates rows, sets
the draft's ``record_count`` to the number of rows and bumps its version in one
transaction, so files rendered before are never served for the new data and a failed
write leaves the old rows whole. Reading the rows for a render streams them from the
database in batches, so 10 000 records never sit in memory at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from pps.platform.repository.draft_lock import lock_draft
from pps.platform.repository.tables import drafts, variable_rows

__all__ = ["SqlVariableDataStore"]

Row = dict[str, Any]
#: Rows fetched per round trip when streaming them for a render.
_BATCH = 500


class SqlVariableDataStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _owned(self, conn: Connection, client: str, draft_hash: str) -> bool:
        """Whether the draft is the client's, held until the transaction ends: a draft
        deleted meanwhile made the rows' insert fail on the foreign key (a 500 on SQLite,
        where a ``SELECT ... FOR UPDATE`` held nothing; see :mod:`.draft_lock`)."""
        if "\x00" in client or "\x00" in draft_hash:
            return False
        return lock_draft(conn, client, draft_hash)

    def _touch(self, conn: Connection, draft_hash: str, count: int) -> None:
        conn.execute(
            drafts.update()
            .where(drafts.c.draft_hash == draft_hash)
            .values(
                record_count=count,
                version=drafts.c.version + 1,
                updated_at=datetime.now(UTC),
            )
        )

    def replace(self, client: str, draft_hash: str, rows: Sequence[Mapping[str, Any]]) -> bool:
        """Replace every row; False when the draft is not the client's."""
        with self.engine.begin() as conn:
            if not self._owned(conn, client, draft_hash):
                return False
            conn.execute(variable_rows.delete().where(variable_rows.c.draft_hash == draft_hash))
            for start in range(0, len(rows), _BATCH):
                conn.execute(
                    variable_rows.insert(),
                    [
                        {"draft_hash": draft_hash, "position": start + offset, "values": dict(row)}
                        for offset, row in enumerate(rows[start : start + _BATCH])
                    ],
                )
            self._touch(conn, draft_hash, len(rows))
        return True

    def update(
        self, client: str, draft_hash: str, changes: Mapping[int, Mapping[str, Any]]
    ) -> bool | None:
        """Lay ``changes`` (position -> values) over the stored rows, key by key.

        None when the draft is not the client's; False when a position has no row.
        """
        with self.engine.begin() as conn:
            if not self._owned(conn, client, draft_hash):
                return None
            stored = {
                row.position: dict(row.values)
                for row in conn.execute(
                    sa.select(variable_rows.c.position, variable_rows.c["values"]).where(
                        variable_rows.c.draft_hash == draft_hash,
                        variable_rows.c.position.in_(list(changes)),
                    )
                )
            }
            if set(stored) != set(changes):
                return False
            for position, values in changes.items():
                conn.execute(
                    variable_rows.update()
                    .where(
                        variable_rows.c.draft_hash == draft_hash,
                        variable_rows.c.position == position,
                    )
                    .values({"values": {**stored[position], **values}})
                )
            count = conn.execute(
                sa.select(sa.func.count())
                .select_from(variable_rows)
                .where(variable_rows.c.draft_hash == draft_hash)
            ).scalar_one()
            self._touch(conn, draft_hash, int(count))
        return True

    def copy(self, client: str, source_hash: str, target_hash: str) -> int | None:
        """Give ``target_hash`` the rows of ``source_hash`` (both the client's), in one
        statement inside the database; the number of rows. None when either draft is not
        the client's. The rows hold DataKey -> value (the column mapping applied at import),
        so the copy renders exactly the source's records."""
        with self.engine.begin() as conn:
            # In hash order, as a delete of the drafts' user takes them (see .draft_lock).
            first, second = sorted((source_hash, target_hash))
            if not (self._owned(conn, client, first) and self._owned(conn, client, second)):
                return None
            conn.execute(variable_rows.delete().where(variable_rows.c.draft_hash == target_hash))
            conn.execute(
                variable_rows.insert().from_select(
                    ["draft_hash", "position", "values"],
                    sa.select(
                        sa.literal(target_hash, sa.String(64)),
                        variable_rows.c.position,
                        variable_rows.c["values"],
                    ).where(variable_rows.c.draft_hash == source_hash),
                )
            )
            # Counted, not taken from rowcount: drivers need not report it for INSERT ... SELECT.
            copied = conn.execute(
                sa.select(sa.func.count())
                .select_from(variable_rows)
                .where(variable_rows.c.draft_hash == target_hash)
            ).scalar_one()
            self._touch(conn, target_hash, int(copied))
        return int(copied)

    def page(self, draft_hash: str, offset: int, limit: int) -> tuple[list[Row], int]:
        """Rows ``offset`` to ``offset + limit`` and the number of rows there are."""
        with self.engine.connect() as conn:
            total = conn.execute(
                sa.select(sa.func.count())
                .select_from(variable_rows)
                .where(variable_rows.c.draft_hash == draft_hash)
            ).scalar_one()
            rows = conn.execute(
                sa.select(variable_rows.c["values"])
                .where(variable_rows.c.draft_hash == draft_hash)
                .order_by(variable_rows.c.position)
                .offset(offset)
                .limit(limit)
            ).scalars()
            return [dict(values) for values in rows], int(total)

    def row(self, draft_hash: str, position: int) -> Row | None:
        rows, _ = self.page(draft_hash, position, 1)
        return rows[0] if rows else None

    def stream(self, draft_hash: str) -> Iterator[Row]:
        """Every row in order, fetched in batches by position (keyset), never all at once."""
        last = -1
        while True:
            with self.engine.connect() as conn:
                batch = conn.execute(
                    sa.select(variable_rows.c.position, variable_rows.c["values"])
                    .where(
                        variable_rows.c.draft_hash == draft_hash,
                        variable_rows.c.position > last,
                    )
                    .order_by(variable_rows.c.position)
                    .limit(_BATCH)
                ).all()
            if not batch:
                return
            for position, values in batch:
                last = position
                yield dict(values)
