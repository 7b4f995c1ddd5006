"""The application factory. Nothing runs at import: ``wsgi.py``, the ``pps`` console script
(:mod:`pps.__main__`) and the tests call it; the top-level ``app.py`` re-exports
:func:`create_app_or_stop` as ``create_app`` for ``flask --app app``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click
from flask import Flask

from pps.platform.settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from pps.platform.queue import Dispatch
    from pps.platform.services import Services


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Build a pps app; ``config`` overrides settings by field name (see
    :mod:`pps.platform.settings`)."""
    settings = load_settings(overrides=config)
    app = Flask(__name__, instance_path=str(settings.instance_path), static_folder=None)
    register_settings(app, settings)
    register_services(app, settings)
    register_blueprints(app)
    register_error_handlers(app)
    register_hooks(app)
    register_cli(app)
    return app


class SettingsStop(SettingsError, click.ClickException):
    """A :class:`SettingsError` that click prints as one line (flask printed a traceback);
    callers in Python still catch it as a SettingsError."""

    def __init__(self, message: str) -> None:
        click.ClickException.__init__(self, message)


def create_app_or_stop(config: Mapping[str, Any] | None = None) -> Flask:
    """:func:`create_app`, stopping ``flask --app app`` with one line on a bad setting."""
    try:
        return create_app(config)
    except SettingsError as exc:
        raise SettingsStop(str(exc)) from None


def register_settings(app: Flask, settings: Settings) -> None:
    from pps.editor.embed import cookie_policy
    from pps.web.request_body import LimitedRequest
    from pps.web.routing import PpsRule

    # A cookie that survives the shop's cross-site <iframe> where browsers allow one, named
    # __Host-... whenever it is Secure, so that no sibling subdomain can plant it: the
    # prefix needs Path=/ and no Domain, set here rather than left to APPLICATION_ROOT.
    cookie = cookie_policy(settings.base_url)
    app.config.update(
        SECRET_KEY=settings.secret_key,
        MAX_CONTENT_LENGTH=settings.max_body_bytes,
        SESSION_COOKIE_NAME=cookie.name,
        SESSION_COOKIE_PATH="/",
        SESSION_COOKIE_DOMAIN=None,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE=cookie.samesite,
        SESSION_COOKIE_SECURE=cookie.secure,
        SESSION_COOKIE_PARTITIONED=cookie.partitioned,
        PREFERRED_URL_SCHEME="https" if settings.secure_cookies else "http",
        JSON_SORT_KEYS=False,
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.request_class = LimitedRequest  # MAX_CONTENT_LENGTH for chunked bodies too
    app.url_rule_class = PpsRule  # head=False for routes whose GET uses something up
    app.extensions["pps.settings"] = settings


def register_services(app: Flask, settings: Settings) -> None:
    from pps.platform.services import build_services
    from pps.processing.job import run_in_process
    from pps.reviews.service import Reviews, notify_in_background
    from pps.reviews.store import open_review_store

    services = build_services(settings, run_in_process, start_outbox)
    app.extensions["pps"] = services
    app.extensions["pps.reviews"] = Reviews(
        services, open_review_store(services.repository), notify_in_background(services)
    )


def start_outbox(services: Services) -> Dispatch:
    """This process's outbox dispatcher, with the jobs the outbox carries besides messages
    (a PDF to download from a shop's URL)."""
    from pps.drafts.url_upload import FETCH_JOB, UrlUploadJob
    from pps.webhooks.dispatcher import start_dispatcher

    return start_dispatcher(services, {FETCH_JOB: UrlUploadJob(services)})


def resume_outbox(app: Flask) -> bool:
    """Start the outbox dispatcher of a process that serves ``app`` when rows are pending
    (:meth:`pps.platform.services.Services.resume_outbox`); True when one runs. Call it once
    in each serving process after it is forked: ``deploy/gunicorn.conf.py`` does in
    ``post_worker_init``.

    Why there, and not in :func:`create_app` or on a worker's first request: every CLI
    command (``pps db upgrade``, ``pps client ...``, ``flask ...``) and every test builds
    an app too, and must not start threads that send; and a restarted worker that gets no
    request (a quiet night after a deploy) must still send what it owes, retries included,
    at no cost to any request.
    """
    services: Services = app.extensions["pps"]
    return services.resume_outbox()


def resume_jobs(app: Flask) -> bool:
    """Without Redis, start the job thread of a process that serves ``app``: it looks for
    batches whose job was lost (a process that stopped took its queue with it) as it starts
    and every minute, and queues them again or fails them (:mod:`pps.processing.lost`);
    True when it runs. With Redis, ``pps worker`` does that. Call it where
    :func:`resume_outbox` is called, for the same reasons.
    """
    from pps.platform.queue import ThreadJobQueue
    from pps.processing.lost import INTERVAL, sweep_lost_jobs

    services: Services = app.extensions["pps"]
    if not isinstance(services.jobs, ThreadJobQueue):
        return False
    services.jobs.watch(lambda: sweep_lost_jobs(services), INTERVAL)
    return True


def register_blueprints(app: Flask) -> None:
    from pps.web.page_docs import document_pages

    register_api(app)
    register_web(app)
    document_pages(app)


def register_api(app: Flask) -> None:
    """``/api-ext``: the API blueprint with each feature's resource nested in it (the feature
    modules nest themselves when imported: ``api.<resource>.<view>``), and the file endpoints
    (a JWT in the query instead of the bearer key) beside it."""
    from pps.api import DraftHashConverter, bp, draft_hash_schema
    from pps.api.not_offered import not_offered_tokens
    from pps.clients import api as clients  # noqa: F401  (each nests itself in bp)
    from pps.drafts import api as drafts  # noqa: F401
    from pps.drafts import upload_api as draft_upload  # noqa: F401
    from pps.files.api import files_api
    from pps.groups import api as groups  # noqa: F401
    from pps.processing import api as processing  # noqa: F401
    from pps.reviews.api import review_files
    from pps.templates import api as templates  # noqa: F401
    from pps.uploads import api as uploads  # noqa: F401
    from pps.users import api as users  # noqa: F401
    from pps.variants import api as variants  # noqa: F401
    from pps.vdata import api as vdata  # noqa: F401
    from pps.web.openapi import api_of
    from pps.webhooks import api as webhooks  # noqa: F401

    api = api_of(app)
    app.url_map.converters["draft_hash"] = DraftHashConverter
    api.register_converter(DraftHashConverter, draft_hash_schema)
    api.register_blueprint(bp)
    api.register_blueprint(files_api)
    api.register_blueprint(review_files)
    api.register_blueprint(not_offered_tokens)


def register_web(app: Flask) -> None:
    """The browser pages, all on the shared ``web`` blueprint, and the session they use."""
    from pps.auth import web as auth
    from pps.editor import (
        autosave_web,  # noqa: F401  (routes register on bp)
        media_web,  # noqa: F401  (routes register on bp)
    )
    from pps.editor import web as editor  # noqa: F401  (routes register on bp)
    from pps.files import web as files  # noqa: F401  (routes register on bp)
    from pps.reviews import editor_proof  # noqa: F401  (routes register on bp)
    from pps.reviews import web as reviews
    from pps.web import bp, docs  # noqa: F401  (docs: routes register on bp)
    from pps.web.session import PpsSessionInterface

    app.session_interface = PpsSessionInterface()
    app.permanent_session_lifetime = auth.SESSION_LIFETIME
    app.register_blueprint(bp)
    app.register_blueprint(reviews.bp)


def register_error_handlers(app: Flask) -> None:
    from pps.web.errors import register_error_handlers as register

    register(app)


def register_hooks(app: Flask) -> None:
    from pps.web.hooks import register_hooks as register

    register(app)


def register_cli(app: Flask) -> None:
    from pps.cli import pps_group

    app.cli.add_command(pps_group)
