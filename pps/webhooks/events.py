"""The events a webhook may subscribe to, and :func:`emit`, how a feature announces one.

Call ``emit(services, client, event, payload)`` after the change is stored. It writes one
delivery per subscribed webhook of the client into the outbox (the database) and wakes
this process's dispatcher; it never waits for the network, and a failure to queue is logged,
never raised, so an event can never break the request or job that caused it.

Every delivery's body is ``{"type": <event>, "timestamp": <ISO 8601>, "data": <payload>}``
(the Standard Webhooks envelope). Payloads name records, never what a customer typed:

* ``draft.created``, ``draft.updated``, ``draft.finished``: :func:`draft_payload`;
* ``processing.state_changed``: the processing's status, as ``GET
  /api-ext/pdf-processing/{id}`` shows it;
* ``review.closed``: what the reviews feature passes (review id, draft, outcome).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from pps.platform.models import Draft
from pps.platform.queue import Dispatch
from pps.platform.repository.integrations import SqlIntegrationStore

__all__ = [
    "DRAFT_CREATED",
    "DRAFT_FINISHED",
    "DRAFT_UPDATED",
    "EVENTS",
    "PROCESSING_STATE_CHANGED",
    "REVIEW_CLOSED",
    "draft_payload",
    "emit",
]

log = logging.getLogger("pps.webhooks")

DRAFT_CREATED = "draft.created"
DRAFT_UPDATED = "draft.updated"
DRAFT_FINISHED = "draft.finished"
REVIEW_CLOSED = "review.closed"
PROCESSING_STATE_CHANGED = "processing.state_changed"

#: Event name -> what it means (also the OpenAPI reference's list).
EVENTS: dict[str, str] = {
    DRAFT_CREATED: "A draft was created (`POST /api-ext/draft`, replicate).",
    DRAFT_UPDATED: (
        "A draft's values changed: saved in the editor, updated through the API, "
        "or its variable data set or changed."
    ),
    DRAFT_FINISHED: "The customer pressed Finish in the editor.",
    REVIEW_CLOSED: "A review (proof approval) was closed: approved, rejected or by the shop.",
    PROCESSING_STATE_CHANGED: "A draft of a batch (`/api-ext/pdf-processing`) changed state.",
}


class EventServices(Protocol):
    """What :func:`emit` needs of :class:`pps.platform.services.Services`."""

    @property
    def integrations(self) -> SqlIntegrationStore: ...

    def dispatcher(self) -> Dispatch | None: ...


def draft_payload(draft: Draft) -> dict[str, Any]:
    return {
        "draftHash": draft.draft_hash,
        "userIdentifier": draft.user_identifier,
        "templateIdentifier": draft.template_identifier,
        "state": draft.state,
        "updatedAt": draft.updated_at.isoformat(),
    }


def emit(services: EventServices, client: str, event: str, payload: dict[str, Any]) -> int:
    """Queue ``event`` for every webhook of ``client`` subscribed to it; how many.

    Best effort by design: the change that caused the event is stored already.
    """
    if event not in EVENTS:
        raise ValueError(f"unknown webhook event {event!r}")
    try:
        queued = services.integrations.enqueue(client, event, payload)
    except Exception:
        log.exception("could not queue webhook event %s of client %s", event, client)
        return 0
    if queued:
        try:
            dispatcher = services.dispatcher()
            if dispatcher is not None:
                dispatcher.wake()
        except Exception:
            log.exception("could not wake the webhook dispatcher")
    return queued
