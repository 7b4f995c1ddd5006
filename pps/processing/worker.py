"""The functions RQ runs for batch print files, in ``pps worker`` or a plain ``rq worker``.

:mod:`pps.platform.queue` enqueues them by import path (``RQ_JOB``, ``RQ_ON_FAILURE``). They
build the worker's services from settings (:func:`pps.platform.services.build_services`),
once per process.
"""

from __future__ import annotations

from typing import Any

from pps.platform.queue import WorkerServices, worker_services
from pps.platform.services import build_services
from pps.platform.settings import Settings
from pps.processing.job import fail_processing, job_from_services, run_in_process, run_processing

__all__ = ["rq_failed", "rq_process"]


def rq_process(client: str, processing_id: str) -> str:
    """The RQ job: render the processing's drafts. Returns the outcome for ``rq info``."""
    result = run_processing(job_from_services(worker_services(_build)), client, processing_id)
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
    fail_processing(job_from_services(worker_services(_build)), client, processing_id, message)


def _build(settings: Settings) -> WorkerServices:
    return build_services(settings, run_in_process)
