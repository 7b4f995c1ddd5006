"""pps under gunicorn with the deploy config, for the tests that talk to it over real HTTP.

Shared by the end-to-end, browser and nginx tests: the server's environment, the ``pps``
console script run against it, starting and stopping gunicorn, plain HTTP calls that
return redirects instead of following them, and login tokens signed the way shops sign them.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from conftest import TEST_SECRET_KEY, free_port, session_cookie_name, wait_for_port
from joserfc import jwt
from joserfc.jwk import OctKey
from joserfc.jws import JWSRegistry

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
GUNICORN_CONF = ROOT / "deploy" / "gunicorn.conf.py"


def pps_script() -> str:
    """The ``pps`` console script of this virtualenv (else the one on PATH)."""
    beside = BIN / "pps"
    found = str(beside) if beside.exists() else shutil.which("pps")
    if found is None:
        pytest.fail("the 'pps' console script is not installed: pip install -e '.[dev]'")
    return found


# lcobucci/jwt writes `jti` into the header; joserfc only signs it with a lenient registry.
LENIENT = JWSRegistry(strict_check_header=False)


def shop_token(api_key: str, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    """HS256 over the API key's UTF-8 bytes, as the shops' JOSE libraries do (joserfc, not
    the PyJWT pps uses)."""
    return jwt.encode(
        {"typ": "JWT", "alg": "HS256", **(header or {})},
        claims,
        OctKey.import_key(api_key),
        registry=LENIENT,
    )


# -- HTTP without magic ------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


def call(
    port: int,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    chunked: bool = False,
) -> Reply:
    """One request on its own connection; redirects are returned, not followed. ``chunked``:
    the body with ``Transfer-Encoding: chunked`` in 64 KiB chunks, without a Content-Length."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        if chunked:
            data = body or b""
            chunks = (data[i : i + 65536] for i in range(0, len(data), 65536))
            conn.request(method, path, body=chunks, headers=headers or {}, encode_chunked=True)
        else:
            conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return Reply(response.status, response.headers, response.read())
    finally:
        conn.close()


def raw_request(port: int, request: bytes) -> tuple[int, str, bytes]:
    """Bytes no HTTP client library would send; the status, Content-Type and body of the
    answer (the server closes the connection)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), headers.get("Content-Type", ""), body


def local_path(location: str, base_url: str) -> str:
    """The path and query of a Location on this server (absolute or relative)."""
    if location.startswith("/"):
        return location
    assert location.startswith(base_url + "/"), location
    parts = urlsplit(location)
    return parts.path + (f"?{parts.query}" if parts.query else "")


# -- the server --------------------------------------------------------------------------


@dataclass
class Server:
    port: int
    base_url: str
    env: dict[str, str]
    instance: Path
    log: Path

    def pps(self, *args: str) -> Any:
        """Run the ``pps`` console script against this server's settings; parse its JSON."""
        done = subprocess.run(
            [str(BIN / "pps"), *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"pps {' '.join(args)} failed:\n{done.stdout}{done.stderr}"
        return json.loads(done.stdout) if "--json" in args else done.stdout

    def call(self, method: str, path: str, **kwargs: Any) -> Reply:
        return call(self.port, method, path, **kwargs)


def api_json(base_url: str, api_key: str, method: str, path: str, body: Any = None) -> Any:
    """A shop's API call with its bearer key: the decoded JSON answer (HTTPError otherwise)."""
    request = urllib.request.Request(
        base_url + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={
            "Authorization": f"Bearer {api_key}",
            "Accept": "application/json",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def follow_handoff(
    call: Callable[..., Reply], reply: Reply, editor_url: str, base_url: str
) -> Reply:
    """What a browser does with /auth's answer for an editor: its Location is ``editor_url``
    plus a single-use handoff code (``pps.auth.handoff``); GET it for the session cookie.
    Returns the exchange's answer: a 303 back to ``editor_url`` that sets the cookie."""
    location = reply.header("Location") or ""
    assert location.startswith(editor_url), (location, editor_url)
    assert re.fullmatch(r"[?&]handoff=[A-Za-z0-9_-]{43}", location[len(editor_url) :]), location
    assert session_cookie_name(base_url) not in str(reply.headers.get_all("Set-Cookie") or [])
    exchanged = call("GET", local_path(location, base_url))
    assert exchanged.status == 303, exchanged.body
    assert exchanged.header("Location") == local_path(editor_url, base_url)
    return exchanged


def server_env(port: int, instance: Path, database_url: str, redis_url: str) -> dict[str, str]:
    """The environment without any outer ``PPS_*``, for a server bound to ``port``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PPS_")}
    env.update(
        PPS_BIND=f"127.0.0.1:{port}",
        PPS_BASE_URL=f"http://127.0.0.1:{port}",
        PPS_SECRET_KEY=TEST_SECRET_KEY,
        PPS_INSTANCE_PATH=str(instance),
        PPS_DATABASE_URL=database_url,
        PPS_REDIS_URL=redis_url,
    )
    return env


@dataclass
class ThreadModeShop:
    """A pps without Redis, set up and not started, and a shop's client on it: batches
    and the webhook outbox run in threads of the app process."""

    server: Server
    client: dict[str, Any]
    template: dict[str, Any]

    def api(self, method: str, path: str, body: Any = None) -> Any:
        return api_json(self.server.base_url, self.client["apiKey"], method, path, body)


def thread_mode_shop(tmp: Path, database_url: str, **settings: str) -> ThreadModeShop:
    """A migrated pps on a free port without ``PPS_REDIS_URL`` (``settings`` added to its
    environment), a client that may call back to 127.0.0.1, and the business card."""
    port = free_port()
    env = server_env(port, tmp / "instance", database_url, "")
    del env["PPS_REDIS_URL"]
    env.update(settings)
    server = Server(port, f"http://127.0.0.1:{port}", env, tmp / "instance", tmp / "log")
    server.pps("db", "upgrade")
    client = server.pps("client", "create", "--name", "Shop", "--json")
    server.pps("client", "allow-host", client["identifier"], "127.0.0.1")
    card = ROOT / "examples" / "templates" / "business-card" / "template.json"
    imported = ("template", "import", str(card), "--client", client["identifier"], "--json")
    return ThreadModeShop(server, client, server.pps(*imported))


def start_gunicorn(
    env: dict[str, str], port: int, log: Path, *args: str, app: str = "wsgi:app"
) -> subprocess.Popen[bytes]:
    """gunicorn with the deploy config (and ``args``) serving ``app`` on ``port`` (bound by
    ``PPS_BIND`` in ``env``), its output appended to ``log``; the test fails with that output
    when it does not start."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [str(BIN / "gunicorn"), "-c", str(GUNICORN_CONF), *args, app],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for_port(port, timeout=30)
    except RuntimeError:
        stop(proc)
        pytest.fail(f"gunicorn did not start:\n{log.read_text()}")
    return proc


@contextmanager
def served(tmp: Path, redis_url: str, **settings: str) -> Iterator[Server]:
    """pps under gunicorn with the deploy config on a free port, on a fresh migrated SQLite
    database in ``tmp``; ``settings`` (``PPS_WORKERS="1"``, ...) override the environment.
    Stopped on exit."""
    port = free_port()
    env = server_env(port, tmp / "instance", f"sqlite:///{tmp / 'pps.sqlite3'}", redis_url)
    env.update(settings)
    server = Server(
        port=port,
        base_url=f"http://127.0.0.1:{port}",
        env=env,
        instance=tmp / "instance",
        log=tmp / "pps.log",
    )
    server.pps("db", "upgrade")
    proc = start_gunicorn(env, port, server.log)
    try:
        yield server
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Graceful stop (gunicorn drains its workers on SIGTERM), then the hard way."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            # start_new_session made the master the leader of its own group: its workers.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def png_bytes(width: int = 4, height: int = 3) -> bytes:
    """A real (tiny, grey) PNG, built with zlib and struct only."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
