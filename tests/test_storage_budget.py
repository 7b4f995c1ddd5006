"""A client's uploaded files stay within ``PPS_CLIENT_STORAGE_BYTES``.

Every path that stores a file for a client (``POST /api-ext/file``, a draft's print PDF and
its copy in a replicated draft, the editor's images) is refused with a 507 once the file
would take the client past its budget, and nothing of the file is written: no row, no
bytes. Deleting drafts frees their room; two uploads at once cannot both take the last of
it. Real SQLite and PostgreSQL, real Redis, real files.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from api_support import assert_error
from conftest import ApiClient
from flask import Flask
from flask.testing import FlaskClient
from preflight_support import print_pdf
from race_support import holding
from test_api_openapi import operations
from test_media_service import editor, editor_upload
from test_preflight import UPLOAD, imported, new_draft
from test_preflight import upload as upload_pdf
from test_render_media import CARD_DIR
from test_uploads import png, upload

from pps.platform.models import Client, Draft, Template, User
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.storage_budget import BudgetExceeded, SqlStorageBudget
from pps.platform.repository.tables import storage_reservations, uploads
from pps.platform.settings import MAX_STORAGE_BYTES, SettingsError, load_settings
from pps.templates.files import import_template, load_template_file


def sized(size: int) -> bytes:
    """A CSV table of exactly ``size`` bytes (CSV files are stored as sent)."""
    return b"Name\r\n" + b"x" * (size - 8) + b"\r\n"


TABLE = sized(600)
#: The print PDF of the two-page upload template; the budget below holds one, not two.
PDF = print_pdf(2, text="Mine")
BUDGET = len(PDF) + 1000


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return {**app_config, "client_storage_bytes": BUDGET}


@pytest.fixture
def upload_template(app: Flask, repo: SqlRepository, tenant: Client, tmp_path: Path) -> Template:
    return imported(app, repo, tenant, tmp_path / "upload", document=UPLOAD, files={})


def stored_files(app: Flask) -> list[str]:
    root: Path = app.extensions["pps"].storage.root
    return sorted(
        str(path.relative_to(root))
        for folder in ("uploads", "drafts")
        if (root / folder).exists()
        for path in (root / folder).rglob("*")
        if path.is_file()
    )


def upload_rows(repo: SqlRepository, client: Client) -> int:
    with repo.engine.connect() as conn:
        counted = sa.select(sa.func.count()).where(uploads.c.client_identifier == client.identifier)
        return int(conn.execute(counted).scalar_one())


def count_reservations(repo: SqlRepository, client: Client) -> int:
    """The client's reservations (on PostgreSQL the database is the run's)."""
    mine = storage_reservations.c.client_identifier == client.identifier
    with repo.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).where(mine)).scalar_one())


def full(response: Any) -> str:
    """The 507's message: JSON error body, naming the budget."""
    body = assert_error(response, 507)
    assert f"of its {BUDGET} bytes" in body["message"], body
    assert "PPS_CLIENT_STORAGE_BYTES" in body["message"]
    return str(body["message"])


def test_files_are_stored_until_the_budget_is_reached_then_507_and_nothing_written(
    app: Flask, api: ApiClient, other_api: ApiClient, repo: SqlRepository, tenant: Client
) -> None:
    assert len(TABLE) == 600
    assert upload(api, "a.csv", sized(BUDGET - 1100)).status_code == 201
    assert upload(api, "b.csv", TABLE).status_code == 201  # 500 bytes left
    files, rows = stored_files(app), upload_rows(repo, tenant)
    message = full(upload(api, "c.csv", TABLE))
    assert f"take {BUDGET - 500} of its {BUDGET} bytes" in message
    assert "file of 600 bytes" in message
    assert stored_files(app) == files and upload_rows(repo, tenant) == rows
    # Another client's budget is its own.
    assert upload(other_api, "c.csv", TABLE).status_code == 201
    # The documented statuses include the one answered.
    spec = app.test_client().get("/openapi.json").get_json()
    assert "507" in spec["paths"]["/api-ext/file"]["post"]["responses"]


def test_a_file_exactly_filling_the_budget_is_stored(api: ApiClient) -> None:
    assert upload(api, "exact.csv", sized(BUDGET)).status_code == 201
    full(upload(api, "one-more.csv", sized(10)))


def test_a_print_pdf_past_the_budget_is_507_and_the_draft_unchanged(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, upload_template: Template
) -> None:
    first = new_draft(api, upload_template, intent="upload")
    second = new_draft(api, upload_template, intent="upload")
    assert upload_pdf(api, first["draftHash"], PDF).status_code == 200
    stored = repo.get_draft(tenant.identifier, first["draftHash"])
    assert stored is not None and stored.upload_key is not None
    kept = app.extensions["pps"].storage.read(stored.upload_key)
    assert stored.upload_size == len(kept) > 0  # the PDF as stored (boxes added)
    files = stored_files(app)
    full(upload_pdf(api, second["draftHash"], PDF))
    unchanged = repo.get_draft(tenant.identifier, second["draftHash"])
    assert unchanged is not None and unchanged.upload_key is None and unchanged.version == 1
    assert stored_files(app) == files
    # A copy of the first needs room for its own copy of the PDF: none, and no copy.
    before = repo.list_drafts(tenant.identifier, 1, 100).total
    full(api.post(f"/api-ext/draft/{first['draftHash']}/replicate", json={}))
    assert repo.list_drafts(tenant.identifier, 1, 100).total == before
    assert stored_files(app) == files
    spec = app.test_client().get("/openapi.json").get_json()
    for method, path, operation in operations(spec):
        if path.endswith(("/upload", "/replicate")) and path.startswith("/api-ext/"):
            assert "507" in operation["responses"], (method, path)


def test_deleting_a_draft_frees_its_print_pdfs_room(
    api: ApiClient, repo: SqlRepository, tenant: Client, upload_template: Template
) -> None:
    first = new_draft(api, upload_template, intent="upload")
    second = new_draft(api, upload_template, intent="upload")
    assert upload_pdf(api, first["draftHash"], PDF).status_code == 200
    full(upload_pdf(api, second["draftHash"], PDF))
    assert api.delete(f"/api-ext/draft/{first['draftHash']}").status_code == 204
    assert upload_pdf(api, second["draftHash"], PDF).status_code == 200
    budget = SqlStorageBudget(repo.engine)
    kept = repo.get_draft(tenant.identifier, second["draftHash"])
    assert kept is not None and budget.used(tenant.identifier) == kept.upload_size > 0


def test_deleting_a_file_frees_its_room_and_its_bytes(
    app: Flask, api: ApiClient, other_api: ApiClient, repo: SqlRepository, tenant: Client
) -> None:
    first = upload(api, "a.csv", sized(BUDGET - 500))
    assert getattr(first, "status_code", None) == 201
    identifier = first.get_json()["identifier"]  # type: ignore[attr-defined]
    full(upload(api, "b.csv", TABLE))
    assert_error(other_api.delete(f"/api-ext/file/{identifier}"), 404)  # not its file
    deleted = api.delete(f"/api-ext/file/{identifier}")
    assert deleted.status_code == 204 and deleted.get_data() == b""
    assert stored_files(app) == [] and upload_rows(repo, tenant) == 0
    assert_error(api.delete(f"/api-ext/file/{identifier}"), 404)
    assert upload(api, "b.csv", TABLE).status_code == 201


def test_the_editors_image_upload_is_refused_in_its_own_shapes(
    app: Flask,
    api: ApiClient,
    client: FlaskClient,
    repo: SqlRepository,
    tenant: Client,
    user: User,
    draft: Draft,
) -> None:
    assert upload(api, "a.csv", sized(BUDGET - 20)).status_code == 201
    files, rows = stored_files(app), upload_rows(repo, tenant)
    _, token = editor(client, tenant, user, draft)
    answered = editor_upload(client, draft, token, png(64, 64))
    assert answered.status_code == 507, answered.get_data(as_text=True)
    body = answered.get_json()
    assert body["success"] is False and "no room left" in body["message"]
    assert body["errors"]["logo"] == [body["message"]]
    page = editor_upload(client, draft, token, png(64, 64), json_answer=False)
    assert page.status_code == 507 and page.mimetype == "text/html"
    assert 'id="error-summary"' in page.get_data(as_text=True)
    assert "no room left" in page.get_data(as_text=True)
    assert stored_files(app) == files and upload_rows(repo, tenant) == rows
    shown = repo.get_draft(tenant.identifier, draft.draft_hash)
    assert shown is not None and "logo" not in shown.values
    spec = app.test_client().get("/openapi.json").get_json()
    assert "507" in spec["paths"]["/editor/{draft_hash}/upload"]["post"]["responses"]


@pytest.fixture
def draft(api: ApiClient, app: Flask, repo: SqlRepository, tenant: Client, user: User) -> Draft:
    """A draft of the business card example, whose ``logo`` takes an uploaded image."""
    loaded = load_template_file(CARD_DIR / "template.json")
    card = import_template(repo, app.extensions["pps"].storage, tenant.identifier, loaded)
    response = api.post(
        "/api-ext/draft",
        json={"templateIdentifier": card.identifier, "userIdentifier": user.identifier},
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    found = repo.get_draft(tenant.identifier, response.get_json()["data"]["draftHash"])
    assert found is not None
    return found


# -- the reservation itself ---------------------------------------------------------------


def race(count: int, attempt: Callable[[], object]) -> list[object]:
    """``attempt`` in ``count`` threads let go at once; what each returned or raised."""
    start = threading.Barrier(count)
    results: list[object] = [None] * count

    def run(index: int) -> None:
        start.wait()
        try:
            results[index] = attempt()
        except Exception as exc:  # collected: the test counts them
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_racing_reservations_never_pass_a_nearly_full_budget(
    repo: SqlRepository, tenant: Client
) -> None:
    budget = SqlStorageBudget(repo.engine)
    results = race(8, lambda: budget.reserve(tenant.identifier, 100, 350))
    held = [r for r in results if isinstance(r, str)]
    refused = [r for r in results if isinstance(r, BudgetExceeded)]
    assert len(held) == 3 and len(refused) == 5, results
    assert budget.used(tenant.identifier) == 300
    for reservation in held:
        budget.release(reservation)
    assert budget.used(tenant.identifier) == 0


def test_an_upload_finishing_during_the_check_is_still_counted(
    repo: SqlRepository, tenant: Client
) -> None:
    """Upload A writes its row and releases its reservation while B's check reads: B must
    see A's bytes in one place or the other. B is paused (SQLAlchemy's cursor event) right
    after its first read of the sums; A finishes there on PostgreSQL, where each statement
    has a snapshot of its own (SQLite's writer lock, held by B, keeps A waiting)."""
    budget = SqlStorageBudget(repo.engine)
    held = budget.reserve(tenant.identifier, 600, 1000)
    outcome: list[object] = []

    def check() -> None:
        try:
            outcome.append(budget.reserve(tenant.identifier, 600, 1000))
        except BudgetExceeded as exc:
            outcome.append(exc)

    def finish_a() -> None:
        with repo.engine.begin() as conn:
            conn.execute(
                uploads.insert().values(
                    identifier="a" * 32,
                    client_identifier=tenant.identifier,
                    kind="csv",
                    name="a.csv",
                    size=600,
                    storage_key="uploads/x/a/file.csv",
                    created_at=datetime.now(UTC),
                )
            )
        budget.release(held)

    finisher = threading.Thread(target=finish_a)
    with holding(repo, check, lambda statement: "sum(" in statement, after=True):
        finisher.start()
        if repo.engine.dialect.name == "postgresql":
            finisher.join()
    finisher.join()
    assert len(outcome) == 1 and isinstance(outcome[0], BudgetExceeded), outcome
    assert budget.used(tenant.identifier) == 600


def test_racing_uploads_store_only_what_fits(
    app: Flask, client: FlaskClient, repo: SqlRepository, tenant: Client
) -> None:
    """Rounds of six uploads at once into room for one. Each round's winner is deleted
    for the next, so uploads finish (row written, reservation released) while others
    check: a check that read the two in separate snapshots let a second one through."""
    api = ApiClient(client, tenant.api_key)
    assert upload(api, "a.csv", sized(BUDGET - 1100)).status_code == 201  # room for one

    def attempt() -> object:
        mine = ApiClient(app.test_client(), tenant.api_key)
        response: Any = upload(mine, "b.csv", TABLE)
        return response.status_code, response.get_json()

    for _ in range(4):
        answers: list[Any] = race(6, attempt)
        statuses = sorted(status for status, _ in answers)
        assert statuses == [201, 507, 507, 507, 507, 507], answers
        assert upload_rows(repo, tenant) == 2
        assert len([f for f in stored_files(app) if f.startswith("uploads/")]) == 2
        assert SqlStorageBudget(repo.engine).used(tenant.identifier) == BUDGET - 500
        winner = next(body["identifier"] for status, body in answers if status == 201)
        assert api.delete(f"/api-ext/file/{winner}").status_code == 204


def test_a_reservation_left_behind_counts_no_more_once_expired(
    repo: SqlRepository, tenant: Client
) -> None:
    budget = SqlStorageBudget(repo.engine)
    with repo.engine.begin() as conn:
        conn.execute(
            storage_reservations.insert().values(
                identifier="dead" * 8,
                client_identifier=tenant.identifier,
                size=300,
                expires_at=datetime.now(UTC) - timedelta(seconds=1),
            )
        )
    assert budget.used(tenant.identifier) == 0
    budget.release(budget.reserve(tenant.identifier, 350, 350))
    assert count_reservations(repo, tenant) == 0


# -- the setting ----------------------------------------------------------------------------


def _env(tmp_path: Path, value: str) -> dict[str, str]:
    from conftest import TEST_SECRET_KEY

    return {
        "PPS_SECRET_KEY": TEST_SECRET_KEY,
        "PPS_INSTANCE_PATH": str(tmp_path),
        "PPS_CLIENT_STORAGE_BYTES": value,
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", 20 * 1024**3), ("0", 0), ("1", 1), (" 53687091200 ", 50 * 1024**3),
     (str(MAX_STORAGE_BYTES), MAX_STORAGE_BYTES)],
)  # fmt: skip
def test_the_budget_setting_takes_bytes_and_zero_for_none(
    tmp_path: Path, value: str, expected: int
) -> None:
    assert load_settings(_env(tmp_path, value)).client_storage_bytes == expected


@pytest.mark.parametrize(
    "value", ["-1", "20GiB", "1.5", "1e9", str(MAX_STORAGE_BYTES + 1), "9" * 5000]
)
def test_a_budget_setting_pps_cannot_use_is_refused_in_one_line(tmp_path: Path, value: str) -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings(_env(tmp_path, value))
    message = str(refused.value)
    assert message.startswith("PPS_CLIENT_STORAGE_BYTES must be a whole number of bytes")
    assert "\n" not in message and len(message) < 300


def test_no_budget_stores_past_any_size(
    app_config: dict[str, Any], tenant: Client, client: FlaskClient
) -> None:
    from pps.app import create_app

    unbounded = create_app({**app_config, "client_storage_bytes": 0})
    try:
        api = ApiClient(unbounded.test_client(), tenant.api_key)
        big = sized(BUDGET + 10)
        assert upload(api, "a.csv", big).status_code == 201
        assert upload(api, "b.csv", big).status_code == 201
    finally:
        unbounded.extensions["pps"].close()


def test_the_sweep_deletes_the_print_pdfs_of_a_deleted_users_drafts(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, upload_template: Template
) -> None:
    """Deleting a user deletes the drafts' rows, freeing their room, but not their files:
    the sweep deletes the files of deleted drafts, the uploaded PDFs with the rendered."""
    gone = new_draft(api, upload_template, intent="upload")
    assert upload_pdf(api, gone["draftHash"], PDF).status_code == 200
    assert api.delete(f"/api-ext/user/{gone['userIdentifier']}").status_code == 204
    kept = new_draft(api, upload_template, intent="upload")
    assert upload_pdf(api, kept["draftHash"], PDF).status_code == 200
    assert any(gone["draftHash"] in name for name in stored_files(app))
    result = app.test_cli_runner().invoke(args=["pps", "files", "sweep"])
    assert result.exit_code == 0, result.output
    assert not any(gone["draftHash"] in name for name in stored_files(app))
    current = repo.get_draft(tenant.identifier, kept["draftHash"])
    assert current is not None and current.upload_key is not None
    assert app.extensions["pps"].storage.read(current.upload_key) is not None
