"""The app-wide hooks, for what every answer shares whatever its surface.

Two only; everything else is scoped to its blueprint (the API's bearer key, the file
endpoints' refusal of ``HEAD``):

* :func:`every_answer`: the request id and the headers of :mod:`pps.platform.http_headers` on every
  answer, errors and redirects included;
* :func:`relative_routing_redirect`: Werkzeug's routing redirects (``//editor//x`` to
  ``/editor/x``, a missing or extra trailing slash) name the ``Host`` the client sent as
  an absolute URL; pps answers them with the path alone, so a forged ``Host`` never comes
  back in a ``Location``, and with the headers of a token URL's answer, since the URL may
  carry one.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Flask, Response, request
from werkzeug.routing import RequestRedirect

from pps.platform.http_headers import TOKEN_URL_HEADERS, page_headers
from pps.web.common import bodiless_redirect
from pps.web.errors import request_id

__all__ = ["every_answer", "register_hooks", "relative_routing_redirect"]

_CSP = "content-security-policy"


def every_answer(response: Response) -> Response:
    """Request id everywhere; ``nosniff`` where there is content; the page defaults on
    HTML, ours and the error pages (a view may set its own first).

    The names already set are read in one pass, not looked up one by one: Werkzeug's
    ``Headers`` raises and catches a ``KeyError`` for every name it does not find, which
    made this hook cost 18 us of an HTML answer's 56; 11-12 us now (``bench/README.md``,
    "Threads per worker": a no-op view in pps's app, in-process).
    """
    headers = response.headers
    headers["X-Request-ID"] = request_id()
    present = {name.lower() for name, _ in headers}  # Headers yields (name, value)
    if "content-type" not in present:  # nothing to sniff without content
        return response
    defaults: tuple[tuple[str, str], ...] = (("X-Content-Type-Options", "nosniff"),)
    if response.mimetype == "text/html":
        csp = headers.get("Content-Security-Policy") if _CSP in present else None
        defaults += page_headers(csp)
    for name, value in defaults:
        if name.lower() not in present:
            headers.add(name, value)
    return response


def relative_routing_redirect() -> Response | None:
    """The redirect Werkzeug's router asked for, with a relative ``Location``.

    Routing runs before the hooks and keeps its outcome in ``request.routing_exception``;
    Flask hands a :class:`~werkzeug.routing.RequestRedirect` to no error handler, so it is
    answered here, before any view or blueprint hook would see the request.
    """
    redirect = request.routing_exception
    if not isinstance(redirect, RequestRedirect):
        return None
    target = urlsplit(redirect.new_url)
    # The router's path is built from a rule, so it starts with one slash; a second one
    # would make it protocol-relative (another host), so it is never let through.
    location = "/" + target.path.lstrip("/")
    if target.query:
        location += "?" + target.query
    # The URL may carry a token (?jwt=, ?handoff=, a file link's path), which the Location
    # repeats: as on the answers of the token URLs themselves, no cache may keep a 308
    # (cacheable by default) and the next request sends no Referer.
    return bodiless_redirect(location, status=redirect.code, headers=TOKEN_URL_HEADERS)


def register_hooks(app: Flask) -> None:
    app.before_request(relative_routing_redirect)
    app.after_request(every_answer)
