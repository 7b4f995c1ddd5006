"""``/api-ext/user``: users of the calling client."""

from __future__ import annotations

from typing import Any

from flask import Response

from pps.api import bp, current_client, resource, services
from pps.api.schemas import MergeInput, SuccessOut, UserInput, UserResponse
from pps.platform.errors import NotFound, ValidationFailed
from pps.variants.options import check_group
from pps.web.common import no_content

blp = resource("users", "User")

_FIELD_NAMES = {
    "email": "email",
    "firstName": "first_name",
    "lastName": "last_name",
    "title": "title",
    "salutation": "salutation",
    "locale": "locale",
    "customAttributes": "custom_attributes",
    "userGroupIdentifier": "user_group_identifier",
}
USER_NOT_FOUND = "No user with this identifier exists for this client."


def _fields(data: dict[str, Any]) -> dict[str, Any]:
    fields = {_FIELD_NAMES[key]: value for key, value in data.items() if key in _FIELD_NAMES}
    if fields.get("email") == "":  # "" clears the email: stored and shown as null
        fields["email"] = None
    if "user_group_identifier" in fields:  # null or "" takes the user out of its group
        group = check_group(
            services().repository, current_client().identifier, fields["user_group_identifier"]
        )
        fields["user_group_identifier"] = group
    return fields


@blp.post("/user")
@blp.body(UserInput)
@blp.response(201, UserResponse)
def create_user(data: dict[str, Any]) -> dict[str, Any]:
    """Create a user

    The body is optional; the new user belongs to the calling client.
    `userGroupIdentifier` puts the user in a user group of the client (422 if unknown).
    """
    record = services().repository.create_user(current_client().identifier, _fields(data))
    return {"data": record}


@blp.get("/user/<identifier>")
@blp.response(200, UserResponse)
@blp.errors(404)
def show_user(identifier: str) -> dict[str, Any]:
    """Show a user"""
    record = services().repository.get_user(current_client().identifier, identifier)
    if record is None:
        raise NotFound(USER_NOT_FOUND)
    return {"data": record}


@blp.put("/user/<identifier>")
@blp.body(UserInput)
@blp.response(200, UserResponse)
@blp.errors(404)
def update_user(data: dict[str, Any], identifier: str) -> dict[str, Any]:
    """Update a user

    Only the fields sent are changed.
    """
    record = services().repository.update_user(
        current_client().identifier, identifier, _fields(data)
    )
    if record is None:
        raise NotFound(USER_NOT_FOUND)
    return {"data": record}


@blp.delete("/user/<identifier>")
@blp.response(204, description="Deleted; the body is empty.")
@blp.errors(404)
def delete_user(identifier: str) -> Response:
    """Delete a user and the user's drafts"""
    if not services().repository.delete_user(current_client().identifier, identifier):
        raise NotFound(USER_NOT_FOUND)
    return no_content()


@blp.post("/user/<identifier>/merge")
@blp.body(MergeInput)
@blp.response(200, SuccessOut)
@blp.errors(404, s404="The target or the source user is unknown for this client.")
def merge_user(data: dict[str, Any], identifier: str) -> dict[str, Any]:
    """Merge another user into this one

    Moves the source user's drafts to this user and deletes the source user. Answers
    `{"success": true}` without a `data` wrapper; 404 when either user is unknown.
    """
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
    return {"success": True}


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource
