"""Races pinned at one statement: one thread is held at a statement of its own while
others run into it, then let go.

A SQLAlchemy cursor hook holds the thread, so that each race runs in the one order its
test means, not in whichever order the scheduler picks. The other threads are started one
by one, each given the time to reach the held one's locks: until PostgreSQL shows it
waiting (``for_locks``), or for a moment where nothing shows it (``briefly``: SQLite).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from pps.platform.repository.sql import SqlRepository

#: Where a thread is held: at its first statement starting with this text (in any case),
#: or at its first statement the predicate accepts.
At = str | Callable[[str], bool]
#: How a started thread is given the time to run into the held one:
#: ``wait(repo, started, thread)``, ``started`` counting the threads started so far.
Wait = Callable[[SqlRepository, int, threading.Thread], None]

#: Seconds a step may take before the race counts as stuck: far past any real step.
TIMEOUT = 30


def nth(count: int, accepts: Callable[[str], bool]) -> Callable[[str], bool]:
    """A predicate for the ``count``-th statement ``accepts`` accepts: e.g. the second
    ``FOR UPDATE``, holding one row and about to lock another. It counts, so one per use."""
    seen = 0

    def accept(statement: str) -> bool:
        nonlocal seen
        if not accepts(statement):
            return False
        seen += 1
        return seen == count

    return accept


def _matcher(at: At) -> Callable[[str], bool]:
    if callable(at):
        return at
    prefix = at.upper()
    return lambda statement: statement.lstrip().upper().startswith(prefix)


@contextmanager
def holding(
    repo: SqlRepository,
    holder: Callable[[], object],
    at: At,
    *,
    after: bool = False,
    at_commit: bool = False,
) -> Iterator[None]:
    """Runs ``holder`` in a thread of its own, held at its first statement matching ``at``
    (just before it runs, just after with ``after``, or at the commit that follows it with
    ``at_commit``: its row locks still held) while the block runs; then lets it go and
    asserts that it ended. The hooks go with the block, also when the block fails."""
    held, resume, reached = threading.Event(), threading.Event(), threading.Event()
    matches = _matcher(at)
    thread = threading.Thread(target=holder)

    def hold() -> None:
        if not held.is_set():
            held.set()
            assert resume.wait(TIMEOUT)

    def on_statement(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if threading.current_thread() is thread and not reached.is_set() and matches(statement):
            reached.set()
            if not at_commit:
                hold()

    def on_commit(_conn: Any) -> None:
        if threading.current_thread() is thread and reached.is_set():
            hold()

    hooks: list[tuple[str, Callable[..., None]]] = [
        ("after_cursor_execute" if after else "before_cursor_execute", on_statement)
    ]
    if at_commit:
        hooks.append(("commit", on_commit))
    for event, hook in hooks:
        sa.event.listen(repo.engine, event, hook)
    try:
        thread.start()
        assert held.wait(TIMEOUT), "the held thread never reached its statement"
        yield
        resume.set()
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "the held thread did not end once let go"
    finally:
        resume.set()
        for event, hook in hooks:
            sa.event.remove(repo.engine, event, hook)


def hold_then_race(
    repo: SqlRepository,
    holder: Callable[[], object],
    at: At,
    *others: Callable[[], object],
    wait: Wait,
    at_commit: bool = False,
) -> None:
    """Holds ``holder`` at ``at`` (see ``holding``), starts each of ``others`` in a thread
    in turn, ``wait`` giving it the time to run into the held one, then lets go; returns
    once every thread ended (asserted)."""
    threads = [threading.Thread(target=other) for other in others]
    with holding(repo, holder, at, at_commit=at_commit):
        for started, thread in enumerate(threads, start=1):
            thread.start()
            wait(repo, started, thread)
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a racing thread did not end"


def waiting_for_locks(repo: SqlRepository) -> int:
    """How many of the app's connections wait for a lock (PostgreSQL)."""
    with repo.engine.connect() as conn:
        query = (
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return int(conn.exec_driver_sql(query).scalar_one())


def for_locks(repo: SqlRepository, started: int, thread: threading.Thread) -> None:
    """Until PostgreSQL shows each thread started so far waiting for a lock; ``thread``
    ending first means it did not wait for the held one, which the race is about."""
    deadline = time.monotonic() + 10
    while waiting_for_locks(repo) < started:
        assert thread.is_alive(), "finished instead of waiting for the held thread's lock"
        assert time.monotonic() < deadline, f"not {started} requests waiting for locks"
        time.sleep(0.01)


def briefly(_repo: SqlRepository, _started: int, thread: threading.Thread) -> None:
    """A second for ``thread``: done at once, or waiting for the held one's lock, where
    no backend shows the wait (SQLite). Less than the 2 s statement timeout of the default
    PPS_DATABASE_TIMEOUT, which would answer the wait with a 503."""
    thread.join(1)


def to_the_end(_repo: SqlRepository, _started: int, thread: threading.Thread) -> None:
    """Until ``thread`` ended: it takes none of the held one's locks and must finish
    while that one is held."""
    thread.join(TIMEOUT)
    assert not thread.is_alive(), "waited for the held thread instead of ending"
