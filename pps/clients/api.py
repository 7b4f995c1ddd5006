"""``/api-ext/client``: the calling client itself."""

from __future__ import annotations

from typing import Any

from pps.api import bp, current_client, resource
from pps.api.schemas import ClientResponse

blp = resource("client", "Client")


@blp.get("/client")
@blp.response(200, ClientResponse)
def show_client() -> dict[str, Any]:
    """Show the calling client"""
    return {"data": current_client()}


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource
