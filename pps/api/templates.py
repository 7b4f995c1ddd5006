"""``/api-ext/template``: the masters, where DataKeys and CustomAttributes are read."""

from __future__ import annotations

from flask import request
from flask.typing import ResponseReturnValue

from pps.api import bp, current_client, ok, present, services
from pps.api.body import PAGE_PARAMETERS, page_args
from pps.api.schemas import TemplateOut, many, one
from pps.errors import NotFound
from pps.openapi import operation


@bp.get("/template")
@operation(
    tags=["Template"],
    summary="List templates",
    description="Without `page`, every template of the client in one response.",
    parameters=PAGE_PARAMETERS,
    response=many(TemplateOut),
)
def list_templates() -> ResponseReturnValue:
    client = current_client().identifier
    if "page" in request.args:
        args = page_args()
        page = services().repository.list_templates(client, args["page"], args["perPage"])
    else:
        page_args()
        page = services().repository.list_templates(client)
    base_url = services().settings.base_url
    return ok(
        {
            "data": [present.template(item, base_url) for item in page.items],
            "meta": present.meta(page),
        }
    )


@bp.get("/template/<identifier>")
@operation(
    tags=["Template"], summary="Show a template with its DataKeys", response=one(TemplateOut)
)
def show_template(identifier: str) -> ResponseReturnValue:
    record = services().repository.get_template(current_client().identifier, identifier)
    if record is None:
        raise NotFound("No template with this identifier exists for this client.")
    return ok({"data": present.template(record, services().settings.base_url)})
