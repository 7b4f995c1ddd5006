"""What the browser routes share: the app's services, reached through Flask's app context,
the bodiless redirects of logins, file links and the router, and the refusal of ``HEAD``
where a ``GET`` uses something up."""

from __future__ import annotations

from collections.abc import Iterable

from flask import Response, current_app, request

from pps.platform.errors import MethodNotAllowed
from pps.platform.http_headers import TOKEN_URL_HEADERS
from pps.platform.services import Services

__all__ = ["bodiless_redirect", "no_content", "refuse_head", "services", "token_redirect"]


def services() -> Services:
    return current_app.extensions["pps"]  # type: ignore[no-any-return]


class _Bodiless(Response):
    """An answer without content, so without ``Content-Type``: Werkzeug sets its default
    mimetype only when there is one, and a redirect has no document to describe."""

    default_mimetype = None


def no_content() -> Response:
    """``204`` with no body and so no ``Content-Type`` (clients test for 204)."""
    return _Bodiless(status=204)


def bodiless_redirect(
    location: str, *, status: int = 302, headers: Iterable[tuple[str, str]] = ()
) -> Response:
    """A redirect with no body: browsers follow ``Location``, and it goes out in one write."""
    return _Bodiless(status=status, headers=[("Location", location), *headers])


def token_redirect(location: str) -> Response:
    """The bodiless ``302`` of a login or a file link (see ``TOKEN_URL_HEADERS``)."""
    return bodiless_redirect(location, headers=TOKEN_URL_HEADERS)


def refuse_head(message: str, *, allow: str = "GET") -> None:
    """A ``405`` for ``HEAD``, before anything is used up or written.

    Flask answers ``HEAD`` with the ``GET`` view, and link scanners in mail and chat clients
    probe URLs that way; where ``GET`` spends a single-use token or a code, or writes, a
    probe must not. A route that always does is declared without ``HEAD``
    (:mod:`pps.web.routing`); this is for a ``GET`` that uses something up only with some
    queries (an editor URL carrying a handoff code).
    """
    if request.method == "HEAD":
        raise MethodNotAllowed(message, headers={"Allow": allow})
