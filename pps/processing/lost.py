"""Batches whose job was lost: queued again or failed, so that none stays unfinished for ever.

A batch's drafts stay ``pending`` or ``in-process`` in the database if its job is lost:
Redis emptied, or restarted without persistence, before a worker took the job (or while a
retry waited in RQ's schedule); or, without Redis, the app process holding the job in its
thread stopped. Nothing else would ever finish such a batch: the shop would poll it and
wait for its notification for ever, and the retention never prunes it.

:func:`recover_lost_jobs` takes the processings unfinished and unchanged for longer than
their job may run (:func:`pps.platform.queue.job_timeout` of their drafts, plus
:data:`GRACE`) for which no job waits or runs (:meth:`pps.platform.queue.JobQueue.active`).
A job that runs changes its processing at every draft, and RQ stops it at its timeout; one
whose worker died stays in RQ's started registry until RQ's maintenance fails it through
the failure callback (:mod:`pps.processing.worker`). Each is claimed in the database, so of
several processes that find it at once one acts, then:

* every unfinished draft ``pending`` (the job never began, or stopped between two drafts):
  queued again. A job may run more than once (:mod:`pps.processing.job`).
* a draft ``in-process``: its rendering was cut off by the end of the process running it.
  What is unfinished fails with :data:`INTERRUPTED` and the shop is notified, as after RQ's
  abandoned jobs: a draft whose rendering kills its process must not come back for ever.

``pps worker`` runs it at its maintenance, at most every :data:`INTERVAL` seconds
(:class:`LostJobSchedule`); without Redis the job thread of each served process does, as it
starts and then as often (:func:`pps.app.resume_jobs`). No Flask.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from pps.platform.outages import outage_message
from pps.platform.queue import JobQueue, JobQueueUnavailable, JobServices, job_timeout
from pps.platform.repository.processing import IN_PROCESS
from pps.processing.job import fail_processing, job_from_services

__all__ = [
    "GRACE",
    "INTERRUPTED",
    "INTERVAL",
    "LostJobSchedule",
    "Recovered",
    "recover_lost_jobs",
    "sweep_lost_jobs",
]

log = logging.getLogger("pps.processing")

#: Seconds past a job's timeout before its processing counts as lost: RQ records a job
#: stopped at its timeout within moments, this leaves room for a slow database.
GRACE = 60.0
#: Seconds between two looks of one process: a lost batch waited its job's timeout already.
INTERVAL = 60.0
#: Processings taken per look; more wait for the next.
LIMIT = 100

INTERRUPTED = "Rendering was interrupted: the process rendering it stopped."


class SweepServices(JobServices, Protocol):
    """What a look needs: a job's services and the queue (:class:`Services` has both)."""

    @property
    def jobs(self) -> JobQueue: ...


@dataclass(frozen=True)
class Recovered:
    """Ids of the processings queued again and of those failed."""

    requeued: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


def _bound(draft_count: int) -> timedelta:
    return timedelta(seconds=job_timeout(draft_count) + GRACE)


def recover_lost_jobs(
    services: SweepServices, *, now: datetime | None = None, limit: int = LIMIT
) -> Recovered:
    """Queue again, or fail, the processings whose job was lost (see the module docstring)."""
    now = now or datetime.now(UTC)
    store = services.processings
    found = [
        item
        for item in store.unfinished(now - _bound(1), limit)
        if item.updated_at < now - _bound(len(item.drafts))
    ]
    if not found:
        return Recovered()
    active = services.jobs.active()  # read after the database: a job queued since is seen
    requeued: list[str] = []
    failed: list[str] = []
    for item in found:
        client, processing_id = item.client_identifier, item.processing_id
        if processing_id in active:
            continue
        if not store.claim(client, processing_id, now - _bound(len(item.drafts))):
            continue  # another process took it, or its job changed it meanwhile
        if any(draft.state == IN_PROCESS for draft in item.drafts):
            log.warning("processing %s: its job was lost while rendering; failed", processing_id)
            fail_processing(job_from_services(services), client, processing_id, INTERRUPTED)
            failed.append(processing_id)
            continue
        log.warning("processing %s: its job was lost; queued again", processing_id)
        try:
            services.jobs.enqueue(client, processing_id, len(item.drafts))
        except JobQueueUnavailable as exc:
            # Claimed, so tried again after its bound: Redis may be back by then.
            log.warning("processing %s: could not be queued again: %s", processing_id, exc)
            continue
        requeued.append(processing_id)
    return Recovered(tuple(requeued), tuple(failed))


def sweep_lost_jobs(services: SweepServices) -> Recovered | None:
    """:func:`recover_lost_jobs`, logging a failure instead of raising: a look that met an
    outage is tried again at the next interval, and never stops a worker."""
    try:
        return recover_lost_jobs(services)
    except Exception as exc:
        outage = outage_message(exc)
        if outage is None:
            log.exception("looking for lost processing jobs failed; trying again later")
        else:
            log.warning("looking for lost processing jobs skipped: %s", outage)
        return None


class LostJobSchedule:
    """Runs :func:`sweep_lost_jobs` when :meth:`run_if_due` finds ``interval`` seconds have
    passed since the last look (the first time at once); ``clock``: monotonic seconds."""

    def __init__(
        self,
        services: SweepServices,
        *,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.services = services
        self.interval = interval
        self.clock = clock
        self.last: float | None = None

    def run_if_due(self) -> Recovered | None:
        now = self.clock()
        if self.last is not None and now - self.last < self.interval:
            return None
        self.last = now
        return sweep_lost_jobs(self.services)
