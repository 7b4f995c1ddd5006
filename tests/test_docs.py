"""The API reference (/openapi.json, Swagger UI at /docs with local assets, and /), and the
markdown documentation: its links and its JSON examples."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from pps.web.openapi import build_spec


def test_openapi_document(app: Flask, client: FlaskClient) -> None:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    assert response.is_json
    spec = response.get_json()

    assert spec["openapi"].startswith("3.")
    tags = {tag["name"] for tag in spec["tags"]}
    assert {"User", "Draft", "Template", "Files", "Auth"} <= tags
    used = {
        tag
        for path in spec["paths"].values()
        for key, op in path.items()
        if key != "parameters"  # path-level parameters, beside the operations
        for tag in op["tags"]
    }
    assert {"Files", "Auth", "Docs"} <= used

    schemes = spec["components"]["securitySchemes"]
    assert schemes["bearer"] == {**schemes["bearer"], "type": "http", "scheme": "bearer"}

    documented = set(spec["paths"])
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api-ext"):
            path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
            assert path in documented, f"{rule.rule} is not in /openapi.json"

    files = spec["paths"]["/api-ext/files/draft/{draft_hash}/{kind}"]["get"]
    assert files["security"] == [{"jwt": []}]
    assert "302" in files["responses"]
    assert spec["paths"]["/auth"]["get"]["tags"] == ["Auth"]


def test_openapi_document_is_built_once_per_app(app: Flask, client: FlaskClient) -> None:
    first = client.get("/openapi.json").get_json()
    cached = app.extensions["pps.openapi_spec"]
    assert client.get("/openapi.json").get_json() == first
    assert app.extensions["pps.openapi_spec"] is cached
    with app.app_context():
        assert build_spec(app)["paths"].keys() == first["paths"].keys()


def test_docs_page_runs_on_local_assets_under_a_strict_csp(client: FlaskClient) -> None:
    response = client.get("/docs")
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    html = response.get_data(as_text=True)

    assert "http://" not in html and "https://" not in html  # no CDN, nothing external
    assert "<script>" not in html  # only <script src=...>: no inline code
    csp = response.headers["Content-Security-Policy"]
    script_src = re.search(r"script-src ([^;]*)", csp)
    assert script_src is not None and script_src.group(1).strip() == "'self'"
    assert "frame-ancestors 'none'" in csp

    scripts = re.findall(r'<script src="([^"]+)"', html)
    styles = re.findall(r'<link rel="stylesheet" href="([^"]+)"', html)
    assert any(s.endswith("swagger-ui-bundle.js") for s in scripts)
    assert any(s.endswith("swagger-ui-standalone-preset.js") for s in scripts)
    assert any(s.endswith("swagger-ui.css") for s in styles)
    for asset in scripts + styles:
        with client.get(asset) as served:
            assert served.status_code == 200, asset
            assert len(served.data) > 0
            if asset.endswith(".js"):
                assert "javascript" in (served.mimetype or "")
            else:
                assert served.mimetype == "text/css"

    init = next(s for s in scripts if "swagger" not in s)
    with client.get(init) as served:
        script = served.get_data(as_text=True)
    assert "SwaggerUIBundle(" in script
    assert "validatorUrl: null" in script
    assert 'data-spec-url="/openapi.json"' in html


def test_only_the_bundles_assets_are_served(client: FlaskClient) -> None:
    assert client.get("/docs/assets/index.html").status_code == 404
    assert client.get("/docs/assets/..%2F__init__.py").status_code == 404
    assert client.get("/docs/assets/swagger-ui.js.map").status_code == 404


def test_home_links_the_reference(client: FlaskClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert 'href="/docs"' in html
    assert 'href="/openapi.json"' in html
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]


# -- the markdown documentation ----------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted(
    [
        ROOT / "README.md",
        *(p for d in ("docs", "examples", "compat", "bench") for p in ROOT.glob(f"{d}/**/*.md")),
    ],
    key=str,
)


def fenced_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_json_examples_parse(doc: Path) -> None:
    """A ```json block is what a developer copies into a file: it must be JSON as it stands
    (a bare ``"fields": {...}`` member was not)."""
    for block in fenced_blocks(doc.read_text(encoding="utf-8"), "json"):
        try:
            json.loads(block)
        except ValueError as exc:
            pytest.fail(f"{doc.relative_to(ROOT)}: a json example does not parse ({exc}):\n{block}")


def anchors(doc: Path) -> set[str]:
    """The anchors GitHub makes of a document's headings (code blocks left out)."""
    text = re.sub(r"^```.*?^```", "", doc.read_text(encoding="utf-8"), flags=re.M | re.S)
    headings = re.findall(r"^#+\s+(.*?)\s*$", text, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_and_anchors_exist(doc: Path) -> None:
    """Every relative link of the README and docs/ names a file of the checkout, and every
    ``#anchor`` a heading of its document."""
    text = re.sub(r"^```.*?^```", "", doc.read_text(encoding="utf-8"), flags=re.M | re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # an external URL
        path, _, anchor = target.partition("#")
        linked = (doc.parent / path).resolve() if path else doc
        assert linked.exists(), f"{doc.relative_to(ROOT)}: {target} does not exist"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(linked), f"{doc.relative_to(ROOT)}: no heading for {target}"
