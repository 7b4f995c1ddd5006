"""``/api-ext/pdf-processing``: print files of several drafts, rendered in the background.

The view checks and records the request and queues a job (:mod:`pps.processing`); the job renders
each draft's print file (fetched afterwards through ``/api-ext/files/draft/<hash>/print``,
which then finds it in the cache) and reports state changes to ``stateChangedNotifyUrl``.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import url_for

from pps.api import bp, current_client, resource, services
from pps.platform.errors import NotFound, ServiceUnavailable, ValidationFailed
from pps.platform.queue import JobQueueUnavailable
from pps.platform.repository.processing import FAILED, PENDING
from pps.processing.notify import ForbiddenTarget, check_notify_url
from pps.processing.schemas import ProcessingCreatedOut, ProcessingCreateInput, ProcessingOut
from pps.webhooks.events import PROCESSING_STATE_CHANGED, emit

log = logging.getLogger("pps")

blp = resource("processing", "Files")

DRAFT_UNKNOWN = "No draft with this hash exists for this client"
PROCESSING_NOT_FOUND = "No processing with this id exists for this client."


def _short(value: str) -> str:
    return value if len(value) <= 80 else f"{value[:77]}..."


@blp.post("/pdf-processing")
@blp.body(ProcessingCreateInput)
@blp.response(
    201,
    ProcessingCreatedOut,
    headers={
        "Location": {"description": "URL of the processing's status.", "schema": {"type": "string"}}
    },
)
def create_processing(data: dict[str, Any]) -> tuple[Any, int, dict[str, str]]:
    """Render the print files of several drafts in the background

    Answers at once with `processingId` (no `data` wrapper). Every draft starts `pending`,
    becomes `in-process` while its print PDF is rendered and ends `processed` (fetch it
    through the draft's `print` file endpoint) or `failed` (with `message`). Poll
    `GET /api-ext/pdf-processing/{processingId}`, or pass `stateChangedNotifyUrl` to receive
    that JSON on each change. A draft id that is not one of the client's is `failed` at once
    with a `message` naming it, and the others proceed. 503 when the job queue is
    unavailable (nothing is queued then).
    """
    client = current_client().identifier
    settings = services().settings
    store = services().processings
    draft_ids = list(dict.fromkeys(data["draftIds"]))
    known = store.known_drafts(client, draft_ids)
    notify_url = data.get("stateChangedNotifyUrl") or None
    if notify_url is not None:
        try:
            check_notify_url(
                notify_url,
                allow_private=settings.notify_allow_private,
                timeout=settings.notify_timeout,
                allowed_hosts=services().integrations.settings(client).allowed_hosts,
            )
        except ForbiddenTarget as exc:
            raise ValidationFailed(errors={"stateChangedNotifyUrl": [str(exc)]}) from None
    processing = store.create(client, draft_ids, notify_url)
    for item in processing.drafts:
        # An unknown (or another client's) draft fails alone; the others are rendered.
        if item.draft_hash not in known:
            store.set_state(
                client,
                processing.processing_id,
                item.position,
                FAILED,
                allowed_from=(PENDING,),
                message=f"{DRAFT_UNKNOWN}: {_short(item.draft_hash)}",
            )
    processing = store.get(client, processing.processing_id) or processing
    try:
        services().jobs.enqueue(client, processing.processing_id, len(draft_ids))
    except JobQueueUnavailable as exc:
        log.error("could not queue processing %s: %s", processing.processing_id, exc)
        store.delete(client, processing.processing_id)
        raise ServiceUnavailable(
            "The job queue is unavailable; nothing was queued. Try again shortly."
        ) from None
    if processing.finished:
        # Every draft failed at submission: no state changes in the job, which would
        # announce it, so the webhooks hear of the final state here (once).
        emit(services(), client, PROCESSING_STATE_CHANGED, processing.status())
    location = url_for("api.processing.show_processing", processing_id=processing.processing_id)
    return processing, 201, {"Location": location}


@blp.get("/pdf-processing/<processing_id>")
@blp.response(200, ProcessingOut)
@blp.errors(404)
def show_processing(processing_id: str) -> dict[str, Any]:
    """Show the state of each draft of a batch

    `{processingId, draftStates: [{draftId, state, message}]}` without a `data` wrapper,
    drafts in the order they were submitted. The same JSON is what pps POSTs to
    `stateChangedNotifyUrl`. A processing whose drafts are all `processed` or `failed` is
    kept `PPS_PROCESSING_RETENTION` seconds (30 days by default) after its last change,
    then 404 (the drafts' print files stay); one still running is kept.
    """
    processing = services().processings.get(current_client().identifier, processing_id)
    if processing is None:
        raise NotFound(PROCESSING_NOT_FOUND)
    return processing.status()


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource
