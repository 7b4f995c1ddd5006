"""Storage of what connects pps back to a shop: webhooks and their pending deliveries (an
outbox), and per-client outbound settings (webhook secret, remote ACL URL, allowed hosts).

A seam of its own beside :mod:`pps.platform.repository`, on the same engine. Every method
that touches a client's records takes the client first; another client's webhook is not
found. Deliveries are claimed with a lease (``UPDATE ... WHERE lease_until IS NULL OR
lease_until < now``), so several dispatchers (app processes, ``pps worker``) never send the
same attempt twice, and a dispatcher that dies frees its claims when their lease expires.
A claim skips a delivery whose row another transaction holds rather than wait for it, so it
never waits while holding the deliveries it leased before (see :func:`_unheld`).
"""

from __future__ import annotations

import base64
import dataclasses
import secrets
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, RowMapping

from pps.platform.repository import Page
from pps.platform.repository.client_lock import ensure_settings_row, lock_client
from pps.platform.repository.tables import (
    client_settings,
    notification_keys,
    webhook_deliveries,
    webhooks,
)

__all__ = [
    "BROKEN",
    "DEGRADED",
    "JOB_PREFIX",
    "OPERATIONAL",
    "ClientSettings",
    "Delivery",
    "LeaseLost",
    "SqlIntegrationStore",
    "Subscription",
    "Webhook",
    "WebhookLimitReached",
    "new_webhook_secret",
]

OPERATIONAL = 0
DEGRADED = 1
BROKEN = 2
#: How the event of an outbox *job* (work, not a message to send) begins.
JOB_PREFIX = "job."


def utcnow() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _impossible(*identifiers: str) -> bool:
    """An identifier from a URL that cannot name a record (PostgreSQL text holds no NUL):
    "not found", not a driver error."""
    return any("\x00" in identifier for identifier in identifiers)


def new_webhook_secret() -> str:
    """A Standard Webhooks secret: ``whsec_`` and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


@dataclass(frozen=True)
class ClientSettings:
    client_identifier: str
    webhook_secret: str | None = None
    acl_url: str | None = None
    allowed_hosts: tuple[str, ...] = field(default_factory=tuple)
    #: The editor's proof must be confirmed (a ticked checkbox) before Finish.
    proof_required: bool = False


@dataclass(frozen=True)
class Webhook:
    identifier: str
    client_identifier: str
    event: str
    url: str
    status: int
    created_at: datetime


@dataclass(frozen=True)
class Delivery:
    """One pending message to one webhook, or a notification to a URL of its own (then
    ``webhook_identifier`` is None); ``attempts`` made so far."""

    identifier: str
    webhook_identifier: str | None
    client_identifier: str
    event: str
    url: str
    payload: dict[str, Any]
    attempts: int
    created_at: datetime
    topic: str | None = None
    #: Until when this claim holds the row, as written by it: the claim's own token
    #: (another dispatcher that takes the row over writes a value of its own).
    lease_until: datetime | None = None

    @property
    def is_notification(self) -> bool:
        return self.webhook_identifier is None


class LeaseLost(Exception):
    """The delivery's claim no longer holds its row: the lease expired and another
    dispatcher took the row over, or the row is gone. Whoever held it does nothing more
    with it, and records nothing."""


@dataclass(frozen=True)
class Subscription:
    """What creating a webhook gave: the webhook, the client's signing secret when this
    call issued it (shown once), and whether it is new (False: the client had this very
    subscription already, and that one is returned)."""

    webhook: Webhook
    secret: str | None = None
    created: bool = True


class WebhookLimitReached(Exception):
    """The client has as many webhooks as it may have; nothing was created."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"a client may have at most {limit} webhooks")
        self.limit = limit


def _webhook(row: RowMapping) -> Webhook:
    return Webhook(
        identifier=row["identifier"],
        client_identifier=row["client_identifier"],
        event=row["event"],
        url=row["url"],
        status=int(row["status"]),
        created_at=_aware(row["created_at"]),
    )


def _unheld(identifier: str, now: datetime) -> sa.Select[tuple[str]]:
    """The delivery ``identifier`` when it is free to lease and no other transaction holds
    its row, locked for this one (PostgreSQL; SQLite writes one at a time anyway).

    Skipped rather than waited for: the holder is deleting it (its webhook, a newer
    notification of its topic) or leasing it, and a claim that waited while holding the
    deliveries it leased before would deadlock with a delete that takes them in another
    order (the order they lie in the table, not the order they are due in)."""
    row = webhook_deliveries.alias("unheld")
    return (
        sa.select(row.c.identifier)
        .where(
            row.c.identifier == identifier,
            sa.or_(row.c.lease_until.is_(None), row.c.lease_until < now),
        )
        .with_for_update(skip_locked=True)
    )


class SqlIntegrationStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- client settings -----------------------------------------------------------------

    def settings(self, client: str) -> ClientSettings:
        with self.engine.connect() as conn:
            row = (
                conn.execute(
                    client_settings.select().where(client_settings.c.client_identifier == client)
                )
                .mappings()
                .first()
            )
        if row is None:
            return ClientSettings(client)
        return ClientSettings(
            client_identifier=client,
            webhook_secret=row["webhook_secret"],
            acl_url=row["acl_url"],
            allowed_hosts=tuple(row["allowed_hosts"] or ()),
            proof_required=bool(row["proof_required"]),
        )

    def _update(self, client: str, **values: Any) -> None:
        with self.engine.begin() as conn:
            ensure_settings_row(conn, client)
            conn.execute(
                client_settings.update()
                .where(client_settings.c.client_identifier == client)
                .values(updated_at=utcnow(), **values)
            )

    def set_acl_url(self, client: str, url: str | None) -> None:
        self._update(client, acl_url=url)

    def set_allowed_hosts(self, client: str, hosts: Sequence[str]) -> None:
        self._update(client, allowed_hosts=sorted(set(hosts)))

    def set_proof_required(self, client: str, required: bool) -> None:
        self._update(client, proof_required=required)

    def rotate_webhook_secret(self, client: str) -> str:
        secret = new_webhook_secret()
        self._update(client, webhook_secret=secret)
        return secret

    def issue_webhook_secret(self, client: str) -> str | None:
        """A new secret when the client has none yet (returned once), else None."""
        with self.engine.begin() as conn:
            return self._issue_secret(conn, client)

    @classmethod
    def _issue_secret(cls, conn: Connection, client: str) -> str | None:
        secret = new_webhook_secret()
        ensure_settings_row(conn, client)
        updated = conn.execute(
            client_settings.update()
            .where(
                client_settings.c.client_identifier == client,
                client_settings.c.webhook_secret.is_(None),
            )
            .values(webhook_secret=secret, updated_at=utcnow())
        ).rowcount
        return secret if updated else None

    # -- webhooks ------------------------------------------------------------------------

    def create_webhook(
        self, client: str, event: str, url: str, *, limit: int | None = None
    ) -> Subscription:
        """A new webhook and, when the client has no signing secret yet, a new one; or the
        client's webhook of this very ``event`` and ``url`` when it has one already.

        One transaction, under the client's lock: a webhook without a secret would have
        every delivery dropped, a secret stored but never shown could verify nothing, and
        two identical requests at once must not make two subscriptions (each would send
        every event to the URL again). :class:`WebhookLimitReached` when the client has
        ``limit`` webhooks already.
        """
        now = utcnow()
        identifier = secrets.token_hex(16)
        mine = webhooks.c.client_identifier == client
        with self.engine.begin() as conn:
            lock_client(conn, client)
            existing = (
                conn.execute(
                    webhooks.select()
                    .where(mine, webhooks.c.event == event, webhooks.c.url == url)
                    .order_by(webhooks.c.created_at, webhooks.c.identifier)
                    .limit(1)
                )
                .mappings()
                .first()
            )
            if existing is not None:
                return Subscription(_webhook(existing), None, created=False)
            if limit is not None:
                count = conn.execute(
                    sa.select(sa.func.count()).select_from(webhooks).where(mine)
                ).scalar_one()
                if count >= limit:
                    raise WebhookLimitReached(limit)
            conn.execute(
                webhooks.insert().values(
                    identifier=identifier,
                    client_identifier=client,
                    event=event,
                    url=url,
                    status=OPERATIONAL,
                    created_at=now,
                    updated_at=now,
                )
            )
            secret = self._issue_secret(conn, client)
        return Subscription(Webhook(identifier, client, event, url, OPERATIONAL, now), secret)

    def get_webhook(self, client: str, identifier: str) -> Webhook | None:
        if _impossible(client, identifier):
            return None
        with self.engine.connect() as conn:
            row = (
                conn.execute(
                    webhooks.select().where(
                        webhooks.c.client_identifier == client,
                        webhooks.c.identifier == identifier,
                    )
                )
                .mappings()
                .first()
            )
        return _webhook(row) if row is not None else None

    def list_webhooks(self, client: str, page: int, per_page: int) -> Page[Webhook]:
        page = max(1, page)
        where = webhooks.c.client_identifier == client
        with self.engine.connect() as conn:
            total = int(
                conn.execute(
                    sa.select(sa.func.count()).select_from(webhooks).where(where)
                ).scalar_one()
            )
            rows = (
                conn.execute(
                    webhooks.select()
                    .where(where)
                    .order_by(webhooks.c.created_at, webhooks.c.identifier)
                    .limit(per_page)
                    .offset((page - 1) * per_page)
                )
                .mappings()
                .all()
            )
        return Page([_webhook(row) for row in rows], total, page, per_page)

    def delete_webhook(self, client: str, identifier: str) -> bool:
        if _impossible(client, identifier):
            return False
        with self.engine.begin() as conn:
            conn.execute(
                webhook_deliveries.delete().where(
                    webhook_deliveries.c.webhook_identifier == identifier,
                    webhook_deliveries.c.client_identifier == client,
                )
            )
            deleted = conn.execute(
                webhooks.delete().where(
                    webhooks.c.client_identifier == client, webhooks.c.identifier == identifier
                )
            ).rowcount
        return bool(deleted)

    # -- the outbox ----------------------------------------------------------------------

    def enqueue(self, client: str, event: str, payload: dict[str, Any]) -> int:
        """A delivery for each of the client's webhooks of ``event``; how many."""
        now = utcnow()
        with self.engine.begin() as conn:
            targets = conn.execute(
                sa.select(webhooks.c.identifier).where(
                    webhooks.c.client_identifier == client, webhooks.c.event == event
                )
            ).all()
            rows = [
                {
                    "identifier": "msg_" + secrets.token_hex(16),
                    "webhook_identifier": row.identifier,
                    "client_identifier": client,
                    "event": event,
                    "payload": payload,
                    "attempts": 0,
                    "next_attempt_at": now,
                    "lease_until": None,
                    "created_at": now,
                }
                for row in targets
            ]
            if rows:
                conn.execute(webhook_deliveries.insert(), rows)
        return len(rows)

    def enqueue_notification(
        self,
        client: str,
        event: str,
        url: str,
        payload: dict[str, Any],
        topic: str,
        *,
        once: str | None = None,
    ) -> str:
        """A notification of ``payload`` to ``url`` (not a webhook); its message id.

        Notifications of one ``topic`` are sent in the order queued, one at a time; a new
        one supersedes older ones that failed and wait for their retry (the receiver needs
        the newest state, not a backlog). One that was never tried yet is kept, so a
        healthy receiver hears of every change. An outbox job (a download a shop asked
        for, ``pps.drafts.url_upload``) is queued the same way: ``url`` is what it fetches.

        ``once``: a key (up to 120 characters) under which the client's notification is
        queued at most once, ever: asked again (a job retried after an outage), queued,
        sending or sent, nothing more is queued and the first one's message id is returned.
        """
        now = utcnow()
        identifier = "msg_" + secrets.token_hex(16)
        free = sa.or_(
            webhook_deliveries.c.lease_until.is_(None), webhook_deliveries.c.lease_until < now
        )
        with self.engine.begin() as conn:
            if once is not None:
                first = self._claim_key(conn, client, once, identifier, now)
                if first != identifier:
                    return first
            conn.execute(
                webhook_deliveries.delete().where(
                    webhook_deliveries.c.client_identifier == client,
                    webhook_deliveries.c.topic == topic,
                    webhook_deliveries.c.attempts > 0,
                    free,
                )
            )
            conn.execute(
                webhook_deliveries.insert().values(
                    identifier=identifier,
                    webhook_identifier=None,
                    client_identifier=client,
                    event=event,
                    url=url,
                    topic=topic,
                    payload=payload,
                    attempts=0,
                    next_attempt_at=now,
                    lease_until=None,
                    created_at=now,
                )
            )
        return identifier

    @staticmethod
    def _claim_key(conn: Connection, client: str, key: str, identifier: str, now: datetime) -> str:
        """Insert-if-absent: the message id queued under ``key``, ``identifier`` when it is
        this call's. The primary key decides between concurrent callers."""
        mine = sa.and_(
            notification_keys.c.client_identifier == client, notification_keys.c.key == key
        )
        query = sa.select(notification_keys.c.message_identifier).where(mine)
        existing = conn.execute(query).scalar_one_or_none()
        if existing is not None:
            return str(existing)
        try:
            with conn.begin_nested():
                conn.execute(
                    notification_keys.insert().values(
                        client_identifier=client,
                        key=key,
                        message_identifier=identifier,
                        created_at=now,
                    )
                )
        except sa.exc.IntegrityError:  # queued meanwhile by another job
            return str(conn.execute(query).scalar_one())
        return identifier

    def claim_due(
        self,
        *,
        limit: int,
        lease: float,
        busy: Collection[str] = (),
        in_flight: Mapping[str, int] | None = None,
        per_client: int | None = None,
        leases: Mapping[str, float] | None = None,
        jobs: Collection[str] = (),
    ) -> list[Delivery]:
        """Up to ``limit`` due deliveries, leased for ``lease`` s, oldest due first; none of
        the clients in ``busy``, and no client beyond ``per_client`` counting ``in_flight``.
        ``leases`` gives the events whose attempt takes longer (a download) a lease of
        their own, so another dispatcher does not take over an attempt still running.
        Jobs (events beginning with :data:`JOB_PREFIX`) are claimed only when named in
        ``jobs``: a dispatcher that cannot run one must not send its row as a message.

        Leaving busy clients out in SQL is what keeps one client's backlog from filling the
        batch and starving everyone else.
        """
        if limit <= 0:
            return []
        now = utcnow()
        free = sa.or_(
            webhook_deliveries.c.lease_until.is_(None), webhook_deliveries.c.lease_until < now
        )
        # Only the oldest notification of a topic may go: keeps them in order.
        older = webhook_deliveries.alias("older")
        behind = (
            sa.select(sa.literal(1))
            .where(
                older.c.topic == webhook_deliveries.c.topic,
                sa.or_(
                    older.c.created_at < webhook_deliveries.c.created_at,
                    sa.and_(
                        older.c.created_at == webhook_deliveries.c.created_at,
                        older.c.identifier < webhook_deliveries.c.identifier,
                    ),
                ),
            )
            .exists()
        )
        query = (
            sa.select(
                webhook_deliveries,
                sa.func.coalesce(webhook_deliveries.c.url, webhooks.c.url).label("target"),
            )
            .outerjoin(webhooks, webhooks.c.identifier == webhook_deliveries.c.webhook_identifier)
            .where(
                webhook_deliveries.c.next_attempt_at <= now,
                free,
                sa.or_(webhook_deliveries.c.topic.is_(None), ~behind),
                sa.or_(
                    ~webhook_deliveries.c.event.startswith(JOB_PREFIX, autoescape=True),
                    webhook_deliveries.c.event.in_(list(jobs)),
                ),
            )
            .order_by(
                webhook_deliveries.c.next_attempt_at,
                webhook_deliveries.c.created_at,
                webhook_deliveries.c.identifier,
            )
            .limit(limit * 4)
        )
        if busy:
            query = query.where(webhook_deliveries.c.client_identifier.not_in(list(busy)))
        claimed: list[Delivery] = []
        counts = Counter(in_flight or {})
        with self.engine.begin() as conn:
            rows = conn.execute(query).mappings().all()
            for row in rows:
                if len(claimed) >= limit:
                    break
                owner = row["client_identifier"]
                if per_client is not None and counts[owner] >= per_client:
                    continue
                until = now + timedelta(seconds=(leases or {}).get(row["event"], lease))
                taken = conn.execute(
                    webhook_deliveries.update()
                    .where(webhook_deliveries.c.identifier.in_(_unheld(row["identifier"], now)))
                    .values(lease_until=until)
                ).rowcount
                if taken:
                    counts[owner] += 1
                    claimed.append(
                        Delivery(
                            identifier=row["identifier"],
                            webhook_identifier=row["webhook_identifier"],
                            client_identifier=row["client_identifier"],
                            event=row["event"],
                            url=row["target"],
                            payload=dict(row["payload"]),
                            attempts=int(row["attempts"]),
                            created_at=_aware(row["created_at"]),
                            topic=row["topic"],
                            lease_until=until,
                        )
                    )
        return claimed

    def hold(self, delivery: Delivery, seconds: float) -> Delivery:
        """Extend the claim of ``delivery`` to ``seconds`` from now, when it still holds the
        row (no other dispatcher took it over since); the delivery with its new lease.
        :class:`LeaseLost` otherwise. An outbox job calls it before work that must not be
        done twice (storing a downloaded PDF): an attempt that outlived its lease stops
        there, and the one that took the row over goes on alone."""
        if delivery.lease_until is None:
            raise LeaseLost(delivery.identifier)
        until = utcnow() + timedelta(seconds=seconds)
        with self.engine.begin() as conn:
            held = conn.execute(
                webhook_deliveries.update()
                .where(
                    webhook_deliveries.c.identifier == delivery.identifier,
                    webhook_deliveries.c.lease_until == delivery.lease_until,
                )
                .values(lease_until=until)
            ).rowcount
        if not held:
            raise LeaseLost(delivery.identifier)
        return dataclasses.replace(delivery, lease_until=until)

    def next_due(self) -> datetime | None:
        """When the earliest pending delivery is due (None: nothing pending)."""
        with self.engine.connect() as conn:
            value = conn.execute(
                sa.select(sa.func.min(webhook_deliveries.c.next_attempt_at))
            ).scalar_one()
        return _aware(value) if value is not None else None

    def pending(self, client: str | None = None) -> int:
        query = sa.select(sa.func.count()).select_from(webhook_deliveries)
        if client is not None:
            query = query.where(webhook_deliveries.c.client_identifier == client)
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def delivered(self, delivery: Delivery) -> None:
        """Success: the message is done and the webhook is operational again."""
        with self.engine.begin() as conn:
            conn.execute(
                webhook_deliveries.delete().where(
                    webhook_deliveries.c.identifier == delivery.identifier
                )
            )
            if delivery.webhook_identifier is not None:
                self._set_status(conn, delivery.webhook_identifier, OPERATIONAL)

    def superseded(self, delivery: Delivery) -> bool:
        """Whether a newer notification of the delivery's topic is queued."""
        if delivery.topic is None:
            return False
        with self.engine.connect() as conn:
            newer = conn.execute(
                sa.select(sa.literal(1)).where(
                    webhook_deliveries.c.topic == delivery.topic,
                    webhook_deliveries.c.client_identifier == delivery.client_identifier,
                    webhook_deliveries.c.identifier != delivery.identifier,
                )
            ).first()
        return newer is not None

    def failed(self, delivery: Delivery, retry_in: float | None) -> None:
        """A failed attempt: retry in ``retry_in`` s (the webhook is degraded), or give the
        message up (None: the webhook is broken)."""
        with self.engine.begin() as conn:
            if retry_in is None:
                conn.execute(
                    webhook_deliveries.delete().where(
                        webhook_deliveries.c.identifier == delivery.identifier
                    )
                )
                if delivery.webhook_identifier is not None:
                    self._set_status(conn, delivery.webhook_identifier, BROKEN)
                return
            conn.execute(
                webhook_deliveries.update()
                .where(webhook_deliveries.c.identifier == delivery.identifier)
                .values(
                    attempts=delivery.attempts + 1,
                    next_attempt_at=utcnow() + timedelta(seconds=retry_in),
                    lease_until=None,
                )
            )
            if delivery.webhook_identifier is None:
                return
            # Degraded, unless already broken: only a success makes a broken webhook well.
            conn.execute(
                webhooks.update()
                .where(
                    webhooks.c.identifier == delivery.webhook_identifier,
                    webhooks.c.status == OPERATIONAL,
                )
                .values(status=DEGRADED, updated_at=utcnow())
            )

    @staticmethod
    def _set_status(conn: Connection, webhook: str, status: int) -> None:
        conn.execute(
            webhooks.update()
            .where(webhooks.c.identifier == webhook, webhooks.c.status != status)
            .values(status=status, updated_at=utcnow())
        )
