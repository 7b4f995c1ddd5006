"""Wire shape of ``/api-ext/user-group`` (the PHP SDK's UserGroup: ``{identifier}``)."""

from __future__ import annotations

from marshmallow import fields

from pps.api.schemas import Output, one


class UserGroupOut(Output):
    identifier = fields.String(required=True)


UserGroupResponse = one(UserGroupOut)
