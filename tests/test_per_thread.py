"""PerThread: one object per thread and per process, the basis of the held connections."""

from __future__ import annotations

import itertools
import threading

from pps.platform.per_thread import PerThread


def test_a_thread_gets_its_one_object_and_other_threads_their_own() -> None:
    serial = itertools.count()
    held = PerThread(lambda: next(serial))
    mine = held.get()
    assert held.get() == mine  # made once per thread

    seen: list[tuple[int, int]] = []

    def other() -> None:
        seen.append((held.get(), held.get()))

    threads = [threading.Thread(target=other) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(first == second for first, second in seen)
    assert len({first for first, _ in seen} | {mine}) == 4


def test_forget_makes_every_thread_start_afresh() -> None:
    serial = itertools.count()
    held = PerThread(lambda: next(serial))
    first = held.get()
    held.forget()
    second = held.get()
    assert second != first
    assert held.get() == second
