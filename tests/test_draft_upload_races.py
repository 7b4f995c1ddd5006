"""Print PDFs sent to one draft at once: one of them is the draft's, the others are deleted.

Each upload stores its file, then makes it the draft's and deletes the one it replaced.
Uploads that interleave must not both replace the same file: the one replaced second would
stay in storage, pointed to by no draft, counted by no budget and kept by the sweep (it
keeps every file in an existing draft's ``upload/`` folder). Real SQLite and PostgreSQL,
real Redis, real files, real threads.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ApiClient
from flask import Flask
from preflight_support import print_pdf
from race_support import holding
from test_preflight import UPLOAD, imported, new_draft
from test_preflight import upload as upload_pdf

from pps.platform.models import Client, Template
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.storage_budget import SqlStorageBudget

#: Uploads let go at once per round.
COUNT = 6
#: Room for all of them at once, so that the budget is counted but refuses none.
BUDGET = 4 * COUNT * len(print_pdf(2))


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return {**app_config, "client_storage_bytes": BUDGET}


@pytest.fixture
def upload_template(app: Flask, repo: SqlRepository, tenant: Client, tmp_path: Path) -> Template:
    return imported(app, repo, tenant, tmp_path / "upload", document=UPLOAD, files={})


def upload_files(app: Flask, draft_hash: str) -> list[str]:
    """The keys of the files in the draft's ``upload/`` folder."""
    root: Path = app.extensions["pps"].storage.root
    return sorted(
        str(path.relative_to(root)) for path in root.rglob(f"drafts/*/{draft_hash}/upload/*")
    )


def in_threads(count: int, attempt: Callable[[int], Any]) -> list[Any]:
    """``attempt(index)`` in ``count`` threads let go at once; what each returned."""
    start = threading.Barrier(count)
    results: list[Any] = [None] * count

    def run(index: int) -> None:
        start.wait()
        results[index] = attempt(index)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def assert_one_pdf_counted(app: Flask, repo: SqlRepository, tenant: Client, hash_: str) -> None:
    """The draft's upload is the one file of its folder, and the budget counts just it."""
    stored = repo.get_draft(tenant.identifier, hash_)
    assert stored is not None and stored.upload_key is not None
    assert upload_files(app, hash_) == [stored.upload_key]
    data = app.extensions["pps"].storage.read(stored.upload_key)
    assert data is not None and stored.upload_size == len(data)
    assert SqlStorageBudget(repo.engine).used(tenant.identifier) == len(data)


def test_racing_uploads_to_one_draft_keep_one_pdf_and_count_only_it(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, upload_template: Template
) -> None:
    hash_ = new_draft(api, upload_template, intent="upload")["draftHash"]
    assert upload_pdf(api, hash_, print_pdf(2, text="Before")).status_code == 200

    def attempt(pdfs: list[bytes], index: int) -> int:
        mine = ApiClient(app.test_client(), tenant.api_key)
        return int(upload_pdf(mine, hash_, pdfs[index]).status_code)

    for round_ in range(3):
        pdfs = [print_pdf(2, text=f"Round {round_} artwork {i}") for i in range(COUNT)]
        assert in_threads(COUNT, functools.partial(attempt, pdfs)) == [200] * COUNT
        assert_one_pdf_counted(app, repo, tenant, hash_)


def test_the_same_pdf_again_stays_the_drafts_while_another_replaces_the_first(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, upload_template: Template
) -> None:
    """A: PDF X is the draft's. C sends X again and is held just before it records it; B
    sends Y meanwhile, replacing A's X and deleting it; then C records its X. C's file must
    be its own: had it the same key as A's, B would have deleted it, and the draft would
    name a file that is gone."""
    hash_ = new_draft(api, upload_template, intent="upload")["draftHash"]
    same = print_pdf(2, text="Same")
    assert upload_pdf(api, hash_, same).status_code == 200
    answers: list[int] = []

    def recording(statement: str) -> bool:
        # C locks the draft to record its PDF: a write on SQLite, FOR UPDATE elsewhere.
        text = statement.lstrip().upper()
        return text.startswith("UPDATE DRAFTS") or (
            text.startswith("SELECT DRAFTS.DRAFT_HASH") and text.endswith("FOR UPDATE")
        )

    def send_again() -> None:
        mine = ApiClient(app.test_client(), tenant.api_key)
        answers.append(int(upload_pdf(mine, hash_, same).status_code))

    with holding(repo, send_again, recording):
        assert upload_pdf(api, hash_, print_pdf(2, text="Other")).status_code == 200
    assert answers == [200]
    assert_one_pdf_counted(app, repo, tenant, hash_)
    shown = api.get(f"/api-ext/draft/{hash_}")
    assert shown.status_code == 200
