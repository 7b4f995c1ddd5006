"""Where one request's wall time goes, stage by stage: pps's ``/auth`` and single-use file
link against the naive ``/auth``, in-process.

    .venv/bin/python bench/stages.py [-n 4000] [--rounds 3]

bench/wsgi_auth.py says how long a request takes; this says where, for the stages every
Flask request goes through: building the request context (the URL adapter), pushing it
(routing, opening the session), the before-request hooks, the view, the after-request hooks
(saving the session), turning the answer into WSGI headers, and popping the context
(teardown). Each app is called in this process as a WSGI callable with a prepared environ
(bench/wsgi_auth.py's ``serve``), one thread, every request with a fresh token, against a
spawned redis-server. The stages are timed by wrapping public methods of Flask's request
cycle on this process's objects (``Flask.request_context``, ``RequestContext.push``/``pop``,
``Flask.preprocess_request``/``process_response``, ``Response.__call__``, the view), never
in pps itself; each wrapper adds about a microsecond, alike for every app. ``rest`` is what
no stage covers (Flask's dispatch, the WSGI loop).

The view's wall time includes its wait for Redis. The times are those of a request in a
loop of different requests, so caches are as cold as the code between two calls leaves
them: a step takes two to three times what ``timeit`` of that step alone says.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest.mock import patch
from urllib.parse import urlsplit

import benchlib
import jwt
from flask import Flask
from flask.ctx import RequestContext
from naive import naive_app
from profile_auth import build_pps
from werkzeug.wrappers import Response
from wsgi_auth import environ, serve

from pps.files.keys import draft_file_key

#: (label, owner, method name): the stages, in the order a request meets them.
STAGES: tuple[tuple[str, str, str], ...] = (
    ("context: build (URL adapter)", "app", "request_context"),
    ("context: push (routing, session)", "ctx", "push"),
    ("before-request hooks", "app", "preprocess_request"),
    ("view", "view", ""),
    ("after-request hooks, session save", "app", "process_response"),
    ("answer to WSGI (headers)", "response", "__call__"),
    ("context: pop (teardown)", "ctx", "pop"),
)

Requests = Callable[[int], list[dict[str, Any]]]


def timed(spent: Counter[str], label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, adding its wall time in nanoseconds to ``spent[label]``."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter_ns()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter_ns() - started

    return wrapper


@contextmanager
def stages_timed(app: Flask, endpoint: str, spent: Counter[str]) -> Iterator[None]:
    """Time the stages of ``app``'s requests to ``endpoint`` into ``spent`` while open;
    ``unittest.mock``'s patchers put every method back (or take the app's off again) after."""
    owners: dict[str, Any] = {"app": app, "ctx": RequestContext, "response": Response}
    with ExitStack() as patches:
        for label, owner_name, name in STAGES:
            if owner_name == "view":
                view = timed(spent, label, app.view_functions[endpoint])
                patches.enter_context(patch.dict(app.view_functions, {endpoint: view}))
            else:
                owner = owners[owner_name]
                wrapped = timed(spent, label, getattr(owner, name))
                patches.enter_context(patch.object(owner, name, wrapped))
        yield


def run(app: Flask, endpoint: str, requests: Requests, n: int, status: str) -> dict[str, float]:
    """Microseconds per request of every stage and of the whole, for ``n`` requests."""
    spent: Counter[str] = Counter()
    environs = requests(n)
    statuses: list[str] = []
    with stages_timed(app, endpoint, spent):
        started = time.perf_counter_ns()
        serve(app, environs, statuses)
        total = time.perf_counter_ns() - started
    wrong = [answer for answer in statuses if not answer.startswith(status)]
    if wrong or len(statuses) != n:
        raise SystemExit(f"expected {n} x {status}, got {wrong[:3] or len(statuses)}")
    result = {label: spent[label] / n / 1e3 for label, _, _ in STAGES}
    result["rest"] = (total - sum(spent.values())) / n / 1e3
    result["total"] = total / n / 1e3
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=4000, help="requests per run (4000)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per app; medians (3)")
    args = parser.parse_args()
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        redis_url = stack.enter_context(benchlib.redis_server(workdir))
        pps, login_tokens = build_pps(workdir, redis_url)
        sample = jwt.decode(login_tokens(1)[0], options={"verify_signature": False})
        svc = pps.extensions["pps"]
        client = svc.repository.get_client(sample["client"])
        naive = naive_app(redis_url, {client.identifier: client.api_key})
        # build_pps's one draft is the one its login tokens open in the editor.
        draft_hash = urlsplit(sample["redirect"]).path.split("/")[2]
        draft = svc.repository.get_draft(client.identifier, draft_hash)
        key = draft_file_key(
            client.identifier,
            draft_hash,
            draft.version,
            "print",
            variant=draft.variant_identifier,
        )
        svc.storage.put(key, benchlib.PRINT_PDF)
        file_path = f"/api-ext/files/draft/{draft_hash}/print"
        serial = itertools.count()

        def logins(count: int) -> list[dict[str, Any]]:
            return [environ("/auth", f"jwt={token}") for token in login_tokens(count)]

        def file_links(count: int) -> list[dict[str, Any]]:
            return [
                environ(
                    file_path,
                    "jwt="
                    + benchlib.file_token(
                        client.api_key, client.identifier, file_path, jti=f"stage-{next(serial)}"
                    ),
                )
                for _ in range(count)
            ]

        columns: list[tuple[str, Flask, str, Requests]] = [
            ("pps /auth", pps, "web.login", logins),
            ("naive /auth", naive, "auth", logins),
            ("pps file-once", pps, "files_api.draft_file", file_links),
        ]
        for _, app, _, requests in columns:  # warm-up: connections, caches, scripts
            serve(app, requests(300), [])
        results: dict[str, list[dict[str, float]]] = {name: [] for name, *_ in columns}
        for _ in range(args.rounds):
            for name, app, endpoint, requests in columns:
                results[name].append(run(app, endpoint, requests, args.n, "302"))
    print(
        f"wall microseconds per request, in-process, one thread, {args.n} requests per run, "
        f"median of {args.rounds} runs\n"
    )
    names = [name for name, *_ in columns]
    print(f"{'stage':36s}" + "".join(f"{name:>15s}" for name in names))
    for label in [label for label, _, _ in STAGES] + ["rest", "total"]:
        cells = [statistics.median(run[label] for run in results[name]) for name in names]
        print(f"{label:36s}" + "".join(f"{cell:15.1f}" for cell in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
