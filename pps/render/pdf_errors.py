"""The reason a PDF cannot be read, in words that can be shown to whoever sent it.

pikepdf names a PDF opened from memory by the stream's Python repr (``stream
<_io.BytesIO object at 0x7f...>: unable to find trailer dictionary ...``): a detail of the
server, with a memory address that differs on every call. The reason is kept, the name
of the stream dropped.
"""

from __future__ import annotations

import re

__all__ = ["read_error"]

_STREAM_NAME = re.compile(r"^stream <[^<>]*>(?::\s*|\s+)")


def read_error(exc: BaseException) -> str:
    """``exc``'s message without the in-memory stream's name (its type when it is empty)."""
    return _STREAM_NAME.sub("", str(exc)) or type(exc).__name__
