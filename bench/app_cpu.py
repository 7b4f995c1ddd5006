"""CPU of the app alone under load: pps's ``/auth`` against hello-world's ``/``.

    .venv/bin/python bench/app_cpu.py [--rounds 3] [-d 5]

bench/load.py compares whole servers; this measures only the time each worker thread spends
inside the WSGI app (``time.thread_time``, its system calls included), under the same load,
through bench/cpu_wrap.py. Both apps run under ``deploy/gunicorn.conf.py`` and get the same
requests from the same wrk script as in bench/load.py. What is left of the gap in
bench/load.py after this one is outside the app: gunicorn, redis-server, wrk and the kernel.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import benchlib
import load
from benchlib import BENCH, BIN, GUNICORN_CONF


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="hello-world + /auth runs (3)")
    parser.add_argument("-d", "--duration", type=int, default=5, help="seconds per run (5)")
    args = parser.parse_args()
    opts = load.parse_args(["-d", str(args.duration), "--warmup", "0"])
    wrk = load.require_tools(GUNICORN_CONF)
    with ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="pps-app-cpu-"))
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        redis_url = stack.enter_context(benchlib.redis_server(workdir))
        pps = load.Pps(workdir, redis_url)
        pps.prepare_database()
        hello_port = benchlib.free_port()
        hello_url = f"http://127.0.0.1:{hello_port}/"
        gunicorn = [str(BIN / "gunicorn"), "-c", str(GUNICORN_CONF), "--pythonpath", str(BENCH)]
        common = {**pps.env, "PPS_BENCH_CPU_DIR": str(workdir)}
        pps_proc = stack.enter_context(
            benchlib.spawned(
                [*gunicorn, "cpu_wrap:app"],
                log=workdir / "pps.log",
                env={**common, "PPS_BENCH_TARGET": "wsgi:app"},
            )
        )
        hello_proc = stack.enter_context(
            benchlib.spawned(
                [*gunicorn, "cpu_wrap:app"],
                log=workdir / "hello.log",
                env={
                    **common,
                    "PPS_BENCH_TARGET": "hello:app",
                    "PPS_BIND": f"127.0.0.1:{hello_port}",
                },
            )
        )
        load.wait_ready(f"{pps.base_url}/", pps_proc, pps.port, workdir / "pps.log")
        load.wait_ready(hello_url, hello_proc, hello_port, workdir / "hello.log")
        pps.prepare_data()
        pps.smoke_test()
        tokens = 60_000  # more than a run of either can use at a few thousand requests/s
        for number in range(1, args.rounds + 1):
            for name in ("hello", "auth"):
                url, lua_args = load.scenario_args(
                    name, pps, workdir, opts, tokens, f"cpu{number}{name}", hello_url
                )
                raw = load.run_wrk(wrk, opts, url, opts.duration, lua_args)
                load.remove_tokens(workdir / f"tokens-cpu{number}{name}-", opts.threads)
                if raw["unexpected"] or raw["exhausted"]:
                    raise SystemExit(f"{name}: unexpected answers or too few tokens: {raw}")
        samples = {
            name: [
                float(line.split()[1])
                for path in workdir.glob(f"{module}-*.txt")
                for line in path.read_text().splitlines()
            ]
            for name, module in (("hello-world /", "hello"), ("pps /auth", "wsgi"))
        }
    print("thread CPU inside the app per request under load, µs (one sample per 1000 requests)")
    for name, values in samples.items():
        if not values:
            raise SystemExit(f"no samples for {name}: runs too short?")
        print(
            f"  {name:14s} median {statistics.median(values):6.1f}  "
            f"min {min(values):6.1f}  max {max(values):6.1f}  samples {len(values)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
