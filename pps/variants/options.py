"""The variant and group options of a draft, checked against the client's records.

The views call these before writing anything, so a bad option is a 422 naming it (every
bad one at once) and nothing is stored. No Flask here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pps.files.rendering import TemplateNotRenderable, template_spec
from pps.platform.errors import ValidationFailed
from pps.platform.models import Draft, Template, User
from pps.platform.repository import Repository
from pps.variants.catalogue import Choice, choose

__all__ = ["NewDraftOptions", "check_group", "new_draft_options", "variant_change"]

GROUP_UNKNOWN = "No user group with this identifier exists for this client."
_VARIANT_FIELDS = ("variant", "version", "availableVariants", "availableVariantVersions", "theme")


@dataclass(frozen=True)
class NewDraftOptions:
    user_group_identifier: str | None
    choice: Choice


def check_group(repository: Repository, client: str, group: str | None) -> str | None:
    """The group's identifier if it is the client's ("" and None: no group)."""
    if not group:
        return None
    if repository.get_user_group(client, group) is None:
        raise ValidationFailed(errors={"userGroupIdentifier": [GROUP_UNKNOWN]})
    return group


def _choose(template: Template, **options: Any) -> Choice:
    try:
        spec = template_spec(template)
    except TemplateNotRenderable as exc:
        raise ValidationFailed(errors={"templateIdentifier": [str(exc)]}) from None
    return choose(spec, **options)


def new_draft_options(
    repository: Repository,
    client: str,
    user: User | None,
    template: Template | None,
    data: Mapping[str, Any],
) -> NewDraftOptions:
    """Group (default: the user's) and variant of a draft about to be created."""
    errors: dict[str, list[str]] = {}
    group = None
    try:
        group = check_group(repository, client, data.get("userGroupIdentifier"))
    except ValidationFailed as exc:
        errors.update(exc.errors)
    if group is None and not data.get("userGroupIdentifier") and user is not None:
        group = user.user_group_identifier
    choice = Choice(variant=None, available=None, theme=None)
    sent = {name for name in _VARIANT_FIELDS if data.get(name) is not None}
    # availableVariantVersions alone (the Magento module's createDraftHash) narrows nothing
    # on a template without variants: accepted there without reading the template's spec.
    if (
        sent == {"availableVariantVersions"}
        and template is not None
        and not template.spec.get("variants")
    ):
        sent = set()
    if template is not None and sent:
        try:
            choice = _choose(
                template,
                variant=data.get("variant"),
                version=data.get("version"),
                available=data.get("availableVariants"),
                available_versions=data.get("availableVariantVersions"),
                theme=data.get("theme"),
            )
        except ValidationFailed as exc:
            errors.update(exc.errors)
    if errors:
        raise ValidationFailed(errors=errors)
    return NewDraftOptions(user_group_identifier=group, choice=choice)


def variant_change(
    template: Template | None, draft: Draft, variant: Any, version: int | None
) -> Choice | None:
    """The draft's new variant for ``PUT`` (within the variants offered to it), or None
    when neither ``variant`` nor ``version`` was sent. ``version`` alone chooses by version
    (see :func:`pps.variants.catalogue.choose`)."""
    if variant is None and version is None:
        return None
    if template is None:
        field = "version" if variant is None else "variant"
        raise ValidationFailed(errors={field: ["The draft's template no longer exists."]})
    # A version alone picks the variant of that version (the Magento module switches
    # colours so), keeping the draft's own variant when that has it.
    return _choose(
        template,
        variant=variant,
        version=version,
        offered=draft.available_variants,
        current=None if draft.variant is None else draft.variant.identifier,
    )
