"""Batches whose job was lost end in a final state (``pps.processing.lost``).

Before, a batch accepted while Redis later lost its job (emptied, or restarted without
persistence, before a worker took it) stayed ``pending`` for ever, and one whose app
process (no Redis: the job ran in its thread) was killed mid-job stayed ``in-process``:
the shop polled and waited for its notification in vain, and the retention never pruned
it. Now ``pps worker``'s maintenance, and without Redis the job thread of each served
process, queue such a batch again, or fail it when a draft's rendering was cut off.

Real redis-server (a private one, restarted empty), real ``pps worker`` and gunicorn
processes, real receivers on 127.0.0.1. The time a batch must stay unchanged before it
counts as lost (its job's timeout and a minute) is not waited: its last change is moved
back in the database instead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import TEST_SECRET_KEY, ApiClient
from fault_support import RedisProcess
from flask import Flask
from processing_support import (
    burst_worker,
    card_draft,
    card_template,
    receiver,
    snapshot_states,
    worker_env,
)
from rq import Queue
from server_support import (
    pps_script,
    start_gunicorn,
    stop,
    thread_mode_shop,
)

from app import create_app
from pps.platform.queue import QUEUE_NAME, queue_processing
from pps.platform.repository.processing import IN_PROCESS, PENDING
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import processing_drafts, processings
from pps.processing.lost import INTERRUPTED, recover_lost_jobs
from pps.processing.worker import STOPPED

pytestmark = pytest.mark.slow

URL = "/api-ext/pdf-processing"


def make_app(tmp_path: Path, database_url: str, redis_url: str) -> Flask:
    return create_app(
        {
            "instance_path": tmp_path / "instance",
            "database_url": database_url,
            "redis_url": redis_url,
            "secret_key": TEST_SECRET_KEY,
            "base_url": "http://localhost",
            "notify_allow_private": True,
        }
    )


@pytest.fixture
def app(tmp_path: Path, database_url: str, redis_process: RedisProcess) -> Iterator[Flask]:
    app = make_app(tmp_path, database_url, redis_process.url)
    try:
        yield app
    finally:
        app.extensions["pps"].close()


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"not in {timeout} s: {what}")


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def unchanged_for(engine: sa.engine.Engine, processing_id: str, hours: float) -> None:
    """The batch as it is ``hours`` after its last change (longer than any job runs)."""
    with engine.begin() as conn:
        conn.execute(
            processings.update()
            .where(processings.c.processing_id == processing_id)
            .values(updated_at=datetime.now(UTC) - timedelta(hours=hours))
        )


def status(api: ApiClient, processing_id: str) -> dict[str, Any]:
    response = api.get(f"{URL}/{processing_id}")
    assert response.status_code == 200, response.get_data()
    return response.get_json()  # type: ignore[no-any-return]


def start_worker(app: Flask, log: Path) -> subprocess.Popen[bytes]:
    """``pps worker`` as deployed, its output appended to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [pps_script(), "worker"],
            env=worker_env(app),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def kill_worker_mid_job(app: Flask, api: ApiClient, processing_id: str, log: Path) -> None:
    """A ``pps worker`` that renders the batch, SIGKILLed with its work horse (which RQ
    runs in a session of its own) once a first draft is processed."""
    worker = start_worker(app, log)
    horses: list[str] = []
    try:
        wait_until(
            lambda: "processed" in snapshot_states(status(api, processing_id)),
            60,
            log.read_text(),
        )
        horses = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(worker.pid)], capture_output=True, text=True
        ).stdout.split()
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        for pid in horses:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)


def shop(app: Flask, drafts: int = 1) -> tuple[str, list[str], ApiClient]:
    repo: SqlRepository = app.extensions["pps"].repository
    client = repo.create_client("Shop")
    template = card_template(repo, client)
    hashes = [card_draft(repo, client, template, f"Ada {i}").draft_hash for i in range(drafts)]
    return client.identifier, hashes, ApiClient(app.test_client(), client.api_key)


def test_a_batch_whose_job_redis_lost_is_queued_again_and_rendered(
    app: Flask, redis_process: RedisProcess
) -> None:
    _, drafts, api = shop(app)
    with receiver() as hook:
        response = api.post(URL, json={"draftIds": drafts, "stateChangedNotifyUrl": hook.url})
        assert response.status_code == 201, response.get_data()
        processing_id = response.get_json()["processingId"]
        redis_process.kill()
        redis_process.start()  # empty: restarted without persistence, the job is gone
        unchanged_for(app.extensions["pps"].repository.engine, processing_id, 1)

        log = burst_worker(app)
        final = status(api, processing_id)
        assert snapshot_states(final) == ["processed"], log
        assert f"processing {processing_id}: its job was lost; queued again" in log
        assert hook.bodies()[-1] == final


def test_a_batch_cut_off_while_rendering_fails_and_the_shop_hears_of_it(app: Flask) -> None:
    """A draft ``in-process`` without a job: the process rendering it died with the job
    (Redis emptied as well). Failed as RQ fails an abandoned job, never rendered again."""
    client, drafts, api = shop(app, 2)
    store = app.extensions["pps"].processings
    with receiver() as hook:
        processing = store.create(client, drafts, hook.url)
        store.set_state(client, processing.processing_id, 0, IN_PROCESS, allowed_from=(PENDING,))
        unchanged_for(app.extensions["pps"].repository.engine, processing.processing_id, 1)

        log = burst_worker(app)
        final = status(api, processing.processing_id)
        expected = [
            {"draftId": draft, "state": "failed", "message": INTERRUPTED} for draft in drafts
        ]
        assert final["draftStates"] == expected, log
        assert hook.bodies() == [final]


def test_a_batch_whose_job_waits_or_was_started_is_left_alone(
    app: Flask, redis_process: RedisProcess, tmp_path: Path
) -> None:
    """Old and unfinished is not lost while RQ holds a job for it: queued (a long queue),
    scheduled (a retry after an outage), or started by a worker that was then killed (RQ's
    maintenance fails that one through the failure callback, within a couple of minutes)."""
    client, drafts, api = shop(app, 40)
    services = app.extensions["pps"]
    engine = services.repository.engine
    connection = services.jobs.connection
    queue = Queue(QUEUE_NAME, connection=connection)

    started = services.processings.create(client, drafts, None).processing_id
    services.jobs.enqueue(client, started, len(drafts))
    kill_worker_mid_job(app, api, started, tmp_path / "worker.log")
    assert queue.started_job_registry.count == 1

    queued = services.processings.create(client, drafts[:1], None).processing_id
    services.jobs.enqueue(client, queued, 1)
    scheduled = services.processings.create(client, drafts[:1], None).processing_id
    queue_processing(queue, client, scheduled, timeout=60, delay=600)
    lost = services.processings.create(client, drafts[:1], None).processing_id
    for processing_id in (started, queued, scheduled, lost):
        unchanged_for(engine, processing_id, 1)
    before = {item: status(api, item) for item in (started, queued, scheduled)}

    recovered = recover_lost_jobs(services)
    assert lost in recovered.requeued
    assert {started, queued, scheduled} & {*recovered.requeued, *recovered.failed} == set()
    assert {item: status(api, item) for item in before} == before
    assert len(queue) == 2  # the one queued, and the lost one queued again
    assert queue.scheduled_job_registry.count == 1
    assert queue.started_job_registry.count == 1
    assert recover_lost_jobs(services).requeued == ()  # claimed: another look leaves it


def test_a_worker_killed_mid_job_has_its_batch_failed_by_the_next_worker(
    tmp_path: Path, sqlite_url: str, redis_process: RedisProcess
) -> None:
    """RQ's part, which the look for lost jobs leaves alone: a worker SIGKILLed with its
    work horse leaves the job started; once its heartbeat (90 s) has expired, the
    maintenance of the next worker fails it through pps's failure callback. The shop sees
    what was rendered, the rest failed, and is notified of it. SQLite only: the wait is
    RQ's, the same on any database."""
    app = make_app(tmp_path, sqlite_url, redis_process.url)
    try:
        _, drafts, api = shop(app, 40)
        with receiver() as hook:
            response = api.post(URL, json={"draftIds": drafts, "stateChangedNotifyUrl": hook.url})
            processing_id = response.get_json()["processingId"]
            log = tmp_path / "worker.log"
            kill_worker_mid_job(app, api, processing_id, log)
            worker = start_worker(app, log)
            try:
                final = wait_until(
                    lambda: (
                        (body := status(api, processing_id))
                        and set(snapshot_states(body)) <= {"processed", "failed"}
                        and body
                    ),
                    180,
                    log.read_text(),
                )
                wait_until(lambda: final in hook.bodies(), 30, "the final state notified")
            finally:
                os.killpg(worker.pid, signal.SIGTERM)
                worker.wait(timeout=30)
    finally:
        app.extensions["pps"].close()
    states = snapshot_states(final)
    assert "processed" in states and "failed" in states, states
    failed = {item["message"] for item in final["draftStates"] if item["state"] == "failed"}
    assert failed == {STOPPED}
    assert [body for body in hook.bodies() if body == final] == [final]


def test_a_server_without_redis_killed_mid_job_finishes_the_batch_once_restarted(
    tmp_path: Path, database_url: str
) -> None:
    """Without Redis a batch runs in a thread of the app process that accepted it. That
    process killed (OOM, kill -9, a host that lost power) took the job with it: the batch
    stayed ``in-process``, also after a restart. The restarted server finds it."""
    shop = thread_mode_shop(
        tmp_path,
        database_url,
        PPS_WORKERS="1",
        PPS_NOTIFY_ALLOW_PRIVATE="1",
        PPS_WEBHOOK_POLL="0.1",
        # A claim on the outbox left by the killed process expires after this plus 30 s.
        PPS_NOTIFY_TIMEOUT="1",
        PPS_WEBHOOK_TIMEOUT="1",
    )
    server, template, api = shop.server, shop.template, shop.api
    port, env = server.port, server.env
    engine = sa.create_engine(database_url)

    def states(processing_id: str) -> list[str]:
        return snapshot_states(api("GET", f"{URL}/{processing_id}"))

    def finished(processing_id: str) -> dict[str, Any] | None:
        body = api("GET", f"{URL}/{processing_id}")
        return body if set(snapshot_states(body)) <= {"processed", "failed"} else None

    try:
        with receiver() as hook:
            proc = start_gunicorn(env, port, server.log)
            try:
                user = api("POST", "/api-ext/user", {})["data"]["identifier"]
                drafts = [
                    api(
                        "POST",
                        "/api-ext/draft",
                        {"templateIdentifier": template["identifier"], "userIdentifier": user},
                    )["data"]["draftHash"]
                    for _ in range(40)
                ]
                processing_id = api(
                    "POST", URL, {"draftIds": drafts, "stateChangedNotifyUrl": hook.url}
                )["processingId"]
                wait_until(lambda: "processed" in states(processing_id), 60, "a first draft")
            finally:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
            # The worker, killed with its master, may hold the socket a moment longer: the
            # next server must not be taken for up while it does.
            wait_until(lambda: not listening(port), 10, "the killed server's socket closed")
            with engine.connect() as conn:  # nothing serves the API now
                cut_off = list(
                    conn.execute(
                        sa.select(processing_drafts.c.state)
                        .where(processing_drafts.c.processing_id == processing_id)
                        .order_by(processing_drafts.c.position)
                    ).scalars()
                )
            assert {"pending", "processed"} <= set(cut_off), cut_off
            unchanged_for(engine, processing_id, 1)

            proc = start_gunicorn(env, port, server.log)
            try:
                final = wait_until(
                    lambda: finished(processing_id),
                    60,
                    f"a final state:\n{server.log.read_text()}",
                )
                wait_until(lambda: final in hook.bodies(), 90, "the final state notified")
            finally:
                stop(proc)
    finally:
        engine.dispose()
    # What was rendered stays; what the killed process left unfinished is failed (a draft
    # was being rendered), or all of it is rendered (it was killed between two drafts).
    assert [item["state"] for item in final["draftStates"][: cut_off.count("processed")]] == [
        "processed"
    ] * cut_off.count("processed")
    failed = [item for item in final["draftStates"] if item["state"] == "failed"]
    assert all(item["message"] == INTERRUPTED for item in failed), failed
    assert [body for body in hook.bodies() if body == final] == [final]
