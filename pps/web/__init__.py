"""Browser-facing routes: /auth, the editor, file links and the API reference.

Modules: ``auth`` (JWT login), ``editor`` (editor entry), ``files`` (``/files/<link>``),
``file_api`` (``/api-ext/files/*``, JWT instead of the bearer key, its own blueprint) and
``docs`` (``/openapi.json``, ``/docs``, ``/``).
"""

from __future__ import annotations

from flask import Blueprint, Flask, Response

bp = Blueprint(
    "web",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)

#: Every HTML page: own-origin resources only, no inline scripts or styles, no framing.
#: (The editor step ``embed``, framed by the shop, would need ``frame-ancestors`` with the
#: client's allowed origins; it is not offered yet.)
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def security_headers(response: Response) -> Response:
    """Defaults for HTML pages, ours and the error pages; a view may set its own first."""
    if response.mimetype == "text/html":
        response.headers.setdefault("Content-Security-Policy", PAGE_CSP)
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
    return response


def register_web(app: Flask) -> None:
    from pps.web import auth, docs, editor, files  # noqa: F401  (routes register on bp)
    from pps.web.file_api import files_api
    from pps.web.session import PpsSessionInterface

    app.session_interface = PpsSessionInterface()
    app.permanent_session_lifetime = auth.SESSION_LIFETIME
    app.register_blueprint(bp)
    app.register_blueprint(files_api)
    app.after_request(security_headers)
