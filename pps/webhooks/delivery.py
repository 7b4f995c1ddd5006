"""One webhook message, signed and sent once; the answer judged.

Signed as Standard Webhooks says (with the ``standardwebhooks`` package, the reference
implementation receivers verify with): ``webhook-id`` is the message id (the same on
every retry, so receivers can drop duplicates), ``webhook-timestamp`` the attempt's Unix
time, ``webhook-signature`` ``v1,<base64 HMAC-SHA256 of id.timestamp.body>`` with the
client's secret. A notification to a URL the shop gave with a call (``stateChangedNotifyUrl``,
``closeCallbackURL``, ``notifyCallbackURL``) goes the same way, but its body is the JSON the
reference product POSTs there (no envelope), it is signed only when the client has a webhook
secret, and only answers worth another try are retried (5xx, 408, 425, 429: a redirect or
another 4xx is final, as for the reference). Sent through :func:`pps.platform.ssrf.post`:
the URL is checked again now, the connection pinned to the checked address, the whole
request within one deadline.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime

from standardwebhooks import Webhook

from pps.platform.name_lookup import Resolver
from pps.platform.repository.integrations import Delivery
from pps.platform.ssrf import ForbiddenTarget, RequestFailed, post

__all__ = ["Outcome", "body_of", "retryable", "send", "signed_headers"]

USER_AGENT = "pps-webhooks/1"
NOTIFY_USER_AGENT = "pps-notify/1"
PURPOSE = "Webhooks"
NOTIFY_PURPOSE = "Notifications"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    retry: bool
    detail: str


def body_of(delivery: Delivery) -> str:
    """The Standard Webhooks envelope, as sent (and signed); a notification's payload as is."""
    if delivery.is_notification:
        return json.dumps(delivery.payload, separators=(",", ":"), ensure_ascii=False)
    envelope = {
        "type": delivery.event,
        "timestamp": delivery.created_at.astimezone(UTC).isoformat(),
        "data": delivery.payload,
    }
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)


def signed_headers(
    secret: str | None,
    message_id: str,
    body: str,
    now: datetime,
    user_agent: str = USER_AGENT,
) -> dict[str, str]:
    headers = {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "Content-Type": "application/json",
        "Accept": "*/*",
        "User-Agent": user_agent,
        "Connection": "close",
    }
    if secret is not None:
        headers["webhook-signature"] = Webhook(secret).sign(message_id, now, body)
    return headers


def retryable(status: int) -> bool:
    """Whether a notification's (non-2xx) answer is worth another try."""
    return status >= 500 or status in (408, 425, 429)


def send(
    delivery: Delivery,
    secret: str | None,
    *,
    deadline: float,
    allow_private: bool,
    allowed_hosts: Collection[str] = (),
    resolver: Resolver | None = None,
) -> Outcome:
    """Send ``delivery`` once. A 2xx is success; a refused address is not retried (the
    message is given up, the webhook marked broken); anything else is retried, a host
    name that did not resolve included (the shop's DNS may be back by the next attempt).
    ``resolver``: where host names are looked up (the process's lookup threads unless
    given)."""
    body = body_of(delivery)
    notification = delivery.is_notification
    agent = NOTIFY_USER_AGENT if notification else USER_AGENT
    headers = signed_headers(secret, delivery.identifier, body, datetime.now(UTC), agent)
    try:
        response = post(
            delivery.url,
            body.encode("utf-8"),
            headers,
            deadline=deadline,
            allow_private=allow_private,
            allowed_hosts=allowed_hosts,
            purpose=NOTIFY_PURPOSE if notification else PURPOSE,
            resolver=resolver,
        )
    except ForbiddenTarget as exc:
        return Outcome(False, False, f"refused: {exc}")
    except RequestFailed as exc:
        return Outcome(False, True, str(exc))
    if 200 <= response.status < 300:
        return Outcome(True, False, f"answered {response.status}")
    if notification:
        if 300 <= response.status < 400:
            return Outcome(False, False, f"answered {response.status}; redirects are not followed")
        return Outcome(False, retryable(response.status), f"answered {response.status}")
    if 300 <= response.status < 400:
        return Outcome(False, True, f"answered {response.status}; redirects are not followed")
    return Outcome(False, True, f"answered {response.status}")
