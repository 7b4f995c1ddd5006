"""Notifications to a URL the shop gave with a call, sent through the webhook outbox.

``stateChangedNotifyUrl`` (batch print files), ``closeCallbackURL`` (a review closed) and
``notifyCallbackURL`` (a review's proof PDF is ready) are not webhooks, but they get the
same care: :func:`notify` writes the message to the outbox in the database and wakes this
process's dispatcher; the dispatcher (:mod:`pps.webhooks.dispatcher`) sends it with the
client's bounded concurrency, checks the address again at send time, signs it with the
client's webhook secret (when it has one), and retries it with backoff
(``PPS_NOTIFY_TIMEOUT``, ``PPS_NOTIFY_ATTEMPTS``, ``PPS_NOTIFY_BACKOFF``). Nothing here
waits for the network: a web request or a render job only writes a row.

Notifications of one ``topic`` (a processing, a review) go in order, one at a time; while
one is being retried, a newer one replaces it (the receiver needs the newest state).
"""

from __future__ import annotations

import logging
from typing import Any

from pps.webhooks.events import EventServices

__all__ = [
    "PROCESSING_NOTIFICATION",
    "REVIEW_CLOSED_NOTIFICATION",
    "REVIEW_PDF_NOTIFICATION",
    "OutboxNotifier",
    "notify",
]

log = logging.getLogger("pps.webhooks")

#: What a notification is about (the outbox's ``event`` column; logs name it).
PROCESSING_NOTIFICATION = "notify.processing"
REVIEW_CLOSED_NOTIFICATION = "notify.review-closed"
REVIEW_PDF_NOTIFICATION = "notify.review-pdf"


def notify(
    services: EventServices,
    client: str,
    kind: str,
    url: str,
    payload: dict[str, Any],
    topic: str,
    *,
    once: str | None = None,
) -> str | None:
    """Queue ``payload`` for ``url``; the message id, or None when it could not be queued
    (logged: the change that caused it is stored already). ``once``: a key under which
    it is queued at most once (see ``enqueue_notification``)."""
    try:
        identifier = services.integrations.enqueue_notification(
            client, kind, url, payload, topic, once=once
        )
    except Exception:
        log.exception("could not queue notification %s of client %s", kind, client)
        return None
    try:
        dispatcher = services.dispatcher()
        if dispatcher is not None:
            dispatcher.wake()
    except Exception:
        log.exception("could not wake the webhook dispatcher")
    return identifier


class OutboxNotifier:
    """The batch job's notifier (:class:`pps.processing.notify.Notifier`) on the outbox:
    ``send`` queues a snapshot, ``close`` has nothing to wait for (the outbox is durable
    and the dispatcher sends it, also after this process is gone).

    The final snapshot is queued once per topic (key ``<topic>:final``): a job run again
    after an outage starts by sending the status it finds, which must not send the final
    state a second time under a new message id."""

    def __init__(self, services: EventServices, client: str, url: str, topic: str) -> None:
        self._services = services
        self._client = client
        self._url = url
        self._topic = topic

    def send(self, payload: dict[str, Any], *, final: bool = False) -> None:
        notify(
            self._services,
            self._client,
            PROCESSING_NOTIFICATION,
            self._url,
            payload,
            self._topic,
            once=f"{self._topic}:final" if final else None,
        )

    def close(self, timeout: float | None = None) -> bool:
        return True
