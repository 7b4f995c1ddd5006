"""The functions RQ runs for batch print files, in ``pps worker`` or a plain ``rq worker``.

:mod:`pps.jobs.queue` enqueues them by import path (``RQ_JOB``, ``RQ_ON_FAILURE``). They
live here rather than in :mod:`pps.jobs` because they build the worker's services from
settings (:func:`pps.services.build_services`), and :mod:`pps.services` imports the jobs
package to build the job queue: keeping them apart keeps the imports free of cycles.
"""

from __future__ import annotations

from typing import Any

from pps.jobs.processing import fail_processing, job_from_services, run_processing
from pps.jobs.queue import worker_services
from pps.services import build_services

__all__ = ["rq_failed", "rq_process"]


def rq_process(client: str, processing_id: str) -> str:
    """The RQ job: render the processing's drafts. Returns the outcome for ``rq info``."""
    result = run_processing(
        job_from_services(worker_services(build_services)), client, processing_id
    )
    if result is None:
        return "not found"
    return ", ".join(f"{item.draft_hash}: {item.state}" for item in result.drafts)


def rq_failed(job: Any, connection: Any, exc_type: Any, exc_value: Any, traceback: Any) -> None:
    """RQ's failure callback (job timeout, crashed work horse): fail what is unfinished."""
    try:
        client, processing_id = job.args
    except (TypeError, ValueError):
        return
    message = "Rendering was stopped: the job failed or took too long."
    fail_processing(
        job_from_services(worker_services(build_services)), client, processing_id, message
    )
