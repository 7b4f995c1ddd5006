"""Point lookups for the hottest paths, below SQLAlchemy's result and pool machinery.

Two run at every request of the busiest routes: "is this a user of that client" at every
``/auth``, and "whose draft is this, which version" at every file link. Through SQLAlchemy a
lookup costs several times what the database itself spends on it, so these run a prebuilt
SQL string on a DBAPI connection directly:

- on PostgreSQL (and any other backend), on a connection from the engine's pool, in
  autocommit mode (no ``BEGIN`` and ``ROLLBACK`` around the one SELECT);
- on a SQLite file, on a read-only connection held by each thread. SQLite connections are
  in-process file handles, so holding one per thread costs nothing on the server side, and
  it saves the pool's check-out, reset and check-in (under load, the larger part of the
  lookup). In autocommit mode every SELECT reads the latest committed state: there is no
  cache to invalidate.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine
from sqlalchemy.pool import PoolProxiedConnection

from pps.platform.per_thread import PerThread

__all__ = ["PointLookup", "SqliteReaders", "readers_for"]


class _Reader(sqlite3.Connection):
    """A plain connection that can be referred to weakly (``sqlite3.Connection`` cannot)."""

    pid: int


class SqliteReaders:
    """One read-only autocommit connection per thread (and per process) to a SQLite file.

    A connection opened before a fork is never used by the child: connections are keyed by
    process id, so a gunicorn worker opens its own.
    """

    def __init__(self, path: str, timeout: float) -> None:
        self._path = path
        self._timeout = timeout
        self._held = PerThread(self._open)
        # Weak, so that a connection goes when its thread does (servers that start a
        # thread per request), and close() can still reach those that are alive.
        self._opened: weakref.WeakSet[_Reader] = weakref.WeakSet()
        self._lock = threading.Lock()

    def connection(self) -> sqlite3.Connection:
        """This thread's reader, opened on first use."""
        return self._held.get()

    def _open(self) -> _Reader:
        connection = sqlite3.connect(
            self._path,
            timeout=self._timeout,
            isolation_level=None,  # autocommit: each SELECT sees the latest commit
            check_same_thread=False,  # only so that close() may close it from elsewhere
            cached_statements=16,
            factory=_Reader,
        )
        connection.execute("PRAGMA query_only=ON")  # a reader can never write by mistake
        connection.pid = os.getpid()
        with self._lock:
            self._opened.add(connection)
        return connection

    def close(self) -> None:
        """Close this process's connections; threads that look up again get new ones."""
        self._held.forget()
        with self._lock:
            opened = list(self._opened)
        pid = os.getpid()
        for connection in opened:
            if connection.pid == pid:  # a parent's connections are the parent's to close
                connection.close()


def readers_for(url: URL, timeout: float) -> SqliteReaders | None:
    """Held readers for a SQLite file database; None for anything else (in-memory, URI
    parameters, other backends), which keep using the pool."""
    if url.get_backend_name() != "sqlite" or url.query:
        return None
    if not url.database or url.database == ":memory:" or url.database.startswith("file:"):
        return None
    return SqliteReaders(url.database, timeout)


class PointLookup:
    """A prebuilt SELECT returning at most one row of plain values (strings, integers).

    It skips SQLAlchemy's result machinery; it still compiles with the engine's dialect
    (parameter style, quoting) and, without held readers, uses the engine's pool.
    """

    def __init__(
        self, engine: Engine, statement: sa.Select[Any], readers: SqliteReaders | None
    ) -> None:
        compiled = statement.compile(dialect=engine.dialect)
        self._engine = engine
        self._readers = readers
        self._sql = str(compiled)
        self._order = list(compiled.positiontup or ())

    def found(self, params: dict[str, Any]) -> bool:
        return self.first(params) is not None

    def first(self, params: dict[str, Any]) -> tuple[Any, ...] | None:
        args: Any = tuple(params[name] for name in self._order) if self._order else params
        if self._readers is not None:
            row = self._readers.connection().execute(self._sql, args).fetchone()
            return None if row is None else tuple(row)
        connection = self._engine.raw_connection()
        try:
            return self._autocommit_row(connection, args)
        finally:
            connection.close()

    def _autocommit_row(
        self, connection: PoolProxiedConnection, args: Any
    ) -> tuple[Any, ...] | None:
        """The row, read in autocommit mode: one SELECT is its own transaction, so no
        ``BEGIN`` goes before it and no ``ROLLBACK`` after it (the pool's reset on return
        finds nothing to roll back). On PostgreSQL a lookup then takes two round trips, the
        pool's pre-ping and the SELECT, instead of four. A connection whose lookup failed is
        invalidated rather than put back with its mode changed: the pool makes a new one.
        """
        dialect = self._engine.dialect
        dbapi_connection = connection.dbapi_connection
        assert dbapi_connection is not None  # a pool hands out open connections only
        dialect.set_isolation_level(dbapi_connection, "AUTOCOMMIT")
        try:
            cursor = connection.cursor()
            try:
                cursor.execute(self._sql, args)
                row = cursor.fetchone()
            finally:
                cursor.close()
        except BaseException:
            connection.invalidate()
            raise
        dialect.reset_isolation_level(dbapi_connection)
        return None if row is None else tuple(row)
