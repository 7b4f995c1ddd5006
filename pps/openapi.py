"""The OpenAPI 3 reference, built from the same marshmallow schemas the views validate with.

Views carry their documentation with :func:`operation`; :func:`build_spec` walks the URL map,
so an endpoint cannot exist without appearing in ``/openapi.json``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Flask
from marshmallow import Schema

F = TypeVar("F", bound=Callable[..., Any])

TAGS = [
    {"name": "Client", "description": "The client (tenant) the API key belongs to."},
    {"name": "User", "description": "Users of a client; drafts belong to users."},
    {"name": "Draft", "description": "Personalizable copies of a template, one per order line."},
    {"name": "Template", "description": "Master templates: DataKeys, CustomAttributes, pages."},
    {
        "name": "Files",
        "description": "Print files and previews: short-lived redirects, never bytes.",
    },
    {"name": "Auth", "description": "Browser login with a JWT signed by the shop."},
    {"name": "Docs", "description": "This reference."},
]

ERROR_SCHEMA = {
    "type": "object",
    "required": ["message"],
    "properties": {
        "message": {"type": "string", "description": "What went wrong, for a developer."},
        "errors": {
            "type": "object",
            "description": "On 422: per field, the list of problems.",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
    },
}

_STANDARD_ERRORS = {
    400: "Malformed request (for example malformed JSON).",
    401: "Missing, unknown or invalid credentials.",
    404: "No such resource for this client.",
    406: "The Accept header excludes application/json.",
    413: "The body is larger than the limit.",
    422: "The data was understood but is invalid; `errors` says per field.",
    503: "A backing service is unavailable.",
}


@dataclass
class Operation:
    tags: list[str]
    summary: str
    description: str = ""
    body: type[Schema] | Schema | None = None
    response: type[Schema] | Schema | dict[str, Any] | None = None
    status: int = 200
    security: str | None = "bearer"
    parameters: list[dict[str, Any]] = field(default_factory=list)
    errors: tuple[int, ...] = (400, 401, 404, 406, 413, 422)
    response_description: str = "Success."
    response_headers: dict[str, Any] = field(default_factory=dict)
    content_type: str = "application/json"


def operation(**kwargs: Any) -> Callable[[F], F]:
    """Attach an :class:`Operation` to a view; documentation only, no behaviour."""

    def decorate(view: F) -> F:
        view._pps_operation = Operation(**kwargs)  # type: ignore[attr-defined]
        return view

    return decorate


_CONVERTER = re.compile(r"<(?:[a-z_]+:)?([a-zA-Z_][a-zA-Z0-9_]*)>")


def _path_parameters(rule_path: str) -> list[dict[str, Any]]:
    return [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _CONVERTER.findall(rule_path)
    ]


def build_spec(app: Flask) -> dict[str, Any]:
    """The whole reference as a dict, ready for ``jsonify``."""
    settings = app.extensions["pps.settings"]
    spec = APISpec(
        title="pps: Print Personalization Service",
        version="1.0.0",
        openapi_version="3.0.3",
        plugins=[MarshmallowPlugin()],
        info={
            "description": (
                "Server-to-server API under /api-ext (bearer API key), browser login at /auth "
                "with a JWT the shop signs with HS256 and its API key, and file endpoints that "
                "answer with short-lived redirects. Every error body has `message`; 422 adds "
                "`errors` per field."
            )
        },
        servers=[{"url": settings.base_url}],
        tags=TAGS,
    )
    spec.components.security_scheme(
        "bearer", {"type": "http", "scheme": "bearer", "description": "The client's API key."}
    )
    spec.components.security_scheme(
        "jwt",
        {
            "type": "apiKey",
            "in": "query",
            "name": "jwt",
            "description": "A JWT signed by the shop (HS256, the client's API key as the key).",
        },
    )
    spec.components.schema("Error", ERROR_SCHEMA)
    paths: dict[str, dict[str, Any]] = {}
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        view = app.view_functions.get(rule.endpoint)
        op: Operation | None = getattr(view, "_pps_operation", None)
        if op is None:
            continue
        path = _CONVERTER.sub(r"{\1}", rule.rule)
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            paths.setdefault(path, {})[method.lower()] = _operation_dict(op, rule.rule)
    for path, operations in paths.items():
        spec.path(path=path, operations=operations)
    return spec.to_dict()


def _operation_dict(op: Operation, rule_path: str) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    success: dict[str, Any] = {"description": op.response_description}
    if op.response is not None:
        success["content"] = {op.content_type: {"schema": op.response}}
    if op.response_headers:
        success["headers"] = op.response_headers
    responses[str(op.status)] = success
    for status in op.errors:
        responses[str(status)] = {
            "description": _STANDARD_ERRORS.get(status, "Error."),
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
    result: dict[str, Any] = {
        "tags": op.tags,
        "summary": op.summary,
        "responses": responses,
        "parameters": _path_parameters(rule_path) + op.parameters,
    }
    if op.description:
        result["description"] = op.description
    if op.security:
        result["security"] = [{op.security: []}]
    else:
        result["security"] = []
    if op.body is not None:
        result["requestBody"] = {
            "required": False,
            "content": {
                "application/json": {"schema": op.body},
                "application/x-www-form-urlencoded": {"schema": op.body},
            },
        }
    return result
