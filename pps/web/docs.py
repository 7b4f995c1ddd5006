"""The API reference: ``/openapi.json``, an interactive Swagger UI at ``/docs``, and ``/``.

Swagger UI's assets come from the installed ``swagger_ui_bundle`` package and are served by
pps itself (no CDN), and its start-up script is a static file, so the page runs under a
Content-Security-Policy without ``'unsafe-inline'`` scripts.
"""

from __future__ import annotations

import threading
from typing import Any

from flask import Response, current_app, jsonify, render_template, request, send_from_directory
from swagger_ui_bundle import swagger_ui_path

from pps.platform.errors import NotFound
from pps.web import bp
from pps.web.openapi import build_spec

#: The files of the bundle the page uses; nothing else of the package is served.
DOCS_ASSETS = frozenset(
    {
        "swagger-ui-bundle.js",
        "swagger-ui-standalone-preset.js",
        "swagger-ui.css",
        "favicon-32x32.png",
        "favicon-16x16.png",
    }
)

#: Swagger UI sets inline styles and uses data: URIs for its icons; scripts stay 'self'.
DOCS_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)

_SPEC_KEY = "pps.openapi_spec"
_spec_lock = threading.Lock()


def cached_spec() -> dict[str, Any]:
    """The app's OpenAPI document, built once per app on first use (after all routes exist)."""
    spec: dict[str, Any] | None = current_app.extensions.get(_SPEC_KEY)
    if spec is None:
        with _spec_lock:
            spec = current_app.extensions.get(_SPEC_KEY)
            if spec is None:
                spec = build_spec(current_app)
                current_app.extensions[_SPEC_KEY] = spec
    return spec


@bp.get("/openapi.json")
def openapi_json() -> Response:
    response = jsonify(cached_spec())
    response.headers["Cache-Control"] = "no-cache"
    response.headers["Access-Control-Allow-Origin"] = "*"
    return response


@bp.get("/docs")
def docs() -> Response:
    response = Response(render_template("docs.html"), mimetype="text/html")
    response.headers["Content-Security-Policy"] = DOCS_CSP
    return response


@bp.get("/docs/assets/<filename>")
def docs_asset(filename: str) -> Response:
    if filename not in DOCS_ASSETS:
        raise NotFound()
    response = send_from_directory(swagger_ui_path, filename, max_age=24 * 3600)
    return response


@bp.get("/")
def home() -> Response:
    # ``pps demo`` sends the editor's Finish and Cancel here, standing in for a shop.
    returned = request.args.get("returned")
    if returned not in ("finished", "cancelled"):
        returned = None
    return Response(render_template("home.html", returned=returned), mimetype="text/html")
