"""Short-lived state with a TTL: login nonces, file links and rate-limit counters.

Two implementations share one contract: Redis for deployments with several nodes, and an
embedded SQLite store for a single host without Redis (safe across gunicorn workers).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

__all__ = [
    "EphemeralStore",
    "EphemeralUnavailable",
    "check_ttl",
    "handoff_key",
    "link_key",
    "no_work",
    "nonce_key",
    "open_ephemeral",
]


T = TypeVar("T")


def no_work() -> None:
    """The ``work`` of a claim that has nothing to do while the store answers."""
    return None


class EphemeralUnavailable(Exception):
    """The store cannot be reached. Callers fail closed: no login, no link."""


class EphemeralStore(Protocol):
    def claim(self, key: str, ttl: int) -> bool:
        """Atomically mark ``key`` as used for ``ttl`` seconds; True only for the first caller.

        Must stay correct when the underlying command is retried after a timeout.
        Raises :class:`EphemeralUnavailable` when the store cannot answer.
        """
        ...

    def claim_while(self, key: str, ttl: int, work: Callable[[], T]) -> tuple[T] | None:
        """:meth:`claim`, running ``work()`` while the store answers.

        ``(work(),)`` for the first caller, None for every other: what ``work`` makes is
        handed out only with the claim won, so it must do nothing that counts unless its
        result is used (signing a session cookie, say). It may run for a caller that loses.
        """
        ...

    def claim_and_put(self, key: str, ttl: int, link: str, value: str, link_ttl: int) -> bool:
        """:meth:`claim` ``key`` and, for the winner only, :meth:`put_link` ``link``, atomically.

        Both happen or neither: a nonce is never used up without what it paid for (a login
        handoff, a file link) being stored, and a loser stores nothing. Retry-safe like
        :meth:`claim`.
        """
        ...

    def put_link(self, key: str, value: str, ttl: int) -> None:
        """Remember ``value`` under ``key`` for ``ttl`` seconds."""
        ...

    def take_link(self, key: str) -> str | None:
        """The value under ``key``, deleted in the same step: exactly one caller gets it."""
        ...

    def count(self, key: str, ttl: int) -> int:
        """Add one to the counter ``key`` and return its new value (1 for a new counter).

        A new counter expires ``ttl`` seconds after its first count; later counts do not
        extend it, so a key per time window counts that window (a rate limit). A command
        retried after a timeout may count twice: fine for a limit, not for money.
        """
        ...

    def get_link(self, key: str) -> str | None:
        """The value stored under ``key``, or None once it expired or never existed."""
        ...

    def ping(self) -> bool: ...

    def close(self) -> None: ...


def nonce_key(client: str, jti: str) -> str:
    """``pps:jti:<client>:<jti>``: a nonce is only ever unique within one client."""
    return f"pps:jti:{client}:{jti}"


def handoff_key(code: str) -> str:
    return f"pps:handoff:{code}"


def link_key(token: str) -> str:
    return f"pps:link:{token}"


def check_ttl(ttl: int) -> int:
    """Reject TTLs below one second instead of clamping them.

    Redis refuses ``EX 0`` and a nonce that expires at once would allow a replay, so a
    TTL that small is a caller's bug (e.g. a token's remaining lifetime computed without
    leeway) and should surface as one rather than be papered over.
    """
    if isinstance(ttl, bool) or not isinstance(ttl, int):
        raise TypeError(f"ttl must be a whole number of seconds, got {ttl!r}")
    if ttl < 1:
        raise ValueError(f"ttl must be at least 1 second, got {ttl}")
    return ttl


_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
_SQLITE_PREFIX = "sqlite:///"


def open_ephemeral(
    url: str, *, instance_path: Path, redis_timeout: float | None = None
) -> EphemeralStore:
    """The store named by ``url`` (``PPS_REDIS_URL``), chosen by its scheme.

    ``redis_timeout`` (``PPS_REDIS_TIMEOUT``) bounds a failing Redis call; see
    :mod:`pps.platform.redis_client`.

    ``redis://``, ``rediss://`` and ``unix://`` open Redis. An empty URL opens the embedded
    SQLite store in ``instance_path``; ``sqlite:///relative`` and ``sqlite:////absolute``
    name its file explicitly (the SQLAlchemy convention, like ``PPS_DATABASE_URL``).
    """
    # Imported here: both implementations import this module for the exception type.
    if url.lower().startswith(_REDIS_SCHEMES):
        from pps.platform.ephemeral.redis_store import RedisStore

        if redis_timeout is None:
            return RedisStore(url)
        return RedisStore(url, timeout=redis_timeout)
    if not url:
        from pps.platform.ephemeral.sqlite_store import SqliteStore

        return SqliteStore(instance_path / "ephemeral.sqlite3")
    if url.lower().startswith(_SQLITE_PREFIX):
        path = url[len(_SQLITE_PREFIX) :]
        if not path or path == ":memory:":
            # Each worker process would get its own empty store: nonces would replay.
            raise ValueError(
                f"ephemeral store URL {url!r} names no file; use sqlite:///path/to/file "
                "(an in-memory store is not shared between worker processes)"
            )
        from pps.platform.ephemeral.sqlite_store import SqliteStore

        return SqliteStore(path)
    raise ValueError(
        f"unsupported ephemeral store URL {url!r}: use redis://, rediss:// or unix:// for "
        "Redis, sqlite:///path for the embedded store, or leave it empty for "
        "<instance>/ephemeral.sqlite3"
    )
