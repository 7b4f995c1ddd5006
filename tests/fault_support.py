"""Backing services a test can break: a private redis-server and a private PostgreSQL cluster.

Each runs as a real process on a free port of its own, so a test may stop it (SIGSTOP: the
kernel still accepts connections, nothing answers), kill it and start it again on the same
port, without touching the shared servers of the machine or of other tests. Shared by the
fault tests; the shops' side (a client, a user, a draft with a stored print file) is
arranged straight through the repository and the file storage.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import sqlalchemy as sa
from conftest import TEST_SECRET_KEY, free_port, missing_service, wait_for_port
from server_support import call, server_env, shop_token, start_gunicorn, stop

from app import create_app
from pps.files.keys import draft_file_key
from pps.platform.repository.sql import SqlRepository, upgrade_database
from pps.platform.storage import open_storage

PG_BIN = Path("/usr/lib/postgresql/15/bin")
PDF = b"%PDF-1.7\n" + bytes(range(256)) * 4 + b"\n%%EOF\n"
#: The signature of a PNG: an upload refused or answered before its content is looked at.
PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)


def multipart_field(boundary: str, name: str, data: bytes, filename: str | None = None) -> bytes:
    """One part of a ``multipart/form-data`` body."""
    disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
    head = f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
    return head + data + b"\r\n"


class RedisProcess:
    """``redis-server`` on a free port, with nothing saved to disk."""

    def __init__(self, workdir: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            missing_service("redis-server is not installed")
        self.binary = str(binary)
        self.workdir = workdir
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""],
            cwd=self.workdir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port)

    def freeze(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def close(self) -> None:
        self.kill()


class PostgresCluster:
    """A PostgreSQL 15 cluster of its own (``initdb`` in a temp dir) on a free port.

    PostgreSQL refuses to run as root; as root (CI) the cluster belongs to the ``postgres``
    OS user and every server command runs through ``runuser``. Trust authentication on
    127.0.0.1 only; fsync off, as nothing here must survive a crash.
    """

    def __init__(self) -> None:
        if not (PG_BIN / "initdb").exists():
            missing_service(f"PostgreSQL server binaries are not installed in {PG_BIN}")
        self.root = Path(tempfile.mkdtemp(prefix="pps-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                missing_service("running as root needs a 'postgres' OS user for PostgreSQL")
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
            self._as_user = ["runuser", "-u", "postgres", "--"]
        self._run(
            str(PG_BIN / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
        )
        self.start()

    def _run(self, *command: str) -> None:
        subprocess.run(
            [*self._as_user, *command],
            check=True,
            capture_output=True,
            cwd=self.root,
            timeout=120,
        )

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        log = (self.root / "server.log").open("ab")
        self.proc = subprocess.Popen(
            [
                *self._as_user,
                str(PG_BIN / "postgres"),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-k",
                str(self.root),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=60",
            ],
            cwd=self.root,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
        log.close()  # the server holds its own copy
        engine = sa.create_engine(
            self.url(), connect_args={"connect_timeout": 2}, poolclass=sa.pool.NullPool
        )
        deadline = time.monotonic() + 30
        try:
            while time.monotonic() < deadline:
                try:
                    with engine.connect():
                        return
                except sa.exc.OperationalError:
                    time.sleep(0.1)
        finally:
            engine.dispose()
        raise RuntimeError(f"PostgreSQL did not start:\n{self.log()}")

    def log(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def children(self) -> list[int]:
        """The postmaster's children: a backend per connection and its helpers."""
        found: list[int] = []
        for task in Path(f"/proc/{self.postmaster_pid()}/task").iterdir():
            found += [int(pid) for pid in (task / "children").read_text().split()]
        return found

    def processes(self) -> list[int]:
        return [self.postmaster_pid(), *self.children()]

    def running(self) -> list[int]:
        """Processes of the cluster that are neither stopped (state ``T``) nor exited and
        waiting for the stopped postmaster to reap them (``Z``)."""
        running = []
        for pid in self.processes():
            with contextlib.suppress(FileNotFoundError):
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state not in ("T", "Z"):
                    running.append(pid)
        return running

    def sessions(self, database: str) -> int:
        """Client connections open on ``database``, idle or busy."""
        engine = sa.create_engine(self.url(), poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as conn:
                count = conn.execute(
                    sa.text(
                        "SELECT count(*) FROM pg_stat_activity"
                        " WHERE datname = :name AND backend_type = 'client backend'"
                    ),
                    {"name": database},
                ).scalar_one()
        finally:
            engine.dispose()
        return int(count)

    def freeze(self) -> None:
        """Stop the postmaster: new connections hang (the kernel accepts, nobody answers)."""
        os.kill(self.postmaster_pid(), signal.SIGSTOP)

    def freeze_all(self) -> None:
        """Stop every process of the cluster, as a hung VM or stuck storage would: open
        sessions stop mid-query too, and the server enforces no timeout of its own.

        Each child runs in a session of its own (PostgreSQL calls ``setsid``), so a signal
        to the postmaster's process group would miss them: they are stopped one by one,
        the postmaster first, so that it forks no new one meanwhile. Returns once the
        kernel shows every one stopped.
        """
        self.freeze()
        for pid in self.children():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while self.running():
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster processes still running: {self.running()}")
            time.sleep(0.01)

    @contextlib.contextmanager
    def all_frozen(self, at_most: float = 15.0) -> Iterator[None]:
        """Every process stopped for the block, and continued after it or after
        ``at_most`` seconds, whichever comes first: a wait that nothing else ends fails
        its test instead of hanging it."""
        self.freeze_all()
        rescue = threading.Timer(at_most, self.thaw)
        rescue.start()
        try:
            yield
        finally:
            rescue.cancel()
            self.thaw()

    def thaw(self) -> None:
        """Continue every process of the cluster: the postmaster's children, the
        postmaster, and ``runuser`` in front of it, which stops itself when its child stops
        (as ``su`` does for job control)."""
        assert self.proc is not None
        for pid in self.children():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        os.killpg(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        """Fast shutdown: sessions are ended, then the server exits."""
        if self.proc is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self.thaw()  # a stopped process would not end
        with contextlib.suppress(OSError, ValueError):
            os.killpg(self.proc.pid, signal.SIGCONT)
            os.kill(self.postmaster_pid(), signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None

    def create_database(self, name: str) -> str:
        admin = sa.create_engine(self.url(), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        url = self.url(name)
        upgrade_database(url)
        return url

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class Shop:
    """What the fault tests call with: a client, a user and a draft with a print file."""

    client: str
    api_key: str
    user: str
    draft_hash: str


def arrange_shop(database_url: str, files_dir: Path) -> Shop:
    """A client, a user, a template and a draft whose print PDF is stored already (so a
    file request needs the token store and nothing else), on a repository of its own that
    is closed again: the app under test starts with no pooled connection."""
    repo = SqlRepository(database_url)
    try:
        client = repo.create_client("Shop")
        user = repo.create_user(client.identifier, {})
        template = repo.create_template(
            client.identifier,
            name="Card",
            data_keys=["title"],
            custom_attributes={},
            page_count=1,
            spec={},
        )
        draft = repo.create_draft(
            client.identifier,
            user_identifier=user.identifier,
            template_identifier=template.identifier,
            intent="customize",
            api_default_values={"title": "Hello"},
            custom_attributes={},
        )
        assert draft is not None
    finally:
        repo.close()
    storage = open_storage(files_dir)
    storage.put(draft_file_key(client.identifier, draft.draft_hash, draft.version, "print"), PDF)
    return Shop(client.identifier, client.api_key, user.identifier, draft.draft_hash)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    seconds: float

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


Caller = Callable[..., Answer]


@dataclass
class EditorSession:
    """A browser's editor login: its session cookie and the page's CSRF token."""

    cookie: str
    csrf_token: str


@dataclass
class Service:
    call: Caller
    shop: Shop
    redis: RedisProcess
    database_url: str

    def api(self, method: str, path: str, body: bytes | None = None) -> Answer:
        headers = {"Authorization": f"Bearer {self.shop.api_key}", "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        return self.call(method, path, body=body, headers=headers)

    def auth(self) -> Answer:
        claims = {
            "client": self.shop.client,
            "user": self.shop.user,
            "redirect": "/",
            "iat": int(time.time()),
        }
        token = shop_token(self.shop.api_key, claims, {"jti": f"jti-{time.monotonic_ns()}"})
        return self.call("GET", f"/auth?jwt={token}")

    def file(self) -> Answer:
        now = int(time.time())
        token = shop_token(
            self.shop.api_key, {"client": self.shop.client, "iat": now, "exp": now + 300}
        )
        return self.call("GET", f"/api-ext/files/draft/{self.shop.draft_hash}/print?jwt={token}")

    def editor_login(self) -> EditorSession:
        """Log in through ``/auth`` for the draft's editor, as a browser does (the handoff
        code exchanged for the session cookie), and open its edit step for the CSRF token."""
        edit = f"/editor/{self.shop.draft_hash}/edit"
        claims = {
            "client": self.shop.client,
            "user": self.shop.user,
            "redirect": edit,
            "iat": int(time.time()),
        }
        token = shop_token(self.shop.api_key, claims, {"jti": f"jti-{time.monotonic_ns()}"})
        login = self.call("GET", f"/auth?jwt={token}")
        assert login.status == 302, login.body[:300]
        location = login.header("Location") or ""
        exchanged = self.call("GET", location[location.index("/editor/") :])
        assert exchanged.status == 303, exchanged.body[:300]
        cookie = (exchanged.header("Set-Cookie") or "").split(";")[0]
        page = self.call("GET", edit, headers={"Cookie": cookie})
        assert page.status == 200, page.body[:300]
        if page.header("Set-Cookie"):  # the session now holds the page's CSRF token
            cookie = (page.header("Set-Cookie") or "").split(";")[0]
        found = re.search(rb'name="csrf_token" value="([^"]+)"', page.body)
        assert found is not None
        return EditorSession(cookie, found.group(1).decode())

    def autosave(self, session: EditorSession) -> Answer:
        body = json.dumps({"baseVersion": 1, "values": {"title": "Saved while typing"}})
        return self.call(
            "POST",
            f"/editor/{self.shop.draft_hash}/autosave",
            body=body.encode(),
            headers={
                "Cookie": session.cookie,
                "X-CSRF-Token": session.csrf_token,
                "Content-Type": "application/json",
            },
        )

    def upload(self, session: EditorSession, image: bytes = PNG, chunked: bool = False) -> Answer:
        """The editor's media script uploading ``image`` for the DataKey ``title``
        (``Accept: application/json``, as ``editor-media.js`` sends it); ``chunked``: without
        a Content-Length, as a body of unknown length arrives."""
        boundary = "pps-test-boundary"
        body = b"".join(
            [
                multipart_field(boundary, "csrf_token", session.csrf_token.encode()),
                multipart_field(boundary, "upload", b"title"),
                multipart_field(boundary, "image:title", image, filename="logo.png"),
                f"--{boundary}--\r\n".encode(),
            ]
        )
        return self.call(
            "POST",
            f"/editor/{self.shop.draft_hash}/upload",
            body=body,
            headers={
                "Cookie": session.cookie,
                "Content-Type": f"multipart/form-data; boundary={boundary}",
                "Accept": "application/json",
            },
            chunked=chunked,
        )

    def preview(self, session: EditorSession) -> Answer:
        """The edit step's script asking for a live preview of page 1 (``editor.js``)."""
        body = urlencode({"csrf_token": session.csrf_token, "v:title": "Typed"}).encode()
        return self.call(
            "POST",
            f"/editor/{self.shop.draft_hash}/page/0.png",
            body=body,
            headers={
                "Cookie": session.cookie,
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "image/jpeg, image/png;q=0.9, application/json;q=0.8",
            },
        )

    def submit(self) -> Answer:
        body = json.dumps({"draftIds": [self.shop.draft_hash]}).encode()
        return self.api("POST", "/api-ext/pdf-processing", body)


def flask_caller(app: Any) -> Caller:
    def flask_call(
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        chunked: bool = False,
    ) -> Answer:
        started = time.monotonic()
        client = app.test_client(use_cookies=False)  # cookies as the caller sends them
        sent: dict[str, Any] = {"data": body}
        if chunked:  # as gunicorn hands a chunked body to the app: its end marked
            sent = {
                "input_stream": io.BytesIO(body or b""),
                "environ_overrides": {"wsgi.input_terminated": True},
            }
            headers = {**(headers or {}), "Transfer-Encoding": "chunked"}
        with client.open(path, method=method, headers=headers or {}, **sent) as response:
            seconds = time.monotonic() - started
            names = {name.lower(): value for name, value in response.headers.items()}
            names["set-cookie"] = ";".join(response.headers.getlist("Set-Cookie"))
            return Answer(response.status_code, names, response.get_data(), seconds)

    return flask_call


def http_caller(port: int) -> Caller:
    def http_call(
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        chunked: bool = False,
    ) -> Answer:
        started = time.monotonic()
        reply = call(port, method, path, body=body, headers=headers, chunked=chunked)
        seconds = time.monotonic() - started
        names = {name.lower(): value for name, value in reply.headers.items()}
        names["set-cookie"] = ";".join(reply.headers.get_all("Set-Cookie") or [])
        return Answer(reply.status, names, reply.body, seconds)

    return http_call


@contextlib.contextmanager
def serving(
    mode: str,
    tmp_path: Path,
    database_url: str,
    redis_process: RedisProcess,
    *,
    config: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Service]:
    """pps on ``database_url`` and ``redis_process`` with a shop arranged in it, called
    through the Flask test client (``mode`` "flask") or a real one-worker gunicorn
    ("gunicorn", whose log must show no worker timeout when it stops)."""
    instance = tmp_path / "instance"
    shop = arrange_shop(database_url, instance / "files")
    if mode == "flask":
        app = create_app(
            {
                "instance_path": instance,
                "database_url": database_url,
                "redis_url": redis_process.url,
                "secret_key": TEST_SECRET_KEY,
                "base_url": "http://localhost",
                **(config or {}),
            }
        )
        try:
            yield Service(flask_caller(app), shop, redis_process, database_url)
        finally:
            app.extensions["pps"].close()
        return
    port = free_port()
    server = {**server_env(port, instance, database_url, redis_process.url), **(env or {})}
    log = tmp_path / "gunicorn.log"
    proc = start_gunicorn(server, port, log, "--workers", "1")
    # A first request loads what a worker loads once; not part of what is timed.
    assert call(port, "GET", "/openapi.json").status == 200
    try:
        yield Service(http_caller(port), shop, redis_process, database_url)
    finally:
        stop(proc)
    text = log.read_text()
    assert "WORKER TIMEOUT" not in text, text


def assert_autosave_unavailable_then_saved(
    service: Service, session: EditorSession, answer: Answer, *, bound: float, names: str
) -> None:
    """``answer``, an autosave during an outage, is the JSON 503 the editor's script reads
    (its message naming the outage with ``names``), in time; the next autosave, after it,
    saves. Not ``assert_unavailable``: the answer may refresh the login's own cookie."""
    assert answer.status == 503, (answer.status, answer.body[:300])
    assert answer.seconds < bound, answer.seconds
    assert int(answer.header("Retry-After") or 0) > 0
    assert (answer.header("Content-Type") or "").startswith("application/json")
    assert names in json.loads(answer.body)["message"]
    saved = service.autosave(session)
    assert saved.status == 200, saved.body[:300]
    assert json.loads(saved.body)["changed"] is True


def assert_script_answers_unavailable(answers: list[Answer], *, bound: float, names: str) -> None:
    """Answers to the editor's scripts (upload, live preview) during an outage: the JSON
    503 they read, its ``message`` naming the outage with ``names``, with ``Retry-After``,
    in time; never the HTML error page."""
    for answer in answers:
        assert answer.status == 503, (answer.status, answer.body[:300])
        assert answer.seconds < bound, answer.seconds
        assert int(answer.header("Retry-After") or 0) > 0
        assert (answer.header("Content-Type") or "").startswith("application/json"), answer.body
        assert names in json.loads(answer.body)["message"]
