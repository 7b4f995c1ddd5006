"""How many renders a client may start per minute, counted in the ephemeral store. No Flask.

A render costs a core for a few hundred milliseconds and leaves a file in storage; cached
files cost neither, so only renders are counted. The count is shared by every worker and
host through the ephemeral store (Redis or the embedded SQLite file), in fixed windows of
one minute: simple, and at most twice the limit across a window's edge.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pps.platform.ephemeral import EphemeralStore
from pps.platform.errors import PpsError

__all__ = ["WINDOW_SECONDS", "TooManyRenders", "render_budget", "renders_key"]

WINDOW_SECONDS = 60


class TooManyRenders(PpsError):
    """429: the client used up its renders for this minute (``PPS_RENDERS_PER_MINUTE``)."""

    status = 429
    default_message = (
        "Too many files rendered for this client in the last minute; files rendered "
        "before are still served. Try again after Retry-After seconds."
    )

    def __init__(self, retry_after: int) -> None:
        super().__init__(headers={"Retry-After": str(max(1, retry_after))})


def renders_key(client: str, window: int) -> str:
    """``pps:renders:<client>:<window>``: one counter per client and minute."""
    return f"pps:renders:{client}:{window}"


def render_budget(
    store: EphemeralStore,
    client: str,
    per_minute: int,
    clock: Callable[[], float] = time.time,
) -> Callable[[], None]:
    """A ``spend`` for :class:`pps.files.rendering.RenderPolicy`: counts one render of ``client``
    and raises :class:`TooManyRenders` past ``per_minute`` (0: no limit)."""

    def spend() -> None:
        if per_minute <= 0:
            return
        now = clock()
        window = int(now // WINDOW_SECONDS)
        # Kept a window longer than it counts, so a late count never starts a fresh one.
        used = store.count(renders_key(client, window), 2 * WINDOW_SECONDS)
        if used > per_minute:
            raise TooManyRenders(WINDOW_SECONDS - int(now % WINDOW_SECONDS))

    return spend
