"""``/api-ext/template``: the masters, where DataKeys and CustomAttributes are read."""

from __future__ import annotations

from typing import Any

from pps.api import bp, current_client, resource, services
from pps.api.schemas import TemplateList, TemplateListArgs, TemplateResponse
from pps.platform.errors import NotFound

blp = resource("templates", "Template")


@blp.get("/template")
@blp.query(TemplateListArgs)
@blp.response(200, TemplateList)
def list_templates(args: dict[str, Any]) -> dict[str, Any]:
    """List templates

    Without `page`, every template of the client in one response.
    """
    client = current_client().identifier
    if args["page"] is None:
        page = services().repository.list_templates(client)
    else:
        page = services().repository.list_templates(client, args["page"], args["perPage"])
    return {"data": page.items, "meta": page}


@blp.get("/template/<identifier>")
@blp.response(200, TemplateResponse)
@blp.errors(404)
def show_template(identifier: str) -> dict[str, Any]:
    """Show a template with its DataKeys"""
    record = services().repository.get_template(current_client().identifier, identifier)
    if record is None:
        raise NotFound("No template with this identifier exists for this client.")
    return {"data": record}


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource
