"""Durable records behind one small seam.

Every method that touches a tenant's data takes the client identifier first, so tenancy is
enforced by the queries themselves: a record of another client is simply not found.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from pps.platform.models import (
    Client,
    Draft,
    DraftRef,
    DraftVariant,
    JsonObject,
    Template,
    TemplateRef,
    User,
    UserGroup,
)

T = TypeVar("T")

#: User fields a caller may set; anything else is ignored by the repository.
USER_FIELDS = (
    "locale",
    "salutation",
    "title",
    "first_name",
    "last_name",
    "email",
    "custom_attributes",
    "user_group_identifier",
)


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list, with what a paginator needs."""

    items: list[T]
    total: int
    page: int
    per_page: int

    @property
    def last_page(self) -> int:
        return max(1, -(-self.total // self.per_page)) if self.per_page else 1


class DuplicateIdentifier(Exception):
    """An identifier given by an operator is taken already."""


class NotAMember(Exception):
    """A claim within a user group for a user who is not a member of it: nothing was
    claimed."""


class VersionConflict(Exception):
    """A change meant for one version of a draft found it at another (changed meanwhile by
    the API, another tab or another editor): nothing was written."""

    def __init__(self, current: int) -> None:
        super().__init__(f"the draft is at version {current} now")
        self.current = current


@dataclass(frozen=True)
class ReplacedUpload:
    """A draft as :meth:`Repository.replace_upload` left it, and the upload it replaced."""

    draft: Draft
    previous_key: str | None
    """The key the draft named until then, which the caller deletes; None when none."""


class Repository(Protocol):
    """Storage of clients, users, templates and drafts."""

    # -- clients (operators; not scoped) -------------------------------------------------
    def create_client(
        self,
        name: str,
        *,
        identifier: str | None = None,
        api_key: str | None = None,
        allowed_origins: Sequence[str] = (),
    ) -> Client: ...

    def get_client(self, identifier: str) -> Client | None: ...

    def find_client_by_api_key(self, api_key: str) -> Client | None:
        """The active client whose key equals ``api_key``, compared in constant time."""
        ...

    def list_clients(self) -> list[Client]: ...

    def rotate_api_key(self, identifier: str) -> Client | None: ...

    # -- users ---------------------------------------------------------------------------
    def create_user(self, client: str, fields: Mapping[str, Any]) -> User: ...

    def get_user(self, client: str, identifier: str) -> User | None: ...

    def user_exists(self, client: str, identifier: str) -> bool:
        """Whether ``identifier`` is a user of ``client``; the cheapest lookup there is."""
        ...

    def update_user(
        self, client: str, identifier: str, fields: Mapping[str, Any]
    ) -> User | None: ...

    def delete_user(self, client: str, identifier: str) -> bool:
        """Delete the user and the user's drafts."""
        ...

    def merge_users(self, client: str, target: str, source: str) -> bool:
        """Move every draft of ``source`` to ``target`` and delete ``source``, atomically.

        False when either user is not a user of ``client`` (nothing is changed then).
        """
        ...

    # -- user groups (pps.groups) ------------------------------------------------------------
    def create_user_group(self, client: str) -> UserGroup: ...

    def get_user_group(self, client: str, identifier: str) -> UserGroup | None: ...

    # -- templates -----------------------------------------------------------------------
    def create_template(
        self,
        client: str,
        *,
        name: str,
        data_keys: Sequence[str],
        custom_attributes: JsonObject,
        page_count: int,
        spec: JsonObject,
        identifier: str | None = None,
        preview_key: str | None = None,
    ) -> Template: ...

    def get_template(self, client: str, identifier: str) -> Template | None: ...

    def get_template_ref(self, client: str, identifier: str) -> TemplateRef | None:
        """Pages and imported preview of a template of ``client``, without its spec."""
        ...

    def list_templates(
        self, client: str | None, page: int = 1, per_page: int | None = None
    ) -> Page[Template]:
        """Templates of ``client`` (every client's when None); ``per_page=None`` returns all."""
        ...

    # -- drafts --------------------------------------------------------------------------
    def create_draft(
        self,
        client: str,
        *,
        user_identifier: str,
        template_identifier: str,
        intent: str,
        api_default_values: JsonObject,
        custom_attributes: JsonObject,
        user_group_identifier: str | None = None,
        variant: DraftVariant | None = None,
        available_variants: Sequence[str] | None = None,
        theme: str | None = None,
        flags: Mapping[str, bool] | None = None,
    ) -> Draft | None:
        """None when the user or the template is not the client's. ``flags``: draft options
        by their names in :data:`pps.platform.models.DRAFT_FLAGS` (false when left out)."""
        ...

    def get_draft(self, client: str, draft_hash: str) -> Draft | None: ...

    def get_draft_ref(self, client: str, draft_hash: str) -> DraftRef | None:
        """Owner and version of a draft of ``client``; the cheapest draft lookup there is."""
        ...

    def list_drafts(
        self,
        client: str,
        page: int = 1,
        per_page: int = 25,
        user_identifier: str | None = None,
        user_group_identifier: str | None = None,
    ) -> Page[Draft]: ...

    def update_draft(
        self,
        client: str,
        draft_hash: str,
        *,
        api_default_values: JsonObject | None = None,
        custom_attributes: JsonObject | None = None,
        values: JsonObject | None = None,
        state: str | None = None,
        variant: DraftVariant | None = None,
        user_group_identifier: str | None = None,
        flags: Mapping[str, bool] | None = None,
        upload_key: str | None = None,
        upload_size: int | None = None,
        expected_version: int | None = None,
        proof_approved_at: datetime | None = None,
    ) -> Draft | None:
        """Apply the given changes and bump ``version``; None when no such draft.

        ``user_group_identifier`` ``""`` takes the draft out of its group. With
        ``expected_version`` the change is written only while the draft is at that version
        (one statement: a compare-and-set), else :class:`VersionConflict`.
        ``upload_size`` is the bytes of the PDF at ``upload_key``.
        ``proof_approved_at`` records the customer's proof approval for the new version.
        """
        ...

    def replace_upload(
        self, client: str, draft_hash: str, upload_key: str, upload_size: int
    ) -> ReplacedUpload | None:
        """Make the PDF at ``upload_key`` (``upload_size`` bytes) the draft's print PDF, bump
        ``version``; the draft and the key it replaced, read in the same transaction as
        the write, so that of uploads at once each is told a different key and the caller
        can delete it. None when no such draft."""
        ...

    def set_preflight(
        self,
        client: str,
        draft_hash: str,
        version: int,
        status: int,
        results: Sequence[JsonObject],
    ) -> bool:
        """Store a preflight's outcome for the draft at ``version``, without bumping it.

        False (nothing written) when the draft is gone or has moved on to another version:
        a slow check of an older version never overwrites a newer one's results.
        """
        ...

    def delete_draft(self, client: str, draft_hash: str) -> bool: ...

    def replicate_draft(
        self,
        client: str,
        draft_hash: str,
        *,
        api_default_values: JsonObject | None = None,
        custom_attributes: JsonObject | None = None,
        flags: Mapping[str, bool] | None = None,
    ) -> Draft | None:
        """A new draft with a new hash and the same template, user and values; the maps
        given are laid over the source's, key by key. The copy keeps the source's flags but
        ``locked``, which starts false; ``flags`` given override them."""
        ...

    def claim_drafts(
        self,
        client: str,
        user_identifier: str,
        draft_hashes: Iterable[str],
        dry_run: bool,
        user_group_identifier: str | None = None,
    ) -> dict[str, bool] | None:
        """Give the listed drafts to the user; per hash whether it was (or would be) claimed.

        With ``user_group_identifier`` only drafts of that group are claimed, and only for
        a member of it (:class:`NotAMember` otherwise), as the user is when the claim holds
        it. None when the user is not a user of ``client``.
        """
        ...

    def close(self) -> None: ...
