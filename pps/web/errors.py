"""One error shape per surface: JSON for API and file URLs, an HTML page for browsers.

Every error, ours or Werkzeug's (404 route, 405, 413), goes through here, so no client ever
sees Flask's default HTML error page on ``/api-ext``.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from pps.platform.errors import InsufficientStorage, PpsError, ServiceUnavailable
from pps.platform.http_headers import request_id_from
from pps.platform.outages import OUTAGES, STORAGE_DOWN, outage_message
from pps.platform.storage import StorageUnavailable
from pps.web.error_pages import error_page_context

log = logging.getLogger("pps")

_JSON_PREFIXES = ("/api-ext", "/files/", "/openapi.json")
#: Where the request's id is kept once made: in the WSGI environ, as Werkzeug and Flask keep
#: their own per-request values.
_REQUEST_ID_KEY = "pps.request_id"
_PLAIN_MESSAGES = {
    400: "The request could not be understood.",
    404: "There is nothing at this address.",
    405: "This method is not allowed here.",
    413: "The request body is too large.",
    415: "Send the body as application/json or application/x-www-form-urlencoded.",
}


def request_id() -> str:
    """The id shown on error pages and sent as X-Request-ID; taken from nginx when sane.

    Read and kept in the WSGI environ, reached through one proxy lookup: the header through
    Werkzeug's ``Headers`` raises and catches an exception when it is missing, and keeping
    the id on ``g`` took two more lookups. A login's after-request stage 38 -> 33 us
    (``bench/stages.py``), of which the id is still about 9.
    """
    environ = request.environ
    rid = environ.get(_REQUEST_ID_KEY)
    if rid is None:
        rid = environ[_REQUEST_ID_KEY] = request_id_from(environ.get("HTTP_X_REQUEST_ID"))
    return str(rid)


def wants_json() -> bool:
    """JSON for the API and file URLs, and for a script that asks for JSON before HTML.

    The editor's scripts (upload, autosave, live preview) send ``Accept`` naming JSON and no
    HTML; a browser's navigation names HTML first and a ``fetch`` without ``Accept`` sends
    ``*/*``, which ties and keeps the page.
    """
    if request.path.startswith(_JSON_PREFIXES):
        return True
    accept = request.accept_mimetypes
    return accept.quality("application/json") > accept.quality("text/html")


def json_error_response(error: PpsError) -> Response:
    """``error`` as JSON (``message``, its headers such as ``Retry-After``), not cached."""
    response = jsonify(error.body())
    return _finish(response, error)


def error_response(error: PpsError) -> Response:
    """Render ``error`` as JSON or as a page, whichever the current request expects."""
    if wants_json():
        return json_error_response(error)
    response = Response(
        render_template("error.html", **error_page_context(error, request_id())),
        mimetype="text/html",
    )
    return _finish(response, error)


def _finish(response: Response, error: PpsError) -> Response:
    response.status_code = error.status
    for name, value in error.headers.items():
        response.headers[name] = value
    response.headers["Cache-Control"] = "no-store"
    return response


def outage_error(exc: Exception) -> ServiceUnavailable | None:
    """The 503 that answers ``exc`` when it is an outage of a backing service (logged here),
    None when it is not one; for views that answer in a shape of their own."""
    message = outage_message(exc)
    if message is None:
        return None
    log.error("backing service unavailable (request %s): %r", request_id(), exc)
    return ServiceUnavailable(message)


def _from_http_exception(exc: HTTPException) -> PpsError:
    status = exc.code or 500
    error = PpsError(_PLAIN_MESSAGES.get(status) or exc.description or exc.name)
    error.status = status
    valid_methods = getattr(exc, "valid_methods", None)
    if status == 405 and valid_methods:
        error.headers["Allow"] = ", ".join(sorted(valid_methods))
    return error


def http_error_response(exc: HTTPException) -> Response:
    """Werkzeug's errors (404 route, 405, 413, ...) in pps's shape; flask-smorest's Api
    answers its HTTP errors through this too."""
    return error_response(_from_http_exception(exc))


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(PpsError)
    def _pps_error(error: PpsError) -> Response:
        if error.detail is not None:
            log.warning("%s (request %s): %s", error.message, request_id(), error.detail)
        return error_response(error)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Any:
        return http_error_response(exc)

    def _outage(exc: Exception) -> Response:
        error = outage_error(exc)
        if error is None:
            return _unexpected(exc)
        return error_response(error)

    for outage in OUTAGES:
        app.register_error_handler(outage, _outage)

    @app.errorhandler(StorageUnavailable)
    def _storage(exc: StorageUnavailable) -> Response:
        log.error("file storage failed (request %s): %r", request_id(), exc)
        if exc.full:
            return error_response(InsufficientStorage())
        return error_response(ServiceUnavailable(STORAGE_DOWN))

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        log.exception("unhandled error (request %s)", request_id())
        error = PpsError(f"Internal error; quote request id {request_id()} when reporting it.")
        return error_response(error)
