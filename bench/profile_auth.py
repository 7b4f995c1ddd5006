"""Where does ``GET /auth`` spend its time? cProfile over many fresh login tokens, in-process.

    .venv/bin/python bench/profile_auth.py [-n 3000] [--top 25] [--no-redis]

Builds the app with ``create_app`` on a migrated SQLite database in a temporary directory and
a spawned redis-server (``--no-redis``: the embedded SQLite store), with the production
default for the client cache. Every request uses its own token, exactly as shops send them.

Prints, in this order:
  1. plain timings without the profiler: /auth and a Flask hello-world through the same test
     client, per request and as a ratio;
  2. the share of /auth's time in each step (cumulative time of the function that does it);
  3. own time grouped by package (pps, flask, werkzeug, sqlalchemy, redis, jinja2, ...);
  4. the top functions by own time and by cumulative time.
cProfile inflates call-heavy code (SQLAlchemy, Jinja) more than C-heavy code (hmac, json),
so read the shares as a ranking, and the plain timings as the truth.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import pstats
import shutil
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import benchlib
from flask import Flask

#: (label, path suffix of the file, function name): the steps of one /auth request.
STEPS: list[tuple[str, str, str]] = [
    ("Flask request (Flask.wsgi_app)", "flask/app.py", "wsgi_app"),
    ("  view (pps.auth.web.login)", "pps/auth/web.py", "login"),
    ("  pps.auth.login.log_in", "pps/auth/login.py", "log_in"),
    ("    check_token (verify + client lookup)", "pps/auth/access.py", "check_token"),
    ("      pps.auth.tokens.verify_token", "pps/auth/tokens.py", "verify_token"),
    ("      client lookup (ClientCache.get)", "pps/platform/services.py", "get"),
    (
        "    user lookup (SqlRepository.user_exists)",
        "pps/platform/repository/sql.py",
        "user_exists",
    ),
    ("    redirect check (safe_redirect_target)", "pps/auth/redirects.py", "safe_redirect_target"),
    ("    nonce claim (claim_jti)", "pps/auth/access.py", "claim_jti"),
    (
        "      ephemeral store claim (Redis SET NX GET)",
        "pps/platform/ephemeral/redis_store.py",
        "claim",
    ),
    (
        "      ephemeral store claim (SQLite store)",
        "pps/platform/ephemeral/sqlite_store.py",
        "claim",
    ),
    ("    editor grants (_editor_grants)", "pps/auth/login.py", "_editor_grants"),
    ("  session cookie (save_session)", "flask/sessions.py", "save_session"),
    ("    signing (itsdangerous Serializer.dumps)", "itsdangerous/serializer.py", "dumps"),
    ("    werkzeug dump_cookie", "werkzeug/http.py", "dump_cookie"),
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--requests", type=int, default=3000, help="profiled requests")
    parser.add_argument("--warmup", type=int, default=300, help="unprofiled requests first")
    parser.add_argument("--top", type=int, default=25, help="functions listed per ranking")
    parser.add_argument("--no-redis", action="store_true", help="use the embedded store")
    parser.add_argument("--dump", type=Path, help="also write the raw pstats file here")
    return parser.parse_args()


def hello_app() -> Flask:
    sys.path.insert(0, str(benchlib.BENCH))
    from hello import app

    return app


def build_pps(workdir: Path, redis_url: str) -> tuple[Flask, Callable[[int], list[str]]]:
    from app import create_app
    from pps.platform.repository.sql import upgrade_database

    database_url = f"sqlite:///{workdir / 'pps.sqlite3'}"
    upgrade_database(database_url)
    app = create_app(
        {
            "instance_path": workdir / "instance",
            "database_url": database_url,
            "redis_url": redis_url,
            "secret_key": benchlib.SECRET_KEY,
            "base_url": "http://127.0.0.1:8000",
        }
    )
    repo = app.extensions["pps"].repository
    client = repo.create_client("Bench shop")
    user = repo.create_user(client.identifier, {})
    template = repo.create_template(
        client.identifier,
        name="Card",
        data_keys=benchlib.DATA_KEYS,
        custom_attributes={},
        page_count=1,
        spec={"name": "Card", "dataKeys": benchlib.DATA_KEYS},
    )
    draft = repo.create_draft(
        client.identifier,
        user_identifier=user.identifier,
        template_identifier=template.identifier,
        intent="customize",
        api_default_values={},
        custom_attributes={},
    )
    redirect = benchlib.editor_url("http://127.0.0.1:8000", draft.draft_hash)
    tag = uuid.uuid4().hex[:8]
    serial = itertools.count()

    def tokens(count: int) -> list[str]:
        """``count`` fresh login tokens; no jti is ever dealt twice."""
        return [
            benchlib.login_token(
                client.api_key, client.identifier, user.identifier, redirect, f"{tag}-{n}"
            )
            for n in itertools.islice(serial, count)
        ]

    return app, tokens


def drive(app: Flask, paths: list[str], expected: int) -> float:
    """Seconds for all ``paths`` through the test client; every answer must be ``expected``."""
    # No cookie jar: a shop's visitor arrives without the previous one's cookie.
    client = app.test_client(use_cookies=False)
    started = time.perf_counter()
    for path in paths:
        response = client.get(path)
        if response.status_code != expected:
            raise SystemExit(
                f"GET {path[:60]}... answered {response.status_code}, not {expected}: "
                f"{response.get_data(as_text=True)[:300]}"
            )
    return time.perf_counter() - started


def cumulative(stats: pstats.Stats, suffix: str, name: str) -> float:
    """Cumulative seconds of every function ``name`` in a file ending with ``suffix``."""
    total = 0.0
    for (filename, _line, function), row in stats.stats.items():  # type: ignore[attr-defined]
        if function == name and filename.replace("\\", "/").endswith(suffix):
            total += row[3]
    return total


def package_of(filename: str) -> str:
    path = filename.replace("\\", "/")
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if "/pps/" in path:
        rest = path.split("/pps/", 1)[1]
        return "pps." + rest.split("/", 1)[0].removesuffix(".py")
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins (C)"
    return "stdlib"


def report(stats: pstats.Stats, requests: int, top: int) -> None:
    total = stats.total_tt  # type: ignore[attr-defined]
    per_request_us = total / requests * 1e6
    print(f"\nprofiled: {requests} requests, {per_request_us:.0f} us each under cProfile\n")
    print("2. share of /auth time per step (cumulative; nested steps are part of their parent)")
    for label, suffix, name in STEPS:
        seconds = cumulative(stats, suffix, name)
        if seconds == 0.0:
            continue
        share = seconds / total * 100
        print(f"  {label:<66} {share:5.1f}%  {seconds / requests * 1e6:7.0f} us")
    print(f"  {'(the rest: test client, WSGI environ, response iteration)':<66}")

    print("\n3. own time by package")
    own: dict[str, float] = defaultdict(float)
    for (filename, _line, _function), row in stats.stats.items():  # type: ignore[attr-defined]
        own[package_of(filename)] += row[2]
    for package, seconds in sorted(own.items(), key=lambda item: -item[1])[:15]:
        print(f"  {package:<40} {seconds / total * 100:5.1f}%  {seconds / requests * 1e6:7.0f} us")

    for title, key in (
        ("4a. top functions by own time", "tottime"),
        ("4b. by cumulative", "cumulative"),
    ):
        buffer = io.StringIO()
        stats.stream = buffer  # type: ignore[attr-defined]
        stats.sort_stats(key).print_stats(top)
        lines = buffer.getvalue().splitlines()
        start = next(i for i, line in enumerate(lines) if "ncalls" in line)
        print(f"\n{title}")
        print("\n".join(lines[start:]))


def main() -> int:
    opts = parse_args()
    with ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="pps-profile-"))
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        redis_url = "" if opts.no_redis else stack.enter_context(benchlib.redis_server(workdir))
        app, tokens = build_pps(workdir, redis_url)
        stack.callback(app.extensions["pps"].close)
        hello = hello_app()
        store = "embedded SQLite store" if opts.no_redis else "Redis"
        print(f"pps /auth in-process (Flask test client), SQLite database, {store}")

        # 1. plain timings, no profiler
        drive(app, [f"/auth?jwt={t}" for t in tokens(opts.warmup)], 302)
        drive(hello, ["/"] * opts.warmup, 200)
        plain = min(
            drive(app, [f"/auth?jwt={t}" for t in tokens(opts.requests)], 302) for _ in range(2)
        )
        baseline = min(drive(hello, ["/"] * opts.requests, 200) for _ in range(2))
        auth_us = plain / opts.requests * 1e6
        hello_us = baseline / opts.requests * 1e6
        print("\n1. plain timings (best of 2)")
        print(f"  /auth        {auth_us:7.0f} us/request  {1e6 / auth_us:8.0f} req/s per core")
        print(f"  hello-world  {hello_us:7.0f} us/request  {1e6 / hello_us:8.0f} req/s per core")
        print(f"  /auth costs {auth_us / hello_us:.1f}x hello-world in-process")

        # 2.-4. the profile
        paths = [f"/auth?jwt={t}" for t in tokens(opts.requests)]
        profiler = cProfile.Profile()
        profiler.enable()
        drive(app, paths, 302)
        profiler.disable()
        stats = pstats.Stats(profiler)
        if opts.dump:
            stats.dump_stats(opts.dump)
        report(stats, opts.requests, opts.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
