"""An upload sent without Content-Length (``Transfer-Encoding: chunked``) over the limit.

Such a body is found too large only as it is read. Its 413 must be pps's, in the shape
each caller reads, as for a Content-Length over the limit: JSON naming
``PPS_MAX_UPLOAD_BYTES`` under ``/api-ext``, JSON in the page's language for the editor's
script, pps's "too large" page for the form without JavaScript; and nothing of the file
is stored. Through the Flask test client (the body's end marked as gunicorn marks it) and a
real gunicorn, since only a real socket carries a chunked body.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from fault_support import PNG, Answer, RedisProcess, Service, multipart_field, serving
from server_support import png_bytes

from pps.platform.repository.sql import upgrade_database
from pps.platform.repository.tables import uploads

pytestmark = pytest.mark.slow

LIMIT = 50_000
#: What the script shows (English page): the limit, as the page's language writes it.
SCRIPT_MESSAGE = "This file cannot be used: files of at most 49 kB can be used"
API_WORDS = f"files of at most {LIMIT} bytes are accepted (PPS_MAX_UPLOAD_BYTES)"
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.fixture(params=["flask", "gunicorn"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Service, Path]]:
    redis_process = RedisProcess(tmp_path)
    database_url = f"sqlite:///{tmp_path / 'pps.sqlite3'}"
    upgrade_database(database_url)
    try:
        with serving(
            request.param,
            tmp_path,
            database_url,
            redis_process,
            config={"max_upload_bytes": LIMIT},
            env={"PPS_MAX_UPLOAD_BYTES": str(LIMIT)},
        ) as service:
            yield service, tmp_path / "instance" / "files"
    finally:
        redis_process.close()


def api_upload(service: Service, image: bytes, *, chunked: bool) -> Answer:
    body = multipart_field("B", "file", image, filename="logo.png") + b"--B--\r\n"
    return service.call(
        "POST",
        "/api-ext/file",
        body=body,
        headers={
            "Authorization": f"Bearer {service.shop.api_key}",
            "Accept": "application/json",
            "Content-Type": "multipart/form-data; boundary=B",
        },
        chunked=chunked,
    )


def stored_uploads(service: Service, files: Path) -> tuple[int, list[Path]]:
    """Upload rows of the shop, and files in the storage's upload folders."""
    engine = sa.create_engine(service.database_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.select(sa.func.count()).where(uploads.c.client_identifier == service.shop.client)
            ).scalar_one()
    finally:
        engine.dispose()
    found = [path for path in (files / "uploads").rglob("*") if path.is_file()]
    return int(rows), found


def assert_json_413(answer: Answer) -> dict[str, object]:
    assert answer.status == 413, (answer.status, answer.body[:300])
    assert (answer.header("Content-Type") or "").startswith("application/json"), answer.body
    assert answer.header("Cache-Control") == "no-store"
    body = json.loads(answer.body)
    assert isinstance(body, dict)
    return body


def test_a_chunked_upload_over_the_limit_gets_pps_413_in_every_shape_and_stores_nothing(
    served: tuple[Service, Path],
) -> None:
    service, files = served
    session = service.editor_login()
    big = PNG + bytes(LIMIT * 4)

    script = assert_json_413(service.upload(session, big, chunked=True))
    assert script == {"message": SCRIPT_MESSAGE, "success": False, "errors": {}}

    boundary = "pps-test-boundary"
    form = (
        multipart_field(boundary, "csrf_token", session.csrf_token.encode())
        + multipart_field(boundary, "upload", b"title")
        + multipart_field(boundary, "image:title", big, filename="logo.png")
        + f"--{boundary}--\r\n".encode()
    )
    page = service.call(
        "POST",
        f"/editor/{service.shop.draft_hash}/upload",
        body=form,
        headers={
            "Cookie": session.cookie,
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Accept": BROWSER_ACCEPT,
        },
        chunked=True,
    )
    assert page.status == 413, page.body[:300]
    assert (page.header("Content-Type") or "").startswith("text/html")
    assert b'data-kind="too_large"' in page.body  # pps's page, not Werkzeug's

    api = assert_json_413(api_upload(service, big, chunked=True))
    assert API_WORDS in str(api["message"]), api
    # The same words as for a Content-Length over the limit.
    sized = assert_json_413(api_upload(service, big, chunked=False))
    assert API_WORDS in str(sized["message"]), sized

    assert stored_uploads(service, files) == (0, [])


def test_a_chunked_upload_within_the_limit_is_stored(served: tuple[Service, Path]) -> None:
    service, files = served
    answer = api_upload(service, png_bytes(), chunked=True)
    assert answer.status == 201, answer.body[:300]
    assert json.loads(answer.body)["identifier"]
    rows, stored = stored_uploads(service, files)
    assert rows == 1 and len(stored) == 1
