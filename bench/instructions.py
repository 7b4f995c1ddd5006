"""Instructions per ``GET /auth`` of pps and of the naive ``/auth``, counted by valgrind.

    .venv/bin/python bench/instructions.py [--short 100] [--long 400]

Timings on a shared 2-core VM move by 10 % between runs; instruction counts do not. Each app
is called as a WSGI callable (as bench/wsgi_auth.py does) in a child process run under
``valgrind --tool=cachegrind`` (counting only, no cache model), once with ``--short`` and once
with ``--long`` requests; everything else in the two runs is the same (the app built, the
tokens signed, a warm-up), so the difference of their totals divided by the difference of
the request counts is what one request costs. The hash seed is fixed, so a run repeats to
within a fraction of a percent. The four children run two at a time.

Prints the instructions per request of each app and the ratio naive/pps (above 1: pps
executes fewer). Read it beside bench/wsgi_auth.py, which measures CPU time: an app can
execute fewer instructions and still take longer, when its instructions wait on caches the
rest of the request keeps evicting (a database library's code path, say) or on the kernel.
Needs valgrind (Debian: ``apt-get install -y valgrind``); counts only this process, not
redis-server.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import benchlib

APPS = ("pps", "naive")
_TOTAL = re.compile(r"I\s+refs:\s+([\d,]+)")


def serve(app_name: str, requests: int, tokens_made: int) -> None:
    """The child: build both apps, sign ``tokens_made`` tokens, warm up, serve ``requests``."""
    import gc

    import jwt
    from naive import naive_app
    from profile_auth import build_pps
    from wsgi_auth import measure

    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        redis_url = stack.enter_context(benchlib.redis_server(workdir))
        pps, tokens = build_pps(workdir, redis_url)
        client = jwt.decode(tokens(1)[0], options={"verify_signature": False})["client"]
        api_key = pps.extensions["pps"].repository.get_client(client).api_key
        app = pps if app_name == "pps" else naive_app(redis_url, {client: api_key})
        gc.freeze()  # as deploy/gunicorn.conf.py does in every worker
        measure(app, [("/auth", f"jwt={token}") for token in tokens(50)], "302")
        signed = [("/auth", f"jwt={token}") for token in tokens(tokens_made)]
        measure(app, signed[:requests], "302")


def count(valgrind: str, app_name: str, requests: int, tokens_made: int) -> int:
    """Instructions executed by one child serving ``requests`` logins."""
    done = subprocess.run(
        [
            valgrind,
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--serve",
            app_name,
            str(requests),
            str(tokens_made),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        check=False,
    )
    found = _TOTAL.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{app_name} under valgrind failed:\n{done.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", type=int, default=100, help="requests of the short run")
    parser.add_argument("--long", type=int, default=400, help="requests of the long run")
    parser.add_argument("--serve", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        name, requests, tokens_made = args.serve
        serve(name, int(requests), int(tokens_made))
        return
    if not 0 < args.short < args.long:
        parser.error("--short must be positive and below --long")
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("valgrind is not installed. On Debian/Ubuntu: apt-get install -y valgrind")
    runs = [(name, n) for name in APPS for n in (args.short, args.long)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        totals = dict(
            zip(runs, pool.map(lambda run: count(valgrind, *run, args.long), runs), strict=True)
        )
    per_request = {
        name: (totals[name, args.long] - totals[name, args.short]) / (args.long - args.short)
        for name in APPS
    }
    for name in APPS:
        print(f"{name:6} {per_request[name]:12,.0f} instructions per /auth")
    print(f"naive/pps {per_request['naive'] / per_request['pps']:.2f}")


if __name__ == "__main__":
    main()
