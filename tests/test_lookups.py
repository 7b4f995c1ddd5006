"""The point lookups of the hot paths: held SQLite readers and their fallback to the pool.

A reader is held by its thread for the life of the process, so what must hold is that it
never serves stale or another process's data, never writes, and goes away when it should.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TypeVar

import psycopg
import pytest
import sqlalchemy as sa

from pps.platform.repository.lookups import SqliteReaders, readers_for
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import users

T = TypeVar("T")


@pytest.fixture
def sqlite_repository(sqlite_url: str) -> Iterator[SqlRepository]:
    repo = SqlRepository(sqlite_url)
    yield repo
    repo.close()


def _in_thread(function: Callable[[], T]) -> T:
    result: list[T] = []
    thread = threading.Thread(target=lambda: result.append(function()))
    thread.start()
    thread.join()
    return result[0]


def test_file_databases_get_held_readers_and_nothing_else_does(sqlite_url: str) -> None:
    assert readers_for(sa.make_url(sqlite_url), timeout=1) is not None
    for url in (
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:///file:shared?mode=memory&cache=shared&uri=true",
        "postgresql+psycopg://postgres@127.0.0.1/test",
    ):
        assert readers_for(sa.make_url(url), timeout=1) is None, url


def test_a_held_reader_sees_every_commit_made_after_it_was_opened(
    sqlite_repository: SqlRepository,
) -> None:
    client = sqlite_repository.create_client("Shop")
    assert not sqlite_repository.user_exists(client.identifier, "nobody")  # opens the reader

    user = sqlite_repository.create_user(client.identifier, {})
    assert sqlite_repository.user_exists(client.identifier, user.identifier)
    sqlite_repository.delete_user(client.identifier, user.identifier)
    assert not sqlite_repository.user_exists(client.identifier, user.identifier)


def test_a_write_by_another_connection_is_seen_by_every_thread(
    sqlite_repository: SqlRepository, sqlite_url: str
) -> None:
    client = sqlite_repository.create_client("Shop")
    early = sqlite_repository.create_user(client.identifier, {})
    assert _in_thread(lambda: sqlite_repository.user_exists(client.identifier, early.identifier))
    assert sqlite_repository.user_exists(client.identifier, early.identifier)

    other = SqlRepository(sqlite_url)  # another process's writes look just like this
    try:
        late = other.create_user(client.identifier, {})
        other.delete_user(client.identifier, early.identifier)
    finally:
        other.close()
    for exists in (
        lambda: sqlite_repository.user_exists(client.identifier, late.identifier),
        lambda: _in_thread(
            lambda: sqlite_repository.user_exists(client.identifier, late.identifier)
        ),
    ):
        assert exists()
    assert not sqlite_repository.user_exists(client.identifier, early.identifier)


def test_each_thread_holds_its_own_reader_and_keeps_it(sqlite_url: str) -> None:
    readers = SqliteReaders(sqlite_url.removeprefix("sqlite:///"), timeout=1)
    try:
        mine = readers.connection()
        assert readers.connection() is mine
        theirs = _in_thread(readers.connection)
        assert theirs is not mine
    finally:
        readers.close()


def test_readers_cannot_write(sqlite_url: str) -> None:
    readers = SqliteReaders(sqlite_url.removeprefix("sqlite:///"), timeout=1)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            readers.connection().execute("DELETE FROM clients")
    finally:
        readers.close()


def test_close_closes_the_readers_of_every_thread_and_later_lookups_reopen(
    sqlite_url: str,
) -> None:
    readers = SqliteReaders(sqlite_url.removeprefix("sqlite:///"), timeout=1)
    mine = readers.connection()
    theirs = _in_thread(readers.connection)
    readers.close()
    for connection in (mine, theirs):
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            connection.execute("SELECT 1")
    reopened = readers.connection()
    assert reopened is not mine
    assert reopened.execute("SELECT 1").fetchone() == (1,)
    readers.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_opens_its_own_reader(sqlite_url: str) -> None:
    """gunicorn forks its workers: a connection of the parent is never used by a child."""
    readers = SqliteReaders(sqlite_url.removeprefix("sqlite:///"), timeout=1)
    parent = readers.connection()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, never return into pytest
        code = 1
        try:
            child = readers.connection()
            ok = child is not parent and child.execute("SELECT 1").fetchone() == (1,)
            readers.close()  # closes the child's own reader only
            code = 0 if ok else 2
        finally:
            os.write(write, bytes([code]))
            os._exit(0)
    os.close(write)
    try:
        status = os.read(read, 1)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    assert status == b"\x00"
    assert readers.connection() is parent
    assert parent.execute("SELECT 1").fetchone() == (1,)  # the child left it alone
    readers.close()


# -- lookups on the pool (PostgreSQL) ----------------------------------------------------


def _write_then_fail(repo: SqlRepository, client: str, identifier: str) -> None:
    """A transaction that inserts a user and then fails: nothing of it may remain."""
    with pytest.raises(RuntimeError), repo.engine.begin() as conn:
        now = datetime.now(UTC)
        conn.execute(
            users.insert().values(
                identifier=identifier,
                client_identifier=client,
                custom_attributes={},
                created_at=now,
                updated_at=now,
            )
        )
        raise RuntimeError("the rest of the transaction failed")


def test_a_pooled_lookup_hands_its_connection_back_transactional(postgres_url: str) -> None:
    """Lookups read in autocommit mode (no BEGIN, no ROLLBACK); the next user of the
    connection must get it back as the pool gave it, or its writes would stop being atomic."""
    repo = SqlRepository(postgres_url, timeout=3.0)
    try:
        client = repo.create_client("Lookups").identifier
        user = repo.create_user(client, {}).identifier
        assert repo.user_exists(client, user) is True
        assert repo.user_exists(client, "nobody") is False
        pooled = repo.engine.raw_connection()  # one thread so far: the same connection
        try:
            assert pooled.dbapi_connection is not None
            assert pooled.dbapi_connection.autocommit is False
        finally:
            pooled.close()
        _write_then_fail(repo, client, "atomic1")
        assert repo.user_exists(client, "atomic1") is False
    finally:
        repo.close()


def test_a_pooled_lookup_that_fails_leaves_no_connection_in_autocommit(
    postgres_url: str,
) -> None:
    """The statement timeout cancels a lookup that waits on a lock: the connection it ran
    on is dropped, and the pool's next one is transactional."""
    # 1 s per statement: ample for the writes around the lookup on a loaded machine.
    repo = SqlRepository(postgres_url, timeout=1.5)
    blocker = sa.create_engine(postgres_url)
    try:
        client = repo.create_client("Lookups").identifier
        user = repo.create_user(client, {}).identifier
        with blocker.begin() as locked:
            locked.execute(sa.text("LOCK TABLE users IN ACCESS EXCLUSIVE MODE"))
            with pytest.raises(psycopg.errors.QueryCanceled):
                repo.user_exists(client, user)
        _write_then_fail(repo, client, "atomic2")  # before any other lookup could reset it
        assert repo.user_exists(client, "atomic2") is False
        assert repo.user_exists(client, user) is True
    finally:
        blocker.dispose()
        repo.close()
