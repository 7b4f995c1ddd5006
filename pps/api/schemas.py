"""marshmallow schemas at the edge: what comes in is validated here, what goes out is
serialised here, and ``/openapi.json`` documents both from these same classes.

Inputs are camelCase (the parser folds ``snake_case`` names into it). Outputs read the
records of :mod:`pps.platform.models`; fields the PHP SDK types are never null (COMPAT.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import current_app
from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate

from pps.platform.models import DRAFT_INTENTS, PREFLIGHT_STATUSES, Draft, Template

MAX_VALUES = 1000
MAX_VALUE_LENGTH = 10_000
MAX_ATTRIBUTES = 200
MAX_PER_PAGE = 100


def _scalar_map(name: str, max_items: int) -> Any:
    def check(value: dict[str, Any]) -> None:
        if len(value) > max_items:
            raise ValidationError(f"At most {max_items} entries are allowed in {name}.")
        for key, item in value.items():
            if not key or len(key) > 200:
                raise ValidationError(f"Keys of {name} must be 1 to 200 characters long.")
            if isinstance(item, bool) or not isinstance(item, str | int | float | type(None)):
                raise ValidationError(f"{name}[{key!r}] must be a string or a number.")
            if isinstance(item, str) and len(item) > MAX_VALUE_LENGTH:
                raise ValidationError(
                    f"{name}[{key!r}] must be at most {MAX_VALUE_LENGTH} characters long."
                )

    return check


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


class Input(Schema):
    """Inputs ignore fields they do not know: clients of the reference product send extras."""

    class Meta:
        unknown = EXCLUDE


def _text(max_length: int) -> fields.String:
    return fields.String(allow_none=True, validate=validate.Length(max=max_length))


class UserInput(Input):
    """Every field optional: an empty ``POST /api-ext/user`` is normal. ``""`` clears an email."""

    email = fields.String(
        allow_none=True,
        validate=[
            validate.Length(max=320),
            lambda value: value == "" or validate.Email()(value),
        ],
    )
    firstName = _text(200)
    lastName = _text(200)
    title = _text(100)
    salutation = _text(50)
    locale = fields.String(
        allow_none=True, validate=validate.Regexp(r"^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})?$")
    )
    customAttributes = JsonObjectField(allow_none=True, validate=_attributes)


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


class DraftCreateInput(Input):
    templateIdentifier = fields.String(required=True, validate=validate.Length(min=1, max=64))
    userIdentifier = fields.String(required=True, validate=validate.Length(min=1, max=64))
    intent = fields.String(
        load_default="customize",
        validate=validate.OneOf(DRAFT_INTENTS),
        metadata={"description": INTENTS_DOC},
    )
    # null is taken as "not sent": the PHP SDK may send its unset typed properties as null.
    apiDefaultValues = JsonObjectField(
        load_default=dict, allow_none=True, validate=_scalar_map("apiDefaultValues", MAX_VALUES)
    )
    customAttributes = JsonObjectField(load_default=dict, allow_none=True, validate=_attributes)
    disablePreflight = fields.Boolean(load_default=False, allow_none=True)


class DraftUpdateInput(Input):
    """A field sent as null is left as it is, like a field not sent."""

    apiDefaultValues = JsonObjectField(
        allow_none=True, validate=_scalar_map("apiDefaultValues", MAX_VALUES)
    )
    customAttributes = JsonObjectField(allow_none=True, validate=_attributes)
    disablePreflight = fields.Boolean(allow_none=True)


class DraftReplicateInput(DraftUpdateInput):
    """Values for the copy, laid over the source's key by key; nothing sent: an exact copy
    (the Magento module sends GET without a body)."""


class DraftClaimInput(Input):
    userIdentifier = fields.String(required=True, validate=validate.Length(min=1, max=64))
    drafts = fields.List(
        fields.String(validate=validate.Length(min=1, max=64)),
        required=True,
        validate=validate.Length(max=MAX_VALUES),
    )
    dryRun = fields.Boolean(load_default=False)


class MergeInput(Input):
    sourceUserIdentifier = fields.String(required=True, validate=validate.Length(min=1, max=64))


_PAGE_RANGE = validate.Range(min=1, max=1_000_000)
_PER_PAGE = fields.Integer(
    load_default=25,
    validate=validate.Range(min=1, max=MAX_PER_PAGE),
    metadata={"description": f"Items per page, 1 to {MAX_PER_PAGE}; `per_page` works too."},
)


class PageArgs(Input):
    page = fields.Integer(load_default=1, validate=_PAGE_RANGE)
    perPage = _PER_PAGE


class DraftListArgs(PageArgs):
    userIdentifier = fields.String(
        load_default=None,
        metadata={"description": "Only this user's drafts; `user_identifier` works too."},
    )


class TemplateListArgs(Input):
    page = fields.Integer(
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


def effective_values(record: Draft) -> dict[str, Any]:
    """What the editor shows: the shop's defaults, overridden by what the customer saved."""
    return {**record.api_default_values, **record.values}


def filled_count(record: Draft) -> int:
    return sum(1 for value in effective_values(record).values() if value not in (None, ""))


class PersonalizationsOut(Output):
    amount = fields.Function(
        filled_count,
        required=True,
        metadata={"type": "integer", "description": "Filled DataKey values."},
    )


class VariantOut(Output):
    id = fields.Integer(dump_default=1, required=True)
    version = fields.Integer(required=True)


class ValidationResultOut(Output):
    """The SDK's ``ValidationResult``: one preflight finding."""

    row = fields.Integer(
        allow_none=True,
        required=True,
        metadata={"description": "Variable-data record (counted from 1); null: every record."},
    )
    page = fields.Integer(required=True, metadata={"description": "Counted from 1."})
    message = fields.String(required=True)
    severity = fields.String(required=True, metadata={"enum": ["error", "warning"]})


class DraftOut(Output):
    draftHash = fields.String(attribute="draft_hash", required=True)
    userIdentifier = fields.String(attribute="user_identifier", required=True)
    userGroupIdentifier = fields.String(dump_default=None, allow_none=True)
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
        required=True,
        metadata={"description": PREFLIGHT_DOC, "enum": sorted(PREFLIGHT_STATUSES)},
    )
    variant = Whole(VariantOut, required=True)
    apiDefaultValues = fields.Dict(attribute="api_default_values", required=True)
    customAttributes = fields.Dict(attribute="custom_attributes", required=True)
    validationResults = fields.List(
        fields.Nested(ValidationResultOut), attribute="validation_results", required=True
    )


def preview_url(record: Template) -> str:
    base_url = current_app.extensions["pps.settings"].base_url
    return f"{base_url}/api-ext/files/template/{record.identifier}/page-preview-thumb"


class TemplateOut(Output):
    identifier = fields.String(required=True)
    name = fields.String(required=True)
    type = fields.String(dump_default="customizable", required=True)
    intents = fields.List(fields.String(), dump_default=lambda: ["customize"], required=True)
    pageCount = fields.Integer(attribute="page_count", required=True)
    availTemplate = fields.String(dump_default=None, allow_none=True)
    groupMembers = fields.List(fields.String(), dump_default=list, required=True)
    correctionTemplate = fields.String(dump_default=None, allow_none=True)
    customAttributes = fields.Dict(attribute="custom_attributes", required=True)
    dataKeys = fields.List(fields.String(), attribute="data_keys", required=True)
    updatedAt = Timestamp(attribute="updated_at", required=True)
    variants = fields.List(fields.Dict(), dump_default=list, required=True)
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
