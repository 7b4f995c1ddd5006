"""The benchmark commands under ``bench/`` start: each prints its help and exits 0.

The benchmarks themselves are run by hand (``make bench``), never by the test suite; this
only keeps their command lines from breaking unnoticed (argparse formats help texts with
``%``, so one stray percent sign turns ``--help`` into a traceback).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
COMMANDS = sorted(
    path.name for path in BENCH.glob("*.py") if 'if __name__ == "__main__":' in path.read_text()
)


def test_every_benchmark_command_is_found() -> None:
    assert {"load.py", "app_cpu.py", "profile_auth.py", "ablate_auth.py", "render.py"} <= set(
        COMMANDS
    )


@pytest.mark.parametrize("script", COMMANDS)
def test_benchmark_command_prints_its_help(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--help"],
        cwd=BENCH.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ")
