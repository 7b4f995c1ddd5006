"""State-change notifications: POST a processing's status JSON to the shop's URL.

The URL comes from the shop, so where it may point is decided by :mod:`pps.platform.ssrf`,
the one rule pps applies to every URL a shop gives (notifications, webhooks, the remote
ACL): http(s) only, every special-purpose address refused (loopback and private ones only
with ``PPS_NOTIFY_ALLOW_PRIVATE`` or for the client's allowed hosts), checked again at every
send and connected to the checked address, no redirects, no proxies.

Delivery goes through the webhook outbox (:mod:`pps.webhooks.notifications`): durable,
signed, retried with backoff, bounded per client, and a newer snapshot of one processing
replaces an older one still waiting. Nothing here can keep a job from finishing.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from pps.platform.ssrf import (
    ForbiddenTarget,
    Target,
    address_problem,
    check_url,
    parse_target,
    resolve,
)

__all__ = [
    "ForbiddenTarget",
    "Notifier",
    "NullNotifier",
    "Target",
    "address_problem",
    "check_notify_url",
    "parse_target",
    "resolve",
]


PURPOSE = "Notifications"


def check_notify_url(
    url: str, *, allow_private: bool, timeout: float, allowed_hosts: Collection[str] = ()
) -> Target:
    """Validate a ``stateChangedNotifyUrl`` at submission; :class:`ForbiddenTarget` if refused.

    ``allowed_hosts``: the client's intranet hosts (``pps client allow-host``), judged as
    with ``allow_private``. ``timeout``: the most the host's name lookup is waited for (a
    web request waits on it; ``PPS_NOTIFY_TIMEOUT`` in pps's views).
    """
    return check_url(
        url,
        allow_private=allow_private,
        allowed_hosts=allowed_hosts,
        purpose=PURPOSE,
        timeout=timeout,
    )


class Notifier(Protocol):
    def send(self, payload: dict[str, Any], *, final: bool = False) -> None:
        """Queue ``payload`` for delivery; never blocks on the network. ``final``: the
        processing's last state (every draft final), queued once however often sent."""
        ...

    def close(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for queued deliveries; True when all are done."""
        ...


class NullNotifier:
    """For processings without a ``stateChangedNotifyUrl``."""

    def send(self, payload: dict[str, Any], *, final: bool = False) -> None:
        return None

    def close(self, timeout: float | None = None) -> bool:
        return True
