"""The OpenAPI 3 reference, built by flask-smorest from the schemas the views run with.

Each ``/api-ext`` resource is a :class:`pps.api.blueprint.Blueprint`; its ``body``,
``query``, ``response`` and ``errors`` decorators validate, serialise and document at once.
The browser pages (``/auth``, the editor, file links, this reference) answer HTML or files,
not schemas; :mod:`pps.web.page_docs` documents them on their real URL rules.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response
from flask_smorest import Api
from marshmallow import Schema, fields
from werkzeug.exceptions import HTTPException

_EXTENSION = "pps.api"

TAGS = [
    {"name": "Client", "description": "The client (tenant) the API key belongs to."},
    {"name": "User", "description": "Users of a client; drafts belong to users."},
    {"name": "Draft", "description": "Personalizable copies of a template, one per order line."},
    {"name": "Template", "description": "Master templates: DataKeys, CustomAttributes, pages."},
    {"name": "File", "description": "Files a shop uploads: images, PDFs, variable-data tables."},
    {"name": "Variant", "description": "Variants and themes: the looks templates offer."},
    {"name": "UserGroup", "description": "Groups of users that share their drafts."},
    {
        "name": "Files",
        "description": "Print files and previews: short-lived redirects, never bytes.",
    },
    {"name": "Webhooks", "description": "Signed event deliveries to the shop's URLs."},
    {"name": "Review", "description": "Proof approval: users of the client approve a draft."},
    {"name": "Auth", "description": "Browser login with a JWT signed by the shop, the editor."},
    {
        "name": "Not offered",
        "description": "Calls of the reference's clients that pps does not offer: each "
        "answers `403` (`FeatureNotEnabledException` in the PHP SDK) naming the feature.",
    },
    {"name": "Docs", "description": "This reference."},
]

DESCRIPTION = (
    "Server-to-server API under /api-ext (bearer API key), browser login at /auth with a JWT "
    "the shop signs with HS256 and its API key, and file endpoints that answer with "
    'short-lived redirects. Every error body has `message` and `"success": false`; 422 adds '
    "`errors` per field, named as the client spelled it.\n\n"
    "Bodies are JSON objects (PHP's `[]` counts as `{}`) or forms "
    "(`application/x-www-form-urlencoded`, or `multipart/form-data` text fields), read as "
    "PHP's `parse_str` reads what `http_build_query` writes: maps as "
    "`apiDefaultValues[Name]=Ada`, nested as deep as a JSON body may be, 32 levels with "
    "the field itself (`customAttributes[size][w]=10`); lists as `drafts[]=a&drafts[]=b`, "
    "`drafts[0]=a&drafts[1]=b` or `drafts=a&drafts=b`. At every level, keys `0` to `n-1` in "
    "order make a list, as PHP's `json_encode` would send the same array; other keys make a "
    "map. A key repeated without brackets is its last value where the field takes one "
    "value (a bracketed list sent there is a 422, as the same list in JSON is). A value and "
    "nested keys at the same place (`a=1&a[b]=2`, which PHP reads as `a[b]=2` alone) and "
    "deeper nesting are a 422 naming the field, never a value dropped without a word. Field "
    "names may be camelCase or snake_case (`userIdentifier` or `user_identifier`); "
    "camelCase wins when both are sent. A boolean is `true` or `false` in JSON (a number "
    "or a string there is a 422); in a form it is `1` or `0`, as `http_build_query` writes "
    "PHP's true and false (`true`/`false`, `yes`/`no` and `on`/`off` are read too).\n\n"
    "Text anywhere in a body, keys and fields pps does not read included, must be storable: "
    "a NUL character (U+0000) or a lone UTF-16 surrogate (a `\\ud800` escape without its "
    "pair) is a 422 naming where it is (`_body` for a key of the body itself)."
)


class ErrorOut(Schema):
    """Every error body, 4xx and 5xx alike (COMPAT.md)."""

    message = fields.String(
        required=True, metadata={"description": "What went wrong, for a developer."}
    )
    success = fields.Boolean(
        required=True,
        metadata={"description": "Always `false` on an error, as the reference answers."},
    )
    errors = fields.Dict(
        keys=fields.String(),
        values=fields.List(fields.String()),
        metadata={
            "description": "On 422: per field, the list of problems. A field is named as "
            "the client spelled it (`user_identifier` stays `user_identifier`; camelCase "
            "when it was not sent at all)."
        },
    )


class PpsApi(Api):  # type: ignore[misc]
    """flask-smorest's Api with pps's error shape: no ``code``/``status`` body of its own."""

    ERROR_SCHEMA = ErrorOut
    # Each operation lists its own error statuses (Blueprint.errors); no catch-all.
    DEFAULT_ERROR_RESPONSE_NAME = None

    def handle_http_exception(self, error: HTTPException) -> Response:
        from pps.web.errors import http_error_response

        return http_error_response(error)


def _bearer_scheme() -> dict[str, Any]:
    return {"type": "http", "scheme": "bearer", "description": "The client's API key."}


def _jwt_scheme() -> dict[str, Any]:
    return {
        "type": "apiKey",
        "in": "query",
        "name": "jwt",
        "description": "A JWT signed by the shop (HS256, the client's API key as the key).",
    }


def api_of(app: Flask) -> PpsApi:
    """The app's Api, created on first use (before any blueprint is registered on it)."""
    api: PpsApi | None = app.extensions.get(_EXTENSION)
    if api is None:
        settings = app.extensions["pps.settings"]
        api = PpsApi(
            app,
            spec_kwargs={
                "title": "pps: Print Personalization Service",
                "version": "1.0.0",
                "openapi_version": "3.0.3",
                "info": {"description": DESCRIPTION},
                "servers": [{"url": settings.base_url}],
                # Top-level tags as listed here, not one per blueprint name.
                "tags": TAGS,
            },
        )
        api.spec.components.security_scheme("bearer", _bearer_scheme())
        api.spec.components.security_scheme("jwt", _jwt_scheme())
        app.extensions[_EXTENSION] = api
    return api


def build_spec(app: Flask) -> dict[str, Any]:
    """The whole reference as a dict, ready for ``jsonify``."""
    return api_of(app).spec.to_dict()  # type: ignore[no-any-return]
