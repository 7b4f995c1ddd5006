"""What each step of ``GET /auth`` costs in CPU, measured by taking steps away one by one.

    .venv/bin/python bench/ablate_auth.py [-n 2000]

cProfile (bench/profile_auth.py) ranks functions but inflates call-heavy code; this script
measures plain CPU time (``time.process_time``, so kernel time of socket calls counts too)
per request through the Flask test client, in-process, for:

1. a Flask hello-world (the baseline of bench/load.py);
2. the full ``/auth``;
3. ``/auth`` without the nonce claim and the handoff (the ephemeral store answers "first"
   without Redis);
4. ... and without saving the session (editor logins set no cookie at ``/auth``: they hand
   the session over to the editor, so this row costs nothing for them);
5. ... and without the user lookup;

and, for reference, the "naive" ``/auth`` of the issue (bench/naive.py: Flask + PyJWT +
redis-py, verify, claim, redirect, nothing else) on the same tokens and Redis.

The differences between consecutive rows are the cost of each step. Benchmark only: the
steps are switched off by replacing attributes of this process's app, never in pps itself.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchlib
from flask import Flask
from naive import naive_app
from profile_auth import build_pps, drive, hello_app


def cpu_per_request(app: Flask, paths: list[str], expected: int) -> float:
    started = time.process_time()
    drive(app, paths, expected)
    return (time.process_time() - started) / len(paths) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=2000, help="requests per row (default 2000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, benchlib.redis_server(Path(tmp)) as redis_url:
        app, tokens = build_pps(Path(tmp), redis_url)
        hello = hello_app()

        def auth_paths() -> list[str]:
            return ["/auth?jwt=" + token for token in tokens(args.n)]

        drive(app, auth_paths()[:200], 302)  # warm-up: connections, caches
        drive(hello, ["/"] * 200, 200)
        svc = app.extensions["pps"]
        sessions = app.session_interface
        removals: list[tuple[str, Callable[[], Any]]] = [
            ("nonce claim and handoff (Redis)", lambda: _claim_locally(svc.ephemeral)),
            ("session save (no cookie: editor logins hand off)", _no_session_save(sessions)),
            ("user lookup (database)", lambda: setattr(svc.repository, "user_exists", _yes)),
        ]
        baseline = cpu_per_request(hello, ["/"] * args.n, 200)
        keys = {client.identifier: client.api_key for client in svc.repository.list_clients()}
        naive = naive_app(redis_url, keys)
        drive(naive, auth_paths()[:200], 302)
        naive_cpu = cpu_per_request(naive, auth_paths(), 302)
        rows = [
            ("hello-world", baseline),
            ("/auth, everything", cpu_per_request(app, auth_paths(), 302)),
        ]
        for label, remove in removals:
            remove()
            rows.append((f"  without {label}", cpu_per_request(app, auth_paths(), 302)))
    print(f"CPU per request, in-process, {args.n} requests each\n")
    print(f"{'row':44s} {'us':>8s} {'x hello':>8s} {'step costs':>11s}")
    previous = None
    for label, value in rows:
        step = "" if previous is None or label == rows[1][0] else f"{previous - value:9.0f} us"
        print(f"{label:44s} {value:8.0f} {value / baseline:8.2f} {step:>11s}")
        previous = value
    print(f"\nleft over the baseline with all three steps removed: {rows[-1][1] - baseline:.0f} us")
    ratio = naive_cpu / baseline
    print(f"naive /auth (Flask + PyJWT + redis-py): {naive_cpu:.0f} us, {ratio:.2f} x hello")
    return 0


def _first(_key: str, _ttl: int) -> bool:
    return True


def _claim_locally(store: Any) -> None:
    """The store answers "first" without Redis, for ``claim``, ``claim_while`` and
    ``claim_and_put`` (an editor login claims its nonce and stores its handoff at once)."""
    store.claim = _first
    store.claim_while = lambda _key, _ttl, work: (work(),)
    store.claim_and_put = lambda _key, _ttl, _link, _value, _link_ttl: True


def _no_session_save(sessions: Any) -> Callable[[], None]:
    return lambda: setattr(sessions, "save_session", _no_cookie)


def _no_cookie(*_args: Any) -> None:
    return None


def _yes(_client: str, _user: str) -> bool:
    return True


if __name__ == "__main__":
    raise SystemExit(main())
