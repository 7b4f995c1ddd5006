"""Upgrading a database that already holds data keeps every row: migrations that rebuild a
SQLite table (batch mode) must not cascade the rebuild's DROP into the rows that point at
it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from test_migrations_concurrent import fresh_schema

from pps.platform.repository.sql import MIGRATIONS_DIR, upgrade_database
from pps.platform.repository.storage_budget import SqlStorageBudget

__all__ = ["fresh_schema"]  # the fixture, used by name below


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'old.sqlite3'}"
        return
    _engine, url = request.getfixturevalue("fresh_schema")
    yield url


def _insert(url: str, statements: list[str]) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement), {"now": datetime.now(UTC)})
    finally:
        engine.dispose()


def _count(url: str, table: str) -> int:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            counted = sa.select(sa.func.count()).select_from(sa.table(table))
            return int(conn.execute(counted).scalar_one())
    finally:
        engine.dispose()


def test_upgrading_a_database_of_the_first_revisions_keeps_its_rows(empty_database: str) -> None:
    url = empty_database
    upgrade_database(url, "0001")
    _insert(
        url,
        [
            "INSERT INTO clients (identifier, name, api_key, api_key_hash, allowed_origins, "
            "created_at) VALUES ('c1', 'Shop', 'key', 'hash', '[]', :now)",
            "INSERT INTO templates (client_identifier, identifier, name, data_keys, "
            "custom_attributes, page_count, spec, created_at, updated_at) "
            "VALUES ('c1', 't1', 'Card', '[]', '{}', 1, '{}', :now, :now)",
            "INSERT INTO users (identifier, client_identifier, custom_attributes, created_at, "
            "updated_at) VALUES ('u1', 'c1', '{}', :now, :now)",
            "INSERT INTO drafts (draft_hash, client_identifier, user_identifier, "
            'template_identifier, intent, state, "values", api_default_values, '
            "custom_attributes, version, created_at, updated_at) VALUES ('d1', 'c1', 'u1', "
            "'t1', 'edit', 'open', '{}', '{}', '{}', 3, :now, :now)",
        ],
    )
    upgrade_database(url, "0002")
    _insert(
        url,
        [
            "INSERT INTO processings (processing_id, client_identifier, created_at, updated_at)"
            " VALUES ('p1', 'c1', :now, :now)",
            "INSERT INTO processing_drafts (processing_id, position, draft_hash, state, "
            "updated_at) VALUES ('p1', 0, 'd1', 'processed', :now)",
        ],
    )
    upgrade_database(url)
    for table in ("clients", "templates", "users", "drafts", "processings", "processing_drafts"):
        assert _count(url, table) == 1, table


def test_the_storage_budget_revision_keeps_drafts_and_counts_recorded_uploads(
    empty_database: str,
) -> None:
    """0012 adds ``drafts.upload_size`` (0 for PDFs stored before it: their size is not in
    the database) and the reservations table; uploads keep their recorded sizes."""
    url = empty_database
    upgrade_database(url, "0011")
    _insert(
        url,
        [
            "INSERT INTO clients (identifier, name, api_key, api_key_hash, allowed_origins, "
            "created_at) VALUES ('c1', 'Shop', 'key', 'hash', '[]', :now)",
            "INSERT INTO templates (client_identifier, identifier, name, data_keys, "
            "custom_attributes, page_count, spec, created_at, updated_at) "
            "VALUES ('c1', 't1', 'Card', '[]', '{}', 1, '{}', :now, :now)",
            "INSERT INTO users (identifier, client_identifier, custom_attributes, created_at, "
            "updated_at) VALUES ('u1', 'c1', '{}', :now, :now)",
            "INSERT INTO drafts (draft_hash, client_identifier, user_identifier, "
            'template_identifier, intent, state, "values", api_default_values, '
            "custom_attributes, version, created_at, updated_at, upload_key) VALUES ('d1', "
            "'c1', 'u1', 't1', 'upload', 'open', '{}', '{}', '{}', 3, :now, :now, "
            "'drafts/c1/d1/upload/x.pdf')",
            "INSERT INTO uploads (identifier, client_identifier, kind, name, size, storage_key, "
            "created_at) VALUES ('f1', 'c1', 'png', 'a.png', 5000000000, 'uploads/c1/f1/file.png'"
            ", :now)",
        ],
    )
    upgrade_database(url)
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            row = conn.execute(sa.text("SELECT upload_key, upload_size, version FROM drafts")).one()
        assert tuple(row) == ("drafts/c1/d1/upload/x.pdf", 0, 3)
        budget = SqlStorageBudget(engine)
        assert budget.used("c1") == 5_000_000_000  # beyond 32 bits, summed as such
        budget.release(budget.reserve("c1", 1000, 5_000_001_000))
    finally:
        engine.dispose()
    config = Config()  # and back down: the drafts stay
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.downgrade(config, "0011")
    for table in ("clients", "drafts", "uploads"):
        assert _count(url, table) == 1, table


def _indexes(url: str) -> dict[str, set[str]]:
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        return {
            table: {str(index["name"]) for index in inspector.get_indexes(table)}
            for table in ("processings", "notification_keys", "webhook_deliveries")
        }
    finally:
        engine.dispose()


#: What retention pruning looks its rows up by (revision 0013), per table.
PRUNE_INDEXES = {
    "processings": "ix_processings_updated_at",
    "notification_keys": "ix_notification_keys_created_at",
    "webhook_deliveries": "ix_webhook_deliveries_client_created",
}


@pytest.mark.parametrize("start", ["0001", "0011", "0012"])
def test_upgrading_adds_the_indexes_pruning_looks_rows_up_by(
    empty_database: str, start: str
) -> None:
    """From any earlier revision ``pps db upgrade`` gives both databases the indexes of
    0013; a downgrade to 0012 takes them away again and keeps the rows."""
    url = empty_database
    upgrade_database(url, start)
    if start != "0001":
        before = _indexes(url)
        assert all(index not in before[table] for table, index in PRUNE_INDEXES.items())
    upgrade_database(url)
    after = _indexes(url)
    assert all(index in after[table] for table, index in PRUNE_INDEXES.items()), after
    _insert(
        url,
        [
            "INSERT INTO clients (identifier, name, api_key, api_key_hash, allowed_origins, "
            "created_at) VALUES ('c1', 'Shop', 'key', 'hash', '[]', :now)",
            "INSERT INTO processings (processing_id, client_identifier, created_at, updated_at)"
            " VALUES ('p1', 'c1', :now, :now)",
            "INSERT INTO notification_keys (client_identifier, key, message_identifier, "
            "created_at) VALUES ('c1', 'p1:final', 'msg_1', :now)",
        ],
    )
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.downgrade(config, "0012")
    down = _indexes(url)
    assert all(index not in down[table] for table, index in PRUNE_INDEXES.items()), down
    for table in ("processings", "notification_keys"):
        assert _count(url, table) == 1, table
