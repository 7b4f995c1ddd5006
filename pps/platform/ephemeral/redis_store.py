"""The ephemeral store on Redis: one command per operation, keys expire by themselves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis

from pps.platform.ephemeral import EphemeralUnavailable, T, check_ttl, no_work
from pps.platform.ids import unique_tag
from pps.platform.per_thread import PerThread
from pps.platform.redis_client import DEFAULT_TIMEOUT, RESEND_ONCE, open_redis

# KEYS[1] the nonce, KEYS[2] the link; ARGV: claim token, nonce TTL, link value, link TTL.
# The claim exactly as RedisStore.claim does it; the link is written only by the winner.
# A script, not MULTI: the second write depends on the first one's reply.
_CLAIM_AND_PUT = """
local previous = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'GET', 'EX', ARGV[2])
if previous and previous ~= ARGV[1] then
    return 0
end
redis.call('SET', KEYS[2], ARGV[3], 'EX', ARGV[4])
return 1
"""


class RedisStore:
    """:class:`~pps.platform.ephemeral.EphemeralStore` on Redis >= 7.0 (``SET ... NX GET``).

    Every command goes through redis-py's client (one connection pool per store, the
    policy of :mod:`pps.platform.redis_client`): a failing call gives up within ``timeout``
    seconds (``PPS_REDIS_TIMEOUT``) with :class:`EphemeralUnavailable`, after one resend.
    The commands of the request path (claims and links) run on a connection each thread
    holds (:class:`~pps.platform.per_thread.PerThread`, redis-py's
    ``single_connection_client`` on the store's pool): no pool check-out and check-in, and
    no ``poll`` of the socket before every command. A failed command disconnects it
    (redis-py's own rule), so a late reply can never be read by the next one; the next
    command connects afresh.
    """

    def __init__(self, url: str, *, prefix: str = "", timeout: float = DEFAULT_TIMEOUT) -> None:
        self.prefix = prefix
        self._client = open_redis(url, timeout=timeout, decode_responses=True)
        self._claim_and_put = self._client.register_script(_CLAIM_AND_PUT)
        pool = self._client.connection_pool
        self._held = PerThread(
            lambda: redis.Redis(connection_pool=pool, single_connection_client=True)
        )

    @property
    def client(self) -> Any:
        """The redis-py client (its pool); for health checks and tests."""
        return self._client

    def claim(self, key: str, ttl: int) -> bool:
        """First caller wins, in one round trip that stays correct when it is resent.

        A plain ``SET NX`` resent after a timeout whose first attempt did set the key
        answers "already there", turning a first login into a replay. So each claim writes
        a fresh unique token and asks for the previous value (``NX GET``): no previous value
        means we set it now, our own token means an earlier attempt of this call set it.
        The token only has to be unique, not secret: only pps writes these keys.
        """
        return self.claim_while(key, ttl, no_work) is not None

    def claim_while(self, key: str, ttl: int, work: Callable[[], T]) -> tuple[T] | None:
        """:meth:`claim`, then ``work()`` for the winner only (once, after the claim)."""
        return self._claim_with_token(key, ttl, unique_tag(), work)

    def _claim_with_token(
        self, key: str, ttl: int, token: str, work: Callable[[], T]
    ) -> tuple[T] | None:
        check_ttl(ttl)
        try:
            previous = self._call(
                lambda: self._held.get().set(self.prefix + key, token, nx=True, get=True, ex=ttl)
            )
        except redis.exceptions.ResponseError as exc:
            # Redis < 7.0 rejects NX together with GET as a syntax error.
            raise EphemeralUnavailable(
                f"Redis refused SET NX GET (Redis >= 7.0 is required): {exc}"
            ) from exc
        if previous is not None and previous != token:
            return None
        return (work(),)

    def claim_and_put(self, key: str, ttl: int, link: str, value: str, link_ttl: int) -> bool:
        """One server-side script (``EVALSHA``, loaded on first use by redis-py's ``Script``):
        one round trip, and resent with the same claim token it stays correct."""
        check_ttl(ttl)
        check_ttl(link_ttl)
        keys = [self.prefix + key, self.prefix + link]
        args = [unique_tag(), ttl, value, link_ttl]
        return bool(
            self._call(lambda: self._claim_and_put(keys=keys, args=args, client=self._held.get()))
        )

    def put_link(self, key: str, value: str, ttl: int) -> None:
        check_ttl(ttl)
        self._call(lambda: self._held.get().set(self.prefix + key, value, ex=ttl))

    def take_link(self, key: str) -> str | None:
        """``GETDEL``: a resend after a lost reply finds nothing, which fails closed."""
        value = self._call(lambda: self._held.get().getdel(self.prefix + key))
        return None if value is None else str(value)

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
        value = self._call(lambda: self._held.get().get(self.prefix + key))
        return None if value is None else str(value)

    @staticmethod
    def _call(command: Callable[[], Any]) -> Any:
        """Run one command, resent once after a lost connection or a timeout.

        Safe for ``GET``, a plain ``SET`` and the claim (a resend carries the same token).
        Errors other than Redis's own replies become :class:`EphemeralUnavailable`.
        """
        try:
            return RESEND_ONCE.call_with_retry(command, lambda _error: None)
        except redis.exceptions.ResponseError:
            raise  # a complete reply: the caller decides
        except redis.exceptions.TimeoutError as exc:
            raise EphemeralUnavailable(f"Redis did not answer in time: {exc}") from exc
        except redis.exceptions.RedisError as exc:
            raise EphemeralUnavailable(f"Redis is unavailable: {exc}") from exc

    def ping(self) -> bool:
        """True when Redis answers; False instead of raising, for health checks."""
        try:
            return bool(self._client.ping())
        except redis.exceptions.RedisError:
            return False

    def close(self) -> None:
        """Disconnect every pooled connection, those the threads hold included; later calls
        reconnect on demand."""
        self._held.forget()
        self._client.close()
        self._client.connection_pool.disconnect()
