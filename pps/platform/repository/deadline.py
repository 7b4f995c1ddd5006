"""A client-side deadline on every wait for a PostgreSQL server, for when the server stops.

Why: ``connect_timeout`` and the server's ``statement_timeout`` (see
:func:`pps.platform.repository.sql.server_timeouts`) bound a request only while PostgreSQL
runs. When every PostgreSQL process stops at once (a hung VM, stuck storage, a frozen
cgroup), a request on a connection that was already open waits for as long as the server
does: the statement timeout is the server's own timer; the kernel keeps ACKing, so TCP
keepalives and ``tcp_user_timeout`` never fire; a cancel request goes through the
postmaster, which is stopped too; psycopg 3 has no client-side timeout for a query.
Measured on PostgreSQL 15 with the postmaster and every backend stopped: ``SELECT 1`` with
keepalives 1/1/1 s and ``tcp_user_timeout=1000`` was still waiting after 5 s (and answered
after SIGCONT); ``cancel_safe(timeout=3)`` raised ``CancellationTimeout`` and the query went
on waiting. gunicorn then kills the worker after its 30 s timeout.

How: one watchdog thread per process holds a heap of deadlines. Every ``execute``,
``executemany``, ``commit`` and ``rollback`` on a guarded connection (all the waits
SQLAlchemy and pps make, including the pool's pre-ping and its rollback on return) arms a
deadline for the connection's socket (``pgconn.socket``) and disarms it when it returns. A
deadline that expires shuts that socket down through a duplicate descriptor (libpq keeps
and later closes its own): libpq's blocked wait sees end-of-file at once (measured: under
1 ms), psycopg raises ``OperationalError`` and marks the connection broken, and SQLAlchemy
invalidates it and the pool as on any disconnect. The request answers 503
(:mod:`pps.platform.outages`); the next one connects afresh, which succeeds again as soon
as the server runs. A COMMIT cut off this way is in doubt, as after any lost connection
(measured: the stopped server applied it once continued).

Cost on the hot path: arming and disarming take the watchdog's lock twice and push one heap
entry; disarmed entries are dropped when their time comes, and the thread wakes at most
every ``slack`` seconds, not once per query. Measured in-process on the shared 2-core test
machine: 2.3-3 us per guarded wait (arm plus disarm, ``_Bounded`` on a real connection);
a raw point lookup (``lookups.PointLookup``: pre-ping, SELECT and the rollback on return,
three guarded waits) took 137 us unguarded and 149 us guarded, best of 15 runs of 2000.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import os
import socket
import threading
import time
import weakref
from collections.abc import Iterable
from types import TracebackType
from typing import Any, Self

import psycopg
import sqlalchemy as sa
from psycopg.abc import Params
from psycopg.rows import Row, TupleRow
from sqlalchemy.engine import Engine

__all__ = ["DeadlineExceeded", "GuardedConnection", "GuardedCursor", "Watchdog", "guard"]


class DeadlineExceeded(psycopg.OperationalError):
    """The server did not answer in time and the connection was closed.

    An ``OperationalError`` of the driver, so SQLAlchemy wraps it as its own
    ``OperationalError`` and treats the (broken) connection as disconnected.
    """


class Deadline:
    """One armed wait: the socket to shut down at ``at`` unless disarmed first."""

    __slots__ = ("at", "fileno", "fired")

    def __init__(self, at: float, fileno: int) -> None:
        self.at = at
        self.fileno = fileno  # -1 once disarmed or fired
        self.fired = False


def _shut_down(fileno: int) -> None:
    """End the connection on ``fileno`` without closing the descriptor its owner holds."""
    try:
        duplicate = os.dup(fileno)
    except OSError:
        return
    try:
        sock = socket.socket(fileno=duplicate)
    except OSError:  # not a socket (cannot happen for libpq's, but never close blindly)
        os.close(duplicate)
        return
    with sock, contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class Watchdog:
    """One thread and a heap of deadlines, shared by every guarded connection of a process.

    ``slack`` is how late a deadline may fire: the thread sleeps at least that long between
    rounds, so a busy server costs a few wake-ups a second rather than one per query.
    The lock is held while a socket is shut down, so an owner that disarmed (and may then
    close its descriptor) can never see another socket with the same number shut down.
    """

    def __init__(self, slack: float = 0.05) -> None:
        self.slack = slack
        self._start()
        _WATCHDOGS.add(self)

    def _start(self) -> None:
        """(Re)initialize; also in a forked child, which has none of the parent's threads."""
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._wake_at = math.inf

    def arm(self, fileno: int, seconds: float) -> Deadline:
        deadline = Deadline(time.monotonic() + seconds, fileno)
        with self._lock:
            heapq.heappush(self._heap, (deadline.at, next(self._order), deadline))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="pps-db-deadlines", daemon=True
                )
                self._thread.start()
            elif deadline.at < self._wake_at:
                self._wakeup.notify()
        return deadline

    def disarm(self, deadline: Deadline) -> bool:
        """Disarm ``deadline``; True if it had fired already (its socket is shut down)."""
        with self._lock:
            deadline.fileno = -1
            return deadline.fired

    def pending(self) -> int:
        """Armed deadlines that have neither fired nor been disarmed."""
        with self._lock:
            return sum(1 for _, _, deadline in self._heap if deadline.fileno >= 0)

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                heap = self._heap
                while heap and heap[0][0] <= now:
                    deadline = heapq.heappop(heap)[2]
                    if deadline.fileno >= 0:
                        _shut_down(deadline.fileno)
                        deadline.fired = True
                        deadline.fileno = -1
                if heap:
                    pause = max(heap[0][0] - now, self.slack)
                    self._wake_at = now + pause
                    self._wakeup.wait(pause)
                else:
                    self._wake_at = math.inf
                    self._wakeup.wait()


_WATCHDOGS: weakref.WeakSet[Watchdog] = weakref.WeakSet()


def _restart_in_child() -> None:
    for watchdog in _WATCHDOGS:
        watchdog._start()


os.register_at_fork(after_in_child=_restart_in_child)
WATCHDOG = Watchdog()


class _Bounded:
    """Context of one wait on the server: arm on entry, disarm on exit, and name the cause
    when the deadline cut the connection."""

    __slots__ = ("_connection", "_deadline", "_seconds")

    def __init__(self, connection: GuardedConnection[Any]) -> None:
        self._connection = connection

    def __enter__(self) -> None:
        connection = self._connection
        self._seconds = connection.ping_limit if connection.resting else connection.limit
        try:
            fileno = connection.pgconn.socket
        except psycopg.OperationalError:  # closed: the call itself fails at once
            self._deadline: Deadline | None = None
            return
        self._deadline = WATCHDOG.arm(fileno, self._seconds)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        deadline = self._deadline
        if deadline is not None and WATCHDOG.disarm(deadline) and isinstance(error, psycopg.Error):
            raise DeadlineExceeded(
                f"the database server did not answer within {self._seconds:g} s;"
                " the connection was closed"
            ) from error


class GuardedCursor(psycopg.Cursor[Row]):
    """A psycopg cursor whose statements wait for the server no longer than its
    connection's limit."""

    def execute(
        self,
        query: Any,  # psycopg's Query: its two overloads split it, this takes both
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> Self:
        connection = self.connection
        if not isinstance(connection, GuardedConnection):
            return super().execute(query, params, prepare=prepare, binary=binary)
        with _Bounded(connection):
            return super().execute(query, params, prepare=prepare, binary=binary)

    def executemany(
        self, query: Any, params_seq: Iterable[Params], *, returning: bool = False
    ) -> None:
        connection = self.connection
        if not isinstance(connection, GuardedConnection):
            return super().executemany(query, params_seq, returning=returning)
        with _Bounded(connection):
            return super().executemany(query, params_seq, returning=returning)


class GuardedConnection(psycopg.Connection[Row]):
    """A psycopg connection whose every wait on the server has a deadline.

    ``limit`` bounds a statement, commit or rollback; ``ping_limit`` the first statement
    after the pool hands the connection out again (``resting``), which is SQLAlchemy's
    pre-ping: a dead connection found there still leaves time to connect afresh.
    """

    limit: float = math.inf
    ping_limit: float = math.inf
    resting: bool = False

    def commit(self) -> None:
        with _Bounded(self):
            super().commit()

    def rollback(self) -> None:
        with _Bounded(self):
            super().rollback()


def guard(engine: Engine, *, limit: float, ping_limit: float) -> None:
    """Make ``engine`` (``postgresql+psycopg``) open guarded connections.

    Through SQLAlchemy's public events: ``do_connect`` opens the connection with the
    guarded classes, and the pool's ``checkin``/``checkout`` mark it resting while it waits
    in the pool.
    """
    if engine.dialect.driver != "psycopg":
        raise ValueError(f"deadlines need the psycopg driver, not {engine.dialect.driver!r}")

    @sa.event.listens_for(engine, "do_connect")
    def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        cparams["cursor_factory"] = GuardedCursor
        connection: GuardedConnection[TupleRow] = GuardedConnection.connect(*cargs, **cparams)
        connection.limit = limit
        connection.ping_limit = ping_limit
        return connection

    @sa.event.listens_for(engine, "checkin")
    def _rest(dbapi_connection: Any, _record: Any) -> None:
        if isinstance(dbapi_connection, GuardedConnection):
            dbapi_connection.resting = True

    @sa.event.listens_for(engine, "checkout")
    def _wake(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        if isinstance(dbapi_connection, GuardedConnection):
            dbapi_connection.resting = False
