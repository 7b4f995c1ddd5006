"""``/api-ext/user``: users of the calling client."""

from __future__ import annotations

from typing import Any

from flask.typing import ResponseReturnValue

from pps.api import bp, current_client, no_content, ok, present, services
from pps.api.body import load
from pps.api.schemas import MergeInput, UserInput, UserOut, one
from pps.errors import NotFound, ValidationFailed
from pps.openapi import operation

_FIELD_NAMES = {
    "email": "email",
    "firstName": "first_name",
    "lastName": "last_name",
    "title": "title",
    "salutation": "salutation",
    "locale": "locale",
    "customAttributes": "custom_attributes",
}
USER_NOT_FOUND = "No user with this identifier exists for this client."


def _fields(data: dict[str, Any]) -> dict[str, Any]:
    fields = {_FIELD_NAMES[key]: value for key, value in data.items() if key in _FIELD_NAMES}
    if fields.get("email") == "":  # "" clears the email: stored and shown as null
        fields["email"] = None
    return fields


@bp.post("/user")
@operation(
    tags=["User"],
    summary="Create a user",
    description="The body is optional; the new user belongs to the calling client.",
    body=UserInput,
    response=one(UserOut),
    status=201,
)
def create_user() -> ResponseReturnValue:
    data = load(UserInput())
    record = services().repository.create_user(current_client().identifier, _fields(data))
    return ok({"data": present.user(record)}, 201)


@bp.get("/user/<identifier>")
@operation(tags=["User"], summary="Show a user", response=one(UserOut))
def show_user(identifier: str) -> ResponseReturnValue:
    record = services().repository.get_user(current_client().identifier, identifier)
    if record is None:
        raise NotFound(USER_NOT_FOUND)
    return ok({"data": present.user(record)})


@bp.put("/user/<identifier>")
@operation(
    tags=["User"],
    summary="Update a user",
    description="Only the fields sent are changed.",
    body=UserInput,
    response=one(UserOut),
)
def update_user(identifier: str) -> ResponseReturnValue:
    data = load(UserInput())
    record = services().repository.update_user(
        current_client().identifier, identifier, _fields(data)
    )
    if record is None:
        raise NotFound(USER_NOT_FOUND)
    return ok({"data": present.user(record)})


@bp.delete("/user/<identifier>")
@operation(
    tags=["User"],
    summary="Delete a user and the user's drafts",
    status=204,
    response_description="Deleted; the body is empty.",
)
def delete_user(identifier: str) -> ResponseReturnValue:
    if not services().repository.delete_user(current_client().identifier, identifier):
        raise NotFound(USER_NOT_FOUND)
    return no_content()


@bp.post("/user/<identifier>/merge")
@operation(
    tags=["User"],
    summary="Merge another user into this one",
    description="Moves the source user's drafts to this user and deletes the source user. "
    'Answers `{"success": true}` without a `data` wrapper; 404 when either user is unknown.',
    body=MergeInput,
    response={"type": "object", "properties": {"success": {"type": "boolean"}}},
)
def merge_user(identifier: str) -> ResponseReturnValue:
    data = load(MergeInput())
    client = current_client().identifier
    repository = services().repository
    if repository.get_user(client, identifier) is None:
        raise NotFound(USER_NOT_FOUND)
    source = data["sourceUserIdentifier"]
    if source == identifier:
        raise ValidationFailed(
            errors={"sourceUserIdentifier": ["A user cannot be merged into itself."]}
        )
    if not repository.merge_users(client, identifier, source):
        # The source is addressed like the target: unknown (or another client's) is a 404.
        raise NotFound("No source user with this identifier exists for this client.")
    return ok({"success": True})
