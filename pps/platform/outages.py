"""Which failures are outages of a backing service, and what to tell the caller.

Plain Python, no Flask: the web layer (:mod:`pps.web.errors`) answers every exception listed
in :data:`OUTAGES` with a 503 carrying :func:`outage_message`, so it never imports the
database or Redis clients itself.
"""

from __future__ import annotations

import psycopg
import redis
import sqlalchemy as sa

from pps.platform.ephemeral import EphemeralUnavailable
from pps.platform.errors import ServiceUnavailable
from pps.platform.queue import JobQueueUnavailable

__all__ = [
    "DATABASE_DOWN",
    "OUTAGES",
    "QUEUE_DOWN",
    "STORAGE_DOWN",
    "STORE_DOWN",
    "outage_message",
]

STORE_DOWN = "The session store is unavailable; nothing was done. Try again shortly."
DATABASE_DOWN = "The database is unavailable or did not answer in time. Try again shortly."
QUEUE_DOWN = "The job queue is unavailable; nothing was queued. Try again shortly."
STORAGE_DOWN = "The file storage cannot be written; nothing was stored. Try again shortly."

#: Every failure of a backing service, each answered with 503 and ``Retry-After`` (see
#: :class:`pps.platform.errors.ServiceUnavailable`): what the database and Redis clients raise when
#: their server is down or exceeds its timeout (PPS_DATABASE_TIMEOUT, PPS_REDIS_TIMEOUT),
#: and pps's own wrappers of them. ``DBAPIError`` is narrowed to disconnects in
#: :func:`outage_message`; anything else stays a 500.
OUTAGES: tuple[type[Exception], ...] = (
    EphemeralUnavailable,
    JobQueueUnavailable,
    sa.exc.OperationalError,  # refused, closed, connect or statement timeout
    sa.exc.TimeoutError,  # no pooled connection became free in time
    sa.exc.DBAPIError,
    psycopg.OperationalError,  # the same from a raw DBAPI cursor (pps.platform.repository.lookups)
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
)


def outage_message(exc: Exception) -> str | None:
    """The 503 message for a backing service's failure, None when ``exc`` is no outage."""
    if isinstance(exc, EphemeralUnavailable):
        return STORE_DOWN
    if isinstance(exc, JobQueueUnavailable):
        return QUEUE_DOWN
    if isinstance(exc, sa.exc.OperationalError | sa.exc.TimeoutError | psycopg.OperationalError):
        return DATABASE_DOWN
    if isinstance(exc, sa.exc.DBAPIError):
        return DATABASE_DOWN if exc.connection_invalidated else None
    if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
        return ServiceUnavailable.default_message
    return None
