"""The long-lived objects one app needs, built from settings and kept in ``app.extensions``."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pps.platform.ephemeral import EphemeralStore, open_ephemeral
from pps.platform.models import Client
from pps.platform.outages import outage_message
from pps.platform.queue import Dispatch, JobQueue, open_job_queue
from pps.platform.repository import Repository
from pps.platform.repository.integrations import SqlIntegrationStore
from pps.platform.repository.processing import ProcessingStore, SqlProcessingStore
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.uploads import SqlUploadStore
from pps.platform.repository.variable_data import SqlVariableDataStore
from pps.platform.settings import Settings, prepare_folders
from pps.platform.storage import FileStorage, open_storage

log = logging.getLogger("pps.webhooks")


class ClientCache:
    """Client lookups by identifier and by API key, remembered for a few seconds.

    Every ``/auth`` and file request starts by finding the client; a short cache keeps the
    database off that hot path. A rotated or disabled key stops working after at most
    ``ttl`` seconds (``PPS_CLIENT_CACHE_TTL``; 0 turns the cache off).
    """

    def __init__(self, repository: Repository, ttl: float) -> None:
        self._repository = repository
        self._ttl = ttl
        self._by_identifier: dict[str, tuple[float, Client | None]] = {}
        self._by_key_hash: dict[str, tuple[float, Client | None]] = {}
        self._lock = threading.Lock()

    def get(self, identifier: str) -> Client | None:
        hit = self._by_identifier.get(identifier) if self._ttl > 0 else None
        now = time.monotonic()
        if hit is not None and hit[0] > now:
            return hit[1]
        client = self._repository.get_client(identifier)
        if client is not None and not client.active:
            client = None
        self._remember(self._by_identifier, identifier, client, now)
        return client

    def by_api_key(self, api_key: str) -> Client | None:
        digest = hashlib.sha256(api_key.encode("utf-8")).hexdigest()
        hit = self._by_key_hash.get(digest) if self._ttl > 0 else None
        now = time.monotonic()
        if hit is not None and hit[0] > now:
            return hit[1]
        client = self._repository.find_client_by_api_key(api_key)
        self._remember(self._by_key_hash, digest, client, now)
        return client

    def _remember(
        self,
        table: dict[str, tuple[float, Client | None]],
        key: str,
        value: Client | None,
        now: float,
    ) -> None:
        if self._ttl <= 0:
            return
        with self._lock:
            if len(table) > 10_000:
                table.clear()
            table[key] = (now + self._ttl, value)


JobRunner = Callable[["Services", str, str], object]


DispatcherFactory = Callable[["Services"], Dispatch]


@dataclass
class Services:
    """Typed by the protocols callers rely on; :func:`build_services` picks the classes."""

    settings: Settings
    repository: Repository
    ephemeral: EphemeralStore
    storage: FileStorage
    processings: ProcessingStore
    #: Runs a batch job in this process when there is no Redis (the thread queue); the app
    #: factory passes :func:`pps.processing.job.run_in_process`.
    job_runner: JobRunner
    #: Webhooks, their outbox and per-client outbound settings.
    integrations: SqlIntegrationStore
    #: Starts this process's webhook dispatcher on first use (or :meth:`resume_outbox`);
    #: None where deliveries are only queued (an RQ work horse: ``pps worker`` delivers
    #: from its main process).
    dispatcher_factory: DispatcherFactory | None = None
    clients: ClientCache = field(init=False)
    jobs: JobQueue = field(init=False)
    uploads: SqlUploadStore = field(init=False)
    variable_data: SqlVariableDataStore = field(init=False)

    def __post_init__(self) -> None:
        self.clients = ClientCache(self.repository, self.settings.client_cache_ttl)
        engine = self.repository.engine  # type: ignore[attr-defined]  # SqlRepository's
        self.uploads = SqlUploadStore(engine)
        self.variable_data = SqlVariableDataStore(engine)
        self.jobs = open_job_queue(self.settings, self._run_processing)
        self._dispatcher: Dispatch | None = None
        self._dispatcher_pid = 0
        self._dispatcher_lock = threading.Lock()

    def dispatcher(self) -> Dispatch | None:
        """This process's webhook dispatcher, started on first use (and again after a fork:
        threads do not survive into a forked child)."""
        if self.dispatcher_factory is None:
            return None
        with self._dispatcher_lock:
            if self._dispatcher is None or self._dispatcher_pid != os.getpid():
                self._dispatcher = self.dispatcher_factory(self)
                self._dispatcher_pid = os.getpid()
            return self._dispatcher

    def resume_outbox(self) -> bool:
        """Start this process's dispatcher when the outbox holds rows, due now or later;
        True when one runs. A served process calls it once when it starts (see
        :func:`pps.app.resume_outbox`): messages and jobs queued before a restart, retries
        among them, are then sent without waiting for this process's next event.

        An empty outbox starts nothing (the first event does, as before), so a worker with
        nothing to send polls nothing. When the database cannot be asked, the dispatcher is
        started all the same: it waits out the outage, and guessing "nothing pending" could
        leave messages behind until the next event. Any other error is logged and starts
        nothing: it must not keep the process from serving, and the first event still
        starts the dispatcher. The outbox's leases keep the dispatchers of several
        processes from sending the same attempt.
        """
        if self.dispatcher_factory is None:
            return False
        try:
            pending = self.integrations.next_due() is not None
        except Exception as exc:
            outage = outage_message(exc)
            if outage is None:
                log.exception("could not look for pending outbox rows at start")
                return False
            log.warning("outbox not readable at start, its dispatcher waits for it: %s", outage)
            pending = True
        if pending:
            self.dispatcher()
        return pending

    def _run_processing(self, client: str, processing_id: str) -> object:
        """The in-process worker's runner (without Redis); see :mod:`pps.platform.queue`."""
        return self.job_runner(self, client, processing_id)

    def close(self) -> None:
        self.jobs.close()  # first: a running job still uses the repository
        with self._dispatcher_lock:
            dispatcher, self._dispatcher = self._dispatcher, None
        if dispatcher is not None and self._dispatcher_pid == os.getpid():
            dispatcher.close(self.settings.webhook_timeout + 1.0)
        self.repository.close()
        self.ephemeral.close()


def build_services(
    settings: Settings,
    job_runner: JobRunner,
    dispatcher_factory: DispatcherFactory | None = None,
) -> Services:
    """Open the repository, the ephemeral store and file storage named by ``settings``."""
    prepare_folders(settings)
    repository = SqlRepository(settings.resolved_database_url, timeout=settings.database_timeout)
    return Services(
        settings=settings,
        repository=repository,
        ephemeral=open_ephemeral(
            settings.redis_url,
            instance_path=settings.instance_path,
            redis_timeout=settings.redis_timeout,
        ),
        storage=open_storage(settings.resolved_files_dir),
        processings=SqlProcessingStore(repository.engine),
        integrations=SqlIntegrationStore(repository.engine),
        job_runner=job_runner,
        dispatcher_factory=dispatcher_factory,
    )
