"""A customer's print PDF that pps downloads from a shop's URL, then tells the shop. No Flask.

The Magento module's ``uploadPdf`` (``Helper/Api.php``) sends ``{fileURL, callbackURL}`` to
``POST /api-ext/draft/<hash>/upload`` and expects ``204`` at once; later its ``callbackURL``
(``/printformer/process/draft/draft_id/<hash>/?filepath=...``, a controller that reads only
those two parameters, deletes its temporary copy of the file and orders the draft's print
file through ``/api-ext/pdf-processing``) is to be called. So:

* the request is recorded as a *job* in the webhook outbox (:func:`queue_url_upload`), which
  survives restarts and is run by any dispatcher (an app process, ``pps worker``) with a
  lease, in one of the client's bounded slots, retried like a notification
  (``PPS_NOTIFY_ATTEMPTS``, ``PPS_NOTIFY_BACKOFF``) while the shop's server is unreachable
  or answers 5xx, 408, 425 or 429;
* the download (:class:`UrlUploadJob`) goes through :func:`pps.platform.ssrf.get`: the
  address rules of every URL a shop gives, checked again now and connected to the checked
  address, no redirects, one deadline (``PPS_UPLOAD_FETCH_TIMEOUT``), and reading stops
  past ``PPS_MAX_UPLOAD_BYTES``;
* the PDF is then judged and stored exactly as a multipart upload is
  (:func:`pps.drafts.pdf_upload.store_pdf`): a refused one leaves the draft as it was. An
  attempt that outlived its lease, the row taken over by another dispatcher meanwhile,
  stops before storing (:meth:`~pps.platform.repository.integrations.SqlIntegrationStore.hold`);
* either way the ``callbackURL`` gets a notification (POST, JSON
  ``{draftHash, success, message}``, through the outbox: checked again, retried), sent
  unchanged so the module finds its parameters; the module's CSRF exemption for that path
  expects a POST. A failure is logged, and ``success: false`` with ``message`` says why;
  the draft keeps no upload, so the print file the module orders next fails with a message.
  One callback per job, whatever ends it and however often (a ``once`` key of the outbox).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

from pps.drafts.pdf_upload import (
    DraftGone,
    PdfNotTaken,
    UploadServices,
    intent_problem,
    store_pdf,
)
from pps.platform.errors import ClientStorageFull
from pps.platform.repository.integrations import Delivery
from pps.platform.ssrf import (
    ForbiddenTarget,
    RequestFailed,
    ResponseTooLarge,
    check_url,
    get,
)
from pps.webhooks.delivery import Outcome, retryable
from pps.webhooks.dispatcher import LEASE_MARGIN

__all__ = [
    "CALLBACK_NOTIFICATION",
    "CHECK_ALLOWANCE",
    "FETCH_JOB",
    "UrlUploadJob",
    "queue_url_upload",
    "url_problems",
]

log = logging.getLogger("pps.drafts")

#: The outbox event of the download job, and of the notification to ``callbackURL``.
FETCH_JOB = "job.draft-upload"
CALLBACK_NOTIFICATION = "notify.draft-upload"
#: How URLs are named in refusals: "<purpose> are not sent there: ...".
FETCH_PURPOSE = "Requests for the PDF"
CALLBACK_PURPOSE = "Notifications"
USER_AGENT = "pps-fetch/1"
#: Beyond the download's own deadline, the seconds an attempt may take to check, store and
#: preflight the PDF before another dispatcher may take the job over.
CHECK_ALLOWANCE = 300.0


def _topic(draft_hash: str) -> str:
    """One topic per draft: its download and callback go in order, and a newer upload
    request replaces an older one still waiting for a retry."""
    return f"draft-upload:{draft_hash}"


def url_problems(
    file_url: str,
    callback_url: str | None,
    *,
    allow_private: bool,
    allowed_hosts: Collection[str],
    timeout: float,
) -> dict[str, list[str]]:
    """Why each URL may not be used, by field name; empty when both may. Nothing is sent:
    the host names are looked up (at most ``timeout`` s) and their addresses judged."""
    problems: dict[str, list[str]] = {}
    named = [("fileURL", file_url, FETCH_PURPOSE), ("callbackURL", callback_url, CALLBACK_PURPOSE)]
    for field, url, purpose in named:
        if url is None:
            continue
        try:
            check_url(
                url,
                allow_private=allow_private,
                allowed_hosts=allowed_hosts,
                purpose=purpose,
                timeout=timeout,
            )
        except ForbiddenTarget as exc:
            problems[field] = [str(exc)]
    return problems


def queue_url_upload(
    services: UploadServices, client: str, draft_hash: str, file_url: str, callback_url: str | None
) -> str:
    """Record the download as an outbox job and wake this process's dispatcher; its id.

    Raises when it cannot be recorded (the database is away): then nothing will happen.
    """
    payload = {"draftHash": draft_hash, "callbackURL": callback_url}
    identifier = services.integrations.enqueue_notification(
        client, FETCH_JOB, file_url, payload, _topic(draft_hash)
    )
    try:
        dispatcher = services.dispatcher()
        if dispatcher is not None:
            dispatcher.wake()
    except Exception:  # it polls the outbox anyway
        log.exception("could not wake the webhook dispatcher")
    return identifier


class UrlUploadJob:
    """The :class:`pps.webhooks.dispatcher.OutboxJob` of :data:`FETCH_JOB`."""

    def __init__(self, services: UploadServices) -> None:
        self._services = services

    @property
    def deadline(self) -> float:
        return self._services.settings.upload_fetch_timeout + CHECK_ALLOWANCE

    def attempt(self, delivery: Delivery) -> Outcome:
        """Download, check and store the PDF once; on success, queue the callback."""
        services = self._services
        client = delivery.client_identifier
        draft_hash = str(delivery.payload.get("draftHash"))
        draft = services.repository.get_draft(client, draft_hash)
        if draft is None:
            return Outcome(False, False, "The draft no longer exists.")
        problem = intent_problem(draft)
        if problem is not None:
            return Outcome(False, False, problem)
        data, failure = self._download(delivery)
        if failure is not None:
            return failure
        # Still this attempt's (LeaseLost if not): one that outlived its lease while the
        # row was taken over must not store the PDF too. Held for the check that follows.
        services.integrations.hold(delivery, CHECK_ALLOWANCE + LEASE_MARGIN)
        try:
            stored = store_pdf(services, client, draft, data)
        except PdfNotTaken as exc:  # its message names every problem, once
            return Outcome(False, False, str(exc))
        except (DraftGone, ClientStorageFull) as exc:
            return Outcome(False, False, str(exc))
        log.info(
            "draft %s of client %s: PDF downloaded from the shop and stored (version %s)",
            draft_hash,
            client,
            stored.version,
        )
        self._call_back(delivery, True, None)
        return Outcome(True, False, "PDF downloaded and stored")

    def _download(self, delivery: Delivery) -> tuple[bytes, Outcome | None]:
        """The PDF's bytes, or what went wrong (``retry`` set when worth another try)."""
        settings = self._services.settings
        limit = settings.max_upload_bytes
        try:
            response = get(
                delivery.url,
                {"Accept": "application/pdf, */*", "User-Agent": USER_AGENT, "Connection": "close"},
                deadline=settings.upload_fetch_timeout,
                max_bytes=limit,
                allow_private=settings.notify_allow_private,
                allowed_hosts=self._services.integrations.settings(
                    delivery.client_identifier
                ).allowed_hosts,
                purpose=FETCH_PURPOSE,
            )
        except ForbiddenTarget as exc:
            return b"", Outcome(False, False, f"The PDF was not downloaded: {exc}")
        except ResponseTooLarge:
            return b"", Outcome(
                False,
                False,
                f"The PDF is larger than {limit} bytes (PPS_MAX_UPLOAD_BYTES); "
                "the download was stopped.",
            )
        except RequestFailed as exc:
            return b"", Outcome(False, True, f"The PDF could not be downloaded: {exc}.")
        if response.status != 200:
            redirect = "; redirects are not followed" if 300 <= response.status < 400 else ""
            return b"", Outcome(
                False,
                retryable(response.status),
                f"The PDF could not be downloaded: the shop answered {response.status}{redirect}.",
            )
        return response.body, None

    def given_up(self, delivery: Delivery, outcome: Outcome, superseded: bool) -> None:
        """Log the failure and tell the shop (unless a newer request for the draft waits)."""
        log.warning(
            "draft %s of client %s: upload from URL failed for good: %s",
            delivery.payload.get("draftHash"),
            delivery.client_identifier,
            outcome.detail,
        )
        if not superseded:
            self._call_back(delivery, False, outcome.detail)

    def _call_back(self, delivery: Delivery, success: bool, message: str | None) -> None:
        url = delivery.payload.get("callbackURL")
        if not isinstance(url, str):
            return
        draft_hash = str(delivery.payload.get("draftHash"))
        body: dict[str, Any] = {"draftHash": draft_hash, "success": success, "message": message}
        # Not :func:`pps.webhooks.notifications.notify`, which logs a failure to queue: an
        # outage here must fail the attempt, so that it is made again and the shop is told.
        # Once per job, whatever ends it: an attempt that ends twice (its outcome written
        # again after an outage, a second dispatcher after a lease ran out) calls back once.
        self._services.integrations.enqueue_notification(
            delivery.client_identifier,
            CALLBACK_NOTIFICATION,
            url,
            body,
            _topic(draft_hash),
            once=f"{CALLBACK_NOTIFICATION}:{delivery.identifier}",
        )
