"""How many live previews one login may ask for: bursts while typing, a ceiling over time.

The editor renders a page as the customer types (one request in flight per page, the latest
value sent when it returns), so a fast typist asks for ten or more a second for a few
seconds, then nothing. Two fixed windows counted in the ephemeral store (shared by every
worker and node) let such bursts through and still bound what a script can spend: a short
window that allows a burst, and a minute that caps the sustained rate, like a token bucket
whose size is the burst and whose refill is the per-minute rate. Each preview also counts
against the client's ``PPS_RENDERS_PER_MINUTE``.

Uploads from the editor are counted the same way (:func:`upload_wait`): each one is decoded
to be checked and then stored for good, so a login may place images as fast as a person
picks files, not as fast as a script sends them. Posts of the form (:func:`form_save_wait`)
are bounded as the script's autosaves are: each asks the shop's remote ACL and checks the
values, and a save writes a version, runs preflight and notifies the shop's webhooks; a
refused post (422, 409) is counted too, or a script could make pps ask the shop's ACL
without end. No Flask here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from pps.platform.ephemeral import EphemeralStore

__all__ = [
    "BURST",
    "BURST_SECONDS",
    "FORM_SAVES",
    "FORM_SAVES_PER_MINUTE",
    "FORM_SAVE_BURST",
    "PER_MINUTE",
    "UPLOADS_PER_HOUR",
    "UPLOADS_PER_MINUTE",
    "PreviewLimit",
    "form_save_wait",
    "preview_wait",
    "upload_wait",
]

#: Previews per login within :data:`BURST_SECONDS` (all its drafts and pages together).
BURST = 24
BURST_SECONDS = 2
#: Previews per login per minute: five a second on average, far above what typing needs
#: once the burst is spent, and a small share of a worker.
PER_MINUTE = 300
#: Image uploads per login (all its drafts together) per minute and per hour: a customer
#: places a few images and tries a few more; a template with many image boxes still fits.
UPLOADS_PER_MINUTE = 20
UPLOADS_PER_HOUR = 120
#: Posts of the form per login (saves and finishes, refused or not): a burst (a shop's
#: script calling the bridge's ``save()`` after each of a few updates) and a ceiling per
#: minute.
FORM_SAVE_BURST = 10
FORM_SAVES_PER_MINUTE = 120


@dataclass(frozen=True)
class PreviewLimit:
    burst: int = BURST
    burst_seconds: int = BURST_SECONDS
    per_minute: int = PER_MINUTE


#: The form's saves and finishes, counted like previews.
FORM_SAVES = PreviewLimit(burst=FORM_SAVE_BURST, per_minute=FORM_SAVES_PER_MINUTE)


def preview_wait(
    store: EphemeralStore,
    client: str,
    user: str,
    limit: PreviewLimit = PreviewLimit(),
    clock: Callable[[], float] = time.time,
) -> int:
    """Count one preview of ``user``; 0 when it may render, else seconds to wait."""
    return _wait(store, f"pps:preview:{client}:{user}", limit, clock())


def form_save_wait(
    store: EphemeralStore, client: str, user: str, clock: Callable[[], float] = time.time
) -> int:
    """Count one post of ``user``'s form (a save or finish, refused or not); 0 when it may
    be handled, else seconds to wait."""
    return _wait(store, f"pps:formsave:{client}:{user}", FORM_SAVES, clock())


def _wait(store: EphemeralStore, prefix: str, limit: PreviewLimit, now: float) -> int:
    """The burst window, then the minute, counted under ``prefix``.

    The minute is counted first only when the burst allows the request, so requests refused
    by the burst do not use up the minute.
    """
    short = int(now // limit.burst_seconds)
    if store.count(f"{prefix}:b{short}", 2 * limit.burst_seconds) > limit.burst:
        return max(1, limit.burst_seconds - int(now % limit.burst_seconds))
    minute = int(now // 60)
    if store.count(f"{prefix}:m{minute}", 120) > limit.per_minute:
        return max(1, 60 - int(now % 60))
    return 0


def upload_wait(
    store: EphemeralStore, client: str, user: str, clock: Callable[[], float] = time.time
) -> int:
    """Count one upload of ``user``; 0 when it may be stored, else seconds to wait.

    The hour is counted only when the minute allows the upload, as in :func:`preview_wait`.
    """
    now = clock()
    minute = int(now // 60)
    if store.count(f"pps:upload:{client}:{user}:m{minute}", 120) > UPLOADS_PER_MINUTE:
        return max(1, 60 - int(now % 60))
    hour = int(now // 3600)
    if store.count(f"pps:upload:{client}:{user}:h{hour}", 7200) > UPLOADS_PER_HOUR:
        return max(1, 3600 - int(now % 3600))
    return 0
