"""The ephemeral store on Redis: one command per operation, keys expire by themselves."""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol, cast

import hiredis
import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry

from pps.ephemeral import EphemeralUnavailable, T, check_ttl, no_work
from pps.ids import unique_tag

# Short timeouts and few retries: a login waits at most a few seconds for a Redis that is
# gone and then fails closed, instead of redis-py's default of 10 retries of 5 s each.
DEFAULT_SOCKET_TIMEOUT = 2.0
DEFAULT_RETRIES = 2
DEFAULT_HEALTH_CHECK_INTERVAL = 30


class _Connection(Protocol):
    """The part of redis-py's (untyped) ``Connection`` that :class:`RedisStore` uses."""

    _sock: socket.socket | None

    def connect(self) -> None: ...
    def disconnect(self) -> None: ...


class _Line:
    """One thread's dedicated connection for the hot commands.

    redis-py opens it (address, TLS, ``AUTH``, ``SELECT`` from the URL, all as configured);
    after that pps writes the commands and reads the replies itself: RESP is a few lines of
    code, and redis-py's send and read layers cost as much CPU as the round trip. RESP2,
    so nothing but replies to our own commands ever arrives on it.
    """

    __slots__ = ("__weakref__", "_buffer", "_connection", "_reader", "_socket", "pid")

    def __init__(self, connection: _Connection, pid: int) -> None:
        self._connection = connection
        self._socket: socket.socket | None = None
        self._reader = hiredis.Reader(encoding="utf-8")
        self._buffer = bytearray(4096)
        self.pid = pid

    def send(self, command: bytes) -> None:
        """Write one packed command; anything on the wire is raised as ``OSError``."""
        sock = self._socket
        if sock is None:
            sock = self._socket = self._open()
        try:
            sock.sendall(command)
        except BlockingIOError as exc:  # SO_SNDTIMEO ran out, see _open
            raise TimeoutError("timed out") from exc

    def reply(self) -> Any:
        """Read the reply to the command sent last; a Redis error reply is raised as
        :class:`redis.exceptions.ResponseError`, anything on the wire as ``OSError``."""
        sock = self._socket
        if sock is None:
            raise ConnectionResetError("no command was sent on this connection")
        reader = self._reader
        reply = reader.gets()
        try:
            while reply is False:
                received = sock.recv_into(self._buffer)
                if not received:
                    raise ConnectionResetError("Redis closed the connection")
                reader.feed(self._buffer, 0, received)  # type: ignore[arg-type]  # any buffer
                reply = reader.gets()
        except BlockingIOError as exc:  # SO_RCVTIMEO ran out, see _open
            raise TimeoutError("timed out") from exc
        if isinstance(reply, hiredis.ReplyError):
            raise redis.exceptions.ResponseError(str(reply))
        return reply

    def _open(self) -> socket.socket:
        self._connection.connect()
        sock = self._connection._sock
        if sock is None:
            raise redis.exceptions.ConnectionError("redis-py opened no socket")
        timeout = sock.gettimeout()
        if timeout and type(sock) is socket.socket:  # TCP or unix socket, not TLS
            # The same timeout, kept by the kernel on a blocking socket: Python's own
            # polls before every send and receive, two more system calls per command.
            whole = int(timeout)
            timeval = struct.pack("ll", whole, int((timeout - whole) * 1_000_000))
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
            except OSError:
                return sock  # no kernel timeouts here: Python's stay in force
            sock.settimeout(None)
        return sock

    def __del__(self) -> None:
        # A line goes when its thread does; close its socket now, not whenever the garbage
        # collector gets to redis-py's connection (which is in a reference cycle).
        with contextlib.suppress(Exception):
            self._connection.disconnect()

    def disconnect(self) -> None:
        """Drop the socket and anything half-read; the next call connects afresh."""
        self._socket = None
        self._reader = hiredis.Reader(encoding="utf-8")
        self._connection.disconnect()


def pack(*args: str | int) -> bytes:
    """One command in RESP, the form every Redis reads: an array of bulk strings."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg.encode() if isinstance(arg, str) else b"%d" % arg
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


class RedisStore:
    """:class:`~pps.ephemeral.EphemeralStore` on Redis >= 7.0 (``SET ... NX GET``).

    The three hot commands (``claim``, ``put_link``, ``get_link``, one each per ``/auth`` or
    file request) go over a dedicated connection per thread (:class:`_Line`): redis-py
    opens it, pps writes the commands and parses the replies (with hiredis) itself. The
    client's pool, retry, dispatch and reply layers cost about as much CPU per command as
    the round trip itself on the development VM; what they provide is re-done here in
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
        self._lines: weakref.WeakSet[_Line] = weakref.WeakSet()
        self._lines_lock = threading.Lock()

    def claim(self, key: str, ttl: int) -> bool:
        """First caller wins, in one round trip that stays correct when redis-py retries it.

        A plain ``SET NX`` retried after a timeout whose first attempt did set the key
        answers "already there", turning a first login into a replay. So each claim writes
        a fresh unique token and asks for the previous value (``NX GET``): no previous value
        means we set it now, our own token means an earlier attempt of this call set it.
        The token only has to be unique, not secret: only pps writes these keys.
        """
        return self.claim_while(key, ttl, no_work) is not None

    def claim_while(self, key: str, ttl: int, work: Callable[[], T]) -> tuple[T] | None:
        """:meth:`claim`, with ``work()`` run between sending the command and reading its
        reply: the worker thread finds Redis's answer waiting instead of sleeping for it."""
        return self._claim_with_token(key, ttl, unique_tag(), work)

    def _claim_with_token(
        self, key: str, ttl: int, token: str, work: Callable[[], T]
    ) -> tuple[T] | None:
        check_ttl(ttl)
        command = pack("SET", self.prefix + key, token, "NX", "GET", "EX", ttl)
        done: list[T] = []
        failed: list[BaseException] = []

        def meanwhile() -> None:
            # Kept apart from the wire's errors: a failing work is not a lost connection.
            try:
                done.append(work())
            except BaseException as exc:
                failed.append(exc)

        try:
            previous = self._call(command, meanwhile)
        except redis.exceptions.ResponseError as exc:
            # Redis < 7.0 rejects NX together with GET as a syntax error.
            raise EphemeralUnavailable(
                f"Redis refused SET NX GET (Redis >= 7.0 is required): {exc}"
            ) from exc
        except redis.exceptions.RedisError as exc:
            raise EphemeralUnavailable(f"Redis is unavailable: {exc}") from exc
        if failed:
            raise failed[0]
        if previous is not None and previous != token:
            return None
        return (done[0],)  # a reply was read, so the command was sent and the work ran

    def put_link(self, key: str, value: str, ttl: int) -> None:
        check_ttl(ttl)
        try:
            self._call(pack("SET", self.prefix + key, value, "EX", ttl))
        except redis.exceptions.RedisError as exc:
            raise EphemeralUnavailable(f"Redis is unavailable: {exc}") from exc

    def count(self, key: str, ttl: int) -> int:
        """``INCR`` and ``EXPIRE ... NX`` in one transaction, through redis-py's client."""
        check_ttl(ttl)
        name = self.prefix + key
        try:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.incr(name)
                pipe.expire(name, ttl, nx=True)
                value, _ = pipe.execute()
        except redis.exceptions.RedisError as exc:
            raise EphemeralUnavailable(f"Redis is unavailable: {exc}") from exc
        return int(value)

    def get_link(self, key: str) -> str | None:
        try:
            value = self._call(pack("GET", self.prefix + key))
        except redis.exceptions.RedisError as exc:
            raise EphemeralUnavailable(f"Redis is unavailable: {exc}") from exc
        return None if value is None else str(value)  # the line's reader decodes UTF-8

    def _call(self, command: bytes, meanwhile: Callable[[], None] | None = None) -> Any:
        """Send one packed command on this thread's line and return its reply.

        ``meanwhile()`` runs once, right after the command first went out whole, before its
        reply is read; it must not raise. Raises redis-py's exceptions; the callers map them.
        After a lost connection or a timeout the command is sent once more on a new
        connection, as the client's retry did: safe for ``GET`` and a plain ``SET``, and for
        the claim because a resend carries the same token (see :meth:`claim`).
        """
        attempt = 0
        while True:
            line = self._line()
            try:
                line.send(command)
                if meanwhile is not None:
                    run, meanwhile = meanwhile, None
                    run()
                return line.reply()
            except redis.exceptions.ResponseError:
                raise  # a complete reply was read: the connection is in sync
            except (OSError, redis.exceptions.ConnectionError, hiredis.ProtocolError) as exc:
                # A timeout, a reset, a refused connect or bytes that are not RESP: the
                # connection is in an unknown state, so it is dropped whatever happens next.
                line.disconnect()
                if attempt >= min(self._retries, 1):
                    if isinstance(exc, TimeoutError | redis.exceptions.TimeoutError):
                        raise redis.exceptions.TimeoutError(f"Redis did not answer: {exc}") from exc
                    if isinstance(exc, redis.exceptions.ConnectionError):
                        raise
                    raise redis.exceptions.ConnectionError(f"Redis connection lost: {exc}") from exc
                attempt += 1
            except BaseException:
                # Anything else mid-command (an interrupt) may leave a reply unread on the
                # socket, which the next command would take for its own.
                line.disconnect()
                raise

    def _line(self) -> _Line:
        """This thread's line, new in a forked child; it connects on first use."""
        pid = os.getpid()
        line: _Line | None = getattr(self._local, "line", None)
        if line is None or line.pid != pid:
            pool = self._client.connection_pool
            kwargs = {**pool.connection_kwargs, "protocol": 2}
            connection = cast(_Connection, pool.connection_class(**kwargs))
            line = self._local.line = _Line(connection, pid)
            with self._lines_lock:
                self._lines.add(line)
        return line

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
        with self._lines_lock:
            lines = list(self._lines)
        for line in lines:
            line.disconnect()
