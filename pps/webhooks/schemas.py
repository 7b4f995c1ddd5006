"""Schemas of ``/api-ext/webhook``; see :mod:`pps.api.schemas`.

The SDK's ``WebHook::fromArray`` reads ``identifier``, ``event``, ``url`` and ``status`` (an
int: 0 operational, 1 degraded, 2 broken) from ``data``.
"""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from pps.api.schemas import HTTP_URL, Input, MetaOut, Output, one
from pps.platform.ssrf import ADDRESS_RULES, MAX_URL_LENGTH
from pps.webhooks.events import EVENTS


class WebhookInput(Input):
    event = fields.String(
        required=True,
        validate=validate.OneOf(sorted(EVENTS), error="Must be one of: {choices}."),
        metadata={
            "description": "The event: " + "; ".join(f"`{k}`: {v}" for k, v in EVENTS.items())
        },
    )
    url = fields.String(
        required=True,
        validate=validate.Length(min=1, max=MAX_URL_LENGTH),
        metadata={
            **HTTP_URL,
            "description": "http(s) URL that receives the events. The same rules as for "
            "`stateChangedNotifyUrl`: no user or password, redirects not followed. "
            + ADDRESS_RULES,
        },
    )


class WebhookOut(Output):
    identifier = fields.String(required=True)
    event = fields.String(required=True)
    url = fields.String(required=True)
    status = fields.Integer(
        required=True,
        metadata={
            "description": "Delivery health: 0 operational, 1 degraded (an attempt failed, "
            "being retried), 2 broken (a message was given up). A success makes it 0.",
            "enum": [0, 1, 2],
        },
    )


class WebhookCreatedOut(WebhookOut):
    secret = fields.String(
        metadata={
            "description": "The client's signing secret (`whsec_...`), shown only in the "
            "answer that created it: the client's first webhook. Verify deliveries with it "
            "(Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`). "
            "An operator makes a new one with `pps client rotate-webhook-secret`."
        }
    )


WebhookResponse = one(WebhookOut)
WebhookCreatedResponse = Schema.from_dict(
    {"data": fields.Nested(WebhookCreatedOut, required=True)}, name="WebhookCreatedResponse"
)
WebhookList = Schema.from_dict(
    {
        "data": fields.List(fields.Nested(WebhookOut), required=True),
        "meta": fields.Nested(MetaOut, required=True),
    },
    name="WebhookList",
)
