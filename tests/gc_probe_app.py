"""A WSGI app that answers with how many objects its worker has frozen (``gc.freeze``).

Loaded by gunicorn with pps's deploy config in tests/test_gunicorn_workers.py; nothing else.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from typing import Any


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [str(gc.get_freeze_count()).encode()]
