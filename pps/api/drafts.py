"""``/api-ext/draft``: drafts of the calling client's templates for its users."""

from __future__ import annotations

from flask import request
from flask.typing import ResponseReturnValue

from pps.api import bp, current_client, no_content, ok, present, services
from pps.api.body import PAGE_PARAMETERS, load, page_args
from pps.api.schemas import (
    DraftClaimInput,
    DraftCreateInput,
    DraftOut,
    DraftUpdateInput,
    many,
    one,
)
from pps.errors import NotFound, ValidationFailed
from pps.file_sweep import delete_draft_files
from pps.models import Draft
from pps.openapi import operation

DRAFT_NOT_FOUND = "No draft with this hash exists for this client."


def _found(record: Draft | None) -> Draft:
    if record is None:
        raise NotFound(DRAFT_NOT_FOUND)
    return record


@bp.post("/draft")
@operation(
    tags=["Draft"],
    summary="Create a draft of a template for a user",
    description="`apiDefaultValues` (DataKey to value) pre-fills the draft in the editor. "
    "The user identifier may be sent as `userIdentifier` or `user_identifier`.",
    body=DraftCreateInput,
    response=one(DraftOut),
    status=201,
)
def create_draft() -> ResponseReturnValue:
    data = load(DraftCreateInput())
    client = current_client().identifier
    repository = services().repository
    errors: dict[str, list[str]] = {}
    if repository.get_user(client, data["userIdentifier"]) is None:
        errors["userIdentifier"] = ["No user with this identifier exists for this client."]
    if repository.get_template(client, data["templateIdentifier"]) is None:
        errors["templateIdentifier"] = ["No template with this identifier exists for this client."]
    if errors:
        raise ValidationFailed(errors=errors)
    record = repository.create_draft(
        client,
        user_identifier=data["userIdentifier"],
        template_identifier=data["templateIdentifier"],
        intent=data["intent"],
        api_default_values=data["apiDefaultValues"] or {},
        custom_attributes=data["customAttributes"] or {},
    )
    if record is None:  # the user or template vanished between the checks and the insert
        raise ValidationFailed(
            errors={"userIdentifier": ["The user or template no longer exists."]}
        )
    return ok({"data": present.draft(record)}, 201)


@bp.get("/draft")
@operation(
    tags=["Draft"],
    summary="List the client's drafts",
    parameters=[
        *PAGE_PARAMETERS,
        {"name": "user_identifier", "in": "query", "schema": {"type": "string"}},
    ],
    response=many(DraftOut),
)
def list_drafts() -> ResponseReturnValue:
    args = page_args()
    user = request.args.get("user_identifier") or request.args.get("userIdentifier")
    page = services().repository.list_drafts(
        current_client().identifier, args["page"], args["perPage"], user_identifier=user
    )
    return ok({"data": [present.draft(item) for item in page.items], "meta": present.meta(page)})


@bp.post("/draft/claim")
@operation(
    tags=["Draft"],
    summary="Give drafts to a user",
    description='Answers `{"<draftHash>": true|false}` without a wrapper: true when the draft '
    "was (with `dryRun`: would be) claimed. Nothing changes with `dryRun`.",
    body=DraftClaimInput,
    response={"type": "object", "additionalProperties": {"type": "boolean"}},
)
def claim_drafts() -> ResponseReturnValue:
    data = load(DraftClaimInput())
    result = services().repository.claim_drafts(
        current_client().identifier, data["userIdentifier"], data["drafts"], data["dryRun"]
    )
    if result is None:
        raise ValidationFailed(
            errors={"userIdentifier": ["No user with this identifier exists for this client."]}
        )
    return ok(result)


@bp.get("/draft/<draft_hash>")
@operation(tags=["Draft"], summary="Show a draft", response=one(DraftOut))
def show_draft(draft_hash: str) -> ResponseReturnValue:
    record = _found(services().repository.get_draft(current_client().identifier, draft_hash))
    return ok({"data": present.draft(record)})


@bp.put("/draft/<draft_hash>")
@operation(
    tags=["Draft"],
    summary="Update a draft's apiDefaultValues or customAttributes",
    description="Each object sent replaces the stored one; fields not sent stay as they are.",
    body=DraftUpdateInput,
    response=one(DraftOut),
)
def update_draft(draft_hash: str) -> ResponseReturnValue:
    data = load(DraftUpdateInput())
    record = services().repository.update_draft(
        current_client().identifier,
        draft_hash,
        api_default_values=data.get("apiDefaultValues"),
        custom_attributes=data.get("customAttributes"),
    )
    return ok({"data": present.draft(_found(record))})


@bp.delete("/draft/<draft_hash>")
@operation(
    tags=["Draft"],
    summary="Delete a draft",
    status=204,
    response_description="Deleted; empty body.",
)
def delete_draft(draft_hash: str) -> ResponseReturnValue:
    if not services().repository.delete_draft(current_client().identifier, draft_hash):
        raise NotFound(DRAFT_NOT_FOUND)
    # Rendered files hold the customer's values; pps files sweep catches a late render.
    delete_draft_files(services().storage, current_client().identifier, draft_hash)
    return no_content()


@bp.route("/draft/<draft_hash>/replicate", methods=["POST", "GET"])
@operation(
    tags=["Draft"],
    summary="Copy a draft",
    description="A new draft (new hash) with the same template, user and values. GET is "
    "accepted too, as the Magento module sends it.",
    response=one(DraftOut),
)
def replicate_draft(draft_hash: str) -> ResponseReturnValue:
    record = _found(services().repository.replicate_draft(current_client().identifier, draft_hash))
    return ok({"data": present.draft(record)})
