"""The pause before a retry, doubling from one attempt to the next up to a cap: one rule for
webhook and notification deliveries and for batch jobs."""

from __future__ import annotations

__all__ = ["doubling_pause"]


def doubling_pause(backoff: float, attempts_made: int, longest: float) -> float:
    """``backoff`` seconds after the first failed attempt, doubled after each further one,
    never more than ``longest``.

    Attempts have no upper bound (the settings allow any number, and a give-up that cannot
    be recorded during an outage keeps counting): past about a thousand of them the doubling
    no longer fits a float, and the ``OverflowError`` left a delivery unrecorded and a job
    never queued again. Such a pause is long past the cap, so it is the cap.
    """
    try:
        pause = backoff * 2.0 ** max(0, attempts_made - 1)
    except OverflowError:
        pause = longest if backoff > 0 else 0.0
    return float(min(longest, pause))
