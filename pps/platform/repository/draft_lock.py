"""Holding a draft's row until the transaction ends, on both backends.

SQLite's driver begins a transaction only at the first write, so a ``SELECT ... FOR
UPDATE`` (which SQLite ignores anyway) runs outside it and holds nothing: there the lock is
a write of what the row holds, which takes the database's write lock. On PostgreSQL it is
``FOR UPDATE``, not such a write: a row written by the transaction counts as its own, so
the transaction's next update of the draft checks the draft's foreign keys again and waits
for a ``KEY SHARE`` lock on its user. A delete of that user holds the user and waits for
the draft: a deadlock, answered to one of them as a 503.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from pps.platform.repository.tables import drafts

__all__ = ["lock_draft"]


def lock_draft(conn: Connection, client: str, draft_hash: str) -> bool:
    """Whether the client's draft exists, holding it until ``conn``'s transaction ends."""
    this_draft = sa.and_(drafts.c.draft_hash == draft_hash, drafts.c.client_identifier == client)
    if conn.dialect.name == "sqlite":
        touched = conn.execute(drafts.update().where(this_draft).values(version=drafts.c.version))
        return touched.rowcount == 1
    found = conn.execute(sa.select(drafts.c.draft_hash).where(this_draft).with_for_update())
    return found.first() is not None
