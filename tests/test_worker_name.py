"""``pps worker --name NAME`` (as deploy/pps-worker.service starts it) after its
predecessor was killed: it takes the name over instead of failing until the stale
registration expires; a name a live worker holds is refused in one line."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis
from conftest import TEST_SECRET_KEY
from server_support import pps_script

from pps.platform.repository.sql import upgrade_database


@pytest.fixture
def worker_env(tmp_path: Path, redis_url: str) -> dict[str, str]:
    database = f"sqlite:///{tmp_path / 'pps.sqlite3'}"
    upgrade_database(database)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PPS_")}
    env.update(
        PPS_SECRET_KEY=TEST_SECRET_KEY,
        PPS_INSTANCE_PATH=str(tmp_path / "instance"),
        PPS_DATABASE_URL=database,
        PPS_REDIS_URL=redis_url,
    )
    return env


def _start(env: dict[str, str], name: str, redis_url: str) -> subprocess.Popen[bytes]:
    """A long-running worker, returned once it has registered its name."""
    proc = subprocess.Popen(
        [pps_script(), "worker", "--name", name],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    connection = redis.Redis.from_url(redis_url)
    deadline = time.monotonic() + 60
    while not connection.exists(f"rq:worker:{name}"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the worker did not register")
        time.sleep(0.05)
    connection.close()
    return proc


def _burst(env: dict[str, str], name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [pps_script(), "worker", "--name", name, "--burst"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_killed_workers_name_is_taken_over(worker_env: dict[str, str], redis_url: str) -> None:
    name = f"w-{secrets.token_hex(4)}"
    killed = _start(worker_env, name, redis_url)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    done = _burst(worker_env, name)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_a_live_workers_name_is_refused_in_one_line(
    worker_env: dict[str, str], redis_url: str
) -> None:
    name = f"w-{secrets.token_hex(4)}"
    live = _start(worker_env, name, redis_url)
    try:
        done = _burst(worker_env, name)
    finally:
        live.terminate()
        live.wait(timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"Error: a worker named '{name}' is registered already")
    assert "Traceback" not in done.stderr
