"""The one Redis client policy of pps: every call that fails, fails within one time budget.

``PPS_REDIS_TIMEOUT`` (``timeout`` here, 2 s by default) bounds a failing call. The budget
is spent in at most two attempts (the first, and one resend after a lost connection or a
timeout, made by :data:`RESEND_ONCE` where a command is safe to resend), and every wait of
an attempt (connecting, and each reply) is at most :data:`WAIT_SHARE` of it, so that the two
waits leave a tenth of the budget for the rest of the request (measured with a SIGSTOPped
Redis: halves made ``/auth`` answer its 503 after 2.0-2.1 s). redis-py's own retries stay
off (``Retry(NoBackoff(), 0)``): it would retry the connect inside a retried command, and
each nested layer multiplies the wait (three layers once made ``/auth`` wait 20 s for a
hung Redis). Connecting sends no command of its own (RESP2, so no ``HELLO``; no ``CLIENT
SETINFO``; no health-check ``PING``), so a silent server costs one wait per attempt; a URL
with a password or a database number adds ``AUTH``/``SELECT`` to a fresh connection.

Core module: no Flask. The ephemeral store and the RQ job queue each build one client (one
connection pool) per app from :func:`open_redis`.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

__all__ = ["DEFAULT_TIMEOUT", "RESEND_ONCE", "WAIT_SHARE", "open_redis"]

DEFAULT_TIMEOUT = 2.0

#: The share of the timeout one wait (a connect, or a reply) may take; two of them fit.
WAIT_SHARE = 0.45

#: One resend after ``ConnectionError``/``TimeoutError``, at once: the pool hands out a
#: connection that was dropped, so the resend connects afresh. Only for commands that are
#: safe to send twice (GET, plain SET, and the claim; see ``pps.platform.ephemeral.redis_store``).
RESEND_ONCE = Retry(NoBackoff(), 1)


def open_redis(
    url: str, *, timeout: float = DEFAULT_TIMEOUT, decode_responses: bool = False
) -> Any:
    """A ``redis.Redis`` for ``url`` whose every wait is at most ``timeout * WAIT_SHARE``.

    Typed ``Any``: redis-py's client is generic over its reply type only in its stubs.
    """
    if not timeout > 0:
        raise ValueError(f"the Redis timeout must be positive, got {timeout!r}")
    wait = timeout * WAIT_SHARE
    return redis.Redis.from_url(
        url,
        socket_timeout=wait,
        socket_connect_timeout=wait,
        retry=Retry(NoBackoff(), 0),
        health_check_interval=0,
        protocol=2,
        driver_info=None,
        decode_responses=decode_responses,
    )
