"""``pps worker``: run batch print-file jobs from the RQ queue on ``PPS_REDIS_URL``.

Start one or more on any host that reaches the database, Redis and file storage; ``make run``
starts one when ``PPS_REDIS_URL`` is set. Without Redis no worker is needed: each app process
renders its submissions in a thread of its own (single host only).
"""

from __future__ import annotations

import logging
from typing import Any

import click
from flask import current_app
from flask.cli import with_appcontext

from pps.platform.outages import OUTAGES, outage_message
from pps.platform.queue import QUEUE_NAME, configure_worker, uses_redis
from pps.platform.settings import Settings
from pps.processing.lost import LostJobSchedule
from pps.processing.maintenance import RetentionSchedule
from pps.processing.worker_name import NameTaken, claim_worker_name

__all__ = ["LOOP_ENDED", "OUTAGE_EXIT", "OutageStop", "worker"]

#: Exit status of a worker stopped by an outage of the database or Redis: EX_TEMPFAIL of
#: sysexits.h. Queued jobs stay queued and those that met the outage are retried
#: (pps.processing.retry), so a cron job or a systemd unit can tell "run it again later"
#: from a bug (1) or a usage error (2).
OUTAGE_EXIT = 75

#: Seconds between a worker's maintenance runs. RQ's scheduler (which queues the retries of
#: pps.processing.retry) runs in a process of its own, which a lost Redis connection ends (Redis
#: restarted, or hung for a while); the worker starts it again only at its maintenance,
#: which RQ runs every 10 minutes by default, and only between its waits for a job (up to
#: ``worker_ttl`` - 15 s, 405 s by default): a retry due meanwhile waited up to 17 minutes.
MAINTENANCE_INTERVAL = 15
#: The worker's registration TTL; RQ waits for a job up to 15 s less at a time.
WORKER_TTL = MAINTENANCE_INTERVAL + 15


class OutageStop(click.ClickException):
    """One line naming the outage, and :data:`OUTAGE_EXIT`: a burst worker whose database
    was down ended with the database error, a hint to run 'pps db upgrade' and status 1."""

    exit_code = OUTAGE_EXIT

    def __init__(self, outage: str) -> None:
        super().__init__(
            f"pps worker stopped: {outage} Queued jobs are kept and retried; run it again later."
        )


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
    """Render batch print files (/api-ext/pdf-processing) queued in Redis.

    Exits 75 (EX_TEMPFAIL) with one line when the database or Redis is down, and when
    RQ's loop ends without being asked to (Redis lost at the wrong moment)."""
    settings: Settings = current_app.extensions["pps.settings"]
    if not uses_redis(settings):
        raise click.ClickException(
            "PPS_REDIS_URL does not name a Redis server (or PPS_WORKER_MODE=thread): "
            "jobs then run in a thread inside each app process and no worker is needed."
        )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        _work(settings, burst, simple, name)
    except OUTAGES as exc:
        outage = outage_message(exc)
        if outage is None:
            raise
        raise OutageStop(outage) from None


#: Why a worker that no signal asked to stop has stopped (with :class:`OutageStop`'s status).
LOOP_ENDED = "its RQ worker loop ended without being asked to (see above)."


def _noting_stop(base: type[Any], retention: RetentionSchedule, lost: LostJobSchedule) -> type[Any]:
    """``base`` (RQ's ``Worker`` or ``SimpleWorker``) noting a requested stop: SIGINT,
    SIGTERM, or RQ's shutdown command (sent as SIGINT). RQ's loop also ends by itself,
    after it logged "found an unhandled exception, quitting" (a Redis call outside its wait
    for a job failed: Redis lost as a job starts or ends), and nothing else tells the two
    apart. Its maintenance also prunes finished processings when due (``retention``) and
    queues again, or fails, those whose job was lost (``lost``, :mod:`pps.processing.lost`)."""

    class StopNoting(base):  # type: ignore[misc]
        stop_requested = False

        def request_stop(self, signum: Any, frame: Any) -> None:
            self.stop_requested = True
            super().request_stop(signum, frame)

        def run_maintenance_tasks(self) -> None:
            super().run_maintenance_tasks()
            retention.run_if_due()
            lost.run_if_due()

    return StopNoting


def _work(settings: Settings, burst: bool, simple: bool, name: str | None) -> None:
    """Run the RQ worker until stopped (or, ``burst``, until the queue is empty)."""
    import redis
    from rq import Queue, SimpleWorker, Worker

    configure_worker(settings, current_app.extensions["pps"] if simple else None)
    connection = redis.Redis.from_url(settings.redis_url)
    try:
        connection.ping()
    except redis.RedisError as exc:
        # A refused password is a setting to correct, not an outage to wait out.
        if outage_message(exc) is not None and not isinstance(exc, redis.AuthenticationError):
            raise OutageStop(
                f"cannot reach Redis at PPS_REDIS_URL ({str(exc).rstrip('.')})."
            ) from None
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
    retention = RetentionSchedule(
        current_app.extensions["pps"].repository.engine, settings.processing_retention
    )
    lost = LostJobSchedule(current_app.extensions["pps"])
    worker_class = _noting_stop(SimpleWorker if simple else Worker, retention, lost)
    click.echo(
        f"pps worker: {'simple' if simple else 'forking'} worker on queue {QUEUE_NAME}"
        + (" (burst)" if burst else "; Ctrl-C stops"),
        err=True,
    )
    try:
        # The scheduler queues the retries of jobs that met an outage when they are due
        # (pps.processing.retry); in burst mode it queues those due at start, then stops.
        rq_worker = worker_class(
            [queue],
            connection=connection,
            name=name,
            worker_ttl=WORKER_TTL,
            maintenance_interval=MAINTENANCE_INTERVAL,
        )
        rq_worker.work(burst=burst, logging_level="INFO", with_scheduler=True)
    finally:
        configure_worker(None)
        connection.close()
    if not burst and not rq_worker.stop_requested:
        # Exit 0 would read as a deliberate stop: systemd's Restart=on-failure would leave
        # the queue without a worker.
        raise OutageStop(LOOP_ENDED)
    if burst and dispatcher is not None:
        # What the jobs queued is due now; a message waiting for a retry stays queued.
        s = settings
        try:
            dispatcher.drain(s.notify_timeout * 2 + max(s.webhook_timeout, s.notify_timeout))
        finally:
            # Stopped first, so that no line of its own follows the worker's last line.
            dispatcher.close(s.webhook_timeout + 1.0)
