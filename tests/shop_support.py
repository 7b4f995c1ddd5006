"""A shop's web server on 127.0.0.1 for the upload-by-URL tests: files it serves, callbacks
it receives, and every request it saw (so a test can say that nothing was sent)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback_http import serve_on_loopback


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Served:
    """What a GET of a path answers: ``body`` at once, or ``trickle`` bytes a second (the
    slow shop); ``length`` False sends no Content-Length (the body ends with the
    connection); ``statuses`` the status of each GET in turn (the last repeats); ``cut``
    announces the whole body's length but sends only its first half, then hangs up."""

    body: bytes = b""
    statuses: list[int] = field(default_factory=lambda: [200])
    length: bool = True
    trickle: bool = False
    cut: bool = False


class Shop:
    def __init__(self) -> None:
        self.files: dict[str, Served] = {}
        self.seen: list[Seen] = []
        #: Paths whose whole body was written (a reader that stopped leaves it out), and
        #: paths whose GET was answered, completely or not.
        self.completed: list[str] = []
        self.finished: list[str] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        shop = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def _record(self) -> Seen:
                size = int(self.headers.get("Content-Length") or 0)
                seen = Seen(
                    self.command, self.path, dict(self.headers.items()), self.rfile.read(size)
                )
                with shop.lock:
                    shop.seen.append(seen)
                return seen

            def do_GET(self) -> None:
                self._record()
                try:
                    self._answer()
                finally:
                    with shop.lock:
                        shop.finished.append(self.path)

            def _answer(self) -> None:
                served = shop.files.get(self.path)
                if served is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                gets = sum(1 for s in shop.requests() if s.path == self.path)
                status = served.statuses[min(gets, len(served.statuses)) - 1]
                self.send_response(status)
                self.send_header("Content-Type", "application/pdf")
                if status != 200:  # no body: the file is not sent with another status
                    self.send_header("Content-Length", "0")
                elif served.length and not served.trickle:
                    self.send_header("Content-Length", str(len(served.body)))
                self.end_headers()
                if status != 200:
                    return
                try:
                    if served.trickle:
                        for byte in served.body:
                            if shop.stopping.wait(0.2):
                                return
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                    elif served.cut:
                        self.wfile.write(served.body[: len(served.body) // 2])
                        self.wfile.flush()
                        return
                    else:
                        self.wfile.write(served.body)
                    self.wfile.flush()
                    with shop.lock:
                        shop.completed.append(self.path)
                except OSError:
                    pass  # pps stopped reading: what the tests of limits want

            def do_POST(self) -> None:
                seen = self._record()
                if seen.path in shop.files:  # a receiver that answers as a file is served
                    try:
                        self._answer()
                    finally:
                        with shop.lock:
                            shop.finished.append(self.path)
                    return
                answer = b'{"success":true}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server, self.thread = serve_on_loopback(Handler)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def serve(self, path: str, served: Served) -> str:
        self.files[path] = served
        return self.base + path

    def requests(self, method: str | None = None) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if method is None or s.method == method]

    def close(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def running_shop() -> Iterator[Shop]:
    """A shop for one test (its fixture: ``with running_shop() as shop: yield shop``)."""
    server = Shop()
    try:
        yield server
    finally:
        server.close()


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Poll ``predicate`` until it is true (bounded); its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("the condition did not come true in time")
