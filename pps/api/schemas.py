"""marshmallow schemas at the edge: what comes in is validated here, what goes out is
serialised here, and ``/openapi.json`` documents both from these same classes.

Inputs are camelCase (the parser folds ``snake_case`` names into it). Outputs read the
records of :mod:`pps.platform.models`; fields the PHP SDK types are never null (COMPAT.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import current_app
from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate, validates_schema

from pps.platform.models import (
    DRAFT_INTENTS,
    PREFLIGHT_NOT_CHECKED,
    PREFLIGHT_STATUSES,
    Draft,
    Template,
)
from pps.render.text import as_text
from pps.render.variants import MAX_VARIANT_ID, variant_summaries

MAX_VALUES = 1000
MAX_VALUE_LENGTH = 10_000
MAX_ATTRIBUTES = 200
#: The PHP SDK asks for any ``per_page`` (200 in its docs) and follows ``meta.lastPage``.
MAX_PER_PAGE = 1000


#: ``format: uri`` for a URL pps calls (an absolute http(s) URL, pps.platform.ssrf); the
#: optional ones read ``""`` as no URL, which the reference says beside it. Documentation
#: only: the views check the URL itself.
HTTP_URL: dict[str, Any] = {"format": "uri"}
OPTIONAL_HTTP_URL: dict[str, Any] = {"anyOf": [{"format": "uri"}, {"enum": [""]}]}


def _values_map(name: str, max_items: int) -> Any:
    """DataKey -> any JSON value, stored as sent and printed as its text
    (:func:`pps.render.text.as_text`), which must stay within MAX_VALUE_LENGTH."""

    def check(value: dict[str, Any]) -> None:
        if len(value) > max_items:
            raise ValidationError(f"At most {max_items} entries are allowed in {name}.")
        for key, item in value.items():
            if not key or len(key) > 200:
                raise ValidationError(f"Keys of {name} must be 1 to 200 characters long.")
            text = as_text(item)
            if text is not None and len(text) > MAX_VALUE_LENGTH:
                raise ValidationError(
                    f"{name}[{key!r}] must be at most {MAX_VALUE_LENGTH} characters long (as text)."
                )

    return check


_VALUES_DESCRIPTION = (
    "DataKey -> value. Any JSON value is accepted and stored as sent; it prints as text: "
    "strings as they are, numbers as written (`2`, `2.5`), `true`/`false`, lists and objects "
    f"as compact JSON; null: the template's default. At most {MAX_VALUES} entries, each at "
    f"most {MAX_VALUE_LENGTH} characters as text."
)


def _attributes(value: dict[str, Any]) -> None:
    if len(value) > MAX_ATTRIBUTES:
        raise ValidationError(f"At most {MAX_ATTRIBUTES} custom attributes are allowed.")


class JsonObjectField(fields.Dict):
    """A JSON object with string keys. PHP's ``json_encode`` writes an empty array for an empty
    map, so ``[]`` counts as ``{}`` (the same rule as for whole bodies)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(keys=fields.String(), **kwargs)

    def deserialize(
        self,
        value: Any,
        attr: str | None = None,
        data: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        if isinstance(value, list) and not value:
            value = {}
        return super().deserialize(value, attr, data, **kwargs)


class Flag(fields.Boolean):
    """A yes/no input: JSON ``true`` or ``false`` only, as ``type: boolean`` documents it (the
    SDK sends PHP bools through Guzzle's ``json``). marshmallow's Boolean also takes ``0``,
    ``1.0`` or ``"yes"``; a form's text spellings (PHP's ``"0"``/``"1"``) are read into bools
    by the body loader (:meth:`pps.api.parser.PpsParser.load_php`) before they get here."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value


class Input(Schema):
    """Inputs ignore fields they do not know: clients of the reference product send extras."""

    class Meta:
        unknown = EXCLUDE


def _text(max_length: int) -> fields.String:
    return fields.String(allow_none=True, validate=validate.Length(max=max_length))


class TextOrNumber(fields.String):
    """Text that PHP shops may send as a number (a salutation code such as ``1``): a number
    is kept as its text, so it reads back as the string the SDK's typed property wants."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = as_text(value)
        return super()._deserialize(value, attr, data, **kwargs)


class UserInput(Input):
    """Every field optional: an empty ``POST /api-ext/user`` is normal. ``""`` clears an email."""

    email = fields.String(
        allow_none=True,
        validate=[
            validate.Length(max=320),
            lambda value: value == "" or validate.Email()(value),
        ],
        metadata={
            "anyOf": [{"format": "email"}, {"enum": [""]}],
            "description": 'An email address; `""` clears it.',
        },
    )
    firstName = _text(200)
    lastName = _text(200)
    title = _text(100)
    salutation = TextOrNumber(
        allow_none=True,
        validate=validate.Length(max=50),
        metadata={
            "description": "A string or a number (a salutation code); kept and answered as "
            'text (`1` reads back as `"1"`, `1.5` as `"1.5"`).'
        },
    )
    locale = fields.String(
        allow_none=True, validate=validate.Regexp(r"^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})?$")
    )
    customAttributes = JsonObjectField(allow_none=True, validate=_attributes)
    userGroupIdentifier = fields.String(
        allow_none=True,
        validate=validate.Length(max=64),
        metadata={"description": "A user group of the client (null: no group)."},
    )


class VariantRef(fields.Field[Any]):
    """A variant by its ``id`` (an int, as the PHP SDK sends it) or its ``identifier``."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValidationError("Must be a variant's id (an integer) or identifier (a string).")
        if isinstance(value, str) and not 0 < len(value) <= 64:
            raise ValidationError("A variant identifier is 1 to 64 characters long.")
        return value


_VARIANT_DOC = {"oneOf": [{"type": "integer"}, {"type": "string"}]}


class VariantVersion(fields.Field[int]):
    """A variant version: an int (the PHP SDK) or its digits as a string (the Magento module
    sends its product's ``printformer_color_variation`` value as it is, e.g. ``"2"``).

    Nothing else is read as a number: no bool, float, sign, blank or other text."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 10:
            value = int(value)  # at most 10 digits: int() is never asked for a huge number
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError(
                "Must be a variant version: an integer, or its digits as a string."
            )
        if not 0 < value <= MAX_VARIANT_ID:
            raise ValidationError(f"Must be between 1 and {MAX_VARIANT_ID}.")
        return value


def whole_number_pattern(maximum: int) -> str:
    """A regular expression of the digit strings :class:`VariantVersion` reads: the numbers
    1 to ``maximum``, leading zeros allowed, at most as many characters as ``maximum`` has
    digits. ``^[0-9]{1,10}$`` also described ``"0"`` and ``"9999999999"``, which are 422s."""
    top = str(maximum)
    width = len(top)

    def digits(count: int) -> str:
        return {0: "", 1: "[0-9]"}.get(count, f"[0-9]{{{count}}}")

    def below(lowest: int, digit: int) -> str:  # a digit from lowest to digit - 1
        return str(lowest) if lowest == digit - 1 else f"[{lowest}-{digit - 1}]"

    shorter = [f"0{{0,{width - k}}}[1-9]{digits(k - 1)}" for k in range(1, width)]
    full = [
        f"{top[:i]}{below(int(i == 0), int(digit))}{digits(width - i - 1)}"
        for i, digit in enumerate(top)
        if int(digit) > int(i == 0)
    ]
    return "^(?:" + "|".join([*shorter, *full, top]) + ")$"


_VERSION_DOC = {
    "oneOf": [
        {"type": "integer", "minimum": 1, "maximum": MAX_VARIANT_ID},
        {"type": "string", "pattern": whole_number_pattern(MAX_VARIANT_ID)},
    ],
    "description": "A variant's version (pps keeps one version per variant), an integer or "
    "its digits as a string. Sent without `variant`, it chooses the offered variant of this "
    "version (the draft's own one when that has it).",
}
_VERSION = VariantVersion(allow_none=True, metadata=_VERSION_DOC)


class VariantOptions(Input):
    """The draft options of pps.variants and pps.groups (DraftBuilder and Magento)."""

    userGroupIdentifier = fields.String(
        allow_none=True,
        validate=validate.Length(max=64),
        metadata={"description": "A user group of the client; default: the user's group."},
    )
    variant = VariantRef(allow_none=True, metadata=_VARIANT_DOC)
    version = _VERSION
    availableVariants = fields.List(
        VariantRef(metadata=_VARIANT_DOC), allow_none=True, validate=validate.Length(max=100)
    )
    availableVariantVersions = fields.List(
        VariantRef(metadata=_VARIANT_DOC),
        allow_none=True,
        validate=validate.Length(max=100),
        metadata={
            "description": "Offer only the variants of these versions (each must be one of "
            "an offered variant; ints or digit strings). Without `variant`, the first of them "
            "is chosen. Accepted and without effect on a template without variants."
        },
    )
    theme = fields.String(allow_none=True, validate=validate.Length(min=1, max=64))


INTENTS_DOC = (
    "What the draft is for. `customize` (default): the customer fills the template's "
    "DataKeys in the editor. `personalize`: the same editor and files, for drafts whose "
    "values the shop fills per recipient (`apiDefaultValues`). `upload`: the customer's own "
    "print PDF (`POST /api-ext/draft/{draftHash}/upload`) is the print file, as uploaded; "
    "previews and images are rendered from it; until one is uploaded the draft has no files. "
    "`upload-and-editor`: the uploaded PDF becomes the artwork of the template's pages and "
    "the template's fields are drawn over it, filled in the editor as with `customize`. "
    "`order`: an older name, rendered like `customize`."
)
PREFLIGHT_DOC = (
    "Outcome of the last preflight, run on every editor save and finish, API update and "
    "upload (unless `disablePreflight`): "
    + ", ".join(f"`{value}` {name}" for value, name in sorted(PREFLIGHT_STATUSES.items()))
    + ". A new draft is `-1` until its first change. Checked: required values, values "
    "that do not fit their box (errors), images below 300 dpi at their placed size, "
    "RGB images and colours in a template with `colorSpace: cmyk` (warnings), fonts whose "
    "licence forbids embedding (OS/2 fsType; errors); for an uploaded PDF also its images "
    "and fonts (page count, size within ±1 mm, embedded fonts and no "
    "encryption are required by the upload itself). Findings are in `validationResults`."
)


def _unsupported(feature: str) -> fields.Raw:
    """An option of the reference's DraftBuilder that pps does not offer. Its default (left
    out, null, false, 0, "", [] or {}, or a map or list of such) changes nothing and is
    accepted; any other value is a 422 naming the option, never dropped without a word."""
    return fields.Raw(
        allow_none=True,
        metadata={
            "unsupported": feature,
            "description": f"Not supported ({feature}): only null, false, 0, empty or left "
            "out is accepted; any other value is a 422 naming this option.",
        },
    )


def changes_nothing(value: Any) -> bool:
    """Whether an option's value is a default that leaves the draft as pps makes it."""
    if isinstance(value, dict):
        return all(changes_nothing(item) for item in value.values())
    if isinstance(value, list):
        return all(changes_nothing(item) for item in value)
    if isinstance(value, str):  # forms send PHP's false as "0" (http_build_query)
        return value.strip().lower() in ("", "0", "false")
    return value is None or value is False or value == 0


class DraftOptionsInput(Input):
    """Options of the PHP SDK's ``DraftBuilder`` and the Magento module, besides the values.

    ``locked``, ``disablePreflight`` and ``remoteAcl`` are stored on the draft (null: left
    as it is). The options marked unsupported are refused with a value that would change
    the result. ``userGroupIdentifier``, ``variant``, ``version``, ``availableVariants``,
    ``availableVariantVersions`` and ``theme`` belong to user groups and variants.
    """

    locked = Flag(
        allow_none=True,
        metadata={
            "description": "The editor shows the draft read-only and refuses saves (a `409` "
            "page). The shop's own API calls (`PUT`, `replicate`, files) still work: the lock "
            "binds the customer, and the shop lifts it with `locked: false`."
        },
    )
    disablePreflight = Flag(
        allow_none=True,
        metadata={"description": "Skip the preflight checks; `preflightStatus` stays -1."},
    )
    remoteAcl = Flag(
        allow_none=True,
        metadata={
            "description": "Ask the shop's ACL URL before each action on the draft "
            "(open in the editor, save, finish, fetch files)."
        },
    )
    unit = fields.String(
        allow_none=True,
        validate=validate.Length(max=16),
        metadata={
            "description": "Accepted and without effect: it is the unit of `pageDimensions`, "
            "`bleedAdditions` and `spineWidth`, which pps refuses with a value."
        },
    )
    feedIdentifier = _unsupported("product feeds")
    pagePlanner = _unsupported("the page planner")
    declarationIdentifier = _unsupported("declarations and ingredients")
    pageDimensions = _unsupported("page dimensions other than the template's")
    bleedAdditions = _unsupported("bleed beyond the template's")
    spineWidth = _unsupported("spine widths")
    pageFillColor = _unsupported("page fill colours")
    defaultGroupTemplate = _unsupported("group templates")
    availableCatalogTemplates = _unsupported("catalog templates")
    containerContentPreFilling = _unsupported("catalog templates")
    draftParameter = _unsupported("draft parameters")

    @validates_schema(skip_on_field_errors=False)
    def _refuse_unsupported(self, data: dict[str, Any], **kwargs: Any) -> None:
        errors = {
            name: [
                f"pps does not support {field.metadata['unsupported']}: send null or leave "
                f"{name} out."
            ]
            for name, field in self.fields.items()
            if "unsupported" in field.metadata and not changes_nothing(data.get(name))
        }
        if errors:
            raise ValidationError(errors)


def draft_flags(data: dict[str, Any]) -> dict[str, bool]:
    """The stored draft options sent in ``data`` (null and left out: not sent), by column."""
    sent = {
        "locked": data.get("locked"),
        "disable_preflight": data.get("disablePreflight"),
        "remote_acl": data.get("remoteAcl"),
    }
    return {name: value for name, value in sent.items() if value is not None}


class DraftCreateInput(VariantOptions, DraftOptionsInput):
    templateIdentifier = fields.String(required=True, validate=validate.Length(min=1, max=64))
    userIdentifier = fields.String(required=True, validate=validate.Length(min=1, max=64))
    intent = fields.String(
        load_default="customize",
        validate=validate.OneOf(DRAFT_INTENTS),
        metadata={"description": INTENTS_DOC},
    )
    # null is taken as "not sent": the PHP SDK may send its unset typed properties as null.
    apiDefaultValues = JsonObjectField(
        load_default=dict,
        allow_none=True,
        validate=_values_map("apiDefaultValues", MAX_VALUES),
        metadata={"description": _VALUES_DESCRIPTION},
    )
    customAttributes = JsonObjectField(load_default=dict, allow_none=True, validate=_attributes)


class DraftValuesInput(DraftOptionsInput):
    """A field sent as null is left as it is, like a field not sent."""

    apiDefaultValues = JsonObjectField(
        allow_none=True,
        validate=_values_map("apiDefaultValues", MAX_VALUES),
        metadata={"description": _VALUES_DESCRIPTION},
    )
    customAttributes = JsonObjectField(allow_none=True, validate=_attributes)


class DraftUpdateInput(DraftValuesInput):
    """``PUT /api-ext/draft/{hash}``: values, attributes, and the draft's variant or group
    (``userGroupIdentifier`` ``""`` takes the draft out of its group)."""

    variant = VariantRef(allow_none=True, metadata=_VARIANT_DOC)
    version = _VERSION
    userGroupIdentifier = fields.String(allow_none=True, validate=validate.Length(max=64))


class DraftReplicateInput(DraftValuesInput):
    """Values for the copy, laid over the source's key by key; nothing sent: an exact copy
    (the Magento module sends GET without a body). The copy keeps `disablePreflight` and
    `remoteAcl` and starts unlocked unless these options say otherwise."""


class DraftClaimInput(Input):
    userIdentifier = fields.String(required=True, validate=validate.Length(min=1, max=64))
    drafts = fields.List(
        fields.String(validate=validate.Length(min=1, max=64)),
        required=True,
        validate=validate.Length(max=MAX_VALUES),
    )
    dryRun = Flag(load_default=False)
    userGroupIdentifier = fields.String(
        load_default=None,
        allow_none=True,
        metadata={"description": "Claim only drafts of this user group; the user must be in it."},
    )


class MergeInput(Input):
    sourceUserIdentifier = fields.String(required=True, validate=validate.Length(min=1, max=64))


class QueryNumber(fields.Integer):
    """A whole number written in ASCII digits, as query strings carry them: ``int()``
    alone would also read ``page=٢`` (an Arabic-Indic two), ``1_000`` and `` 5 ``. A minus
    sign is read, so ``page=-1`` gets the range's message rather than "not a number"."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        digits = value[1:] if isinstance(value, str) and value.startswith("-") else value
        if isinstance(digits, str) and not (digits.isascii() and digits.isdigit()):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


_PAGE_RANGE = validate.Range(min=1, max=1_000_000)
_PER_PAGE = QueryNumber(
    load_default=25,
    validate=validate.Range(min=1, max=MAX_PER_PAGE),
    metadata={
        "description": f"Items per page, 1 to {MAX_PER_PAGE} (more is a 422); `per_page` "
        "works too. Follow `meta.lastPage` for the rest."
    },
)


class PageArgs(Input):
    page = QueryNumber(load_default=1, validate=_PAGE_RANGE)
    perPage = _PER_PAGE


class DraftListArgs(PageArgs):
    userIdentifier = fields.String(
        load_default=None,
        metadata={"description": "Only this user's drafts; `user_identifier` works too."},
    )
    userGroupIdentifier = fields.String(
        load_default=None,
        metadata={"description": "Only the drafts of this user group."},
    )


class TemplateListArgs(Input):
    page = QueryNumber(
        load_default=None,
        validate=_PAGE_RANGE,
        metadata={"description": "Without `page`, every template of the client in one page."},
    )
    perPage = _PER_PAGE


# -- output: the wire shapes of COMPAT.md, read from the records ------------------------


class Output(Schema):
    pass


class Whole(fields.Nested):
    """A nested object built from the same record as its parent (``profile`` of a user)."""

    def get_value(self, obj: Any, attr: str, accessor: Any = None, default: Any = None) -> Any:
        return obj


class Timestamp(fields.DateTime):
    """ISO 8601 in UTC with ``Z``, as the reference writes it."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        text = super()._serialize(value, attr, obj, **kwargs)
        return text.replace("+00:00", "Z") if isinstance(text, str) else None


class ProfileOut(Output):
    salutation = fields.String(allow_none=True)
    title = fields.String(allow_none=True)
    firstName = fields.String(attribute="first_name", allow_none=True)
    lastName = fields.String(attribute="last_name", allow_none=True)
    email = fields.String(allow_none=True)


class UserOut(Output):
    identifier = fields.String(required=True)
    locale = fields.String(allow_none=True)
    profile = Whole(ProfileOut, required=True)
    customAttributes = fields.Dict(attribute="custom_attributes", required=True)
    userGroupIdentifier = fields.String(attribute="user_group_identifier", allow_none=True)


def effective_values(record: Draft) -> dict[str, Any]:
    """What the editor shows: the shop's defaults, overridden by what the customer saved."""
    return {**record.api_default_values, **record.values}


def personalization_amount(record: Draft) -> int:
    """Records the print file holds: the rows of variable data, 1 without any."""
    return max(1, record.record_count)


class PersonalizationsOut(Output):
    amount = fields.Function(
        personalization_amount,
        required=True,
        metadata={
            "type": "integer",
            "description": "Personalizations (records) in the print file: the number of "
            "variable-data rows, 1 without variable data.",
        },
    )


class VariantOut(Output):
    """The draft's variant; ``{id: null, identifier: "", version: null}`` when it has none
    (the template's own look), as the SDK's fixtures show: never null itself."""

    id = fields.Function(
        lambda record: None if record.variant is None else record.variant.id,
        allow_none=True,
        metadata={"type": "integer", "nullable": True},
    )
    identifier = fields.Function(
        lambda record: "" if record.variant is None else record.variant.identifier,
        required=True,
        metadata={"type": "string"},
    )
    version = fields.Function(
        lambda record: None if record.variant is None else record.variant.version,
        allow_none=True,
        metadata={"type": "integer", "nullable": True},
    )


class VariantSummaryOut(Output):
    """A variant as the SDK's ``Variant::fromArray`` reads it (every field non-null)."""

    id = fields.Integer(required=True)
    identifier = fields.String(required=True)
    name = fields.String(required=True)
    thumbnail_type = fields.String(required=True, metadata={"enum": ["color", "image"]})
    thumbnail_value = fields.String(
        required=True,
        metadata={"description": "`#RRGGBB` for `color`, an http(s) URL for `image`."},
    )


class TemplateVariants(fields.List[Any]):
    """A template's variants, read from its imported file."""

    def get_value(self, obj: Any, attr: str, accessor: Any = None, default: Any = None) -> Any:
        return variant_summaries(obj.spec)


class ValidationResultOut(Output):
    """One preflight finding, as the PHP SDK's ``ValidationResult`` reads it."""

    row = fields.Integer(
        allow_none=True,
        required=True,
        metadata={
            "description": "The variable-data row (from 1); null for the draft itself "
            "(every record)."
        },
    )
    page = fields.Integer(required=True, metadata={"description": "The page, from 1."})
    message = fields.String(required=True)
    severity = fields.String(
        required=True, metadata={"enum": ["warning", "error"], "description": "How bad it is."}
    )


class DraftOut(Output):
    draftHash = fields.String(attribute="draft_hash", required=True)
    userIdentifier = fields.String(attribute="user_identifier", required=True)
    userGroupIdentifier = fields.String(attribute="user_group_identifier", allow_none=True)
    templateIdentifier = fields.String(attribute="template_identifier", required=True)
    activeGroupTemplateIdentifier = fields.String(dump_default=None, allow_none=True)
    intent = fields.String(required=True)
    state = fields.String(
        required=True,
        metadata={
            "description": "init (created), edited (values saved in the editor), "
            "finished (the customer finished personalizing).",
            "enum": ["init", "edited", "finished"],
        },
    )
    setupStatus = fields.String(dump_default="complete", required=True)
    personalizations = Whole(PersonalizationsOut, required=True)
    preflightStatus = fields.Integer(
        attribute="preflight_status",
        dump_default=PREFLIGHT_NOT_CHECKED,
        required=True,
        metadata={"description": PREFLIGHT_DOC, "enum": sorted(PREFLIGHT_STATUSES)},
    )
    variant = Whole(VariantOut, required=True)
    apiDefaultValues = fields.Dict(
        attribute="api_default_values",
        required=True,
        metadata={"description": "As sent: values keep their JSON type."},
    )
    customAttributes = fields.Dict(attribute="custom_attributes", required=True)
    validationResults = fields.List(
        fields.Nested(ValidationResultOut),
        attribute="validation_results",
        dump_default=list,
        required=True,
    )
    locked = fields.Boolean(required=True)
    disablePreflight = fields.Boolean(attribute="disable_preflight", required=True)
    remoteAcl = fields.Boolean(attribute="remote_acl", required=True)
    draftVersion = fields.Integer(
        attribute="version",
        required=True,
        metadata={"description": "Bumped by every change (editor save or autosave, API update)."},
    )
    proofApprovedAt = Timestamp(
        attribute="proof_approved_at",
        allow_none=True,
        required=True,
        metadata={
            "description": "When the customer last confirmed the editor's proof and finished; "
            "null if never."
        },
    )
    proofApprovedVersion = fields.Integer(
        attribute="proof_approved_version",
        allow_none=True,
        required=True,
        metadata={
            "description": "The `draftVersion` that approval finished with: equal to "
            "`draftVersion` while the draft is as approved; null if never approved."
        },
    )


def preview_url(record: Template) -> str:
    base_url = current_app.extensions["pps.settings"].base_url
    return f"{base_url}/api-ext/files/template/{record.identifier}/page-preview-thumb"


class AvailTemplateOut(Output):
    """``availTemplate`` and ``correctionTemplate`` as the PHP SDK's ``AvailTemplate``."""

    name = fields.String(required=True)
    pageCount = fields.Integer(attribute="page_count", required=True)


class GroupMemberOut(Output):
    """An entry of ``groupMembers`` as the PHP SDK's ``GroupMember``."""

    identifier = fields.String(required=True)
    name = fields.String(required=True)


class TemplateOut(Output):
    identifier = fields.String(required=True)
    name = fields.String(required=True)
    type = fields.String(dump_default="customizable", required=True)
    intents = fields.List(fields.String(), dump_default=lambda: ["customize"], required=True)
    pageCount = fields.Integer(attribute="page_count", required=True)
    availTemplate = fields.Nested(
        AvailTemplateOut, attribute="avail_template", dump_default=None, allow_none=True
    )
    groupMembers = fields.List(
        fields.Nested(GroupMemberOut),
        attribute="group_members",
        dump_default=list,
        required=True,
    )
    correctionTemplate = fields.Nested(
        AvailTemplateOut, attribute="correction_template", dump_default=None, allow_none=True
    )
    customAttributes = fields.Dict(attribute="custom_attributes", required=True)
    dataKeys = fields.List(fields.String(), attribute="data_keys", required=True)
    updatedAt = Timestamp(attribute="updated_at", required=True)
    variants = TemplateVariants(fields.Nested(VariantSummaryOut), required=True)
    previewUrl = fields.Function(
        preview_url,
        required=True,
        metadata={
            "type": "string",
            "description": "The page-preview-thumb file endpoint; append ?jwt=...",
        },
    )


class ClientOut(Output):
    identifier = fields.String(required=True)
    name = fields.String(required=True)
    createdAt = Timestamp(attribute="created_at", required=True)


class MetaOut(Output):
    """Read from a :class:`pps.platform.repository.Page`."""

    currentPage = fields.Integer(attribute="page", required=True)
    lastPage = fields.Integer(attribute="last_page", required=True)
    perPage = fields.Integer(attribute="per_page", required=True)
    total = fields.Integer(required=True)


class SuccessOut(Output):
    success = fields.Boolean(required=True)


def one(schema: type[Output]) -> type[Schema]:
    """``{"data": <schema>}``, named ``<schema>One`` in the reference."""
    name = schema.__name__.removesuffix("Out")
    return Schema.from_dict({"data": fields.Nested(schema, required=True)}, name=f"{name}Response")


def many(schema: type[Output]) -> type[Schema]:
    """``{"data": [<schema>...], "meta": {...}}``; dumps ``{"data": items, "meta": page}``."""
    name = schema.__name__.removesuffix("Out")
    return Schema.from_dict(
        {
            "data": fields.List(fields.Nested(schema), required=True),
            "meta": fields.Nested(MetaOut, required=True),
        },
        name=f"{name}List",
    )


UserResponse = one(UserOut)
DraftResponse = one(DraftOut)
DraftList = many(DraftOut)
TemplateResponse = one(TemplateOut)
TemplateList = many(TemplateOut)
ClientResponse = one(ClientOut)
