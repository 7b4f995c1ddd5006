"""Holding drafts' rows until the transaction ends, on both backends.

SQLite's driver begins a transaction only at the first write, so a ``SELECT ... FOR
UPDATE`` (which SQLite ignores anyway) runs outside it and holds nothing: there the lock is
a write of what the row holds, which takes the database's write lock. On PostgreSQL it is
``FOR UPDATE``, not such a write: a row written by the transaction counts as its own, so
the transaction's next update of the draft checks the draft's foreign keys again and waits
for a ``KEY SHARE`` lock on its user. A delete of that user holds the user and waits for
the draft: a deadlock, answered to one of them as a 503.

Several drafts are locked in the order of their hash, by every transaction that takes more
than one (:func:`lock_drafts`, and two :func:`lock_draft` in turn). An ``UPDATE`` or a
``DELETE`` takes its rows in the order of its plan instead: an index on the hash for a claim
(hash order), the index on the user for a user's delete or merge (the order rows lie in the
table). A claim and a delete of the drafts' owner then each held a draft the other waited
for: PostgreSQL aborted one of them, a 503.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from pps.platform.repository.tables import drafts

__all__ = ["lock_draft", "lock_drafts"]


def lock_draft(conn: Connection, client: str, draft_hash: str) -> bool:
    """Whether the client's draft exists, holding it until ``conn``'s transaction ends."""
    this_draft = sa.and_(drafts.c.draft_hash == draft_hash, drafts.c.client_identifier == client)
    if conn.dialect.name == "sqlite":
        touched = conn.execute(drafts.update().where(this_draft).values(version=drafts.c.version))
        return touched.rowcount == 1
    found = conn.execute(sa.select(drafts.c.draft_hash).where(this_draft).with_for_update())
    return found.first() is not None


def lock_drafts(
    conn: Connection, condition: sa.ColumnElement[bool], *, deleting: bool = False
) -> set[str]:
    """The hashes of the drafts that meet ``condition``, each held until ``conn``'s
    transaction ends, taken in hash order.

    ``deleting``: the transaction deletes them (``FOR UPDATE``); otherwise it changes them
    but not their hash (``FOR NO KEY UPDATE``, which leaves foreign key checks of rows that
    name the drafts free to run). On SQLite this is a plain read: the caller holds the
    database's write lock already (its first statement was a write).
    """
    query = sa.select(drafts.c.draft_hash).where(condition).order_by(drafts.c.draft_hash)
    if conn.dialect.name != "sqlite":
        query = query.with_for_update(key_share=not deleting)
    return set(conn.execute(query).scalars())
