"""The byte budget of a client's uploaded files (``PPS_CLIENT_STORAGE_BYTES``). No Flask.

Every path that stores a file for a client (``POST /api-ext/file``, the editor's images, a
draft's print PDF and its copy in a replicated draft) writes it inside :func:`room_for`:
the room is reserved before a byte is written, so a file that does not fit leaves nothing
behind, and two uploads at once cannot both take the last room. Rendered files are not
counted: they are caches pps can make again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from pps.platform.errors import ClientStorageFull
from pps.platform.repository.storage_budget import (
    RESERVATION_TTL,
    BudgetExceeded,
    SqlStorageBudget,
)

__all__ = ["room_for", "storage_full"]

log = logging.getLogger(__name__)


@contextmanager
def room_for(budget: SqlStorageBudget, client: str, size: int, limit: int) -> Iterator[None]:
    """Hold ``size`` bytes of the client's ``limit`` while the block stores the file and
    its record (which then counts the bytes); :class:`ClientStorageFull` when they do not
    fit. ``limit`` 0: no budget."""
    if limit == 0:
        yield
        return
    try:
        reservation = budget.reserve(client, size, limit)
    except BudgetExceeded as exc:
        raise storage_full(exc) from None
    try:
        yield
    finally:
        _release(budget, reservation)


def _release(budget: SqlStorageBudget, reservation: str) -> None:
    """Let the reservation go. When the database fails to, the file's outcome stands: a
    stored file must not be answered as an error (the shop would send it again), nor a
    failed write's error be replaced by this one; the room then counts until the
    reservation expires (:data:`RESERVATION_TTL`)."""
    try:
        budget.release(reservation)
    except Exception:
        log.warning(
            "storage reservation %s not released; it counts until it expires in %s",
            reservation,
            RESERVATION_TTL,
            exc_info=True,
        )


def storage_full(exc: BudgetExceeded) -> ClientStorageFull:
    return ClientStorageFull(
        f"This client's uploaded files take {exc.used} of its {exc.budget} bytes "
        f"(PPS_CLIENT_STORAGE_BYTES); the file of {exc.size} bytes does not fit, and nothing "
        "was stored. Deleting files (DELETE /api-ext/file/<identifier>) or drafts with an "
        "uploaded print PDF frees room."
    )
