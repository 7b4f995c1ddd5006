"""The ephemeral store on Redis: one command per operation, keys expire by themselves."""

from __future__ import annotations

import secrets

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry

from pps.ephemeral import EphemeralUnavailable, check_ttl

# Short timeouts and few retries: a login waits at most a few seconds for a Redis that is
# gone and then fails closed, instead of redis-py's default of 10 retries of 5 s each.
DEFAULT_SOCKET_TIMEOUT = 2.0
DEFAULT_RETRIES = 2
DEFAULT_HEALTH_CHECK_INTERVAL = 30


class RedisStore:
    """:class:`~pps.ephemeral.EphemeralStore` on Redis >= 7.0 (``SET ... NX GET``).

    One instance holds one client and so one connection pool; redis-py resets the pool in
    a forked child on first use, so a store built before gunicorn forks stays one pool per
    worker process.
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
            previous = self._client.set(self.prefix + key, token, nx=True, get=True, ex=ttl)
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
            self._client.set(self.prefix + key, value, ex=ttl)
        except redis.exceptions.RedisError as exc:
            raise EphemeralUnavailable(f"Redis is unavailable: {exc}") from exc

    def get_link(self, key: str) -> str | None:
        try:
            value = self._client.get(self.prefix + key)
        except redis.exceptions.RedisError as exc:
            raise EphemeralUnavailable(f"Redis is unavailable: {exc}") from exc
        if value is None:
            return None
        # decode_responses=True already gives str; bytes only if someone changes that.
        return value.decode() if isinstance(value, bytes) else str(value)

    def ping(self) -> bool:
        """True when Redis answers; False instead of raising, for health checks."""
        try:
            return bool(self._client.ping())
        except redis.exceptions.RedisError:
            return False

    def close(self) -> None:
        """Disconnect every pooled connection; later calls reconnect on demand."""
        self._client.close()
        self._client.connection_pool.disconnect()
