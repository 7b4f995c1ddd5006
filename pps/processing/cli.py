"""``pps worker``: run batch print-file jobs from the RQ queue on ``PPS_REDIS_URL``.

Start one or more on any host that reaches the database, Redis and file storage; ``make run``
starts one when ``PPS_REDIS_URL`` is set. Without Redis no worker is needed: each app process
renders its submissions in a thread of its own (single host only).
"""

from __future__ import annotations

import logging

import click
from flask import current_app
from flask.cli import with_appcontext

from pps.platform.queue import QUEUE_NAME, configure_worker, uses_redis
from pps.platform.settings import Settings
from pps.processing.worker_name import NameTaken, claim_worker_name

__all__ = ["worker"]


@click.command("worker")
@click.option("--burst", is_flag=True, help="Stop when the queue is empty (for scripts, tests).")
@click.option(
    "--simple",
    is_flag=True,
    help="Run jobs in this process instead of a forked child per job "
    "(no fork: for debugging or platforms without fork; no job timeout).",
)
@click.option("--name", default=None, help="Worker name shown by 'rq info' (default: random).")
@with_appcontext
def worker(burst: bool, simple: bool, name: str | None) -> None:
    """Render batch print files (/api-ext/pdf-processing) queued in Redis."""
    import redis
    from rq import Queue, SimpleWorker, Worker

    settings: Settings = current_app.extensions["pps.settings"]
    if not uses_redis(settings):
        raise click.ClickException(
            "PPS_REDIS_URL does not name a Redis server (or PPS_WORKER_MODE=thread): "
            "jobs then run in a thread inside each app process and no worker is needed."
        )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    configure_worker(settings, current_app.extensions["pps"] if simple else None)
    connection = redis.Redis.from_url(settings.redis_url)
    try:
        connection.ping()
    except redis.RedisError as exc:
        raise click.ClickException(f"cannot reach Redis at PPS_REDIS_URL: {exc}") from None
    if name:
        try:
            claim_worker_name(connection, name)
        except NameTaken as exc:
            raise click.ClickException(str(exc)) from None
    queue = Queue(QUEUE_NAME, connection=connection)
    # Webhook events of the jobs (processing.state_changed) are queued by the work horses
    # and delivered from here, the worker's main process (see pps.webhooks.dispatcher).
    dispatcher = current_app.extensions["pps"].dispatcher()
    worker_class = SimpleWorker if simple else Worker
    click.echo(
        f"pps worker: {'simple' if simple else 'forking'} worker on queue {QUEUE_NAME}"
        + (" (burst)" if burst else "; Ctrl-C stops"),
        err=True,
    )
    try:
        # The scheduler queues the retries of jobs that met an outage when they are due
        # (pps.processing.retry); in burst mode it queues those due at start, then stops.
        worker_class([queue], connection=connection, name=name).work(
            burst=burst, logging_level="INFO", with_scheduler=True
        )
    finally:
        configure_worker(None)
        connection.close()
    if burst and dispatcher is not None:
        # What the jobs queued is due now; a message waiting for a retry stays queued.
        s = settings
        dispatcher.drain(s.notify_timeout * 2 + max(s.webhook_timeout, s.notify_timeout))
