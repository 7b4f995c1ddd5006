"""Per-client outbound settings: the intranet hosts a client's notifications may reach
(``pps client allow-host``), the ACL URL and the webhook secret from the CLI, and the
schema of the tables behind them.

Every receiver is a real HTTP server on 127.0.0.1; ``localhost`` resolves to loopback
from /etc/hosts, without DNS traffic.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from api_support import assert_error
from conftest import ApiClient
from flask import Flask
from processing_support import card_draft, card_template, receiver, run_jobs

from app import create_app
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import metadata

URL = "/api-ext/pdf-processing"


@pytest.fixture
def strict_app(app_config: dict[str, Any]) -> Iterator[Flask]:
    """Production's default: private notification targets refused."""
    application = create_app({**app_config, "notify_allow_private": False, "worker_mode": "thread"})
    yield application
    application.extensions["pps"].close()


def cli(app: Flask, *args: str) -> Any:
    return app.test_cli_runner().invoke(args=["pps", "client", *args])


def test_an_allowed_intranet_host_gets_notifications_only_for_its_client(strict_app: Flask) -> None:
    services = strict_app.extensions["pps"]
    intranet = services.repository.create_client("Intranet shop")
    other = services.repository.create_client("Other shop")
    result = cli(strict_app, "allow-host", intranet.identifier, "LOCALHOST.", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == ["localhost"]
    with receiver() as hook:
        url = f"http://localhost:{hook.server.server_address[1]}/hook"
        for client, expected in ((intranet, 201), (other, 422)):
            draft = card_draft(
                services.repository, client, card_template(services.repository, client), "A"
            )
            api = ApiClient(strict_app.test_client(), client.api_key)
            response = api.post(
                URL, json={"draftIds": [draft.draft_hash], "stateChangedNotifyUrl": url}
            )
            if expected == 422:
                body = assert_error(response, 422, "stateChangedNotifyUrl")
                assert "loopback" in body["errors"]["stateChangedNotifyUrl"][0]
            else:
                assert response.status_code == 201, response.get_data()
        run_jobs(strict_app, "thread", intranet.identifier, other.identifier)
        states = [body["draftStates"][0]["state"] for body in hook.bodies()]
        assert states[-1] == "processed"
        # An IP literal of the same host is another name: not allowed by "localhost".
        draft = card_draft(
            services.repository, intranet, card_template(services.repository, intranet), "B"
        )
        api = ApiClient(strict_app.test_client(), intranet.api_key)
        literal = f"http://127.0.0.1:{hook.server.server_address[1]}/hook"
        response = api.post(
            URL, json={"draftIds": [draft.draft_hash], "stateChangedNotifyUrl": literal}
        )
        assert_error(response, 422, "stateChangedNotifyUrl")
    result = cli(strict_app, "allow-host", intranet.identifier, "localhost", "--remove", "--json")
    assert json.loads(result.output) == []


def test_cli_sets_the_acl_url_and_rotates_the_webhook_secret(app: Flask) -> None:
    services = app.extensions["pps"]
    shop = services.repository.create_client("Shop")
    result = cli(app, "set-acl-url", shop.identifier, "https://shop.example/printformer/acl")
    assert result.exit_code == 0, result.output
    assert services.integrations.settings(shop.identifier).acl_url == (
        "https://shop.example/printformer/acl"
    )
    assert cli(app, "set-acl-url", shop.identifier, "ftp://x/").exit_code != 0
    assert cli(app, "set-acl-url", "nobody", "https://x/").exit_code != 0
    assert cli(app, "set-acl-url", shop.identifier, "--clear").exit_code == 0
    assert services.integrations.settings(shop.identifier).acl_url is None
    result = cli(app, "rotate-webhook-secret", shop.identifier)
    assert result.exit_code == 0
    secret = result.output.strip()
    assert secret.startswith("whsec_")
    assert services.integrations.settings(shop.identifier).webhook_secret == secret
    # The first webhook does not show a secret any more: the client has one.
    assert services.integrations.issue_webhook_secret(shop.identifier) is None
    assert cli(app, "allow-host", shop.identifier, "a/b").exit_code != 0


def test_migration_creates_the_tables_as_declared(repository: SqlRepository) -> None:
    with repository.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    mine = ("client_settings", "webhooks", "webhook_deliveries", "notification_keys", "remote_acl")
    assert [entry for entry in diff if any(name in repr(entry) for name in mine)] == []
