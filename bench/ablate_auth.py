"""What each step of ``GET /auth`` costs in CPU, measured by taking steps away one by one.

    .venv/bin/python bench/ablate_auth.py [-n 2000] [--threads 1] [--rounds 3]

cProfile (bench/profile_auth.py) ranks functions but inflates call-heavy code; this script
measures plain CPU time of the process (kernel time of socket calls included) and voluntary
context switches per request, each app called as a WSGI callable with a prepared environ
(bench/wsgi_auth.py's ``measure``), in-process, for:

1. a Flask hello-world (the baseline of bench/load.py);
2. the full ``/auth``;
3. ``/auth`` without the nonce claim and the handoff (the ephemeral store answers "first"
   without Redis);
4. ... and without saving the session (editor logins set no cookie at ``/auth``: they hand
   the session over to the editor, so this row costs nothing for them);
5. ... and without the user lookup;

and, for reference, the "naive" ``/auth`` of the issue (bench/naive.py: Flask + PyJWT +
redis-py, verify, claim, redirect, nothing else) on the same tokens and Redis.

The differences between consecutive rows are the cost of each step. With ``--threads 4``
each app is called by four threads at once, as a worker of the deploy config calls it:
a step that lets go of the GIL (a Redis reply, a SQLite statement) then also pays for
handing the CPU to another thread, which the switches column counts. Benchmark only: the
steps are switched off by replacing attributes of this process's app, never in pps itself.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchlib
from naive import naive_app
from profile_auth import build_pps, hello_app
from wsgi_auth import Measured, WsgiApp, add_threads_option, measure


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=2000, help="requests per row (default 2000)")
    add_threads_option(parser)
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs of every row; the median counts (3)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, benchlib.redis_server(Path(tmp)) as redis_url:
        app, tokens = build_pps(Path(tmp), redis_url)
        hello = hello_app()

        def logins(count: int = args.n) -> list[tuple[str, str]]:
            return [("/auth", "jwt=" + token) for token in tokens(count)]

        def hellos(count: int = args.n) -> list[tuple[str, str]]:
            return [("/", "")] * count

        def per_request(
            wsgi: WsgiApp, requests: Callable[[], list[tuple[str, str]]], status: str
        ) -> Measured:
            """The run of median CPU out of ``--rounds`` (the machine may be noisy), each on
            fresh ``requests()``: a login token works once."""
            runs = [measure(wsgi, requests(), status, args.threads) for _ in range(args.rounds)]
            return sorted(runs, key=lambda run: run.cpu)[len(runs) // 2]

        measure(app, logins(200), "302", args.threads)  # warm-up: connections, caches
        measure(hello, hellos(200), "200", args.threads)
        svc = app.extensions["pps"]
        sessions = app.session_interface
        removals: list[tuple[str, Callable[[], Any]]] = [
            ("nonce claim and handoff (Redis)", lambda: _claim_locally(svc.ephemeral)),
            ("session save (no cookie: editor logins hand off)", _no_session_save(sessions)),
            ("user lookup (database)", lambda: setattr(svc.repository, "user_exists", _yes)),
        ]
        baseline = per_request(hello, hellos, "200")
        keys = {client.identifier: client.api_key for client in svc.repository.list_clients()}
        naive = naive_app(redis_url, keys)
        measure(naive, logins(200), "302", args.threads)
        naive_row = per_request(naive, logins, "302")
        rows = [
            ("hello-world", baseline),
            ("/auth, everything", per_request(app, logins, "302")),
        ]
        for label, remove in removals:
            remove()
            rows.append((f"  without {label}", per_request(app, logins, "302")))
    print(
        f"CPU per request, in-process, {args.n} requests each, {args.threads} thread(s), "
        f"median of {args.rounds} runs\n"
    )
    print(f"{'row':58s} {'us':>6s} {'x hello':>8s} {'step costs':>11s} {'switches':>9s}")
    previous = None
    for label, row in rows:
        step = "" if previous is None or label == rows[1][0] else f"{previous - row.cpu:8.0f} us"
        print(
            f"{label:58s} {row.cpu:6.0f} {row.cpu / baseline.cpu:8.2f} {step:>11s}"
            f" {row.switches:9.1f}"
        )
        previous = row.cpu
    left = rows[-1][1].cpu - baseline.cpu
    print(f"\nleft over the baseline with all three steps removed: {left:.0f} us")
    print(
        f"naive /auth (Flask + PyJWT + redis-py): {naive_row.cpu:.0f} us, "
        f"{naive_row.cpu / baseline.cpu:.2f} x hello, {naive_row.switches:.1f} switches"
    )
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
