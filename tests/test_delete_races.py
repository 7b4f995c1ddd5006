"""A draft deleted while another request of the shop renders it.

The render that loses the race answers 404 (the draft is gone) and leaves no rendered file
holding the customer's values behind, never a 500. The race is pinned: the draft is deleted
just before the render. Real SQLite and PostgreSQL, real Redis, real files.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from api_support import assert_error
from conftest import ApiClient
from flask import Flask
from joserfc import jwt
from joserfc.jwk import OctKey
from vdata_support import card_draft, card_template

import pps.files.api
from pps.platform.models import Client, Draft
from pps.platform.repository.sql import SqlRepository


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client) -> Draft:
    return card_draft(repo, tenant, card_template(repo, tenant))


def draft_files(app: Flask, draft: Draft) -> list[Path]:
    root: Path = app.extensions["pps"].storage.root
    return sorted(root.rglob(f"drafts/*/{draft.draft_hash}/**/*"))


def file_token(tenant: Client) -> str:
    now = int(time.time())
    claims = {"client": tenant.identifier, "iat": now, "exp": now + 300}
    return jwt.encode({"alg": "HS256"}, claims, OctKey.import_key(tenant.api_key))


def test_a_file_rendered_while_its_draft_is_deleted_is_404_and_not_kept(
    app: Flask,
    api: ApiClient,
    tenant: Client,
    draft: Draft,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The file link found the draft, and the draft was deleted (with its files) before
    the render stored its file: the file stayed, holding the customer's values, for no
    draft, until a sweep; and the shop got a link to it. Now the render is a 404 and
    its file is deleted."""
    real = pps.files.api.render_draft_file

    def deleted_first(*args: Any, **kwargs: Any) -> Any:
        other = ApiClient(app.test_client(), tenant.api_key)
        assert other.delete(f"/api-ext/draft/{draft.draft_hash}").status_code == 204
        return real(*args, **kwargs)

    monkeypatch.setattr(pps.files.api, "render_draft_file", deleted_first)
    response = api.client.get(
        f"/api-ext/files/draft/{draft.draft_hash}/print", query_string={"jwt": file_token(tenant)}
    )
    assert_error(response, 404)
    assert draft_files(app, draft) == []
