"""Notifications to a shop's own URL go through the webhook outbox.

Batch print files (``stateChangedNotifyUrl``), review close callbacks (``closeCallbackURL``)
and proof PDF notifications (``notifyCallbackURL``) are queued in the database and sent by
the webhook dispatcher: durable, retried with backoff, signed with the client's webhook
secret, the address checked again at send time, the client's deliveries bounded. No web
request and no render job waits for the shop's receiver.

Private targets are refused here (``notify_allow_private`` off, production's default); the
test client may reach 127.0.0.1 because its allow-list says so (``pps client allow-host``).
Every receiver is a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from api_support import assert_error
from conftest import ApiClient
from flask import Flask
from loopback_http import serve_on_loopback
from processing_support import card_draft, card_template, snapshot_states
from standardwebhooks import Webhook as StandardWebhook

from app import create_app
from pps.platform.models import Client
from pps.platform.repository.tables import webhook_deliveries

URL = "/api-ext/pdf-processing"


@dataclass
class Scripted:
    """A receiver on 127.0.0.1 answering each request with the next status of ``script``
    (the last one repeats); ``gate``, when set, holds every answer until it is opened."""

    script: list[int]
    gate: threading.Event | None = None
    requests: list[tuple[dict[str, str], bytes, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        outer = self
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with outer.lock:
                    outer.requests.append((dict(self.headers.items()), body, time.monotonic()))
                    status = outer.script[min(len(outer.requests), len(outer.script)) - 1]
                if outer.gate is not None:
                    outer.gate.wait(30)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server, self.thread = serve_on_loopback(Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/pps/notify"

    def bodies(self) -> list[Any]:
        with self.lock:
            return [json.loads(body) for _, body, _ in self.requests]

    def close(self) -> None:
        if self.gate is not None:
            self.gate.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted() -> Iterator[Callable[..., Scripted]]:
    made: list[Scripted] = []

    def make(*script: int, gate: threading.Event | None = None) -> Scripted:
        server = Scripted(list(script), gate)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


@pytest.fixture
def strict_app(app_config: dict[str, Any]) -> Iterator[Flask]:
    application = create_app(
        {
            **app_config,
            "notify_allow_private": False,
            "worker_mode": "thread",
            "webhook_poll": 0.05,
            "notify_timeout": 5.0,
            "notify_attempts": 4,
            "notify_backoff": 0.3,
        }
    )
    yield application
    application.extensions["pps"].close()


def cli(app: Flask, *args: str) -> str:
    result = app.test_cli_runner().invoke(args=["pps", "client", *args])
    assert result.exit_code == 0, result.output
    return str(result.output)


def loopback_shop(app: Flask, name: str) -> tuple[Client, ApiClient, str]:
    """A client allowed to reach 127.0.0.1, with its webhook secret (from the CLI)."""
    client = app.extensions["pps"].repository.create_client(name)
    cli(app, "allow-host", client.identifier, "127.0.0.1")
    secret = cli(app, "rotate-webhook-secret", client.identifier).strip()
    return client, ApiClient(app.test_client(), client.api_key), secret


def wait_until(predicate: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def queued(app: Flask, client: Client) -> list[dict[str, Any]]:
    with app.extensions["pps"].repository.engine.connect() as conn:
        rows = conn.execute(
            webhook_deliveries.select().where(
                webhook_deliveries.c.client_identifier == client.identifier
            )
        ).mappings()
        return [dict(row) for row in rows]


# -- batch print files --------------------------------------------------------------------


def test_batch_notification_is_retried_after_a_500_signed_and_delivered(
    strict_app: Flask, scripted: Callable[..., Scripted]
) -> None:
    services = strict_app.extensions["pps"]
    client, api, secret = loopback_shop(strict_app, "Intranet shop")
    draft = card_draft(
        services.repository, client, card_template(services.repository, client), "Ada"
    )
    # The first answer is a 500: the message stays in the outbox and is tried again.
    hook = scripted(500, 204)
    response = api.post(
        URL, json={"draftIds": [draft.draft_hash], "stateChangedNotifyUrl": hook.url}
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    processing_id = response.get_json()["processingId"]
    services.jobs.join(timeout=60)

    final = api.get(f"{URL}/{processing_id}").get_json()
    assert snapshot_states(final) == ["processed"]
    wait_until(lambda: hook.bodies() and hook.bodies()[-1] == final)
    wait_until(lambda: not queued(strict_app, client))

    bodies = hook.bodies()
    first_headers, _, first_at = hook.requests[0]
    # The first snapshot failed with a 500 and was superseded or retried; whatever came
    # after it, the states never went backwards and the last delivery is the final state.
    order = {"pending": 0, "in-process": 1, "processed": 2}
    assert [order[snapshot_states(b)[0]] for b in bodies] == sorted(
        order[snapshot_states(b)[0]] for b in bodies
    )
    assert len(bodies) >= 2
    # The 500 did not lose the news: a later try (of that message or of a newer state
    # that superseded it) got through, and nothing is left in the outbox.
    assert len({headers["webhook-id"] for headers, _, _ in hook.requests}) >= 1
    for headers, body, _ in hook.requests:
        assert headers["Content-Type"] == "application/json"
        assert StandardWebhook(secret).verify(body, headers) == json.loads(body)
    assert first_headers["User-Agent"] == "pps-notify/1"
    assert all(item[2] >= first_at for item in hook.requests)


def test_the_final_state_is_retried_with_backoff_until_the_receiver_recovers(
    strict_app: Flask, scripted: Callable[..., Scripted]
) -> None:
    services = strict_app.extensions["pps"]
    client, api, _ = loopback_shop(strict_app, "Intranet shop")
    draft = card_draft(
        services.repository, client, card_template(services.repository, client), "Ada"
    )
    # Everything before the third try of the last message fails.
    hook = scripted(500)
    response = api.post(
        URL, json={"draftIds": [draft.draft_hash], "stateChangedNotifyUrl": hook.url}
    )
    processing_id = response.get_json()["processingId"]
    services.jobs.join(timeout=60)
    final = api.get(f"{URL}/{processing_id}").get_json()

    def tries_of_final() -> list[float]:
        return [at for _, body, at in list(hook.requests) if json.loads(body) == final]

    wait_until(lambda: len(tries_of_final()) >= 2)
    # Durable: while the receiver fails, the message waits in the database.
    pending = queued(strict_app, client)
    assert [row["url"] for row in pending] == [hook.url]
    assert pending[0]["webhook_identifier"] is None and pending[0]["attempts"] >= 1
    with hook.lock:  # recovers: the next try succeeds
        hook.script[:] = [500] * len(hook.requests) + [204]
    wait_until(lambda: not queued(strict_app, client))
    times = tries_of_final()
    assert len(times) >= 3
    # Backoff: the pauses grow (0.3 s, then 0.6 s, ...).
    pauses = [b - a for a, b in itertools.pairwise(times)]
    assert pauses[0] >= 0.25 and pauses[1] >= 0.5, pauses


def test_loopback_only_for_the_client_that_allows_it_and_checked_again_at_send_time(
    strict_app: Flask, scripted: Callable[..., Scripted]
) -> None:
    services = strict_app.extensions["pps"]
    client, _, _ = loopback_shop(strict_app, "Intranet shop")
    other = services.repository.create_client("Other shop")
    other_api = ApiClient(strict_app.test_client(), other.api_key)
    hook = scripted(204)
    theirs = card_draft(
        services.repository, other, card_template(services.repository, other), "Eve"
    )
    refused = other_api.post(
        URL, json={"draftIds": [theirs.draft_hash], "stateChangedNotifyUrl": hook.url}
    )
    assert "stateChangedNotifyUrl" in assert_error(refused, 422)["errors"]

    # Accepted at submission; the host is taken off the list before anything is sent.
    gate_draft = card_draft(
        services.repository, client, card_template(services.repository, client), "Ada"
    )
    services.integrations.enqueue_notification(
        client.identifier, "notify.processing", hook.url, {"late": True}, "processing:x"
    )
    cli(strict_app, "allow-host", client.identifier, "127.0.0.1", "--remove")
    services.dispatcher().wake()
    wait_until(lambda: not queued(strict_app, client))
    assert hook.requests == []  # refused at send time, and not retried
    assert gate_draft.draft_hash  # the client's drafts are untouched by the refusal


def test_one_clients_slow_receiver_does_not_delay_another_clients_notifications(
    app_config: dict[str, Any], scripted: Callable[..., Scripted]
) -> None:
    application = create_app(
        {
            **app_config,
            "notify_allow_private": False,
            "worker_mode": "thread",
            "webhook_poll": 0.05,
            "webhook_per_client": 1,
            "webhook_concurrency": 4,
            "notify_timeout": 5.0,
        }
    )
    try:
        services = application.extensions["pps"]
        slow_client, _, _ = loopback_shop(application, "Slow shop")
        fast_client, _, _ = loopback_shop(application, "Fast shop")
        gate = threading.Event()
        slow, fast = scripted(204, gate=gate), scripted(204)
        for n in range(4):
            services.integrations.enqueue_notification(
                slow_client.identifier, "notify.processing", slow.url, {"n": n}, f"slow:{n}"
            )
        services.dispatcher().wake()
        wait_until(lambda: slow.requests)  # the slow receiver holds its slot
        started = time.monotonic()
        services.integrations.enqueue_notification(
            fast_client.identifier, "notify.processing", fast.url, {"n": 0}, "fast:0"
        )
        services.dispatcher().wake()
        wait_until(lambda: fast.requests, timeout=3.0)
        assert time.monotonic() - started < 2.0
        # Per-client bound: the slow client never had more than one delivery in flight.
        assert len(slow.requests) == 1
        gate.set()
        wait_until(lambda: len(slow.requests) == 4)
    finally:
        application.extensions["pps"].close()


def test_a_notification_with_a_key_is_queued_once_before_and_after_its_delivery(
    strict_app: Flask, scripted: Callable[..., Scripted]
) -> None:
    """Insert-if-absent on the key: asked again while queued or after it was sent, nothing
    more is queued and the first message id answers; other keys and unkeyed ones queue."""
    services = strict_app.extensions["pps"]
    client, _, _ = loopback_shop(strict_app, "Intranet shop")
    hook = scripted(204)
    store = services.integrations

    def final(n: int) -> str:
        return store.enqueue_notification(
            client.identifier, "notify.processing", hook.url, {"n": n}, "processing:p", once="p"
        )

    first = final(1)
    assert final(2) == first
    assert [row["identifier"] for row in queued(strict_app, client)] == [first]
    services.dispatcher().wake()
    wait_until(lambda: not queued(strict_app, client))
    assert final(3) == first and queued(strict_app, client) == []
    # Another client's key of the same name is its own.
    other, _, _ = loopback_shop(strict_app, "Other shop")
    theirs = store.enqueue_notification(
        other.identifier, "notify.processing", hook.url, {"n": 4}, "processing:p", once="p"
    )
    assert theirs != first
    wait_until(lambda: not queued(strict_app, other))
    assert hook.bodies() == [{"n": 1}, {"n": 4}]
    assert hook.requests[0][0]["webhook-id"] == first


# -- reviews -------------------------------------------------------------------------------


def test_close_callback_and_pdf_notification_are_queued_not_sent_on_the_request(
    strict_app: Flask, scripted: Callable[..., Scripted]
) -> None:
    services = strict_app.extensions["pps"]
    client, api, secret = loopback_shop(strict_app, "Intranet shop")
    draft = card_draft(
        services.repository, client, card_template(services.repository, client), "Ada"
    )
    reviewer = services.repository.create_user(client.identifier, {})
    gate = threading.Event()
    hook = scripted(204, gate=gate)  # answers only when the gate opens
    created = api.post(
        "/api-ext/review",
        json={
            "draftId": draft.draft_hash,
            "user": [reviewer.identifier],
            "closeCallbackURL": hook.url,
            "remoteAcl": False,
        },
    )
    assert created.status_code == 201, created.get_data(as_text=True)
    review_id = created.get_json()["data"]["reviewId"]

    started = time.monotonic()
    answer = api.post(
        f"/api-ext/review/{review_id}/create-review-pdf", json={"notifyCallbackURL": hook.url}
    )
    assert answer.status_code == 204, answer.get_data(as_text=True)
    wait_until(lambda: len(hook.requests) == 1)  # the receiver has it and is stalling
    closed = api.post(f"/api-ext/review/{review_id}/close-review")
    assert closed.status_code == 204, closed.get_data(as_text=True)
    # Both calls returned while the receiver was still holding the first request.
    assert not gate.is_set()
    assert time.monotonic() - started < 4.0
    assert {row["event"] for row in queued(strict_app, client)} == {
        "notify.review-pdf",
        "notify.review-closed",
    }
    gate.set()
    wait_until(lambda: len(hook.requests) == 2 and not queued(strict_app, client))
    pdf_note, close_note = hook.bodies()
    assert pdf_note["reviewId"] == review_id and pdf_note["pdfUrl"].endswith(
        f"/review/{review_id}/pdf"
    )
    assert close_note["reviewId"] == review_id and close_note["state"] == "closed"
    for headers, body, _ in hook.requests:
        StandardWebhook(secret).verify(body, headers)


def test_review_callback_urls_follow_the_clients_allow_list(
    strict_app: Flask, scripted: Callable[..., Scripted]
) -> None:
    services = strict_app.extensions["pps"]
    other = services.repository.create_client("Other shop")
    api = ApiClient(strict_app.test_client(), other.api_key)
    draft = card_draft(services.repository, other, card_template(services.repository, other), "Eve")
    hook = scripted(204)
    refused = api.post(
        "/api-ext/review",
        json={"draftId": draft.draft_hash, "user": [], "closeCallbackURL": hook.url},
    )
    assert "closeCallbackURL" in assert_error(refused, 422)["errors"]
    assert queued(strict_app, other) == []
