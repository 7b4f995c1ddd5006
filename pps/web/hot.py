"""Hot routes: the successful ``GET /auth`` and file URL of a rendered PDF, without Flask.

These two are what shops and browsers call most, once per login and once per file fetch.
On them Flask's per-request machinery (contexts, routing, session open and save, the
after-request hooks) costs more CPU than the work itself (see bench/README.md). So this
WSGI middleware, in front of the Flask app, runs the same plain-Python steps the views run
(:func:`pps.login.log_in`; :func:`pps.access.check_token`, :func:`pps.file_links.owned_draft`
and :func:`pps.file_links.issue_link`) and writes the answer itself when all went well.
Everything else reaches Flask:

* a request it does not take (another route, a method other than GET, a query string
  with percent-escapes or non-ASCII bytes), untouched;
* a file that must be rendered first: before any side effect, so the view does it all;
* a failure, or a login without ``redirect`` (the landing page is a template): handed over
  in the WSGI environ. The view raises the error, or finishes the login, through
  :func:`handed_over`, so nothing is done twice and a claimed ``jti`` is never claimed
  again.

``tests/test_hot_routes.py`` checks that both ways give the same answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, MutableMapping
from typing import TYPE_CHECKING, Any, cast

from flask import Flask

from pps.access import check_token
from pps.file_keys import DRAFT_FILE_KINDS, draft_file_name
from pps.file_links import issue_link, owned_draft
from pps.http_headers import TOKEN_URL_HEADERS, request_id_from
from pps.login import Login, log_in_preparing
from pps.rendering import rendered_draft_pdf
from pps.services import Services
from pps.web.session import PpsSessionInterface

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

__all__ = ["HotRoutes", "handed_over"]

_HANDED_OVER = "pps.hot_routes.handed_over"
_DRAFT_PDF = re.compile(
    r"/api-ext/files/draft/(?P<draft>[A-Za-z0-9_-]{1,64})/(?P<kind>print|low-res)"
)
_FOUND = "302 FOUND"
_NO_BODY = ("Content-Length", "0")


class HotRoutes:
    """WSGI middleware: ``app.wsgi_app = HotRoutes(app)`` after the app is set up."""

    def __init__(self, app: Flask) -> None:
        if not isinstance(app.session_interface, PpsSessionInterface):
            raise TypeError("HotRoutes writes pps session cookies; set the session interface first")
        self.app = app
        self.sessions = app.session_interface
        self.fallback: WSGIApplication = app.wsgi_app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") == "GET":
            path = environ.get("PATH_INFO", "")
            if path == "/auth":
                return self._login(environ, start_response)
            match = _DRAFT_PDF.fullmatch(path)
            if match is not None:
                return self._draft_pdf(environ, start_response, path, match["draft"], match["kind"])
        return self.fallback(environ, start_response)

    def _login(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        raw = _jwt_parameter(environ)
        if raw is None:
            return self.fallback(environ, start_response)
        try:
            login, cookie = log_in_preparing(
                self._services(), raw, request_path="/auth", prepare=self._session_cookie
            )
        except Exception as exc:  # every error page is Flask's to render
            return self._hand_over(environ, start_response, exc)
        if login.location is None or cookie is None:  # the landing page is Flask's
            return self._hand_over(environ, start_response, login)
        start_response(
            _FOUND,
            [
                _NO_BODY,
                ("Location", login.location),
                *TOKEN_URL_HEADERS,
                ("Set-Cookie", cookie),
                ("Vary", "Cookie"),
                _request_id(environ),
            ],
        )
        return []  # no body: gunicorn sends the headers alone, in one write

    def _draft_pdf(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        path: str,
        draft_hash: str,
        kind: str,
    ) -> Iterable[bytes]:
        raw = _jwt_parameter(environ)
        if not raw:
            return self.fallback(environ, start_response)
        svc = self._services()
        try:
            checked = check_token(svc, raw, request_path=path, login=False)
            draft = owned_draft(svc, checked, draft_hash)
            stored = rendered_draft_pdf(svc.storage, draft, kind)
            location = None
            if stored is not None:
                location = issue_link(
                    svc,
                    checked,
                    key=stored.key,
                    filename=draft_file_name(draft.draft_hash, kind),
                    content_type=DRAFT_FILE_KINDS[kind].content_type,
                )
        except Exception as exc:
            return self._hand_over(environ, start_response, exc)
        if location is None:  # not rendered yet: nothing was used up, the view renders it
            return self.fallback(environ, start_response)
        start_response(
            _FOUND,
            [_NO_BODY, ("Location", location), *TOKEN_URL_HEADERS, _request_id(environ)],
        )
        return []  # no body: gunicorn sends the headers alone, in one write

    def _session_cookie(self, login: Login) -> str | None:
        """Signed while Redis answers the claim (see :func:`pps.login.log_in_preparing`);
        None for a login without ``redirect``, whose landing page Flask renders."""
        if login.location is None:
            return None
        return self.sessions.fresh_session_cookie(self.app, login.session_data())

    def _services(self) -> Services:
        return cast(Services, self.app.extensions["pps"])

    def _hand_over(
        self, environ: WSGIEnvironment, start_response: StartResponse, outcome: object
    ) -> Iterable[bytes]:
        environ[_HANDED_OVER] = outcome
        return self.fallback(environ, start_response)


def handed_over(environ: MutableMapping[str, Any]) -> Login | None:
    """What a hot route left for the view: its error is raised, its login returned.

    None means the view does the whole job itself.
    """
    outcome = environ.pop(_HANDED_OVER, None)
    if isinstance(outcome, BaseException):
        raise outcome
    return cast(Login | None, outcome)


def _jwt_parameter(environ: WSGIEnvironment) -> str | None:
    """The first ``jwt`` query parameter ("" when absent), or None to leave it to Werkzeug.

    Tokens are plain ASCII without escapes; a query string with ``%``, ``+`` or non-ASCII
    bytes is decoded by Werkzeug, whose rules for invalid UTF-8 are the reference. Without
    those, splitting at ``&`` and ``=`` is all there is to decoding it.
    """
    query: str = environ.get("QUERY_STRING", "")
    if "%" in query or "+" in query or not query.isascii():
        return None
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if name == "jwt":
            return value
    return ""


def _request_id(environ: WSGIEnvironment) -> tuple[str, str]:
    return "X-Request-ID", request_id_from(environ.get("HTTP_X_REQUEST_ID"))
