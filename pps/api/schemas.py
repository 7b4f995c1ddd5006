"""marshmallow schemas at the edge: what comes in is validated here, what goes out is
documented here. They never touch the database or the current client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate

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


class DraftCreateInput(Input):
    templateIdentifier = fields.String(required=True, validate=validate.Length(min=1, max=64))
    userIdentifier = fields.String(required=True, validate=validate.Length(min=1, max=64))
    intent = fields.String(
        load_default="customize", validate=validate.OneOf(["customize", "upload", "order"])
    )
    # null is taken as "not sent": the PHP SDK may send its unset typed properties as null.
    apiDefaultValues = JsonObjectField(
        load_default=dict, allow_none=True, validate=_scalar_map("apiDefaultValues", MAX_VALUES)
    )
    customAttributes = JsonObjectField(load_default=dict, allow_none=True, validate=_attributes)


class DraftUpdateInput(Input):
    """A field sent as null is left as it is, like a field not sent."""

    apiDefaultValues = JsonObjectField(
        allow_none=True, validate=_scalar_map("apiDefaultValues", MAX_VALUES)
    )
    customAttributes = JsonObjectField(allow_none=True, validate=_attributes)


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


class PageArgs(Input):
    page = fields.Integer(load_default=1, validate=validate.Range(min=1, max=1_000_000))
    perPage = fields.Integer(load_default=25, validate=validate.Range(min=1, max=MAX_PER_PAGE))


# -- output (documentation of what the presenters in pps.api.present build) -------------


class Output(Schema):
    pass


class ProfileOut(Output):
    salutation = fields.String(allow_none=True)
    title = fields.String(allow_none=True)
    firstName = fields.String(allow_none=True)
    lastName = fields.String(allow_none=True)
    email = fields.String(allow_none=True)


class UserOut(Output):
    identifier = fields.String(required=True)
    locale = fields.String(allow_none=True)
    profile = fields.Nested(ProfileOut, required=True)
    customAttributes = fields.Dict(required=True)


class PersonalizationsOut(Output):
    amount = fields.Integer(required=True, metadata={"description": "Filled DataKey values."})


class VariantOut(Output):
    id = fields.Integer(required=True)
    version = fields.Integer(required=True)


class DraftOut(Output):
    draftHash = fields.String(required=True)
    userIdentifier = fields.String(required=True)
    userGroupIdentifier = fields.String(allow_none=True)
    templateIdentifier = fields.String(required=True)
    activeGroupTemplateIdentifier = fields.String(allow_none=True)
    intent = fields.String(required=True)
    state = fields.String(
        required=True,
        metadata={
            "description": "init (created), edited (values saved in the editor), "
            "finished (the customer finished personalizing).",
            "enum": ["init", "edited", "finished"],
        },
    )
    setupStatus = fields.String(required=True)
    personalizations = fields.Nested(PersonalizationsOut, required=True)
    preflightStatus = fields.String(required=True)
    variant = fields.Nested(VariantOut, required=True)
    apiDefaultValues = fields.Dict(required=True)
    customAttributes = fields.Dict(required=True)
    validationResults = fields.List(fields.Dict(), required=True)


class TemplateOut(Output):
    identifier = fields.String(required=True)
    name = fields.String(required=True)
    type = fields.String(required=True)
    intents = fields.List(fields.String(), required=True)
    pageCount = fields.Integer(required=True)
    availTemplate = fields.String(allow_none=True)
    groupMembers = fields.List(fields.String(), required=True)
    correctionTemplate = fields.String(allow_none=True)
    customAttributes = fields.Dict(required=True)
    dataKeys = fields.List(fields.String(), required=True)
    updatedAt = fields.DateTime(required=True)
    variants = fields.List(fields.Dict(), required=True)
    previewUrl = fields.String(
        required=True,
        metadata={"description": "The page-preview-thumb file endpoint; append ?jwt=..."},
    )


class ClientOut(Output):
    identifier = fields.String(required=True)
    name = fields.String(required=True)
    createdAt = fields.DateTime(required=True)


class MetaOut(Output):
    currentPage = fields.Integer(required=True)
    lastPage = fields.Integer(required=True)
    perPage = fields.Integer(required=True)
    total = fields.Integer(required=True)


# The schema classes themselves go into these shapes (not "$ref" strings): apispec's
# marshmallow plugin then registers each one under components and writes the reference, so a
# documented response can never point at a component that does not exist.


def one(schema: type[Output]) -> dict[str, Any]:
    """OpenAPI shape of ``{"data": <schema>}``."""
    return {"type": "object", "required": ["data"], "properties": {"data": schema}}


def many(schema: type[Output]) -> dict[str, Any]:
    """OpenAPI shape of ``{"data": [<schema>...], "meta": {...}}``."""
    return {
        "type": "object",
        "required": ["data", "meta"],
        "properties": {"data": {"type": "array", "items": schema}, "meta": MetaOut},
    }
