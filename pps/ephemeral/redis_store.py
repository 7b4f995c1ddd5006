"""The ephemeral store on Redis: one command per operation, keys expire by themselves."""

from __future__ import annotations

import os
import secrets
import threading
import weakref
from typing import Any, Protocol, cast

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry

from pps.ephemeral import EphemeralUnavailable, check_ttl

# Short timeouts and few retries: a login waits at most a few seconds for a Redis that is
# gone and then fails closed, instead of redis-py's default of 10 retries of 5 s each.
DEFAULT_SOCKET_TIMEOUT = 2.0
DEFAULT_RETRIES = 2
DEFAULT_HEALTH_CHECK_INTERVAL = 30


class _Connection(Protocol):
    """The part of redis-py's (untyped) ``Connection`` that :class:`RedisStore` uses."""

    def pack_command(self, *args: str | int) -> list[bytes]: ...
    def send_packed_command(self, command: list[bytes], check_health: bool = True) -> None: ...
    def read_response(self) -> Any: ...
    def disconnect(self) -> None: ...


class RedisStore:
    """:class:`~pps.ephemeral.EphemeralStore` on Redis >= 7.0 (``SET ... NX GET``).

    The three hot commands (``claim``, ``put_link``, ``get_link``, one each per ``/auth`` or
    file request) go over a dedicated redis-py :class:`~redis.connection.Connection` per
    thread, sent with ``send_packed_command``/``read_response`` directly. The client's
    pool, retry and command-dispatch layers cost about 50-70 us of CPU per command on the
    development VM, as much as the round trip itself; what they provide is re-done here in
    :meth:`_call`: one resend after a lost connection, every error mapped to
    :class:`EphemeralUnavailable`, and a fresh connection in a forked child (a socket
    inherited from the parent is never used). ``ping`` and ``close`` still use the client.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "",
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        health_check_interval: int = DEFAULT_HEALTH_CHECK_INTERVAL,
    ) -> None:
        self.prefix = prefix
        self._client = redis.Redis.from_url(
            url,
            socket_timeout=socket_timeout,
            socket_connect_timeout=socket_timeout,
            health_check_interval=health_check_interval,
            retry=Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.2), retries),
            decode_responses=True,
        )
        self._retries = retries
        self._local = threading.local()
        # Every dedicated connection, so close() can reach those of other threads; weak,
        # so a finished thread's connection goes away with its thread-local slot.
        self._connections: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._connections_lock = threading.Lock()

    def claim(self, key: str, ttl: int) -> bool:
        """First caller wins, in one round trip that stays correct when redis-py retries it.

        A plain ``SET NX`` retried after a timeout whose first attempt did set the key
        answers "already there", turning a first login into a replay. So each claim writes
        a fresh random token and asks for the previous value (``NX GET``): no previous value
        means we set it now, our own token means an earlier attempt of this call set it.
        """
        return self._claim_with_token(key, ttl, secrets.token_hex(16))

    def _claim_with_token(self, key: str, ttl: int, token: str) -> bool:
        check_ttl(ttl)
        try:
            previous = self._call("SET", self.prefix + key, token, "NX", "GET", "EX", ttl)
        except redis.exceptions.ResponseError as exc:
            # Redis < 7.0 rejects NX together with GET as a syntax error.
            raise EphemeralUnavailable(
                f"Redis refused SET NX GET (Redis >= 7.0 is required): {exc}"
            ) from exc
        except redis.exceptions.RedisError as exc:
            raise EphemeralUnavailable(f"Redis is unavailable: {exc}") from exc
        return previous is None or previous == token

    def put_link(self, key: str, value: str, ttl: int) -> None:
        check_ttl(ttl)
        try:
            self._call("SET", self.prefix + key, value, "EX", ttl)
        except redis.exceptions.RedisError as exc:
            raise EphemeralUnavailable(f"Redis is unavailable: {exc}") from exc

    def get_link(self, key: str) -> str | None:
        try:
            value = self._call("GET", self.prefix + key)
        except redis.exceptions.RedisError as exc:
            raise EphemeralUnavailable(f"Redis is unavailable: {exc}") from exc
        if value is None:
            return None
        # decode_responses=True already gives str; bytes only if someone changes that.
        return value.decode() if isinstance(value, bytes) else str(value)

    def _call(self, *args: str | int) -> Any:
        """Send one command on this thread's connection and return its reply.

        Raises redis-py's exceptions; the callers map them. After a lost connection or a
        timeout the command is sent once more on a new connection, as the client's retry
        did: safe for ``GET`` and a plain ``SET``, and for the claim because a resend
        carries the same token (see :meth:`claim`).
        """
        command = None
        attempt = 0
        while True:
            connection = self._connection()
            if command is None:
                command = connection.pack_command(*args)
            try:
                connection.send_packed_command(command)
                return connection.read_response()
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
                connection.disconnect()
                if attempt >= min(self._retries, 1):
                    raise
                attempt += 1
            except redis.exceptions.ResponseError:
                raise  # a complete reply was read: the connection is in sync
            except BaseException:
                # Anything else mid-command (a parse error, an interrupt) may leave a reply
                # unread on the socket, which the next command would take for its own.
                connection.disconnect()
                raise

    def _connection(self) -> _Connection:
        """This thread's connection, new in a forked child; it connects on first send."""
        pid = os.getpid()
        connection: _Connection | None = getattr(self._local, "connection", None)
        if connection is None or self._local.pid != pid:
            pool = self._client.connection_pool
            connection = cast(_Connection, pool.connection_class(**pool.connection_kwargs))
            self._local.connection, self._local.pid = connection, pid
            with self._connections_lock:
                self._connections.add(connection)
        return connection

    def ping(self) -> bool:
        """True when Redis answers; False instead of raising, for health checks."""
        try:
            return bool(self._client.ping())
        except redis.exceptions.RedisError:
            return False

    def close(self) -> None:
        """Disconnect every connection, pooled or dedicated; later calls reconnect on demand."""
        self._client.close()
        self._client.connection_pool.disconnect()
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            connection.disconnect()
