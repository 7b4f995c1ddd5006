"""The client-side deadline on database waits (pps.platform.repository.deadline).

The watchdog is driven on real sockets (a socketpair whose far end never answers, as a
stopped server's would not); the wiring on the real backends: PostgreSQL connections are
guarded, SQLite ones are left as they are. What a stopped PostgreSQL server does to
requests is in test_faults_postgres.py.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy as sa

from pps.platform.repository.deadline import (
    GuardedConnection,
    GuardedCursor,
    Watchdog,
    guard,
)
from pps.platform.repository.sql import SqlRepository, create_engine


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    near, far = socket.socketpair()
    try:
        yield near, far
    finally:
        near.close()
        far.close()


def test_an_expired_deadline_ends_a_blocked_read(pair: tuple[socket.socket, socket.socket]) -> None:
    near, _far = pair
    watchdog = Watchdog()
    started = time.monotonic()
    deadline = watchdog.arm(near.fileno(), 0.3)
    assert near.recv(1) == b""  # end-of-file: the socket was shut down, not closed
    seconds = time.monotonic() - started
    assert 0.3 <= seconds < 0.3 + 0.5, seconds
    assert watchdog.disarm(deadline) is True
    assert near.fileno() >= 0  # the owner's descriptor stays the owner's to close


def test_a_disarmed_deadline_never_fires(pair: tuple[socket.socket, socket.socket]) -> None:
    near, far = pair
    watchdog = Watchdog()
    deadline = watchdog.arm(near.fileno(), 0.1)
    assert watchdog.disarm(deadline) is False
    assert watchdog.pending() == 0
    time.sleep(0.3)
    far.sendall(b"x")
    near.settimeout(2)
    assert near.recv(1) == b"x"
    near.sendall(b"y")
    assert far.recv(1) == b"y"


def test_an_earlier_deadline_armed_later_still_fires_on_time(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    """The thread sleeps towards the earliest deadline it knows; a shorter one (a pre-ping
    while statements wait) wakes it."""
    near, _far = pair
    other_near, other_far = socket.socketpair()
    watchdog = Watchdog()
    try:
        late = watchdog.arm(other_near.fileno(), 30)
        time.sleep(0.1)  # the thread is asleep until the late one
        started = time.monotonic()
        early = watchdog.arm(near.fileno(), 0.2)
        assert near.recv(1) == b""
        assert time.monotonic() - started < 0.2 + 0.5
        assert watchdog.disarm(early) is True
        assert watchdog.disarm(late) is False
        other_far.sendall(b"z")
        assert other_near.recv(1) == b"z"
    finally:
        other_near.close()
        other_far.close()


def test_many_waits_each_end_at_their_own_deadline() -> None:
    """Threads blocked at once, each with its own deadline, all released by one watchdog."""
    watchdog = Watchdog()
    pairs = [socket.socketpair() for _ in range(8)]
    ended: dict[int, float] = {}
    started = time.monotonic()

    def wait(index: int, sock: socket.socket) -> None:
        sock.recv(1)
        ended[index] = time.monotonic() - started

    deadlines = [watchdog.arm(near.fileno(), 0.2 + 0.1 * i) for i, (near, _) in enumerate(pairs)]
    threads = [threading.Thread(target=wait, args=(i, near)) for i, (near, _) in enumerate(pairs)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=5)
        assert all(watchdog.disarm(deadline) for deadline in deadlines)
        for index, seconds in ended.items():
            assert 0.2 + 0.1 * index <= seconds < 0.2 + 0.1 * index + 0.5, (index, seconds)
        assert len(ended) == len(pairs)
    finally:
        for near, far in pairs:
            near.close()
            far.close()


def test_sqlite_connections_are_left_unguarded(sqlite_url: str) -> None:
    repo = SqlRepository(sqlite_url, timeout=3.0)
    try:
        client = repo.create_client("Shop")
        with repo.engine.connect() as conn:
            dbapi = conn.connection.dbapi_connection
            assert not isinstance(dbapi, GuardedConnection)
        assert repo.get_client(client.identifier) == client
        with pytest.raises(ValueError, match="psycopg"):
            guard(repo.engine, limit=1.0, ping_limit=1.0)
    finally:
        repo.close()


@pytest.mark.postgres
def test_postgresql_connections_are_guarded_and_work(postgres_url: str) -> None:
    repo = SqlRepository(postgres_url, timeout=3.0)
    try:
        client = repo.create_client("Shop")
        user = repo.create_user(client.identifier, {})
        with repo.engine.connect() as conn:
            dbapi = conn.connection.dbapi_connection
            assert isinstance(dbapi, GuardedConnection)
            assert (dbapi.limit, dbapi.ping_limit) == (2.5, 0.75)
            assert isinstance(dbapi.cursor(), GuardedCursor)
            assert conn.execute(sa.text("SHOW statement_timeout")).scalar_one() == "2s"
        assert repo.get_client(client.identifier) == client
        assert repo.user_exists(client.identifier, user.identifier)  # the raw lookup path
        # A statement the server itself ends (its timeout, 2 s) keeps the connection: the
        # client's deadline (2.5 s) comes later.
        with repo.engine.connect() as conn:
            with pytest.raises(sa.exc.OperationalError) as caught:
                conn.execute(sa.text("SELECT pg_sleep(5)"))
            assert isinstance(caught.value.orig, psycopg.errors.QueryCanceled)
            assert not caught.value.connection_invalidated
    finally:
        repo.close()
    # Migrations (no timeout) keep plain connections.
    engine = create_engine(postgres_url)
    try:
        with engine.connect() as conn:
            assert not isinstance(conn.connection.dbapi_connection, GuardedConnection)
    finally:
        engine.dispose()
