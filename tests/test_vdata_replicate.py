"""``replicate`` of a draft with variable data: the copy gets the source's rows, and the
``apiDefaultValues``/``customAttributes`` sent take precedence over the source's.

Requests as the PHP SDK's ``Draft\\Client::replicate`` sends them (src/Client/Draft/
Client.php: ``POST draft/{hash}/replicate`` with ``apiDefaultValues``, ``customAttributes``)
and the Magento module's ``Helper/Api.php`` (``GET``, no body)."""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import pytest
from conftest import ApiClient
from flask import Flask
from pypdf import PdfReader
from test_variable_data import HEADER, people, post_csv, print_pdf
from vdata_support import card_draft, card_template, csv_bytes

from pps.platform.models import Client, Draft
from pps.platform.repository.sql import SqlRepository


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client) -> Draft:
    return card_draft(repo, tenant, card_template(repo, tenant))


def rows_of(api: ApiClient, draft_hash: str) -> Any:
    response = api.get(
        f"/api-ext/draft/{draft_hash}/variable-data", query_string={"limit": 100, "offset": 0}
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def test_replicate_copies_the_rows_and_the_request_values_win(
    app: Flask, api: ApiClient, tenant: Client, draft: Draft
) -> None:
    rows = people(12)
    assert post_csv(api, draft, csv_bytes([HEADER, *rows])).status_code == 204
    response = api.post(
        f"/api-ext/draft/{draft.draft_hash}/replicate",
        json={
            "apiDefaultValues": {"title": "Head of Print"},
            "customAttributes": {"order": "A-17"},
        },
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    copy = response.get_json()["data"]
    assert copy["draftHash"] != draft.draft_hash
    assert copy["personalizations"] == {"amount": 12}
    assert copy["apiDefaultValues"]["title"] == "Head of Print"
    assert copy["customAttributes"] == {"order": "A-17"}

    source_rows, copied_rows = rows_of(api, draft.draft_hash), rows_of(api, copy["draftHash"])
    assert copied_rows == source_rows
    assert copied_rows["_meta"] == {"amountOfRows": 12}

    copied = dataclasses.replace(draft, draft_hash=copy["draftHash"])
    pdf = PdfReader(io.BytesIO(print_pdf(app, api, tenant, copied)))
    assert len(pdf.pages) == 12
    for index in (0, 11):
        text = pdf.pages[index].extract_text()
        assert rows[index][0] in text and rows[index][1] in text
        assert "Head of Print" in text and "Print Buyer" not in text  # the request's value

    # The copy's rows are its own: changing them leaves the source's alone.
    changed = api.put(
        f"/api-ext/draft/{copy['draftHash']}/variable-data", json={"data": {"0": {"name": "X"}}}
    )
    assert changed.status_code == 204, changed.get_data(as_text=True)
    assert rows_of(api, draft.draft_hash) == source_rows
    assert rows_of(api, copy["draftHash"])["data"][0]["name"] == "X"


def test_replicate_by_get_copies_rows_and_a_draft_without_rows_stays_at_one(
    api: ApiClient, repo: SqlRepository, tenant: Client, draft: Draft
) -> None:
    plain = api.get(f"/api-ext/draft/{draft.draft_hash}/replicate")
    assert plain.status_code == 200
    assert plain.get_json()["data"]["personalizations"] == {"amount": 1}
    assert rows_of(api, plain.get_json()["data"]["draftHash"])["data"] == []

    assert post_csv(api, draft, csv_bytes([HEADER, *people(3)])).status_code == 204
    copy = api.get(f"/api-ext/draft/{draft.draft_hash}/replicate").get_json()["data"]
    assert copy["personalizations"] == {"amount": 3}
    assert copy["apiDefaultValues"] == {"title": "Print Buyer"}  # the source's, none sent


def test_a_source_deleted_while_it_is_copied_is_404_and_leaves_no_copy(
    api: ApiClient, repo: SqlRepository, tenant: Client, draft: Draft, monkeypatch: Any
) -> None:
    """``DELETE`` of the source lands after the copy's row is made and before its records
    are copied: the copy would print one record instead of the source's three."""
    assert post_csv(api, draft, csv_bytes([HEADER, *people(3)])).status_code == 204
    replicate = repo.replicate_draft

    def then_deleted(client: str, draft_hash: str, **kwargs: Any) -> Any:
        copy = replicate(client, draft_hash, **kwargs)
        assert repo.delete_draft(client, draft_hash)
        return copy

    monkeypatch.setattr(repo, "replicate_draft", then_deleted)
    response = api.post(f"/api-ext/draft/{draft.draft_hash}/replicate", json={})
    assert response.status_code == 404, response.get_data(as_text=True)
    assert response.get_json()["message"] == "No draft with this hash exists for this client."
    assert repo.list_drafts(tenant.identifier, 1, 100).total == 0
