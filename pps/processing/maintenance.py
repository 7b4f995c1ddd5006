"""What ``pps worker`` does besides jobs: deleting records past their use, on a schedule.

RQ runs the worker's maintenance every ``MAINTENANCE_INTERVAL`` seconds between its waits
for a job (:mod:`pps.processing.cli`); :class:`RetentionSchedule` rides on it and prunes
(:func:`pps.platform.repository.retention.prune`) at most once per :data:`PRUNE_INTERVAL`,
the first time as the worker starts (and so does the look for lost jobs,
:class:`pps.processing.lost.LostJobSchedule`). An outage, or any failure, is logged and tried again
at the next interval: housekeeping must never stop a worker from rendering.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from sqlalchemy.engine import Engine

from pps.platform.outages import outage_message
from pps.platform.repository.retention import Pruned, prune

__all__ = ["PRUNE_INTERVAL", "RetentionSchedule"]

log = logging.getLogger("pps.processing")

#: Seconds between two prunes of one worker: the retention is a day at least, so an hour
#: late costs nothing, and several workers each pruning hourly cost nothing either.
PRUNE_INTERVAL = 3600.0


class RetentionSchedule:
    """Prunes ``engine`` keeping ``retention`` seconds, when :meth:`run_if_due` finds an
    interval has passed since the last try (``clock``: monotonic seconds)."""

    def __init__(
        self,
        engine: Engine,
        retention: float,
        *,
        interval: float = PRUNE_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.engine = engine
        self.retention = retention
        self.interval = interval
        self.clock = clock
        self.last: float | None = None

    def run_if_due(self) -> Pruned | None:
        """Prune when due; what was deleted, None when not due or when it failed."""
        now = self.clock()
        if self.retention <= 0 or (self.last is not None and now - self.last < self.interval):
            return None
        self.last = now
        try:
            pruned = prune(self.engine, self.retention)
        except Exception as exc:
            outage = outage_message(exc)
            if outage is None:
                log.exception("pruning finished processings failed; trying again later")
            else:
                log.warning("pruning finished processings skipped: %s", outage)
            return None
        if pruned.processings or pruned.notification_keys:
            log.info(
                "deleted %d finished processings and %d spent notification keys",
                pruned.processings,
                pruned.notification_keys,
            )
        return pruned
