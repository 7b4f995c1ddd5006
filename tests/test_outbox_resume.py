"""A served process resumes its outbox when it starts; CLI commands never send it.

``deploy/gunicorn.conf.py`` calls :func:`pps.app.resume_outbox` in every worker: messages
queued before a restart (retries among them) go out without waiting for a new event, and
the outbox's leases keep several workers, each with its own dispatcher, from sending one
message twice. Every receiver is a real HTTP server on 127.0.0.1; the server is a real
gunicorn in thread mode (no Redis, as ``make run``), so no ``pps worker`` sends anything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import TEST_SECRET_KEY, free_port
from flask import Flask
from processing_support import receiver
from server_support import start_gunicorn, stop, thread_mode_shop

from app import create_app
from pps.app import resume_outbox
from pps.platform.repository.integrations import SqlIntegrationStore
from pps.platform.repository.sql import create_engine
from pps.platform.repository.tables import webhook_deliveries
from pps.webhooks.dispatcher import Dispatcher
from pps.webhooks.events import DRAFT_CREATED


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not in {timeout} s: {what}")


def dispatcher_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name == "pps-webhooks"}


def outbox(database_url: str, client: str) -> list[tuple[str, int, Any]]:
    """The client's rows of the outbox: identifier, attempts made and lease, in a stable
    order (a PostgreSQL test database is shared by the run's tests)."""
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.select(
                    webhook_deliveries.c.identifier,
                    webhook_deliveries.c.attempts,
                    webhook_deliveries.c.lease_until,
                )
                .where(webhook_deliveries.c.client_identifier == client)
                .order_by(webhook_deliveries.c.identifier)
            ).all()
    finally:
        engine.dispose()
    return [tuple(row) for row in rows]


# -- in one process ----------------------------------------------------------------------


def outbox_config(config: dict[str, Any]) -> dict[str, Any]:
    return {**config, "worker_mode": "thread", "webhook_poll": 0.05}


@pytest.fixture
def outbox_app(app_config: dict[str, Any]) -> Iterator[Flask]:
    application = create_app(outbox_config(app_config))
    yield application
    application.extensions["pps"].close()


def queue_delivery(app: Flask, url: str) -> str:
    """A client with a webhook to ``url`` and one delivery queued for it; the client's id."""
    services = app.extensions["pps"]
    client = services.repository.create_client("Shop")
    services.integrations.create_webhook(client.identifier, DRAFT_CREATED, url)
    assert services.integrations.enqueue(client.identifier, DRAFT_CREATED, {"n": 1}) == 1
    return str(client.identifier)


def test_resume_starts_a_dispatcher_only_when_the_outbox_holds_rows(
    tmp_path: Path, sqlite_url: str, redis_url: str
) -> None:
    # A database of its own: the outbox of a shared one may hold other tests' rows.
    config = {
        "instance_path": tmp_path / "instance",
        "database_url": sqlite_url,
        "redis_url": redis_url,
        "secret_key": TEST_SECRET_KEY,
        "notify_allow_private": True,
    }
    app = create_app(outbox_config(config))
    try:
        before = dispatcher_threads()
        assert resume_outbox(app) is False
        assert dispatcher_threads() == before  # an idle worker polls nothing
        with receiver() as hook:
            queue_delivery(app, hook.url)
            assert resume_outbox(app) is True
            wait_until(lambda: hook.requests, 10, "the queued delivery")
        assert hook.bodies()[0]["data"] == {"n": 1}
    finally:
        app.extensions["pps"].close()


def test_a_cli_command_starts_no_dispatcher(
    forget_deliveries: Callable[[str], None], outbox_app: Flask
) -> None:
    """Building the app and running a command leaves the outbox alone, rows pending or not:
    only a serving process resumes it."""
    with receiver() as hook:
        client = queue_delivery(outbox_app, hook.url)
        forget_deliveries(client)  # left queued for a receiver that is closed
        before = dispatcher_threads()
        result = outbox_app.test_cli_runner().invoke(args=["pps", "client", "list"])
        assert result.exit_code == 0, result.output
        assert dispatcher_threads() == before
        assert hook.requests == []
    assert outbox_app.extensions["pps"].integrations.pending(client) == 1


def test_dispatchers_of_several_processes_send_each_message_once(
    outbox_app: Flask, database_url: str
) -> None:
    """What resuming in every worker relies on: a claim is a conditional UPDATE under a
    lease, so dispatchers on their own connections never claim the same attempt."""
    services = outbox_app.extensions["pps"]
    engines = [create_engine(database_url) for _ in range(4)]
    dispatchers: list[Dispatcher] = []
    try:
        with receiver() as hook:
            client = services.repository.create_client("Shop")
            services.integrations.create_webhook(client.identifier, DRAFT_CREATED, hook.url)
            for n in range(40):
                services.integrations.enqueue(client.identifier, DRAFT_CREATED, {"n": n})
            dispatchers = [
                Dispatcher(SqlIntegrationStore(engine), services.settings) for engine in engines
            ]
            wait_until(
                lambda: (
                    services.integrations.pending(client.identifier) == 0
                    and not any(d.in_flight() for d in dispatchers)
                ),
                30,
                "every message sent",
            )
            ids = [request.headers["webhook-id"] for request in hook.requests]
        assert len(ids) == 40
        assert len(set(ids)) == 40
        assert sorted(body["data"]["n"] for body in hook.bodies()) == list(range(40))
    finally:
        for dispatcher in dispatchers:
            dispatcher.close(5)
        for engine in engines:
            engine.dispose()


# -- gunicorn ----------------------------------------------------------------------------


def test_a_restarted_server_sends_what_it_queued_before_without_a_new_event(
    tmp_path: Path, database_url: str
) -> None:
    hook_port = free_port()  # the shop's receiver, down at first
    # Without Redis: no `pps worker` that would send the outbox.
    made = thread_mode_shop(
        tmp_path,
        database_url,
        PPS_WORKERS="3",
        PPS_WEBHOOK_POLL="0.1",
        PPS_WEBHOOK_BACKOFF="0.2",
        PPS_WEBHOOK_ATTEMPTS="30",
        # A claim left by a stopped worker expires after the timeout plus 30 s.
        PPS_WEBHOOK_TIMEOUT="1",
        PPS_NOTIFY_TIMEOUT="1",
    )
    server, template, api = made.server, made.template, made.api
    port, env, shop = server.port, server.env, made.client["identifier"]

    proc = start_gunicorn(env, port, server.log)
    try:
        hook_url = f"http://127.0.0.1:{hook_port}/hooks/pps"
        api("POST", "/api-ext/webhook", {"event": DRAFT_CREATED, "url": hook_url})
        user = api("POST", "/api-ext/user", {})["data"]["identifier"]
        for _ in range(3):
            api(
                "POST",
                "/api-ext/draft",
                {"templateIdentifier": template["identifier"], "userIdentifier": user},
            )
        # Nothing listens: every first attempt fails, and retries are due when it stops.
        wait_until(
            lambda: len(rows := outbox(database_url, shop)) == 3 and all(r[1] for r in rows),
            30,
            f"3 failed first attempts:\n{server.log.read_text()}",
        )
    finally:
        stop(proc)
    assert proc.returncode == 0, server.log.read_text()
    left = outbox(database_url, shop)

    with receiver(port=hook_port) as hook:
        # A CLI command builds the app on the same database and sends nothing.
        server.pps("client", "list")
        assert hook.requests == []
        assert outbox(database_url, shop) == left

        # No request and no event: the workers resume the outbox as they start.
        proc = start_gunicorn(env, port, server.log)
        try:
            wait_until(
                lambda: len(hook.requests) >= 3 and not outbox(database_url, shop),
                60,
                f"the 3 queued deliveries:\n{server.log.read_text()}",
            )
        finally:
            stop(proc)
        ids = [request.headers["webhook-id"] for request in hook.requests]
    assert sorted(ids) == sorted(row[0] for row in left)  # each once, by one of 3 workers
    assert {body["type"] for body in hook.bodies()} == {DRAFT_CREATED}
