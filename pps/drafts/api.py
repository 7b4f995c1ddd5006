"""``/api-ext/draft``: drafts of the calling client's templates for its users."""

from __future__ import annotations

import logging
from typing import Any

from flask import Response, jsonify

from pps.api import bp, current_client, resource, services
from pps.api.schemas import (
    DraftClaimInput,
    DraftCreateInput,
    DraftList,
    DraftListArgs,
    DraftReplicateInput,
    DraftResponse,
    DraftUpdateInput,
    draft_flags,
)
from pps.files.rendering import TemplateNotRenderable, template_spec
from pps.files.sweep import delete_draft_files
from pps.files.uploaded import upload_key
from pps.platform.errors import NotFound, ValidationFailed
from pps.platform.models import Draft, Template
from pps.platform.repository import NotAMember
from pps.preflight import preflight_and_store
from pps.render.problems import english
from pps.uploads.budget import room_for
from pps.uploads.images import media_problems
from pps.variants.options import check_group, new_draft_options, variant_change
from pps.vdata.service import copy_rows
from pps.web.common import no_content
from pps.webhooks.events import DRAFT_CREATED, DRAFT_UPDATED, draft_payload, emit

blp = resource("drafts", "Draft")
log = logging.getLogger(__name__)

DRAFT_NOT_FOUND = "No draft with this hash exists for this client."
#: ``POST /draft/claim`` answers a map, not a resource: draft hash -> claimed.
CLAIM_RESULT = {"type": "object", "additionalProperties": {"type": "boolean"}}


def _media_errors(template: Template | None, values: Any) -> dict[str, list[str]]:
    """Image values naming an upload this client does not have, or choices off the list:
    refused before anything is stored (see docs/templates.md)."""
    if template is None or not isinstance(values, dict) or not values:
        return {}
    try:
        spec = template_spec(template)
    except TemplateNotRenderable:
        return {}  # preflight reports the template itself
    svc = services()
    found = media_problems(spec, values, svc.storage, svc.uploads, current_client().identifier)
    return {
        f"apiDefaultValues.{key}": [english(problem) for problem in problems]
        for key, problems in found.items()
    }


def _found(record: Draft | None) -> Draft:
    if record is None:
        raise NotFound(DRAFT_NOT_FOUND)
    return record


@blp.post("/draft")
@blp.body(DraftCreateInput)
@blp.response(201, DraftResponse)
def create_draft(data: dict[str, Any]) -> dict[str, Any]:
    """Create a draft of a template for a user

    `apiDefaultValues` (DataKey to value) pre-fills the draft in the editor. The user
    identifier may be sent as `userIdentifier` or `user_identifier`. A user or template
    that is not the client's is a 422 naming the field. An image DataKey's value is the
    `identifier` of a PNG, JPEG or SVG from `POST /api-ext/file`, or
    `{"file": identifier, "crop": {"x", "y", "width", "height"}}` (image pixels); a
    template's choices take `<dataKey>.font|color|size` with one of the listed options.
    Another client's file, an unknown one or an option not listed is a 422 naming
    `apiDefaultValues.<key>` (docs/templates.md), on create and on `PUT`.

    `userGroupIdentifier` puts the draft in a user group (default: its user's group).
    `variant` (a variant's `id` or `identifier`, see the template's `variants`) picks the
    look it renders with, `version` must be that variant's version (sent alone, it picks
    the first offered variant of that version); `theme` offers only that theme's variants,
    `availableVariants` narrows the offer and `availableVariantVersions` narrows it to the
    variants of those versions (the Magento module's colours of a product; ints or digit
    strings); the editor and `PUT` stay within the offer, and with an offer and no
    `variant` the first offered is chosen. An unknown variant, theme or version is a 422
    naming it.

    Every option of the PHP SDK's `DraftBuilder` is accepted: `locked`, `disablePreflight`
    and `remoteAcl` are stored; an option pps does not support (`feedIdentifier`,
    `pagePlanner`, `pageDimensions`, `bleedAdditions`, `pageFillColor`, ...) is a 422
    naming it when its value would change the draft, and accepted when it is a default
    (null, false, 0, empty).
    """
    client = current_client().identifier
    repository = services().repository
    errors: dict[str, list[str]] = {}
    user = repository.get_user(client, data["userIdentifier"])
    if user is None:
        errors["userIdentifier"] = ["No user with this identifier exists for this client."]
    template = repository.get_template(client, data["templateIdentifier"])
    if template is None:
        errors["templateIdentifier"] = ["No template with this identifier exists for this client."]
    try:
        options = new_draft_options(repository, client, user, template, data)
    except ValidationFailed as exc:
        errors.update(exc.errors)
    errors.update(_media_errors(template, data["apiDefaultValues"]))
    if errors:
        raise ValidationFailed(errors=errors)
    record = repository.create_draft(
        client,
        user_identifier=data["userIdentifier"],
        template_identifier=data["templateIdentifier"],
        intent=data["intent"],
        api_default_values=data["apiDefaultValues"] or {},
        custom_attributes=data["customAttributes"] or {},
        user_group_identifier=options.user_group_identifier,
        variant=options.choice.variant,
        available_variants=options.choice.available,
        theme=options.choice.theme,
        flags=draft_flags(data),
    )
    if record is None:  # the user or template vanished between the checks and the insert
        raise ValidationFailed(
            errors={"userIdentifier": ["The user or template no longer exists."]}
        )
    emit(services(), client, DRAFT_CREATED, draft_payload(record))
    return {"data": record}


@blp.get("/draft")
@blp.query(DraftListArgs)
@blp.response(200, DraftList)
def list_drafts(args: dict[str, Any]) -> dict[str, Any]:
    """List the client's drafts

    `userIdentifier` lists one user's drafts, `userGroupIdentifier` a user group's.
    """
    page = services().repository.list_drafts(
        current_client().identifier,
        args["page"],
        args["perPage"],
        user_identifier=args["userIdentifier"] or None,
        user_group_identifier=args["userGroupIdentifier"] or None,
    )
    return {"data": page.items, "meta": page}


@blp.post("/draft/claim")
@blp.body(DraftClaimInput)
@blp.response(200, CLAIM_RESULT)
@blp.errors(405, s405="`GET`, `PUT` and `DELETE` on this path: only `POST` is allowed.")
def claim_drafts(data: dict[str, Any]) -> Response:
    """Give drafts to a user

    Answers `{"<draftHash>": true|false}` without a wrapper: true when the draft was (with
    `dryRun`: would be) claimed. Nothing changes with `dryRun`. With
    `userGroupIdentifier` only that group's drafts are claimed, and the user must be a
    member of the group (422 otherwise).
    """
    client = current_client().identifier
    repository = services().repository
    group = check_group(repository, client, data["userGroupIdentifier"])
    try:
        result = repository.claim_drafts(
            client,
            data["userIdentifier"],
            data["drafts"],
            data["dryRun"],
            user_group_identifier=group,
        )
    except NotAMember:
        raise ValidationFailed(
            errors={"userIdentifier": ["The user is not a member of this user group."]}
        ) from None
    if result is None:
        raise ValidationFailed(
            errors={"userIdentifier": ["No user with this identifier exists for this client."]}
        )
    return jsonify(result)


@blp.get("/draft/<draft_hash:draft_hash>")
@blp.response(200, DraftResponse)
@blp.errors(404)
def show_draft(draft_hash: str) -> dict[str, Any]:
    """Show a draft"""
    return {
        "data": _found(services().repository.get_draft(current_client().identifier, draft_hash))
    }


@blp.put("/draft/<draft_hash:draft_hash>")
@blp.body(DraftUpdateInput)
@blp.response(200, DraftResponse)
@blp.errors(404)
def update_draft(data: dict[str, Any], draft_hash: str) -> dict[str, Any]:
    """Update a draft's apiDefaultValues, customAttributes, options, variant or user group

    Each object sent replaces the stored one; fields not sent stay as they are. A locked
    draft can be updated: the lock keeps the customer's editor read-only, not the shop
    (send `locked: false` to lift it). Options as on create. `variant` (an `id` or
    `identifier`, within the variants offered to the draft) and `version` change its look:
    its files are rendered anew. `version` alone (an int or its digits as a string, as the
    Magento module switches colours) picks the offered variant of that version, the
    draft's own when it has it; a version no offered variant has is a 422 naming
    `version`. `userGroupIdentifier` moves it to another group of the client, `""` takes
    it out of its group. The draft is preflighted afterwards (unless
    `disablePreflight`): see `preflightStatus`.
    """
    svc = services()
    client = current_client().identifier
    repository = svc.repository
    draft = _found(repository.get_draft(client, draft_hash))
    group = data.get("userGroupIdentifier")
    if group:
        check_group(repository, client, group)
    template = repository.get_template(client, draft.template_identifier)
    change = variant_change(template, draft, data.get("variant"), data.get("version"))
    media = _media_errors(template, data.get("apiDefaultValues"))
    if media:
        raise ValidationFailed(errors=media)
    record = _found(
        repository.update_draft(
            client,
            draft_hash,
            api_default_values=data.get("apiDefaultValues"),
            custom_attributes=data.get("customAttributes"),
            variant=None if change is None else change.variant,
            user_group_identifier=group,
            flags=draft_flags(data),
        )
    )
    found = preflight_and_store(
        repository, svc.storage, record, max_pixels=svc.settings.max_image_pixels
    )
    emit(svc, client, DRAFT_UPDATED, draft_payload(found))
    return {"data": found}


@blp.delete("/draft/<draft_hash:draft_hash>")
@blp.response(204, description="Deleted; the body is empty.")
@blp.errors(404)
def delete_draft(draft_hash: str) -> Response:
    """Delete a draft"""
    if not services().repository.delete_draft(current_client().identifier, draft_hash):
        raise NotFound(DRAFT_NOT_FOUND)
    # Rendered files hold the customer's values; pps files sweep catches a late render.
    delete_draft_files(services().storage, current_client().identifier, draft_hash)
    return no_content()


# GET writes here (the Magento module's call), so a HEAD probe must not make a copy.
@blp.route("/draft/<draft_hash:draft_hash>/replicate", methods=["POST", "GET"], head=False)
@blp.body(DraftReplicateInput)
@blp.response(200, DraftResponse)
@blp.errors(404, 405, 507, s405="`HEAD`: it would make a copy; send `GET` or `POST`.")
def replicate_draft(data: dict[str, Any], draft_hash: str) -> dict[str, Any]:
    """Copy a draft

    A new draft (new hash) with the same template, user and values. `apiDefaultValues` and
    `customAttributes` sent are laid over the source's, key by key. GET is accepted too, as
    the Magento module sends it; `HEAD` is a 405, since it would make a copy. The copy
    keeps `disablePreflight` and `remoteAcl` and starts unlocked; options sent override
    these. `draftParameter` and `pagePlanner` are accepted when they change nothing (null,
    false, empty), else a 422 naming them.

    A draft with variable data is copied with its rows (`personalizations.amount` is the
    same): each record renders the copy's values overlaid by its row, so the values sent
    here fill what a row leaves unmapped. A source deleted while it is copied is a 404
    and leaves no copy. A draft with an uploaded print PDF gets its own copy of the PDF:
    when that would take the client's uploaded files past `PPS_CLIENT_STORAGE_BYTES`, the
    answer is `507` and there is no copy.
    """
    svc = services()
    client = current_client().identifier
    source = _found(svc.repository.get_draft(client, draft_hash))
    media = _media_errors(
        svc.repository.get_template(client, source.template_identifier),
        data.get("apiDefaultValues"),
    )
    if media:
        raise ValidationFailed(errors=media)
    record = _found(
        svc.repository.replicate_draft(
            client,
            draft_hash,
            api_default_values=data.get("apiDefaultValues"),
            custom_attributes=data.get("customAttributes"),
            flags=draft_flags(data),
        )
    )
    uploaded = svc.storage.read(source.upload_key) if source.upload_key else None
    if source.upload_key and uploaded is None:
        _discard_copy(client, draft_hash, record.draft_hash)
    if uploaded is not None:  # the copy gets its own, deleted with it
        record = _copy_upload(client, record, uploaded)
    copied = copy_rows(svc, source, record.draft_hash)
    if source.record_count and not copied:
        _discard_copy(client, draft_hash, record.draft_hash)
    if copied:  # the copy prints the same records
        record = _found(svc.repository.get_draft(client, record.draft_hash))
    emit(svc, client, DRAFT_CREATED, draft_payload(record))
    return {"data": record}


def _copy_upload(client: str, copy: Draft, uploaded: bytes) -> Draft:
    """The copy with its own copy of the source's print PDF, within the client's storage
    budget. When the PDF cannot be given to it (no room: the 507; the file storage or the
    database failing) the copy is deleted, so that the error leaves no copy without its PDF
    behind for the client to find beside the one its retry makes."""
    svc = services()
    key = upload_key(client, copy.draft_hash, uploaded)
    size = len(uploaded)
    try:
        with room_for(svc.uploads.budget, client, size, svc.settings.client_storage_bytes):
            svc.storage.put(key, uploaded)
            return _found(
                svc.repository.update_draft(
                    client, copy.draft_hash, upload_key=key, upload_size=size
                )
            )
    except Exception:
        try:
            svc.repository.delete_draft(client, copy.draft_hash)
            delete_draft_files(svc.storage, client, copy.draft_hash)
        except Exception:  # the error being answered says more than this one
            log.exception("could not delete the incomplete copy %s", copy.draft_hash)
        raise


def _discard_copy(client: str, source_hash: str, copy_hash: str) -> None:
    """The copy came without the source's upload or records. When that is because the
    source was deleted while it was copied, the copy is deleted too and the answer is the
    source's 404 (a copy printing one record of many would be wrong, not late)."""
    svc = services()
    if svc.repository.get_draft_ref(client, source_hash) is not None:
        return  # the source's rows or upload were taken away by its own update instead
    svc.repository.delete_draft(client, copy_hash)
    delete_draft_files(svc.storage, client, copy_hash)
    raise NotFound(DRAFT_NOT_FOUND)


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource
