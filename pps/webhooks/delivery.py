"""One webhook message, signed and sent once; the answer judged.

Signed as Standard Webhooks says (with the ``standardwebhooks`` package, the reference
implementation receivers verify with): ``webhook-id`` is the message id (the same on
every retry, so receivers can drop duplicates), ``webhook-timestamp`` the attempt's Unix
time, ``webhook-signature`` ``v1,<base64 HMAC-SHA256 of id.timestamp.body>`` with the
client's secret. Sent through :func:`pps.platform.ssrf.post`: the URL is checked again now,
the connection pinned to the checked address, the whole request within one deadline.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime

from standardwebhooks import Webhook

from pps.platform.repository.integrations import Delivery
from pps.platform.ssrf import ForbiddenTarget, RequestFailed, post

__all__ = ["Outcome", "body_of", "send", "signed_headers"]

USER_AGENT = "pps-webhooks/1"
PURPOSE = "Webhooks"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    retry: bool
    detail: str


def body_of(delivery: Delivery) -> str:
    """The Standard Webhooks envelope, as sent (and signed)."""
    envelope = {
        "type": delivery.event,
        "timestamp": delivery.created_at.astimezone(UTC).isoformat(),
        "data": delivery.payload,
    }
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)


def signed_headers(secret: str, message_id: str, body: str, now: datetime) -> dict[str, str]:
    signature = Webhook(secret).sign(message_id, now, body)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
        "Content-Type": "application/json",
        "Accept": "*/*",
        "User-Agent": USER_AGENT,
        "Connection": "close",
    }


def send(
    delivery: Delivery,
    secret: str,
    *,
    deadline: float,
    allow_private: bool,
    allowed_hosts: Collection[str] = (),
) -> Outcome:
    """Send ``delivery`` once. A 2xx is success; a refused address is not retried (the
    message is given up, the webhook marked broken); anything else is retried."""
    body = body_of(delivery)
    headers = signed_headers(secret, delivery.identifier, body, datetime.now(UTC))
    try:
        response = post(
            delivery.url,
            body.encode("utf-8"),
            headers,
            deadline=deadline,
            allow_private=allow_private,
            allowed_hosts=allowed_hosts,
            purpose=PURPOSE,
        )
    except ForbiddenTarget as exc:
        return Outcome(False, False, f"refused: {exc}")
    except RequestFailed as exc:
        return Outcome(False, True, str(exc))
    if 200 <= response.status < 300:
        return Outcome(True, False, f"answered {response.status}")
    if 300 <= response.status < 400:
        return Outcome(False, True, f"answered {response.status}; redirects are not followed")
    return Outcome(False, True, f"answered {response.status}")
