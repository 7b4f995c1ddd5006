"""Run a sequence of requests inside one of pps's counting windows.

pps counts rate limits in fixed windows aligned to the clock (``int(now // seconds)``: a
second for autosaves, two seconds for bursts, a minute, an hour). A test that expects the
N+1st request to be refused must send all N+1 within one window: across a window's end
the count starts again and the limit is met later, or not at all on a busy machine. Tests
of the limit over HTTP cannot hand pps a clock, so they start the sequence just after a
window begins and, when it still ran past the window's end, run it again from the next
window's start (the window it ended in holds some of its counts).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["in_one_window", "window_start"]

T = TypeVar("T")


def window_start(seconds: int, needed: float) -> None:
    """Sleep until a window of ``seconds`` begins, unless ``needed`` seconds are left in
    the current one."""
    left = seconds - time.time() % seconds
    if left < needed:
        time.sleep(left + 0.05)


def in_one_window(
    seconds: int, run: Callable[[], T], *, needed: float | None = None, tries: int = 4
) -> T:
    """What ``run`` returned, once it started and ended within one window of ``seconds``.

    ``needed``: the time left in a window for a try to start in it (by default the whole
    window: each try starts just after a window begins). Fails when no try fits.
    """
    for _ in range(tries):
        window_start(seconds, seconds if needed is None else needed)
        began = time.time()
        result = run()
        if int(began // seconds) == int(time.time() // seconds):
            return result
        window_start(seconds, seconds)  # the window it ended in has counts of this try
    raise AssertionError(f"{tries} tries did not fit in one {seconds}-second window")
