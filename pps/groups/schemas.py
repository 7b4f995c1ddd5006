"""Wire shape of ``/api-ext/user-group`` (the PHP SDK's UserGroup: ``{identifier}``)."""

from __future__ import annotations

from marshmallow import fields

from pps.api.schemas import Input, Output, one


class UserGroupInput(Input):
    """The SDK sends no body; one that is sent is still read (and refused when malformed)."""


class UserGroupOut(Output):
    identifier = fields.String(required=True)


UserGroupResponse = one(UserGroupOut)
