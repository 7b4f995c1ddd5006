"""Uploads within the storage budget when the database or the file storage fails part-way.

Whatever fails after the room is reserved, the request leaves nothing behind that it did
not finish: no draft copy without its print PDF, no file that no row records (it would take
storage that no budget counts, and no sweep finds), no room held by a finished upload. A
failing statement is the database going away at that point (SQLAlchemy's cursor event
raises the error a dropped connection raises); a failing file is a real one that cannot be
deleted. Real SQLite and PostgreSQL, real Redis, real files.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from api_support import assert_error
from conftest import ApiClient
from flask import Flask
from preflight_support import print_pdf
from test_preflight import UPLOAD, imported, new_draft
from test_preflight import upload as upload_pdf
from test_storage_budget import PDF, TABLE, count_reservations, stored_files, upload_rows
from test_uploads import upload

from pps.platform.models import Client, Template
from pps.platform.outages import DATABASE_DOWN
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.storage_budget import SqlStorageBudget

#: Room for several copies of the print PDF: these tests are about failures, not the budget.
BUDGET = 10 * len(PDF)


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return {**app_config, "client_storage_bytes": BUDGET}


@pytest.fixture
def upload_template(app: Flask, repo: SqlRepository, tenant: Client, tmp_path: Path) -> Template:
    return imported(app, repo, tenant, tmp_path / "upload", document=UPLOAD, files={})


@contextmanager
def database_fails(repo: SqlRepository, start: str, containing: str = "") -> Iterator[None]:
    """Statements starting with ``start`` (and naming ``containing``) fail while the block
    runs, with the error a connection the server dropped raises."""

    def fail(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        text = " ".join(statement.split()).upper()
        if text.startswith(start.upper()) and containing.upper() in text:
            lost = ConnectionError("server closed the connection unexpectedly")
            raise sa.exc.OperationalError(statement, parameters, lost)

    sa.event.listen(repo.engine, "before_cursor_execute", fail)
    try:
        yield
    finally:
        sa.event.remove(repo.engine, "before_cursor_execute", fail)


def outage(response: Any) -> None:
    body = assert_error(response, 503)
    assert body["message"] == DATABASE_DOWN


def test_a_replicate_whose_pdf_copy_cannot_be_recorded_leaves_no_copy(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, upload_template: Template
) -> None:
    source = new_draft(api, upload_template, intent="upload")
    assert upload_pdf(api, source["draftHash"], PDF).status_code == 200
    before, files = repo.list_drafts(tenant.identifier, 1, 100).total, stored_files(app)
    with database_fails(repo, "UPDATE drafts", "upload_key"):
        outage(api.post(f"/api-ext/draft/{source['draftHash']}/replicate", json={}))
    # No copy without its PDF (the shop's retry would make a second one), no stray file.
    assert repo.list_drafts(tenant.identifier, 1, 100).total == before
    assert stored_files(app) == files
    kept = repo.get_draft(tenant.identifier, source["draftHash"])
    assert kept is not None
    assert SqlStorageBudget(repo.engine).used(tenant.identifier) == kept.upload_size
    assert count_reservations(repo, tenant) == 0


def test_a_print_pdf_that_cannot_be_recorded_is_not_kept(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, upload_template: Template
) -> None:
    draft = new_draft(api, upload_template, intent="upload")
    assert upload_pdf(api, draft["draftHash"], PDF).status_code == 200
    before = repo.get_draft(tenant.identifier, draft["draftHash"])
    assert before is not None and before.upload_key is not None
    files = stored_files(app)
    for sent in (print_pdf(2, text="Another"), PDF):  # a new PDF, and the same one again
        with database_fails(repo, "UPDATE drafts", "upload_key"):
            outage(upload_pdf(api, draft["draftHash"], sent))
        assert stored_files(app) == files  # the draft's PDF kept, the new one not left
        assert repo.get_draft(tenant.identifier, draft["draftHash"]) == before
        assert app.extensions["pps"].storage.read(before.upload_key) is not None
    assert count_reservations(repo, tenant) == 0


def test_a_stored_file_whose_reservation_cannot_be_released_is_answered_stored(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client
) -> None:
    released = "storage_reservations.identifier ="
    with database_fails(repo, "DELETE FROM storage_reservations", released):
        stored = upload(api, "a.csv", TABLE)
    # Not a 503 for a file that was stored: the shop would send it again.
    assert getattr(stored, "status_code", None) == 201
    assert upload_rows(repo, tenant) == 1 and len(stored_files(app)) == 1
    # The room is held until the reservation expires, then only the file counts.
    assert count_reservations(repo, tenant) == 1
    assert SqlStorageBudget(repo.engine).used(tenant.identifier) == 2 * len(TABLE)


def test_a_file_whose_bytes_cannot_be_deleted_keeps_its_record_for_a_retry(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client
) -> None:
    app.config["PROPAGATE_EXCEPTIONS"] = False  # the error as the shop sees it
    stored: Any = upload(api, "a.csv", TABLE)
    identifier = stored.get_json()["identifier"]
    record = app.extensions["pps"].uploads.get(tenant.identifier, identifier)
    path: Path = app.extensions["pps"].storage.path_for(record.storage_key)
    path.unlink()  # where the file was, something the storage cannot delete
    (path / "stuck").mkdir(parents=True)
    assert api.delete(f"/api-ext/file/{identifier}").status_code >= 500
    # Not answered deleted, and still there to delete: the bytes are not left unrecorded.
    assert upload_rows(repo, tenant) == 1
    (path / "stuck").rmdir()
    path.rmdir()
    assert api.delete(f"/api-ext/file/{identifier}").status_code == 204
    assert upload_rows(repo, tenant) == 0 and stored_files(app) == []
    assert SqlStorageBudget(repo.engine).used(tenant.identifier) == 0
