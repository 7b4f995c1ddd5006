"""The batch print-file job: each draft goes ``pending -> in-process -> processed | failed``.

Plain Python, no Flask: the RQ worker and the in-process thread both call
:func:`run_processing` with the pieces of :class:`ProcessingJob`. Drafts are rendered one
after another in the order the shop listed them; after every state change the stored
status is read back and handed to the notifier, which queues it in the webhook outbox
(:mod:`pps.webhooks.notifications`): the dispatcher delivers it, durable and retried, and
no job ever waits for the shop's receiver.

A job may run more than once (a retry after an outage, a second worker picking up the same
id, a resumed job after a crash): drafts already final are skipped, and the store's guarded
updates keep a draft from moving backwards. A failure of a backing service (see
:func:`pps.platform.outages.outage_message`) leaves the drafts as they are, for the retry
(:mod:`pps.processing.retry`); any other failure fails what is unfinished at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pps.platform.models import Draft, Template
from pps.platform.outages import outage_message
from pps.platform.queue import JobServices
from pps.platform.repository import Repository
from pps.platform.repository.processing import (
    FAILED,
    IN_PROCESS,
    PENDING,
    PROCESSED,
    Processing,
    ProcessingStore,
)
from pps.platform.storage import StoredFile
from pps.processing.notify import Notifier, NullNotifier
from pps.render import RenderError
from pps.webhooks.events import PROCESSING_STATE_CHANGED, emit
from pps.webhooks.notifications import OutboxNotifier

__all__ = [
    "ProcessingJob",
    "fail_processing",
    "job_from_services",
    "run_in_process",
    "run_processing",
]

log = logging.getLogger("pps.processing")

Render = Callable[[Draft, Template], StoredFile]
NotifierFactory = Callable[[Processing], Notifier]

DRAFT_GONE = "The draft no longer exists."
TEMPLATE_GONE = "The draft's template no longer exists."
INTERNAL = "The print file could not be rendered because of an internal error."


@dataclass(frozen=True)
class ProcessingJob:
    """What a job needs, and nothing of the web layer."""

    store: ProcessingStore
    repository: Repository
    render: Render
    notifier: NotifierFactory
    notify_drain: float
    """Seconds to wait at the end for the last notifications to be delivered."""
    announce: Callable[[str, dict[str, Any]], object] | None = None
    """Told ``(client, status)`` on every state change: the ``processing.state_changed``
    webhook event. Queues only; never waits for a receiver."""


def run_in_process(services: JobServices, client: str, processing_id: str) -> object:
    """The job queue's runner without Redis (a thread of the app): the same job as RQ's.

    The thread has no retry: after an outage it fails what is unfinished if the store
    lets it, naming the outage."""
    job = job_from_services(services)
    try:
        return run_processing(job, client, processing_id)
    except Exception as exc:
        outage = outage_message(exc)
        if outage is not None:
            try:
                fail_processing(job, client, processing_id, f"Rendering was stopped. {outage}")
            except Exception:
                log.exception("could not mark processing %s as failed", processing_id)
        raise


def job_from_services(services: JobServices) -> ProcessingJob:
    """A :class:`ProcessingJob` rendering with ``services``' storage and settings."""
    from pps.files.rendering import render_draft_file, variable_rows

    storage = services.storage
    rows = services.variable_data

    def render(draft: Draft, template: Template) -> StoredFile:
        records = variable_rows(draft, rows.stream)
        return render_draft_file(storage, draft, template, "print", records=records)

    def notifier(processing: Processing) -> Notifier:
        if not processing.notify_url:
            return NullNotifier()
        return OutboxNotifier(
            services,
            processing.client_identifier,
            processing.notify_url,
            topic=f"processing:{processing.processing_id}",
        )

    def announce(client: str, status: dict[str, Any]) -> object:
        return emit(services, client, PROCESSING_STATE_CHANGED, status)

    return ProcessingJob(
        store=services.processings,
        repository=services.repository,
        render=render,
        notifier=notifier,
        notify_drain=0.0,  # the outbox keeps what is not sent yet
        announce=announce,
    )


def run_processing(job: ProcessingJob, client: str, processing_id: str) -> Processing | None:
    """Render every draft of the processing that is not final yet; the final status.

    None when the processing does not exist (deleted, or another client's id).
    """
    processing = job.store.get(client, processing_id)
    if processing is None:
        log.warning("processing %s of client %s not found; nothing to do", processing_id, client)
        return None
    notifier = job.notifier(processing)
    try:
        # A run after an outage sends what it finds again; a final state is queued once.
        notifier.send(processing.status(), final=processing.finished)
        for item in processing.drafts:
            if item.final:
                continue
            if job.store.set_state(
                client, processing_id, item.position, IN_PROCESS, allowed_from=(PENDING,)
            ):
                _announce(job, notifier, client, processing_id)
            state, message, file_key = _render_one(job, client, item.draft_hash)
            if job.store.set_state(
                client,
                processing_id,
                item.position,
                state,
                allowed_from=(PENDING, IN_PROCESS),
                message=message,
                file_key=file_key,
            ):
                _announce(job, notifier, client, processing_id)
    except BaseException as exc:
        # The job is being killed (RQ's timeout) or hit a bug: what is not final cannot be
        # finished by this run, so mark it failed if the store lets us. A backing service
        # that is down is no reason to fail the drafts: the job is retried.
        if not _is_outage(exc):
            _fail_quietly(job, client, processing_id, INTERNAL, notifier)
        raise
    finally:
        notifier.close(job.notify_drain)
    return job.store.get(client, processing_id)


def fail_processing(job: ProcessingJob, client: str, processing_id: str, message: str) -> None:
    """Mark what is not final as failed and notify once (a job that died on the way).

    Raises what the store raises: a caller that gives up after an outage must know
    whether the failure was recorded, or the drafts would stay ``pending`` unnoticed.
    """
    processing = job.store.get(client, processing_id)
    if processing is None:
        return
    notifier = job.notifier(processing)
    try:
        if job.store.fail_unfinished(client, processing_id, message):
            _announce(job, notifier, client, processing_id)
    finally:
        notifier.close(job.notify_drain)


def _render_one(
    job: ProcessingJob, client: str, draft_hash: str
) -> tuple[str, str | None, str | None]:
    """(state, message, file key) for one draft; rendering errors become ``failed``."""
    draft = job.repository.get_draft(client, draft_hash)
    if draft is None:
        return FAILED, DRAFT_GONE, None
    template = job.repository.get_template(client, draft.template_identifier)
    if template is None:
        return FAILED, TEMPLATE_GONE, None
    try:
        stored = job.render(draft, template)
    except RenderError as exc:
        # Messages of the renderer name the DataKey or option at fault: fit for the shop.
        return FAILED, str(exc) or type(exc).__name__, None
    except Exception as exc:
        if _is_outage(exc):
            raise  # the variable data could not be read: retried, not the draft's fault
        log.exception("rendering draft %s of client %s failed", draft_hash, client)
        return FAILED, INTERNAL, None
    return PROCESSED, None, stored.key


def _is_outage(exc: BaseException) -> bool:
    return isinstance(exc, Exception) and outage_message(exc) is not None


def _announce(job: ProcessingJob, notifier: Notifier, client: str, processing_id: str) -> None:
    current = job.store.get(client, processing_id)
    if current is not None:
        status = current.status()
        notifier.send(status, final=current.finished)
        if job.announce is not None:
            job.announce(client, status)


def _fail_quietly(
    job: ProcessingJob, client: str, processing_id: str, message: str, notifier: Notifier
) -> None:
    try:
        if job.store.fail_unfinished(client, processing_id, message):
            _announce(job, notifier, client, processing_id)
    except Exception:
        log.exception("could not mark processing %s as failed", processing_id)
