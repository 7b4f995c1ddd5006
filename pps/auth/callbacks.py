"""Editor URLs and the shop's callback parameters in them. Plain Python, no Flask.

Shops send users to ``{base}/editor/<draftHash>[/<step>]?callback=<b64>&callback_cancel=<b64>
&callback_halt=<b64>&callback_target=<name>&locale=xx``: each callback is a URL, encoded as
standard base64 with padding and then URL-encoded. ``callback_cancel`` defaults to
``callback`` and ``callback_halt`` to ``callback_cancel``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote_plus, urlsplit

from pps.auth.redirects import (
    RedirectRefused,
    RedirectTarget,
    origin_of,
    own_origin,
    path_of,
    safe_redirect_target,
)

__all__ = [
    "CALLBACK_PARAMS",
    "EditorTarget",
    "decode_callback",
    "editor_callbacks",
    "editor_target",
    "query_callbacks",
    "vetted_callbacks",
    "with_defaults",
]

CALLBACK_PARAMS = ("callback", "callback_cancel", "callback_halt")
_EDITOR_PATH = re.compile(r"/editor/(?P<draft>[^/?#]+)(?:/(?P<step>[^/?#]+))?/?")
#: Decoded callbacks longer than this are dropped: the signed ones are kept in the session
#: cookie, and three of them must fit its 4 KB with room to spare.
_MAX_CALLBACK_LENGTH = 1024


@dataclass(frozen=True)
class EditorTarget:
    draft_hash: str
    step: str | None
    query: str
    """The query string as it came, still URL-encoded (see :func:`query_callbacks`)."""


def editor_target(redirect: RedirectTarget, base_url: str) -> EditorTarget | None:
    """The editor address a checked redirect target points at on this service, or None.

    Absolute targets count only when they are on the origin (and below the path) of
    ``base_url``.
    """
    path = path_of(redirect)
    if redirect.origin is not None:
        if redirect.origin != own_origin(base_url):
            return None
        prefix = _base_path(base_url)
        if prefix:
            if not path.startswith(prefix + "/"):
                return None
            path = path[len(prefix) :]
    path, _, query = path.partition("#")[0].partition("?")
    match = _EDITOR_PATH.fullmatch(path)
    if match is None:
        return None
    return EditorTarget(draft_hash=match["draft"], step=match["step"], query=query)


@lru_cache(maxsize=16)
def _base_path(base_url: str) -> str:
    """The path the service is mounted under ("" at the root), parsed once per process."""
    return urlsplit(base_url).path.rstrip("/")


def decode_callback(value: str) -> str | None:
    """A callback URL from its base64 form, or None when it is not base64 of UTF-8 text.

    A ``+`` that reached us as a space (the shop forgot to URL-encode it) is put back, and
    missing padding or the URL-safe alphabet are tolerated: the value is signed by the shop
    (or checked against its origins), so leniency costs nothing here.
    """
    body = value.strip().replace(" ", "+").replace("-", "+").replace("_", "/").rstrip("=")
    if not body or len(body) > _MAX_CALLBACK_LENGTH * 2:
        return None
    try:
        decoded = base64.b64decode(body + "=" * (-len(body) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return decoded if 0 < len(decoded) <= _MAX_CALLBACK_LENGTH else None


def editor_callbacks(query: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """The decoded callbacks of an editor query, as given (defaults: :func:`with_defaults`).

    A value that is given but cannot be decoded (not base64 of UTF-8, too long) is kept as
    ``""``, which no check follows: the shop asked for that place, so it must not default
    to another callback (a cancel to ``callback``, which may put the design into the cart).
    An empty value counts as absent. The result is not checked for where it points: see
    :func:`vetted_callbacks`.
    """
    decoded: dict[str, str] = {}
    for name in CALLBACK_PARAMS:
        values = list(query.get(name, ()))
        if values and values[0].strip():
            decoded[name] = decode_callback(values[0]) or ""
    return decoded


def query_callbacks(query: str) -> dict[str, str]:
    """:func:`editor_callbacks` of a raw query string.

    The same as ``editor_callbacks(parse_qs(query, keep_blank_values=True))``, but only the
    callback parameters are decoded: a login reads nothing else of the editor URL.
    """
    first: dict[str, list[str]] = {}
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if "%" in name or "+" in name:
            name = unquote_plus(name)
        if name in CALLBACK_PARAMS and name not in first:
            first[name] = [unquote_plus(value)]
    return editor_callbacks(first)


def with_defaults(callbacks: Mapping[str, str]) -> dict[str, str]:
    """``callback_cancel`` defaults to ``callback``, ``callback_halt`` to ``callback_cancel``.

    Applied after vetting, so a refused ``callback_cancel`` falls back to ``callback``.
    """
    result = dict(callbacks)
    if "callback_cancel" not in result and "callback" in result:
        result["callback_cancel"] = result["callback"]
    if "callback_halt" not in result and "callback_cancel" in result:
        result["callback_halt"] = result["callback_cancel"]
    return result


def vetted_callbacks(
    callbacks: Mapping[str, str],
    *,
    base_url: str,
    allowed_origins: Iterable[str],
    signed: bool,
) -> dict[str, str]:
    """The callbacks a page may link to, ready for ``href``; the others are dropped.

    Every callback must be a plain http(s) URL or a path on our origin (never
    ``javascript:`` or anything a browser would read differently). A ``signed`` callback
    came inside the shop's signed ``redirect`` claim, so any origin is trusted; an unsigned
    one (typed into the address bar) must be on our origin or one of ``allowed_origins``.
    """
    allowed = list(allowed_origins)
    vetted: dict[str, str] = {}
    for name, url in callbacks.items():
        origins = allowed
        if signed:
            own = origin_of(url)
            origins = [own] if own else []
        try:
            vetted[name] = safe_redirect_target(url, base_url=base_url, allowed_origins=origins)
        except RedirectRefused:
            continue
    return vetted
