"""File URLs: /api-ext/files/* (JWT) redirect to short-lived /files/<link>/<name> links."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient
from joserfc import jwt
from joserfc.jwk import OctKey
from joserfc.jws import JWSRegistry

from app import create_app
from pps.file_keys import draft_file_key
from pps.models import Client, Draft, Template, User
from pps.repository.sql import SqlRepository

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 8 + b"\n%%EOF\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def sign(key: str, claims: dict[str, Any], *, jti: str | None = None) -> str:
    header: dict[str, Any] = {"alg": "HS256", "typ": "JWT"}
    if jti is not None:
        header["jti"] = jti
    registry = JWSRegistry(algorithms=["HS256"], strict_check_header=False)
    return jwt.encode(header, claims, OctKey.import_key(key), registry=registry)


def magento_claims(client: Client, **extra: Any) -> dict[str, Any]:
    """What the Magento module sends for files: client, iat and exp, nothing else."""
    now = int(time.time())
    return {"client": client.identifier, "iat": now, "exp": now + 300, **extra}


@pytest.fixture
def user(repo: SqlRepository, tenant: Client) -> User:
    return repo.create_user(tenant.identifier, {})


@pytest.fixture
def template(repo: SqlRepository, tenant: Client) -> Template:
    return repo.create_template(
        tenant.identifier,
        name="Poster",
        data_keys=["title"],
        custom_attributes={},
        page_count=1,
        spec={},
        preview_key=f"templates/{tenant.identifier}/poster/preview.png",
    )


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client, user: User, template: Template) -> Draft:
    created = repo.create_draft(
        tenant.identifier,
        user_identifier=user.identifier,
        template_identifier=template.identifier,
        intent="customize",
        api_default_values={"title": "Hello"},
        custom_attributes={},
    )
    assert created is not None
    return created


def put_draft_file(app: Flask, draft: Draft, kind: str, data: bytes) -> str:
    key = draft_file_key(draft.client_identifier, draft.draft_hash, draft.version, kind)
    app.extensions["pps"].storage.put(key, data)
    return key


def file_url(draft: Draft, kind: str = "print") -> str:
    return f"/api-ext/files/draft/{draft.draft_hash}/{kind}"


def fetch(client: FlaskClient, path: str, token: str, **kwargs: Any) -> Any:
    return client.get(path, query_string={"jwt": token}, **kwargs)


def follow(client: FlaskClient, location: str, method: str = "GET", **kwargs: Any) -> Any:
    parts = urlsplit(location)
    assert parts.scheme == "http" and parts.netloc == "localhost"
    return client.open(parts.path, method=method, **kwargs)


def assert_json_error(response: Any, status: int) -> str:
    assert response.status_code == status
    assert response.is_json
    message = response.get_json()["message"]
    assert isinstance(message, str) and message
    return message


# -- draft files -------------------------------------------------------------------------


def test_print_file_redirects_to_a_short_lived_link(
    app: Flask, client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    put_draft_file(app, draft, "print", PDF)
    token = sign(tenant.api_key, magento_claims(tenant))
    # A PDF viewer or PHP stream does not ask for JSON: no 406 here, and no bearer key.
    response = fetch(client, file_url(draft), token, headers={"Accept": "application/pdf"})

    assert response.status_code == 302
    location = response.headers["Location"]
    assert location.startswith("http://localhost/files/")
    assert location.endswith(f"/{draft.draft_hash}-print.pdf")
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Referrer-Policy"] == "no-referrer"

    with follow(client, location) as served:
        assert served.status_code == 200
        assert served.data == PDF
        assert served.mimetype == "application/pdf"
        disposition = served.headers["Content-Disposition"]
        assert disposition.startswith("inline")
        assert f"{draft.draft_hash}-print.pdf" in disposition
        assert "no-store" in served.headers["Cache-Control"]
        assert served.headers["Referrer-Policy"] == "no-referrer"
        assert served.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(
    ("kind", "data", "mimetype", "suffix"),
    [
        ("low-res", PDF[:100], "application/pdf", "low-res.pdf"),
        ("image", PNG, "image/png", "image.png"),
    ],
)
def test_other_draft_file_kinds(
    app: Flask,
    client: FlaskClient,
    tenant: Client,
    draft: Draft,
    kind: str,
    data: bytes,
    mimetype: str,
    suffix: str,
) -> None:
    put_draft_file(app, draft, kind, data)
    response = fetch(client, file_url(draft, kind), sign(tenant.api_key, magento_claims(tenant)))
    assert response.status_code == 302
    assert response.headers["Location"].endswith(f"/{draft.draft_hash}-{suffix}")
    with follow(client, response.headers["Location"]) as served:
        assert served.data == data
        assert served.mimetype == mimetype


def test_head_range_and_reuse_within_ttl(
    app: Flask, client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    put_draft_file(app, draft, "print", PDF)
    location = fetch(client, file_url(draft), sign(tenant.api_key, magento_claims(tenant))).headers[
        "Location"
    ]

    with follow(client, location, method="HEAD") as head:
        assert head.status_code == 200
        assert head.data == b""
        assert int(head.headers["Content-Length"]) == len(PDF)
        assert head.headers["Accept-Ranges"] == "bytes"

    with follow(client, location, headers={"Range": "bytes=9-24"}) as part:
        assert part.status_code == 206
        assert part.data == PDF[9:25]
        assert part.headers["Content-Range"] == f"bytes 9-24/{len(PDF)}"

    for _ in range(2):  # reusable until it expires
        with follow(client, location) as again:
            assert again.status_code == 200
            assert again.data == PDF


def test_not_rendered_yet_is_404_json_with_a_message(
    client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    token = sign(tenant.api_key, magento_claims(tenant))
    message = assert_json_error(fetch(client, file_url(draft), token), 404)
    assert message == "The print file of this draft has not been rendered yet."
    image = assert_json_error(fetch(client, file_url(draft, "image"), token), 404)
    assert "preview image" in image and "not been rendered yet" in image


def test_file_of_an_older_version_is_not_served(
    app: Flask, client: FlaskClient, repo: SqlRepository, tenant: Client, draft: Draft
) -> None:
    put_draft_file(app, draft, "print", PDF)
    repo.update_draft(tenant.identifier, draft.draft_hash, values={"title": "Changed"})
    token = sign(tenant.api_key, magento_claims(tenant))
    assert_json_error(fetch(client, file_url(draft), token), 404)


def test_unknown_kind_is_404_json(client: FlaskClient, tenant: Client, draft: Draft) -> None:
    token = sign(tenant.api_key, magento_claims(tenant))
    assert_json_error(fetch(client, file_url(draft, "source"), token), 404)


def test_other_tenants_draft_is_404(
    app: Flask, client: FlaskClient, other_tenant: Client, draft: Draft
) -> None:
    put_draft_file(app, draft, "print", PDF)
    token = sign(other_tenant.api_key, magento_claims(other_tenant))
    assert assert_json_error(fetch(client, file_url(draft), token), 404) == "No such draft."


def test_user_claim_must_own_the_draft(
    app: Flask, client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    put_draft_file(app, draft, "print", PDF)
    someone_else = repo.create_user(tenant.identifier, {})
    token = sign(tenant.api_key, magento_claims(tenant, user=someone_else.identifier))
    assert_json_error(fetch(client, file_url(draft), token), 403)
    owner = sign(tenant.api_key, magento_claims(tenant, user=user.identifier))
    assert fetch(client, file_url(draft), owner).status_code == 302


def test_url_path_must_match_when_present(
    app: Flask, client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    put_draft_file(app, draft, "print", PDF)
    put_draft_file(app, draft, "image", PNG)
    for_print = sign(tenant.api_key, magento_claims(tenant, urlPath=file_url(draft, "print")))
    message = assert_json_error(fetch(client, file_url(draft, "image"), for_print), 401)
    assert "urlPath" in message
    assert fetch(client, file_url(draft, "print"), for_print).status_code == 302


def test_jti_is_single_use_and_not_burned_by_a_refusal(
    app: Flask, client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    token = sign(tenant.api_key, magento_claims(tenant), jti=uuid.uuid4().hex)
    assert_json_error(fetch(client, file_url(draft), token), 404)  # not rendered: not used up
    put_draft_file(app, draft, "print", PDF)
    assert fetch(client, file_url(draft), token).status_code == 302
    message = assert_json_error(fetch(client, file_url(draft), token), 401)
    assert "used already" in message


@pytest.mark.parametrize(
    ("case", "status"),
    [("missing", 401), ("malformed", 400), ("forged", 401), ("expired", 401), ("unknown", 401)],
)
def test_bad_tokens_are_json_errors(
    app: Flask, client: FlaskClient, tenant: Client, draft: Draft, case: str, status: int
) -> None:
    put_draft_file(app, draft, "print", PDF)
    tokens = {
        "missing": "",
        "malformed": "a.b",
        "forged": sign("y" * 48, magento_claims(tenant)),
        "expired": sign(tenant.api_key, magento_claims(tenant, exp=int(time.time()) - 3600)),
        "unknown": sign(tenant.api_key, {"client": "Nobody12", "iat": int(time.time())}),
    }
    response = fetch(client, file_url(draft), tokens[case])
    assert_json_error(response, status)
    assert "Location" not in response.headers


def test_bearer_key_alone_does_not_open_file_urls(
    app: Flask, client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    put_draft_file(app, draft, "print", PDF)
    response = client.get(file_url(draft), headers={"Authorization": f"Bearer {tenant.api_key}"})
    assert_json_error(response, 401)


# -- template previews -------------------------------------------------------------------


def test_template_preview_thumb(
    app: Flask, client: FlaskClient, tenant: Client, template: Template
) -> None:
    assert template.preview_key is not None
    app.extensions["pps"].storage.put(template.preview_key, PNG)
    path = f"/api-ext/files/template/{template.identifier}/page-preview-thumb"
    response = fetch(client, path, sign(tenant.api_key, magento_claims(tenant, urlPath=path)))
    assert response.status_code == 302
    assert response.headers["Location"].endswith(f"/{template.identifier}-page-preview-thumb.png")
    with follow(client, response.headers["Location"]) as served:
        assert served.data == PNG
        assert served.mimetype == "image/png"


def test_template_preview_missing_or_foreign(
    client: FlaskClient, tenant: Client, other_tenant: Client, template: Template
) -> None:
    path = f"/api-ext/files/template/{template.identifier}/page-preview-thumb"
    message = assert_json_error(
        fetch(client, path, sign(tenant.api_key, magento_claims(tenant))), 404
    )
    assert "no preview" in message
    foreign = sign(other_tenant.api_key, magento_claims(other_tenant))
    assert assert_json_error(fetch(client, path, foreign), 404) == "No such template."


# -- the links themselves ----------------------------------------------------------------


def test_unknown_link_and_wrong_name_are_404_json(
    app: Flask, client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    assert_json_error(client.get("/files/nonexistent/whatever.pdf"), 404)
    put_draft_file(app, draft, "print", PDF)
    location = fetch(client, file_url(draft), sign(tenant.api_key, magento_claims(tenant))).headers[
        "Location"
    ]
    renamed = location.rsplit("/", 1)[0] + "/other.pdf"
    assert_json_error(follow(client, renamed), 404)


class TestExpiry:
    @pytest.fixture
    def app_config(self, app_config: dict[str, Any]) -> dict[str, Any]:
        return {**app_config, "file_link_ttl": 1}

    def test_link_expires(
        self, app: Flask, client: FlaskClient, tenant: Client, draft: Draft
    ) -> None:
        put_draft_file(app, draft, "print", PDF)
        token = sign(tenant.api_key, magento_claims(tenant))
        location = fetch(client, file_url(draft), token).headers["Location"]
        with follow(client, location) as served:
            assert served.status_code == 200
        time.sleep(1.5)
        message = assert_json_error(follow(client, location), 404)
        assert "expired" in message


class TestXAccelRedirect:
    @pytest.fixture
    def app_config(self, app_config: dict[str, Any]) -> dict[str, Any]:
        return {**app_config, "x_accel_prefix": "/_pps_files/"}

    def test_nginx_serves_the_bytes(
        self, app: Flask, client: FlaskClient, tenant: Client, draft: Draft
    ) -> None:
        key = put_draft_file(app, draft, "print", PDF)
        location = fetch(
            client, file_url(draft), sign(tenant.api_key, magento_claims(tenant))
        ).headers["Location"]
        response = follow(client, location)
        assert response.status_code == 200
        assert response.data == b""
        assert response.headers["X-Accel-Redirect"] == f"/_pps_files/{key}"
        assert response.mimetype == "application/pdf"
        assert response.headers["Content-Disposition"].startswith("inline")


# -- Redis down --------------------------------------------------------------------------


@pytest.fixture
def app_without_redis(app: Flask, app_config: dict[str, Any]) -> Iterator[Flask]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    broken = create_app({**app_config, "redis_url": f"redis://127.0.0.1:{port}/0"})
    yield broken
    broken.extensions["pps"].close()


def test_redis_down_is_503_json(
    app: Flask, app_without_redis: Flask, tenant: Client, draft: Draft
) -> None:
    put_draft_file(app, draft, "print", PDF)
    browser = app_without_redis.test_client()
    response = fetch(browser, file_url(draft), sign(tenant.api_key, magento_claims(tenant)))
    assert_json_error(response, 503)
    assert_json_error(browser.get("/files/sometoken/x.pdf"), 503)
