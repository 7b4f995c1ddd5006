"""Name lookups are bounded: a name server that never answers costs a URL check its short
timeout and an outbound request its deadline, never the system resolver's own timeout,
and a pool of lookups stuck on it fails further ones at once.

A name that does not resolve at all (NXDOMAIN, a failing name server) is a failed
attempt of a webhook delivery or a notification, retried as a connection error is; a name
that resolves to a refused address is not retried.

The silent name server is a lookup function blocked on an event, the failing one a lookup
function raising ``socket.gaierror`` (each handed to the resolver as ``socket.getaddrinfo``
would be): no packet leaves the machine. The real ``getaddrinfo`` is used for
``localhost`` (from /etc/hosts) and IP literals only (one of them behind a name the test
maps to it).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from processing_support import receiver

from app import create_app
from pps.acl.remote import ask
from pps.platform.name_lookup import Resolver
from pps.platform.repository.integrations import BROKEN, OPERATIONAL
from pps.platform.ssrf import (
    ForbiddenTarget,
    NameNotResolved,
    NotResolvedInTime,
    RequestFailed,
    check_url,
    parse_target,
    post,
    resolve,
)
from pps.webhooks.dispatcher import Dispatcher


class SilentNameServer:
    """A lookup that answers only once released: with ``address`` (port as asked)."""

    def __init__(self, address: str = "127.0.0.1") -> None:
        self.address = address
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.asked: list[str] = []
        self.answered = 0
        self.first_asked = threading.Event()

    def __call__(self, host: str, port: int, **_: Any) -> Sequence[tuple[Any, ...]]:
        with self.lock:
            self.asked.append(host)
        self.first_asked.set()
        self.release.wait()
        with self.lock:
            self.answered += 1
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (self.address, port))]


@pytest.fixture
def silent() -> Iterator[SilentNameServer]:
    server = SilentNameServer()
    yield server
    server.release.set()  # the lookup threads left behind finish


def eventually(predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll until ``predicate`` holds (a bound against hanging, not a timing assertion)."""
    limit = time.monotonic() + timeout
    while time.monotonic() < limit:
        result = predicate()
        if result:
            return result
        time.sleep(0.01)
    raise AssertionError("condition not reached")


def test_a_url_whose_name_never_resolves_is_refused_with_the_reason(
    silent: SilentNameServer,
) -> None:
    resolver = Resolver(lookup=silent)
    with pytest.raises(NotResolvedInTime, match=r"'shop\.invalid' did not resolve within 0\.05 s"):
        check_url("http://shop.invalid/hook", allow_private=True, timeout=0.05, resolver=resolver)
    # The lookup's thread may start late on a busy machine, after the 50 ms have passed.
    assert silent.first_asked.wait(10)
    assert silent.asked == ["shop.invalid"]  # asked once, then no longer waited for


def test_the_deadline_of_a_request_includes_its_name_lookup(silent: SilentNameServer) -> None:
    """The attempt fails at its deadline as a timeout (retried later), and the lookup that
    answers afterwards sends nothing: no late second request under another's lease."""
    resolver = Resolver(lookup=silent)
    with receiver() as hook:
        port = hook.server.server_address[1]
        with pytest.raises(RequestFailed, match=r"did not resolve within 0\.1 s") as failed:
            post(
                f"http://shop.invalid:{port}/hook",
                b"{}",
                {},
                deadline=0.1,
                allow_private=True,
                resolver=resolver,
            )
        assert failed.value.timed_out and failed.value.cause is NotResolvedInTime
        silent.release.set()
        eventually(lambda: silent.answered == 1)
        assert hook.requests == []
        # Once the name server answers, the same request goes through.
        sent = post(
            f"http://shop.invalid:{port}/hook",
            b"{}",
            {},
            deadline=5,
            allow_private=True,
            resolver=resolver,
        )
        assert sent.status == 204 and len(hook.requests) == 1


def test_an_acl_whose_name_never_resolves_denies_in_plain_words(
    silent: SilentNameServer,
) -> None:
    decision = ask(
        "http://acl.invalid/acl",
        "draft.editor.open",
        user_identifier="u",
        draft_hash="h",
        timeout=0.05,
        resolver=Resolver(lookup=silent),
    )
    assert not decision.allowed
    assert decision.reason == "the shop's access control's host name did not resolve within 0.05 s"


def test_lookups_stuck_on_a_silent_name_server_fail_the_next_at_once(
    silent: SilentNameServer,
) -> None:
    """With every lookup thread held, another lookup is not queued (nor the lookup function
    called): it fails at once, saying so; when the name server answers, lookups work again."""
    resolver = Resolver(lookup=silent, threads=2)
    for name in ("a.invalid", "b.invalid"):
        with pytest.raises(NotResolvedInTime, match="did not resolve"):
            resolve(parse_target(f"http://{name}/"), True, timeout=0.01, resolver=resolver)
    with pytest.raises(NotResolvedInTime, match="every name lookup is still waiting"):
        resolve(parse_target("http://c.invalid/"), True, timeout=60, resolver=resolver)
    # The held threads may start late on a busy machine, after their 10 ms have passed.
    eventually(lambda: len(silent.asked) == 2)
    assert sorted(silent.asked) == ["a.invalid", "b.invalid"]
    silent.release.set()
    eventually(lambda: silent.answered == 2)

    def resolves() -> list[Any] | None:
        try:
            return resolve(parse_target("http://c.invalid/"), True, timeout=5, resolver=resolver)
        except NotResolvedInTime:  # the stuck threads are handing their slots back
            return None

    assert eventually(resolves) == [ipaddress.ip_address("127.0.0.1")]


STUCK_LOOKUP = textwrap.dedent(
    """
    import threading

    from pps.platform.name_lookup import LookupTimeout, Resolver

    never = threading.Event()

    def dead_name_server(host, port, **_):
        never.wait()  # a name server that never answers, for as long as the process lives

    try:
        Resolver(lookup=dead_name_server).getaddrinfo("shop.invalid", 80, 0.1)
    except LookupTimeout as exc:
        print(exc, flush=True)
    """
)


def test_a_lookup_stuck_on_a_dead_name_server_does_not_hold_up_the_exit() -> None:
    """A real process whose lookup never ends exits once its own work is done: the
    lookup's thread is not joined at exit (a ThreadPoolExecutor's would be, for the system
    resolver's whole timeout; here, forever)."""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    # The bound only ends the test when the process hangs; it asserts no duration.
    done = subprocess.run(
        [sys.executable, "-c", STUCK_LOOKUP],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The name 'shop.invalid' did not resolve within 0.1 s.\n"


def test_the_systems_resolver_still_answers_for_localhost_and_literals() -> None:
    """The real ``getaddrinfo``, through the process's lookup threads: ``localhost`` comes
    from /etc/hosts (no DNS traffic) and a literal needs no lookup at all. A request to a
    name goes to the address its lookup gave, naming the host: the name is one the test
    controls, looked up by the real ``getaddrinfo`` as 127.0.0.1 where the receiver listens
    (``localhost`` comes as ::1 first on some machines, as 127.0.0.1 on others)."""
    addresses = resolve(parse_target("http://localhost:8080/"), True, timeout=5)
    assert addresses and all(address.is_loopback for address in addresses)
    assert resolve(parse_target("http://127.0.0.1/"), True, timeout=5) == [
        ipaddress.ip_address("127.0.0.1")
    ]

    asked: list[str] = []

    def hosts_file(host: str, port: int, **options: Any) -> Sequence[tuple[Any, ...]]:
        asked.append(host)
        return socket.getaddrinfo({"hook.test": "127.0.0.1"}[host], port, **options)

    with receiver() as hook:
        port = hook.server.server_address[1]
        url = f"http://hook.test:{port}/hook"
        sent = post(url, b"{}", {}, deadline=5, allow_private=True, resolver=Resolver(hosts_file))
        assert sent.status == 204
        assert asked == ["hook.test"]
        assert [request.headers["Host"] for request in hook.requests] == [f"hook.test:{port}"]


# -- names that do not resolve at all ----------------------------------------------------


class FailingNameServer:
    """A lookup that fails its first ``failures`` answers with ``socket.gaierror(code)``
    (NXDOMAIN is ``EAI_NONAME``, a name server that failed ``EAI_AGAIN``), then answers
    ``address`` (port as asked)."""

    def __init__(self, code: int, failures: int, address: str = "127.0.0.1") -> None:
        self.code = code
        self.failures = failures
        self.address = address
        self.lock = threading.Lock()
        self.asked: list[str] = []

    def __call__(self, host: str, port: int, **_: Any) -> Sequence[tuple[Any, ...]]:
        with self.lock:
            self.asked.append(host)
            failing = len(self.asked) <= self.failures
        if failing:
            raise socket.gaierror(self.code, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (self.address, port))]


ATTEMPTS = 3
NAME_FAILURES = [
    pytest.param(socket.EAI_NONAME, id="nxdomain"),
    pytest.param(socket.EAI_AGAIN, id="temporary"),
]


@pytest.fixture
def outbox_app(app_config: dict[str, Any]) -> Iterator[Flask]:
    """An app whose own dispatcher never starts (nothing here emits through it): each test
    runs a dispatcher of its own on the test's lookup function."""
    application = create_app(
        {
            **app_config,
            "worker_mode": "thread",
            "webhook_poll": 0.05,
            "webhook_timeout": 2.0,
            "webhook_attempts": ATTEMPTS,
            "webhook_backoff": 0.1,
            "notify_timeout": 2.0,
            "notify_attempts": ATTEMPTS,
            "notify_backoff": 0.1,
        }
    )
    yield application
    application.extensions["pps"].close()


def queue_message(app: Flask, kind: str, url: str) -> tuple[str, str | None]:
    """A webhook delivery or a notification to ``url`` in the outbox: (client, webhook)."""
    services = app.extensions["pps"]
    client = services.repository.create_client("Shop").identifier
    if kind == "notification":
        services.integrations.enqueue_notification(
            client, "notify.processing", url, {"n": 1}, "processing:1"
        )
        return client, None
    webhook = services.integrations.create_webhook(client, "draft.updated", url).webhook
    assert services.integrations.enqueue(client, "draft.updated", {"n": 1}) == 1
    return client, webhook.identifier


def dispatch(app: Flask, lookup: Any) -> Dispatcher:
    services = app.extensions["pps"]
    return Dispatcher(services.integrations, services.settings, resolver=Resolver(lookup=lookup))


def webhook_status(app: Flask, client: str, webhook: str | None) -> int | None:
    if webhook is None:
        return None
    found = app.extensions["pps"].integrations.get_webhook(client, webhook)
    return None if found is None else found.status


def test_a_name_that_does_not_resolve_is_refused_where_the_url_is_given() -> None:
    """Submission answers at once (422); only sending treats it as passing."""
    resolver = Resolver(lookup=FailingNameServer(socket.EAI_NONAME, failures=1))
    with pytest.raises(NameNotResolved, match=r"'shop\.invalid' cannot be resolved"):
        check_url("http://shop.invalid/hook", allow_private=True, timeout=5, resolver=resolver)


@pytest.mark.parametrize("kind", ["webhook", "notification"])
@pytest.mark.parametrize("code", NAME_FAILURES)
def test_a_name_that_fails_to_resolve_is_retried_until_it_resolves(
    outbox_app: Flask, kind: str, code: int
) -> None:
    """Two attempts meet a failed lookup, the third resolves and delivers: the same
    message, once (a failed lookup used to give the message up at once, as a refused
    address is, and mark the webhook broken)."""
    name_server = FailingNameServer(code, failures=ATTEMPTS - 1)
    services = outbox_app.extensions["pps"]
    with receiver() as hook:
        url = f"http://shop.invalid:{hook.server.server_address[1]}/hook"
        client, webhook = queue_message(outbox_app, kind, url)
        dispatcher = dispatch(outbox_app, name_server)
        try:
            eventually(lambda: services.integrations.pending(client) == 0)
        finally:
            dispatcher.close(5)
        assert name_server.asked == ["shop.invalid"] * ATTEMPTS
        assert len(hook.requests) == 1 and hook.requests[0].json() is not None
    if webhook is not None:
        assert webhook_status(outbox_app, client, webhook) == OPERATIONAL


@pytest.mark.parametrize("kind", ["webhook", "notification"])
@pytest.mark.parametrize("code", NAME_FAILURES)
def test_a_name_that_never_resolves_is_given_up_after_the_attempts(
    outbox_app: Flask, kind: str, code: int
) -> None:
    name_server = FailingNameServer(code, failures=10**6)
    services = outbox_app.extensions["pps"]
    client, webhook = queue_message(outbox_app, kind, "http://shop.invalid/hook")
    dispatcher = dispatch(outbox_app, name_server)
    try:
        eventually(lambda: services.integrations.pending(client) == 0)
    finally:
        dispatcher.close(5)
    assert len(name_server.asked) == ATTEMPTS  # PPS_WEBHOOK_ATTEMPTS / PPS_NOTIFY_ATTEMPTS
    if webhook is not None:
        assert webhook_status(outbox_app, client, webhook) == BROKEN


@pytest.mark.parametrize("kind", ["webhook", "notification"])
def test_a_name_that_resolves_to_a_refused_address_is_not_retried(
    outbox_app: Flask, kind: str
) -> None:
    """The rule against server-side request forgery is final: one lookup, no connection,
    the message given up at once."""
    name_server = FailingNameServer(0, failures=0, address="169.254.169.254")
    services = outbox_app.extensions["pps"]
    client, webhook = queue_message(outbox_app, kind, "http://metadata.invalid/hook")
    dispatcher = dispatch(outbox_app, name_server)
    try:
        eventually(lambda: services.integrations.pending(client) == 0)
    finally:
        dispatcher.close(5)
    assert name_server.asked == ["metadata.invalid"]
    if webhook is not None:
        assert webhook_status(outbox_app, client, webhook) == BROKEN
    with pytest.raises(ForbiddenTarget, match="is link-local") as refused:
        post(
            "http://metadata.invalid/",
            b"{}",
            {},
            deadline=5,
            allow_private=True,
            resolver=Resolver(lookup=name_server),
        )
    assert not isinstance(refused.value, NameNotResolved)


def test_a_request_to_a_name_that_does_not_resolve_fails_as_a_network_error() -> None:
    resolver = Resolver(lookup=FailingNameServer(socket.EAI_AGAIN, failures=1))
    with pytest.raises(RequestFailed, match="cannot be resolved") as failed:
        post("http://shop.invalid/", b"{}", {}, deadline=5, allow_private=True, resolver=resolver)
    assert failed.value.cause is NameNotResolved and not failed.value.timed_out
    decision = ask(
        "http://acl.invalid/acl",
        "draft.editor.open",
        user_identifier="u",
        draft_hash="h",
        timeout=5,
        resolver=Resolver(lookup=FailingNameServer(socket.EAI_NONAME, failures=1)),
    )
    assert decision.reason == "the shop's access control's host name did not resolve"


@pytest.mark.parametrize(
    "host", ["localhost", "localhost.", "LOCALHOST", "shop.localhost", "a.b.localhost."]
)
def test_localhost_names_are_loopback_without_asking_a_name_server(host: str) -> None:
    """RFC 6761 6.3: no lookup at all (``localhost.`` with its root dot is not in /etc/hosts,
    so the system's resolver sent it to the name server), and loopback is judged as such:
    refused unless private addresses are allowed."""
    asked: list[str] = []

    def name_server(name: str, port: int, **options: Any) -> Sequence[tuple[Any, ...]]:
        asked.append(name)
        raise AssertionError(f"{name} was sent to a name server")

    target = parse_target(f"http://{host}:8080/hook")
    resolver = Resolver(lookup=name_server)
    with pytest.raises(ForbiddenTarget, match=r"127\.0\.0\.1"):
        resolve(target, False, timeout=5, resolver=resolver)
    assert resolve(target, True, timeout=5, resolver=resolver) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    assert asked == []


@pytest.mark.parametrize("host", ["localhost.shop.example", "notlocalhost", "localhost-1.example"])
def test_names_that_only_look_like_localhost_are_looked_up(host: str) -> None:
    answered = [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("127.0.0.1", 80))]
    asked: list[str] = []

    def name_server(name: str, port: int, **options: Any) -> Sequence[tuple[Any, ...]]:
        asked.append(name)
        return answered

    resolve(parse_target(f"http://{host}/"), True, timeout=5, resolver=Resolver(name_server))
    assert asked == [host]
