"""``GET /auth`` of pps against the naive ``/auth``, both called as WSGI callables.

    .venv/bin/python bench/wsgi_auth.py [-n 3000] [--rounds 3] [--threads 1] [--no-gc-freeze]

No sockets, no gunicorn, no test client: each app is called with a prepared WSGI environ,
so what is compared is the work of the two apps alone (Flask, their views and one Redis
round trip each, to a spawned redis-server). Less noisy than bench/load.py, which is the
measure of the targets; this one says whether a change to the view moved it. Every request
carries a fresh login token, as shops send them. Prints microseconds per request of a
Flask hello-world, a no-op view inside pps's app (its hooks and session interface), pps's
``/auth`` and naive's, per round, the ratio naive/pps (above 1: pps is faster), the CPU
time and voluntary context switches per request of the two ``/auth``, and the
microseconds per request the garbage collector took during pps's ``/auth``; at the end, the
longest collection of the run and what a full collection of the process takes.

With ``--threads 4`` each app is called by four threads at once, as one worker of the
deploy config calls it: every wait that lets go of the GIL (a Redis reply, a SQLite step)
can then hand the CPU to another thread, and the switches column counts those hand-overs.

The apps are built, then frozen out of the collector's sight (``gc.freeze``) as
deploy/gunicorn.conf.py does in every worker; ``--no-gc-freeze`` leaves them in it.
"""

from __future__ import annotations

import argparse
import gc
import io
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import benchlib
import jwt
from naive import naive_app
from profile_auth import build_pps, hello_app

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def environ(path: str, query: str) -> dict[str, Any]:
    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1:8000",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }


@dataclass(frozen=True)
class Measured:
    """Per request: wall microseconds, CPU microseconds of the process (every thread),
    and voluntary context switches (a thread giving up the CPU: a wait, or the GIL)."""

    wall: float
    cpu: float
    switches: float


def serve(app: WsgiApp, environs: list[dict[str, Any]], statuses: list[str]) -> None:
    """Call ``app`` once per environ, appending each answer's status line to ``statuses``."""

    def start_response(status: str, headers: object, exc_info: object = None) -> None:
        statuses.append(status)

    for env in environs:
        body = app(env, start_response)
        for _ in body:
            pass
        close = getattr(body, "close", None)
        if close is not None:
            close()


def measure(
    app: WsgiApp, requests: list[tuple[str, str]], expected: str, threads: int = 1
) -> Measured:
    """``requests`` dealt round-robin to ``threads`` threads that call ``app`` at once, as
    the threads of one gunicorn worker do; every answer must have the ``expected`` status
    code (checked here: an exception in a thread would not reach the caller)."""
    shares = [
        [environ(path, query) for path, query in requests[index::threads]]
        for index in range(threads)
    ]
    statuses: list[str] = []  # list.append is atomic: the threads share one
    workers = [threading.Thread(target=serve, args=(app, share, statuses)) for share in shares]
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    wrong = [status for status in statuses if not status.startswith(expected)]
    if wrong or len(statuses) != len(requests):
        raise SystemExit(f"expected {len(requests)} x {expected}, got {wrong[:3] or len(statuses)}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    count = len(requests)
    return Measured(
        wall=elapsed / count * 1e6,
        cpu=cpu / count * 1e6,
        switches=(after.ru_nvcsw - before.ru_nvcsw) / count,
    )


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    """``--threads``, for the scripts that call apps through :func:`measure`."""
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads calling each app at once, as a gunicorn worker's (1; the deploy config: 4)",
    )


class GcClock:
    """Wall time spent in the garbage collector, and its longest pause, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.longest = 0.0
        self._started = 0.0
        gc.callbacks.append(self._event)

    def _event(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            pause = time.perf_counter() - self._started
            self.seconds += pause
            self.longest = max(self.longest, pause)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    add_threads_option(parser)
    parser.add_argument(
        "--no-gc-freeze", action="store_true", help="leave the apps in the collector's sight"
    )
    args = parser.parse_args()
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        redis_url = stack.enter_context(benchlib.redis_server(workdir))
        pps, tokens = build_pps(workdir, redis_url)
        pps.add_url_rule("/bench-noop", "bench_noop", lambda: "ok")  # benchmark app only
        sample = tokens(1)[0]
        client = jwt.decode(sample, options={"verify_signature": False})["client"]
        found = pps.extensions["pps"].repository.get_client(client)
        naive = naive_app(redis_url, {client: found.api_key})
        hello = hello_app()
        if not args.no_gc_freeze:
            gc.freeze()
        gc_clock = GcClock()
        n, threads = args.requests, args.threads
        heads = ("round", "hello", "pps no-op", "pps /auth", "naive")
        print(
            f"{heads[0]:>5} {heads[1]:>8} {heads[2]:>10} {heads[3]:>10} {heads[4]:>8}"
            "  naive/pps  CPU pps/naive  switches pps/naive  gc in /auth"
        )
        for round_number in range(1, args.rounds + 1):
            base = measure(hello, [("/", "")] * n, "200", threads)
            noop = measure(pps, [("/bench-noop", "")] * n, "200", threads)
            requests = [("/auth", f"jwt={t}") for t in tokens(n)]
            gc_before = gc_clock.seconds
            auth = measure(pps, requests, "302", threads)
            gc_auth = (gc_clock.seconds - gc_before) / n * 1e6
            ref = measure(naive, [("/auth", f"jwt={t}") for t in tokens(n)], "302", threads)
            print(
                f"{round_number:>5} {base.wall:8.0f} {noop.wall:10.0f} {auth.wall:10.0f}"
                f" {ref.wall:8.0f}  {ref.wall / auth.wall:9.2f}"
                f"  {auth.cpu:5.0f} / {ref.cpu:<5.0f}"
                f"  {auth.switches:8.1f} / {ref.switches:<7.1f}  {gc_auth:8.1f} us"
            )
        started = time.perf_counter()
        gc.collect()
        full = (time.perf_counter() - started) * 1e3
        print(
            f"longest collection {gc_clock.longest * 1e3:.1f} ms; a full one now "
            f"{full:.1f} ms ({gc.get_freeze_count()} objects frozen)"
        )


if __name__ == "__main__":
    main()
