"""Where state-change notifications may go, how they are delivered, the processing store's
schema, and the ``pps worker`` command.

Addresses other than 127.0.0.1 appear only in checks that refuse them before any
connection is made; every receiver is a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import subprocess
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from api_support import assert_error
from conftest import TEST_SECRET_KEY, ApiClient
from flask import Flask
from processing_support import (
    burst_worker,
    card_draft,
    card_template,
    receiver,
    run_jobs,
    snapshot_states,
    worker_env,
)
from server_support import pps_script

from pps.platform.models import Client
from pps.platform.repository.processing import SqlProcessingStore
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import metadata, processings
from pps.platform.settings import SettingsError, load_settings
from pps.processing.notify import (
    ForbiddenTarget,
    address_problem,
    check_notify_url,
)

URL = "/api-ext/pdf-processing"


# -- which addresses are allowed ---------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "strict", "relaxed"),
    [
        ("93.184.216.34", None, None),
        ("2606:2800:220:1:248:1893:25c8:1946", None, None),
        ("127.0.0.1", "loopback", None),
        ("::1", "loopback", None),
        ("10.0.0.1", "private", None),
        ("172.16.5.4", "private", None),
        ("192.168.1.1", "private", None),
        ("100.64.0.1", "private", None),  # carrier-grade NAT
        ("fd00::1", "private", None),
        ("::ffff:127.0.0.1", "loopback", None),
        ("::ffff:10.0.0.1", "private", None),
        ("2002:7f00:1::", "loopback", None),  # 6to4 around 127.0.0.1
        ("169.254.169.254", "link-local", "link-local"),
        ("fe80::1", "link-local", "link-local"),
        ("0.0.0.0", "unspecified", "unspecified"),  # noqa: S104
        ("::", "unspecified", "unspecified"),
        ("224.0.0.1", "multicast", "multicast"),
        ("ff02::1", "multicast", "multicast"),
        ("240.0.0.1", "reserved", "reserved"),
        ("255.255.255.255", "reserved", "reserved"),
    ],
)
def test_address_rules(address: str, strict: str | None, relaxed: str | None) -> None:
    ip = ipaddress.ip_address(address)
    for allow_private, expected in ((False, strict), (True, relaxed)):
        problem = address_problem(ip, allow_private)
        if expected is None:
            assert problem is None, (address, allow_private, problem)
        else:
            assert problem is not None and expected in problem, (address, allow_private, problem)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",  # resolves to loopback (from /etc/hosts, no DNS traffic)
        "http://10.0.0.1/hook",
        "http://[::1]/hook",
        "https://192.168.0.10/",
    ],
)
def test_private_targets_refused_without_the_setting(url: str) -> None:
    with pytest.raises(ForbiddenTarget):
        check_notify_url(url, allow_private=False, timeout=5)


def test_loopback_allowed_with_the_setting() -> None:
    target = check_notify_url("http://127.0.0.1:8080/a?b=c", allow_private=True, timeout=5)
    assert (target.scheme, target.host, target.port, target.path) == (
        "http",
        "127.0.0.1",
        8080,
        "/a?b=c",
    )


# -- submission with the setting off (production's default) -------------------------------


@pytest.fixture
def strict_app(app_config: dict[str, Any]) -> Any:
    from app import create_app

    application = create_app({**app_config, "notify_allow_private": False, "worker_mode": "rq"})
    yield application
    application.extensions["pps"].close()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/hook",
        "http://localhost:{port}/hook",
        "http://10.0.0.1/hook",
        "http://[::1]:{port}/hook",
        "http://user@example.com/hook",
        "https://user:pw@127.0.0.1:{port}/",
    ],
)
def test_forbidden_receivers_are_refused_at_submission_with_422(
    strict_app: Flask, url: str
) -> None:
    services = strict_app.extensions["pps"]
    shop = services.repository.create_client("Shop")
    draft = card_draft(services.repository, shop, card_template(services.repository, shop), "A")
    api = ApiClient(strict_app.test_client(), shop.api_key)
    with receiver() as hook:
        port = hook.server.server_address[1]
        response = api.post(
            URL,
            json={"draftIds": [draft.draft_hash], "stateChangedNotifyUrl": url.format(port=port)},
        )
        body = assert_error(response, 422, "stateChangedNotifyUrl")
        assert "draftIds" not in body["errors"]
        # Nothing was queued, so nothing is sent anywhere.
        run_jobs(strict_app, "rq", shop.identifier)
        assert hook.requests == []
    with services.repository.engine.connect() as conn:
        owned = processings.select().where(processings.c.client_identifier == shop.identifier)
        assert conn.execute(owned).first() is None


def test_address_is_checked_again_at_send_time(strict_app: Flask) -> None:
    """An address allowed at submission but not when sending (as after DNS rebinding) gets
    nothing; the job still ends processed."""
    services = strict_app.extensions["pps"]
    shop = services.repository.create_client("Shop")
    draft = card_draft(services.repository, shop, card_template(services.repository, shop), "A")
    with receiver() as hook:
        # Stored directly: the API would have refused this URL under these settings.
        processing = services.processings.create(shop.identifier, [draft.draft_hash], hook.url)
        services.jobs.enqueue(shop.identifier, processing.processing_id, 1)
        run_jobs(strict_app, "rq", shop.identifier)
        assert hook.requests == []
    stored = services.processings.get(shop.identifier, processing.processing_id)
    assert [item.state for item in stored.drafts] == ["processed"]


# -- settings ----------------------------------------------------------------------------


def test_notify_and_worker_settings_from_the_environment() -> None:
    base = {"PPS_SECRET_KEY": TEST_SECRET_KEY}
    settings = load_settings(base)
    assert (settings.notify_allow_private, settings.notify_timeout, settings.notify_attempts) == (
        False,
        5.0,
        5,
    )
    assert settings.worker_mode == "auto"
    settings = load_settings(
        {
            **base,
            "PPS_NOTIFY_ALLOW_PRIVATE": "1",
            "PPS_NOTIFY_TIMEOUT": "2.5",
            "PPS_NOTIFY_ATTEMPTS": "3",
            "PPS_NOTIFY_BACKOFF": "0.1",
            "PPS_WORKER_MODE": "thread",
        }
    )
    assert settings.notify_allow_private and settings.notify_timeout == 2.5
    assert (settings.notify_attempts, settings.notify_backoff, settings.worker_mode) == (
        3,
        0.1,
        "thread",
    )
    for bad in (
        {"PPS_WORKER_MODE": "celery"},
        {"PPS_WORKER_MODE": "rq"},  # without Redis
        {"PPS_NOTIFY_TIMEOUT": "0"},
        {"PPS_NOTIFY_TIMEOUT": "soon"},
        {"PPS_NOTIFY_ATTEMPTS": "0"},
        {"PPS_NOTIFY_BACKOFF": "nan"},
    ):
        with pytest.raises(SettingsError):
            load_settings({**base, **bad})


# -- storage -----------------------------------------------------------------------------


def test_migration_creates_the_tables_as_declared(repository: SqlRepository) -> None:
    with repository.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    # Only this feature's tables are checked; an entry names its table in its repr.
    assert [entry for entry in diff if "processing" in repr(entry)] == []


def test_store_is_scoped_by_client(
    repo: SqlRepository, tenant: Client, other_tenant: Client
) -> None:
    store = SqlProcessingStore(repo.engine)
    draft = card_draft(repo, tenant, card_template(repo, tenant), "A")
    assert store.known_drafts(other_tenant.identifier, [draft.draft_hash]) == set()
    assert store.known_drafts(tenant.identifier, [draft.draft_hash, "x\x00"]) == {draft.draft_hash}
    created = store.create(tenant.identifier, [draft.draft_hash], None)
    pid = created.processing_id
    assert store.get(other_tenant.identifier, pid) is None
    assert not store.set_state(
        other_tenant.identifier, pid, 0, "processed", allowed_from=("pending",)
    )
    assert store.fail_unfinished(other_tenant.identifier, pid, "x") == 0
    assert not store.delete(other_tenant.identifier, pid)
    # Guarded transitions: a final draft does not move back.
    assert store.set_state(tenant.identifier, pid, 0, "processed", allowed_from=("pending",))
    assert not store.set_state(tenant.identifier, pid, 0, "in-process", allowed_from=("pending",))
    with pytest.raises(ValueError):
        store.set_state(tenant.identifier, pid, 0, "done", allowed_from=("pending",))
    assert store.delete(tenant.identifier, pid)
    assert store.get(tenant.identifier, pid) is None


# -- the worker command ------------------------------------------------------------------


@pytest.mark.slow
def test_pps_worker_burst_renders_queued_jobs(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client
) -> None:
    assert app.extensions["pps"].jobs.kind == "rq"
    template = card_template(repo, tenant)
    drafts = [card_draft(repo, tenant, template, name) for name in ("Ada", "Grace")]
    with receiver() as hook:
        response = api.post(
            URL,
            json={"draftIds": [d.draft_hash for d in drafts], "stateChangedNotifyUrl": hook.url},
        )
        assert response.status_code == 201
        processing_id = response.get_json()["processingId"]
        # The forking worker, as `make run` starts it: each job runs in a child process.
        burst_worker(app)
        bodies = hook.bodies()
    status = api.get(f"{URL}/{processing_id}").get_json()
    assert snapshot_states(status) == ["processed", "processed"]
    assert [snapshot_states(body) for body in bodies][-1] == ["processed", "processed"]
    assert len(bodies) == 5


@pytest.mark.slow
def test_pps_worker_without_redis_says_none_is_needed(app: Flask) -> None:
    env = {**worker_env(app), "PPS_REDIS_URL": ""}
    done = subprocess.run(
        [pps_script(), "worker", "--burst"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "no worker is needed" in done.stderr
