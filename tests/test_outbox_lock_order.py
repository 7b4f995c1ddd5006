"""The outbox's lease against a delete of the webhook, on PostgreSQL.

A claim leases the due deliveries one ``UPDATE`` at a time, oldest due first, and holds
each until it commits; the delete of a webhook deletes its deliveries in the order they
lie in the table. A delivery retried later than a newer one was first due lies before it
in the table but comes after it in the claim: each took the one the other waited for, and
PostgreSQL aborted one of them (a 503 to the shop, or an error in the dispatcher). Now the
lease skips a delivery another transaction holds (that one is being deleted or leased
meanwhile) instead of waiting for it, so a claim never waits and cannot be in a deadlock.
Recording an attempt and deleting the webhook take the delivery before the webhook, both:
pinned too, since locking the webhook first in the delete would deadlock there.
SQLite is not run: its database-wide write lock serializes writers.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import ApiClient
from flask import Flask
from race_support import for_locks, hold_then_race, nth

from pps.platform.models import Client
from pps.platform.repository.integrations import Delivery, SqlIntegrationStore
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import webhook_deliveries


@pytest.fixture
def database_url(postgres_url: str) -> str:
    return postgres_url


def crossed_deliveries(store: SqlIntegrationStore, client: str, webhook: str) -> list[str]:
    """Two due deliveries of ``webhook``, the first in the table due after the second (a
    message being retried, and a newer one's first attempt); in the order they lie. Made
    again until they lie in the order inserted (a table with room left in an earlier page
    may put the second before the first)."""
    now = datetime.now(UTC)
    due_in = (now - timedelta(minutes=1), now - timedelta(minutes=2))
    mine = webhook_deliveries.c.webhook_identifier == webhook
    while True:
        laid = ["msg_" + secrets.token_hex(16) for _ in due_in]
        with store.engine.begin() as conn:
            conn.execute(webhook_deliveries.delete().where(mine))
            for identifier, due in zip(laid, due_in, strict=True):
                conn.execute(
                    webhook_deliveries.insert().values(
                        identifier=identifier,
                        webhook_identifier=webhook,
                        client_identifier=client,
                        event="draft.updated",
                        payload={},
                        attempts=0,
                        next_attempt_at=due,
                        lease_until=None,
                        created_at=now - timedelta(minutes=3),
                    )
                )
        with store.engine.connect() as conn:
            in_table = conn.execute(
                sa.select(webhook_deliveries.c.identifier)
                .where(mine)
                .order_by(sa.literal_column("ctid"))
            ).scalars()
            if list(in_table) == laid:
                return laid


def claim(store: SqlIntegrationStore, client: str) -> list[Delivery]:
    """What a dispatcher claims of ``client``'s deliveries: the outbox of the test run's
    database may hold other clients' (left for later retries), which it leaves alone."""
    with store.engine.connect() as conn:
        others = conn.execute(
            sa.select(webhook_deliveries.c.client_identifier)
            .where(webhook_deliveries.c.client_identifier != client)
            .distinct()
        ).scalars()
        busy = set(others)
    return store.claim_due(limit=10, lease=60, busy=busy)


def deleting(
    app: Flask, tenant: Client, webhook: str, outcome: dict[str, Any]
) -> Callable[[], None]:
    """The shop's DELETE of the webhook, its status put into ``outcome["delete"]``."""

    def delete() -> None:
        api = ApiClient(app.test_client(), tenant.api_key)
        outcome["delete"] = api.delete(f"/api-ext/webhook/{webhook}").status_code

    return delete


def test_a_claim_and_a_delete_of_the_webhook_do_not_deadlock(
    app: Flask, repo: SqlRepository, tenant: Client
) -> None:
    """The claim leases the second delivery and is held before the first; the delete then
    deletes the first and waits for the second. Let go, the claim used to wait for the
    first: a deadlock. Now it leaves the first to the delete and commits what it has; the
    delete then deletes both."""
    store: SqlIntegrationStore = app.extensions["pps"].integrations
    webhook = store.create_webhook(tenant.identifier, "draft.updated", "http://127.0.0.1:9/")
    _, second = crossed_deliveries(store, tenant.identifier, webhook.webhook.identifier)
    outcome: dict[str, Any] = {}

    def lease() -> None:
        try:
            outcome["claim"] = claim(store, tenant.identifier)
        except sa.exc.DBAPIError as exc:
            outcome["claim"] = exc

    delete = deleting(app, tenant, webhook.webhook.identifier, outcome)
    # Held holding one delivery, about to lease the other; the delete has deleted the
    # first and waits for the second.
    second_lease = nth(2, lambda sql: sql.lstrip().upper().startswith("UPDATE WEBHOOK_DELIVERIES"))
    hold_then_race(repo, lease, second_lease, delete, wait=for_locks)
    assert outcome["delete"] == 204
    claimed = outcome["claim"]
    assert isinstance(claimed, list), claimed
    # The first was the delete's, so the claim left it; the second it had leased already.
    assert [delivery.identifier for delivery in claimed] == [second]
    assert store.pending(tenant.identifier) == 0


@pytest.mark.parametrize("retry_in", [60.0, None], ids=["retried", "given-up"])
def test_a_failed_attempt_and_a_delete_of_the_webhook_do_not_deadlock(
    app: Flask, repo: SqlRepository, tenant: Client, retry_in: float | None
) -> None:
    """Recording an attempt takes its delivery, then the webhook (its health); the delete
    of the webhook takes the deliveries, then the webhook: one order. The record is held
    between the two; the delete waits for the delivery, and once let go both finish.
    (Had the delete locked the webhook first, the record would wait for it: a deadlock.)"""
    store: SqlIntegrationStore = app.extensions["pps"].integrations
    webhook = store.create_webhook(tenant.identifier, "draft.updated", "http://127.0.0.1:9/")
    assert store.enqueue(tenant.identifier, "draft.updated", {}) == 1
    (delivery,) = claim(store, tenant.identifier)
    outcome: dict[str, Any] = {}

    def record() -> None:
        try:
            store.failed(delivery, retry_in)
            outcome["record"] = None
        except sa.exc.DBAPIError as exc:
            outcome["record"] = exc

    delete = deleting(app, tenant, webhook.webhook.identifier, outcome)
    # Held with the delivery written, the webhook's health not yet.
    hold_then_race(repo, record, "UPDATE WEBHOOKS", delete, wait=for_locks)
    assert outcome["record"] is None
    assert outcome["delete"] == 204
    assert store.pending(tenant.identifier) == 0
    assert store.get_webhook(tenant.identifier, webhook.webhook.identifier) is None
