"""``/api-ext/webhook``: the calling client's webhooks (``src/Client/WebHook`` of the SDK)."""

from __future__ import annotations

from typing import Any

from flask import Response

from pps.api import bp, current_client, resource, services
from pps.api.schemas import PageArgs
from pps.platform.errors import NotFound, ValidationFailed
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

WEBHOOK_NOT_FOUND = "No webhook with this identifier exists for this client."


@blp.post("/webhook")
@blp.body(WebhookInput)
@blp.response(201, WebhookCreatedResponse)
def create_webhook(data: dict[str, Any]) -> dict[str, Any]:
    """Subscribe a URL to an event

    Every occurrence of `event` is POSTed to `url` as `{type, timestamp, data}`, signed as
    Standard Webhooks says (`webhook-id`, `webhook-timestamp`, `webhook-signature`) with
    the client's secret, which the answer carries as `secret` only the first time (the
    client's first webhook). Retried with backoff while the receiver fails; `status`
    follows the delivery health. A URL that may not be called is a 422 naming `url`.
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
        )
    except ForbiddenTarget as exc:
        raise ValidationFailed(errors={"url": [str(exc)]}) from None
    created = svc.integrations.create_webhook(client, data["event"], data["url"])
    webhook, secret = created.webhook, created.secret
    out: dict[str, Any] = {
        "identifier": webhook.identifier,
        "event": webhook.event,
        "url": webhook.url,
        "status": webhook.status,
    }
    if secret is not None:
        out["secret"] = secret
    return {"data": out}


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
