"""Upgrading a database that already holds data keeps every row: migrations that rebuild a
SQLite table (batch mode) must not cascade the rebuild's DROP into the rows that point at
it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from test_migrations_concurrent import fresh_schema

from pps.platform.repository.sql import upgrade_database

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
