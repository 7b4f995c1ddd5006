"""The OpenAPI reference is generated from what the app runs: checked against the url_map.

Every route of the app is documented with each of its methods and nothing else is; every
operation lists the statuses it really answers; the schemas in the document are converted
from the very marshmallow classes the views validate and serialise with; and real responses
have exactly the documented shape.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

import pytest
from api_support import DRAFT_NEVER_NULL, TEMPLATE_NEVER_NULL, make_template, make_user
from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from conftest import ApiClient
from flask import Flask
from marshmallow import Schema, ValidationError
from vdata_support import card_draft, card_template

from pps.api import schemas
from pps.api.blueprint import ErrorOut
from pps.api.parser import MAX_DEPTH
from pps.platform.models import Client
from pps.platform.repository.sql import SqlRepository
from pps.processing import schemas as processing_schemas
from pps.web.openapi import build_spec

OPERATION_KEYS = {"get", "put", "post", "delete", "patch"}


@pytest.fixture
def spec(app: Flask) -> dict[str, Any]:
    with app.app_context():
        return build_spec(app)


def openapi_path(rule: str) -> str:
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule)


def routes(app: Flask, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(METHOD, OpenAPI path) of every route whose endpoint starts with ``prefix``."""
    for rule in app.url_map.iter_rules():
        if rule.endpoint.endswith("static") or not rule.endpoint.startswith(prefix):
            continue
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            yield method, openapi_path(rule.rule)


def api_rules(app: Flask) -> Iterator[tuple[str, str]]:
    return routes(app, "api.")


def operations(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method in OPERATION_KEYS:
                yield method.upper(), path, operation


def resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        schema = spec["components"]["schemas"][name]
    return schema


def component(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return spec["components"]["schemas"][name]  # type: ignore[no-any-return]


def test_every_route_and_nothing_else_is_documented(app: Flask, spec: dict[str, Any]) -> None:
    routed = set(routes(app))
    documented = {(method, path) for method, path, _ in operations(spec)}
    assert len(routed) >= 30
    assert routed - documented == set(), "routes missing from /openapi.json"
    assert documented - routed == set(), "documented operations without a route"
    for method, path, operation in operations(spec):
        assert operation["summary"], f"{method} {path}"
        assert operation["tags"] and set(operation["tags"]) <= {t["name"] for t in spec["tags"]}


def test_api_operations_are_bearer_and_list_their_statuses(
    app: Flask, spec: dict[str, Any]
) -> None:
    rules = list(api_rules(app))
    assert len(rules) >= 18
    for method, path in rules:
        operation = spec["paths"][path][method.lower()]
        where = f"{method} {path}"
        assert set(operation["tags"]) <= {
            "Client",
            "User",
            "Draft",
            "Template",
            "Files",
            "Webhooks",
            "Variant",
            "UserGroup",
            "File",
            "Review",
            "Not offered",  # issue 13: the clients' calls pps answers with 403
        }
        assert operation["security"] == [{"bearer": []}], where
        statuses = set(operation["responses"])
        assert {"401", "406", "503"} <= statuses, where
        if "requestBody" in operation:
            assert {"400", "413", "415", "422"} <= statuses, where
        not_offered = operation["tags"] == ["Not offered"]  # 403 before any lookup
        if (
            re.search(r"\{(identifier|draft_hash|processing_id|review_id)\}", path)
            and not not_offered
        ):
            assert "404" in statuses, where
        if path in ("/api-ext/draft", "/api-ext/template") and method == "GET":
            assert "422" in statuses, where  # page arguments
        for status, response in operation["responses"].items():
            if status.startswith(("4", "5")):
                content = response["content"]["application/json"]["schema"]
                assert content == {"$ref": "#/components/schemas/ErrorOut"}, (where, status)
    assert "405" in spec["paths"]["/api-ext/draft/claim"]["post"]["responses"]


def test_pages_and_file_endpoints_list_their_statuses(spec: dict[str, Any]) -> None:
    auth = spec["paths"]["/auth"]["get"]
    assert auth["security"] == [{"jwt": []}]
    assert {"302", "400", "401", "405", "503"} <= set(auth["responses"])
    for status in ("400", "401", "405", "503"):
        assert set(auth["responses"][status]["content"]) == {"text/html"}, status
    for path in ("/editor/{draft_hash}/{step}", "/editor/{draft_hash}"):
        editor = spec["paths"][path]["get"]
        assert {"200", "400", "401", "404"} <= set(editor["responses"]), path
        for status in ("200", "400", "401", "404"):
            assert set(editor["responses"][status]["content"]) == {"text/html"}, (path, status)
    step = next(p for p in spec["paths"]["/editor/{draft_hash}/{step}"]["parameters"])
    assert step["in"] == "path"
    for path in (
        "/api-ext/files/draft/{draft_hash}/{kind}",
        "/api-ext/files/template/{template_id}/page-preview-thumb",
    ):
        files = spec["paths"][path]["get"]
        assert files["security"] == [{"jwt": []}]
        assert {"302", "401", "403", "404", "422", "503"} <= set(files["responses"]), path
        assert "Location" in files["responses"]["302"]["headers"]
        assert {p["name"] for p in files["parameters"]} >= {"jwt", "width", "height", "page"}


def test_the_login_reference_names_what_a_login_needs_and_what_it_sets(
    spec: dict[str, Any],
) -> None:
    """A shop developer signs what ``/auth``'s reference lists: a token without ``iat`` and
    ``exp`` is refused (``check_login_age``), an editor redirect on pps's origin gets a
    handoff code instead of a cookie, and the cookie is ``SameSite=None`` under https."""
    text = spec["paths"]["/auth"]["get"]["description"]
    for claim in ("client", "user", "jti", "iat", "exp", "redirect", "nbf", "urlPath"):
        assert f"`{claim}`" in text, claim
    assert "PPS_NONCE_TTL" in text
    assert "`handoff=" in text
    assert "SameSite=None; Secure; Partitioned" in text


def _converted(cls: type[Schema]) -> dict[str, Any]:
    """``cls`` as apispec's marshmallow plugin writes it, in a spec of its own."""
    fresh = APISpec("t", "1", "3.0.3", plugins=[MarshmallowPlugin()])
    fresh.components.schema(cls.__name__, schema=cls)
    return fresh.to_dict()["components"]["schemas"][cls.__name__]  # type: ignore[no-any-return]


def test_schemas_come_from_the_classes_the_views_use(spec: dict[str, Any]) -> None:
    classes: list[type[Schema]] = [
        cls
        for module in (schemas, processing_schemas)
        for cls in vars(module).values()
        if isinstance(cls, type) and issubclass(cls, Schema) and cls.__module__ == module.__name__
    ]
    classes.append(ErrorOut)
    served = spec["components"]["schemas"]
    for cls in classes:
        if cls.__name__ in served:
            assert served[cls.__name__] == _converted(cls), cls.__name__
    bodies = {
        ("post", "/api-ext/user"): "UserInput",
        ("put", "/api-ext/user/{identifier}"): "UserInput",
        ("post", "/api-ext/user/{identifier}/merge"): "MergeInput",
        ("post", "/api-ext/draft"): "DraftCreateInput",
        ("put", "/api-ext/draft/{draft_hash}"): "DraftUpdateInput",
        ("post", "/api-ext/draft/claim"): "DraftClaimInput",
        ("post", "/api-ext/pdf-processing"): "ProcessingCreateInput",
    }
    for (method, path), name in bodies.items():
        content = spec["paths"][path][method]["requestBody"]["content"]
        assert content["application/json"]["schema"] == {"$ref": f"#/components/schemas/{name}"}
        cls = getattr(schemas, name, None) or getattr(processing_schemas, name)
        assert set(component(spec, name)["properties"]) == set(cls().fields)
    responses = {
        ("get", "/api-ext/user/{identifier}"): schemas.UserResponse,
        ("get", "/api-ext/draft"): schemas.DraftList,
        ("get", "/api-ext/template/{identifier}"): schemas.TemplateResponse,
        ("get", "/api-ext/client"): schemas.ClientResponse,
        ("get", "/api-ext/pdf-processing/{processing_id}"): processing_schemas.ProcessingOut,
    }
    for (method, path), cls in responses.items():
        success = spec["paths"][path][method]["responses"]["200"]
        ref = success["content"]["application/json"]["schema"]["$ref"]
        assert ref == f"#/components/schemas/{cls.__name__}"
        assert served[cls.__name__] == _converted(cls)


def test_form_bodies_document_both_array_encodings(spec: dict[str, Any]) -> None:
    for path, name in (("/api-ext/draft/claim", "drafts"), ("/api-ext/pdf-processing", "draftIds")):
        form = spec["paths"][path]["post"]["requestBody"]["content"][
            "application/x-www-form-urlencoded"
        ]
        # repeated keys: drafts=a&drafts=b
        assert form["encoding"][name] == {"style": "form", "explode": True}
        # PHP: drafts[]=a&drafts[]=b
        php = resolve(spec, form["schema"]["allOf"][1])["properties"][f"{name}[]"]
        assert php["type"] == "array"
        # PHP's http_build_query: drafts[0]=a&drafts[1]=b
        assert f"`{name}[0]=a&{name}[1]=b`" in php["description"]
    form = spec["paths"]["/api-ext/draft"]["post"]["requestBody"]["content"][
        "application/x-www-form-urlencoded"
    ]
    assert form["encoding"]["apiDefaultValues"] == {"style": "deepObject", "explode": True}
    # deepObject is one level in OpenAPI: the description says how deep and how lists nest
    described = spec["info"]["description"]
    for spelling in ("`drafts[0]=a&drafts[1]=b`", "`customAttributes[size][w]=10`", "422"):
        assert spelling in described
    assert f"{MAX_DEPTH} levels" in described


def test_the_reference_says_which_text_is_refused(api: ApiClient, spec: dict[str, Any]) -> None:
    """A NUL or a lone surrogate anywhere in a body, even under a key pps ignores, is a 422:
    the reference did not say so, and its schemas admit both."""
    described = spec["info"]["description"]
    assert "NUL character (U+0000)" in described and "lone UTF-16 surrogate" in described
    for body in (b'{"ignored": "a\\u0000b"}', b'{"a\\u0000b": 1}', b'{"title": "\\ud800"}'):
        response = api.post("/api-ext/user", data=body, content_type="application/json")
        assert response.status_code == 422, body
        assert response.get_json()["errors"], body


def test_php_list_spellings_keep_the_rules_of_their_list(
    api: ApiClient, spec: dict[str, Any], arranged: dict[str, str]
) -> None:
    """``user[]=a`` is read as ``user``: its items and bounds are documented as the list's.
    They were ``{"type": "string"}`` whatever the list's items were, so a review's
    ``user[]=`` was documented and is a 422 (an empty identifier)."""
    spellings = 0
    for method, path, operation in operations(spec):
        form = operation.get("requestBody", {}).get("content", {})
        form = form.get("application/x-www-form-urlencoded", {}).get("schema", {})
        if "allOf" not in form:
            continue
        body, php = (resolve(spec, part) for part in form["allOf"])
        assert php.get("additionalProperties", True) is not False, (method, path)
        for spelling, documented in php["properties"].items():
            listed = body["properties"][spelling.removesuffix("[]")]
            for key in ("type", "items", "minItems", "maxItems"):
                assert documented.get(key) == listed.get(key), (method, path, spelling, key)
            spellings += 1
    assert spellings >= 5
    review = component(spec, "ReviewCreateInputPhpLists")["properties"]["user[]"]
    assert review["items"] == {"type": "string", "minLength": 1}
    draft = api.post(
        "/api-ext/draft",
        json={"templateIdentifier": arranged["template"], "userIdentifier": arranged["user"]},
    ).get_json()["data"]["draftHash"]
    refused = api.post("/api-ext/review", data={"draftId": draft, "user[]": ""})
    assert refused.status_code == 422
    assert set(refused.get_json()["errors"]) == {"user.0"}


@pytest.mark.parametrize(
    ("schema", "field"),
    [
        ("ProcessingCreateInput", "stateChangedNotifyUrl"),
        ("ReviewCreateInput", "closeCallbackURL"),
        ("ReviewPdfInput", "notifyCallbackURL"),
        ("WebhookInput", "url"),
    ],
)
def test_url_fields_state_the_address_rules_the_code_applies(
    spec: dict[str, Any], schema: str, field: str
) -> None:
    """Loopback and private addresses are allowed by PPS_NOTIFY_ALLOW_PRIVATE or the
    client's allowed hosts; link-local ones never (pps.platform.ssrf)."""
    text = component(spec, schema)["properties"][field]["description"]
    assert "PPS_NOTIFY_ALLOW_PRIVATE" in text and "allow-host" in text, text
    assert re.search(r"link-local[^.]*always", text), text


def _required_fields(spec: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    """The required properties of a body schema (a form's ``allOf`` included)."""
    schema = resolve(spec, schema)
    names = set(schema.get("required", []))
    for part in schema.get("allOf", []):
        names |= _required_fields(spec, part)
    return names


def test_a_body_with_required_fields_is_a_required_body(
    api: ApiClient, spec: dict[str, Any], arranged: dict[str, str]
) -> None:
    """A request without a body is a 422 naming the missing fields wherever the body has
    required ones (``POST /api-ext/user/{id}/merge``, ``/review/{id}/add-user``, ``PUT
    .../variable-data``, ``POST /api-ext/file``...): the reference says so with
    ``requestBody.required``. Left ``false``, a client reading it sent no body and got the
    422. Bodies without required fields stay optional (an empty ``POST /api-ext/user``)."""
    bodies = 0
    for method, path, operation in operations(spec):
        body = operation.get("requestBody")
        if body is None:
            continue
        required = set().union(
            *(_required_fields(spec, media["schema"]) for media in body["content"].values())
        )
        assert body.get("required", False) is bool(required), (method, path, required)
        bodies += 1
    assert bodies >= 20
    assert spec["paths"]["/api-ext/user"]["post"]["requestBody"]["required"] is False
    target = f"/api-ext/user/{arranged['user']}/merge"
    assert spec["paths"]["/api-ext/user/{identifier}/merge"]["post"]["requestBody"]["required"]
    response = api.post(target)
    assert response.status_code == 422
    assert set(response.get_json()["errors"]) == {"sourceUserIdentifier"}


def test_variant_version_strings_are_documented_as_read(spec: dict[str, Any]) -> None:
    """The pattern of ``version`` as a string admits exactly the strings pps reads as a
    variant version: ``"0"`` and ``"9999999999"`` were documented and are 422s."""
    field = schemas.DraftCreateInput().fields["version"]

    def read(text: str) -> bool:
        try:
            field.deserialize(text)
        except ValidationError:
            return False
        return True

    texts = ["0", "00", "1", "01", "0000000001", "00000000001", "9", "10", "99", "100"]
    texts += ["999999999", "0999999999", "1000000000", "1999999999", "2000000000"]
    texts += ["2147483639", "2147483640", "2147483646", "2147483647", "2147483648"]
    texts += ["2147483650", "2147484000", "2150000000", "2200000000", "3000000000"]
    texts += ["9999999999", "10000000000", "-1", "+1", "1.0", " 1", "", "\u0661"]
    texts += [str(n) for n in range(0, 3000, 7)]
    for name in ("DraftCreateInput", "DraftUpdateInput"):
        (text_schema,) = [
            branch
            for branch in component(spec, name)["properties"]["version"]["oneOf"]
            if branch["type"] == "string"
        ]
        pattern = re.compile(text_schema["pattern"])
        for text in texts:
            assert bool(pattern.search(text)) is read(text), (name, text)


def test_tags_and_security_scheme(spec: dict[str, Any]) -> None:
    tags = {tag["name"] for tag in spec["tags"]}
    assert {"User", "Draft", "Template", "Client"} <= tags
    used = {tag for _, _, op in operations(spec) for tag in op["tags"]}
    assert tags == used
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
    if "anyOf" in schema:  # apispec's nullable nested object: {nullable object} or a $ref
        branches = [resolve(spec, branch) for branch in schema["anyOf"]]
        if value is None:
            assert any(b.get("nullable") for b in branches), f"{where} is null, not nullable"
            return
        branches = [b for b in branches if "properties" in b] or branches
        assert_matches(spec, branches[0], value, where)
        return
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
    # Variable data is checked against the template: a draft on a template that renders.
    repo = app.extensions["pps"].repository
    tenant = repo.find_client_by_api_key(api.api_key)
    ids["card"] = card_draft(repo, tenant, card_template(repo, tenant)).draft_hash

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
        ("GET", "/api-ext/variant", "/api-ext/variant?page=1&per_page=50", {}),
        ("GET", "/api-ext/theme", "/api-ext/theme", {}),
        ("POST", "/api-ext/user-group", "/api-ext/user-group", {}),
        ("GET", "/api-ext/user-group/{identifier}", "/api-ext/user-group/{group}", {}),
        (
            "POST",
            "/api-ext/user/{identifier}/merge",
            "/api-ext/user/{user}/merge",
            {"json": {"source_user_identifier": ids["source"]}},
        ),
        (
            "POST",
            "/api-ext/file",
            "/api-ext/file",
            {
                "data": {"file": (io.BytesIO(b"Name\nAda\n"), "names.csv")},
                "content_type": "multipart/form-data",
            },
        ),
        ("DELETE", "/api-ext/file/{identifier}", "/api-ext/file/{file}", {}),
        (
            "POST",
            "/api-ext/draft/{draft_hash}/variable-data",
            "/api-ext/draft/{card}/variable-data",
            {
                "data": {
                    "file": (io.BytesIO(b"Name\nAda\nGrace\n"), "names.csv"),
                    "columnMapping": '{"name": 0}',
                },
                "content_type": "multipart/form-data",
            },
        ),
        (
            "PUT",
            "/api-ext/draft/{draft_hash}/variable-data",
            "/api-ext/draft/{card}/variable-data",
            {"json": {"data": {"1": {"email": "grace@example.org"}}}},
        ),
        (
            "GET",
            "/api-ext/draft/{draft_hash}/variable-data",
            "/api-ext/draft/{card}/variable-data?limit=1&offset=1",
            {},
        ),
        (
            "GET",
            "/api-ext/draft/{draft_hash}/{usage}/page-info",
            "/api-ext/draft/{card}/print/page-info?row=2&unit=pt",
            {},
        ),
        ("POST", "/api-ext/review", "/api-ext/review", {}),
        (
            "POST",
            "/api-ext/review/{review_id}/add-user",
            "/api-ext/review/{review}/add-user",
            {"json": {"userIdentifier": ids["user"]}},
        ),
        (
            "POST",
            "/api-ext/review/{review_id}/delete-user",
            "/api-ext/review/{review}/delete-user",
            {"json": {"userIdentifier": ids["user"]}},
        ),
        (
            "POST",
            "/api-ext/review/{review_id}/close-review",
            "/api-ext/review/{review}/close-review",
            {},
        ),
        ("DELETE", "/api-ext/draft/{draft_hash}", "/api-ext/draft/{draft}", {}),
        ("DELETE", "/api-ext/user/{identifier}", "/api-ext/user/{user}", {}),
        (
            "POST",
            "/api-ext/webhook",
            "/api-ext/webhook",
            {"json": {"event": "review.closed", "url": "http://127.0.0.1:9/hook"}},
        ),
        (  # the same subscription again: the existing webhook, 200
            "POST",
            "/api-ext/webhook",
            "/api-ext/webhook",
            {"json": {"event": "review.closed", "url": "http://127.0.0.1:9/hook"}},
        ),
        ("GET", "/api-ext/webhook", "/api-ext/webhook", {}),
        ("GET", "/api-ext/webhook/{identifier}", "/api-ext/webhook/{webhook}", {}),
        ("DELETE", "/api-ext/webhook/{identifier}", "/api-ext/webhook/{webhook}", {}),
    ]
    covered = set()
    answered: dict[tuple[str, str], set[str]] = {}
    for method, documented_path, target, kwargs in calls:
        if documented_path == "/api-ext/draft/claim":
            kwargs = {"json": {"user_identifier": ids["user"], "drafts": [ids["draft"], "nope"]}}
        if documented_path == "/api-ext/review":
            kwargs = {"json": {"draftId": ids["draft"], "user": [], "closeCallbackURL": ""}}
        response = api.request(method, target.format(**ids), **kwargs)
        where = f"{method} {documented_path}"
        operation = spec["paths"][documented_path][method.lower()]
        success = sorted(code for code in operation["responses"] if code.startswith("2"))
        status = str(response.status_code)
        assert status in success, (where, response.get_data()[:300])
        answered.setdefault((method, documented_path), set()).add(status)
        documented = operation["responses"][status]
        if response.status_code == 204:
            assert response.get_data() == b"" and "content" not in documented, where
        else:
            schema = documented["content"]["application/json"]["schema"]
            assert_matches(spec, schema, response.get_json(), where)
        if documented_path == "/api-ext/draft" and method == "POST":
            ids["draft"] = response.get_json()["data"]["draftHash"]
        if documented_path == "/api-ext/file" and method == "POST":
            ids["file"] = response.get_json()["identifier"]
        if documented_path == "/api-ext/webhook" and method == "POST":
            ids["webhook"] = response.get_json()["data"]["identifier"]
        if documented_path == "/api-ext/user-group" and method == "POST":
            ids["group"] = response.get_json()["data"]["identifier"]
        if documented_path == "/api-ext/review":
            ids["review"] = response.get_json()["data"]["reviewId"]
        covered.add((method, documented_path))
    # pdf-processing queues background jobs, create-review-pdf renders the draft (this test's
    # template has no artwork to render) and upload needs a real PDF and template; their own
    # tests check their answers (test_processing.py, test_reviews_api.py, test_preflight.py).
    # The calls not offered have no success response; tests/test_not_offered.py sends each.
    expected = {
        (m, p)
        for m, p in api_rules(app)
        if not p.startswith("/api-ext/pdf-processing")
        and not p.endswith(("/create-review-pdf", "/upload"))
        and spec["paths"][p][m.lower()]["tags"] != ["Not offered"]
    }
    assert covered == expected
    # Every success status documented was answered by one of the calls above.
    for (method, path), statuses in answered.items():
        responses = spec["paths"][path][method.lower()]["responses"]
        assert statuses == {code for code in responses if code.startswith("2")}, (method, path)


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


def test_variable_data_file_identifier_is_documented_as_validated(spec: dict[str, Any]) -> None:
    """The JSON body of ``POST .../variable-data`` names a required upload by identifier: the
    reference says it is not empty (``minLength: 1``), from the schema that refuses ``""``."""
    operation = spec["paths"]["/api-ext/draft/{draft_hash}/variable-data"]["post"]
    body = resolve(spec, operation["requestBody"]["content"]["application/json"]["schema"])
    assert "file" in body["required"]
    assert body["properties"]["file"]["type"] == "string"
    assert body["properties"]["file"]["minLength"] == 1


@pytest.mark.parametrize(
    ("schema", "field", "empty_means_none"),
    [
        ("ProcessingCreateInput", "stateChangedNotifyUrl", True),
        ("ReviewCreateInput", "closeCallbackURL", True),
        ("ReviewPdfInput", "notifyCallbackURL", True),
        ("WebhookInput", "url", False),
    ],
)
def test_url_fields_are_documented_as_uris(
    spec: dict[str, Any], schema: str, field: str, empty_means_none: bool
) -> None:
    """pps calls these URLs (pps.platform.ssrf.parse_target: absolute http or https with a
    host): ``format: uri``. Where ``""`` is read as no URL (``... or None`` in the views), the
    reference says so beside it, as for a user's email."""
    prop = component(spec, schema)["properties"][field]
    assert prop["type"] in ("string", ["string", "null"])
    if empty_means_none:
        assert prop["anyOf"] == [{"format": "uri"}, {"enum": [""]}], prop
    else:
        assert prop["format"] == "uri", prop
