"""``/api-ext/client``: the calling client itself."""

from __future__ import annotations

from flask.typing import ResponseReturnValue

from pps.api import bp, current_client, ok, present
from pps.api.schemas import ClientOut, one
from pps.openapi import operation


@bp.get("/client")
@operation(tags=["Client"], summary="Show the calling client", response=one(ClientOut))
def show_client() -> ResponseReturnValue:
    return ok({"data": present.client(current_client())})
