"""Helpers shared by the repository contract suite and the /api-ext tests.

Factories arrange data through the repository (the seam under test in its own suite), and
``snapshot`` reads every row straight from the tables so a test can prove that a refused
request wrote nothing at all, not merely that a count stayed the same.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from pps.platform.models import Client, Draft, Template, User
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import clients, drafts, templates, uploads, users

USER_ID = re.compile(r"^[A-Za-z0-9]{8}$")
CLIENT_ID = USER_ID
TEMPLATE_ID = USER_ID
DRAFT_HASH = re.compile(r"^[a-z0-9]{32}$")

TABLES = (clients, users, templates, drafts, uploads)

#: Output fields the PHP SDK has typed properties for and fails on null (COMPAT.md).
DRAFT_NEVER_NULL = (
    "draftHash",
    "userIdentifier",
    "templateIdentifier",
    "personalizations",
    "preflightStatus",
    "variant",
    "apiDefaultValues",
    "customAttributes",
    "state",
)
TEMPLATE_NEVER_NULL = (
    "identifier",
    "name",
    "type",
    "intents",
    "pageCount",
    "customAttributes",
    "updatedAt",
)


def snapshot(repository: SqlRepository) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table, in a stable order."""
    with repository.engine.connect() as conn:
        return {
            table.name: sorted(
                (dict(row) for row in conn.execute(table.select()).mappings()), key=repr
            )
            for table in TABLES
        }


def counts(repository: SqlRepository) -> dict[str, int]:
    with repository.engine.connect() as conn:
        return {
            table.name: int(
                conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            )
            for table in TABLES
        }


def disable(repository: SqlRepository, client: Client) -> None:
    with repository.engine.begin() as conn:
        conn.execute(
            clients.update()
            .where(clients.c.identifier == client.identifier)
            .values(disabled_at=datetime.now(UTC))
        )


def make_user(repository: SqlRepository, client: Client, **fields: Any) -> User:
    return repository.create_user(client.identifier, fields)


def make_template(
    repository: SqlRepository,
    client: Client,
    identifier: str | None = None,
    *,
    name: str = "Business card",
    data_keys: tuple[str, ...] = ("Name", "City"),
    custom_attributes: dict[str, Any] | None = None,
) -> Template:
    return repository.create_template(
        client.identifier,
        name=name,
        data_keys=list(data_keys),
        custom_attributes={"sku": "BC-1"} if custom_attributes is None else custom_attributes,
        page_count=2,
        spec={"pages": 2},
        identifier=identifier,
    )


def make_draft(
    repository: SqlRepository,
    client: Client,
    user: User | None = None,
    template: Template | None = None,
    **kwargs: Any,
) -> Draft:
    user = user or make_user(repository, client)
    template = template or make_template(repository, client)
    record = repository.create_draft(
        client.identifier,
        user_identifier=user.identifier,
        template_identifier=template.identifier,
        intent=kwargs.pop("intent", "customize"),
        api_default_values=kwargs.pop("api_default_values", {"Name": "Ada"}),
        custom_attributes=kwargs.pop("custom_attributes", {"order": "17"}),
    )
    assert record is not None and not kwargs
    return record


def assert_error(response: Any, status: int, *fields: str) -> dict[str, Any]:
    """The response is ``status`` with a JSON error body; on 422 ``errors`` names ``fields``."""
    assert response.status_code == status, (response.status_code, response.get_data()[:500])
    assert response.mimetype == "application/json", response.get_data()[:500]
    body = response.get_json()
    assert isinstance(body, dict), body
    assert isinstance(body.get("message"), str) and body["message"], body
    assert body.get("success") is False, body  # as the reference's error bodies
    if status == 422:
        errors = body.get("errors")
        assert isinstance(errors, dict), body
        for name, messages in errors.items():
            assert isinstance(name, str)
            assert isinstance(messages, list) and messages, body
            assert all(isinstance(message, str) for message in messages), body
    for name in fields:
        assert name in body["errors"], (name, body)
    return body
