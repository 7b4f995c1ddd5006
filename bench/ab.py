"""Two revisions of pps against one hello-world, interleaved: did a change make it faster?

    .venv/bin/python bench/ab.py BEFORE [AFTER] [--cycles 6] [-d 5] [--scenario auth ...]

BEFORE and AFTER are git revisions; AFTER defaults to the working tree. On a noisy machine
two separate runs of bench/load.py differ by as much as most single changes gain, so here
both revisions run at the same time (idle until their turn) next to one hello-world, and the
runs are interleaved H A B H B A H ...: each pps run is taken as a ratio of the mean of the
hello-world runs just before and after it, and each A run is paired with the B run of the
same cycle. With several scenarios (``--scenario`` repeated; default auth, file, file-once and
preview) each cycle runs them one after the other (H A B H B A H for each). Prints every
run, and per scenario the median ratio of each revision and the median of B/A over the
pairs (above 1: AFTER is faster).

Both revisions share one migrated SQLite database (migrated by this checkout, so both must
use its schema), one redis-server, the public base URL and this checkout's
``deploy/gunicorn.conf.py``; each is started from a git worktree of its own, removed again
at the end. Traffic stays on 127.0.0.1, bounded by --cycles x the run length.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import benchlib
import load
from benchlib import BENCH, ROOT

#: The pps scenarios of load.py that two revisions can be compared on.
SCENARIOS = ("auth", "file", "file-once", "preview")


def parse_args() -> tuple[argparse.Namespace, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="git revision A")
    parser.add_argument("after", nargs="?", help="git revision B (default: the working tree)")
    parser.add_argument("--cycles", type=int, default=6, help="cycles of A B H B A H (6)")
    parser.add_argument("-d", "--duration", type=int, default=5, help="seconds per run (5)")
    parser.add_argument(
        "--scenario",
        action="append",
        choices=SCENARIOS,
        help="repeatable; default: " + ", ".join(SCENARIOS),
    )
    parser.add_argument(
        "--gunicorn-config",
        help="config both revisions run under (default: this checkout's "
        "deploy/gunicorn.conf.py); for a BEFORE that lacks what this one's hooks import",
    )
    opts = parser.parse_args()
    opts.scenario = list(dict.fromkeys(opts.scenario or SCENARIOS))
    if opts.cycles < 1:
        parser.error("--cycles must be at least 1")
    config = ["--gunicorn-config", opts.gunicorn_config] if opts.gunicorn_config else []
    return opts, load.parse_args(["-d", str(opts.duration), "--warmup", "0", *config])


def worktree(stack: ExitStack, revision: str | None, parent: Path, name: str) -> Path:
    """A checkout of ``revision`` (this one when None), removed when the stack closes."""
    if revision is None:
        return ROOT
    path = parent / name
    subprocess.run(
        ["git", "worktree", "add", "--quiet", "--detach", str(path), revision],
        cwd=ROOT,
        check=True,
    )
    stack.callback(
        subprocess.run,
        ["git", "worktree", "remove", "--force", str(path)],
        cwd=ROOT,
        check=False,
    )
    return path


def main() -> int:
    opts, wrk_opts = parse_args()
    wrk = load.require_tools(wrk_opts.gunicorn_config)
    with ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="pps-ab-"))
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        trees = {
            "A": worktree(stack, opts.before, workdir, "a"),
            "B": worktree(stack, opts.after, workdir, "b"),
        }
        redis_url = stack.enter_context(benchlib.redis_server(workdir))
        pps = load.Pps(workdir, redis_url)
        pps.prepare_database()
        ports = {"A": pps.port, "B": benchlib.free_port(), "H": benchlib.free_port()}
        procs = {
            name: stack.enter_context(
                benchlib.spawned(
                    load.gunicorn_args(wrk_opts, "wsgi:app"),
                    log=workdir / f"gunicorn-{name}.log",
                    env={**pps.env, "PPS_BIND": f"127.0.0.1:{ports[name]}"},
                    cwd=tree,  # gunicorn imports wsgi:app, and so pps, from here
                )
            )
            for name, tree in trees.items()
        }
        procs["H"] = stack.enter_context(
            benchlib.spawned(
                load.gunicorn_args(wrk_opts, "hello:app", "--pythonpath", str(BENCH)),
                log=workdir / "gunicorn-H.log",
                env={**pps.env, "PPS_BIND": f"127.0.0.1:{ports['H']}"},
            )
        )
        for name, port in ports.items():
            url = f"http://127.0.0.1:{port}/"
            load.wait_ready(url, procs[name], port, workdir / f"gunicorn-{name}.log")
        pps.prepare_data()
        pps.smoke_test()
        hello_url = f"http://127.0.0.1:{ports['H']}/"
        scenarios = ", ".join(opts.scenario)
        print(f"A = {opts.before}, B = {opts.after or 'working tree'}; {scenarios}", flush=True)

        def run(name: str, scenario: str, tag: str) -> float:
            scenario = "hello" if name == "H" else scenario
            url, lua_args = load.scenario_args(
                scenario, pps, workdir, wrk_opts, 60_000, tag, hello_url
            )
            if name != "H":
                url = url.replace(f":{pps.port}/", f":{ports[name]}/", 1)
            raw = load.run_wrk(wrk, wrk_opts, url, wrk_opts.duration, lua_args)
            load.remove_tokens(workdir / f"tokens-{tag}-", wrk_opts.threads)
            if raw["unexpected"] or raw["exhausted"] or sum(raw["socket_errors"].values()):
                raise SystemExit(f"{name}: unexpected answers or too few tokens: {raw}")
            rps: float = raw["requests"] / (raw["duration_us"] / 1e6)
            return rps

        for scenario in opts.scenario:  # warm every server up once on each
            for name in "HAB":
                run(name, scenario, f"warm{name}{scenario}")
        measured: list[tuple[str, str, float]] = []
        for index, (name, scenario) in enumerate(sequence(opts.scenario, opts.cycles)):
            rps = run(name, scenario, f"run{index}")
            measured.append((name, scenario, rps))
            shown = "hello" if name == "H" else scenario
            print(f"  {name} {shown:<8} {rps:7.0f} req/s", flush=True)

    for scenario in opts.scenario:
        ratios = ratios_of(measured, scenario)
        for name, values in ratios.items():
            shown = " ".join(f"{value:.2f}" for value in values)
            print(f"{scenario} {name}: median ratio {statistics.median(values):.3f}  ({shown})")
        pairs = [b / a for a, b in zip(ratios["A"], ratios["B"], strict=True)]
        shown = " ".join(f"{pair:.2f}" for pair in pairs)
        print(f"{scenario} B/A per pair: median {statistics.median(pairs):.3f}  ({shown})")
    return 0


def sequence(scenarios: list[str], cycles: int) -> list[tuple[str, str]]:
    """(H, A or B; scenario) in the order they run: ``H`` then ``A B H B A H`` per scenario
    and cycle, so every A and B run sits between two hello-world runs."""
    order = [("H", "hello")]
    for _cycle in range(cycles):
        for scenario in scenarios:
            order += [(name, scenario if name != "H" else "hello") for name in "ABHBAH"]
    return order


def ratios_of(measured: list[tuple[str, str, float]], scenario: str) -> dict[str, list[float]]:
    """Each A and B run of ``scenario`` over the mean of the hello-world runs either side."""
    ratios: dict[str, list[float]] = {"A": [], "B": []}
    for index, (name, which, rps) in enumerate(measured):
        if name == "H" or which != scenario:
            continue
        before = next(r for n, _, r in reversed(measured[:index]) if n == "H")
        after = next(r for n, _, r in measured[index:] if n == "H")
        ratios[name].append(rps / ((before + after) / 2))
    return ratios


if __name__ == "__main__":
    sys.exit(main())
