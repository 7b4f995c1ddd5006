"""A hung or dead Redis: fail fast, fail closed, say so, and keep answering the rest.

A private ``redis-server`` per test is stopped with SIGSTOP (the kernel still accepts
connections, nothing answers: the worst case for a client) or killed, then brought back.
Every call that needs Redis (``/auth``, the file URLs, the short-lived file links, batch
submission) must answer 503 with ``Retry-After`` within ``PPS_REDIS_TIMEOUT`` (2 s by
default; 2.5 s allows for the test's own overhead), JSON under ``/api-ext`` and
``/files/``, the HTML error page for ``/auth``, and hand out neither a session nor a link.
Calls that need no Redis keep answering meanwhile, also while Redis calls are waiting on
every other thread of the one gunicorn worker. Run through the Flask test client and
through gunicorn with the deploy config.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import session_cookie_name
from fault_support import (
    Answer,
    RedisProcess,
    Service,
    assert_autosave_unavailable_then_saved,
    assert_script_answers_unavailable,
    serving,
)

from pps.platform.repository.sql import upgrade_database

pytestmark = pytest.mark.slow

#: PPS_REDIS_TIMEOUT's default and the slack a generous assertion on it allows.
BOUND = 2.5


@pytest.fixture(params=["flask", "gunicorn"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    redis_process = RedisProcess(tmp_path)
    database_url = f"sqlite:///{tmp_path / 'pps.sqlite3'}"
    upgrade_database(database_url)
    try:
        with serving(
            request.param, tmp_path, database_url, redis_process, env={"PPS_THREADS": "4"}
        ) as service:
            yield service
    finally:
        redis_process.close()


def assert_unavailable(answer: Answer, *, html: bool = False) -> None:
    assert answer.status == 503, (answer.status, answer.body[:300])
    assert answer.seconds < BOUND, answer.seconds
    retry_after = answer.header("Retry-After")
    assert retry_after is not None and int(retry_after) > 0
    assert session_cookie_name() not in (answer.header("Set-Cookie") or "")
    assert answer.header("Location") is None
    content_type = answer.header("Content-Type") or ""
    if html:
        assert content_type.startswith("text/html"), content_type
        assert b"unavailable" in answer.body
    else:
        assert content_type.startswith("application/json"), content_type
        message = json.loads(answer.body)["message"]
        assert isinstance(message, str) and "unavailable" in message


def assert_working(service: Service) -> str:
    """Everything that needs Redis works; returns a fresh file link's path."""
    login = service.auth()
    assert login.status == 302, login.body[:300]
    assert session_cookie_name() in (login.header("Set-Cookie") or "")
    issued = service.file()
    assert issued.status == 302, issued.body[:300]
    link = issued.header("Location") or ""
    link = link[link.index("/files/") :]
    served = service.call("GET", link)
    assert served.status == 200 and served.body.startswith(b"%PDF")
    submitted = service.submit()
    assert submitted.status == 201, submitted.body[:300]
    return link


def assert_redis_free_calls_answer(service: Service) -> None:
    templates = service.api("GET", "/api-ext/template")
    assert templates.status == 200, templates.body[:300]
    user = service.api("GET", f"/api-ext/user/{service.shop.user}")
    assert user.status == 200, user.body[:300]
    assert templates.seconds < 1.0 and user.seconds < 1.0, (templates.seconds, user.seconds)


def every_redis_call_is_unavailable(service: Service, link: str) -> None:
    assert_unavailable(service.auth(), html=True)
    assert_unavailable(service.file())
    assert_unavailable(service.call("GET", link))
    assert_unavailable(service.submit())


def test_hung_redis_answers_503_in_time_while_other_calls_go_on(service: Service) -> None:
    link = assert_working(service)
    service.redis.freeze()
    try:
        every_redis_call_is_unavailable(service, link)
        # Logins waiting on three of the worker's four threads: the fourth still answers.
        waiting: list[Answer] = []
        threads = [
            threading.Thread(target=lambda: waiting.append(service.auth())) for _ in range(3)
        ]
        for thread in threads:
            thread.start()
        time.sleep(0.3)
        assert_redis_free_calls_answer(service)
        for thread in threads:
            thread.join(timeout=10)
        assert len(waiting) == 3
        for answer in waiting:
            assert_unavailable(answer, html=True)
    finally:
        service.redis.thaw()
    assert_working(service)


def test_dead_redis_answers_503_and_recovery_needs_no_restart(service: Service) -> None:
    link = assert_working(service)
    service.redis.kill()
    every_redis_call_is_unavailable(service, link)
    assert_redis_free_calls_answer(service)
    service.redis.start()
    assert_working(service)


def test_autosave_answers_its_503_in_json_while_redis_hangs(service: Service) -> None:
    """The editor's script reads JSON from the autosave, whatever the answer: a hung Redis
    (the autosave's rate limit counts there) is its 503 in JSON, with ``Retry-After``,
    and the same save goes through once Redis answers."""
    session = service.editor_login()
    service.redis.freeze()
    try:
        answer = service.autosave(session)
    finally:
        service.redis.thaw()
    assert_autosave_unavailable_then_saved(
        service, session, answer, bound=BOUND, names="unavailable"
    )


def test_the_editors_upload_and_preview_answer_their_503_in_json_while_redis_hangs(
    service: Service,
) -> None:
    """The image upload and the live preview are read by the editor's scripts, which ask
    for JSON: a hung Redis (the login's session lives there) is a JSON 503 with
    ``Retry-After``, not the HTML error page; the upload is answered again once Redis is."""
    session = service.editor_login()
    service.redis.freeze()
    try:
        answers = [service.upload(session), service.preview(session)]
    finally:
        service.redis.thaw()
    assert_script_answers_unavailable(answers, bound=BOUND, names="unavailable")
    after = service.upload(session)  # the shop's template here has no image to upload for
    assert after.status == 404 and json.loads(after.body)["message"], after.body[:300]
