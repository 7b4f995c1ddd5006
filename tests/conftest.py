"""Shared fixtures: real Redis, real SQLite and (when configured) real PostgreSQL.

Redis: ``PPS_TEST_REDIS_URL`` when set, otherwise a ``redis-server`` spawned on a free port
for this run. PostgreSQL: ``PPS_TEST_DATABASE_URL`` names a server; each run creates its own
database there and drops it at the end. A missing service skips its tests locally and fails
them when ``CI`` is set.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

import pytest
import redis
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from pps.editor.embed import cookie_policy
from pps.platform.models import Client, User
from pps.platform.repository.sql import SqlRepository, upgrade_database
from pps.platform.repository.tables import webhook_deliveries

if TYPE_CHECKING:
    from fault_support import RedisProcess

TEST_SECRET_KEY = "test-secret-key-0123456789abcdef"
#: The ``app`` fixture's PPS_BASE_URL (a loopback host: a secure context for browsers).
TEST_BASE_URL = "http://localhost"


def session_cookie_name(base_url: str = TEST_BASE_URL) -> str:
    """The session cookie's name for an app at ``base_url``, as pps decides it
    (``__Host-pps_session`` wherever the cookie is Secure): tests never spell it."""
    return cookie_policy(base_url).name


def missing_service(reason: str) -> NoReturn:
    """Skip locally, fail in CI: a green CI must mean the service was really there."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (required because CI is set)")
    pytest.skip(reason)


def complete_login(client: FlaskClient, response: Any) -> Any:
    """What a browser does after ``/auth``: an editor ``Location`` carries a handoff code
    (``pps.auth.handoff``), so follow it once to get the session; returns the last answer."""
    location = response.headers.get("Location", "")
    if response.status_code != 302 or "handoff=" not in location:
        return response
    parts = urlsplit(location)
    exchanged = client.get(parts.path, query_string=parts.query)
    assert exchanged.status_code == 303, exchanged.get_data(as_text=True)
    return exchanged


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


# -- Redis -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, bool]]:
    """(url, owned): owned servers were spawned by this run and may be flushed freely."""
    url = os.environ.get("PPS_TEST_REDIS_URL")
    if url:
        yield url, False
        return
    binary = shutil.which("redis-server")
    if binary is None:
        missing_service("redis-server is not installed and PPS_TEST_REDIS_URL is not set")
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        yield f"redis://127.0.0.1:{port}/0", True
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def redis_url(redis_server: tuple[str, bool]) -> str:
    url, owned = redis_server
    if owned:
        redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture
def redis_process(tmp_path: Path) -> Iterator[RedisProcess]:
    """A redis-server of the test's own, which it may kill, freeze and start again (the
    run's shared one is not to be)."""
    from fault_support import RedisProcess  # not at the top: fault_support imports conftest

    server = RedisProcess(tmp_path)
    try:
        yield server
    finally:
        server.close()


# -- databases ---------------------------------------------------------------------------

BACKENDS = ["sqlite", "postgresql"]


@contextlib.contextmanager
def own_postgres_database() -> Iterator[str]:
    """A migrated database of its own on the server named by PPS_TEST_DATABASE_URL, dropped
    afterwards."""
    server_url = os.environ.get("PPS_TEST_DATABASE_URL")
    if not server_url:
        missing_service("PPS_TEST_DATABASE_URL is not set")
    name = f"pps_test_{secrets.token_hex(6)}"
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as exc:
        admin.dispose()
        missing_service(f"PostgreSQL at PPS_TEST_DATABASE_URL is unreachable: {exc}")
    url = sa.engine.make_url(server_url).set(database=name).render_as_string(hide_password=False)
    upgrade_database(url)
    try:
        yield url
    finally:
        sa.create_engine(url).dispose()
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """This run's database, shared by its PostgreSQL tests."""
    with own_postgres_database() as url:
        yield url


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated SQLite file per run, copied for every test (migrating is the slow part)."""
    path = tmp_path_factory.mktemp("sqlite-template") / "pps.sqlite3"
    upgrade_database(f"sqlite:///{path}")
    return path


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    """A migrated SQLite database of this test's own."""
    path = tmp_path / "pps.sqlite3"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite:///{path}"


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest) -> str:
    if request.param == "postgresql":  # skipped, or failed in CI, without a server
        return str(request.getfixturevalue("postgres_url"))
    return str(request.getfixturevalue("sqlite_url"))


@pytest.fixture
def repository(database_url: str) -> Iterator[SqlRepository]:
    repo = SqlRepository(database_url)
    yield repo
    repo.close()


@pytest.fixture
def forget_deliveries(database_url: str) -> Iterator[Callable[[str], None]]:
    """Collects clients whose deliveries a test leaves in the outbox (retries to a receiver
    it closed) and deletes those rows afterwards: on PostgreSQL the database is the run's,
    and the dispatchers of later tests would try them again. Request it before the test's
    app, so that it runs once that app and its dispatcher are closed."""
    clients: list[str] = []
    yield clients.append
    engine = sa.create_engine(database_url)
    try:
        delete_deliveries(engine, *clients)
    finally:
        engine.dispose()


def delete_deliveries(engine: sa.Engine, *clients: str) -> None:
    """Delete the outbox rows of ``clients``."""
    with engine.begin() as conn:
        mine = webhook_deliveries.c.client_identifier.in_(clients)
        conn.execute(webhook_deliveries.delete().where(mine))


# -- the app -----------------------------------------------------------------------------


@pytest.fixture
def app_config(tmp_path: Path, database_url: str, redis_url: str) -> dict[str, Any]:
    return {
        "instance_path": tmp_path / "instance",
        "database_url": database_url,
        "redis_url": redis_url,
        "secret_key": TEST_SECRET_KEY,
        "base_url": TEST_BASE_URL,
        "client_cache_ttl": 0.0,
        # Test receivers of state-change notifications listen on 127.0.0.1.
        "notify_allow_private": True,
    }


@pytest.fixture
def app(app_config: dict[str, Any]) -> Iterator[Flask]:
    application = create_app(app_config)
    yield application
    application.extensions["pps"].close()


@pytest.fixture
def app_without_redis(app: Flask, app_config: dict[str, Any]) -> Iterator[Flask]:
    """A second app on the same database whose Redis does not answer."""
    broken = create_app({**app_config, "redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    yield broken
    broken.extensions["pps"].close()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def repo(app: Flask) -> SqlRepository:
    """The repository of the running app, for arranging data and checking what was written."""
    return app.extensions["pps"].repository  # type: ignore[no-any-return]


@pytest.fixture
def tenant(repo: SqlRepository) -> Client:
    return repo.create_client("Shop A", allowed_origins=["https://shop-a.example"])


@pytest.fixture
def user(repo: SqlRepository, tenant: Client) -> User:
    """A user of ``tenant`` with no attributes."""
    return repo.create_user(tenant.identifier, {})


@pytest.fixture
def other_tenant(repo: SqlRepository) -> Client:
    return repo.create_client("Shop B")


class ApiClient:
    """A test client that sends what a shop backend sends: bearer key and Accept JSON."""

    def __init__(self, client: FlaskClient, api_key: str) -> None:
        self.client = client
        self.api_key = api_key

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json"}
        headers.update(extra or {})
        return headers

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        headers = self.headers(kwargs.pop("headers", None))
        return self.client.open(path, method=method, headers=headers, **kwargs)

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.request("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> Any:
        return self.request("PUT", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.request("DELETE", path, **kwargs)


@pytest.fixture
def api(client: FlaskClient, tenant: Client) -> ApiClient:
    return ApiClient(client, tenant.api_key)


@pytest.fixture
def other_api(client: FlaskClient, other_tenant: Client) -> ApiClient:
    return ApiClient(client, other_tenant.api_key)
