"""Schemas of ``/api-ext/pdf-processing`` (batch print files); see :mod:`pps.api.schemas`.

``ProcessingCreatedOut`` reads a processing record; ``ProcessingOut`` dumps the JSON of
``Processing.status()``, which is also what the state-change notification POSTs.
"""

from __future__ import annotations

from marshmallow import fields, validate

from pps.api.schemas import OPTIONAL_HTTP_URL, Input, Output
from pps.platform.repository.processing import STATES
from pps.platform.ssrf import ADDRESS_RULES

MAX_DRAFTS = 100


class ProcessingCreateInput(Input):
    draftIds = fields.List(
        # 64: the longest draft hash pps stores; a longer one is malformed, not unknown.
        fields.String(validate=validate.Length(min=1, max=64)),
        required=True,
        validate=validate.Length(
            min=1, max=MAX_DRAFTS, error="Send from {min} to {max} draft ids."
        ),
        metadata={
            "description": f"Hashes of the client's drafts, 1 to {MAX_DRAFTS}; rendered in "
            "this order. A hash listed twice is rendered once."
        },
    )
    stateChangedNotifyUrl = fields.String(
        allow_none=True,
        load_default=None,
        metadata={
            **OPTIONAL_HTTP_URL,
            "description": 'Optional http(s) URL (`""` or null: none). On every state '
            "change pps POSTs the same JSON as GET /api-ext/pdf-processing/{processingId} "
            "there (Content-Type: application/json), with a timeout and a few retries with "
            "backoff; redirects are not followed. " + ADDRESS_RULES,
        },
    )


class ProcessingCreatedOut(Output):
    processingId = fields.String(
        attribute="processing_id",
        required=True,
        metadata={"description": "32 hex digits.", "pattern": "^[0-9a-f]{32}$"},
    )


class DraftStateOut(Output):
    draftId = fields.String(required=True, metadata={"description": "The draft's hash."})
    state = fields.String(
        required=True,
        metadata={
            "enum": list(STATES),
            "description": "pending -> in-process -> processed or failed.",
        },
    )
    message = fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "Why the draft failed; null otherwise."},
    )


class ProcessingOut(Output):
    processingId = fields.String(required=True)
    draftStates = fields.List(fields.Nested(DraftStateOut), required=True)
