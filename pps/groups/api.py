"""``/api-ext/user-group``: groups of a client's users that share drafts (see membership)."""

from __future__ import annotations

from typing import Any

from pps.api import bp, current_client, resource, services
from pps.groups.schemas import UserGroupInput, UserGroupResponse
from pps.platform.errors import NotFound

blp = resource("user_groups", "UserGroup")

USER_GROUP_NOT_FOUND = "No user group with this identifier exists for this client."


@blp.post("/user-group")
@blp.body(UserGroupInput)
@blp.response(201, UserGroupResponse)
def create_user_group(data: dict[str, Any]) -> dict[str, Any]:
    """Create a user group

    No body. Put users in it with `userGroupIdentifier` on `POST|PUT /api-ext/user`;
    their drafts join it when created (or name it with `userGroupIdentifier` on the
    draft). Members of a draft's group find it with
    `GET /api-ext/draft?userGroupIdentifier=`, may be given it with `POST
    /api-ext/draft/claim` and `userGroupIdentifier`, and open, save and finish it in the
    editor like its own user.
    """
    return {"data": services().repository.create_user_group(current_client().identifier)}


@blp.get("/user-group/<identifier>")
@blp.response(200, UserGroupResponse)
@blp.errors(404)
def show_user_group(identifier: str) -> dict[str, Any]:
    """Show a user group"""
    group = services().repository.get_user_group(current_client().identifier, identifier)
    if group is None:
        raise NotFound(USER_GROUP_NOT_FOUND)
    return {"data": group}


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource
