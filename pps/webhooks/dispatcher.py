"""The webhook dispatcher: sends the outbox from a pool of threads, fairly between clients.

Why a dispatcher of its own, not the batch job queue: a receiver may be slow or down, and
one client's receiver must never hold up another client's deliveries, nor batch print
jobs. So deliveries never share a worker with rendering, and within the dispatcher:

* at most ``PPS_WEBHOOK_CONCURRENCY`` deliveries are in flight per process, and at most
  ``PPS_WEBHOOK_PER_CLIENT`` of them for one client; deliveries of a client at its limit
  are left out of the claim query itself, so its backlog cannot crowd out anyone's;
* each attempt ends within ``PPS_WEBHOOK_TIMEOUT`` seconds in all (one deadline for the
  whole request, :func:`pps.platform.ssrf.post`), so a slot is never held longer;
* a failed attempt is retried after ``PPS_WEBHOOK_BACKOFF`` seconds, doubling each time (at
  most an hour), up to ``PPS_WEBHOOK_ATTEMPTS`` attempts; then the message is dropped. A
  host name that does not resolve is such a failed attempt; an address the rules refuse
  (:mod:`pps.platform.ssrf`) ends the message at once.

A client's slow receiver thus costs others nothing as long as fewer than
``concurrency / per_client`` clients are slow at once; their attempts time out and free the
slots either way.

Where it runs: every app process starts one with its first event (threads, started again
after a fork), or as it starts serving when the outbox holds rows then
(:func:`pps.app.resume_outbox`, called by each gunicorn worker), so what was queued before
a restart is sent without waiting for a new event; ``pps worker`` runs one in its main
process, which delivers the events and notifications of batch jobs rendered in its work
horses (``--burst`` lets it send what is due before exiting). CLI commands start none.

What it sends: webhook deliveries, and notifications to a URL the shop gave with a call
(``stateChangedNotifyUrl``, ``closeCallbackURL``, ``notifyCallbackURL``; see
:mod:`pps.webhooks.notifications`), the latter with ``PPS_NOTIFY_TIMEOUT``,
``PPS_NOTIFY_ATTEMPTS`` and ``PPS_NOTIFY_BACKOFF``, in order per topic.

Besides messages, the outbox carries *jobs*: work on a shop's URL that must survive restarts
and be retried like a notification, such as downloading a customer's PDF from a ``fileURL``
(:mod:`pps.drafts.url_upload`). A job is an :class:`OutboxJob` registered for its ``event``:
its attempt runs in a dispatcher slot of the client (bounded like deliveries), with a lease
of its own length, ``PPS_NOTIFY_ATTEMPTS`` and ``PPS_NOTIFY_BACKOFF``; when it is given up,
the job is told (to record the failure and tell the shop).

The outbox is in the database, so deliveries survive restarts, any running dispatcher
picks up what is due (polling every ``PPS_WEBHOOK_POLL`` seconds, at once when woken by a
local event), and a lease on each claimed delivery keeps two dispatchers from sending the
same attempt.

An attempt that raises an unexpected error (not an outage of the database) counts as a
failed attempt and is logged; an outage before the attempt counts nothing: the lease
expires and the attempt is made again. An outage *after* it (the message was sent, but
that cannot be written) keeps the outcome in memory: it is written as soon as the
database answers, and should the lease have expired meanwhile, this dispatcher records
the message instead of sending it again. Delivery stays at least once (another
dispatcher may take the message over once its lease expired, and a dispatcher that dies
forgets), with the same ``webhook-id`` every time, which receivers deduplicate on.

Health (``status`` of a webhook): a failed attempt makes an operational webhook degraded
(1), a message given up makes it broken (2), and any success makes it operational (0).
A broken webhook still gets new events, which is how it becomes operational again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Protocol

from pps.platform.backoff import doubling_pause
from pps.platform.name_lookup import Resolver
from pps.platform.outages import outage_message
from pps.platform.repository.integrations import Delivery, LeaseLost, SqlIntegrationStore
from pps.platform.settings import Settings
from pps.webhooks.delivery import Outcome, send

__all__ = ["Dispatcher", "OutboxJob", "retry_pause", "start_dispatcher"]

log = logging.getLogger("pps.webhooks")

MAX_PAUSE = 3600.0
#: Beyond the attempt's deadline, how long a claim is kept before another dispatcher may
#: take the delivery over (this one died).
LEASE_MARGIN = 30.0


class DispatcherServices(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def integrations(self) -> SqlIntegrationStore: ...


class OutboxJob(Protocol):
    """Work an outbox row of its ``event`` stands for, instead of a message to send."""

    @property
    def deadline(self) -> float:
        """Seconds one attempt may take in all; its lease adds :data:`LEASE_MARGIN`."""
        ...

    def attempt(self, delivery: Delivery) -> Outcome:
        """Do the work once; ``retry`` in the outcome when another attempt may succeed.
        :class:`~pps.platform.repository.integrations.LeaseLost` (from
        :meth:`~pps.platform.repository.integrations.SqlIntegrationStore.hold`) when the
        attempt outlived its lease and the row was taken over: nothing is recorded."""
        ...

    def given_up(self, delivery: Delivery, outcome: Outcome, superseded: bool) -> None:
        """No attempt follows (failed for good, attempts used up, or ``superseded`` by a
        newer row of its topic)."""
        ...


def retry_pause(backoff: float, attempts_made: int) -> float:
    """Seconds before the next attempt, after ``attempts_made`` failed ones."""
    return doubling_pause(backoff, attempts_made, MAX_PAUSE)


class Dispatcher:
    """Sends the outbox of ``store`` and runs its jobs (``jobs``: by event name);
    ``resolver``: where receivers' host names are looked up (the process's lookup threads
    unless given, as tests do)."""

    def __init__(
        self,
        store: SqlIntegrationStore,
        settings: Settings,
        jobs: Mapping[str, OutboxJob] | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        self._store = store
        self._settings = settings
        self._jobs = dict(jobs or {})
        self._resolver = resolver
        self._limit = settings.webhook_concurrency
        self._per_client = settings.webhook_per_client
        self._in_flight: Counter[str] = Counter()
        # Outcomes of attempts made whose recording met an outage, by message id.
        self._unrecorded: dict[str, tuple[Delivery, Outcome]] = {}
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._pool = ThreadPoolExecutor(self._limit, thread_name_prefix="pps-webhook")
        self._thread = threading.Thread(target=self._run, name="pps-webhooks", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def close(self, timeout: float | None = None) -> None:
        """Stop claiming; deliveries in flight finish within their deadline (or their lease
        lets another dispatcher retry them)."""
        self._stopped.set()
        self._wake.set()
        self._thread.join(timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)
        # Wait for the attempts in flight (each ends within its deadline) so none touches
        # the database after the services are closed.
        limit = self._settings.webhook_timeout + 1.0 if timeout is None else timeout
        with self._idle:
            self._idle.wait_for(lambda: not any(self._in_flight.values()), limit)

    def drain(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s until nothing is due or in flight (``pps worker --burst``
        before it exits); True when the outbox has nothing left to send now. Messages
        waiting for a later retry stay in the outbox for the next dispatcher."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._wake.set()
            due = self._store.next_due()
            if not self.in_flight() and (due is None or due > datetime.now(UTC)):
                return True
            time.sleep(0.05)
        return False

    def in_flight(self) -> dict[str, int]:
        with self._lock:
            return {client: n for client, n in self._in_flight.items() if n}

    def unrecorded(self) -> int:
        """Attempts made whose outcome waits for the database to be written."""
        with self._lock:
            return len(self._unrecorded)

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._wake.clear()
            try:
                self._record_unrecorded()
                self._claim_and_send()
            except Exception as exc:  # the database may be away for a while; try again later
                outage = outage_message(exc)
                if outage is None:
                    log.exception("webhook dispatcher could not read the outbox")
                else:  # one line per poll while it lasts, not a traceback each time
                    log.warning("webhook dispatcher could not read the outbox: %s", outage)
            self._wake.wait(self._settings.webhook_poll)

    def _claim_and_send(self) -> None:
        with self._lock:
            in_flight = dict(self._in_flight)
        free = self._limit - sum(in_flight.values())
        if free <= 0:
            return
        busy = {client for client, n in in_flight.items() if n >= self._per_client}
        lease = max(self._settings.webhook_timeout, self._settings.notify_timeout) + LEASE_MARGIN
        claimed = self._store.claim_due(
            limit=free,
            lease=lease,
            busy=busy,
            in_flight=in_flight,
            per_client=self._per_client,
            leases={event: job.deadline + LEASE_MARGIN for event, job in self._jobs.items()},
            jobs=list(self._jobs),
        )
        for delivery in claimed:
            with self._lock:
                self._in_flight[delivery.client_identifier] += 1
            self._pool.submit(self._deliver, delivery)

    def _record_unrecorded(self) -> None:
        """Write the outcomes an outage kept from being written (raises while it lasts)."""
        with self._lock:
            waiting = list(self._unrecorded.values())
        for delivery, outcome in waiting:
            with self._lock:
                if self._unrecorded.pop(delivery.identifier, None) is None:
                    continue  # taken by a claim of the same message meanwhile
            self._settle(delivery, outcome)

    def _deliver(self, delivery: Delivery) -> None:
        try:
            with self._lock:
                known = self._unrecorded.pop(delivery.identifier, None)
            if known is not None:  # sent already; only its outcome was not written
                self._settle(delivery, known[1])
                return
            try:
                outcome = self._attempt(delivery)
            except LeaseLost:
                # The attempt outlived its lease and another dispatcher took the row over:
                # that one's attempt counts; this one stopped and records nothing.
                log.warning(
                    "outbox job %s (%s) was taken over by another dispatcher; this attempt stopped",
                    delivery.identifier,
                    delivery.event,
                )
                return
            except Exception as exc:
                if outage_message(exc) is not None:
                    raise
                # A fault of this message (its payload, its receiver, a bug): a failed
                # attempt, so backoff and give-up apply rather than a retry at every lease
                # expiry forever.
                log.exception(
                    "webhook delivery %s (%s) raised unexpectedly",
                    delivery.identifier,
                    delivery.event,
                )
                outcome = Outcome(False, True, f"unexpected error: {type(exc).__name__}")
            self._settle(delivery, outcome)
        except Exception:
            # The database is away. Before the attempt nothing is counted: the lease
            # expires and the attempt is made again (by this or another dispatcher); after
            # it, its outcome waits in ``_unrecorded`` to be written.
            log.exception("webhook delivery %s could not be attempted", delivery.identifier)
        finally:
            with self._idle:
                self._in_flight[delivery.client_identifier] -= 1
                self._idle.notify_all()
            self._wake.set()  # a slot is free: look for more at once

    def _settle(self, delivery: Delivery, outcome: Outcome) -> None:
        """Record the attempt's outcome; when the database is away, keep it for later, so
        that a message sent is not sent again for want of a written answer."""
        try:
            self._record(delivery, outcome)
        except Exception as exc:
            if outage_message(exc) is not None:
                with self._lock:
                    self._unrecorded[delivery.identifier] = (delivery, outcome)
            raise

    def _policy(self, delivery: Delivery) -> tuple[float, int, float]:
        """Deadline, attempts and first backoff: ``PPS_NOTIFY_*`` for notifications,
        ``PPS_WEBHOOK_*`` for webhooks."""
        s = self._settings
        job = self._jobs.get(delivery.event)
        if job is not None:
            return job.deadline, s.notify_attempts, s.notify_backoff
        if delivery.is_notification:
            return s.notify_timeout, s.notify_attempts, s.notify_backoff
        return s.webhook_timeout, s.webhook_attempts, s.webhook_backoff

    def _attempt(self, delivery: Delivery) -> Outcome:
        job = self._jobs.get(delivery.event)
        if job is not None:
            return job.attempt(delivery)
        config = self._store.settings(delivery.client_identifier)
        if config.webhook_secret is None and not delivery.is_notification:
            return Outcome(False, False, "the client has no webhook secret")
        return send(
            delivery,
            config.webhook_secret,
            deadline=self._policy(delivery)[0],
            allow_private=self._settings.notify_allow_private,
            allowed_hosts=config.allowed_hosts,
            resolver=self._resolver,
        )

    def _record(self, delivery: Delivery, outcome: Outcome) -> None:
        if outcome.ok:
            self._store.delivered(delivery)
            return
        made = delivery.attempts + 1
        _, attempts, backoff = self._policy(delivery)
        log.warning(
            "webhook delivery %s (%s) to %s failed, attempt %d of %d: %s",
            delivery.identifier,
            delivery.event,
            delivery.topic if delivery.is_notification else delivery.webhook_identifier,
            made,
            attempts,
            outcome.detail,
        )
        superseded = delivery.is_notification and self._store.superseded(delivery)
        if not superseded and outcome.retry and made < attempts:
            self._store.failed(delivery, retry_pause(backoff, made))
            return
        job = self._jobs.get(delivery.event)
        if job is not None:
            # Told first: should that meet an outage, the row stays and is tried again.
            try:
                job.given_up(delivery, outcome, superseded)
            except Exception as exc:
                if outage_message(exc) is not None:
                    raise
                log.exception(
                    "outbox job %s (%s) failed to end", delivery.identifier, delivery.event
                )
        # Superseded: a newer state of the topic goes instead.
        self._store.failed(delivery, None)


def start_dispatcher(
    services: DispatcherServices, jobs: Mapping[str, OutboxJob] | None = None
) -> Dispatcher:
    """The app's :data:`pps.platform.services.DispatcherFactory` (with ``jobs`` bound)."""
    return Dispatcher(services.integrations, services.settings, jobs)
