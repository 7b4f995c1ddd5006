"""The shipped nginx config in front of gunicorn: deploy/nginx.conf + deploy/gunicorn.conf.py.

A real nginx runs the site config derived from ``deploy/nginx.conf`` with nothing changed
but what ties it to a host: the listen port (loopback only, no IPv6 listener), the upstream
port, the files directory of the ``internal`` location and the access log path. The stock
``/etc/nginx/nginx.conf`` around it is replaced by a small main config with the same http
settings whose paths all lie in a temporary folder, so nginx runs without touching
``/etc``, ``/var`` or ``/run``. gunicorn runs with PPS_X_ACCEL_PREFIX (taken from the
config's internal location) and PPS_BASE_URL set to the nginx URL, as in production.

Everything is checked through nginx: the API, request ids, login, file links served by
nginx via X-Accel-Redirect (bytes, Range, HEAD), the internal location, the body limit and
the JSON error pages (on files too: a second nginx with files of its own stands for a
file that changed after pps checked it). A second deployment with the config's TLS lines
switched on checks that an ``https://`` PPS_BASE_URL gives Secure session cookies.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import pytest
from conftest import free_port, missing_service, session_cookie_name, wait_for_port
from PIL import Image
from server_support import (
    ROOT,
    Reply,
    Server,
    call,
    follow_handoff,
    local_path,
    raw_request,
    server_env,
    start_gunicorn,
    stop,
)
from test_e2e_gunicorn import Shop, shop_with_draft

from pps.platform.settings import Settings
from pps.templates.files import preview_key
from pps.uploads.web_body import MULTIPART_FRAMING

pytestmark = pytest.mark.slow

NGINX_CONF = ROOT / "deploy" / "nginx.conf"
SHIPPED = NGINX_CONF.read_text() if NGINX_CONF.exists() else ""
MIME_TYPES = Path("/etc/nginx/mime.types")
REQUEST_ID = re.compile(r"^[0-9a-f]{32}$")


# -- the config under test ---------------------------------------------------------------


def x_accel_prefix(config: str) -> str:
    """The path of the config's ``internal`` location, without the trailing slash."""
    found = re.search(r"location (/[^\s{]+)/ \{\s*internal;", config)
    assert found, "deploy/nginx.conf has no internal location for X-Accel-Redirect"
    return found.group(1)


def header_buffer(config: str) -> int:
    """The size of one of nginx's large header buffers: the longest request or header line."""
    found = re.search(r"^\s*large_client_header_buffers \d+ (\d+)([km]?);", config, re.M)
    assert found, "deploy/nginx.conf sets no large_client_header_buffers"
    return int(found.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[found.group(2)]


def body_limit(config: str) -> int:
    found = re.search(r"^\s*client_max_body_size (\d+)([km]?);", config, re.M)
    assert found, "deploy/nginx.conf sets no client_max_body_size"
    return int(found.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[found.group(2)]


#: The upload paths (a customer's print PDF, pps.drafts.upload_api; a file, pps.uploads.api;
#: variable data, pps.vdata.api), the only bodies allowed to be larger.
UPLOAD_PATH = re.compile(r"^/api-ext/(file|draft/[^/]+/(upload|variable-data))$")


def upload_body_limit(config: str) -> int:
    """``client_max_body_size`` of the regex location for the upload path."""
    found = re.search(r"location ~ (\S+) \{[^}]*?client_max_body_size (\d+)([km]?);", config, re.S)
    assert found, "deploy/nginx.conf has no regex location with a body limit for uploads"
    assert found.group(1) == UPLOAD_PATH.pattern, found.group(1)
    return int(found.group(2)) * {"": 1, "k": 1024, "m": 1024 * 1024}[found.group(3)]


def _replace_once(text: str, pattern: str, replacement: str) -> str:
    """Replace the one line ``pattern`` matches, keeping its indentation (group 1)."""
    new, count = re.subn(
        pattern, lambda m: m.group(1) + replacement if replacement else "", text, flags=re.M
    )
    assert count == 1, f"expected one line matching {pattern!r} in deploy/nginx.conf"
    return new


@dataclass
class Tls:
    port: int
    cert: Path
    key: Path

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert))


def site_config(
    *,
    listen_port: int,
    upstream_port: int,
    files_dir: Path,
    access_log: Path,
    tls: Tls | None = None,
) -> str:
    """deploy/nginx.conf with only its host-specific lines changed."""
    text = SHIPPED
    text = _replace_once(text, r"^(\s*)listen 80;$", f"listen 127.0.0.1:{listen_port};")
    text = _replace_once(text, r"^(\s*)listen \[::\]:80;\n", "")
    text = _replace_once(
        text, r"^(\s*)server 127\.0\.0\.1:8000;$", f"server 127.0.0.1:{upstream_port};"
    )
    text = _replace_once(text, r"^(\s*)alias /var/lib/pps/files/;$", f"alias {files_dir}/;")
    text = _replace_once(
        text,
        r"^(\s*)access_log /var/log/nginx/pps\.access\.log pps;$",
        f"access_log {access_log} pps;",
    )
    if tls is not None:  # the commented TLS lines, switched on
        text = _replace_once(text, r"^(\s*)# listen 443 ssl;$", f"listen 127.0.0.1:{tls.port} ssl;")
        text = _replace_once(text, r"^(\s*)# listen \[::\]:443 ssl;\n", "")
        text = _replace_once(
            text, r"^(\s*)# ssl_certificate\s+\S+;$", f"ssl_certificate {tls.cert};"
        )
        text = _replace_once(
            text, r"^(\s*)# ssl_certificate_key\s+\S+;$", f"ssl_certificate_key {tls.key};"
        )
    return text


def main_config(tmp: Path, site: Path) -> str:
    """Debian's stock nginx.conf, reduced to its http settings, with every path in ``tmp``."""
    temp_paths = "\n".join(
        f"    {kind}_temp_path {tmp / 'temp' / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    types = (
        f"include {MIME_TYPES};"
        if MIME_TYPES.exists()
        else "types { image/png png; application/pdf pdf; }"
    )
    # As root, nginx would switch its workers to 'nobody', who cannot read pytest's
    # private temporary folders; unprivileged, the user directive is ignored anyway.
    user = "user root;" if os.geteuid() == 0 else ""
    return f"""{user}
worker_processes 2;
pid {tmp / "nginx.pid"};
error_log {tmp / "error.log"} notice;
events {{
    worker_connections 256;
}}
http {{
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    {types}
    default_type application/octet-stream;
    ssl_protocols TLSv1.2 TLSv1.3;
    access_log {tmp / "access.log"};
    gzip on;
{temp_paths}
    include {site};
}}
"""


def nginx_binary() -> str:
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        missing_service("nginx is not installed (Debian: apt-get install nginx-light)")
    assert found is not None
    return found


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        missing_service("openssl is not installed: no certificate for the TLS check")
    cert, key = folder / "cert.pem", folder / "key.pem"
    done = subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return cert, key


# -- the deployment ----------------------------------------------------------------------


@dataclass
class Deployment:
    """nginx on ``server.port`` (and ``tls.port``) in front of gunicorn on ``gunicorn_port``."""

    server: Server  # port and base_url are nginx's; env is gunicorn's and the CLI's
    gunicorn_port: int
    files_dir: Path
    access_log: Path
    tls: Tls | None = None
    gunicorn: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start_gunicorn(self) -> None:
        self.gunicorn = start_gunicorn(
            self.server.env, self.gunicorn_port, self.server.log, "--workers", "2"
        )

    def stop_gunicorn(self) -> int | None:
        if self.gunicorn is None:
            return None
        stop(self.gunicorn)
        code = self.gunicorn.returncode
        self.gunicorn = None
        return code

    def call(self, method: str, path: str, **kwargs: Any) -> Reply:
        return self.server.call(method, path, **kwargs)

    def call_tls(self, method: str, path: str, *, headers: dict[str, str] | None = None) -> Reply:
        assert self.tls is not None
        conn = http.client.HTTPSConnection(
            "127.0.0.1", self.tls.port, timeout=30, context=self.tls.context()
        )
        try:
            conn.request(method, path, headers=headers or {})
            response = conn.getresponse()
            return Reply(response.status, response.headers, response.read())
        finally:
            conn.close()


def _wait_for(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def deploy(tmp: Path, redis_url: str, *, with_tls: bool) -> Iterator[Deployment]:
    """Set up pps as an operator would, start gunicorn and nginx; stop both at the end."""
    if not SHIPPED:
        pytest.fail("deploy/nginx.conf is missing")
    nginx_binary()  # fails before anything starts when nginx is missing
    nginx_port, gunicorn_port = free_port(), free_port()
    tls = None
    if with_tls:
        cert, key = self_signed_certificate(tmp)
        tls = Tls(free_port(), cert, key)
    public_url = f"https://127.0.0.1:{tls.port}" if tls else f"http://127.0.0.1:{nginx_port}"
    files_dir = tmp / "files"
    files_dir.mkdir()
    env = server_env(gunicorn_port, tmp / "instance", f"sqlite:///{tmp / 'pps.sqlite3'}", redis_url)
    env.update(
        PPS_BASE_URL=public_url,
        PPS_FILES_DIR=str(files_dir),
        PPS_X_ACCEL_PREFIX=x_accel_prefix(SHIPPED),
    )
    dep = Deployment(
        server=Server(nginx_port, public_url, env, tmp / "instance", tmp / "gunicorn.log"),
        gunicorn_port=gunicorn_port,
        files_dir=files_dir,
        access_log=tmp / "pps.access.log",
        tls=tls,
    )
    dep.server.pps("db", "upgrade")

    site = site_config(
        listen_port=nginx_port,
        upstream_port=gunicorn_port,
        files_dir=files_dir,
        access_log=dep.access_log,
        tls=tls,
    )
    dep.start_gunicorn()
    try:
        yield from run_nginx(tmp, site, nginx_port, dep)
    finally:
        code = dep.stop_gunicorn()
    assert code == 0, f"gunicorn exited with {code}:\n{dep.server.log.read_text()}"


def run_nginx(tmp: Path, site: str, port: int, value: Any) -> Iterator[Any]:
    """nginx with the site config ``site`` and every path in ``tmp``, serving on ``port``
    while ``value`` is yielded."""
    site_file = tmp / "pps.conf"
    site_file.write_text(site)
    conf = tmp / "nginx.conf"
    conf.write_text(main_config(tmp, site_file))
    for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp / "temp" / kind).mkdir(parents=True)
    command = [nginx_binary(), "-p", str(tmp), "-c", str(conf), "-g", "daemon off;"]
    checked = subprocess.run(
        [*command, "-t"], capture_output=True, text=True, timeout=30, check=False
    )
    assert checked.returncode == 0, f"nginx -t refused the config:\n{checked.stderr}"

    nginx_log = tmp / "nginx.out"
    with nginx_log.open("wb") as log:
        proc = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        try:
            wait_for_port(port, timeout=15)
        except RuntimeError:
            pytest.fail(
                f"nginx did not start:\n{nginx_log.read_text()}"
                f"{(tmp / 'error.log').read_text() if (tmp / 'error.log').exists() else ''}"
            )
        yield value
    finally:
        stop(proc)


def noisy_png(width: int = 160, height: int = 120) -> bytes:
    """A preview of some 20 KB that does not compress away, so ranges have room to work."""
    out = io.BytesIO()
    Image.effect_noise((width, height), 64).save(out, "PNG")
    return out.getvalue()


def set_up_shop(dep: Deployment, folder: Path) -> Shop:
    (folder / "preview.png").write_bytes(noisy_png())
    template_file = folder / "card.json"
    template_file.write_text(
        json.dumps({"name": "Card", "dataKeys": ["firstName"], "preview": "preview.png"})
    )
    return shop_with_draft(dep.server, template_file)


@pytest.fixture(scope="module")
def deployment(
    tmp_path_factory: pytest.TempPathFactory, redis_server: tuple[str, bool]
) -> Iterator[Deployment]:
    yield from deploy(tmp_path_factory.mktemp("nginx"), redis_server[0], with_tls=False)


@pytest.fixture(scope="module")
def shop(deployment: Deployment, tmp_path_factory: pytest.TempPathFactory) -> Shop:
    return set_up_shop(deployment, tmp_path_factory.mktemp("nginx-template"))


def session_cookie(reply: Reply, base_url: str) -> Any:
    """The session cookie a login through ``base_url`` set (its name follows the URL)."""
    cookies = SimpleCookie()
    for raw in reply.headers.get_all("Set-Cookie") or []:
        cookies.load(raw.replace("; Partitioned", ""))  # http.cookies knows it from 3.14
    name = session_cookie_name(base_url)
    assert name in cookies, reply.headers
    return cookies[name]


def file_link(shop: Shop) -> str:
    """The ``/files/<link>/<name>`` path the preview endpoint redirects to."""
    now = int(time.time())
    token = shop.sign({"client": shop.client, "iat": now, "exp": now + 300})
    reply = shop.server.call(
        "GET", f"/api-ext/files/template/{shop.template}/page-preview-thumb?jwt={token}"
    )
    assert reply.status == 302, reply.body
    location = reply.header("Location") or ""
    assert location.startswith(f"{shop.server.base_url}/files/"), location
    return local_path(location, shop.server.base_url)


def stored_preview(dep: Deployment, shop: Shop) -> bytes:
    return (dep.files_dir / preview_key(shop.client, shop.template)).read_bytes()


# -- the config itself -------------------------------------------------------------------


def test_body_limit_of_nginx_matches_the_app_default() -> None:
    assert body_limit(SHIPPED) == Settings().max_body_bytes


def test_upload_limit_of_nginx_matches_the_app_default() -> None:
    assert upload_body_limit(SHIPPED) == Settings().max_upload_bytes + MULTIPART_FRAMING
    for upload in (
        "/api-ext/draft/abc123/upload",
        "/api-ext/file",
        "/api-ext/draft/a/variable-data",
    ):
        assert UPLOAD_PATH.match(upload), upload
    for other in (
        "/api-ext/draft",
        "/api-ext/draft/abc/replicate",
        "/api-ext/draft/a/b/upload",
        "/api-ext/files/draft/a/print",
        "/api-ext/draft/a/b/variable-data",
    ):
        assert not UPLOAD_PATH.match(other), other


# -- the API and request ids -------------------------------------------------------------


def test_api_through_nginx_creates_a_user(shop: Shop) -> None:
    reply = shop.api("POST", "/api-ext/user", body=b"{}", Content_Type="application/json")
    assert reply.status == 201, reply.body
    assert reply.header("Content-Type") == "application/json"
    assert (reply.header("Server") or "").startswith("nginx")
    assert reply.json()["data"]["identifier"]


def test_request_id_of_nginx_reaches_the_app_and_comes_back(
    deployment: Deployment, shop: Shop
) -> None:
    # nginx replaces whatever the client sends with its own $request_id.
    reply = shop.api("GET", f"/api-ext/template/{shop.template}", X_Request_ID="from-the-client")
    assert reply.status == 200, reply.body
    rid = reply.header("X-Request-ID") or ""
    assert REQUEST_ID.match(rid), rid

    def logged(path: Path) -> bool:
        return path.exists() and f"rid={rid}" in path.read_text()

    _wait_for(lambda: logged(deployment.access_log), f"rid={rid} in nginx's access log")
    _wait_for(lambda: logged(deployment.server.log), f"rid={rid} in gunicorn's access log")


def test_tokens_in_query_strings_never_reach_a_log(deployment: Deployment, shop: Shop) -> None:
    """Both access logs name the path of ``/auth`` and of a file URL, never their tokens."""
    login_token = shop.login_token()
    login = shop.auth(login_token)
    assert login.status == 302, login.body
    now = int(time.time())
    file_token = shop.sign({"client": shop.client, "iat": now, "exp": now + 300})
    preview_path = f"/api-ext/files/template/{shop.template}/page-preview-thumb"
    preview = shop.server.call("GET", f"{preview_path}?jwt={file_token}")
    assert preview.status == 302, preview.body
    logs = (deployment.access_log, deployment.server.log)
    for reply in (login, preview):
        rid = reply.header("X-Request-ID") or ""
        for path in logs:
            _wait_for(
                lambda path=path, rid=rid: path.exists() and f"rid={rid}" in path.read_text(),
                f"rid={rid} in {path.name}",
            )
    for path in logs:
        text = path.read_text()
        assert '"GET /auth HTTP/1.1"' in text, text[-2000:]
        assert f'"GET {preview_path} HTTP/1.1"' in text, text[-2000:]
        for token in (login_token, file_token):
            assert token not in text and token.split(".")[2] not in text, path.name
        assert "jwt=" not in text, path.name


def test_file_links_never_reach_a_log(deployment: Deployment, shop: Shop) -> None:
    """A ``/files/<link>/<name>`` URL fetches its file until PPS_FILE_LINK_TTL ends, whoever
    sends it: both access logs name the file, never the link."""
    path = file_link(shop)
    link = path.split("/")[2]
    reply = shop.server.call("GET", path)
    assert reply.status == 200, reply.body
    rid = reply.header("X-Request-ID") or ""
    logs = (deployment.access_log, deployment.server.log)
    for log in logs:
        _wait_for(
            lambda log=log: log.exists() and f"rid={rid}" in log.read_text(),
            f"rid={rid} in {log.name}",
        )
    for log in logs:
        line = next(line for line in log.read_text().splitlines() if f"rid={rid}" in line)
        assert f"/files/<link>/{path.split('/')[3]} " in line, line
        assert link not in log.read_text(), log.name
    assert shop.server.call("GET", path).status == 200  # still valid: a credential in a log


def test_a_forged_forwarded_for_never_leads_the_access_log(
    deployment: Deployment, shop: Shop
) -> None:
    """The log's first field is the address nginx saw, whatever the client claims."""
    reply = shop.api("GET", "/api-ext/client", X_Forwarded_For="6.6.6.6")
    assert reply.status == 200, reply.body
    rid = reply.header("X-Request-ID") or ""
    log = deployment.server.log
    _wait_for(lambda: log.exists() and f"rid={rid}" in log.read_text(), f"rid={rid} in log")
    line = next(line for line in log.read_text().splitlines() if f"rid={rid}" in line)
    assert line.startswith("127.0.0.1 "), line
    assert "6.6.6.6" not in line, line


# -- login -------------------------------------------------------------------------------


def test_login_through_nginx_works_once(shop: Shop) -> None:
    token = shop.login_token()
    reply = shop.auth(token)
    assert reply.status == 302, reply.body
    exchanged = follow_handoff(shop.server.call, reply, shop.editor_url(), shop.server.base_url)
    cookie = session_cookie(exchanged, shop.server.base_url)
    # PPS_BASE_URL is http://127.0.0.1: a loopback host, a secure context for browsers, so
    # the cookie a shop's frame keeps (docs/embedding.md).
    assert cookie["secure"]
    assert cookie["samesite"] == "None"

    editor = shop.server.call(
        "GET",
        local_path(shop.editor_url(), shop.server.base_url),
        headers={"Cookie": f"{cookie.key}={cookie.value}"},
    )
    assert editor.status == 200, editor.body

    replay = shop.auth(token)
    assert replay.status == 401, replay.body


@pytest.mark.parametrize(
    ("target", "headers"),
    [
        ("{path}", {"Host": "evil.example:8443"}),
        ("http://evil.example{path}", {}),  # absolute form: nginx takes its host as $host
        (
            "{path}",
            {
                "Host": "[::1]",
                "X-Forwarded-Host": "evil.example",
                "X-Forwarded-Proto": "https",
                "X-Forwarded-Port": "8443",
                "Forwarded": "host=evil.example;proto=https",
            },
        ),
    ],
)
def test_absolute_urls_never_name_the_host_a_client_sent(
    shop: Shop, target: str, headers: dict[str, str]
) -> None:
    """The login's and a file's redirect and /openapi.json's server are built on
    PPS_BASE_URL, whatever host the request names."""
    base = shop.server.base_url
    now = int(time.time())
    file_token = shop.sign({"client": shop.client, "iat": now, "exp": now + 300})
    preview_path = f"/api-ext/files/template/{shop.template}/page-preview-thumb?jwt={file_token}"
    preview = shop.server.call("GET", target.format(path=preview_path), headers=headers)
    assert preview.status == 302, preview.body
    assert (preview.header("Location") or "").startswith(f"{base}/files/")

    login = shop.server.call(
        "GET", target.format(path=f"/auth?jwt={shop.login_token()}"), headers=headers
    )
    assert login.status == 302, login.body
    assert (login.header("Location") or "").startswith(shop.editor_url())

    spec = shop.server.call("GET", target.format(path="/openapi.json"), headers=headers)
    assert spec.status == 200, spec.body
    assert spec.json()["servers"] == [{"url": base}]
    for reply in (preview, login, spec):
        assert "evil" not in str(reply.headers) and b"evil" not in reply.body


# -- files via X-Accel-Redirect ----------------------------------------------------------


def test_file_link_bytes_are_sent_by_nginx(deployment: Deployment, shop: Shop) -> None:
    path = file_link(shop)
    data = stored_preview(deployment, shop)

    reply = shop.server.call("GET", path)
    assert reply.status == 200, reply.body
    # gunicorn answers with headers only; these bytes can only come from nginx.
    assert reply.body == data
    assert reply.header("Content-Length") == str(len(data))
    assert reply.header("X-Accel-Redirect") is None
    assert reply.header("Accept-Ranges") == "bytes"
    # What pps sets on a file response survives the redirect.
    assert reply.header("Content-Type") == "image/png"
    assert (reply.header("Content-Disposition") or "").startswith("inline;")
    assert reply.header("Cache-Control") == "private, no-store"
    assert reply.header("Referrer-Policy") == "no-referrer"
    assert reply.header("X-Content-Type-Options") == "nosniff"
    # The id nginx sent to pps with this request, not a fresh one from the redirect.
    rid = reply.header("X-Request-ID") or ""
    assert REQUEST_ID.match(rid), rid
    _wait_for(lambda: f"rid={rid}" in deployment.server.log.read_text(), "rid in gunicorn's log")


def test_file_link_range_request_is_206(deployment: Deployment, shop: Shop) -> None:
    path = file_link(shop)
    data = stored_preview(deployment, shop)
    assert len(data) > 2000

    reply = shop.server.call("GET", path, headers={"Range": "bytes=1000-1999"})
    assert reply.status == 206, reply.body
    assert reply.body == data[1000:2000]
    assert reply.header("Content-Range") == f"bytes 1000-1999/{len(data)}"

    tail = shop.server.call("GET", path, headers={"Range": "bytes=-16"})
    assert tail.status == 206
    assert tail.body == data[-16:]


def test_file_link_head_has_the_headers_and_no_body(deployment: Deployment, shop: Shop) -> None:
    path = file_link(shop)
    data = stored_preview(deployment, shop)
    reply = shop.server.call("HEAD", path)
    assert reply.status == 200
    assert reply.body == b""
    assert reply.header("Content-Length") == str(len(data))
    assert reply.header("Content-Type") == "image/png"


def test_internal_location_is_not_reachable_from_outside(
    deployment: Deployment, shop: Shop
) -> None:
    prefix = x_accel_prefix(SHIPPED)
    key = preview_key(shop.client, shop.template)
    assert (deployment.files_dir / key).is_file()
    for path in (f"{prefix}/{key}", f"{prefix}/", f"/x/..{prefix}/{key}"):
        reply = shop.server.call("GET", path)
        assert_json_error(reply, 404)
        assert stored_preview(deployment, shop) not in reply.body


# -- errors nginx answers on a file ------------------------------------------------------


def assert_file_error(reply: Reply, status: int) -> None:
    """A JSON error that still has the headers the file location adds, once each."""
    assert_json_error(reply, status)
    assert reply.json()["success"] is False
    assert reply.header("Referrer-Policy") == "no-referrer"
    assert reply.header("X-Content-Type-Options") == "nosniff"
    assert REQUEST_ID.match(reply.header("X-Request-ID") or ""), reply.headers
    for name in ("Referrer-Policy", "X-Content-Type-Options", "X-Request-ID"):
        assert len(reply.headers.get_all(name) or []) == 1, (name, reply.headers)


def test_file_link_range_past_the_end_is_a_json_416(deployment: Deployment, shop: Shop) -> None:
    path = file_link(shop)
    size = len(stored_preview(deployment, shop))
    for ranges in (
        f"bytes={size}-",
        f"bytes={size + 10}-{size + 20}",
        f"bytes={size}-,{size + 5}-",
    ):
        reply = shop.server.call("GET", path, headers={"Range": ranges})
        assert_file_error(reply, 416)
        # What a client needs to ask again: the file's size.
        assert reply.header("Content-Range") == f"bytes */{size}", reply.headers


def test_file_link_precondition_not_met_is_a_json_412(shop: Shop) -> None:
    path = file_link(shop)
    for headers in (
        {"If-Match": '"not-this-file"'},
        {"If-Unmodified-Since": "Thu, 01 Jan 1998 00:00:00 GMT"},
    ):
        reply = shop.server.call("GET", path, headers=headers)
        assert_file_error(reply, 412)


def test_file_link_conditional_and_range_answers_stay_nginx_own(
    deployment: Deployment, shop: Shop
) -> None:
    """What a conditional or ranged request is answered with when the file matches."""
    path = file_link(shop)
    data = stored_preview(deployment, shop)
    full = shop.server.call("GET", path)
    assert full.status == 200 and full.body == data
    etag, modified = full.header("ETag") or "", full.header("Last-Modified") or ""
    assert etag and modified, full.headers

    for headers in ({"If-None-Match": etag}, {"If-Modified-Since": modified}):
        unchanged = shop.server.call("GET", path, headers=headers)
        assert unchanged.status == 304, (headers, unchanged.body)
        assert unchanged.body == b""
        assert unchanged.header("ETag") == etag

    for headers in ({"If-Match": etag}, {"If-Unmodified-Since": modified}):
        matched = shop.server.call("GET", path, headers={**headers, "Range": "bytes=0-9"})
        assert matched.status == 206, (headers, matched.body)
        assert matched.body == data[:10]
        assert matched.header("Content-Range") == f"bytes 0-9/{len(data)}"
        assert matched.header("Content-Type") == "image/png"

    # A Range that only begins inside the file is served up to its end.
    tail = shop.server.call(
        "GET", path, headers={"Range": f"bytes={len(data) - 4}-{len(data) + 99}"}
    )
    assert tail.status == 206 and tail.body == data[-4:]


def test_file_deleted_after_its_link_was_made_is_a_json_404(
    deployment: Deployment, shop: Shop, tmp_path: Path
) -> None:
    """pps finds the file gone and answers itself (its headers come without nginx's file
    location, so only the JSON is checked here)."""
    path = file_link(shop)
    stored = deployment.files_dir / preview_key(shop.client, shop.template)
    kept = tmp_path / "kept.png"
    shutil.copy2(stored, kept)
    stored.unlink()
    try:
        reply = shop.server.call("GET", path)
        assert_json_error(reply, 404)
        assert reply.json()["success"] is False
    finally:
        shutil.copy2(kept, stored)
    assert shop.server.call("GET", path).status == 200


@dataclass
class BlindNginx:
    """A second nginx in front of the same gunicorn with a files directory of its own: pps
    checks the file in the deployment's, nginx opens what is (not) here, as when a file is
    deleted or replaced in between (without a race to win)."""

    port: int
    files_dir: Path


@pytest.fixture(scope="module")
def blind_nginx(
    deployment: Deployment, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BlindNginx]:
    tmp = tmp_path_factory.mktemp("nginx-blind")
    blind = BlindNginx(free_port(), tmp / "files")
    blind.files_dir.mkdir()
    site = site_config(
        listen_port=blind.port,
        upstream_port=deployment.gunicorn_port,
        files_dir=blind.files_dir,
        access_log=tmp / "pps.access.log",
    )
    yield from run_nginx(tmp, site, blind.port, blind)


def _symlink_loop(path: Path) -> None:
    path.symlink_to(path.name)


def _unix_socket(path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))


@pytest.mark.parametrize(
    ("plant", "status"),
    [
        (None, 404),  # deleted
        # Files nginx cannot open, the server's fault: a symlink loop is nginx's 403 (as
        # is a file its user may not read), a socket its 500.
        (_symlink_loop, 500),
        (_unix_socket, 500),
    ],
)
def test_file_nginx_cannot_open_is_a_json_error(
    blind_nginx: BlindNginx,
    shop: Shop,
    plant: Callable[[Path], None] | None,
    status: int,
) -> None:
    path = file_link(shop)
    stored = blind_nginx.files_dir / preview_key(shop.client, shop.template)
    stored.parent.mkdir(parents=True, exist_ok=True)
    if plant is not None:
        plant(stored)
    try:
        assert_file_error(call(blind_nginx.port, "GET", path), status)
        head = call(blind_nginx.port, "HEAD", path)
        assert head.status == status and head.body == b""
        assert (head.header("Content-Type") or "").startswith("application/json")
    finally:
        stored.unlink(missing_ok=True)
    assert shop.server.call("GET", path).status == 200  # the link itself is still good


# -- long tokens -------------------------------------------------------------------------

#: The longest token shops may sign (pps.auth.tokens refuses longer ones): it must get through
#: nginx and gunicorn in a URL with its path and other parameters, and in a header.
TOKEN_LIMIT = 8192


def padded_token(shop: Shop, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    """A token signed like ``shop.sign`` of exactly :data:`TOKEN_LIMIT` characters, padded
    with an extra claim (and a header parameter where base64 steps over the length)."""
    for extra in range(4):
        # The unpadded length with this very header: the search must start below the limit.
        padded_header = {**(header or {}), "kid": "k" * extra}
        bare = len(shop.sign({**claims, "pad": ""}, padded_header))
        for size in range(max(0, (TOKEN_LIMIT - bare) * 3 // 4 - 8), TOKEN_LIMIT):
            token = shop.sign({**claims, "pad": "x" * size}, padded_header)
            if len(token) >= TOKEN_LIMIT:
                break
        if len(token) == TOKEN_LIMIT:
            return token
    raise AssertionError("no padding gives a token of exactly TOKEN_LIMIT characters")


def test_header_buffers_of_nginx_fit_a_url_with_the_longest_token() -> None:
    longest = len(f"GET /api-ext/files/draft/{'x' * 32}/image?jwt={'t' * TOKEN_LIMIT}")
    assert header_buffer(SHIPPED) >= longest + 1024  # room for other parameters


def test_login_with_the_longest_token_gets_through_to_the_app(shop: Shop) -> None:
    token = padded_token(shop, shop.login_claims(), {"jti": uuid.uuid4().hex})
    assert len(token) == TOKEN_LIMIT
    reply = shop.server.call("GET", f"/auth?jwt={token}&lang=de&utm_source=shop")
    assert reply.status == 302, reply.body
    follow_handoff(shop.server.call, reply, shop.editor_url(), shop.server.base_url)


def test_login_with_the_longest_redirect_gets_its_answer_through(shop: Shop) -> None:
    """The ``Location`` of ``/auth`` (and of the handoff after it) repeats the signed
    ``redirect``: up to about 6 KB in a token of TOKEN_LIMIT characters. nginx's buffer for
    gunicorn's response headers (one page, 4 KB) took it for a broken upstream: a JSON 502
    "unavailable" for a login pps had answered, its single-use token spent."""
    editor_url = shop.editor_url()
    note = 6000
    while True:
        redirect = f"{editor_url}&note={'n' * note}"
        token = shop.sign(shop.login_claims(redirect=redirect), {"jti": uuid.uuid4().hex})
        if len(token) <= TOKEN_LIMIT:
            break
        note -= 16
    assert len(token) > TOKEN_LIMIT - 64
    reply = shop.auth(token)
    assert reply.status == 302, reply.body
    follow_handoff(shop.server.call, reply, redirect, shop.server.base_url)


def test_file_url_with_the_longest_token_gets_through_to_the_app(shop: Shop) -> None:
    path = f"/api-ext/files/template/{shop.template}/page-preview-thumb"
    now = int(time.time())
    token = padded_token(shop, {"client": shop.client, "iat": now, "exp": now + 300})
    reply = shop.server.call("GET", f"{path}?page=1&width=80&jwt={token}&nonce={'n' * 512}")
    assert reply.status == 302, reply.body
    assert (reply.header("Location") or "").startswith(f"{shop.server.base_url}/files/")


def test_longest_token_in_a_header_gets_through_to_the_app(shop: Shop) -> None:
    cookie = f"shop_session={'c' * 64}; jwt={'t' * TOKEN_LIMIT}; lang=de"
    reply = shop.api(
        "GET",
        f"/api-ext/template/{shop.template}",
        Cookie=cookie,
        X_Shop_Token="s" * TOKEN_LIMIT,
    )
    assert reply.status == 200, reply.body
    assert reply.json()["data"]["identifier"] == shop.template


def test_gunicorn_alone_accepts_what_nginx_lets_through(deployment: Deployment) -> None:
    """Lines just inside nginx's buffer reach the app, not gunicorn's HTML 414/431 page."""
    room = header_buffer(SHIPPED) - 64
    long_path = "/api-ext/nothing-here?q=" + "q" * room
    reply = call(deployment.gunicorn_port, "GET", long_path, headers={"Accept": "application/json"})
    assert_json_error(reply, 404)
    reply = call(
        deployment.gunicorn_port,
        "GET",
        "/api-ext/nothing-here",
        headers={"Accept": "application/json", "X-Shop-Context": "h" * room},
    )
    assert_json_error(reply, 404)


def test_url_over_the_limit_is_a_json_414(shop: Shop) -> None:
    too_long = "t" * header_buffer(SHIPPED)
    for path in (
        f"/api-ext/files/template/{shop.template}/page-preview-thumb?jwt={too_long}",
        f"/api-ext/template?page=1&filter={too_long}",
        f"/auth?jwt={too_long}",  # JSON too: nginx has not read the path when it refuses
    ):
        assert_json_error(shop.server.call("GET", path), 414)


def test_header_over_the_limit_is_a_json_431(shop: Shop) -> None:
    too_long = "h" * header_buffer(SHIPPED)
    reply = shop.api("GET", f"/api-ext/template/{shop.template}", X_Shop_Context=too_long)
    assert_json_error(reply, 431)
    reply = shop.api("GET", "/api-ext/client", Cookie=f"{session_cookie_name()}={too_long}")
    assert_json_error(reply, 431)


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /api-ext/client?a=\x7f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400),
        # nginx takes raw UTF-8 in the URL, gunicorn not: its HTML 400 quoted the whole line.
        (
            b"GET /api-ext/files/template/t/page-preview-thumb?jwt=secret-token&name=M\xc3\xbcller"
            b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            400,
        ),
        (
            b"POST /api-ext/draft/\xc3\xbc/upload?jwt=secret-token HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n",
            400,
        ),
        (
            b"GET /api-ext/client HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\nConnection: close\r\n\r\n",
            400,
        ),
        (
            b"POST /api-ext/user HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n"
            b"Connection: close\r\n\r\n0\r\n\r\n",
            501,
        ),
        # Methods nginx never proxies, and HTTP versions it does not speak.
        (b"TRACE /api-ext/client?jwt=secret-token HTTP/1.1\r\nHost: x\r\n\r\n", 405),
        (b"CONNECT /api-ext/client HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405),
        (b"GET /api-ext/client?jwt=secret-token HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        (b"GET /auth?jwt=secret-token HTTP/3.0\r\nHost: x\r\n\r\n", 505),
    ],
)
def test_requests_nginx_cannot_parse_get_json(
    shop: Shop, request_bytes: bytes, status: int
) -> None:
    """nginx refuses these itself; shop clients read 'message' and break on its HTML page."""
    answered, content_type, body = raw_request(shop.server.port, request_bytes)
    assert answered == status, body
    assert content_type.startswith("application/json"), (content_type, body)
    assert json.loads(body)["message"]
    assert b"secret-token" not in body


@pytest.mark.parametrize(
    "request_bytes",
    [
        # A control character in a header value (RFC 9110 5.5): nginx passes it on.
        b"GET /api-ext/client?jwt=secret-token HTTP/1.1\r\nHost: x\r\nX-Shop: a\x01b\r\n"
        b"Connection: close\r\n\r\n",
        b"GET /api-ext/client HTTP/1.1\r\nHost: x\r\nUser-Agent: shop\x7f\r\n"
        b"Connection: close\r\n\r\n",
        b"GET /auth?jwt=secret-token HTTP/1.1\r\nHost: x\r\nCookie: a=\x1b\r\n"
        b"Connection: close\r\n\r\n",
        # Content-Type twice: nginx sends both, gunicorn takes neither (RFC 9110 5.3).
        b"POST /api-ext/user HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
        # Methods of fewer than 3 or more than 20 letters: nginx passes them on.
        b"AB /api-ext/client?jwt=secret-token HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"PROPPATCHEXTENDEDLOCK /api-ext/client HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ],
)
def test_requests_gunicorn_refuses_get_json(shop: Shop, request_bytes: bytes) -> None:
    """What nginx lets through and gunicorn refuses before pps sees it: gunicorn's own page
    was HTML, which shop clients cannot read."""
    answered, content_type, body = raw_request(shop.server.port, request_bytes)
    assert answered == 400, body
    assert content_type == "application/json", (content_type, body)
    assert json.loads(body) == {"message": "The request is malformed.", "success": False}


@pytest.mark.parametrize("header", ["X-Forwarded-Ssl: on", "X-Forwarded-Protocol: ssl"])
def test_scheme_headers_of_a_client_are_not_read(shop: Shop, header: str) -> None:
    """Only nginx's X-Forwarded-Proto names the scheme. gunicorn also read these two from
    any request nginx passed on, and refused as contradictory (an HTML 400) every request
    whose client, or a proxy before nginx, sent one that disagreed with nginx's."""
    request = (
        f"GET /api-ext/client HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {shop.api_key}\r\n"
        f"Accept: application/json\r\n{header}\r\nConnection: close\r\n\r\n"
    ).encode()
    answered, _, body = raw_request(shop.server.port, request)
    assert answered == 200, body
    assert json.loads(body)["data"]["identifier"] == shop.client


#: A second request hidden in the first one's body, should two parsers frame it differently.
SMUGGLED = "GET /api-ext/smuggled-{marker} HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.mark.parametrize(
    ("framing", "body", "status"),
    [
        ("Content-Length: 4\r\nTransfer-Encoding: chunked", "0\r\n\r\n{smuggled}", 400),
        ("Content-Length: 0\r\nContent-Length: {length}", "{smuggled}", 400),
        ("Content-Length: {length}, 0", "{smuggled}", 400),
        ("Transfer-Encoding: chunked, identity", "0\r\n\r\n{smuggled}", 501),
        ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", "0\r\n\r\n{smuggled}", 400),
        ("Transfer-Encoding : chunked", "0\r\n\r\n{smuggled}", 400),
        ("Transfer-Encoding: chunked", "10000000000000002\r\n{{}}\r\n0\r\n\r\n{smuggled}", 400),
        ("Transfer-Encoding: chunked", "2;x\n0\r\n\r\n{smuggled}\r\n{{}}\r\n0\r\n\r\n", 400),
    ],
)
def test_ambiguous_framing_is_refused_and_smuggles_nothing(
    deployment: Deployment, shop: Shop, framing: str, body: str, status: int
) -> None:
    """Content-Length and Transfer-Encoding together, twice or in a list, an unknown coding,
    a chunk size past 64 bits, a bare LF in a chunk line: nginx refuses each with JSON, and
    the request hidden behind it never reaches gunicorn."""
    marker = uuid.uuid4().hex
    smuggled = SMUGGLED.format(marker=marker)
    request = (
        f"POST /api-ext/user HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {shop.api_key}\r\n"
        f"{framing.format(length=len(smuggled))}\r\n\r\n{body.format(smuggled=smuggled)}"
    )
    answered, content_type, answer = raw_request(shop.server.port, request.encode())
    assert answered == status, answer
    assert content_type == "application/json", (content_type, answer)
    assert_nothing_smuggled(deployment, shop, marker)


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_pps_never_reads_is_not_taken_for_a_request(
    deployment: Deployment, shop: Shop, chunked: bool
) -> None:
    """pps refuses a POST without a valid key before reading its body, on a keep-alive
    connection from nginx: gunicorn must skip the rest of that body, however it was
    framed, not read it as the next request."""
    marker = uuid.uuid4().hex
    smuggled = SMUGGLED.format(marker=marker).encode()
    for _ in range(8):  # over the workers' connections nginx keeps open
        reply = call(
            shop.server.port,
            "POST",
            "/api-ext/user",
            body=smuggled,
            headers={"Authorization": "Bearer not-a-key", "Content-Type": "application/json"},
            chunked=chunked,
        )
        assert_json_error(reply, 401)
    assert_nothing_smuggled(deployment, shop, marker)


def assert_nothing_smuggled(deployment: Deployment, shop: Shop, marker: str) -> None:
    """No request for the marker in gunicorn's log, once a later request is logged there."""
    after = shop.api("GET", "/api-ext/client")
    assert after.status == 200, after.body
    rid = after.header("X-Request-ID") or ""
    log = deployment.server.log
    _wait_for(lambda: f"rid={rid}" in log.read_text(), f"rid={rid} in gunicorn's log")
    time.sleep(0.2)  # another worker's line for a smuggled request would come no later
    assert f"smuggled-{marker}" not in log.read_text()


def test_many_header_lines_reach_the_app(shop: Shop) -> None:
    """nginx bounds headers by size only: 300 short ones reach the app, not gunicorn's
    HTML 431 (its default allows 100 lines)."""
    many = {f"X-Shop-{n}": "1" for n in range(300)}
    reply = shop.api("GET", f"/api-ext/template/{shop.template}", **many)
    assert reply.status == 200, reply.body
    assert reply.json()["data"]["identifier"] == shop.template


def test_error_locations_are_not_reachable_from_outside(shop: Shop) -> None:
    """nginx's own error pages are internal: asked for directly, each is a JSON 404, never
    its status (a client must not read a 413 or a 503 where there is none)."""
    paths = re.findall(r"location = (/_pps_errors/[a-z-]+)", SHIPPED)
    assert len(paths) >= 11, paths
    for path in paths:
        reply = shop.server.call("GET", path)
        assert_json_error(reply, 404)


# -- errors nginx answers itself ---------------------------------------------------------


def assert_json_error(reply: Reply, status: int) -> None:
    assert reply.status == status, reply.body
    assert (reply.header("Content-Type") or "").startswith("application/json"), reply.headers
    assert reply.json()["message"]


def test_body_over_the_limit_is_a_json_413(shop: Shop) -> None:
    too_large = b"x" * (body_limit(SHIPPED) + 1)
    reply = shop.api("POST", "/api-ext/user", body=too_large, Content_Type="application/json")
    assert_json_error(reply, 413)

    # The same without a Content-Length: nginx counts a chunked body as it arrives.
    conn = http.client.HTTPConnection("127.0.0.1", shop.server.port, timeout=30)
    try:
        chunks = (too_large[i : i + 65536] for i in range(0, len(too_large), 65536))
        conn.request(
            "POST",
            "/api-ext/user",
            body=chunks,
            headers={
                "Authorization": f"Bearer {shop.api_key}",
                "Accept": "application/json",
                "Content-Type": "application/json",
            },
            encode_chunked=True,
        )
        response = conn.getresponse()
        chunked = Reply(response.status, response.headers, response.read())
    finally:
        conn.close()
    assert_json_error(chunked, 413)


def multipart_file(name: str, data: bytes) -> tuple[bytes, str]:
    """``data`` as the field ``file`` of a multipart/form-data body, and its content type."""
    boundary = uuid.uuid4().hex
    body = (
        (
            f"--{boundary}\r\n"
            f'Content-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/pdf\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def test_upload_over_the_body_limit_reaches_the_app(shop: Shop) -> None:
    """A print PDF larger than the general limit gets through nginx to pps, which reads it
    and answers (here: it is no PDF); the same body elsewhere is nginx's 413."""
    created = shop.api(
        "POST",
        "/api-ext/draft",
        body=json.dumps(
            {"templateIdentifier": shop.template, "userIdentifier": shop.user, "intent": "upload"}
        ).encode(),
        Content_Type="application/json",
    )
    assert created.status == 201, created.body
    draft_hash = created.json()["data"]["draftHash"]
    body, content_type = multipart_file("art.pdf", os.urandom(2 * body_limit(SHIPPED)))
    assert body_limit(SHIPPED) < len(body) < upload_body_limit(SHIPPED)

    reply = shop.api(
        "POST", f"/api-ext/draft/{draft_hash}/upload", body=body, Content_Type=content_type
    )
    assert_json_error(reply, 422)
    answer = reply.json()
    assert answer["success"] is False
    assert any("not a PDF" in message for message in answer["errors"]["file"]), answer

    elsewhere = shop.api(
        "PUT", f"/api-ext/draft/{draft_hash}", body=body, Content_Type=content_type
    )
    assert_json_error(elsewhere, 413)


def test_upload_over_its_own_limit_is_a_json_413(shop: Shop) -> None:
    """nginx refuses by the announced length, before a byte of the body is sent."""
    conn = http.client.HTTPConnection("127.0.0.1", shop.server.port, timeout=30)
    try:
        conn.putrequest("POST", f"/api-ext/draft/{shop.draft_hash}/upload")
        conn.putheader("Authorization", f"Bearer {shop.api_key}")
        conn.putheader("Accept", "application/json")
        conn.putheader("Content-Type", "multipart/form-data; boundary=x")
        conn.putheader("Content-Length", str(upload_body_limit(SHIPPED) + 1))
        conn.endheaders()
        response = conn.getresponse()
        reply = Reply(response.status, response.headers, response.read())
    finally:
        conn.close()
    assert_json_error(reply, 413)
    assert reply.json() == {"message": "The request body is too large.", "success": False}


def test_gunicorn_down_is_a_json_502_and_recovers(deployment: Deployment, shop: Shop) -> None:
    assert deployment.stop_gunicorn() == 0, deployment.server.log.read_text()
    try:
        reply = shop.api("GET", f"/api-ext/template/{shop.template}")
        assert_json_error(reply, 502)
        assert reply.header("Retry-After") == "5"
    finally:
        deployment.start_gunicorn()
    again = shop.api("GET", f"/api-ext/template/{shop.template}")
    assert again.status == 200, again.body


# -- TLS ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_deployment(
    tmp_path_factory: pytest.TempPathFactory, redis_server: tuple[str, bool]
) -> Iterator[Deployment]:
    yield from deploy(tmp_path_factory.mktemp("nginx-tls"), redis_server[0], with_tls=True)


def test_https_base_url_behind_nginx_tls_gives_secure_cookies(
    tls_deployment: Deployment, tmp_path: Path
) -> None:
    shop = set_up_shop(tls_deployment, tmp_path)
    assert shop.server.base_url.startswith("https://")
    reply = tls_deployment.call_tls("GET", f"/auth?jwt={shop.login_token()}")
    assert reply.status == 302, reply.body
    exchanged = follow_handoff(
        tls_deployment.call_tls, reply, shop.editor_url(), shop.server.base_url
    )
    cookie = session_cookie(exchanged, shop.server.base_url)
    assert cookie["secure"]
    assert cookie["httponly"]
    # __Host-: only a cookie of pps's own host, never one a sibling subdomain planted.
    assert cookie.key.startswith("__Host-")
    assert cookie["path"] == "/" and not cookie["domain"]

    editor = tls_deployment.call_tls(
        "GET",
        local_path(shop.editor_url(), shop.server.base_url),
        headers={"Cookie": f"{cookie.key}={cookie.value}"},
    )
    assert editor.status == 200, editor.body

    # File links point at the https URL and are served over TLS by nginx.
    served = tls_deployment.call_tls("GET", file_link(shop))
    assert served.status == 200, served.body
    assert served.body == stored_preview(tls_deployment, shop)
