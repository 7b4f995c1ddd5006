"""Login handoff codes: how a login reaches an editor that never saw the ``/auth`` response.

A shop may call ``/auth`` from its own server and load the ``Location`` it got into an
iframe (the reference's editor demo does): the browser never received a cookie from
``/auth``, and a cookie set there would not reach a cross-site frame anyway. So for editor
redirects on pps's own origin ``/auth`` sets no cookie; it stores the session the login
grants under a random code, for :data:`HANDOFF_TTL` seconds, in the same atomic step that
uses up the token's ``jti``, and appends ``handoff=<code>`` to the ``Location``. The editor
exchanges the code, once, for a fresh session. Plain Python, no Flask.

The code is 256 random bits (:func:`pps.platform.ids.secret_token`), looked up by exact key,
so it needs no signature and no constant-time comparison: there is nothing to compare.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote_plus

from pps.platform.ephemeral import EphemeralStore, handoff_key
from pps.platform.ids import secret_token

__all__ = [
    "HANDOFF_PARAM",
    "HANDOFF_TTL",
    "encode_grant",
    "is_handoff_part",
    "new_code",
    "take_handoff",
    "with_handoff",
]

HANDOFF_PARAM = "handoff"
HANDOFF_TTL = 120
"""Seconds a handoff code can be exchanged: enough for a shop to render its page."""

_CODE = re.compile(r"[A-Za-z0-9_-]{43}")


def new_code() -> str:
    return secret_token(32)


def with_handoff(location: str, code: str) -> str:
    """``location`` with ``handoff=<code>`` in its query (before any fragment), instead of
    any ``handoff`` it named already: a shop that signs a ``Location`` an earlier login
    answered would otherwise send the browser to its used code, which the editor reads
    first, and the login would be spent on a "link used" page."""
    address, hash_mark, fragment = location.partition("#")
    path, _, query = address.partition("?")
    kept = [part for part in query.split("&") if part and not is_handoff_part(part)]
    kept.append(f"{HANDOFF_PARAM}={code}")
    return f"{path}?{'&'.join(kept)}{hash_mark}{fragment}"


def is_handoff_part(part: str) -> bool:
    """Whether ``part`` of a raw query (``name=value``) is a handoff code, its name
    percent-encoded or not (``hand%6Fff`` is the same name to the editor's query parser)."""
    return unquote_plus(part.partition("=")[0]) == HANDOFF_PARAM


def encode_grant(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"))


def take_handoff(store: EphemeralStore, code: str) -> dict[str, Any] | None:
    """The session data stored under ``code``, removed in the same step; None when the code
    is malformed, unknown, used already or expired (the caller cannot tell which, on purpose).
    Raises ``EphemeralUnavailable`` when the store cannot answer."""
    if not _CODE.fullmatch(code):
        return None
    raw = store.take_link(handoff_key(code))
    if raw is None:
        return None
    data = json.loads(raw)
    return data if isinstance(data, dict) else None
