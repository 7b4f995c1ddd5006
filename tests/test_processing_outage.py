"""Batch jobs that meet a database outage: retried by ``pps worker`` until the outcome can
be recorded, never left ``pending``; the shop hears of the final state exactly once, also
when the outage strikes between sending a notification and recording that it was sent.

A private PostgreSQL cluster (``fault_support``) is shut down while a real ``pps worker
--burst`` runs the job, and started again; the queue is a private redis-server. The
retries wait ``PPS_JOB_RETRY_BACKOFF`` (1 s here): the tests run the worker again until the
state is final, and assert on states and counts only.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import redis
from conftest import TEST_SECRET_KEY, ApiClient, free_port
from fault_support import PostgresCluster, RedisProcess
from flask import Flask
from loopback_http import serve_on_loopback
from processing_support import (
    Receiver,
    card_draft,
    card_template,
    receiver,
    snapshot_states,
    worker_env,
)
from rq import Queue
from server_support import pps_script

from app import create_app
from pps.platform.outages import DATABASE_DOWN
from pps.platform.queue import QUEUE_NAME, queue_processing
from pps.platform.repository.sql import SqlRepository, upgrade_database
from pps.processing.cli import OUTAGE_EXIT

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

URL = "/api-ext/pdf-processing"


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    server = PostgresCluster()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def app(tmp_path: Path, cluster: PostgresCluster, redis_process: RedisProcess) -> Iterator[Flask]:
    if cluster.proc is None:
        cluster.start()  # a test that failed half-way left it stopped
    app = create_app(
        {
            "instance_path": tmp_path / "instance",
            "database_url": cluster.create_database(f"pps_{secrets.token_hex(4)}"),
            "redis_url": redis_process.url,
            "secret_key": TEST_SECRET_KEY,
            "base_url": "http://localhost",
            "notify_allow_private": True,
        }
    )
    try:
        yield app
    finally:
        app.extensions["pps"].close()


#: What ``pps worker`` ends with when it meets an outage: one line, exit status 75.
STOPPED = "Error: pps worker stopped: {} Queued jobs are kept and retried; run it again later."


def worker(app: Flask, retries: int, *, database_up: bool = True) -> None:
    """``pps worker --burst``, as deployed: a forking worker with its scheduler. With the
    database down, its last step (sending what the outbox holds) meets the outage: the
    worker stops with one line and EX_TEMPFAIL (it said 'database error', 'run pps db
    upgrade' and exited 1, as for a bug)."""
    env = worker_env(app, PPS_JOB_RETRIES=str(retries), PPS_JOB_RETRY_BACKOFF="1")
    done = subprocess.run(
        [pps_script(), "worker", "--burst"], env=env, capture_output=True, text=True, timeout=120
    )
    if database_up:
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode == OUTAGE_EXIT == 75, done.stderr
    assert done.stderr.endswith(STOPPED.format(DATABASE_DOWN) + "\n"), done.stderr
    assert "pps db upgrade" not in done.stderr
    # The outbox could not be read: said in one line per attempt, not a traceback.
    assert f"webhook dispatcher could not read the outbox: {DATABASE_DOWN}" in done.stderr


def submit(app: Flask, hook: Receiver) -> tuple[str, ApiClient]:
    repo: SqlRepository = app.extensions["pps"].repository
    shop = repo.create_client("Shop")
    draft = card_draft(repo, shop, card_template(repo, shop), "Ada")
    api = ApiClient(app.test_client(), shop.api_key)
    response = api.post(
        URL, json={"draftIds": [draft.draft_hash], "stateChangedNotifyUrl": hook.url}
    )
    assert response.status_code == 201, response.get_data()
    return response.get_json()["processingId"], api


def status(api: ApiClient, processing_id: str) -> dict[str, Any]:
    response = api.get(f"{URL}/{processing_id}")
    assert response.status_code == 200, response.get_data()
    return response.get_json()  # type: ignore[no-any-return]


def scheduled(app: Flask) -> int:
    """Jobs waiting in RQ's scheduled registry: the retries."""
    connection = redis.Redis.from_url(app.extensions["pps.settings"].redis_url)
    try:
        return Queue(QUEUE_NAME, connection=connection).scheduled_job_registry.count
    finally:
        connection.close()


def run_until_final(app: Flask, api: ApiClient, processing_id: str, retries: int) -> list[str]:
    """Run the worker until the drafts are final (the retry waits its backoff first)."""
    deadline = time.monotonic() + 90
    while True:
        states = snapshot_states(status(api, processing_id))
        if all(state in ("processed", "failed") for state in states):
            return states
        assert time.monotonic() < deadline, states
        time.sleep(0.5)
        worker(app, retries)


def test_a_job_that_met_a_database_outage_is_rendered_once_it_is_back(
    app: Flask, cluster: PostgresCluster
) -> None:
    with receiver() as hook:
        processing_id, api = submit(app, hook)
        cluster.stop()
        try:
            worker(app, retries=3, database_up=False)
            assert scheduled(app) == 1  # the retry waits in Redis
        finally:
            cluster.start()
        assert snapshot_states(status(api, processing_id)) == ["pending"]
        assert run_until_final(app, api, processing_id, retries=3) == ["processed"]
        bodies = hook.bodies()
    assert scheduled(app) == 0
    final = [snapshot_states(body) for body in bodies if snapshot_states(body) == ["processed"]]
    assert len(final) == 1
    assert snapshot_states(bodies[-1]) == ["processed"]


def test_a_job_whose_retries_are_used_up_ends_failed_naming_the_outage(
    app: Flask, cluster: PostgresCluster
) -> None:
    """No retry allowed: the failure itself cannot be written while the database is
    down, so the job comes back to write it, and the draft ends failed, not pending."""
    with receiver() as hook:
        processing_id, api = submit(app, hook)
        cluster.stop()
        try:
            worker(app, retries=0, database_up=False)
            time.sleep(1.5)  # the give-up is due: run it while the database is still down
            worker(app, retries=0, database_up=False)
            assert scheduled(app) == 1
        finally:
            cluster.start()
        assert run_until_final(app, api, processing_id, retries=0) == ["failed"]
        bodies = hook.bodies()
    assert scheduled(app) == 0
    message = status(api, processing_id)["draftStates"][0]["message"]
    assert "given up" in message and DATABASE_DOWN in message
    assert [snapshot_states(body) for body in bodies] == [["failed"]]
    assert bodies[-1]["draftStates"][0]["message"] == message


def test_a_worker_that_cannot_reach_redis_says_so_and_exits_for_a_retry(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'pps.sqlite3'}"
    upgrade_database(database)
    port = free_port()  # nothing listens there
    env = {key: value for key, value in os.environ.items() if not key.startswith("PPS_")}
    env.update(
        PPS_SECRET_KEY=TEST_SECRET_KEY,
        PPS_INSTANCE_PATH=str(tmp_path / "instance"),
        PPS_DATABASE_URL=database,
        PPS_REDIS_URL=f"redis://127.0.0.1:{port}/0",
    )
    done = subprocess.run(
        [pps_script(), "worker", "--burst"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == OUTAGE_EXIT, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(
        "Error: pps worker stopped: cannot reach Redis at PPS_REDIS_URL ("
    ), done.stderr
    assert done.stderr.endswith(" Queued jobs are kept and retried; run it again later.\n")


class HeldReceiver:
    """A receiver on 127.0.0.1 that answers 204 only once ``answer`` is set."""

    def __init__(self) -> None:
        self.answer = threading.Event()
        self.requests: list[tuple[str, bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append((self.headers["webhook-id"], body))
                outer.answer.wait(60)
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server, self.thread = serve_on_loopback(Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/notify"

    def close(self) -> None:
        self.answer.set()
        self.server.shutdown()
        self.server.server_close()


def wait_until(predicate: Callable[[], Any], timeout: float = 60.0) -> Any:
    """Poll until ``predicate`` holds (a bound against hanging, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def test_a_notification_sent_as_the_database_went_down_is_not_sent_again(
    app: Flask, cluster: PostgresCluster
) -> None:
    """The receiver has the final notification; the database goes down before its 2xx can
    be recorded. Once the database is back the dispatcher records what it kept, rather than
    sending the message again when its lease expires."""
    services = app.extensions["pps"]
    shop = services.repository.create_client("Shop")
    hook = HeldReceiver()
    try:
        services.integrations.enqueue_notification(
            shop.identifier, "notify.processing", hook.url, {"final": True}, "processing:p"
        )
        dispatcher = services.dispatcher()
        dispatcher.wake()
        wait_until(lambda: hook.requests)  # sent; the receiver holds its answer
        cluster.stop()
        try:
            hook.answer.set()  # delivered, while the database is down
            wait_until(lambda: not dispatcher.in_flight() and dispatcher.unrecorded() == 1)
        finally:
            cluster.start()
        # The lease (PPS_NOTIFY_TIMEOUT + 30 s) has long to run: only the kept outcome
        # empties the outbox now; without it, the message went again at lease expiry.
        wait_until(lambda: services.integrations.pending(shop.identifier) == 0, timeout=120)
        assert dispatcher.unrecorded() == 0
        assert [body for _, body in hook.requests] == [b'{"final":true}']
    finally:
        hook.close()


def test_a_running_worker_queues_a_retry_when_due_after_redis_was_restarted(
    app: Flask, redis_process: RedisProcess, tmp_path: Path
) -> None:
    """RQ's scheduler, which queues the retries, runs in a process of its own that a lost
    Redis connection ends (a Redis restarted, or one that hung). The worker starts it again
    at its maintenance, which RQ ran every 10 minutes, and only after its wait for a job
    (up to 405 s) ended: a retry due meanwhile waited up to 17 minutes. Now within half a
    minute of Redis being back."""
    repo: SqlRepository = app.extensions["pps"].repository
    shop = repo.create_client("Shop")
    draft = card_draft(repo, shop, card_template(repo, shop), "Ada")
    processing = app.extensions["pps"].processings.create(shop.identifier, [draft.draft_hash], None)
    api = ApiClient(app.test_client(), shop.api_key)
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [pps_script(), "worker"],
            env=worker_env(app),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        # Started, its scheduler too, and done with its first maintenance: waiting for a job.
        wait_until(lambda: "Scheduler for pps-processing started" in log.read_text())
        wait_until(lambda: "cleaning group registries" in log.read_text())
        time.sleep(0.5)
        redis_process.kill()
        wait_until(lambda: "Scheduler [PID" in log.read_text())  # it raised, and ended
        redis_process.start()  # empty, as after a restart without persistence
        connection = redis.Redis.from_url(redis_process.url)
        try:
            # A retry, as the failure callback schedules one (pps.processing.retry).
            queue_processing(
                Queue(QUEUE_NAME, connection=connection),
                shop.identifier,
                processing.processing_id,
                timeout=60,
                delay=1,
            )
        finally:
            connection.close()
        wait_until(
            lambda: snapshot_states(status(api, processing.processing_id)) == ["processed"],
            timeout=60,
        )
        os.kill(proc.pid, signal.SIGTERM)  # as systemd stops it: a stop asked for, status 0
        assert proc.wait(timeout=30) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)


def test_a_worker_whose_rq_loop_ends_unasked_exits_to_be_started_again(
    app: Flask, redis_process: RedisProcess
) -> None:
    """RQ's worker loop ends by itself ("found an unhandled exception, quitting") when a
    Redis call outside its wait for a job fails: a connection lost as the worker starts or
    finishes a job (seen with Redis restarted then), or here a key it cannot read. pps
    worker then exited 0, which systemd's ``Restart=on-failure`` takes for a deliberate
    stop: no worker ran until someone noticed. It exits 75, as for an outage at start."""
    connection = redis.Redis.from_url(redis_process.url)
    try:
        # The first maintenance of the worker reads this registry, and fails on a string.
        connection.set(f"rq:wip:{QUEUE_NAME}", "not a registry")
    finally:
        connection.close()
    done = subprocess.run(
        [pps_script(), "worker"], env=worker_env(app), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == OUTAGE_EXIT, done.stderr
    assert "found an unhandled exception, quitting" in done.stderr
    assert done.stderr.endswith(
        "Error: pps worker stopped: its RQ worker loop ended without being asked to (see"
        " above). Queued jobs are kept and retried; run it again later.\n"
    ), done.stderr
