"""Finished batch processings and spent notification keys are deleted once past their use.

``processings`` (with ``processing_drafts``) and ``notification_keys`` only ever grew. A
processing goes ``PPS_PROCESSING_RETENTION`` seconds after its last change once every draft
of it is final; one still running never. A key goes after the same time once nothing can
ask for it again: its message sent, no earlier outbox row of its client waiting.
``pps worker`` prunes from its maintenance. On SQLite, and on PostgreSQL when
PPS_TEST_DATABASE_URL is set.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import ApiClient
from flask import Flask
from processing_support import burst_worker

from pps.app import create_app
from pps.platform.models import Client
from pps.platform.outages import DATABASE_DOWN
from pps.platform.repository.integrations import SqlIntegrationStore
from pps.platform.repository.processing import (
    FAILED,
    IN_PROCESS,
    PENDING,
    PROCESSED,
    SqlProcessingStore,
)
from pps.platform.repository.retention import prune
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import (
    notification_keys,
    processing_drafts,
    processings,
    webhook_deliveries,
)
from pps.processing.maintenance import RetentionSchedule

DAY = 86400
RETENTION = 30 * DAY
URL = "https://shop.example/notify"


def hashes(count: int, seed: str) -> list[str]:
    return [f"{seed}{index:02d}".ljust(32, "0") for index in range(count)]


def batch(store: SqlProcessingStore, client: str, states: list[str], seed: str) -> str:
    """A processing whose drafts are in ``states`` (moved there as a job moves them)."""
    processing = store.create(client, hashes(len(states), seed), None)
    for item, state in zip(processing.drafts, states, strict=True):
        if state in (PROCESSED, FAILED):
            moved = store.set_state(
                client, processing.processing_id, item.position, IN_PROCESS, allowed_from=(PENDING,)
            )
            assert moved
        if state != PENDING:
            assert store.set_state(
                client,
                processing.processing_id,
                item.position,
                state,
                allowed_from=(PENDING, IN_PROCESS),
            )
    return processing.processing_id


def last_changed(engine: sa.Engine, processing_id: str, days: float) -> None:
    when = datetime.now(UTC) - timedelta(days=days)
    with engine.begin() as conn:
        conn.execute(
            processings.update()
            .where(processings.c.processing_id == processing_id)
            .values(updated_at=when)
        )


def key_made(engine: sa.Engine, client: str, key: str, days: float) -> None:
    when = datetime.now(UTC) - timedelta(days=days)
    with engine.begin() as conn:
        conn.execute(
            notification_keys.update()
            .where(notification_keys.c.client_identifier == client, notification_keys.c.key == key)
            .values(created_at=when)
        )


def sent(engine: sa.Engine, message: str) -> None:
    """The message left the outbox, as a delivery or a given-up one does."""
    with engine.begin() as conn:
        gone = conn.execute(
            webhook_deliveries.delete().where(webhook_deliveries.c.identifier == message)
        ).rowcount
    assert gone == 1


def drafts_of(engine: sa.Engine, processing_id: str) -> int:
    query = sa.select(sa.func.count()).where(processing_drafts.c.processing_id == processing_id)
    with engine.connect() as conn:
        return int(conn.execute(query).scalar_one())


def test_finished_processings_past_the_retention_go_and_running_ones_stay(
    repository: SqlRepository,
) -> None:
    engine = repository.engine
    client = repository.create_client("Shop").identifier
    store = SqlProcessingStore(engine)
    done = batch(store, client, [PROCESSED, FAILED], "done")
    pending = batch(store, client, [PENDING, PENDING], "pend")
    running = batch(store, client, [IN_PROCESS], "run")
    half = batch(store, client, [PROCESSED, PENDING], "half")
    recent = batch(store, client, [PROCESSED], "recent")
    for old in (done, pending, running, half):
        last_changed(engine, old, 31)
    last_changed(engine, recent, 29)

    pruned = prune(engine, RETENTION)

    # At least this one (on PostgreSQL the database is shared with other tests of the run).
    assert pruned.processings >= 1
    assert store.get(client, done) is None and drafts_of(engine, done) == 0
    for kept in (pending, running, half, recent):
        found = store.get(client, kept)
        assert found is not None and drafts_of(engine, kept) == len(found.drafts), kept


def test_a_long_backlog_goes_in_batches(repository: SqlRepository) -> None:
    engine = repository.engine
    client = repository.create_client("Shop").identifier
    store = SqlProcessingStore(engine)
    made = [batch(store, client, [PROCESSED], f"b{n}") for n in range(5)]
    for processing_id in made:
        last_changed(engine, processing_id, 40)
    assert prune(engine, RETENTION, batch=2).processings >= 5
    assert all(store.get(client, processing_id) is None for processing_id in made)


def test_spent_notification_keys_go_and_keys_still_of_use_stay(
    repository: SqlRepository,
) -> None:
    engine = repository.engine
    shop = repository.create_client("Shop").identifier
    other = repository.create_client("Other").identifier
    outbox = SqlIntegrationStore(engine)

    def queued(client: str, key: str) -> str:
        return outbox.enqueue_notification(
            client, "notify.processing", URL, {"n": key}, f"topic-{key}", once=key
        )

    spent = queued(shop, "spent:final")
    sent(engine, spent)
    waiting = queued(shop, "waiting:final")  # not sent yet: a retry must find its key
    young = queued(shop, "young:final")
    sent(engine, young)
    # Another client's download still running, queued before its callback's key was made.
    earlier = outbox.enqueue_notification(other, "notify.processing", URL, {}, "topic-earlier")
    behind = queued(other, "behind:final")
    sent(engine, behind)
    for client, key in (
        (shop, "spent:final"),
        (shop, "waiting:final"),
        (other, "behind:final"),
    ):
        key_made(engine, client, key, 31)
    with engine.begin() as conn:
        conn.execute(
            webhook_deliveries.update()
            .where(webhook_deliveries.c.identifier == earlier)
            .values(created_at=datetime.now(UTC) - timedelta(days=32))
        )
    key_made(engine, shop, "young:final", 29)

    assert prune(engine, RETENTION).notification_keys >= 1

    assert queued(shop, "spent:final") != spent  # the key is gone: a new message
    assert queued(shop, "waiting:final") == waiting
    assert queued(shop, "young:final") == young
    assert queued(other, "behind:final") == behind


def test_retention_zero_keeps_everything(repository: SqlRepository) -> None:
    engine = repository.engine
    client = repository.create_client("Shop").identifier
    store = SqlProcessingStore(engine)
    done = batch(store, client, [PROCESSED], "zero")
    last_changed(engine, done, 3650)
    assert prune(engine, 0).processings == 0
    assert store.get(client, done) is not None


def emitted_by_prune(engine: sa.Engine) -> list[tuple[str, Any]]:
    """The SQL :func:`prune` sends to the database, with its parameters, as sent."""
    sent_sql: list[tuple[str, Any]] = []

    def record(
        conn: sa.Connection, cursor: Any, statement: str, parameters: Any, *args: Any
    ) -> None:
        sent_sql.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        prune(engine, RETENTION)
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    return sent_sql


#: A table read in full in SQLite's plan (a ``VALUES`` list, "SCAN CONSTANT ROW", is none).
FULL_SCAN = re.compile(
    r"^SCAN (processings|processing_drafts|notification_keys|webhook_deliveries)\b", re.MULTILINE
)


def plans(engine: sa.Engine, statements: list[tuple[str, Any]]) -> str:
    """The database's plan of each statement, after the statement itself."""
    sqlite = engine.dialect.name == "sqlite"
    explained = []
    with engine.begin() as conn:
        if not sqlite:
            # With a handful of rows PostgreSQL rightly reads the whole table; forbid that
            # to see which index it would take for the condition on age.
            conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        for sql, params in statements:
            rows = conn.exec_driver_sql(
                f"EXPLAIN QUERY PLAN {sql}" if sqlite else f"EXPLAIN {sql}", params
            )
            explained.append("\n".join([sql, *(str(row[-1]) for row in rows)]))
    return "\n\n".join(explained)


def test_pruning_finds_its_rows_through_indexes(repository: SqlRepository) -> None:
    """Every prune looks for old rows by an index (migration 0013), instead of reading
    ``processings`` and ``notification_keys`` in full (and on SQLite the outbox once per
    key). The plans are those of the statements prune really sends, deletes included."""
    engine = repository.engine
    client = repository.create_client("Shop").identifier
    last_changed(engine, batch(SqlProcessingStore(engine), client, [PROCESSED], "plan"), 31)
    outbox = SqlIntegrationStore(engine)
    message = outbox.enqueue_notification(
        client, "notify.processing", URL, {}, "topic-plan", once="plan:final"
    )
    sent(engine, message)
    key_made(engine, client, "plan:final", 31)

    statements = emitted_by_prune(engine)

    assert [sql.split()[0] for sql, _ in statements].count("DELETE") >= 3, statements
    if engine.dialect.name == "sqlite":
        explained = plans(engine, statements)
        assert FULL_SCAN.search(explained) is None, explained
        expected = [
            r"SEARCH processings USING INDEX ix_processings_updated_at \(updated_at<\?\)",
            r"SEARCH notification_keys USING INDEX ix_notification_keys_created_at "
            r"\(created_at<\?\)",
            r"SEARCH webhook_deliveries USING INDEX ix_webhook_deliveries_client_created "
            r"\(client_identifier=\? AND created_at<\?\)",
        ]
    else:  # PostgreSQL anti-joins the outbox once per prune: the age is what counts there
        explained = plans(
            engine, [(sql, params) for sql, params in statements if sql.startswith("SELECT")]
        )
        expected = [
            r"Index (Only )?Scan (on|using) ix_processings_updated_at\b",
            r"Index (Only )?Scan (on|using) ix_notification_keys_created_at\b",
        ]
    for step in expected:
        assert re.search(step, explained), explained


def test_the_schedule_prunes_once_per_interval(repository: SqlRepository) -> None:
    engine = repository.engine
    client = repository.create_client("Shop").identifier
    store = SqlProcessingStore(engine)
    now = [1000.0]
    schedule = RetentionSchedule(engine, RETENTION, interval=3600, clock=lambda: now[0])
    first = batch(store, client, [PROCESSED], "s1")
    last_changed(engine, first, 31)
    assert schedule.run_if_due() is not None
    assert store.get(client, first) is None
    second = batch(store, client, [PROCESSED], "s2")
    last_changed(engine, second, 31)
    now[0] += 3599
    assert schedule.run_if_due() is None  # not due yet
    assert store.get(client, second) is not None
    now[0] += 1
    assert schedule.run_if_due() is not None
    assert store.get(client, second) is None


def test_the_database_down_is_logged_and_the_schedule_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker whose database is unreachable at its maintenance keeps rendering."""
    missing = sa.create_engine(f"sqlite:///{tmp_path}/no/such/folder/pps.sqlite3")
    try:
        assert RetentionSchedule(missing, RETENTION).run_if_due() is None
    finally:
        missing.dispose()
    assert DATABASE_DOWN in caplog.text


@pytest.mark.slow
def test_pps_worker_prunes_at_its_maintenance(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client
) -> None:
    """``pps worker`` prunes as it starts (its first maintenance), also in burst mode: the
    shop's finished batch past the retention is a 404, one still pending is kept."""
    engine = repo.engine
    store = SqlProcessingStore(engine)
    done = batch(store, tenant.identifier, [PROCESSED, FAILED], "wdone")
    waiting = batch(store, tenant.identifier, [PENDING], "wpend")  # its job was lost
    for processing_id in (done, waiting):
        last_changed(engine, processing_id, 31)
    assert api.get(f"/api-ext/pdf-processing/{done}").status_code == 200
    log = burst_worker(app)
    assert "finished processings" in log, log
    assert api.get(f"/api-ext/pdf-processing/{done}").status_code == 404
    assert api.get(f"/api-ext/pdf-processing/{waiting}").status_code == 200


def test_pps_db_prune_deletes_what_the_worker_would(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client
) -> None:
    """``pps db prune`` (run by the sweep timer, where no worker runs) deletes the finished
    batch past the retention and keeps the one still pending, and says how many went."""
    store = SqlProcessingStore(repo.engine)
    done = batch(store, tenant.identifier, [PROCESSED], "cdone")
    waiting = batch(store, tenant.identifier, [PENDING], "cpend")
    for processing_id in (done, waiting):
        last_changed(repo.engine, processing_id, 31)
    result = app.test_cli_runner().invoke(args=["pps", "db", "prune"])
    assert result.exit_code == 0, result.output
    deleted = re.fullmatch(
        r"Deleted (\d+) finished processings and \d+ spent notification keys\.\n", result.output
    )
    assert deleted is not None and int(deleted.group(1)) >= 1, result.output
    assert api.get(f"/api-ext/pdf-processing/{done}").status_code == 404
    assert api.get(f"/api-ext/pdf-processing/{waiting}").status_code == 200


def test_pps_db_prune_keeps_everything_with_a_retention_of_0(
    app_config: dict[str, Any], tenant: Client
) -> None:
    application = create_app({**app_config, "processing_retention": 0})
    try:
        engine = application.extensions["pps"].repository.engine
        store = SqlProcessingStore(engine)
        done = batch(store, tenant.identifier, [PROCESSED], "zdone")
        last_changed(engine, done, 3650)
        result = application.test_cli_runner().invoke(args=["pps", "db", "prune"])
        assert result.exit_code == 0, result.output
        assert result.output == "PPS_PROCESSING_RETENTION is 0: every record is kept.\n"
        assert store.get(tenant.identifier, done) is not None
    finally:
        application.extensions["pps"].close()
