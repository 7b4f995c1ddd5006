"""One object per thread and per process, made on first use: a connection a thread holds.

The hot paths (``/auth``, the file links) make one Redis command and one SQLite lookup per
request. Taking a shared connection from a pool and giving it back costs Python work, and
for redis-py also a ``poll`` of the socket (the pool checks that a connection it hands out
has no unread data): a system call around which CPython lets go of the GIL, so that in a
gunicorn worker of four threads another thread usually takes the CPU in the middle of the
request. A connection held by its thread needs neither. Keyed by process id too: an object
made before a fork is never used by the child (gunicorn forks its workers).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["PerThread"]

T = TypeVar("T")


class PerThread(Generic[T]):
    """``get()`` returns this thread's object, made by ``make()`` on its first call in this
    thread and process. Objects of threads that end go with them (and whatever closes them
    on collection, such as redis-py's client returning its connection to the pool)."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._local = threading.local()

    def get(self) -> T:
        held: tuple[int, T] | None = getattr(self._local, "held", None)
        pid = os.getpid()
        if held is not None and held[0] == pid:
            return held[1]
        made = self._make()
        self._local.held = (pid, made)
        return made

    def forget(self) -> None:
        """Drop every thread's object: each thread's next ``get()`` makes a new one."""
        self._local = threading.local()
