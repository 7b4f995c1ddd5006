"""The application factory. Nothing runs at import: ``wsgi.py``, the ``pps`` console script
(:mod:`pps.__main__`) and the tests call it; the top-level ``app.py`` re-exports it for
``flask --app app``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Flask

from pps.settings import Settings, load_settings


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Build a pps app; ``config`` overrides settings by field name (see ``pps.settings``)."""
    settings = load_settings(overrides=config)
    app = Flask(__name__, instance_path=str(settings.instance_path), static_folder=None)
    register_settings(app, settings)
    register_services(app, settings)
    register_blueprints(app)
    register_error_handlers(app)
    register_hooks(app)
    register_cli(app)
    return app


def register_settings(app: Flask, settings: Settings) -> None:
    from pps.web.request_body import LimitedRequest

    app.config.update(
        SECRET_KEY=settings.secret_key,
        MAX_CONTENT_LENGTH=settings.max_body_bytes,
        SESSION_COOKIE_NAME="pps_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.secure_cookies,
        PREFERRED_URL_SCHEME="https" if settings.secure_cookies else "http",
        JSON_SORT_KEYS=False,
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.request_class = LimitedRequest  # MAX_CONTENT_LENGTH for chunked bodies too
    app.extensions["pps.settings"] = settings


def register_services(app: Flask, settings: Settings) -> None:
    from pps.services import build_services

    app.extensions["pps"] = build_services(settings)


def register_blueprints(app: Flask) -> None:
    from pps.api import register_api
    from pps.web import register_web
    from pps.web.page_docs import document_pages

    register_api(app)
    register_web(app)
    document_pages(app)


def register_error_handlers(app: Flask) -> None:
    from pps.http_errors import register_error_handlers as register

    register(app)


def register_hooks(app: Flask) -> None:
    from pps.web.hooks import register_hooks as register

    register(app)


def register_cli(app: Flask) -> None:
    from pps.cli import pps_group

    app.cli.add_command(pps_group)
