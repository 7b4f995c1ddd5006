"""Schemas of ``/api-ext/review`` (proof approval); see :mod:`pps.api.schemas`."""

from __future__ import annotations

from marshmallow import fields, validate

from pps.api.schemas import OPTIONAL_HTTP_URL, Flag, Input, Output
from pps.platform.ssrf import ADDRESS_RULES
from pps.reviews.model import MAX_REVIEWERS

_URL_RULES = (
    "pps POSTs JSON there (Content-Type: application/json) with a timeout and a few "
    "retries with backoff; redirects are not followed. " + ADDRESS_RULES
)


class ReviewCreateInput(Input):
    draftId = fields.String(
        required=True,
        validate=validate.Length(min=1),
        metadata={"description": "The hash of one of the client's drafts (else 404)."},
    )
    user = fields.List(
        fields.String(validate=validate.Length(min=1)),
        load_default=list,
        validate=validate.Length(max=MAX_REVIEWERS),
        metadata={
            "description": "Identifiers of the client's users who review the proof (422 "
            f"naming any other), at most {MAX_REVIEWERS}; each logs in through /auth with "
            "`redirect` = `{base}/review/{reviewId}`. May be empty: add reviewers later."
        },
    )
    closeCallbackURL = fields.String(
        allow_none=True,
        load_default=None,
        metadata={
            **OPTIONAL_HTTP_URL,
            "description": "Optional http(s) URL told when the review closes (every reviewer "
            "approved, one rejected, or close-review): the JSON of the review's state, "
            "`{reviewId, draftId, state, closedAt, reviewers: [{userIdentifier, decision, "
            "comment, draftVersion, decidedAt}]}`. " + _URL_RULES,
        },
    )
    remoteAcl = Flag(
        load_default=False,
        metadata={
            "description": "Must be false (or absent): this server does not ask a remote "
            "ACL about reviews, so `true` is a 422 rather than silently ignored."
        },
    )


class ReviewUserInput(Input):
    userIdentifier = fields.String(
        required=True,
        validate=validate.Length(min=1),
        metadata={"description": "A user of the client (else 422)."},
    )


class ReviewCloseInput(Input):
    """No fields: the SDK sends no body. Declared so a body that is sent anyway is read
    like every other one (malformed JSON, lone surrogates: 400/422, nothing closed)."""


class ReviewPdfInput(Input):
    notifyCallbackURL = fields.String(
        allow_none=True,
        load_default=None,
        metadata={
            **OPTIONAL_HTTP_URL,
            "description": "Optional http(s) URL told when the proof PDF is ready: the "
            "review's state as for closeCallbackURL plus `pdfUrl`, the file endpoint to "
            f"fetch it from (add `?jwt=`). {_URL_RULES}",
        },
    )


class ReviewCreatedOut(Output):
    reviewId = fields.String(
        attribute="review_id",
        required=True,
        metadata={"description": "32 hex digits.", "pattern": "^[0-9a-f]{32}$"},
    )


class ReviewCreatedResponse(Output):
    data = fields.Nested(ReviewCreatedOut, required=True)
