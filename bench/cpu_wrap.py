"""WSGI wrapper for bench/app_cpu.py: thread CPU time spent inside the wrapped app.

``PPS_BENCH_TARGET`` names the app (``wsgi:app`` or ``hello:app``); every 1000 requests each
worker appends "<requests> <µs of thread CPU per request>" to
``$PPS_BENCH_CPU_DIR/<target>-<pid>.txt``. Benchmark only: never part of a deployment.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_TARGET = os.environ["PPS_BENCH_TARGET"]
_module, _, _name = _TARGET.partition(":")
_inner = getattr(importlib.import_module(_module), _name)
_OUT = Path(os.environ["PPS_BENCH_CPU_DIR"])
_EVERY = 1000
_lock = threading.Lock()
_sum = {"requests": 0, "cpu": 0.0}


def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    started = time.thread_time()  # this thread's CPU, system calls included
    body = _inner(environ, start_response)
    try:
        chunks = list(body)
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()
    spent = time.thread_time() - started
    with _lock:
        _sum["requests"] += 1
        _sum["cpu"] += spent
        if _sum["requests"] >= _EVERY:
            per_request = _sum["cpu"] / _sum["requests"] * 1e6
            with (_OUT / f"{_module}-{os.getpid()}.txt").open("a") as out:
                out.write(f"{_sum['requests']} {per_request:.1f}\n")
            _sum["requests"], _sum["cpu"] = 0, 0.0
    return chunks
