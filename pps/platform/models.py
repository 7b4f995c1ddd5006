"""Plain records the repository hands out. No behaviour that touches storage lives here."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Client:
    """A tenant of pps: the shop acts on its behalf with its API key."""

    identifier: str
    name: str
    api_key: str
    allowed_origins: tuple[str, ...]
    created_at: datetime
    disabled_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.disabled_at is None


@dataclass(frozen=True)
class User:
    identifier: str
    client_identifier: str
    locale: str | None = None
    salutation: str | None = None
    title: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    email: str | None = None
    custom_attributes: JsonObject = field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    user_group_identifier: str | None = None


@dataclass(frozen=True)
class UserGroup:
    """Users of one client whose drafts are shared among them (see pps.groups)."""

    identifier: str
    client_identifier: str
    created_at: datetime


@dataclass(frozen=True)
class DraftVariant:
    """The variant of its template a draft renders with (see pps.variants)."""

    id: int
    identifier: str
    version: int


@dataclass(frozen=True)
class Template:
    """A master template. ``spec`` keeps the imported file as-is for the renderer."""

    identifier: str
    client_identifier: str
    name: str
    data_keys: tuple[str, ...]
    custom_attributes: JsonObject
    page_count: int
    spec: JsonObject
    preview_key: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class TemplateRef:
    """What a template's preview link needs: whose it is, its pages, its imported preview.

    :class:`Template` has the same fields, so either serves where only these are read.
    """

    identifier: str
    client_identifier: str
    page_count: int
    preview_key: str | None


@dataclass(frozen=True)
class Draft:
    draft_hash: str
    client_identifier: str
    user_identifier: str
    template_identifier: str
    intent: str
    state: str
    values: JsonObject
    api_default_values: JsonObject
    custom_attributes: JsonObject
    version: int
    created_at: datetime
    updated_at: datetime
    #: Rows of variable data; 0 without (``personalizations.amount`` is at least 1).
    record_count: int = 0
    # Draft options the shop sets (DRAFT_FLAGS); defaults so records built elsewhere need none.
    locked: bool = False
    disable_preflight: bool = False
    #: Created with ``remoteAcl: true``: the shop is asked before each action (pps.acl).
    remote_acl: bool = False
    #: PREFLIGHT_STATUSES below: -1 not checked, 0 nothing found, 1 warnings, 2 errors.
    preflight_status: int = -1
    #: ``[{row, page, message, severity}]`` of the last preflight.
    validation_results: tuple[JsonObject, ...] = ()
    #: Storage key of the customer's uploaded print PDF (intents ``upload*``), if any.
    upload_key: str | None = None
    #: Its bytes, counted against the client's storage budget (``PPS_CLIENT_STORAGE_BYTES``).
    upload_size: int = 0
    user_group_identifier: str | None = None
    variant: DraftVariant | None = None
    #: Variant identifiers the editor may offer (None: every variant of the template).
    available_variants: tuple[str, ...] | None = None
    theme: str | None = None
    #: The customer confirmed the proof in the editor (pps.editor): when, and the draft's
    #: version right after that Finish (equal to ``version`` until the draft changes again).
    proof_approved_at: datetime | None = None
    proof_approved_version: int | None = None

    @property
    def variant_identifier(self) -> str | None:
        """Part of the keys of its rendered files (as on :class:`DraftRef`)."""
        return None if self.variant is None else self.variant.identifier


@dataclass(frozen=True)
class DraftRef:
    """Whose a draft is and which version it is at: all a link to its rendered files needs.

    :class:`Draft` has the same fields, so either serves where only these are read.
    """

    draft_hash: str
    client_identifier: str
    user_identifier: str
    version: int
    remote_acl: bool = False
    variant_identifier: str | None = None


DRAFT_STATES = ("init", "edited", "finished")
#: What a draft is for (documented in the draft schema of the OpenAPI reference):
#: ``customize`` and ``personalize`` fill the template's DataKeys in the editor, ``upload`` takes
#: the customer's own print PDF as the print file, ``upload-and-editor`` takes it as the pages'
#: artwork with the template's fields drawn over it. ``order`` is kept for drafts of old clients.
DRAFT_INTENTS = ("customize", "personalize", "upload", "upload-and-editor", "order")
UPLOAD_INTENTS = ("upload", "upload-and-editor")
#: Boolean draft options stored per draft (columns of ``drafts``, fields of :class:`Draft`):
#: ``locked`` makes the editor read-only, ``disable_preflight`` skips preflight checks,
#: ``remote_acl`` asks the shop before each action on the draft.
DRAFT_FLAGS = ("locked", "disable_preflight", "remote_acl")

#: ``preflightStatus`` of a draft (an int, as the PHP SDK types it), the one place of these
#: values: pps.preflight computes them, the API documents them from here. Not checked (yet, or
#: ``disablePreflight``), checked without findings, checked with warnings only, checked with at
#: least one error.
PREFLIGHT_NOT_CHECKED = -1
PREFLIGHT_OK = 0
PREFLIGHT_WARNINGS = 1
PREFLIGHT_ERRORS = 2
PREFLIGHT_STATUSES = {
    PREFLIGHT_NOT_CHECKED: "not checked (not yet, or `disablePreflight`)",
    PREFLIGHT_OK: "checked, nothing found",
    PREFLIGHT_WARNINGS: "warnings only",
    PREFLIGHT_ERRORS: "at least one error",
}
