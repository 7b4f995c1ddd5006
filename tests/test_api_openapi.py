"""The OpenAPI reference of /api-ext cannot drift from what the views really answer.

Every api route is documented, every ``$ref`` resolves, and the bodies of real responses
are checked against the documented schemas: same keys, documented types, no null where the
documentation says a field is never null.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from api_support import DRAFT_NEVER_NULL, TEMPLATE_NEVER_NULL, make_template, make_user
from conftest import ApiClient
from flask import Flask

from pps.models import Client
from pps.openapi import build_spec
from pps.repository.sql import SqlRepository


@pytest.fixture
def spec(app: Flask) -> dict[str, Any]:
    with app.app_context():
        return build_spec(app)


def openapi_path(rule: str) -> str:
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule)


def api_rules(app: Flask) -> Iterator[tuple[str, str]]:
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith("api."):
            for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
                yield method, openapi_path(rule.rule)


def resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        schema = spec["components"]["schemas"][name]
    return schema


def component(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return spec["components"]["schemas"][name]  # type: ignore[no-any-return]


def test_every_api_route_is_documented(app: Flask, spec: dict[str, Any]) -> None:
    rules = list(api_rules(app))
    assert len(rules) >= 16
    for method, path in rules:
        assert path in spec["paths"], path
        operation = spec["paths"][path].get(method.lower())
        assert operation is not None, f"{method} {path} is not documented"
        assert operation["tags"] and set(operation["tags"]) <= {
            "Client",
            "User",
            "Draft",
            "Template",
            "Files",
        }
        assert operation["summary"]
        assert operation["security"] == [{"bearer": []}], f"{method} {path}"
        assert "401" in operation["responses"], f"{method} {path}"


def test_tags_and_security_scheme(spec: dict[str, Any]) -> None:
    tags = {tag["name"] for tag in spec["tags"]}
    assert {"User", "Draft", "Template", "Client"} <= tags
    used = {tag for item in spec["paths"].values() for op in item.values() for tag in op["tags"]}
    assert {"User", "Draft", "Template", "Client"} <= used
    bearer = spec["components"]["securitySchemes"]["bearer"]
    assert bearer["type"] == "http" and bearer["scheme"] == "bearer"


def test_every_reference_resolves(spec: dict[str, Any]) -> None:
    names = set(spec["components"]["schemas"])
    stack: list[Any] = [spec]
    seen = 0
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                assert ref.startswith("#/components/schemas/"), ref
                assert ref.removeprefix("#/components/schemas/") in names, ref
                seen += 1
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    assert seen > 0


def test_output_schemas_mark_never_null_fields_required(spec: dict[str, Any]) -> None:
    """COMPAT.md lists the fields the PHP SDK types as non-null; the reference must agree."""
    never_null = {
        "DraftOut": DRAFT_NEVER_NULL,
        "TemplateOut": TEMPLATE_NEVER_NULL,
        "UserOut": ("identifier", "profile", "customAttributes"),
        "ClientOut": ("identifier", "name", "createdAt"),
    }
    for name, fields in never_null.items():
        schema = component(spec, name)
        for field in fields:
            assert field in schema.get("required", []), f"{name}.{field}"
            assert not schema["properties"][field].get("nullable"), f"{name}.{field}"


_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
}


def assert_matches(spec: dict[str, Any], schema: dict[str, Any], value: Any, where: str) -> None:
    """``value`` has exactly the documented properties, of the documented types."""
    schema = resolve(spec, schema)
    if value is None:
        assert schema.get("nullable"), f"{where} is null but not documented as nullable"
        return
    kind = schema.get("type")
    if kind is not None:
        assert isinstance(value, _TYPES[kind]), f"{where}: {value!r} is not {kind}"
        if kind in ("integer", "number"):
            assert not isinstance(value, bool), where
    if "properties" in schema:
        documented = set(schema["properties"])
        assert set(value) == documented, f"{where}: keys {set(value) ^ documented} differ"
        for name in schema.get("required", []):
            assert name in value, f"{where}.{name} is required"
        for name, item in value.items():
            assert_matches(spec, schema["properties"][name], item, f"{where}.{name}")
    elif isinstance(schema.get("additionalProperties"), dict) and schema["additionalProperties"]:
        for name, item in value.items():
            assert_matches(spec, schema["additionalProperties"], item, f"{where}.{name}")
    if kind == "array" and "items" in schema:
        for index, item in enumerate(value):
            assert_matches(spec, schema["items"], item, f"{where}[{index}]")


@pytest.fixture
def arranged(repo: SqlRepository, tenant: Client) -> dict[str, str]:
    template = make_template(repo, tenant, "TPLdocs1", custom_attributes={"sku": "D-1"})
    return {
        "template": template.identifier,
        "user": make_user(repo, tenant, first_name="Ada", locale="en").identifier,
        "source": make_user(repo, tenant).identifier,
    }


def test_real_responses_match_the_documented_schemas(
    api: ApiClient, spec: dict[str, Any], app: Flask, arranged: dict[str, str]
) -> None:
    ids = dict(arranged)

    def draft_body() -> dict[str, Any]:
        return {
            "templateIdentifier": ids["template"],
            "userIdentifier": ids["user"],
            "apiDefaultValues": {"Name": "Ada"},
        }

    calls: list[tuple[str, str, str, dict[str, Any]]] = [
        ("GET", "/api-ext/client", "/api-ext/client", {}),
        ("POST", "/api-ext/user", "/api-ext/user", {"json": {"firstName": "Grace"}}),
        ("GET", "/api-ext/user/{identifier}", "/api-ext/user/{user}", {}),
        ("PUT", "/api-ext/user/{identifier}", "/api-ext/user/{user}", {"json": {"title": "Dr"}}),
        ("POST", "/api-ext/draft", "/api-ext/draft", {"json": draft_body()}),
        ("GET", "/api-ext/draft", "/api-ext/draft", {}),
        ("GET", "/api-ext/draft/{draft_hash}", "/api-ext/draft/{draft}", {}),
        (
            "PUT",
            "/api-ext/draft/{draft_hash}",
            "/api-ext/draft/{draft}",
            {"json": {"customAttributes": {"a": 1}}},
        ),
        ("POST", "/api-ext/draft/{draft_hash}/replicate", "/api-ext/draft/{draft}/replicate", {}),
        ("GET", "/api-ext/draft/{draft_hash}/replicate", "/api-ext/draft/{draft}/replicate", {}),
        ("POST", "/api-ext/draft/claim", "/api-ext/draft/claim", {}),
        ("GET", "/api-ext/template", "/api-ext/template", {}),
        ("GET", "/api-ext/template", "/api-ext/template?page=1&per_page=5", {}),
        ("GET", "/api-ext/template/{identifier}", "/api-ext/template/{template}", {}),
        (
            "POST",
            "/api-ext/user/{identifier}/merge",
            "/api-ext/user/{user}/merge",
            {"json": {"source_user_identifier": ids["source"]}},
        ),
        ("DELETE", "/api-ext/draft/{draft_hash}", "/api-ext/draft/{draft}", {}),
        ("DELETE", "/api-ext/user/{identifier}", "/api-ext/user/{user}", {}),
    ]
    covered = set()
    for method, documented_path, target, kwargs in calls:
        if documented_path == "/api-ext/draft/claim":
            kwargs = {"json": {"user_identifier": ids["user"], "drafts": [ids["draft"], "nope"]}}
        response = api.request(method, target.format(**ids), **kwargs)
        where = f"{method} {documented_path}"
        operation = spec["paths"][documented_path][method.lower()]
        success = [code for code in operation["responses"] if code.startswith("2")]
        assert success == [str(response.status_code)], (where, response.get_data()[:300])
        documented = operation["responses"][success[0]]
        if response.status_code == 204:
            assert response.get_data() == b"" and "content" not in documented, where
        else:
            schema = documented["content"]["application/json"]["schema"]
            assert_matches(spec, schema, response.get_json(), where)
        if documented_path == "/api-ext/draft" and method == "POST":
            ids["draft"] = response.get_json()["data"]["draftHash"]
        covered.add((method, documented_path))
    # pdf-processing queues background jobs; its own tests check its answers.
    expected = {(m, p) for m, p in api_rules(app) if not p.startswith("/api-ext/pdf-processing")}
    assert covered == expected


def test_resource_keys_equal_the_output_schemas(
    api: ApiClient, spec: dict[str, Any], arranged: dict[str, str]
) -> None:
    """The direct check: keys of each resource == properties of its documented schema."""
    draft = api.post(
        "/api-ext/draft",
        json={"templateIdentifier": arranged["template"], "userIdentifier": arranged["user"]},
    ).get_json()["data"]
    resources = {
        "UserOut": api.get(f"/api-ext/user/{arranged['user']}").get_json()["data"],
        "DraftOut": draft,
        "TemplateOut": api.get(f"/api-ext/template/{arranged['template']}").get_json()["data"],
        "ClientOut": api.get("/api-ext/client").get_json()["data"],
        "MetaOut": api.get("/api-ext/draft").get_json()["meta"],
    }
    for name, resource in resources.items():
        assert set(resource) == set(component(spec, name)["properties"]), name
    assert set(resources["UserOut"]["profile"]) == set(component(spec, "ProfileOut")["properties"])
    assert set(draft["variant"]) == set(component(spec, "VariantOut")["properties"])
    assert set(draft["personalizations"]) == set(
        component(spec, "PersonalizationsOut")["properties"]
    )


def test_served_document_is_the_built_one(app: Flask, spec: dict[str, Any]) -> None:
    response = app.test_client().get("/openapi.json")
    assert response.status_code == 200
    assert response.status_code == 200
    assert response.get_json() == spec
