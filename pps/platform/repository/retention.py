"""Deleting records past their use: finished batch processings and once-keys of notifications.

Both tables only ever grew. What each row is for, and when that ends:

* ``processings`` (with ``processing_drafts``): the status of a batch that
  ``GET /api-ext/pdf-processing/<id>`` answers and the batch job reads and writes. While
  any draft of it is ``pending`` or ``in-process`` a job may still render it, so it is
  never deleted then. Once every draft is final the row is only the answer a shop may still
  poll for: it is kept for ``PPS_PROCESSING_RETENTION`` seconds after its last change
  (the print files themselves are the drafts', fetched through the draft's file URL, and
  do not go with it). A job run again after that finds nothing and does nothing.
* ``notification_keys``: a message queued "at most once, ever" under a key (the final
  state of a processing, the callback of a PDF download), so that a job or an attempt run
  again after an outage does not queue it a second time. A key is of use while what could
  ask again may still run: its own message still waiting in the outbox, or any earlier
  outbox row of its client (a download whose attempt may end again). Past those and older
  than the same retention (at least a day, far beyond the job retries' hour) it goes.

:func:`prune` runs from ``pps worker``'s maintenance (:mod:`pps.processing.cli`); it is
idempotent, so several workers may run it at once. No Flask. Its queries find old rows by
the indexes of migration 0013 (``processings.updated_at``, ``notification_keys.created_at``,
and the outbox by client and age for the per-key check); without them every prune read the
tables in full.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from pps.platform.repository.processing import FINAL_STATES
from pps.platform.repository.tables import (
    notification_keys,
    processing_drafts,
    processings,
    webhook_deliveries,
)

__all__ = ["BATCH", "Pruned", "prune"]

#: Rows deleted per transaction: a long backlog goes in short transactions, so that the
#: tables are never locked for long (SQLite locks the whole file while writing).
BATCH = 500


@dataclass(frozen=True)
class Pruned:
    """How many rows :func:`prune` deleted, per table."""

    processings: int = 0
    notification_keys: int = 0


def prune(
    engine: Engine, retention: float, *, now: datetime | None = None, batch: int = BATCH
) -> Pruned:
    """Delete finished processings and spent notification keys older than ``retention``
    seconds, ``batch`` rows per transaction; ``retention`` 0 keeps everything.

    Processings first: a key outlives the processing it was made for (its row was last
    changed before the final state was queued), so a job run again never finds a finished
    processing without its key.
    """
    if retention <= 0:
        return Pruned()
    cutoff = (now or datetime.now(UTC)) - timedelta(seconds=retention)
    return Pruned(
        processings=_prune_processings(engine, cutoff, batch),
        notification_keys=_prune_keys(engine, cutoff, batch),
    )


def _prune_processings(engine: Engine, cutoff: datetime, batch: int) -> int:
    unfinished = sa.exists().where(
        processing_drafts.c.processing_id == processings.c.processing_id,
        processing_drafts.c.state.not_in(sorted(FINAL_STATES)),
    )
    due = (
        sa.select(processings.c.processing_id)
        .where(processings.c.updated_at < cutoff, ~unfinished)
        .limit(batch)
    )
    deleted = 0
    while True:
        with engine.begin() as conn:
            found = list(conn.execute(due).scalars())
            if not found:
                return deleted
            # Checked again as it is deleted: a draft moved meanwhile keeps its processing.
            gone = list(
                conn.execute(
                    processings.delete()
                    .where(processings.c.processing_id.in_(found), ~unfinished)
                    .returning(processings.c.processing_id)
                ).scalars()
            )
            if gone:  # SQLite enforces the cascade only with foreign keys on
                conn.execute(
                    processing_drafts.delete().where(processing_drafts.c.processing_id.in_(gone))
                )
        deleted += len(gone)
        if len(found) < batch:
            return deleted


def _prune_keys(engine: Engine, cutoff: datetime, batch: int) -> int:
    waiting = sa.exists().where(
        webhook_deliveries.c.client_identifier == notification_keys.c.client_identifier,
        sa.or_(
            webhook_deliveries.c.identifier == notification_keys.c.message_identifier,
            webhook_deliveries.c.created_at <= notification_keys.c.created_at,
        ),
    )
    due = (
        sa.select(notification_keys.c.client_identifier, notification_keys.c.key)
        .where(notification_keys.c.created_at < cutoff, ~waiting)
        .limit(batch)
    )
    deleted = 0
    while True:
        with engine.begin() as conn:
            found = [tuple(row) for row in conn.execute(due)]
            if not found:
                return deleted
            result = conn.execute(
                notification_keys.delete().where(
                    sa.tuple_(notification_keys.c.client_identifier, notification_keys.c.key).in_(
                        found
                    ),
                    ~waiting,
                )
            )
        deleted += int(result.rowcount)
        if len(found) < batch:
            return deleted
