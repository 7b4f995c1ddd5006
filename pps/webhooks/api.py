"""``/api-ext/webhook``: the calling client's webhooks (``src/Client/WebHook`` of the SDK)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from flask import Response

from pps.api import bp, current_client, resource, services
from pps.api.schemas import PageArgs
from pps.platform.errors import NotFound, ValidationFailed
from pps.platform.repository.integrations import WebhookLimitReached
from pps.platform.ssrf import ForbiddenTarget, check_url
from pps.web.common import no_content
from pps.webhooks.delivery import PURPOSE
from pps.webhooks.schemas import (
    WebhookCreatedResponse,
    WebhookInput,
    WebhookList,
    WebhookResponse,
)

blp = resource("webhooks", "Webhooks")
F = TypeVar("F", bound=Callable[..., Any])

WEBHOOK_NOT_FOUND = "No webhook with this identifier exists for this client."
TOO_MANY_WEBHOOKS = (
    "This client has {limit} webhooks, the most it may have: delete one before adding another."
)

#: Documents the answer to a subscription the client has already (the view returns it).
_ALREADY_SUBSCRIBED: Callable[[F], F] = blp.alt_response(
    200,
    schema=WebhookResponse,
    success=True,
    description="The client has a webhook of this `event` and `url` already: that one, "
    "unchanged (no second subscription is made).",
)


@blp.post("/webhook")
@blp.body(WebhookInput)
@blp.response(201, WebhookCreatedResponse)
@_ALREADY_SUBSCRIBED
def create_webhook(data: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Subscribe a URL to an event

    Every occurrence of `event` is POSTed to `url` as `{type, timestamp, data}`, signed as
    Standard Webhooks says (`webhook-id`, `webhook-timestamp`, `webhook-signature`) with
    the client's secret, which the answer carries as `secret` only the first time (the
    client's first webhook). Retried with backoff while the receiver fails; `status`
    follows the delivery health. A URL that may not be called is a 422 naming `url`.

    Creating is idempotent: the same `event` and `url` again answer 200 with the webhook
    made the first time (its `identifier`), so a retried request never doubles the
    deliveries. A client has at most `PPS_WEBHOOK_LIMIT` webhooks (20 unless the operator
    set another number); one more is a 422 naming the limit (delete one first).
    """
    client = current_client().identifier
    svc = services()
    hosts = svc.integrations.settings(client).allowed_hosts
    try:
        check_url(
            data["url"],
            allow_private=svc.settings.notify_allow_private,
            allowed_hosts=hosts,
            purpose=PURPOSE,
            # A web request waits on the name lookup: the notification's short deadline.
            timeout=svc.settings.notify_timeout,
        )
    except ForbiddenTarget as exc:
        raise ValidationFailed(errors={"url": [str(exc)]}) from None
    limit = svc.settings.webhook_limit
    try:
        created = svc.integrations.create_webhook(client, data["event"], data["url"], limit=limit)
    except WebhookLimitReached:
        message = TOO_MANY_WEBHOOKS.format(limit=limit)
        raise ValidationFailed(message, errors={"url": [message]}) from None
    webhook, secret = created.webhook, created.secret
    out: dict[str, Any] = {
        "identifier": webhook.identifier,
        "event": webhook.event,
        "url": webhook.url,
        "status": webhook.status,
    }
    if secret is not None:
        out["secret"] = secret
    return {"data": out}, 201 if created.created else 200


@blp.get("/webhook")
@blp.query(PageArgs)
@blp.response(200, WebhookList)
def list_webhooks(args: dict[str, Any]) -> dict[str, Any]:
    """List the client's webhooks"""
    page = services().integrations.list_webhooks(
        current_client().identifier, args["page"], args["perPage"]
    )
    return {"data": page.items, "meta": page}


@blp.get("/webhook/<identifier>")
@blp.response(200, WebhookResponse)
@blp.errors(404)
def show_webhook(identifier: str) -> dict[str, Any]:
    """Show a webhook and its delivery health"""
    webhook = services().integrations.get_webhook(current_client().identifier, identifier)
    if webhook is None:
        raise NotFound(WEBHOOK_NOT_FOUND)
    return {"data": webhook}


@blp.delete("/webhook/<identifier>")
@blp.response(204, description="Deleted; the body is empty.")
@blp.errors(404)
def delete_webhook(identifier: str) -> Response:
    """Delete a webhook; its pending deliveries are dropped"""
    if not services().integrations.delete_webhook(current_client().identifier, identifier):
        raise NotFound(WEBHOOK_NOT_FOUND)
    return no_content()


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource
