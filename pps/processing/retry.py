"""Retrying a batch job that failed because a backing service was down.

A job that fails because the database or Redis is unavailable (what
:func:`pps.platform.outages.outage_message` classifies as an outage) leaves its drafts as they
are and is queued again after ``PPS_JOB_RETRY_BACKOFF`` seconds, doubled per attempt up to
:data:`MAX_DELAY`, at most ``PPS_JOB_RETRIES`` times. Then its unfinished drafts are failed
with a message naming the outage. While even that cannot be written (the database is still
down), the job keeps coming back, at most :data:`MAX_DELAY` apart, to write only that, so
the drafts end ``failed`` once the database is back and never stay ``pending``. Any other failure is
final at once, as before (:mod:`pps.processing.job`).

Each retry is a new RQ job, scheduled by the failure callback (``pps worker`` runs RQ's
scheduler, which queues it when due), with the attempt in its ``meta``. Not RQ's own
``Retry``: that retries every failure, including timeouts and bugs whose drafts were already
failed and notified. Not the sweep for lost jobs either (:mod:`pps.processing.lost`),
which waits a job's whole timeout first: the failure callback knows at once which job
failed and why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pps.platform.backoff import doubling_pause
from pps.platform.outages import outage_message
from pps.platform.queue import queue_processing
from pps.platform.settings import Settings

__all__ = ["ATTEMPT", "GIVE_UP", "MAX_DELAY", "after_outage", "given_up", "retry_delay"]

log = logging.getLogger("pps.processing")

#: Keys of the job's ``meta``: which attempt this is, and the failure to record instead of
#: rendering (set once the retries are used up).
ATTEMPT = "pps_attempt"
GIVE_UP = "pps_give_up"
#: The longest wait between two attempts, in seconds.
MAX_DELAY = 900.0


def retry_delay(attempt: int, backoff: float) -> float:
    """Seconds before the attempt after ``attempt`` (1 for the first run)."""
    return doubling_pause(backoff, attempt, MAX_DELAY)


def given_up(job: Any) -> str | None:
    """The failure this RQ job is to record instead of rendering, if it is a give-up."""
    message = job.meta.get(GIVE_UP) if job is not None else None
    return str(message) if message else None


def after_outage(
    job: Any,
    connection: Any,
    settings: Settings,
    record: Callable[[str], None],
    outage: str,
) -> None:
    """Queue the RQ ``job`` again after an outage, or record its failure when its
    retries are used up (``record(message)``); again later if even that meets an outage."""
    processing_id = job.args[1]
    attempt = int(job.meta.get(ATTEMPT, 1))
    message = given_up(job)
    if message is None and attempt <= settings.job_retries:
        delay = retry_delay(attempt, settings.job_retry_backoff)
        log.warning(
            "processing %s: %s; attempt %d of %d in %.0f s",
            processing_id,
            outage,
            attempt + 1,
            settings.job_retries + 1,
            delay,
        )
        _again(job, connection, {ATTEMPT: attempt + 1}, delay)
        return
    if message is None:
        message = f"Rendering was given up after {attempt} attempts. {outage}"
        try:
            record(message)
            return
        except Exception as exc:
            if outage_message(exc) is None:
                raise
    log.error(
        "processing %s: cannot record its failure yet (%s); trying later", processing_id, outage
    )
    delay = retry_delay(attempt, settings.job_retry_backoff)
    _again(job, connection, {ATTEMPT: attempt + 1, GIVE_UP: message}, delay)


def _again(job: Any, connection: Any, meta: dict[str, Any], delay: float) -> None:
    from rq import Queue

    client, processing_id = job.args
    queue = Queue(job.origin, connection=connection)
    queue_processing(queue, client, processing_id, timeout=job.timeout, meta=meta, delay=delay)
