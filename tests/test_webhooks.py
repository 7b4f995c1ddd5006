"""Webhooks: ``/api-ext/webhook`` as the PHP SDK calls it, signed deliveries verified with the
``standardwebhooks`` package, retries and the ``status`` health, isolation between clients,
and the address rules every outbound URL follows.

Addresses off 127.0.0.0/8 and ::1 appear only in checks that refuse them before any
connection is made; every receiver is a real HTTP server (or socket) on 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from api_support import assert_error
from conftest import ApiClient, free_port
from flask import Flask
from processing_support import card_draft, card_template, receiver
from standardwebhooks import Webhook as StandardWebhook

from app import create_app
from pps.platform.repository.tables import webhook_deliveries
from pps.platform.ssrf import ForbiddenTarget, address_problem, check_url, parse_target, post
from pps.webhooks.events import DRAFT_CREATED, EVENTS, PROCESSING_STATE_CHANGED, emit

URL = "/api-ext/webhook"


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


@pytest.fixture
def hook_app(app_config: dict[str, Any]) -> Iterator[Flask]:
    application = create_app(
        {
            **app_config,
            "worker_mode": "thread",
            "webhook_poll": 0.05,
            "webhook_timeout": 2.0,
            "webhook_attempts": 3,
            "webhook_backoff": 0.4,
            "webhook_per_client": 2,
            "webhook_concurrency": 4,
        }
    )
    yield application
    application.extensions["pps"].close()


def shop(app: Flask, name: str) -> tuple[Any, ApiClient]:
    services = app.extensions["pps"]
    client = services.repository.create_client(name)
    return client, ApiClient(app.test_client(), client.api_key)


# -- the address rules (no request is sent) ----------------------------------------------

REFUSED_ALWAYS = [
    "0.0.0.0",  # noqa: S104
    "0.1.2.3",
    "169.254.169.254",
    "192.0.0.1",
    "192.0.0.9",
    "192.0.0.170",
    "192.0.2.1",
    "192.31.196.1",
    "192.52.193.1",
    "192.88.99.1",
    "192.175.48.1",
    "198.18.0.1",
    "198.19.255.254",
    "198.51.100.1",
    "203.0.113.1",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "::",
    "::10.0.0.1",  # IPv4-compatible (deprecated)
    "::ffff:0:7f00:1",  # IPv4-translated (SIIT) around 127.0.0.1
    "::ffff:0:808:808",  # IPv4-translated around a public address: refused all the same
    "::1:0:0:1",  # the rest of ::/8, reserved by the IETF
    "0:ff::1",
    "64:ff9b:1::a00:1",  # local-use translation
    "100::1",
    "100:0:0:1::1",
    "2001::1",  # Teredo
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo around a public address
    "2001:1::1",
    "2001:2::1",
    "2001:3::1",
    "2001:4:112::1",
    "2001:10::1",
    "2001:20::1",
    "2001:30::1",
    "2001:db8::1",
    "2620:4f:8000::1",
    "3fff::1",
    "5f00::1",
    "fe80::1",
    "fec0::1",
    "ff02::1",
    # Forms carrying an IPv4 address that is refused always.
    "::ffff:169.254.169.254",
    "2002:a9fe:a9fe::",  # 6to4 around 169.254.169.254
    "64:ff9b::a9fe:a9fe",  # NAT64 around 169.254.169.254
    "64:ff9b::c612:1",  # NAT64 around 198.18.0.1
]

RELAXABLE = [
    "10.0.0.1",
    "100.64.0.1",
    "100.127.255.254",
    "127.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "::1",
    "fc00::1",
    "fd12:3456::1",
    "::ffff:10.0.0.1",
    "::ffff:127.0.0.1",
    "2002:c0a8:101::",  # 6to4 around 192.168.1.1
    "2002:a00:1::",  # 6to4 around 10.0.0.1
    "64:ff9b::a00:1",  # NAT64 around 10.0.0.1
    "64:ff9b::6440:1",  # NAT64 around 100.64.0.1
]

PUBLIC = ["93.184.216.34", "8.8.8.8", "2606:2800:220:1:248:1893:25c8:1946", "64:ff9b::808:808"]


@pytest.mark.parametrize("address", REFUSED_ALWAYS)
def test_special_purpose_addresses_are_refused_even_with_private_allowed(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert address_problem(ip, allow_private=False) is not None
    assert address_problem(ip, allow_private=True) is not None


@pytest.mark.parametrize("address", RELAXABLE)
def test_private_and_loopback_ranges_only_with_the_setting(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert address_problem(ip, allow_private=False) is not None
    assert address_problem(ip, allow_private=True) is None


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address), allow_private=False) is None


def test_allowed_hosts_lift_the_private_rule_for_those_names_only() -> None:
    check_url("http://10.1.2.3/hook", allow_private=False, allowed_hosts=("10.1.2.3",), timeout=5)
    check_url("http://localhost/hook", allow_private=False, allowed_hosts=("localhost",), timeout=5)
    with pytest.raises(ValueError, match="private"):
        check_url(
            "http://10.1.2.4/hook", allow_private=False, allowed_hosts=("10.1.2.3",), timeout=5
        )
    # Never the always-refused ranges, whatever the allow-list says.
    with pytest.raises(ValueError, match="link-local"):
        check_url(
            "http://169.254.169.254/",
            allow_private=False,
            allowed_hosts=("169.254.169.254",),
            timeout=5,
        )


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:0/hook", "port 0"),
        ("http://[2001:4860::8888]:0/", "port 0"),
        ("http://127.0.0.1:65536/", "valid URL"),
        ("http://user:pw@127.0.0.1/", "user name"),
        ("ftp://127.0.0.1/", "http"),
        ("http:///hook", "host"),
    ],
)
def test_url_shapes_that_cannot_be_delivered_are_refused(url: str, problem: str) -> None:
    """Checked on the URL alone, before any name is resolved or anything is sent."""
    with pytest.raises(ForbiddenTarget, match=problem):
        parse_target(url)


def test_a_trickling_receiver_is_cut_off_at_the_deadline() -> None:
    """The deadline bounds the whole request, not each read: one byte every 0.2 s would
    pass any per-read timeout forever."""
    stop = threading.Event()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]

        def trickle() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                while not stop.is_set():
                    try:
                        conn.sendall(b"X-Slow: a\r\n")
                    except OSError:
                        return
                    time.sleep(0.2)

        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()
        started = time.monotonic()
        with pytest.raises(Exception, match="timed out"):
            post(f"http://127.0.0.1:{port}/", b"{}", {}, deadline=1.0, allow_private=True)
        elapsed = time.monotonic() - started
        stop.set()
        thread.join(5)
    assert 0.9 < elapsed < 2.0


def test_a_tls_handshake_cannot_outlast_the_deadline() -> None:
    """The connection is slow to be accepted (the listener's queue is full, so the first SYN
    is dropped and sent again after a second), then the handshake never gets an answer: the
    deadline still ends the request. A handshake that ran past the deadline would otherwise
    hand back a socket the deadline's timer never saw, to be read for as long as the
    receiver trickles its answer."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        held: list[socket.socket] = []

        def accept_late() -> None:
            time.sleep(0.3)
            for _ in range(2):  # the filler, then the request's connection, left silent
                held.append(listener.accept()[0])

        with socket.create_connection(("127.0.0.1", port)):  # fills the accept queue
            thread = threading.Thread(target=accept_late, daemon=True)
            thread.start()
            started = time.monotonic()
            with pytest.raises(Exception, match="timed out"):
                post(f"https://127.0.0.1:{port}/", b"{}", {}, deadline=1.5, allow_private=True)
            elapsed = time.monotonic() - started
            thread.join(5)
        for conn in held:
            conn.close()
    assert len(held) == 2  # the connection was made, late: the handshake was what waited
    # A handshake given the whole deadline after the connection's 1 s wait for the resent
    # SYN ends at 2.5 s at the earliest; the margin below it is for a loaded machine's late
    # wake-up of the deadline's timer (1.72 s was seen).
    assert 1.4 < elapsed < 2.3, elapsed


# -- the resource, as the SDK calls it ---------------------------------------------------


def test_create_show_list_delete_as_the_sdk_reads_them(hook_app: Flask) -> None:
    """``src/Client/WebHook/Client.php`` (ResourceClient: POST/GET ``webhook``, ``data``
    wrapper), ``WebHook::fromArray`` (identifier, event, url: strings; status: int),
    ``DestroysResources`` (DELETE is exactly 204), ``ListsResources`` (data + meta)."""
    _, api = shop(hook_app, "Shop A")
    _, other = shop(hook_app, "Shop B")
    with receiver() as hook:
        created = api.post(URL, json={"event": "draft.created", "url": hook.url})
        assert created.status_code == 201, created.get_json()
        data = created.get_json()["data"]
        assert isinstance(data["identifier"], str) and data["identifier"]
        assert (data["event"], data["url"], data["status"]) == ("draft.created", hook.url, 0)
        assert type(data["status"]) is int
        assert data["secret"].startswith("whsec_")
        second = api.post(URL, json={"event": "draft.finished", "url": hook.url})
        assert second.status_code == 201
        assert "secret" not in second.get_json()["data"]  # shown once per client
        shown = api.get(f"{URL}/{data['identifier']}")
        assert shown.status_code == 200
        assert shown.get_json() == {
            "data": {
                "identifier": data["identifier"],
                "event": "draft.created",
                "url": hook.url,
                "status": 0,
            }
        }
        listed = api.get(URL, query_string={"page": 1, "per_page": 1}).get_json()
        assert [item["identifier"] for item in listed["data"]] == [data["identifier"]]
        assert listed["meta"] == {"currentPage": 1, "lastPage": 2, "perPage": 1, "total": 2}
        assert_error(other.get(f"{URL}/{data['identifier']}"), 404)
        assert_error(other.delete(f"{URL}/{data['identifier']}"), 404)
        deleted = api.delete(f"{URL}/{data['identifier']}")
        assert deleted.status_code == 204 and deleted.data == b""
        assert_error(api.get(f"{URL}/{data['identifier']}"), 404)


@contextmanager
def secrets_refused(engine: sa.Engine) -> Iterator[None]:
    """A real database failure of the write that stores a client's webhook secret: a
    trigger that aborts it (SQLite and PostgreSQL alike), dropped afterwards."""
    with engine.begin() as conn:
        if engine.dialect.name == "sqlite":
            conn.exec_driver_sql(
                "CREATE TRIGGER refuse_secret BEFORE UPDATE ON client_settings "
                "WHEN NEW.webhook_secret IS NOT NULL "
                "BEGIN SELECT RAISE(ABORT, 'webhook secrets refused'); END"
            )
        else:
            conn.exec_driver_sql(
                "CREATE FUNCTION refuse_secret() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'webhook secrets refused'; END $$"
            )
            conn.exec_driver_sql(
                "CREATE TRIGGER refuse_secret BEFORE UPDATE ON client_settings FOR EACH ROW "
                "WHEN (NEW.webhook_secret IS NOT NULL) EXECUTE FUNCTION refuse_secret()"
            )
    try:
        yield
    finally:
        with engine.begin() as conn:
            if engine.dialect.name == "sqlite":
                conn.exec_driver_sql("DROP TRIGGER refuse_secret")
            else:
                conn.exec_driver_sql("DROP TRIGGER refuse_secret ON client_settings")
                conn.exec_driver_sql("DROP FUNCTION refuse_secret()")


def test_a_webhook_whose_secret_cannot_be_stored_is_not_created(hook_app: Flask) -> None:
    """The webhook and the client's first secret are one transaction: when storing the
    secret fails, no webhook is left behind (its deliveries would all be dropped) and no
    secret is kept that nobody was shown."""
    tenant, api = shop(hook_app, "Shop A")
    integrations = hook_app.extensions["pps"].integrations
    body = {"event": "draft.created", "url": "http://127.0.0.1:9/hook"}
    with secrets_refused(integrations.engine):
        assert_error(api.post(URL, json=body), 500)
    assert api.get(URL).get_json()["meta"]["total"] == 0
    assert integrations.settings(tenant.identifier).webhook_secret is None
    created = api.post(URL, json=body)
    assert created.status_code == 201, created.get_json()
    secret = created.get_json()["data"]["secret"]
    assert integrations.settings(tenant.identifier).webhook_secret == secret
    assert api.get(URL).get_json()["meta"]["total"] == 1


def test_the_same_subscription_again_answers_the_existing_webhook(
    forget_deliveries: Callable[[str], None], hook_app: Flask
) -> None:
    """A second ``{event, url}`` like one the client has is the same webhook (200, same
    identifier), not a second subscription: each would POST every event to the URL again."""
    tenant, api = shop(hook_app, "Shop A")
    forget_deliveries(tenant.identifier)
    services = hook_app.extensions["pps"]
    body = {"event": "review.closed", "url": "http://127.0.0.1:9/hook"}
    first = api.post(URL, json=body)
    assert first.status_code == 201
    for _ in range(3):
        again = api.post(URL, json=body)
        assert again.status_code == 200, again.get_json()
        assert again.get_json() == {
            "data": {k: v for k, v in first.get_json()["data"].items() if k != "secret"}
        }
    other_event = api.post(URL, json={**body, "event": "draft.finished"})
    assert other_event.status_code == 201
    assert api.get(URL).get_json()["meta"]["total"] == 2
    assert emit(services, tenant.identifier, "review.closed", {"reviewId": "r1"}) == 1
    assert services.integrations.pending(tenant.identifier) == 1


def test_a_client_has_at_most_the_limit_of_webhooks(app_config: dict[str, Any]) -> None:
    application = create_app({**app_config, "webhook_limit": 3})
    try:
        _, api = shop(application, "Shop A")
        _, other = shop(application, "Shop B")
        made = [
            api.post(URL, json={"event": "review.closed", "url": f"http://127.0.0.1:9/{n}"})
            for n in range(3)
        ]
        assert [r.status_code for r in made] == [201, 201, 201]
        refused = api.post(URL, json={"event": "review.closed", "url": "http://127.0.0.1:9/x"})
        body = assert_error(refused, 422, "url")
        assert "3 webhooks" in body["message"]
        # Asking again for one it has is still answered; another client has its own limit.
        same = {"event": "review.closed", "url": "http://127.0.0.1:9/0"}
        assert api.post(URL, json=same).status_code == 200
        assert other.post(URL, json=same).status_code == 201
        gone = made[0].get_json()["data"]["identifier"]
        assert api.delete(f"{URL}/{gone}").status_code == 204
        again = api.post(URL, json={"event": "review.closed", "url": "http://127.0.0.1:9/x"})
        assert again.status_code == 201
    finally:
        application.extensions["pps"].close()


def race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Each call in its own thread, all let go at once; what each returned."""
    start = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        start.wait()
        results[index] = calls[index]()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_concurrent_identical_creates_make_one_webhook(app_config: dict[str, Any]) -> None:
    """Identical creates at once, against the real database: one 201 (the only one with
    the secret), the others 200 with its identifier. Distinct creates at once stop at the
    limit exactly."""
    application = create_app({**app_config, "webhook_limit": 4})
    try:
        _, first = shop(application, "Shop A")
        key = first.api_key
        body = {"event": "review.closed", "url": "http://127.0.0.1:9/hook"}

        def create(json: dict[str, str]) -> Callable[[], Any]:
            api = ApiClient(application.test_client(), key)
            return lambda: api.post(URL, json=json)

        answers = race([create(body) for _ in range(8)])
        statuses = sorted(answer.status_code for answer in answers)
        assert statuses == [200] * 7 + [201], [a.get_json() for a in answers]
        identifiers = {answer.get_json()["data"]["identifier"] for answer in answers}
        assert len(identifiers) == 1
        assert sum("secret" in answer.get_json()["data"] for answer in answers) == 1
        answers = race([create({**body, "url": f"http://127.0.0.1:9/{n}"}) for n in range(8)])
        assert sorted(answer.status_code for answer in answers) == [201] * 3 + [422] * 5
        assert first.get(URL).get_json()["meta"]["total"] == 4
    finally:
        application.extensions["pps"].close()


def test_bad_events_and_forbidden_urls_are_422(hook_app: Flask) -> None:
    _, api = shop(hook_app, "Shop A")
    body = assert_error(
        api.post(URL, json={"event": "draft.eaten", "url": "http://127.0.0.1/"}), 422
    )
    assert "event" in body["errors"]
    body = assert_error(
        api.post(URL, json={"event": "draft.created", "url": "http://169.254.169.254/latest"}),
        422,
    )
    assert "link-local" in body["errors"]["url"][0]
    body = assert_error(api.post(URL, json={"event": "draft.created", "url": "ftp://x/"}), 422)
    assert "url" in body["errors"]
    body = assert_error(api.post(URL, json={"event": "draft.created"}), 422)
    assert "url" in body["errors"]
    assert set(EVENTS) >= {
        "draft.created",
        "draft.updated",
        "draft.finished",
        "review.closed",
        "processing.state_changed",
    }


def test_a_url_beyond_ascii_is_delivered_percent_encoded(hook_app: Flask) -> None:
    """HTTP sends the request target as ASCII: a path or query beyond it goes percent-encoded
    (as a browser sends it), not stuck in the outbox."""
    services = hook_app.extensions["pps"]
    client, api = shop(hook_app, "Shop A")
    with receiver() as hook:
        url = hook.url.replace("/hooks/pps?shop=1", "/hooks/café?shop=Zürich")
        created = api.post(URL, json={"event": DRAFT_CREATED, "url": url})
        assert created.status_code == 201, created.get_json()
        assert created.get_json()["data"]["url"] == url
        emit(services, client.identifier, DRAFT_CREATED, {"n": 1})
        wait_until(lambda: hook.requests, timeout=5)
        assert hook.requests[0].path == "/hooks/caf%C3%A9?shop=Z%C3%BCrich"
        wait_until(lambda: services.integrations.pending(client.identifier) == 0)
    # What has no UTF-8 form (a lone surrogate, from a CLI argument) cannot be sent at all.
    with pytest.raises(ForbiddenTarget, match="Unicode"):
        parse_target("http://127.0.0.1/\udc80")


# -- deliveries ----------------------------------------------------------------------------


def test_deliveries_are_signed_as_standard_webhooks_verify_them(hook_app: Flask) -> None:
    services = hook_app.extensions["pps"]
    client, api = shop(hook_app, "Shop A")
    template = card_template(services.repository, client)
    user = services.repository.create_user(client.identifier, {})
    with receiver() as hook:
        created = api.post(URL, json={"event": "draft.created", "url": hook.url}).get_json()
        secret = created["data"]["secret"]
        answer = api.post(
            "/api-ext/draft",
            json={"templateIdentifier": template.identifier, "userIdentifier": user.identifier},
        )
        assert answer.status_code == 201
        draft_hash = answer.get_json()["data"]["draftHash"]
        wait_until(lambda: hook.requests)
        (request,) = hook.requests
        payload = StandardWebhook(secret).verify(request.body, request.headers)
        assert payload["type"] == "draft.created"
        assert payload["data"]["draftHash"] == draft_hash
        assert payload["data"]["userIdentifier"] == user.identifier
        assert request.headers["webhook-id"].startswith("msg_")
        # Another secret, or a changed body, does not verify.
        with pytest.raises(Exception, match="signature"):
            StandardWebhook("whsec_" + "A" * 43 + "=").verify(request.body, request.headers)
        with pytest.raises(Exception, match="signature"):
            StandardWebhook(secret).verify(
                request.body.replace(b"draft", b"dRaft"), request.headers
            )


def test_a_failing_receiver_is_retried_and_status_goes_degraded_broken_and_back(
    hook_app: Flask,
) -> None:
    services = hook_app.extensions["pps"]
    client, api = shop(hook_app, "Shop A")
    seen: list[int] = []
    with receiver(503) as hook:
        identifier = api.post(URL, json={"event": "draft.updated", "url": hook.url}).get_json()[
            "data"
        ]["identifier"]

        def status() -> int:
            value = int(api.get(f"{URL}/{identifier}").get_json()["data"]["status"])
            if not seen or seen[-1] != value:
                seen.append(value)
            return value

        status()
        emit(services, client.identifier, "draft.updated", {"n": 1})
        wait_until(lambda: status() == 2)
        # PPS_WEBHOOK_ATTEMPTS (3) tries of the same message, then it is given up.
        assert len(hook.requests) == 3
        assert len({r.headers["webhook-id"] for r in hook.requests}) == 1
        assert services.integrations.pending(client.identifier) == 0
        hook.status = 204
        emit(services, client.identifier, "draft.updated", {"n": 2})
        wait_until(lambda: status() == 0)
        assert hook.requests[-1].json()["data"] == {"n": 2}
    assert seen == [0, 1, 2, 0]


def test_an_unexpected_error_counts_as_a_failed_attempt(
    hook_app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    """A delivery that raises something other than a database outage (here: a payload with
    a lone surrogate, which JSON stores but UTF-8 cannot encode) is a failed attempt,
    logged, retried with backoff and given up; it was left leased and uncounted, tried
    again at every lease expiry forever."""
    services = hook_app.extensions["pps"]
    client, api = shop(hook_app, "Shop A")
    with receiver() as hook:
        identifier = api.post(URL, json={"event": "draft.updated", "url": hook.url}).get_json()[
            "data"
        ]["identifier"]
        caplog.set_level("WARNING", logger="pps.webhooks")
        emit(services, client.identifier, "draft.updated", {"note": "\ud800"})
        # PPS_WEBHOOK_ATTEMPTS (3) attempts 0.4 s and 0.8 s apart, far within the lease (32 s).
        wait_until(lambda: services.integrations.pending(client.identifier) == 0)
        assert api.get(f"{URL}/{identifier}").get_json()["data"]["status"] == 2
        assert hook.requests == []
    raised = [r for r in caplog.records if r.exc_info and "UnicodeEncodeError" in r.exc_text]
    assert len(raised) == 3, [r.getMessage() for r in caplog.records]


def test_a_receiver_that_is_down_is_retried_with_backoff(hook_app: Flask) -> None:
    services = hook_app.extensions["pps"]
    client, api = shop(hook_app, "Shop A")
    port = free_port()  # nothing listens: every connection is refused
    url = f"http://127.0.0.1:{port}/hook"
    identifier = api.post(URL, json={"event": "draft.updated", "url": url}).get_json()["data"][
        "identifier"
    ]
    started = time.monotonic()
    emit(services, client.identifier, "draft.updated", {"n": 1})
    wait_until(lambda: api.get(f"{URL}/{identifier}").get_json()["data"]["status"] == 1)
    wait_until(lambda: api.get(f"{URL}/{identifier}").get_json()["data"]["status"] == 2)
    # Pauses of 0.4 s and 0.8 s (PPS_WEBHOOK_BACKOFF doubling) lie between the 3 attempts.
    assert time.monotonic() - started >= 1.2
    assert services.integrations.pending(client.identifier) == 0


def test_a_message_tried_a_thousand_times_waits_the_longest_pause_for_its_next_try(
    forget_deliveries: Callable[[str], None], app_config: dict[str, Any]
) -> None:
    """An operator may allow thousands of attempts (PPS_WEBHOOK_ATTEMPTS has no upper
    bound). Past about 1025 of them the doubling backoff overflowed a float: the failure
    was never recorded and the message was tried again at every lease expiry, forever,
    with a traceback each time. It waits the longest pause (an hour) instead."""
    application = create_app(
        {**app_config, "worker_mode": "thread", "webhook_poll": 0.05, "webhook_attempts": 5000}
    )
    try:
        services = application.extensions["pps"]
        client, api = shop(application, "Shop A")
        forget_deliveries(client.identifier)
        url = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens: refused
        assert api.post(URL, json={"event": "draft.updated", "url": url}).status_code == 201
        engine = services.integrations.engine
        mine = webhook_deliveries.c.client_identifier == client.identifier
        # Queued without waking a dispatcher (none runs yet), as if tried 1100 times.
        assert services.integrations.enqueue(client.identifier, "draft.updated", {"n": 1}) == 1
        with engine.begin() as conn:
            conn.execute(sa.update(webhook_deliveries).where(mine).values(attempts=1100))
        dispatcher = services.dispatcher()
        assert dispatcher is not None
        dispatcher.wake()

        def recorded() -> Any:
            with engine.connect() as conn:
                row = conn.execute(sa.select(webhook_deliveries).where(mine)).one()
            return row if row.attempts == 1101 else None

        row = wait_until(recorded)
        assert row.lease_until is None
        pause = row.next_attempt_at.replace(tzinfo=UTC) - datetime.now(UTC)
        assert timedelta(minutes=59) < pause <= timedelta(hours=1)
    finally:
        application.extensions["pps"].close()


class Hanging:
    """A receiver that accepts connections and never answers."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/slow"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(5)
        for conn in self.accepted:
            conn.close()


def test_a_slow_receiver_of_one_client_does_not_delay_another_clients_deliveries_or_jobs(
    forget_deliveries: Callable[[str], None], hook_app: Flask
) -> None:
    services = hook_app.extensions["pps"]
    slow_client, slow_api = shop(hook_app, "Slow shop")
    forget_deliveries(slow_client.identifier)
    fast_client, fast_api = shop(hook_app, "Fast shop")
    template = card_template(services.repository, fast_client)
    draft = card_draft(services.repository, fast_client, template, "Ada")
    hanging = Hanging()
    try:
        with receiver() as fast_hook:
            for event in (DRAFT_CREATED, PROCESSING_STATE_CHANGED):
                assert (
                    slow_api.post(URL, json={"event": event, "url": hanging.url}).status_code == 201
                )
            fast_api.post(URL, json={"event": DRAFT_CREATED, "url": fast_hook.url})
            # The slow client's backlog: more deliveries than every slot of the dispatcher.
            for n in range(10):
                emit(services, slow_client.identifier, DRAFT_CREATED, {"n": n})
            wait_until(lambda: len(hanging.accepted) >= 2)
            started = time.monotonic()
            emit(services, fast_client.identifier, DRAFT_CREATED, {"fast": True})
            wait_until(lambda: fast_hook.requests, timeout=5)
            fast_delivery = time.monotonic() - started
            # The slow client holds its 2 slots (PPS_WEBHOOK_PER_CLIENT) for the 2 s deadline.
            assert fast_delivery < 0.5, fast_delivery
            assert len(hanging.accepted) == 2
            # A batch job of the fast client, while the slow one's deliveries still hang.
            started = time.monotonic()
            created = fast_api.post(
                "/api-ext/pdf-processing", json={"draftIds": [draft.draft_hash]}
            )
            assert created.status_code == 201
            processing_id = created.get_json()["processingId"]

            def done() -> bool:
                body = fast_api.get(f"/api-ext/pdf-processing/{processing_id}").get_json()
                return body["draftStates"][0]["state"] == "processed"

            wait_until(done, timeout=10)
            job_time = time.monotonic() - started
            assert job_time < 1.5, job_time
            # Still hanging: the slow receiver was not what the others waited for.
            assert services.integrations.pending(slow_client.identifier) >= 8
    finally:
        hanging.close()


def test_deliveries_survive_in_the_outbox_for_another_dispatcher(hook_app: Flask) -> None:
    """Events queued where no dispatcher runs (an RQ work horse) are delivered by any
    process that runs one."""
    services = hook_app.extensions["pps"]
    client, api = shop(hook_app, "Shop A")
    with receiver() as hook:
        api.post(URL, json={"event": PROCESSING_STATE_CHANGED, "url": hook.url})
        queued = services.integrations.enqueue(
            client.identifier, PROCESSING_STATE_CHANGED, {"a": 1}
        )
        assert queued == 1
        assert services.dispatcher() is not None  # started: it polls the outbox
        wait_until(lambda: hook.requests)
        assert hook.requests[0].json()["data"] == {"a": 1}
