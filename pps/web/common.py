"""What the browser routes share: the app's services, reached through Flask's app context."""

from __future__ import annotations

from flask import Response, current_app

from pps.platform.http_headers import TOKEN_URL_HEADERS
from pps.platform.services import Services


def services() -> Services:
    return current_app.extensions["pps"]  # type: ignore[no-any-return]


def token_redirect(location: str) -> Response:
    """The bodiless ``302`` of a login or a file link (see ``TOKEN_URL_HEADERS``)."""
    response = Response(b"", status=302)
    del response.headers["Content-Type"]
    response.headers["Location"] = location
    response.headers.extend(TOKEN_URL_HEADERS)
    return response
