"""Host name lookups that end when their caller's time does.

``socket.getaddrinfo`` has no timeout of its own: a name server that never answers holds
the calling thread for the system resolver's timeout times its attempts times its servers,
often half a minute. pps looks names up inside web requests (a URL a shop gives is checked
at once) and at the start of each outbound request (whose whole deadline must hold), so a
lookup runs in a small pool of threads of its own and the caller waits for it at most the
time it has. A lookup that takes longer is left to finish in its thread; while every thread
of the pool is held so (a dead name server), further lookups fail at once rather than queue
without bound behind them.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["LOOKUP_THREADS", "LookupFunction", "LookupTimeout", "Resolver", "default_resolver"]

#: Lookups in flight at once per process; more waiting on a silent name server fail fast.
LOOKUP_THREADS = 8

#: ``socket.getaddrinfo``'s shape: (host, port, type=..., proto=...) to address infos.
LookupFunction = Callable[..., Sequence[tuple[Any, ...]]]


class LookupTimeout(Exception):
    """The name did not resolve in the time given, or no lookup thread was free; the
    message says which, naming the host (never an address)."""


class Resolver:
    """Runs ``lookup`` (``socket.getaddrinfo`` unless another is given, as tests do) in at
    most ``threads`` threads, each call waited for at most its timeout."""

    def __init__(self, lookup: LookupFunction = socket.getaddrinfo, threads: int = LOOKUP_THREADS):
        self._lookup = lookup
        self._threads = threads
        # Counts lookups still running, including those whose caller stopped waiting.
        self._slots = threading.BoundedSemaphore(threads)
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pid = 0

    def _executor(self) -> tuple[ThreadPoolExecutor, threading.BoundedSemaphore]:
        """The pool and its slots, made at first use and again in a forked child (whose
        copy has no threads behind it)."""
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="pps-lookup")
                self._slots = threading.BoundedSemaphore(self._threads)
                self._pid = os.getpid()
            return self._pool, self._slots

    def getaddrinfo(self, host: str, port: int, timeout: float) -> Sequence[tuple[Any, ...]]:
        """TCP address infos of ``host``; :class:`LookupTimeout` when none came within
        ``timeout`` seconds; the lookup's own errors (``OSError``, ...) as they are."""
        pool, slots = self._executor()
        if timeout <= 0:
            raise LookupTimeout(f"The name {host!r} was not looked up: no time was left for it.")
        if not slots.acquire(blocking=False):
            raise LookupTimeout(
                f"The name {host!r} was not looked up: every name lookup is still waiting "
                "for a name server."
            )

        def run() -> Sequence[tuple[Any, ...]]:
            try:
                return self._lookup(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
            finally:
                slots.release()

        try:
            future = pool.submit(run)
        except RuntimeError:  # the interpreter is shutting down
            slots.release()
            raise
        try:
            return future.result(timeout)
        except TimeoutError:
            raise LookupTimeout(
                f"The name {host!r} did not resolve within {timeout:g} s."
            ) from None


_default: Resolver | None = None
_default_lock = threading.Lock()


def default_resolver() -> Resolver:
    """The process's resolver, made at first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Resolver()
        return _default
