"""``/api-ext/template`` (the catalogue a Magento module reads whole) and ``/api-ext/client``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from api_support import CLIENT_ID, TEMPLATE_NEVER_NULL, assert_error, make_template

from pps.platform.models import Client
from pps.platform.repository.sql import SqlRepository

TEMPLATE_KEYS = {
    "identifier",
    "name",
    "type",
    "intents",
    "pageCount",
    "availTemplate",
    "groupMembers",
    "correctionTemplate",
    "customAttributes",
    "dataKeys",
    "updatedAt",
    "variants",
    "previewUrl",
}


def parse_time(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert parsed.tzinfo is not None, value
    return parsed


def assert_template(template: dict[str, Any]) -> dict[str, Any]:
    assert set(template) == TEMPLATE_KEYS
    for name in TEMPLATE_NEVER_NULL:
        assert template[name] is not None, name
    assert template["type"] == "customizable"
    assert isinstance(template["intents"], list) and template["intents"]
    assert isinstance(template["pageCount"], int)
    assert isinstance(template["customAttributes"], dict)
    assert isinstance(template["dataKeys"], list)
    assert template["availTemplate"] is None and template["correctionTemplate"] is None
    assert template["groupMembers"] == [] and template["variants"] == []
    parse_time(template["updatedAt"])
    assert template["previewUrl"].endswith(
        f"/api-ext/files/template/{template['identifier']}/page-preview-thumb"
    )
    return template


def test_list_without_page_returns_every_template(
    api: Any, repo: SqlRepository, tenant: Client, other_tenant: Client
) -> None:
    made = [make_template(repo, tenant, name=f"Card {i}").identifier for i in range(30)]
    make_template(repo, other_tenant, name="Not mine")

    response = api.get("/api-ext/template")
    assert response.status_code == 200
    body = response.get_json()
    assert set(body) == {"data", "meta"}
    assert sorted(t["identifier"] for t in body["data"]) == sorted(made)
    for template in body["data"]:
        assert_template(template)
    assert body["meta"] == {"currentPage": 1, "lastPage": 1, "perPage": 30, "total": 30}


def test_list_with_page_is_paginated(api: Any, repo: SqlRepository, tenant: Client) -> None:
    made = [make_template(repo, tenant, name=f"Card {i}").identifier for i in range(30)]
    first = api.get("/api-ext/template?page=1").get_json()
    assert len(first["data"]) == 25
    assert first["meta"] == {"currentPage": 1, "lastPage": 2, "perPage": 25, "total": 30}
    second = api.get("/api-ext/template", query_string={"page": 2, "per_page": 20}).get_json()
    assert len(second["data"]) == 10
    assert second["meta"] == {"currentPage": 2, "lastPage": 2, "perPage": 20, "total": 30}
    first_20 = api.get("/api-ext/template?page=1&per_page=20").get_json()["data"]
    seen = [t["identifier"] for t in first_20 + second["data"]]
    assert sorted(seen) == sorted(made)


def test_list_when_there_are_none(api: Any) -> None:
    body = api.get("/api-ext/template").get_json()
    assert body["data"] == []
    assert body["meta"]["total"] == 0 and body["meta"]["lastPage"] == 1


def test_show_template(api: Any, repo: SqlRepository, tenant: Client) -> None:
    stored = make_template(
        repo,
        tenant,
        "TPLcard1",
        name="Business card",
        data_keys=("Name", "Phone"),
        custom_attributes={"sku": "BC-1", "paper": {"gsm": 350}},
    )
    response = api.get("/api-ext/template/TPLcard1")
    assert response.status_code == 200
    body = response.get_json()
    assert set(body) == {"data"}
    template = assert_template(body["data"])
    assert template["identifier"] == "TPLcard1"
    assert template["name"] == "Business card"
    assert template["dataKeys"] == ["Name", "Phone"]
    assert template["customAttributes"] == {"sku": "BC-1", "paper": {"gsm": 350}}
    assert template["pageCount"] == stored.page_count
    assert parse_time(template["updatedAt"]) == stored.updated_at


def test_same_template_identifier_for_two_clients(
    api: Any, other_api: Any, repo: SqlRepository, tenant: Client, other_tenant: Client
) -> None:
    make_template(repo, tenant, "TPLsame1", name="Mine")
    make_template(repo, other_tenant, "TPLsame1", name="Theirs")
    assert api.get("/api-ext/template/TPLsame1").get_json()["data"]["name"] == "Mine"
    assert other_api.get("/api-ext/template/TPLsame1").get_json()["data"]["name"] == "Theirs"


def test_unknown_template_is_404(api: Any) -> None:
    assert_error(api.get("/api-ext/template/nothing1"), 404)


def test_show_client(api: Any, tenant: Client) -> None:
    response = api.get("/api-ext/client")
    assert response.status_code == 200
    body = response.get_json()
    assert set(body) == {"data"}
    assert set(body["data"]) == {"identifier", "name", "createdAt"}
    assert body["data"]["identifier"] == tenant.identifier
    assert CLIENT_ID.match(body["data"]["identifier"])
    assert body["data"]["name"] == tenant.name
    assert parse_time(body["data"]["createdAt"]) == tenant.created_at
