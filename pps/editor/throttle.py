"""How many live previews one login may ask for: bursts while typing, a ceiling over time.

The editor renders a page as the customer types (one request in flight per page, the latest
value sent when it returns), so a fast typist asks for ten or more a second for a few
seconds, then nothing. Two fixed windows counted in the ephemeral store (shared by every
worker and node) let such bursts through and still bound what a script can spend: a short
window that allows a burst, and a minute that caps the sustained rate, like a token bucket
whose size is the burst and whose refill is the per-minute rate. Each preview also counts
against the client's ``PPS_RENDERS_PER_MINUTE``. No Flask here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from pps.platform.ephemeral import EphemeralStore

__all__ = ["BURST", "BURST_SECONDS", "PER_MINUTE", "PreviewLimit", "preview_wait"]

#: Previews per login within :data:`BURST_SECONDS` (all its drafts and pages together).
BURST = 24
BURST_SECONDS = 2
#: Previews per login per minute: five a second on average, far above what typing needs
#: once the burst is spent, and a small share of a worker.
PER_MINUTE = 300


@dataclass(frozen=True)
class PreviewLimit:
    burst: int = BURST
    burst_seconds: int = BURST_SECONDS
    per_minute: int = PER_MINUTE


def preview_wait(
    store: EphemeralStore,
    client: str,
    user: str,
    limit: PreviewLimit = PreviewLimit(),
    clock: Callable[[], float] = time.time,
) -> int:
    """Count one preview of ``user``; 0 when it may render, else seconds to wait.

    The minute is counted first only when the burst allows the request, so requests refused
    by the burst do not use up the minute.
    """
    now = clock()
    short = int(now // limit.burst_seconds)
    if store.count(f"pps:preview:{client}:{user}:b{short}", 2 * limit.burst_seconds) > limit.burst:
        return max(1, limit.burst_seconds - int(now % limit.burst_seconds))
    minute = int(now // 60)
    if store.count(f"pps:preview:{client}:{user}:m{minute}", 120) > limit.per_minute:
        return max(1, 60 - int(now % 60))
    return 0
