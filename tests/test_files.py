"""File URLs: /api-ext/files/* (JWT) redirect to short-lived /files/<link>/<name> links."""

from __future__ import annotations

import copy
import io
import re
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import api_support
import pytest
from conftest import ApiClient
from flask import Flask
from flask.testing import FlaskClient
from joserfc import jwt
from joserfc.jwk import OctKey
from joserfc.jws import JWSRegistry
from PIL import Image
from pypdf import PdfReader

import pps.files.rendering
from pps.files.keys import draft_file_key
from pps.platform.models import Client, Draft, Template, User
from pps.platform.repository.sql import SqlRepository

#: A two-page template: a DataKey on the front, fixed text on the back. 100 x 50 mm.
SPEC: dict[str, Any] = {
    "name": "Poster",
    "size": {"width": 100, "height": 50},
    "bleed": 2,
    "pages": [
        {
            "elements": [
                {
                    "type": "text",
                    "dataKey": "title",
                    "box": {"x": 5, "y": 5, "width": 90, "height": 20},
                    "size": 14,
                    "maxLength": 40,
                    "default": "Your title",
                }
            ]
        },
        {
            "background": {"color": "#ffcc00"},
            "elements": [
                {
                    "type": "text",
                    "text": "Back side",
                    "box": {"x": 5, "y": 5, "width": 90, "height": 20},
                }
            ],
        },
    ],
}
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
def template(repo: SqlRepository, tenant: Client) -> Template:
    return repo.create_template(
        tenant.identifier,
        name="Poster",
        data_keys=["title"],
        custom_attributes={},
        page_count=2,
        spec=SPEC,
        preview_key=f"templates/{tenant.identifier}/poster/preview.png",
    )


def make_draft(
    repo: SqlRepository, tenant: Client, user: User, template: Template, **values: str
) -> Draft:
    return api_support.make_draft(
        repo, tenant, user, template, api_default_values=values, custom_attributes={}
    )


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client, user: User, template: Template) -> Draft:
    return make_draft(repo, tenant, user, template, title="Hello")


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every call of the renderer made through pps.files.rendering, with its kind and options."""
    calls: list[tuple[Any, ...]] = []
    real: Callable[..., Any] = pps.files.rendering.render_file

    def counting(kind: str, *args: Any, **kwargs: Any) -> Any:
        calls.append((kind, kwargs.get("page"), kwargs.get("width"), kwargs.get("height")))
        return real(kind, *args, **kwargs)

    monkeypatch.setattr(pps.files.rendering, "render_file", counting)
    return calls


def put_draft_file(app: Flask, draft: Draft, kind: str, data: bytes) -> str:
    key = draft_file_key(draft.client_identifier, draft.draft_hash, draft.version, kind)
    app.extensions["pps"].storage.put(key, data)
    return key


def file_url(draft: Draft, kind: str = "print") -> str:
    return f"/api-ext/files/draft/{draft.draft_hash}/{kind}"


def fetch(client: FlaskClient, path: str, token: str, **kwargs: Any) -> Any:
    query = {"jwt": token, **kwargs.pop("query", {})}
    return client.get(path, query_string=query, **kwargs)


def follow(client: FlaskClient, location: str, method: str = "GET", **kwargs: Any) -> Any:
    parts = urlsplit(location)
    assert parts.scheme == "http" and parts.netloc == "localhost"
    return client.open(parts.path, method=method, **kwargs)


def download(client: FlaskClient, path: str, token: str, **query: Any) -> bytes:
    """Fetch a file URL and follow its redirect, as a shop's HTTP client does."""
    response = fetch(client, path, token, query=query)
    assert response.status_code == 302, response.get_data(as_text=True)
    with follow(client, response.headers["Location"]) as served:
        assert served.status_code == 200
        return served.data  # type: ignore[no-any-return]


def pdf_text(data: bytes) -> list[str]:
    return [page.extract_text() for page in PdfReader(io.BytesIO(data)).pages]


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def stored_keys(app: Flask, prefix: str) -> list[str]:
    root = app.extensions["pps"].storage.root
    return sorted(
        str(path.relative_to(root)) for path in (root / prefix).rglob("*") if path.is_file()
    )


def assert_json_error(response: Any, status: int) -> str:
    assert response.status_code == status
    assert response.is_json
    message = response.get_json()["message"]
    assert isinstance(message, str) and message
    return message


# -- draft files -------------------------------------------------------------------------


def test_print_file_is_rendered_with_the_drafts_values(
    client: FlaskClient, tenant: Client, draft: Draft
) -> None:
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
        assert served.mimetype == "application/pdf"
        disposition = served.headers["Content-Disposition"]
        assert disposition.startswith("inline")
        assert f"{draft.draft_hash}-print.pdf" in disposition
        assert "no-store" in served.headers["Cache-Control"]
        assert served.headers["Referrer-Policy"] == "no-referrer"
        assert served.headers["X-Content-Type-Options"] == "nosniff"
        pages = pdf_text(served.data)
    assert len(pages) == 2
    assert "Hello" in pages[0] and "Your title" not in pages[0]
    assert "Back side" in pages[1]


def test_saved_values_win_over_api_default_values(
    repo: SqlRepository, client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    repo.update_draft(tenant.identifier, draft.draft_hash, values={"title": "Typed by Ada"})
    token = sign(tenant.api_key, magento_claims(tenant))
    pages = pdf_text(download(client, file_url(draft), token))
    assert "Typed by Ada" in pages[0] and "Hello" not in pages[0]


def test_low_res_file(client: FlaskClient, tenant: Client, draft: Draft) -> None:
    token = sign(tenant.api_key, magento_claims(tenant))
    response = fetch(client, file_url(draft, "low-res"), token)
    assert response.headers["Location"].endswith(f"/{draft.draft_hash}-low-res.pdf")
    with follow(client, response.headers["Location"]) as served:
        assert served.mimetype == "application/pdf"
        reader = PdfReader(io.BytesIO(served.data))
    assert "Hello" in reader.pages[0].extract_text()
    # Trim size, no bleed: 100 x 50 mm.
    assert [round(float(v) * 25.4 / 72) for v in reader.pages[0].mediabox[2:]] == [100, 50]


def test_a_cached_file_is_not_rendered_again(
    app: Flask, client: FlaskClient, tenant: Client, draft: Draft, renders: list[Any]
) -> None:
    token = sign(tenant.api_key, magento_claims(tenant))
    first = download(client, file_url(draft), token)
    key = draft_file_key(tenant.identifier, draft.draft_hash, draft.version, "print")
    path = app.extensions["pps"].storage.stat(key).path
    mtime = path.stat().st_mtime_ns
    second = download(client, file_url(draft), token)
    assert first == second
    assert renders == [("print", 0, None, None)]
    assert path.stat().st_mtime_ns == mtime


def test_a_stored_file_is_served_as_it_is(
    app: Flask, client: FlaskClient, tenant: Client, draft: Draft, renders: list[Any]
) -> None:
    put_draft_file(app, draft, "print", PDF)
    assert download(client, file_url(draft), sign(tenant.api_key, magento_claims(tenant))) == PDF
    assert renders == []


def test_changing_the_draft_through_the_api_makes_new_files(
    app: Flask, client: FlaskClient, api: ApiClient, tenant: Client, draft: Draft
) -> None:
    token = sign(tenant.api_key, magento_claims(tenant))
    old_link = fetch(client, file_url(draft), token).headers["Location"]
    with follow(client, old_link) as served:
        assert "Hello" in pdf_text(served.data)[0]

    updated = api.put(
        f"/api-ext/draft/{draft.draft_hash}", json={"apiDefaultValues": {"title": "Changed"}}
    )
    assert updated.status_code == 200, updated.get_json()

    new_text = pdf_text(download(client, file_url(draft), token))[0]
    assert "Changed" in new_text and "Hello" not in new_text
    image = download(client, file_url(draft, "image"), token, width=120)
    assert png_size(image) == (160, 80)  # the next of the sizes images come in
    keys = stored_keys(app, f"drafts/{tenant.identifier}/{draft.draft_hash}")
    v1, v2 = f"v{draft.version}", f"v{draft.version + 1}"
    assert [key.split("/", 3)[3] for key in keys] == [
        f"{v1}/print.pdf",
        f"{v2}/image-p0-160x80.png",
        f"{v2}/print.pdf",
    ]
    # The link handed out before the change still serves the old file until it expires.
    with follow(client, old_link) as served:
        assert "Hello" in pdf_text(served.data)[0]


def test_file_of_an_older_version_is_not_served(
    app: Flask, client: FlaskClient, repo: SqlRepository, tenant: Client, draft: Draft
) -> None:
    put_draft_file(app, draft, "print", PDF)
    repo.update_draft(tenant.identifier, draft.draft_hash, values={"title": "Changed"})
    data = download(client, file_url(draft), sign(tenant.api_key, magento_claims(tenant)))
    assert data != PDF
    assert "Changed" in pdf_text(data)[0]


@pytest.mark.parametrize(
    ("query", "size"),
    [
        ({}, (591, 295)),  # 150 dpi
        # The size asked for, then its longer side rounded up to the next of IMAGE_STEPS.
        ({"width": 300}, (320, 160)),
        ({"height": 100}, (320, 160)),  # (200, 100)
        ({"width": 300, "height": 100}, (320, 160)),  # fits inside, aspect kept: (200, 100)
        ({"width": 100, "height": 300}, (160, 80)),  # (100, 50)
        ({"width": 4000}, (2048, 1024)),  # the largest step
        ({"width": ""}, (591, 295)),  # an empty option counts as absent
    ],
)
def test_image_size_follows_width_and_height(
    client: FlaskClient, tenant: Client, draft: Draft, query: dict[str, Any], size: tuple[int, int]
) -> None:
    token = sign(tenant.api_key, magento_claims(tenant))
    response = fetch(client, file_url(draft, "image"), token, query=query)
    assert response.status_code == 302
    assert response.headers["Location"].endswith(f"/{draft.draft_hash}-image.png")
    with follow(client, response.headers["Location"]) as served:
        assert served.mimetype == "image/png"
        assert png_size(served.data) == size


def test_image_pages_count_from_one(client: FlaskClient, tenant: Client, draft: Draft) -> None:
    token = sign(tenant.api_key, magento_claims(tenant))
    front = download(client, file_url(draft, "image"), token, width=50)
    assert download(client, file_url(draft, "image"), token, width=50, page=1) == front
    back = download(client, file_url(draft, "image"), token, width=50, page=2)
    with Image.open(io.BytesIO(back)) as image:
        assert image.convert("RGB").getpixel((2, 2)) == (255, 204, 0)  # the yellow background
    assert back != front


@pytest.mark.parametrize(
    ("query", "errors"),
    [
        ({"width": 0}, ["width"]),
        ({"width": 100000}, ["width"]),
        ({"width": "12px"}, ["width"]),
        ({"width": "-5"}, ["width"]),
        ({"width": "1e3"}, ["width"]),
        ({"height": 4001}, ["height"]),
        ({"page": 0}, ["page"]),
        ({"page": 3}, ["page"]),
        ({"page": "first"}, ["page"]),
        ({"width": 0, "height": "x", "page": 9}, ["width", "height", "page"]),
    ],
)
def test_bad_image_options_are_422_per_parameter(
    app: Flask,
    client: FlaskClient,
    tenant: Client,
    draft: Draft,
    renders: list[Any],
    query: dict[str, Any],
    errors: list[str],
) -> None:
    token = sign(tenant.api_key, magento_claims(tenant), jti=uuid.uuid4().hex)
    response = fetch(client, file_url(draft, "image"), token, query=query)
    assert_json_error(response, 422)
    assert sorted(response.get_json()["errors"]) == sorted(errors)
    assert renders == []
    assert stored_keys(app, "drafts") == []
    # Refused before the jti was claimed: the same token still works.
    assert fetch(client, file_url(draft, "image"), token).status_code == 302


def test_page_error_names_the_pages_there_are(
    client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    token = sign(tenant.api_key, magento_claims(tenant))
    response = fetch(client, file_url(draft, "image"), token, query={"page": 3})
    assert response.get_json()["errors"] == {
        "page": ["must be a page of the template (pages 1 to 2)"]
    }


def test_size_options_do_not_apply_to_pdfs(
    client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    token = sign(tenant.api_key, magento_claims(tenant))
    response = fetch(client, file_url(draft), token, query={"width": 100000, "page": 7})
    assert response.status_code == 302


def test_values_that_cannot_be_rendered_are_422_naming_the_datakey(
    repo: SqlRepository,
    client: FlaskClient,
    tenant: Client,
    user: User,
    template: Template,
) -> None:
    draft = make_draft(repo, tenant, user, template, title="x" * 41)
    token = sign(tenant.api_key, magento_claims(tenant), jti=uuid.uuid4().hex)
    for kind in ("print", "low-res", "image"):
        response = fetch(client, file_url(draft, kind), token)
        message = assert_json_error(response, 422)
        assert "title" in message and "40 characters" in message
        assert list(response.get_json()["errors"]) == ["title"]
    repo.update_draft(tenant.identifier, draft.draft_hash, values={"title": "Short"})
    assert fetch(client, file_url(draft), token).status_code == 302  # jti was not used up


def test_a_missing_template_file_is_a_clean_error(
    app: Flask,
    repo: SqlRepository,
    client: FlaskClient,
    tenant: Client,
    user: User,
    caplog: pytest.LogCaptureFixture,
) -> None:
    spec = {**SPEC, "pages": [{"background": {"pdf": "art.pdf", "page": 0}}]}
    broken = repo.create_template(
        tenant.identifier,
        name="Broken",
        data_keys=[],
        custom_attributes={},
        page_count=1,
        spec=spec,
        identifier="Broken1",
    )
    draft = make_draft(repo, tenant, user, broken)
    token = sign(tenant.api_key, magento_claims(tenant))
    response = fetch(client, file_url(draft), token)
    message = assert_json_error(response, 422)
    assert "art.pdf" in message and "missing" in message
    assert list(response.get_json()["errors"]) == ["template"]
    assert "art.pdf" in caplog.text  # the operator hears of it in the log

    preview = f"/api-ext/files/template/{broken.identifier}/page-preview-thumb"
    assert "art.pdf" in assert_json_error(fetch(client, preview, token), 422)
    assert stored_keys(app, "drafts") == []


def test_concurrent_first_requests_render_harmlessly(
    app: Flask, tenant: Client, draft: Draft
) -> None:
    token = sign(tenant.api_key, magento_claims(tenant))
    bodies: list[bytes] = []
    failures: list[BaseException] = []

    def fetch_once() -> None:
        try:
            bodies.append(download(app.test_client(), file_url(draft), token))
        except BaseException as exc:  # reported below; a thread cannot fail the test itself
            failures.append(exc)

    threads = [threading.Thread(target=fetch_once) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(bodies) == 4 and len(set(bodies)) == 1
    assert "Hello" in pdf_text(bodies[0])[0]
    directory = stored_keys(app, f"drafts/{tenant.identifier}/{draft.draft_hash}")
    assert [key.rsplit("/", 1)[1] for key in directory] == ["print.pdf"]  # no temp files left


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


def test_unknown_kind_is_404_json(client: FlaskClient, tenant: Client, draft: Draft) -> None:
    token = sign(tenant.api_key, magento_claims(tenant))
    assert_json_error(fetch(client, file_url(draft, "source"), token), 404)


def test_other_tenants_draft_is_404(
    client: FlaskClient, other_tenant: Client, draft: Draft, renders: list[Any]
) -> None:
    token = sign(other_tenant.api_key, magento_claims(other_tenant))
    assert assert_json_error(fetch(client, file_url(draft), token), 404) == "No such draft."
    assert renders == []


def test_user_claim_must_own_the_draft(
    client: FlaskClient,
    repo: SqlRepository,
    tenant: Client,
    user: User,
    draft: Draft,
    renders: list[Any],
) -> None:
    someone_else = repo.create_user(tenant.identifier, {})
    token = sign(tenant.api_key, magento_claims(tenant, user=someone_else.identifier))
    assert_json_error(fetch(client, file_url(draft), token), 403)
    assert renders == []
    owner = sign(tenant.api_key, magento_claims(tenant, user=user.identifier))
    assert fetch(client, file_url(draft), owner).status_code == 302


def test_url_path_must_match_when_present(
    client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    for_print = sign(tenant.api_key, magento_claims(tenant, urlPath=file_url(draft, "print")))
    message = assert_json_error(fetch(client, file_url(draft, "image"), for_print), 401)
    assert "urlPath" in message
    assert fetch(client, file_url(draft, "print"), for_print).status_code == 302


def test_jti_is_single_use_and_not_burned_by_a_refusal(
    client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    token = sign(tenant.api_key, magento_claims(tenant), jti=uuid.uuid4().hex)
    bad = fetch(client, file_url(draft, "image"), token, query={"width": 0})
    assert_json_error(bad, 422)  # refused: not used up
    assert fetch(client, file_url(draft, "image"), token).status_code == 302
    message = assert_json_error(fetch(client, file_url(draft), token), 401)
    assert "used already" in message


def test_concurrent_uses_of_one_file_token_store_exactly_one_link(
    app: Flask, tenant: Client, draft: Draft
) -> None:
    """The jti is used up and the link stored in one atomic step: of twenty uses at once,
    one gets a link, the others a 401, and no loser leaves a link behind in Redis."""
    store = app.extensions["pps"].ephemeral
    links = f"{store.prefix}pps:link:*"
    token = sign(tenant.api_key, magento_claims(tenant), jti=uuid.uuid4().hex)
    warm_up = sign(tenant.api_key, magento_claims(tenant))  # rendered once, before the race
    assert fetch(app.test_client(), file_url(draft), warm_up).status_code == 302
    before = set(store.client.scan_iter(match=links))
    workers = 20
    barrier = threading.Barrier(workers)
    statuses: list[int] = []

    def use() -> None:
        own_client = app.test_client()
        barrier.wait()
        statuses.append(fetch(own_client, file_url(draft), token).status_code)

    threads = [threading.Thread(target=use) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(statuses) == [302] + [401] * (workers - 1)
    assert len(set(store.client.scan_iter(match=links)) - before) == 1


@pytest.mark.parametrize(
    ("case", "status"),
    [("missing", 401), ("malformed", 400), ("forged", 401), ("expired", 401), ("unknown", 401)],
)
def test_bad_tokens_are_json_errors(
    client: FlaskClient,
    tenant: Client,
    draft: Draft,
    renders: list[Any],
    case: str,
    status: int,
) -> None:
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
    assert renders == []


def test_bearer_key_alone_does_not_open_file_urls(
    client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    response = client.get(file_url(draft), headers={"Authorization": f"Bearer {tenant.api_key}"})
    assert_json_error(response, 401)


# -- template previews -------------------------------------------------------------------


def preview_url(template: Template) -> str:
    return f"/api-ext/files/template/{template.identifier}/page-preview-thumb"


def test_imported_template_preview_thumb(
    app: Flask, client: FlaskClient, tenant: Client, template: Template
) -> None:
    assert template.preview_key is not None
    imported = rendered_png(300, 150)
    app.extensions["pps"].storage.put(template.preview_key, imported)
    path = preview_url(template)
    response = fetch(client, path, sign(tenant.api_key, magento_claims(tenant, urlPath=path)))
    assert response.status_code == 302
    assert response.headers["Location"].endswith(f"/{template.identifier}-page-preview-thumb.png")
    with follow(client, response.headers["Location"]) as served:
        assert served.data == imported
        assert served.mimetype == "image/png"


def rendered_png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 20, 30)).save(out, "PNG")
    return out.getvalue()


def test_imported_preview_is_resized_on_request(
    app: Flask, client: FlaskClient, tenant: Client, template: Template
) -> None:
    assert template.preview_key is not None
    app.extensions["pps"].storage.put(template.preview_key, rendered_png(300, 150))
    token = sign(tenant.api_key, magento_claims(tenant))
    small = download(client, preview_url(template), token, width=60)
    assert png_size(small) == (160, 80)  # (60, 30), rounded up to the next step
    assert png_size(download(client, preview_url(template), token, height=10)) == (160, 80)
    with Image.open(io.BytesIO(small)) as image:
        assert image.getpixel((30, 15)) == (10, 20, 30)
    # The second page is not in the imported picture: it is rendered.
    back = download(client, preview_url(template), token, page=2, width=60)
    with Image.open(io.BytesIO(back)) as image:
        assert image.convert("RGB").getpixel((1, 1)) == (255, 204, 0)


def test_template_preview_is_rendered_from_defaults_when_none_was_imported(
    app: Flask,
    client: FlaskClient,
    repo: SqlRepository,
    tenant: Client,
    renders: list[Any],
) -> None:
    spec = copy.deepcopy({**SPEC, "pages": [SPEC["pages"][0]]})
    # A required DataKey without a default does not keep the catalogue picture from rendering.
    spec["pages"][0]["elements"] = [
        *SPEC["pages"][0]["elements"],
        {
            "type": "text",
            "dataKey": "subtitle",
            "required": True,
            "box": {"x": 5, "y": 30, "width": 90, "height": 10},
        },
    ]
    template = repo.create_template(
        tenant.identifier,
        name="No preview",
        data_keys=["title", "subtitle"],
        custom_attributes={},
        page_count=1,
        spec=spec,
    )
    token = sign(tenant.api_key, magento_claims(tenant))
    response = fetch(client, preview_url(template), token, query={"width": 200})
    assert response.status_code == 302
    assert response.headers["Location"].endswith(f"/{template.identifier}-page-preview-thumb.png")
    with follow(client, response.headers["Location"]) as served:
        assert served.mimetype == "image/png"
        assert png_size(served.data) == (320, 160)  # (200, 100), rounded up to the next step
    assert download(client, preview_url(template), token, width=200) is not None
    assert renders == [("image", 0, 320, None)]  # the second request used the cached file
    keys = stored_keys(app, f"templates/{tenant.identifier}/{template.identifier}/rendered")
    assert len(keys) == 1 and keys[0].rsplit("/", 1)[1].startswith("preview-p0-320x160-")
    assert_json_error(fetch(client, preview_url(template), token, query={"page": 2}), 422)


def test_template_preview_of_another_client_is_404(
    client: FlaskClient, other_tenant: Client, template: Template
) -> None:
    foreign = sign(other_tenant.api_key, magento_claims(other_tenant))
    assert assert_json_error(fetch(client, preview_url(template), foreign), 404) == (
        "No such template."
    )


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


def test_redis_down_is_503_json(
    app: Flask, app_without_redis: Flask, tenant: Client, draft: Draft
) -> None:
    put_draft_file(app, draft, "print", PDF)
    browser = app_without_redis.test_client()
    response = fetch(browser, file_url(draft), sign(tenant.api_key, magento_claims(tenant)))
    assert_json_error(response, 503)
    assert_json_error(browser.get("/files/sometoken/x.pdf"), 503)


# -- one answer shape for every file endpoint ----------------------------------------------

#: Every header of the bodiless 302 of a file link (or login): no Content-Type, and none of
#: the page headers (CSP, X-Frame-Options, nosniff), which govern a body it does not have.
TOKEN_REDIRECT = {"Content-Length", "Location", "Cache-Control", "Referrer-Policy", "X-Request-ID"}


def test_file_link_redirect_has_exactly_the_token_url_headers(
    app: Flask, client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    put_draft_file(app, draft, "print", PDF)
    path = file_url(draft)
    claims = magento_claims(tenant, urlPath=path, user=user.identifier)
    first = fetch(client, path, sign(tenant.api_key, claims, jti=uuid.uuid4().hex))
    second = fetch(client, path, sign(tenant.api_key, claims, jti=uuid.uuid4().hex))
    pattern = rf"http://localhost/files/[A-Za-z0-9_-]+/{draft.draft_hash}-print\.pdf"
    for response in (first, second):
        assert response.status_code == 302
        assert re.fullmatch(pattern, response.headers["Location"]), response.headers
        names = [name for name, _value in response.headers]
        assert sorted(names) == sorted(TOKEN_REDIRECT), names
        assert response.headers["Content-Length"] == "0" and response.data == b""
        assert response.headers["Cache-Control"] == "no-store"
        assert response.headers["Referrer-Policy"] == "no-referrer"
        with follow(client, response.headers["Location"]) as served:
            assert served.status_code == 200 and served.data == PDF
    assert first.headers["Location"] != second.headers["Location"]


def test_a_file_rendered_on_request_uses_a_single_use_token_up(
    client: FlaskClient, tenant: Client, draft: Draft
) -> None:
    path = file_url(draft, "low-res")
    token = sign(tenant.api_key, magento_claims(tenant), jti=uuid.uuid4().hex)
    assert fetch(client, path, token).status_code == 302
    assert "used already" in assert_json_error(fetch(client, path, token), 401)


def every_file_endpoint(draft: Draft, template: Template) -> list[str]:
    kinds = ("print", "low-res", "image")
    return [file_url(draft, kind) for kind in kinds] + [preview_url(template)]


def test_head_on_a_file_endpoint_is_405_and_leaves_the_token_unused(
    app: Flask,
    client: FlaskClient,
    tenant: Client,
    draft: Draft,
    template: Template,
    renders: list[Any],
) -> None:
    """Link scanners probe with HEAD; as on /auth, a probe must not use a token up."""
    for path in every_file_endpoint(draft, template):
        token = sign(tenant.api_key, magento_claims(tenant, urlPath=path), jti=uuid.uuid4().hex)
        probe = client.head(path, query_string={"jwt": token})
        assert probe.status_code == 405, path
        assert probe.headers["Allow"] == "GET, OPTIONS"
        assert sorted(client.options(path).headers["Allow"].split(", ")) == ["GET", "OPTIONS"]
        assert probe.is_json and probe.data == b""  # HEAD: the JSON error's headers only
        assert "Set-Cookie" not in probe.headers
        assert renders == [], "a probe renders nothing"
        assert fetch(client, path, token).status_code == 302, path
        assert fetch(client, path, token).status_code == 401, path  # now it is used up
        renders.clear()
    # Without a token the answer is the same 405: nothing is read before the method.
    assert client.head(file_url(draft)).status_code == 405


def test_head_refusal_is_documented(client: FlaskClient) -> None:
    spec = client.get("/openapi.json").get_json()
    for path, item in spec["paths"].items():
        # Calls not offered (tests/test_not_offered.py) answer 403 without reading the token.
        if path.startswith("/api-ext/files/") and item["get"]["tags"] != ["Not offered"]:
            operation = item["get"]
            assert "405" in operation["responses"], path
            assert "`HEAD` is refused with `405`" in operation["description"], path
