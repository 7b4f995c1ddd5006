"""``pps db upgrade`` started while another one runs (two units, two deploy jobs) waits for
it and finds the database migrated, instead of failing on tables the other one made."""

from __future__ import annotations

import fcntl
import os
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import TEST_SECRET_KEY
from server_support import pps_script

from pps.platform.repository.sql import MIGRATION_LOCK_KEY, migration_lock_file


def _upgrade(tmp_path: Path, database_url: str) -> subprocess.Popen[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PPS_")}
    env.update(
        PPS_SECRET_KEY=TEST_SECRET_KEY,
        PPS_INSTANCE_PATH=str(tmp_path / "instance"),
        PPS_DATABASE_URL=database_url,
    )
    return subprocess.Popen(
        [pps_script(), "db", "upgrade"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _until(condition: Callable[[], bool], proc: subprocess.Popen[str], what: str) -> None:
    """Poll ``condition`` until true; fail when ``proc`` ends first (it did not wait)."""
    deadline = time.monotonic() + 60
    while not condition():
        if proc.poll() is not None:
            out, _ = proc.communicate()
            pytest.fail(f"pps db upgrade ended without waiting for {what}:\n{out}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"pps db upgrade never waited for {what}")
        time.sleep(0.05)


def _finished(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "(head)." in out
    return out


@pytest.fixture
def fresh_schema(postgres_url: str) -> Iterator[tuple[sa.Engine, str]]:
    """An empty schema of this test's own in the run's database, and a URL using it."""
    schema = f"fresh_{secrets.token_hex(4)}"
    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    url = sa.engine.make_url(postgres_url).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield engine, url.render_as_string(hide_password=False)
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


def test_postgresql_upgrade_waits_for_one_in_progress(
    tmp_path: Path, fresh_schema: tuple[sa.Engine, str]
) -> None:
    engine, url = fresh_schema
    with engine.connect() as other:
        # Another upgrade, half way: it holds the lock and has made alembic_version.
        other.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
        schema = url.rsplit("search_path%3D", 1)[-1]
        other.execute(
            sa.text(
                f'CREATE TABLE "{schema}".alembic_version '
                "(version_num VARCHAR(32) NOT NULL PRIMARY KEY)"
            )
        )
        me = other.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
        proc = _upgrade(tmp_path, url)

        def blocked() -> bool:
            with engine.connect() as probe:
                count = probe.execute(
                    sa.text(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE :me = ANY(pg_blocking_pids(pid))"
                    ),
                    {"me": me},
                ).scalar_one()
            return bool(count)

        _until(blocked, proc, "the other upgrade")
        other.commit()
    _finished(proc)


def test_sqlite_upgrade_waits_for_one_in_progress(tmp_path: Path) -> None:
    database = tmp_path / "pps.sqlite3"
    with open(migration_lock_file(str(database)), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another upgrade, running
        inode = os.fstat(lock.fileno()).st_ino
        proc = _upgrade(tmp_path, f"sqlite:///{database}")

        def blocked() -> bool:
            locks = Path("/proc/locks").read_text().splitlines()
            return any("->" in line and f":{inode} " in line for line in locks)

        _until(blocked, proc, "the lock of the other upgrade")
    _finished(proc)
