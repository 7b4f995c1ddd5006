"""A lock per client for checks that must not interleave (webhook limits, storage budget).

The lock is the client's ``client_settings`` row, written to what it holds rather than read
``FOR UPDATE``: the write locks on both backends (PostgreSQL: the row, so other clients go
on; SQLite: the database), and SQLite's driver begins its transaction only at the first
write, so a check by SELECT alone would run outside it.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from pps.platform.repository.tables import client_settings

__all__ = ["ensure_settings_row", "lock_client"]


def ensure_settings_row(conn: Connection, client: str) -> None:
    """Create the client's settings row unless it exists (a race to create it is fine)."""
    exists = conn.execute(
        sa.select(sa.literal(1)).where(client_settings.c.client_identifier == client)
    ).first()
    if exists is not None:
        return
    try:
        with conn.begin_nested():
            conn.execute(
                client_settings.insert().values(
                    client_identifier=client, allowed_hosts=[], updated_at=datetime.now(UTC)
                )
            )
    except sa.exc.IntegrityError:
        pass  # created meanwhile by another request


def lock_client(conn: Connection, client: str) -> None:
    """Hold the client's lock until ``conn``'s transaction ends."""
    touch = (
        client_settings.update()
        .where(client_settings.c.client_identifier == client)
        .values(updated_at=client_settings.c.updated_at)
    )
    if conn.execute(touch).rowcount == 0:
        ensure_settings_row(conn, client)
        conn.execute(touch)
