"""The ephemeral store embedded in one SQLite file, for a single host without Redis.

Several gunicorn worker processes share the file: WAL mode lets readers run beside the
one writer, a busy timeout makes writers queue instead of failing, and every operation is
one autocommitted statement, so a claim is atomic across processes.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pps.platform.ephemeral import EphemeralUnavailable, T, check_ttl

DEFAULT_BUSY_TIMEOUT = 5.0
PURGE_INTERVAL = 60.0
"""Seconds between opportunistic deletions of expired rows, per process."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    expires_at REAL NOT NULL
)
"""
_INDEX = "CREATE INDEX IF NOT EXISTS entries_expires_at ON entries (expires_at)"

# A claim takes over a row only once it has expired; rowcount tells whether it did.
_CLAIM = """
INSERT INTO entries (key, value, expires_at) VALUES (?, '', ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
WHERE entries.expires_at <= ?
"""
_PUT = """
INSERT INTO entries (key, value, expires_at) VALUES (?, ?, ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
"""
# A counter starts at 1 when new or expired; otherwise it counts up and keeps its expiry.
_COUNT = """
INSERT INTO entries (key, value, expires_at) VALUES (?, '1', ?)
ON CONFLICT (key) DO UPDATE SET
    value = CASE WHEN entries.expires_at <= ? THEN '1'
                 ELSE CAST(CAST(entries.value AS INTEGER) + 1 AS TEXT) END,
    expires_at = CASE WHEN entries.expires_at <= ? THEN excluded.expires_at
                      ELSE entries.expires_at END
RETURNING value
"""
_TAKE = "DELETE FROM entries WHERE key = ? AND expires_at > ? RETURNING value"
_GET = "SELECT value FROM entries WHERE key = ? AND expires_at > ?"
_PURGE = "DELETE FROM entries WHERE expires_at <= ?"


class SqliteStore:
    """:class:`~pps.platform.ephemeral.EphemeralStore` in a SQLite file shared by worker processes.

    Expiry compares against the wall clock (``time.time()``), the one clock all processes
    share. Rows that expired are invisible at once and deleted every
    :data:`PURGE_INTERVAL` seconds by whichever process writes next.
    """

    def __init__(self, path: str | Path, *, timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        # Connections inherited through fork are never used nor closed in the child:
        # closing them could disturb the parent's locks on the same file.
        self._inherited: list[sqlite3.Connection] = []
        self._next_purge = 0.0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = self._connection()
            # WAL is a property of the file; setting it again is a no-op.
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(_SCHEMA)
            conn.execute(_INDEX)
        except (sqlite3.Error, OSError) as exc:
            raise EphemeralUnavailable(f"cannot open ephemeral store {self.path}: {exc}") from exc

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection in this process (sqlite3 connections survive neither)."""
        pid = os.getpid()
        if pid != self._pid:
            with self._lock:
                if pid != self._pid:
                    self._inherited.extend(self._connections)
                    self._connections = []
                    self._local = threading.local()
                    self._pid = pid
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path,
                timeout=self.timeout,
                isolation_level=None,  # autocommit: every statement is its own transaction
                check_same_thread=False,  # only so close() may close it from another thread
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def claim(self, key: str, ttl: int) -> bool:
        check_ttl(ttl)
        now = time.time()
        try:
            cursor = self._connection().execute(_CLAIM, (key, now + ttl, now))
        except sqlite3.Error as exc:
            raise EphemeralUnavailable(f"ephemeral store {self.path}: {exc}") from exc
        self._maybe_purge(now)
        return cursor.rowcount == 1

    def claim_while(self, key: str, ttl: int, work: Callable[[], T]) -> tuple[T] | None:
        # An in-process write: nothing to wait for, so the work runs for the winner only.
        return (work(),) if self.claim(key, ttl) else None

    def claim_and_put(self, key: str, ttl: int, link: str, value: str, link_ttl: int) -> bool:
        """Both statements in one ``BEGIN IMMEDIATE`` transaction: both or neither."""
        check_ttl(ttl)
        check_ttl(link_ttl)
        now = time.time()
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                won = conn.execute(_CLAIM, (key, now + ttl, now)).rowcount == 1
                if won:
                    conn.execute(_PUT, (link, value, now + link_ttl))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise EphemeralUnavailable(f"ephemeral store {self.path}: {exc}") from exc
        self._maybe_purge(now)
        return won

    def put_link(self, key: str, value: str, ttl: int) -> None:
        check_ttl(ttl)
        now = time.time()
        try:
            self._connection().execute(_PUT, (key, value, now + ttl))
        except sqlite3.Error as exc:
            raise EphemeralUnavailable(f"ephemeral store {self.path}: {exc}") from exc
        self._maybe_purge(now)

    def take_link(self, key: str) -> str | None:
        try:
            rows = self._connection().execute(_TAKE, (key, time.time())).fetchall()
        except sqlite3.Error as exc:
            raise EphemeralUnavailable(f"ephemeral store {self.path}: {exc}") from exc
        return str(rows[0][0]) if rows else None

    def count(self, key: str, ttl: int) -> int:
        check_ttl(ttl)
        now = time.time()
        try:
            row = self._connection().execute(_COUNT, (key, now + ttl, now, now)).fetchone()
        except sqlite3.Error as exc:
            raise EphemeralUnavailable(f"ephemeral store {self.path}: {exc}") from exc
        self._maybe_purge(now)
        return int(row[0])

    def get_link(self, key: str) -> str | None:
        try:
            row = self._connection().execute(_GET, (key, time.time())).fetchone()
        except sqlite3.Error as exc:
            raise EphemeralUnavailable(f"ephemeral store {self.path}: {exc}") from exc
        return None if row is None else str(row[0])

    def purge_expired(self) -> int:
        """Delete expired rows now; the number deleted."""
        try:
            return self._connection().execute(_PURGE, (time.time(),)).rowcount
        except sqlite3.Error as exc:
            raise EphemeralUnavailable(f"ephemeral store {self.path}: {exc}") from exc

    def _maybe_purge(self, now: float) -> None:
        # Not on every call: the delete is a second write on the login path. Its failure is
        # ignored: the operation before it has already committed, and reporting that as
        # unavailable would make a claimed nonce look unclaimed to the caller.
        if now < self._next_purge:
            return
        self._next_purge = now + PURGE_INTERVAL
        with contextlib.suppress(sqlite3.Error):
            self._connection().execute(_PURGE, (now,))

    def ping(self) -> bool:
        """True when the file can be read; False instead of raising, for health checks."""
        try:
            self._connection().execute("SELECT 1 FROM entries LIMIT 1").fetchall()
        except sqlite3.Error:
            return False
        return True

    def close(self) -> None:
        """Close this process's connections; later calls open new ones."""
        with self._lock:
            connections, self._connections = self._connections, []
            self._local = threading.local()
        for conn in connections:
            conn.close()
