"""Claiming a ``pps worker --name`` that a killed worker of this host still holds.

RQ refuses to start a worker whose name is registered and not marked dead, and a worker
killed without a chance to deregister (SIGKILL, the OOM killer) stays registered until
its registration's TTL runs out (``WORKER_TTL`` + 60 s of :mod:`pps.processing.cli`, a
minute and a half; eight minutes with RQ's default). ``deploy/pps-worker.service`` names
its worker after the host and restarts it two seconds after a failure: each restart failed
on the stale name until systemd's start limit gave up, leaving no worker at all. No Flask
here.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from rq import Worker

__all__ = ["NameTaken", "claim_worker_name"]


class NameTaken(Exception):
    """A live worker (or one on another host, which this one cannot check) has the name."""


def claim_worker_name(connection: Any, name: str) -> None:
    """Mark the registration of ``name`` dead when it belongs to a process of this host
    that no longer runs; raise :class:`NameTaken` when it may still run."""
    registered = Worker.find_by_key(Worker.redis_worker_namespace_prefix + name, connection)
    if registered is None or registered.death_date is not None:
        return
    if registered.hostname == socket.gethostname() and not _running(registered.pid):
        registered.register_death()  # type: ignore[no-untyped-call]
        return
    raise NameTaken(
        f"a worker named {name!r} is registered already (pid {registered.pid} on "
        f"{registered.hostname}); stop it or give another --name"
    )


def _running(pid: int | None) -> bool:
    """Whether a process ``pid`` runs on this host; unknown counts as running."""
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of another user has the pid now
        return True
    return True
