"""The browser layer every feature's pages share: ``bp`` (templates, static files, the
``web`` endpoint names), the session, the hooks and error pages, the message catalogue, and the
API reference (``/openapi.json``, ``/docs``, ``/``).

The pages themselves live with their feature: ``pps.auth.web`` (``/auth``),
``pps.editor.web`` (``/editor/...``), ``pps.files.web`` (``/files/<link>``); the factory
(:mod:`pps.app`) imports them, so their routes are on ``bp`` before it is registered.
"""

from __future__ import annotations

from flask import Blueprint

bp = Blueprint(
    "web",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)
