"""A draft, or its user, deleted while another request of the shop writes to the draft
or renders it.

The write or the render that loses the race answers 404 (the draft is gone) and leaves
nothing behind: no variable-data rows, no rendered file holding the customer's values,
never a 500, nor a deadlock answered as a 503. Each race is pinned: one request is held
at the statement (or just before the render) where the delete can come in, and the delete
runs to its end meanwhile (or waits for the request's lock).
Real SQLite and PostgreSQL, real Redis, real files, real threads.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from api_support import assert_error
from conftest import ApiClient
from flask import Flask
from joserfc import jwt
from joserfc.jwk import OctKey
from preflight_support import print_pdf, write_template
from race_support import briefly, hold_then_race
from test_preflight import UPLOAD
from test_preflight import upload as upload_pdf
from vdata_support import card_draft, card_template

import pps.files.api
from pps.platform.models import Client, Draft
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import variable_rows
from pps.templates.files import import_template, load_template_file


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client) -> Draft:
    return card_draft(repo, tenant, card_template(repo, tenant))


def rows_path(draft: Draft) -> str:
    return f"/api-ext/draft/{draft.draft_hash}/variable-data"


def stored_rows(repo: SqlRepository, draft: Draft) -> int:
    with repo.engine.connect() as conn:
        count = sa.select(sa.func.count()).select_from(variable_rows)
        return int(
            conn.execute(count.where(variable_rows.c.draft_hash == draft.draft_hash)).scalar_one()
        )


def draft_files(app: Flask, draft: Draft) -> list[Path]:
    root: Path = app.extensions["pps"].storage.root
    return sorted(root.rglob(f"drafts/*/{draft.draft_hash}/**/*"))


def test_rows_stored_while_the_draft_is_deleted_are_404_or_stored_before_it(
    app: Flask, repo: SqlRepository, tenant: Client, draft: Draft
) -> None:
    """The PUT is held at its delete of the old rows, once it has found the draft. On
    SQLite that find ran outside the transaction and locked nothing: the draft's delete
    came in, and the rows' insert failed on the foreign key (a 500). Now the PUT holds
    the draft from its find on, so the delete waits for it (both backends)."""
    answers: dict[str, Any] = {}

    def put_rows() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        rows = {"data": [{"name": "Ada"}, {"name": "Grace"}]}
        answers["put"] = mine.put(rows_path(draft), json=rows)

    def delete() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        answers["delete"] = mine.delete(f"/api-ext/draft/{draft.draft_hash}").status_code

    # Held at the PUT's delete of the old rows; the delete is done at once meanwhile, or
    # waits for the PUT's lock.
    hold_then_race(repo, put_rows, "DELETE FROM VARIABLE_ROWS", delete, wait=briefly)
    assert answers["delete"] == 204
    put = answers["put"]
    assert put.status_code in (204, 404), put.get_data(as_text=True)
    if put.status_code == 404:
        assert_error(put, 404)
    assert repo.get_draft(tenant.identifier, draft.draft_hash) is None
    assert stored_rows(repo, draft) == 0


@pytest.mark.parametrize("body", [{"data": [{"name": "Ada"}]}, {"data": {"0": {"name": "Ada"}}}])
def test_rows_for_a_draft_deleted_after_it_was_read_are_404(
    api: ApiClient,
    repo: SqlRepository,
    tenant: Client,
    draft: Draft,
    body: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The view read the draft, then the draft was deleted: the store finds nothing to
    write to. That was a 204 for rows stored nowhere (a list) or a 422 about a row index
    (an object); it is the draft's 404."""
    assert api.put(rows_path(draft), json={"data": [{"name": "Before"}]}).status_code == 204
    before = repo.get_draft(tenant.identifier, draft.draft_hash)
    assert api.delete(f"/api-ext/draft/{draft.draft_hash}").status_code == 204
    real = repo.get_draft
    calls = {"n": 0}

    def stale_once(client: str, draft_hash: str) -> Draft | None:
        calls["n"] += 1
        return before if calls["n"] == 1 else real(client, draft_hash)

    monkeypatch.setattr(repo, "get_draft", stale_once)
    body_ = assert_error(api.put(rows_path(draft), json=body), 404)
    assert body_["message"] == "No draft with this hash exists for this client."
    assert stored_rows(repo, draft) == 0


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


@pytest.fixture
def upload_draft(app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client) -> Draft:
    folder = app.extensions["pps"].storage.root.parent / "upload-template"
    template = import_template(
        repo,
        app.extensions["pps"].storage,
        tenant.identifier,
        load_template_file(write_template(folder, UPLOAD, {})),
    )
    user = repo.create_user(tenant.identifier, {})
    body = {"templateIdentifier": template.identifier, "userIdentifier": user.identifier}
    created = api.post("/api-ext/draft", json={**body, "intent": "upload"})
    assert created.status_code == 201, created.get_json()
    found = repo.get_draft(tenant.identifier, created.get_json()["data"]["draftHash"])
    assert found is not None
    return found


def test_a_pdf_recorded_while_its_user_is_deleted_is_no_deadlock(
    app: Flask, repo: SqlRepository, tenant: Client, upload_draft: Draft
) -> None:
    """The upload has locked the draft to record its PDF; the user's delete locks the
    user, then waits for the draft. On PostgreSQL the upload locked the draft by writing
    to it, so its next write to the draft checked the draft's foreign keys again and
    waited for the user: a deadlock, answered as a 503 to one of the two. Now the upload
    is recorded, and the delete then deletes the draft (its files go with the sweep, as
    every deleted user's do: docs/files.md)."""
    answers: dict[str, Any] = {}

    def upload() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        answers["upload"] = upload_pdf(mine, upload_draft.draft_hash, print_pdf(2))

    def delete() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        answers["delete"] = mine.delete(f"/api-ext/user/{upload_draft.user_identifier}")

    # The upload held as it records its PDF (at its read of the draft's upload key); the
    # delete waits meanwhile for the upload's lock on the draft (PostgreSQL).
    hold_then_race(repo, upload, "SELECT DRAFTS.UPLOAD_KEY", delete, wait=briefly)
    assert answers["delete"].status_code == 204, answers["delete"].get_data(as_text=True)
    uploaded = answers["upload"]
    assert uploaded.status_code in (200, 404), uploaded.get_data(as_text=True)
    assert repo.get_draft(tenant.identifier, upload_draft.draft_hash) is None
