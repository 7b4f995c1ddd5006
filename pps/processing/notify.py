"""State-change notifications: POST a processing's status JSON to the shop's URL.

The URL comes from the shop, so where it may point is decided by :mod:`pps.platform.ssrf`,
the one rule pps applies to every URL a shop gives (notifications, webhooks, the remote
ACL): http(s) only, every special-purpose address refused (loopback and private ones only
with ``PPS_NOTIFY_ALLOW_PRIVATE`` or for the client's allowed hosts), checked again at every
send and connected to the checked address, no redirects, no proxies.

Delivery is bounded: one deadline per attempt (the whole request, not each read), at most
``attempts`` tries per snapshot with exponential backoff, and while retrying, a newer
snapshot replaces an older one (the newest state is what the receiver needs). Nothing here
can keep a job from finishing.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Collection
from typing import Any, Protocol

from pps.platform.ssrf import (
    ForbiddenTarget,
    RequestFailed,
    Target,
    address_problem,
    check_url,
    parse_target,
    post,
    resolve,
)

__all__ = [
    "DeliveryFailed",
    "ForbiddenTarget",
    "Notifier",
    "NullNotifier",
    "Target",
    "ThreadNotifier",
    "address_problem",
    "check_notify_url",
    "deliver",
    "drain_time",
    "open_notifier",
    "parse_target",
    "resolve",
]

log = logging.getLogger("pps.processing.notify")

#: Cap of one backoff pause, whatever ``backoff`` and the attempt number say.
MAX_PAUSE = 60.0
USER_AGENT = "pps-notify/1"
PURPOSE = "Notifications"


class DeliveryFailed(Exception):
    """One attempt failed; ``retry`` says whether trying again could help."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


def check_notify_url(
    url: str, *, allow_private: bool, allowed_hosts: Collection[str] = ()
) -> Target:
    """Validate a ``stateChangedNotifyUrl`` at submission; :class:`ForbiddenTarget` if refused.

    ``allowed_hosts``: the client's intranet hosts (``pps client allow-host``), judged as
    with ``allow_private``.
    """
    return check_url(url, allow_private=allow_private, allowed_hosts=allowed_hosts, purpose=PURPOSE)


def retryable(status: int) -> bool:
    """Whether an answer with this (non-2xx) status is worth another try."""
    return status >= 500 or status in (408, 425, 429)


def deliver(
    url: str,
    payload: dict[str, Any],
    *,
    timeout: float,
    allow_private: bool,
    allowed_hosts: Collection[str] = (),
) -> int:
    """POST ``payload`` as JSON to ``url`` once; the 2xx status, or :class:`DeliveryFailed`.

    ``timeout`` bounds the whole request (connect, send and every read together).
    """
    body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "Accept": "*/*",
        "User-Agent": USER_AGENT,
        "Connection": "close",
    }
    try:
        response = post(
            url,
            body,
            headers,
            deadline=timeout,
            allow_private=allow_private,
            allowed_hosts=allowed_hosts,
            purpose=PURPOSE,
        )
    except ForbiddenTarget as exc:
        # A name can resolve elsewhere later, but retrying a refused target is never urgent.
        raise DeliveryFailed(f"refused: {exc}", retry=False) from None
    except RequestFailed as exc:
        raise DeliveryFailed(str(exc), retry=True) from None
    status = response.status
    if 200 <= status < 300:
        return status
    if 300 <= status < 400:
        raise DeliveryFailed(f"answered {status}; redirects are not followed", retry=False)
    raise DeliveryFailed(f"answered {status}", retry=retryable(status))


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
    # The timeout bounds a whole attempt.
    return max(1, attempts) * timeout + pauses + 1.0


def open_notifier(
    url: str | None,
    *,
    timeout: float,
    attempts: int,
    backoff: float,
    allow_private: bool,
    allowed_hosts: Collection[str] = (),
    label: str = "",
) -> NullNotifier | ThreadNotifier:
    """A notifier for ``url``; a :class:`NullNotifier` when there is none."""
    if not url:
        return NullNotifier()
    notify_url = url

    def send(payload: dict[str, Any]) -> int:
        return deliver(
            notify_url,
            payload,
            timeout=timeout,
            allow_private=allow_private,
            allowed_hosts=allowed_hosts,
        )

    return ThreadNotifier(send, attempts=attempts, backoff=backoff, label=label)
