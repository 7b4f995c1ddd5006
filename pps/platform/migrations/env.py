"""Alembic environment: runs the migrations against the URL ``upgrade_database`` passes in."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator

import sqlalchemy as sa
from alembic import context

from pps.platform.repository.sql import MIGRATION_LOCK_KEY, create_engine, migration_lock_file
from pps.platform.repository.tables import metadata

config = context.config
target_metadata = metadata


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


@contextlib.contextmanager
def _one_at_a_time(url: sa.engine.URL) -> Iterator[None]:
    """Hold a SQLite database's migration lock file (a second ``pps db upgrade`` started
    at once, e.g. by two units, failed with "table ... already exists")."""
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        yield
        return
    with open(migration_lock_file(database), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        yield


def _wait_for_other_upgrades(connection: sa.Connection) -> None:
    """PostgreSQL: wait, inside the migration's transaction, for another upgrade to commit,
    so that this one reads the version it left (it failed with a duplicate
    ``alembic_version`` before)."""
    if connection.dialect.name == "postgresql":
        connection.execute(
            sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
        )


def _without_cascades(connection: sa.Connection) -> None:
    """SQLite: switch foreign keys off while migrating. A batch migration copies a table,
    drops it and renames the copy; with foreign keys on, the drop deleted every row that
    pointed at it with ON DELETE CASCADE (0004 rebuilds ``users``: every draft was gone).
    The pragma works outside a transaction only, so it is sent and committed first."""
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        connection.commit()


def run_migrations_online() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url, "sqlalchemy.url must be set"
    engine = create_engine(url)
    try:
        with _one_at_a_time(engine.url), engine.connect() as connection:
            _without_cascades(connection)
            # render_as_batch lets later migrations alter SQLite tables too.
            context.configure(
                connection=connection, target_metadata=target_metadata, render_as_batch=True
            )
            with context.begin_transaction():
                _wait_for_other_upgrades(connection)
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
