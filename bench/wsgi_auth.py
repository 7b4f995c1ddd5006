"""``GET /auth`` of pps against the naive ``/auth``, both called as WSGI callables.

    .venv/bin/python bench/wsgi_auth.py [-n 3000] [--rounds 3]

No sockets, no gunicorn, no test client: each app is called with a prepared WSGI environ,
so what is compared is the work of the two apps alone (Flask, their views and one Redis
round trip each, to a spawned redis-server). Less noisy than bench/load.py, which is the
measure of the targets; this one says whether a change to the view moved it. Every request
carries a fresh login token, as shops send them. Prints microseconds per request of a
Flask hello-world, a no-op view inside pps's app (its hooks and session interface), pps's
``/auth`` and naive's, per round, and the ratio naive/pps (above 1: pps is faster).
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
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


def per_request(app: WsgiApp, requests: list[tuple[str, str]], expected: str) -> float:
    """Microseconds per request; every answer must have the ``expected`` status code."""
    statuses: list[str] = []

    def start_response(status: str, headers: object, exc_info: object = None) -> None:
        statuses.append(status)

    environs = [environ(path, query) for path, query in requests]
    started = time.perf_counter()
    for env in environs:
        body = app(env, start_response)
        for _ in body:
            pass
        close = getattr(body, "close", None)
        if close is not None:
            close()
    elapsed = time.perf_counter() - started
    wrong = [status for status in statuses if not status.startswith(expected)]
    if wrong:
        raise SystemExit(f"expected {expected}, got {wrong[:3]}")
    return elapsed / len(requests) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
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
        n = args.requests
        heads = ("round", "hello", "pps no-op", "pps /auth", "naive")
        print(f"{heads[0]:>5} {heads[1]:>8} {heads[2]:>10} {heads[3]:>10} {heads[4]:>8}  naive/pps")
        for round_number in range(1, args.rounds + 1):
            base = per_request(hello, [("/", "")] * n, "200")
            noop = per_request(pps, [("/bench-noop", "")] * n, "200")
            auth = per_request(pps, [("/auth", f"jwt={t}") for t in tokens(n)], "302")
            reference = per_request(naive, [("/auth", f"jwt={t}") for t in tokens(n)], "302")
            print(
                f"{round_number:>5} {base:8.0f} {noop:10.0f} {auth:10.0f} {reference:8.0f}"
                f"  {reference / auth:9.2f}"
            )


if __name__ == "__main__":
    main()
