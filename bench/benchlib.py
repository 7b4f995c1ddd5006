"""What the benchmark scripts share: paths, tokens, a tiny PNG, processes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
BIN = Path(sys.executable).parent
GUNICORN_CONF = ROOT / "deploy" / "gunicorn.conf.py"
SECRET_KEY = "bench-secret-key-0123456789abcdef"
SHOP_CALLBACK = "https://shop.example/checkout/cart/add?product=42&qty=1"
DATA_KEYS = ["firstName", "lastName", "email"]
PRINT_PDF = b"%PDF-1.4\n% a stand-in print file for the file endpoint benchmark\n%%EOF\n"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def sign_hs256(key: str, header: dict[str, Any], claims: dict[str, Any]) -> str:
    """A compact HS256 JWS as lcobucci/jwt and jose write it (fast: no JOSE library)."""
    head = b64url(json.dumps(header, separators=(",", ":")).encode())
    body = b64url(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = f"{head}.{body}".encode("ascii")
    signature = hmac.new(key.encode("utf-8"), signing_input, hashlib.sha256).digest()
    return f"{head}.{body}.{b64url(signature)}"


def editor_url(base_url: str, draft_hash: str) -> str:
    callback = quote(base64.b64encode(SHOP_CALLBACK.encode()).decode(), safe="")
    return f"{base_url}/editor/{draft_hash}/edit?callback={callback}"


def login_token(
    api_key: str, client: str, user: str, redirect: str, jti: str, now: float | None = None
) -> str:
    """A login token shaped like the PHP SDK's: jti in the header, float iat, no exp."""
    issued = round(time.time() if now is None else now, 6)
    return sign_hs256(
        api_key,
        {"typ": "JWT", "alg": "HS256", "jti": jti},
        {"client": client, "user": user, "redirect": redirect, "iat": issued},
    )


def file_token(
    api_key: str, client: str, url_path: str, lifetime: int = 3600, jti: str | None = None
) -> str:
    """A file token. Without ``jti`` it is reusable: one token serves every request of a
    run; with one (in the header, as for logins) it is good for one request."""
    now = time.time()
    header = {"typ": "JWT", "alg": "HS256"} | ({"jti": jti} if jti is not None else {})
    return sign_hs256(
        api_key, header, {"client": client, "urlPath": url_path, "iat": now, "exp": now + lifetime}
    )


def png_bytes(width: int = 4, height: int = 3) -> bytes:
    """A real (tiny, grey) PNG, built with zlib and struct only."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU time (user and system) of process ``pid`` and its live descendants so far, from
    /proc; None where there is no /proc (not Linux) or the process is gone.

    A gunicorn master's workers are its children: sampled before and after a run, the
    difference is what the app's processes spent on it, whatever worker served what.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            with open(f"/proc/{current}/stat") as stat:
                # The command name (field 2) may hold spaces: count fields after its ")".
                fields = stat.read().rpartition(")")[2].split()
            with open(f"/proc/{current}/task/{current}/children") as children:
                pending.extend(int(child) for child in children.read().split())
        except OSError:
            if current == pid:
                return None
            continue  # a descendant that exited meanwhile: counted without it
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, wait, and only then SIGKILL the process group this script started."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # started with start_new_session: its own group
        proc.wait(timeout=10)


@contextmanager
def spawned(
    args: list[str], *, log: Path, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> Iterator[Any]:
    """Run ``args`` in ``cwd`` in its own session with output to ``log``; always stopped
    on exit."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield proc
    finally:
        stop(proc)


@contextmanager
def redis_server(workdir: Path, *, transport: str = "tcp") -> Iterator[str]:
    """A throw-away redis-server, persisted as docs/deployment.md asks; yields its URL.

    It keeps every nonce as production must (``appendonly yes``, fsync every second, and
    ``noeviction``), so the benchmarks pay the append-only file's writes as a deployment
    does. ``transport`` is ``tcp`` (a free port on 127.0.0.1) or ``unix`` (a socket file in
    ``workdir``, as a Redis on the same host as pps is best reached).
    """
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit(
            "redis-server is not installed. On Debian/Ubuntu: apt-get install -y redis-server"
        )
    port = free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    args += ["--appendonly", "yes", "--appendfsync", "everysec"]
    # A rewrite of the append-only file forks redis-server (at 64 MB by default, which one
    # load.py invocation nearly reaches); its CPU would land on whichever run is under way.
    args += ["--auto-aof-rewrite-min-size", "4gb"]
    args += ["--maxmemory-policy", "noeviction", "--dir", str(workdir)]
    socket_path = workdir / "redis.sock"
    if transport == "unix":
        args += ["--unixsocket", str(socket_path), "--unixsocketperm", "700"]
    with spawned(args, log=workdir / "redis.log") as proc:
        wait_for_port(port, proc)
        if transport == "unix":
            yield f"unix://{socket_path}?db=0"
        else:
            yield f"redis://127.0.0.1:{port}/0"
