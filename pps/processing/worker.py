"""The functions RQ runs for batch print files, in ``pps worker`` or a plain ``rq worker``.

:mod:`pps.platform.queue` enqueues them by import path (``RQ_JOB``, ``RQ_ON_FAILURE``). They
build the worker's services from settings (:func:`pps.platform.services.build_services`),
once per process. A job that failed because a backing service was down is queued again
(:mod:`pps.processing.retry`).
"""

from __future__ import annotations

from typing import Any

from rq import get_current_job

from pps.platform.outages import outage_message
from pps.platform.queue import WorkerServices, worker_services
from pps.platform.services import build_services
from pps.platform.settings import Settings
from pps.processing.job import fail_processing, job_from_services, run_in_process, run_processing
from pps.processing.retry import after_outage, given_up

__all__ = ["rq_failed", "rq_process"]

STOPPED = "Rendering was stopped: the job failed or took too long."


def rq_process(client: str, processing_id: str) -> str:
    """The RQ job: render the processing's drafts. Returns the outcome for ``rq info``."""
    job = job_from_services(worker_services(_build))
    give_up = given_up(get_current_job())
    if give_up is not None:
        # The retries after an outage are used up: only the failure is left to record.
        fail_processing(job, client, processing_id, give_up)
        return f"failed: {give_up}"
    result = run_processing(job, client, processing_id)
    if result is None:
        return "not found"
    return ", ".join(f"{item.draft_hash}: {item.state}" for item in result.drafts)


def rq_failed(job: Any, connection: Any, exc_type: Any, exc_value: Any, traceback: Any) -> None:
    """RQ's failure callback: retry after an outage, else (job timeout, crashed work
    horse, a bug) fail what is unfinished."""
    try:
        client, processing_id = job.args
    except (TypeError, ValueError):
        return
    services = worker_services(_build)

    def record(message: str) -> None:
        fail_processing(job_from_services(services), client, processing_id, message)

    outage = outage_message(exc_value) if isinstance(exc_value, Exception) else None
    if outage is None:
        record(STOPPED)
        return
    after_outage(job, connection, services.settings, record, outage)


def _build(settings: Settings) -> WorkerServices:
    return build_services(settings, run_in_process)
