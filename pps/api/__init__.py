"""The server-to-server API under ``/api-ext``: a bearer API key names the client."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, current_app, g, jsonify, request
from flask.typing import ResponseReturnValue

from pps.errors import NotAcceptable, Unauthorized
from pps.models import Client
from pps.services import Services

bp = Blueprint("api", __name__, url_prefix="/api-ext")


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


@bp.before_request
def authenticate() -> None:
    """Bearer key first (a stranger learns nothing else), then the Accept header."""
    client = services().clients.by_api_key(bearer_key())
    if client is None:
        raise Unauthorized("The API key is unknown or disabled.")
    g.pps_client = client
    if "Accept" in request.headers and request.accept_mimetypes["application/json"] == 0:
        raise NotAcceptable()


def ok(payload: dict[str, Any], status: int = 200) -> ResponseReturnValue:
    return jsonify(payload), status


def no_content() -> ResponseReturnValue:
    return "", 204


def register_api(app: Flask) -> None:
    from pps.api import clients, drafts, processing, templates, users  # noqa: F401  (routes on bp)

    app.register_blueprint(bp)
