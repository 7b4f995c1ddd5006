"""Where processing jobs run: an RQ queue on the service's Redis, or a thread in the app.

* **RQ** (``PPS_REDIS_URL`` names Redis, ``PPS_WORKER_MODE`` ``auto`` or ``rq``): the request
  enqueues ``(client, processingId)`` on the ``pps-processing`` queue and returns; ``pps
  worker`` (any number of them, on any host that reaches the database, Redis and file
  storage) renders. Jobs survive app restarts and wait in Redis while no worker runs.
* **Thread** (no Redis, or ``PPS_WORKER_MODE=thread``): each app process renders its own
  submissions in one background thread. Single host only: the thread writes to the local
  file storage, and a job queued in a process that stops is lost until the thread of a
  served process finds it (:meth:`ThreadJobQueue.watch`, :mod:`pps.processing.lost`).
  Good for development and small installations.

Notifications of a job (``stateChangedNotifyUrl``) never wait in the job: it queues them in
the webhook outbox, and a dispatcher (the app's, or ``pps worker``'s main process) sends
them (:mod:`pps.webhooks.notifications`).

No Flask here: the app passes a runner, the RQ worker builds services from settings. The
functions RQ calls live in :mod:`pps.processing.worker`, beside the services they build
(this module is imported by :mod:`pps.platform.services`, so it names them by their import
path, as RQ stores them anyway).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from pps.platform.repository import Repository
from pps.platform.repository.integrations import SqlIntegrationStore
from pps.platform.repository.processing import ProcessingStore
from pps.platform.repository.variable_data import SqlVariableDataStore
from pps.platform.settings import Settings, load_settings
from pps.platform.storage import FileStorage

__all__ = [
    "QUEUE_NAME",
    "RQ_JOB",
    "RQ_ON_FAILURE",
    "Dispatch",
    "JobQueue",
    "JobQueueUnavailable",
    "RqJobQueue",
    "ThreadJobQueue",
    "WorkerServices",
    "configure_worker",
    "job_timeout",
    "open_job_queue",
    "queue_processing",
    "uses_redis",
    "worker_services",
]

log = logging.getLogger("pps.processing")

QUEUE_NAME = "pps-processing"
_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
#: RQ's limit for one job: generous per draft, so a stuck render cannot hold a worker forever.
JOB_TIMEOUT_BASE = 120
JOB_TIMEOUT_PER_DRAFT = 60
#: How long RQ keeps a finished job's record; the status itself lives in the database.
RESULT_TTL = 3600
FAILURE_TTL = 7 * 24 * 3600

#: The functions RQ runs, by import path (see the module docstring).
RQ_JOB = "pps.processing.worker.rq_process"
RQ_ON_FAILURE = "pps.processing.worker.rq_failed"

Runner = Callable[[str, str], object]


def job_timeout(draft_count: int) -> int:
    """RQ's limit, in seconds, for the job of a processing of ``draft_count`` drafts."""
    return JOB_TIMEOUT_BASE + JOB_TIMEOUT_PER_DRAFT * draft_count


class JobQueueUnavailable(Exception):
    """The job could not be queued (Redis is down); nothing will process it."""


class JobQueue(Protocol):
    kind: str

    def enqueue(self, client: str, processing_id: str, draft_count: int) -> None:
        """Queue the processing; :class:`JobQueueUnavailable` when that is impossible."""
        ...

    def active(self) -> set[str]:
        """Ids of the processings with a job waiting or running here."""
        ...

    def close(self) -> None: ...


def uses_redis(settings: Settings) -> bool:
    """Whether processing jobs go to RQ (else to a thread in the app process)."""
    if settings.worker_mode == "thread":
        return False
    # PPS_WORKER_MODE=rq without Redis is refused by the settings already.
    return settings.redis_url.lower().startswith(_REDIS_SCHEMES)


def open_job_queue(settings: Settings, runner: Runner) -> JobQueue:
    """The queue the settings ask for; ``runner(client, processing_id)`` serves the thread."""
    if uses_redis(settings):
        return RqJobQueue(settings.redis_url, timeout=settings.redis_timeout)
    return ThreadJobQueue(runner)


# -- RQ ----------------------------------------------------------------------------------


class RqJobQueue:
    kind = "rq"

    def __init__(self, redis_url: str, *, timeout: float | None = None) -> None:
        from rq import Queue

        from pps.platform.redis_client import DEFAULT_TIMEOUT, open_redis

        # The policy of pps.platform.redis_client, without its resend: enqueueing twice after a lost
        # reply would queue the job twice. A hung Redis fails the submission within
        # ``timeout`` (PPS_REDIS_TIMEOUT), and the view answers 503.
        self.connection = open_redis(redis_url, timeout=timeout or DEFAULT_TIMEOUT)
        self.queue = Queue(QUEUE_NAME, connection=self.connection)

    def enqueue(self, client: str, processing_id: str, draft_count: int) -> None:
        import redis

        try:
            queue_processing(
                self.queue,
                client,
                processing_id,
                timeout=job_timeout(draft_count),
            )
        except redis.RedisError as exc:
            raise JobQueueUnavailable(str(exc)) from exc

    def active(self) -> set[str]:
        """Processings with a job scheduled (a retry), queued, being taken or started.

        Read in the order a job moves (scheduled, queued, taken by a worker, started), so a
        job moving on between two reads is seen at the later one. A started job whose worker
        died counts until RQ's maintenance fails it (its failure callback records that).
        """
        from rq.job import Job

        queue = self.queue
        ids = [
            *queue.scheduled_job_registry.get_job_ids(cleanup=False),
            *queue.get_job_ids(),
            *queue.intermediate_queue.get_job_ids(),
            *queue.started_job_registry.get_job_ids(cleanup=False),
        ]
        jobs = Job.fetch_many(list(dict.fromkeys(ids)), connection=self.connection)
        return {
            str(job.args[1])
            for job in jobs
            if job is not None and job.func_name == RQ_JOB and len(job.args) == 2
        }

    def close(self) -> None:
        self.connection.close()


def queue_processing(
    queue: Any,
    client: str,
    processing_id: str,
    *,
    timeout: int,
    meta: dict[str, Any] | None = None,
    delay: float = 0.0,
) -> None:
    """Put the job of a processing on ``queue`` (an RQ ``Queue``): now, or after ``delay``
    seconds (a retry; a worker started with its scheduler moves it to the queue then).

    ``meta`` is what a retry carries over (see :mod:`pps.processing.retry`).
    """
    from rq import Callback

    job = queue.create_job(
        RQ_JOB,
        args=(client, processing_id),
        timeout=timeout,
        result_ttl=RESULT_TTL,
        failure_ttl=FAILURE_TTL,
        description=f"pdf-processing {processing_id}",
        meta=meta,
        on_failure=Callback(RQ_ON_FAILURE),
    )
    if delay > 0:
        queue.schedule_job(job, datetime.now(UTC) + timedelta(seconds=delay))
    else:
        queue.enqueue_job(job)


class Dispatch(Protocol):
    """What sends webhook deliveries from the outbox (:mod:`pps.webhooks.dispatcher`)."""

    def wake(self) -> None:
        """Look at the outbox now (something was just queued)."""
        ...

    def drain(self, timeout: float) -> bool:
        """Send what is due now, waiting up to ``timeout`` s (a worker about to exit)."""
        ...

    def close(self, timeout: float | None = None) -> None: ...


class JobServices(Protocol):
    """What a job takes from :class:`pps.platform.services.Services` (which builds this
    queue, so is not imported here). Read-only, so a concrete repository or store fits."""

    @property
    def integrations(self) -> SqlIntegrationStore: ...

    def dispatcher(self) -> Dispatch | None: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def repository(self) -> Repository: ...

    @property
    def storage(self) -> FileStorage: ...

    @property
    def processings(self) -> ProcessingStore: ...

    @property
    def variable_data(self) -> SqlVariableDataStore: ...


class WorkerServices(JobServices, Protocol):
    """The services a worker process builds for its jobs
    (:class:`pps.platform.services.Services`)."""

    def close(self) -> None: ...


class _WorkerState:
    """Services of the RQ job functions, built once per process.

    RQ's default worker forks a child per job; the child must not reuse the parent's
    database connections, so services are keyed by process id and built anew after a fork.
    """

    def __init__(self) -> None:
        self.settings: Settings | None = None
        self.services: WorkerServices | None = None
        self.owned = False
        self.pid = 0
        self.lock = threading.Lock()


_worker = _WorkerState()


def configure_worker(settings: Settings | None, services: WorkerServices | None = None) -> None:
    """Tell job functions which settings to build services from (``pps worker`` does this).

    ``services`` may be handed over for use in this very process (a non-forking worker).
    ``configure_worker(None)`` forgets both, closing services built here. Without a call,
    job functions read the ``PPS_*`` environment, so a plain ``rq worker`` works too.
    """
    with _worker.lock:
        if _worker.owned and _worker.services is not None and _worker.pid == os.getpid():
            _worker.services.close()
        _worker.settings = settings
        _worker.services = services
        _worker.owned = False
        _worker.pid = os.getpid() if services is not None else 0


def worker_services(build: Callable[[Settings], WorkerServices]) -> WorkerServices:
    """The services of this worker process, made by ``build`` on first use after start or
    fork (unless ``configure_worker`` handed some over)."""
    with _worker.lock:
        pid = os.getpid()
        if _worker.services is None or _worker.pid != pid:
            settings = _worker.settings or load_settings()
            _worker.services = build(settings)
            _worker.owned = True
            _worker.pid = pid
        return _worker.services


# -- thread ------------------------------------------------------------------------------

_STOP = object()
_WAKE = object()


class ThreadJobQueue:
    """One background thread per app process, started on the first job (or by
    :meth:`watch`, as a served process starts).

    Started lazily, and again after a fork, because the app may be built in a parent
    process (``gunicorn --preload``) whose threads do not survive into the workers.
    """

    kind = "thread"

    def __init__(self, runner: Runner, *, join_timeout: float = 30.0) -> None:
        self._runner = runner
        self._join_timeout = join_timeout
        self._lock = threading.Lock()
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._active: Counter[str] = Counter()  # queued or running, per processing
        self._sweep: Callable[[], object] | None = None
        self._sweep_interval = 0.0

    def enqueue(self, client: str, processing_id: str, draft_count: int) -> None:
        with self._lock:
            self._start()
            self._active[processing_id] += 1
            self._queue.put((client, processing_id))

    def active(self) -> set[str]:
        with self._lock:
            return set(self._active) if self._pid == os.getpid() else set()

    def watch(self, sweep: Callable[[], object], interval: float) -> None:
        """Start the thread now and have it call ``sweep`` as it starts and every
        ``interval`` seconds (between jobs): a served process finds the jobs that a process
        which stopped took with it (:mod:`pps.processing.lost`)."""
        with self._lock:
            self._sweep, self._sweep_interval = sweep, interval
            self._start()
            self._queue.put(_WAKE)  # a thread started by a job waits for the next one

    def _start(self) -> None:
        """Start the thread unless it runs in this process (called under the lock)."""
        if self._thread is None or self._pid != os.getpid():
            self._queue = queue.Queue()
            self._active = Counter()
            self._thread = threading.Thread(
                target=self._run, args=(self._queue,), name="pps-processing", daemon=True
            )
            self._pid = os.getpid()
            self._thread.start()

    def _run(self, jobs: queue.Queue[Any]) -> None:
        due = time.monotonic()
        while True:
            sweep = self._sweep
            if sweep is not None and time.monotonic() >= due:
                due = time.monotonic() + self._sweep_interval
                try:
                    sweep()
                except Exception:
                    log.exception("looking for lost processing jobs failed")
            try:
                item = jobs.get(timeout=max(0.0, due - time.monotonic()) if sweep else None)
            except queue.Empty:
                continue
            if item is _STOP:
                return
            if item is _WAKE:
                continue
            client, processing_id = item
            try:
                self._runner(client, processing_id)
            except Exception:
                log.exception("processing %s failed", processing_id)
            finally:
                with self._lock:
                    self._active -= Counter({processing_id: 1})

    def join(self, timeout: float | None = None) -> None:
        """Wait until every queued job has run (tests; a clean shutdown)."""
        with self._lock:
            thread, jobs = self._thread, self._queue
            self._thread = None
        if thread is None or self._pid != os.getpid():
            return
        jobs.put(_STOP)
        thread.join(timeout)

    def close(self) -> None:
        self.join(self._join_timeout)
