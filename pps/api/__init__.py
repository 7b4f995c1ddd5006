"""The server-to-server API under ``/api-ext``: a bearer API key names the client.

``bp`` holds what every resource shares (the bearer key, the Accept check, how a 422 names
fields); each resource is a :class:`pps.api.blueprint.Blueprint` of its own nested in it
(see ``register_api`` in :mod:`pps.app`), so endpoints are named ``api.<resource>.<view>``.
"""

from __future__ import annotations

from typing import Any

from flask import Response, current_app, g, request
from werkzeug.routing import BaseConverter

from pps.api.blueprint import Blueprint
from pps.api.parser import sent_spellings
from pps.platform.errors import NotAcceptable, Unauthorized, ValidationFailed
from pps.platform.models import Client
from pps.platform.services import Services

#: Every bearer-key operation may answer these, whatever it does.
API_STATUSES = (401, 406, 503)

bp = Blueprint("api", __name__, url_prefix="/api-ext", tag="API")


def resource(name: str, tag: str) -> Blueprint:
    """The blueprint of one resource under ``/api-ext``, documented under ``tag``."""
    return Blueprint(name, f"pps.api.{name}", tag=tag, always=API_STATUSES)


def services() -> Services:
    return current_app.extensions["pps"]  # type: ignore[no-any-return]


def current_client() -> Client:
    return g.pps_client  # type: ignore[no-any-return]


def bearer_key() -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise Unauthorized()
    return value.strip()


def authenticate() -> None:
    """Bearer key first (a stranger learns nothing else), then the Accept header."""
    client = services().clients.by_api_key(bearer_key())
    if client is None:
        raise Unauthorized("The API key is unknown or disabled.")
    g.pps_client = client
    # An empty Accept names no type at all, so it is read as none sent (anything goes).
    accept = request.headers.get("Accept", "")
    if accept.strip() and request.accept_mimetypes["application/json"] == 0:
        raise NotAcceptable()


def _name_fields_as_sent(error: ValidationFailed) -> Response:
    """Name each field of a 422 as the client spelled it (``user_identifier`` stays
    ``user_identifier``): the PHP SDK hands ``errors`` to its caller as they are, keyed by
    the names the caller sent."""
    from pps.web.errors import error_response

    spellings = sent_spellings()
    if spellings:
        renamed: dict[str, list[str]] = {}
        for key, messages in error.errors.items():
            head, dot, rest = key.partition(".")
            name = f"{spellings[head]}{dot}{rest}" if head in spellings else key
            renamed.setdefault(name, []).extend(messages)
        error.errors = renamed
    return error_response(error)


bp.before_request(authenticate)
bp.register_error_handler(ValidationFailed, _name_fields_as_sent)


class DraftHashConverter(BaseConverter):
    """A draft hash in a path: anything but ``claim``, so ``GET /api-ext/draft/claim`` is
    the 405 of ``POST /api-ext/draft/claim``, not a search for a draft named "claim"."""

    regex = r"(?!claim$)[^/]+"


def draft_hash_schema(converter: BaseConverter) -> dict[str, Any]:
    return {
        "type": "string",
        "description": "The draft's hash (32 lowercase letters and digits).",
    }
