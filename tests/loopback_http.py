"""A real HTTP server on 127.0.0.1, served from a thread of the test process.

The receivers of notifications and webhooks, the shop that serves PDFs and the shop's ACL
the tests talk to are each one of these, with a handler of their own.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve_on_loopback(
    handler: type[BaseHTTPRequestHandler], port: int = 0
) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start serving ``handler`` on 127.0.0.1 (``port`` 0: a free one); the thread polls
    often, so ``server.shutdown()`` returns at once."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    return server, thread
