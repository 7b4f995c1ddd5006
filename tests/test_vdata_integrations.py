"""Variable data beside variants, the remote ACL and webhooks: the records of a print file
render in the draft's variant, a remoteAcl draft's print file of records is still asked
about, page-info follows the variant's pages, and changing the rows is a ``draft.updated``
event.

Requests are shaped as in ``test_variable_data`` (the PHP SDK's VariableData client) and
``test_api_variants`` (DraftBuilder's ``variant``)."""

from __future__ import annotations

import io
import time
from typing import Any

import pikepdf
import pytest
import sqlalchemy as sa
from conftest import ApiClient
from flask import Flask
from joserfc import jwt
from joserfc.jwk import OctKey
from pypdf import PdfReader
from test_remote_acl import Shop
from vdata_support import card_template

from pps.platform.models import Client, Template, User
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import drafts, webhook_deliveries

OCEAN = b"1 .45 0 .3 k"  # the accent's DeviceCMYK fill as reportlab writes it
FOREST = b".8 0 1 .3 k"
NAMES = ["Ada Lovelace", "Grace Hopper", "Edsger Dijkstra"]


@pytest.fixture
def card(repo: SqlRepository, tenant: Client) -> Template:
    return card_template(repo, tenant)


def new_draft(api: ApiClient, user: User, card: Template, **options: Any) -> str:
    response = api.post(
        "/api-ext/draft",
        json={"user_identifier": user.identifier, "templateIdentifier": card.identifier, **options},
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    return str(response.get_json()["data"]["draftHash"])


def put_rows(api: ApiClient, draft_hash: str) -> None:
    response = api.put(
        f"/api-ext/draft/{draft_hash}/variable-data",
        json={"data": [{"name": name} for name in NAMES]},
    )
    assert response.status_code == 204, response.get_data(as_text=True)


def fetch_print(api: ApiClient, tenant: Client, draft_hash: str) -> Any:
    now = int(time.time())
    token = jwt.encode(
        {"alg": "HS256"},
        {"client": tenant.identifier, "iat": now, "exp": now + 300},
        OctKey.import_key(tenant.api_key),
    )
    return api.client.get(f"/api-ext/files/draft/{draft_hash}/print", query_string={"jwt": token})


def print_pdf(api: ApiClient, tenant: Client, draft_hash: str) -> bytes:
    response = fetch_print(api, tenant, draft_hash)
    assert response.status_code == 302, response.get_data(as_text=True)
    location = response.headers["Location"].removeprefix("http://localhost")
    with api.client.get(location) as served:
        assert served.status_code == 200
        return bytes(served.data)


def drawn(pdf: bytes) -> list[bytes]:
    """Per page, every content stream it draws: its own and its form XObjects'."""
    pages = []
    with pikepdf.open(io.BytesIO(pdf)) as document:
        for page in document.pages:
            streams = [page.obj.Contents.read_bytes()] if "/Contents" in page.obj else []
            if isinstance(page.obj.get("/Contents"), pikepdf.Array):
                streams = [item.read_bytes() for item in page.obj.Contents]
            for _, xobject in (page.resources.get("/XObject") or {}).items():
                if xobject.get("/Subtype") == "/Form":
                    streams.append(xobject.read_bytes())
            pages.append(b"\n".join(streams))
    return pages


def test_records_render_in_the_drafts_variant_and_follow_a_change(
    api: ApiClient, tenant: Client, card: Template, user: User
) -> None:
    draft_hash = new_draft(api, user, card, variant="forest")
    put_rows(api, draft_hash)
    pdf = print_pdf(api, tenant, draft_hash)
    texts = [page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages]
    assert len(texts) == len(NAMES)
    assert [name in text for name, text in zip(NAMES, texts, strict=True)] == [True] * 3
    for page in drawn(pdf):
        assert FOREST in page and OCEAN not in page

    changed = api.put(f"/api-ext/draft/{draft_hash}", json={"variant": "ocean"})
    assert changed.status_code == 200, changed.get_json()
    pdf = print_pdf(api, tenant, draft_hash)
    assert len(PdfReader(io.BytesIO(pdf)).pages) == len(NAMES)  # the rows stay
    for page in drawn(pdf):
        assert OCEAN in page and FOREST not in page


def test_page_info_of_a_draft_with_a_variant_and_rows(
    api: ApiClient, card: Template, user: User
) -> None:
    draft_hash = new_draft(api, user, card, variant=2)
    put_rows(api, draft_hash)
    response = api.get(f"/api-ext/draft/{draft_hash}/print/page-info?row=3")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["data"] == {
        "pages": 1,
        "dimensions": [{"width": 85.0, "height": 55.0, "bleed": 3.0, "unit": "mm"}],
    }
    assert api.get(f"/api-ext/draft/{draft_hash}/print/page-info?row=4").status_code == 422


def test_the_print_file_of_records_is_asked_about_for_remote_acl_drafts(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, card: Template, user: User
) -> None:
    draft_hash = new_draft(api, user, card)
    put_rows(api, draft_hash)
    with repo.engine.begin() as conn:
        conn.execute(
            drafts.update().where(drafts.c.draft_hash == draft_hash).values(remote_acl=True)
        )
    denied = fetch_print(api, tenant, draft_hash)  # no ACL URL set: denied
    assert denied.status_code == 403
    assert "message" in denied.get_json()  # JSON, as every file endpoint answers
    integrations = app.extensions["pps"].integrations
    shop = Shop(allow={"draft.files.fetch"})
    try:
        integrations.set_acl_url(tenant.identifier, shop.url)
        pdf = print_pdf(api, tenant, draft_hash)
        assert len(PdfReader(io.BytesIO(pdf)).pages) == len(NAMES)
        asked = [q["actions"][0] for q in shop.questions]
        assert [(a["action"], a["entityIdentifier"]) for a in asked] == [
            ("draft.files.fetch", draft_hash)
        ]
        shop.allow = set()
        assert fetch_print(api, tenant, draft_hash).status_code == 403
    finally:
        shop.close()


def test_setting_or_changing_rows_is_a_draft_updated_event(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, card: Template, user: User
) -> None:
    hook = api.post(
        "/api-ext/webhook", json={"event": "draft.updated", "url": "http://127.0.0.1:9/"}
    )
    assert hook.status_code == 201, hook.get_data(as_text=True)
    draft_hash = new_draft(api, user, card)

    def events() -> list[Any]:
        with repo.engine.connect() as conn:
            rows = conn.execute(
                sa.select(webhook_deliveries.c.payload).where(
                    webhook_deliveries.c.client_identifier == tenant.identifier,
                    webhook_deliveries.c.event == "draft.updated",
                )
            )
            return [row.payload["draftHash"] for row in rows]

    put_rows(api, draft_hash)
    assert events() == [draft_hash]
    refused = api.put(
        f"/api-ext/draft/{draft_hash}/variable-data", json={"data": {"7": {"name": "X"}}}
    )
    assert refused.status_code == 422
    assert events() == [draft_hash]  # nothing changed, nothing announced
    changed = api.put(
        f"/api-ext/draft/{draft_hash}/variable-data", json={"data": {"1": {"name": "Barbara"}}}
    )
    assert changed.status_code == 204
    assert events() == [draft_hash, draft_hash]
