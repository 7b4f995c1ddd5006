"""State-change notifications: POST a processing's status JSON to the shop's URL.

The URL comes from the shop, so pps must not become a way to reach what only pps can
reach (server-side request forgery):

* only ``http`` and ``https``, no user name or password in the URL;
* every address the host resolves to must be public: loopback, private, shared (CGNAT) and
  unique-local addresses are refused unless ``PPS_NOTIFY_ALLOW_PRIVATE`` is on, and
  link-local (cloud metadata at 169.254.169.254), multicast, unspecified and reserved
  addresses are refused always;
* the check runs at submission *and again at every send*, and the connection goes to the
  very address that was checked (the Host header and TLS name stay the URL's host), so a
  DNS answer that changes between check and connect (DNS rebinding) cannot redirect it;
* redirects are never followed: ``http.client`` follows none, and a 3xx counts as failure;
* proxies from the environment are ignored (they would hide the real destination).

Delivery is bounded: a timeout per attempt, at most ``attempts`` tries per snapshot with
exponential backoff, and while retrying, a newer snapshot replaces an older one (the newest
state is what the receiver needs). Nothing here can keep a job from finishing.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import logging
import queue
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import SplitResult, urlsplit

__all__ = [
    "DeliveryFailed",
    "ForbiddenTarget",
    "Notifier",
    "NullNotifier",
    "ThreadNotifier",
    "address_problem",
    "check_notify_url",
    "deliver",
    "drain_time",
    "open_notifier",
]

log = logging.getLogger("pps.processing.notify")

MAX_URL_LENGTH = 2000
#: Cap of one backoff pause, whatever ``backoff`` and the attempt number say.
MAX_PAUSE = 60.0
USER_AGENT = "pps-notify/1"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class ForbiddenTarget(ValueError):
    """The URL may not be notified; the message says why, for the shop's developer."""


class DeliveryFailed(Exception):
    """One attempt failed; ``retry`` says whether trying again could help."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str


def address_problem(address: IPAddress, allow_private: bool) -> str | None:
    """Why ``address`` may not be connected to, or None when it may."""
    if isinstance(address, ipaddress.IPv6Address):
        # An IPv4 address wrapped in IPv6 is judged as that IPv4 address.
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address.teredo is not None:
            embedded = address.teredo[1]
        if embedded is not None:
            return address_problem(embedded, allow_private)
    if address.is_unspecified:
        return "is unspecified"
    if address.is_multicast:
        return "is a multicast address"
    if address.is_link_local:
        return "is link-local"
    if address.is_loopback:
        return None if allow_private else "is a loopback address"
    if address.is_private or not address.is_global:
        if address.is_reserved:
            return "is reserved"
        return None if allow_private else "is a private address"
    if address.is_reserved:
        return "is reserved"
    return None


def parse_target(url: str) -> Target:
    """The parts of a notify URL, or :class:`ForbiddenTarget` for a URL of the wrong shape."""
    if not isinstance(url, str) or not url:
        raise ForbiddenTarget("Must be an http:// or https:// URL.")
    if len(url) > MAX_URL_LENGTH:
        raise ForbiddenTarget(f"Must be at most {MAX_URL_LENGTH} characters long.")
    if any(ord(char) <= 0x20 or ord(char) == 0x7F for char in url):
        raise ForbiddenTarget("Must not contain spaces or control characters.")
    try:
        parts: SplitResult = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ForbiddenTarget(f"Is not a valid URL: {exc}.") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ForbiddenTarget("Must be an http:// or https:// URL.")
    if "@" in parts.netloc:
        raise ForbiddenTarget("Must not contain a user name or password.")
    host = parts.hostname
    if not host:
        raise ForbiddenTarget("Must name a host.")
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return Target(scheme, host, port or (443 if scheme == "https" else 80), path)


def resolve(target: Target, allow_private: bool) -> list[IPAddress]:
    """Every address of the target's host, each checked; :class:`ForbiddenTarget` if any fails.

    An IP literal is judged without any lookup. For a name, *all* its addresses must be
    allowed: a name with one public and one private address is refused, not half-trusted.
    """
    try:
        literal: IPAddress | None = ipaddress.ip_address(target.host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = socket.getaddrinfo(
                target.host, target.port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
            )
        except (OSError, UnicodeError) as exc:
            raise ForbiddenTarget(f"The host {target.host!r} cannot be resolved: {exc}.") from None
        addresses = []
        for info in infos:
            # Drop an IPv6 zone ("fe80::1%eth0"); such addresses are link-local anyway.
            text = str(info[4][0]).split("%", 1)[0]
            address = ipaddress.ip_address(text)
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise ForbiddenTarget(f"The host {target.host!r} has no address.")
    for address in addresses:
        problem = address_problem(address, allow_private)
        if problem is not None:
            what = "" if literal is not None else f"{target.host!r} resolves to {address}, which "
            raise ForbiddenTarget(
                f"Notifications are not sent there: {what or f'{address} '}{problem}."
            )
    return addresses


def check_notify_url(url: str, *, allow_private: bool) -> Target:
    """Validate a ``stateChangedNotifyUrl`` at submission; :class:`ForbiddenTarget` if refused."""
    target = parse_target(url)
    resolve(target, allow_private)
    return target


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to one checked address while the Host header names the URL's host."""

    def __init__(self, host: str, port: int, address: IPAddress, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((str(self._address), self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """As :class:`_PinnedHTTPConnection`, with TLS verified against the URL's host name."""

    def __init__(self, host: str, port: int, address: IPAddress, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._address = address

    def connect(self) -> None:
        raw = socket.create_connection((str(self._address), self.port), self.timeout)
        try:
            self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)
        except BaseException:
            raw.close()
            raise


def deliver(url: str, payload: dict[str, Any], *, timeout: float, allow_private: bool) -> int:
    """POST ``payload`` as JSON to ``url`` once; the 2xx status, or :class:`DeliveryFailed`."""
    try:
        target = parse_target(url)
        addresses = resolve(target, allow_private)
    except ForbiddenTarget as exc:
        # A name can resolve elsewhere later, but retrying a refused target is never urgent.
        raise DeliveryFailed(f"refused: {exc}", retry=False) from None
    body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "Accept": "*/*",
        "User-Agent": USER_AGENT,
        "Connection": "close",
    }
    connection_class = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
    connection = connection_class(target.host, target.port, addresses[0], timeout)
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(64 * 1024)  # the body is not used; read a little so the server is done
        status = response.status
    except (OSError, http.client.HTTPException) as exc:
        raise DeliveryFailed(f"{type(exc).__name__}: {exc}", retry=True) from None
    finally:
        connection.close()
    if 200 <= status < 300:
        return status
    if 300 <= status < 400:
        raise DeliveryFailed(f"answered {status}; redirects are not followed", retry=False)
    retry = status >= 500 or status in (408, 425, 429)
    raise DeliveryFailed(f"answered {status}", retry=retry)


class Notifier(Protocol):
    def send(self, payload: dict[str, Any]) -> None:
        """Queue ``payload`` for delivery; never blocks on the network."""
        ...

    def close(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for queued deliveries; True when all are done."""
        ...


class NullNotifier:
    """For processings without a ``stateChangedNotifyUrl``."""

    def send(self, payload: dict[str, Any]) -> None:
        return None

    def close(self, timeout: float | None = None) -> bool:
        return True


Sender = Callable[[dict[str, Any]], int]
_STOP = object()


class ThreadNotifier:
    """Delivers snapshots in order from a thread of its own, so rendering never waits.

    Each snapshot gets up to ``attempts`` tries, pausing ``backoff * 2**n`` seconds between
    them. While a snapshot is being retried, a newer one that has arrived replaces it: a
    receiver that is down gets the newest state when it comes back, not a backlog.
    """

    def __init__(
        self,
        sender: Sender,
        *,
        attempts: int,
        backoff: float,
        label: str = "",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._sender = sender
        self._attempts = max(1, attempts)
        self._backoff = backoff
        self._label = label
        self._sleep = sleep
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"pps-notify-{label}", daemon=True)
        self._thread.start()
        self.delivered = 0
        self.failed = 0

    def send(self, payload: dict[str, Any]) -> None:
        self._queue.put(payload)

    def close(self, timeout: float | None = None) -> bool:
        self._queue.put(_STOP)
        self._thread.join(timeout)
        alive = self._thread.is_alive()
        if alive:
            log.warning("notifications for %s still being retried; giving up", self._label)
        return not alive

    def _newest(self, current: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """The newest queued snapshot (or ``current``), and whether the stop mark was seen."""
        stop = False
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return current, stop
            if item is _STOP:
                stop = True
            else:
                current = item

    def _run(self) -> None:
        stop = False
        while not stop:
            item = self._queue.get()
            if item is _STOP:
                return
            payload: dict[str, Any] = item
            attempt = 1
            while True:
                try:
                    self._sender(payload)
                except DeliveryFailed as exc:
                    log.warning(
                        "notification for %s failed (attempt %d of %d): %s",
                        self._label,
                        attempt,
                        self._attempts,
                        exc,
                    )
                    if not exc.retry or attempt >= self._attempts:
                        self.failed += 1
                        break
                    self._sleep(min(MAX_PAUSE, self._backoff * 2.0 ** (attempt - 1)))
                    newer, seen_stop = self._newest(payload)
                    stop = stop or seen_stop
                    if newer is not payload:
                        payload, attempt = newer, 1
                    else:
                        attempt += 1
                    continue
                except Exception:  # a bug must not kill the thread silently
                    log.exception("notification for %s failed unexpectedly", self._label)
                    self.failed += 1
                    break
                self.delivered += 1
                break
            if stop:
                return


def drain_time(*, timeout: float, attempts: int, backoff: float) -> float:
    """Seconds the last snapshot may need: every attempt timing out, every pause taken."""
    pauses = sum(min(MAX_PAUSE, backoff * 2.0**n) for n in range(max(1, attempts) - 1))
    # A timeout applies to connect and to each read; allow two of them per attempt.
    return max(1, attempts) * 2 * timeout + pauses + 1.0


def open_notifier(
    url: str | None,
    *,
    timeout: float,
    attempts: int,
    backoff: float,
    allow_private: bool,
    label: str = "",
) -> NullNotifier | ThreadNotifier:
    """A notifier for ``url``; a :class:`NullNotifier` when there is none."""
    if not url:
        return NullNotifier()
    notify_url = url

    def send(payload: dict[str, Any]) -> int:
        return deliver(notify_url, payload, timeout=timeout, allow_private=allow_private)

    return ThreadNotifier(send, attempts=attempts, backoff=backoff, label=label)
