"""One error shape per surface: JSON for API and file URLs, an HTML page for browsers.

Every error, ours or Werkzeug's (404 route, 405, 413), goes through here, so no client ever
sees Flask's default HTML error page on ``/api-ext``.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
import redis
import sqlalchemy as sa
from flask import Flask, Response, g, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from pps.ephemeral import EphemeralUnavailable
from pps.errors import PpsError, ServiceUnavailable
from pps.http_headers import request_id_from
from pps.jobs.queue import JobQueueUnavailable

log = logging.getLogger("pps")

_JSON_PREFIXES = ("/api-ext", "/files/", "/openapi.json")
_PLAIN_MESSAGES = {
    400: "The request could not be understood.",
    404: "There is nothing at this address.",
    405: "This method is not allowed here.",
    413: "The request body is too large.",
    415: "Send the body as application/json or application/x-www-form-urlencoded.",
}


def request_id() -> str:
    """The id shown on error pages and sent as X-Request-ID; taken from nginx when sane."""
    rid = g.get("request_id")
    if rid is None:
        rid = request_id_from(request.headers.get("X-Request-ID"))
        g.request_id = rid
    return str(rid)


def wants_json() -> bool:
    return request.path.startswith(_JSON_PREFIXES)


def error_response(error: PpsError) -> Response:
    """Render ``error`` as JSON or as a page, whichever the current request expects."""
    rid = request_id()
    if wants_json():
        response = jsonify(error.body())
    else:
        response = Response(
            render_template(
                "error.html", status=error.status, message=error.message, request_id=rid
            ),
            mimetype="text/html",
        )
    response.status_code = error.status
    for name, value in error.headers.items():
        response.headers[name] = value
    response.headers["Cache-Control"] = "no-store"
    return response


def _from_http_exception(exc: HTTPException) -> PpsError:
    status = exc.code or 500
    error = PpsError(_PLAIN_MESSAGES.get(status) or exc.description or exc.name)
    error.status = status
    valid_methods = getattr(exc, "valid_methods", None)
    if status == 405 and valid_methods:
        error.headers["Allow"] = ", ".join(valid_methods)
    return error


def http_error_response(exc: HTTPException) -> Response:
    """Werkzeug's errors (404 route, 405, 413, ...) in pps's shape; flask-smorest's Api
    answers its HTTP errors through this too."""
    return error_response(_from_http_exception(exc))


STORE_DOWN = "The session store is unavailable; nothing was done. Try again shortly."
DATABASE_DOWN = "The database is unavailable or did not answer in time. Try again shortly."
QUEUE_DOWN = "The job queue is unavailable; nothing was queued. Try again shortly."

#: Every failure of a backing service, each answered with 503 and ``Retry-After`` (see
#: :class:`pps.errors.ServiceUnavailable`): what the database and Redis clients raise when
#: their server is down or exceeds its timeout (PPS_DATABASE_TIMEOUT, PPS_REDIS_TIMEOUT),
#: and pps's own wrappers of them. ``DBAPIError`` is narrowed to disconnects in
#: :func:`_outage_message`; anything else stays a 500.
OUTAGES: tuple[type[Exception], ...] = (
    EphemeralUnavailable,
    JobQueueUnavailable,
    sa.exc.OperationalError,  # refused, closed, connect or statement timeout
    sa.exc.TimeoutError,  # no pooled connection became free in time
    sa.exc.DBAPIError,
    psycopg.OperationalError,  # the same from a raw DBAPI cursor (pps.repository.lookups)
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
)


def _outage_message(exc: Exception) -> str | None:
    """The 503 message for a backing service's failure, None when ``exc`` is no outage."""
    if isinstance(exc, EphemeralUnavailable):
        return STORE_DOWN
    if isinstance(exc, JobQueueUnavailable):
        return QUEUE_DOWN
    if isinstance(exc, sa.exc.OperationalError | sa.exc.TimeoutError | psycopg.OperationalError):
        return DATABASE_DOWN
    if isinstance(exc, sa.exc.DBAPIError):
        return DATABASE_DOWN if exc.connection_invalidated else None
    if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
        return ServiceUnavailable.default_message
    return None


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(PpsError)
    def _pps_error(error: PpsError) -> Response:
        return error_response(error)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Any:
        return http_error_response(exc)

    def _outage(exc: Exception) -> Response:
        message = _outage_message(exc)
        if message is None:
            return _unexpected(exc)
        log.error("backing service unavailable (request %s): %r", request_id(), exc)
        return error_response(ServiceUnavailable(message))

    for outage in OUTAGES:
        app.register_error_handler(outage, _outage)

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        log.exception("unhandled error (request %s)", request_id())
        error = PpsError(f"Internal error; quote request id {request_id()} when reporting it.")
        return error_response(error)
