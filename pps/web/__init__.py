"""Browser-facing routes: /auth, the editor, file links and the API reference.

Modules: ``auth`` (JWT login), ``editor`` (editor entry), ``files`` (``/files/<link>``),
``file_api`` (``/api-ext/files/*``, JWT instead of the bearer key, its own blueprint) and
``docs`` (``/openapi.json``, ``/docs``, ``/``).
"""

from __future__ import annotations

from flask import Blueprint, Flask

bp = Blueprint(
    "web",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)


def register_web(app: Flask) -> None:
    from pps.openapi import api_of
    from pps.web import auth, docs, editor, files  # noqa: F401  (routes register on bp)
    from pps.web.file_api import files_api
    from pps.web.session import PpsSessionInterface

    app.session_interface = PpsSessionInterface()
    app.permanent_session_lifetime = auth.SESSION_LIFETIME
    app.register_blueprint(bp)
    api_of(app).register_blueprint(files_api)
