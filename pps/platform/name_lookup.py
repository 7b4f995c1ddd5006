"""Host name lookups that end when their caller's time does.

``socket.getaddrinfo`` has no timeout of its own: a name server that never answers holds
the calling thread for the system resolver's timeout times its attempts times its servers,
often half a minute. pps looks names up inside web requests (a URL a shop gives is checked
at once) and at the start of each outbound request (whose whole deadline must hold), so a
lookup runs in a small pool of threads of its own and the caller waits for it at most the
time it has. A lookup that takes longer is left to finish in its thread; while every thread
of the pool is held so (a dead name server), further lookups fail at once rather than queue
without bound behind them.

The threads are daemon threads, one per lookup (at most :data:`LOOKUP_THREADS` at once):
a lookup left behind on a dead name server must not hold up the process's exit by the
system resolver's timeout, as a ``ThreadPoolExecutor``'s workers would (the interpreter
joins them at exit, and ``shutdown(wait=False)`` does not change that). Starting a thread
costs far less than the lookup it runs.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["LOOKUP_THREADS", "LookupFunction", "LookupTimeout", "Resolver", "default_resolver"]

#: Lookups in flight at once per process; more waiting on a silent name server fail fast.
LOOKUP_THREADS = 8

#: ``socket.getaddrinfo``'s shape: (host, port, type=..., proto=...) to address infos.
LookupFunction = Callable[..., Sequence[tuple[Any, ...]]]


class LookupTimeout(Exception):
    """The name did not resolve in the time given, or no lookup thread was free; the
    message says which, naming the host (never an address)."""


class _Pending:
    """One lookup's outcome, handed from its thread to the caller waiting for it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Sequence[tuple[Any, ...]] = ()
        self.error: BaseException | None = None


class Resolver:
    """Runs ``lookup`` (``socket.getaddrinfo`` unless another is given, as tests do) in at
    most ``threads`` daemon threads at once, each call waited for at most its timeout."""

    def __init__(self, lookup: LookupFunction = socket.getaddrinfo, threads: int = LOOKUP_THREADS):
        self._lookup = lookup
        self._threads = threads
        # Counts lookups still running, including those whose caller stopped waiting.
        self._slots = threading.BoundedSemaphore(threads)
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def _free_slots(self) -> threading.BoundedSemaphore:
        """The slots, counted afresh in a forked child (whose copy has no threads behind
        the slots taken)."""
        with self._lock:
            if self._pid != os.getpid():
                self._slots = threading.BoundedSemaphore(self._threads)
                self._pid = os.getpid()
            return self._slots

    def getaddrinfo(self, host: str, port: int, timeout: float) -> Sequence[tuple[Any, ...]]:
        """TCP address infos of ``host``; :class:`LookupTimeout` when none came within
        ``timeout`` seconds; the lookup's own errors (``OSError``, ...) as they are."""
        slots = self._free_slots()
        if timeout <= 0:
            raise LookupTimeout(f"The name {host!r} was not looked up: no time was left for it.")
        if not slots.acquire(blocking=False):
            raise LookupTimeout(
                f"The name {host!r} was not looked up: every name lookup is still waiting "
                "for a name server."
            )
        pending = _Pending()

        def run() -> None:
            try:
                pending.result = self._lookup(
                    host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
                )
            except BaseException as exc:  # handed to the caller, raised there
                pending.error = exc
            finally:
                slots.release()
                pending.done.set()

        thread = threading.Thread(target=run, name="pps-lookup", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # the interpreter is shutting down, or no thread can be made
            slots.release()
            raise
        if not pending.done.wait(timeout):
            raise LookupTimeout(f"The name {host!r} did not resolve within {timeout:g} s.")
        if pending.error is not None:
            raise pending.error
        return pending.result


_default: Resolver | None = None
_default_lock = threading.Lock()


def default_resolver() -> Resolver:
    """The process's resolver, made at first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Resolver()
        return _default
