"""The whole flow over real HTTP: gunicorn with the deploy config, 2 workers, a real Redis.

Set up the way an operator does (``pps db upgrade``, ``pps client create``, ``pps template
import``), then driven the way shops drive it: the API with a bearer key, login tokens signed
by another JOSE library (joserfc, not the PyJWT pps uses), redirects inspected, never
followed automatically. Runs on SQLite, and on PostgreSQL when PPS_TEST_DATABASE_URL is set.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from conftest import free_port, own_postgres_database, session_cookie_name
from server_support import (
    GUNICORN_CONF,
    ROOT,
    Reply,
    Server,
    follow_handoff,
    local_path,
    png_bytes,
    raw_request,
    server_env,
    shop_token,
    start_gunicorn,
    stop,
)

pytestmark = pytest.mark.slow

DATA_KEYS = ["firstName", "lastName", "email"]
CUSTOM_ATTRIBUTES = {"format": "A6", "paper": "matte"}
SHOP_CALLBACK = "https://shop-a.example/checkout/cart/add?product=42&qty=1"


PREVIEW_PNG = png_bytes()


# -- the server --------------------------------------------------------------------------


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def server(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    redis_server: tuple[str, bool],
) -> Iterator[Server]:
    if not GUNICORN_CONF.exists():
        pytest.fail(f"{GUNICORN_CONF.relative_to(ROOT)} is missing")
    tmp = tmp_path_factory.mktemp(f"e2e-{request.param}")
    with contextlib.ExitStack() as cleanup:
        if request.param == "postgresql":
            # Not the run's shared database: this server lives as long as the run, and
            # its workers would send (or refuse and drop) the outbox rows of later tests.
            database_url = cleanup.enter_context(own_postgres_database())
        else:
            database_url = f"sqlite:///{tmp / 'pps.sqlite3'}"
        yield from _served(tmp, database_url, redis_server[0])


def _served(tmp: Path, database_url: str, redis_url: str) -> Iterator[Server]:
    """gunicorn with two workers on ``database_url``, stopped when the run ends."""
    port = free_port()
    srv = Server(
        port=port,
        base_url=f"http://127.0.0.1:{port}",
        env=server_env(port, tmp / "instance", database_url, redis_url),
        instance=tmp / "instance",
        log=tmp / "gunicorn.log",
    )
    srv.pps("db", "upgrade")
    proc = start_gunicorn(srv.env, port, srv.log, "--workers", "2")
    try:
        yield srv
    finally:
        stop(proc)
    assert proc.returncode == 0, f"gunicorn exited with {proc.returncode}:\n{srv.log.read_text()}"


# -- the shop's setup --------------------------------------------------------------------


@dataclass
class Shop:
    server: Server
    client: str
    api_key: str
    template: str
    user: str
    draft_hash: str

    def api(self, method: str, path: str, *, body: bytes | None = None, **headers: str) -> Reply:
        sent = {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json"}
        sent.update({name.replace("_", "-"): value for name, value in headers.items()})
        return self.server.call(method, path, body=body, headers=sent)

    def sign(self, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
        return shop_token(self.api_key, claims, header)

    def login_claims(self, **extra: Any) -> dict[str, Any]:
        return {
            "client": self.client,
            "user": self.user,
            "redirect": self.editor_url(),
            # lcobucci/jwt 4 writes iat as a float with microseconds.
            "iat": round(time.time(), 6),
            **extra,
        }

    def editor_url(self) -> str:
        callback = quote(base64.b64encode(SHOP_CALLBACK.encode()).decode(), safe="")
        return f"{self.server.base_url}/editor/{self.draft_hash}/edit?callback={callback}"

    def login_token(self, **extra: Any) -> str:
        return self.sign(self.login_claims(**extra), {"jti": uuid.uuid4().hex})

    def auth(self, token: str) -> Reply:
        return self.server.call("GET", f"/auth?jwt={token}")


def create_user(shop_api: Any) -> str:
    # An empty body with a JSON content type, as the PHP SDK sends it.
    reply = shop_api("POST", "/api-ext/user", body=b"", Content_Type="application/json")
    assert reply.status == 201, reply.body
    return str(reply.json()["data"]["identifier"])


def create_draft(shop_api: Any, template: str, user: str) -> dict[str, Any]:
    # Form fields with the snake_case spelling, as the editor demo sends them.
    form = urlencode({"templateIdentifier": template, "user_identifier": user}).encode()
    reply = shop_api(
        "POST",
        "/api-ext/draft",
        body=form,
        Content_Type="application/x-www-form-urlencoded",
    )
    assert reply.status == 201, reply.body
    data: dict[str, Any] = reply.json()["data"]
    return data


def shop_with_draft(server: Server, template_file: Path) -> Shop:
    """A client made with the CLI, ``template_file`` imported for it, and a user and a draft
    made through the API."""
    created = server.pps("client", "create", "--name", "Shop", "--json")
    imported = server.pps(
        "template", "import", str(template_file), "--client", created["identifier"], "--json"
    )
    shop = Shop(server, created["identifier"], created["apiKey"], imported["identifier"], "", "")
    shop.user = create_user(shop.api)
    shop.draft_hash = create_draft(shop.api, shop.template, shop.user)["draftHash"]
    return shop


@pytest.fixture(scope="session")
def shop(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Shop:
    folder = tmp_path_factory.mktemp("template")
    (folder / "preview.png").write_bytes(PREVIEW_PNG)
    template_file = folder / "card.json"
    template_file.write_text(
        json.dumps(
            {
                "name": "Business card",
                "dataKeys": DATA_KEYS,
                "customAttributes": CUSTOM_ATTRIBUTES,
                "preview": "preview.png",
            }
        )
    )
    return shop_with_draft(server, template_file)


# -- the API -----------------------------------------------------------------------------


def test_api_creates_users_and_drafts_and_shows_the_template(shop: Shop) -> None:
    user = create_user(shop.api)
    draft = create_draft(shop.api, shop.template, user)
    assert draft["userIdentifier"] == user
    assert draft["templateIdentifier"] == shop.template
    assert len(draft["draftHash"]) == 32

    reply = shop.api("GET", f"/api-ext/template/{shop.template}")
    assert reply.status == 200, reply.body
    template = reply.json()["data"]
    assert template["dataKeys"] == DATA_KEYS
    assert template["customAttributes"] == CUSTOM_ATTRIBUTES


def test_api_without_a_key_is_a_json_401(server: Server) -> None:
    reply = server.call("POST", "/api-ext/user", headers={"Accept": "application/json"})
    assert reply.status == 401
    assert reply.header("WWW-Authenticate") is not None
    assert reply.json()["message"]


# -- login -------------------------------------------------------------------------------

LOGIN_VARIANTS = [
    "jti in the header, no exp (PHP SDK)",
    "jti in header and payload",
    "exp 30 days away (Magento)",
]


def login_token_variant(shop: Shop, variant: str) -> str:
    jti = uuid.uuid4().hex
    if variant == "jti in header and payload":
        return shop.sign(shop.login_claims(jti=jti), {"jti": jti})
    if variant == "exp 30 days away (Magento)":
        return shop.sign(shop.login_claims(exp=int(time.time()) + 30 * 24 * 3600), {"jti": jti})
    return shop.sign(shop.login_claims(), {"jti": jti})


@pytest.mark.parametrize("variant", LOGIN_VARIANTS)
def test_login_redirects_to_the_editor_once(shop: Shop, variant: str) -> None:
    token = login_token_variant(shop, variant)

    reply = shop.auth(token)
    assert reply.status == 302, reply.body
    assert reply.header("Cache-Control") == "no-store"
    exchanged = follow_handoff(shop.server.call, reply, shop.editor_url(), shop.server.base_url)
    cookies = SimpleCookie()
    for raw in exchanged.headers.get_all("Set-Cookie") or []:
        cookies.load(raw.replace("; Partitioned", ""))  # http.cookies knows it from 3.14
    name = session_cookie_name(shop.server.base_url)
    assert name in cookies, exchanged.headers
    cookie = f"{name}={cookies[name].value}"

    editor = shop.server.call(
        "GET", local_path(shop.editor_url(), shop.server.base_url), headers={"Cookie": cookie}
    )
    assert editor.status == 200, editor.body
    page = editor.body.decode()
    for key in DATA_KEYS:
        assert key in page

    replay = shop.auth(token)
    assert replay.status == 401, replay.body


def test_editor_without_login_is_refused(shop: Shop) -> None:
    reply = shop.server.call("GET", f"/editor/{shop.draft_hash}/edit")
    assert reply.status == 401


def test_concurrent_uses_of_one_token_log_in_exactly_once(shop: Shop) -> None:
    token = shop.login_token()
    uses = 20
    barrier = threading.Barrier(uses)
    statuses: list[int] = []
    lock = threading.Lock()

    def use() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", shop.server.port, timeout=30)
        try:
            conn.connect()
            barrier.wait(timeout=30)
            conn.request("GET", f"/auth?jwt={token}")
            status = conn.getresponse().status
        finally:
            conn.close()
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=use) for _ in range(uses)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(statuses) == uses
    assert statuses.count(302) == 1, statuses
    assert statuses.count(401) == uses - 1, statuses


def test_a_request_line_gunicorn_refuses_never_logs_its_token(shop: Shop) -> None:
    """gunicorn refuses a raw non-ASCII byte in the URL (RFC 9112) and logs why, quoting
    the request line: the login token there, never used, would log the customer in to
    whoever reads the log."""
    token = shop.login_token()
    answered, _, body = raw_request(
        shop.server.port,
        f"GET /auth?jwt={token}&name=M".encode() + b"\xc3\xbcller HTTP/1.1\r\n"
        b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    assert answered == 400, body
    log = shop.server.log.read_text(errors="replace")
    assert "Invalid request from ip=" in log  # the line that quoted the token is still there
    assert "/auth" in log
    assert token not in log and token.split(".")[2] not in log
    assert shop.auth(token).status == 302  # unused: a credential had it been logged


# -- files -------------------------------------------------------------------------------


def follow_file_link(shop: Shop, reply: Reply) -> Reply:
    assert reply.status == 302, reply.body
    assert reply.header("Cache-Control") == "no-store"
    location = reply.header("Location") or ""
    path = local_path(location, shop.server.base_url)
    assert path.startswith("/files/"), location
    return shop.server.call("GET", path)


def test_template_preview_with_a_magento_file_token(shop: Shop) -> None:
    now = int(time.time())
    token = shop.sign({"client": shop.client, "iat": now, "exp": now + 300})
    reply = shop.server.call(
        "GET", f"/api-ext/files/template/{shop.template}/page-preview-thumb?jwt={token}"
    )
    served = follow_file_link(shop, reply)
    assert served.status == 200, served.body
    assert served.body == PREVIEW_PNG
    assert served.header("Content-Type") == "image/png"


def test_draft_print_file_with_a_token_for_its_path(shop: Shop) -> None:
    draft = create_draft(shop.api, shop.template, shop.user)
    path = f"/api-ext/files/draft/{draft['draftHash']}/print"
    now = time.time()
    token = shop.sign({"client": shop.client, "urlPath": path, "iat": now, "exp": now + 300})

    # Rendered on demand on the first request, then kept for the draft's version.
    first = shop.server.call("GET", f"{path}?jwt={token}")
    assert first.status == 302, first.body
    served = follow_file_link(shop, first)
    assert served.status == 200, served.body
    assert served.body.startswith(b"%PDF-")
    assert served.header("Content-Type") == "application/pdf"

    # The token has no jti: a shop may use it again, and gets the same file again.
    again = follow_file_link(shop, shop.server.call("GET", f"{path}?jwt={token}"))
    assert again.status == 200
    assert again.body == served.body


def test_draft_image_is_real_png_or_jpeg_bytes(shop: Shop) -> None:
    path = f"/api-ext/files/draft/{shop.draft_hash}/image"
    now = int(time.time())
    token = shop.sign({"client": shop.client, "user": shop.user, "iat": now, "exp": now + 300})
    first = shop.server.call("GET", f"{path}?jwt={token}")
    served = follow_file_link(shop, first)
    assert served.status == 200, served.body
    assert served.body.startswith((b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff")), served.body[:16]


def test_file_token_for_another_path_is_refused(shop: Shop) -> None:
    now = time.time()
    other = f"/api-ext/files/draft/{shop.draft_hash}/low-res"
    token = shop.sign({"client": shop.client, "urlPath": other, "iat": now, "exp": now + 300})
    reply = shop.server.call("GET", f"/api-ext/files/draft/{shop.draft_hash}/print?jwt={token}")
    assert 400 <= reply.status < 500, reply.body
    assert reply.header("Content-Type") == "application/json"
    assert "urlPath" in reply.json()["message"]


def test_file_token_signed_with_another_key_is_refused(shop: Shop) -> None:
    now = time.time()
    forged = Shop(shop.server, shop.client, secrets.token_urlsafe(32), "", "", "")
    token = forged.sign({"client": shop.client, "iat": now, "exp": now + 300})
    reply = shop.server.call(
        "GET", f"/api-ext/files/template/{shop.template}/page-preview-thumb?jwt={token}"
    )
    assert reply.status == 401, reply.body
    assert reply.json()["message"]


# -- request framing: chunked bodies, routing redirects ----------------------------------


def send_chunked(shop: Shop, path: str, body: bytes, content_type: str) -> Reply:
    """``body`` with ``Transfer-Encoding: chunked`` and no Content-Length, in 64 KiB chunks."""
    conn = http.client.HTTPConnection("127.0.0.1", shop.server.port, timeout=30)
    try:
        conn.request(
            "POST",
            path,
            body=(body[i : i + 65536] for i in range(0, len(body), 65536)),
            headers={
                "Authorization": f"Bearer {shop.api_key}",
                "Accept": "application/json",
                "Content-Type": content_type,
            },
            encode_chunked=True,
        )
        response = conn.getresponse()
        return Reply(response.status, response.headers, response.read())
    finally:
        conn.close()


def test_chunked_body_over_the_limit_is_a_json_413(shop: Shop) -> None:
    """gunicorn hands a chunked body to the app without a Content-Length; a form field past
    the limit used to vanish while the rest was saved (201)."""
    limit = 1024 * 1024  # PPS_MAX_BODY_BYTES's default; the server leaves it alone
    form = b"firstName=Chunky&customAttributes[pad]=" + b"x" * limit + b"&lastName=Late"
    reply = send_chunked(shop, "/api-ext/user", form, "application/x-www-form-urlencoded")
    assert reply.status == 413, reply.body
    assert reply.header("Content-Type") == "application/json"
    assert reply.json()["message"]  # refused while reading the body: nothing was saved

    small = json.dumps({"firstName": "Chunky", "lastName": "Small"}).encode()
    fits = send_chunked(shop, "/api-ext/user", small, "application/json")
    assert fits.status == 201, fits.body
    assert fits.json()["data"]["profile"]["lastName"] == "Small"


@pytest.mark.parametrize(
    ("method", "sent", "expected"),
    [("POST", "/api-ext//user", "/api-ext/user"), ("GET", "//editor//x", "/editor/x")],
)
def test_routing_redirects_never_name_a_forged_host(
    server: Server, method: str, sent: str, expected: str
) -> None:
    reply = server.call(method, sent + "?a=1", headers={"Host": "evil.example"})
    assert reply.status == 308, reply.body
    assert reply.header("Location") == expected + "?a=1"
