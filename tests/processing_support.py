"""Helpers of the batch print-file tests: a real HTTP receiver, a renderable template, and
running queued jobs the way production does (an RQ worker, or the app's own thread)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import redis
from api_support import make_draft
from flask import Flask
from loopback_http import serve_on_loopback
from rq import Queue, SimpleWorker
from server_support import pps_script

from pps.platform.models import Client, Draft, Template
from pps.platform.queue import QUEUE_NAME, configure_worker
from pps.platform.repository.sql import SqlRepository

ROOT = Path(__file__).resolve().parent.parent
BUSINESS_CARD = json.loads(
    (ROOT / "examples" / "templates" / "business-card" / "template.json").read_text()
)


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A real HTTP server on 127.0.0.1 that records every request and answers ``status``;
    on ``port`` when given (a receiver that was down comes up where it was expected)."""

    status: int = 204
    headers: dict[str, str] = field(default_factory=dict)
    port: int = 0
    requests: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.requests.append(
                        Received("POST", self.path, dict(self.headers.items()), body)
                    )
                self.send_response(receiver.status)
                for name, value in receiver.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.lock = threading.Lock()
        self.server, self.thread = serve_on_loopback(Handler, self.port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks/pps?shop=1"

    def bodies(self) -> list[Any]:
        with self.lock:
            return [item.json() for item in self.requests]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@contextmanager
def receiver(
    status: int = 204, headers: dict[str, str] | None = None, port: int = 0
) -> Iterator[Receiver]:
    server = Receiver(status=status, headers=headers or {}, port=port)
    try:
        yield server
    finally:
        server.close()


def card_template(repo: SqlRepository, client: Client) -> Template:
    """The example business card: renders with built-in fonts and no files."""
    return repo.create_template(
        client.identifier,
        name=BUSINESS_CARD["name"],
        data_keys=BUSINESS_CARD["dataKeys"],
        custom_attributes={},
        page_count=1,
        spec=BUSINESS_CARD,
    )


def card_draft(repo: SqlRepository, client: Client, template: Template, name: str) -> Draft:
    return make_draft(
        repo,
        client,
        template=template,
        api_default_values={"name": name, "email": "ada@example.com"},
        custom_attributes={},
    )


def drain_notifications(app: Flask, *clients: str, timeout: float = 30.0) -> None:
    """Wait until the app's dispatcher has sent (or given up) every message of ``clients``.

    Notifications go through the webhook outbox: a job only queues them, the dispatcher
    of the app process delivers them (started here as the first event would start it).
    Only the named clients' rows count: on PostgreSQL the database is the run's, and
    other tests leave deliveries there (retries of receivers long gone)."""
    assert clients, "name the clients whose messages to wait for"
    services = app.extensions["pps"]
    dispatcher = services.dispatcher()
    assert dispatcher is not None
    dispatcher.wake()
    deadline = time.monotonic() + timeout

    def busy() -> bool:
        in_flight = dispatcher.in_flight()
        return any(services.integrations.pending(c) or in_flight.get(c) for c in clients)

    while busy():
        assert time.monotonic() < deadline, "the outbox was not sent in time"
        time.sleep(0.02)


def run_jobs(app: Flask, mode: str, *clients: str) -> None:
    """Run every queued job to its end (an RQ worker in burst mode, or the app's thread),
    then let the dispatcher send the notifications the jobs queued for ``clients``."""
    _run_jobs(app, mode)
    drain_notifications(app, *clients)


def _run_jobs(app: Flask, mode: str) -> None:
    services = app.extensions["pps"]
    if mode == "thread":
        services.jobs.join(timeout=60)
        return
    settings = app.extensions["pps.settings"]
    connection = redis.Redis.from_url(settings.redis_url)
    # As `pps worker` does; the job builds its own services from the settings.
    configure_worker(settings)
    try:
        worker = SimpleWorker([Queue(QUEUE_NAME, connection=connection)], connection=connection)
        worker.work(burst=True, logging_level="WARNING")
    finally:
        configure_worker(None)
        connection.close()


def snapshot_states(body: dict[str, Any]) -> list[str]:
    return [item["state"] for item in body["draftStates"]]


def worker_env(app: Flask, **extra: str) -> dict[str, str]:
    """The environment of a ``pps worker`` process for ``app``: its instance, database,
    Redis and secret key, notifications to loopback with short waits, then ``extra``."""
    settings = app.extensions["pps.settings"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PPS_")}
    env.update(
        PPS_INSTANCE_PATH=str(settings.instance_path),
        PPS_DATABASE_URL=settings.resolved_database_url,
        PPS_REDIS_URL=settings.redis_url,
        PPS_SECRET_KEY=settings.secret_key,
        PPS_NOTIFY_ALLOW_PRIVATE="1",
        PPS_NOTIFY_BACKOFF="0.02",
        **extra,
    )
    return env


def burst_worker(app: Flask, **extra: str) -> str:
    """``pps worker --burst`` as deployed (forking, with its scheduler) for ``app``, with
    :func:`worker_env` and ``extra``; its log, once it ended well."""
    done = subprocess.run(
        [pps_script(), "worker", "--burst"],
        env=worker_env(app, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr
