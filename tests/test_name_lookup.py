"""Name lookups are bounded: a name server that never answers costs a URL check its short
timeout and an outbound request its deadline, never the system resolver's own timeout,
and a pool of lookups stuck on it fails further ones at once.

The silent name server is a lookup function blocked on an event (handed to the resolver as
``socket.getaddrinfo`` would be): no packet leaves the machine. The real ``getaddrinfo``
is used for ``localhost`` (from /etc/hosts) and IP literals only (one of them behind a
name the test maps to it).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from processing_support import receiver

from pps.acl.remote import ask
from pps.platform.name_lookup import Resolver
from pps.platform.ssrf import (
    NotResolvedInTime,
    RequestFailed,
    check_url,
    parse_target,
    post,
    resolve,
)


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
    assert silent.asked == ["a.invalid", "b.invalid"]
    silent.release.set()
    eventually(lambda: silent.answered == 2)

    def resolves() -> list[Any] | None:
        try:
            return resolve(parse_target("http://c.invalid/"), True, timeout=5, resolver=resolver)
        except NotResolvedInTime:  # the stuck threads are handing their slots back
            return None

    assert eventually(resolves) == [ipaddress.ip_address("127.0.0.1")]


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
